//! Writes: an increment, and a batch's at one time, each followed by a bounded share of upkeep
//! (`upkeep.rs`).

use super::bucket::Bucket;
use super::key::Full;
use super::members::Members;
use crate::topn::error::Overflow;
use crate::topn::parse::Pair;
use crate::topn::shape::Landing;
use crate::topn::window::Effects;

/// Where an increment lands and what it starts from (`Full::prepare`).
struct Prepared {
    bucket: i64,
    clock: i64,
    /// Every stored bucket leaves the window as the clock moves to `clock`.
    all_stale: bool,
    hash: u32,
    id: Option<u32>,
    /// The member's count over the window at `clock`, and in the event's bucket.
    live: i128,
    entry: i64,
}

impl Full {
    /// Applies an increment at `at_ms`; returns the member's count over the window ending at the
    /// key's clock (which this call may advance). An event older than the window changes nothing
    /// and returns the current count. A zero `by` stores nothing but still advances the clock.
    /// On overflow nothing changes.
    pub fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<(i64, Effects), Overflow> {
        self.upkeep.last_work = 0;
        let Some(p) = self.prepare(member, at_ms) else {
            return Ok((self.count_at_clock(member), Effects::default()));
        };
        let live = i64::try_from(p.live + i128::from(by)).map_err(|_| Overflow)?;
        p.entry.checked_add(by).ok_or(Overflow)?;
        let mut fx = self.commit(member, &p, by);
        self.upkeep.last_work = self.retire(self.upkeep.budget, &mut fx);
        Ok((live, fx))
    }

    /// Applies `(increment, member)` pairs all at `at_ms`, in order, as as many `incr`s would,
    /// with one share of upkeep for the call; the caller checked that none overflows (one that
    /// would is skipped). An event older than the window changes nothing.
    pub fn incr_all(&mut self, pairs: &[Pair], at_ms: i64) -> Effects {
        self.upkeep.last_work = 0;
        let mut fx = Effects::default();
        for &(by, member) in pairs {
            let Some(p) = self.prepare(member, at_ms) else {
                return fx;
            };
            let fits = i64::try_from(p.live + i128::from(by)).is_ok();
            if fits && p.entry.checked_add(by).is_some() {
                fx += self.commit(member, &p, by);
            }
        }
        self.upkeep.last_work = self.retire(self.upkeep.budget, &mut fx);
        fx
    }

    /// What an increment of `member` at `at_ms` would start from: its count over the window at
    /// the clock the event sets, and its count in the event's bucket (None: the event is older
    /// than the window). Changes nothing.
    pub fn headroom(&self, member: &[u8], at_ms: i64) -> Option<(i128, i64)> {
        self.prepare(member, at_ms).map(|p| (p.live, p.entry))
    }

    fn prepare(&self, member: &[u8], at_ms: i64) -> Option<Prepared> {
        let shape = &self.content.shape;
        let Landing {
            bucket: b,
            clock,
            lo,
        } = shape.landing(at_ms)?;
        let advancing = shape.clock.is_none_or(|c| b > c);
        let all_stale = advancing && self.content.buckets.back().is_some_and(|x| x.idx < lo);
        let hash = Members::hash(member);
        let id = match all_stale {
            true => None,
            false => self.content.members.find(member, hash),
        };
        let (live, entry) = match id {
            None => (0, 0),
            Some(id) => {
                // The usual write: the window's sum holds every stored bucket, all in the window
                // at the clock the event sets.
                let whole = |f: &Bucket| f.idx >= lo && self.sums.reach[0].holds_whole(f);
                let live = match self.content.buckets.front().is_none_or(|f| whole(f)) {
                    true => self.sums.total(&self.content.members, 0, id),
                    false => self
                        .span_of(lo, clock)
                        .map_or(0, |sp| self.count_id(id, &sp)),
                };
                (live, self.bucket(b).map_or(0, |x| x.get(id)))
            }
        };
        Some(Prepared {
            bucket: b,
            clock,
            all_stale,
            hash,
            id,
            live,
            entry,
        })
    }

    /// The stored bucket `b`, if any: the newest first, where writes go.
    #[inline]
    fn bucket(&self, b: i64) -> Option<&Bucket> {
        let buckets = &self.content.buckets;
        match buckets.back() {
            Some(x) if x.idx == b => Some(&**x),
            Some(x) if x.idx < b => None,
            _ => buckets
                .binary_search_by_key(&b, |x| x.idx)
                .ok()
                .map(|i| &*buckets[i]),
        }
    }

    /// Stores a prepared increment: the clock moved first (a jump past the whole window buries
    /// the old state), then the member's entry and every sum that holds it; returns the buckets
    /// a burial freed.
    fn commit(&mut self, member: &[u8], p: &Prepared, by: i64) -> Effects {
        let mut fx = Effects::default();
        if self.content.shape.clock.is_none_or(|c| p.clock > c) {
            self.content.shape.clock = Some(p.clock);
            if p.all_stale {
                fx.retired = self.bury();
            }
        }
        if by == 0 {
            return fx;
        }
        let (c, sums) = (&mut self.content, &mut self.sums);
        let id = p.id.unwrap_or_else(|| c.members.intern(member, p.hash));
        let buckets = &mut c.buckets;
        let i = match buckets.back() {
            Some(x) if x.idx == p.bucket => buckets.len() - 1,
            _ => match buckets.binary_search_by_key(&p.bucket, |x| x.idx) {
                Ok(i) => i,
                Err(i) => {
                    // New buckets are live, so they sort after any stale one being freed.
                    buckets.insert(i, Box::new(Bucket::new(p.bucket)));
                    c.unsealed += 1;
                    i
                }
            },
        };
        let written = buckets[i].add(id, by);
        buckets[i].written_ms = self.upkeep.now_ms;
        #[cfg(test)]
        if sums
            .reach
            .iter()
            .any(|r| r.lo == p.bucket && r.end != super::key::Reach::ALL)
        {
            super::seen::note(&super::seen::WRITES_INTO_WALKS, 1);
        }
        if written.inserted {
            c.entries += 1;
            c.members.add_ref(id);
        }
        for s in 0..sums.reach.len() {
            // A count the write moved between entries: a sum holding one of them and not the
            // other follows.
            let holds = |pos| sums.reach[s].holds(p.bucket, pos);
            let moved = written.moved.map_or(0, |m| i128::from(m.1));
            let mut change = 0;
            if holds(written.pos) {
                change += i128::from(by) + moved;
            }
            if written.moved.is_some_and(|(from, _)| holds(from)) {
                change -= moved;
            }
            if change != 0 {
                sums.add(&mut c.members, s, id, change);
            }
        }
        fx
    }
}
