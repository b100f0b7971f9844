//! Upkeep: the derived state follows the clock and the server's time, a bounded slice at a
//! time: a budget of work units per write and the upkeep timer's calls. In order: graveyards
//! freed, the stale front bucket freed (every sum that holds an entry of it loses it, its
//! members their refs), each sum walking out of the buckets below its target (`key.rs`:
//! `Reach`), then the sealing of a bucket that owes it. Walks go from a bucket's last position
//! down, at any stage of the bucket, and a sealing (which changes positions) ends only once no
//! walk is half-way through its bucket.

use super::bucket::Bucket;
use super::graveyard::{charge, Graveyard};
use super::key::{Full, Reach};
use super::members::Members;
use crate::topn::storage::dispose_value;
use crate::topn::window::{Effects, Upkept};
use crate::tuples::table::IdMap;

impl Upkept for Full {
    fn free_effort(&self) -> usize {
        let graves: usize = self.upkeep.graveyards.iter().map(Graveyard::effort).sum();
        1 + self.content.effort() + graves
    }

    /// Tells the key the server's time (times going backwards are ignored); its sums then
    /// follow the window at that time, which makes reads at it cheap. Internal state only: no
    /// answer depends on it. True if a sum's target moved.
    fn observe_time(&mut self, now_ms: i64) -> bool {
        let before = self.upkeep.now_ms;
        self.upkeep.now_ms = before.max(now_ms);
        let shape = &self.content.shape;
        before == i64::MIN || shape.bucket_of(now_ms) > shape.bucket_of(before)
    }

    /// Up to `budget` units of upkeep (the timer's); returns the work done (`< budget` when
    /// nothing is left to do now) and what it did.
    fn upkeep(&mut self, budget: usize) -> (usize, Effects) {
        let mut fx = Effects::default();
        (self.retire(budget.max(1), &mut fx), fx)
    }

    /// When upkeep has work: `Some(0)` when it has some now, else when a bucket may be sealed or
    /// the server's time moves a sum's target past a stored bucket; `None` when nothing is
    /// stored.
    fn upkeep_due_ms(&self) -> Option<i64> {
        if self.work_now() {
            return Some(0);
        }
        let c = &self.content;
        let unsealed = c.buckets.iter().filter(|b| !b.is_sealed());
        let seals = unsealed.map(|b| c.shape.seals_at(b.idx, b.written_ms));
        // The server's time moves the targets of the indexed sums (the clock's follows writes).
        let leaves = (0..self.sums.ks.len()).filter_map(|s| {
            let lo = self.sums.reach[s].lo;
            let b = c.buckets.get(c.buckets.partition_point(|b| b.idx < lo))?;
            let k = self.sums.ks[s].into();
            Some(c.shape.bucket_start(b.idx.saturating_add(k)))
        });
        seals.chain(leaves).min()
    }

    fn upkeep_marker(&self) -> (Option<i64>, usize) {
        (self.content.shape.clock, self.content.buckets.len())
    }
}

impl Full {
    /// Units of upkeep per write (>= 1).
    #[cfg(test)]
    pub fn set_retire_budget(&mut self, budget: usize) {
        self.upkeep.budget = budget.max(1);
    }

    /// Units of upkeep the last write did.
    #[cfg(test)]
    pub fn last_retire_work(&self) -> usize {
        self.upkeep.last_work
    }

    /// True when no stale bucket or graveyard waits to be freed: all the key holds is in its
    /// window.
    pub fn holds_only_live(&self) -> bool {
        self.upkeep.graveyards.is_empty() && self.stale_buckets() == 0
    }

    /// Stored buckets the clock left behind (`Shape::stale_front`), freed a slice at a time.
    pub(super) fn stale_buckets(&self) -> usize {
        let c = &self.content;
        (c.shape).stale_front(c.buckets.len(), |i| c.buckets[i].idx)
    }

    /// True when upkeep has nothing to do at the server's time seen.
    #[cfg(test)]
    pub fn is_settled(&self) -> bool {
        !self.work_now()
    }

    /// Whether upkeep can do something now.
    fn work_now(&self) -> bool {
        !self.holds_only_live() || self.sealing_owed().is_some() || self.leaving_owed()
    }

    /// The first bucket to seal now: live, not sealed, and sealable (`Shape::seals_at`; writes
    /// that come after its sealing go to its late entries).
    fn sealing_owed(&self) -> Option<usize> {
        let c = &self.content;
        let now = self.upkeep.now_ms;
        let sealable = |b: &Bucket| c.shape.seals_at(b.idx, b.written_ms) <= now;
        let owed = |b: &Bucket| !b.is_sealed() && !c.shape.is_stale(b.idx) && sealable(b);
        // The usual: none unsealed but the newest, which is not sealable yet.
        let newest_waits = c.buckets.back().is_some_and(|b| !b.is_sealed() && !owed(b));
        if c.unsealed == usize::from(newest_waits) {
            return None;
        }
        c.buckets.iter().position(|b| owed(b))
    }

    /// Whether a sum can walk out of a bucket below its target now.
    fn leaving_owed(&self) -> bool {
        let c = &self.content;
        (0..self.sums.reach.len()).any(|s| {
            let target = self.sums.target(&c.shape, self.upkeep.now_ms, s);
            let lo = self.sums.reach[s].lo;
            let i = c.buckets.partition_point(|b| b.idx < lo);
            c.buckets.get(i).is_some_and(|b| b.idx < target)
        })
    }

    /// Up to `budget` units of upkeep, in order: graveyards, the stale front bucket, the sums'
    /// walks, sealing; returns the work done, and adds what it did to `fx`. A write does a slice
    /// of it, the timer the rest.
    pub(super) fn retire(&mut self, budget: usize, fx: &mut Effects) -> usize {
        let mut done = 0;
        while done < budget {
            if let Some(g) = self.upkeep.graveyards.last_mut() {
                done += g.step(budget - done);
                if g.is_empty() {
                    self.upkeep.graveyards.pop();
                }
                continue;
            }
            if !self.holds_only_live() {
                done += self.free_front(budget - done, fx);
                continue;
            }
            done += self.leave(budget - done, fx);
            if done < budget {
                match self.seal(budget - done) {
                    0 => break,
                    work => done += work,
                }
            }
        }
        done.min(budget)
    }

    /// Frees the stale front bucket, an entry at a time from its last position down: each entry
    /// leaves the sums that hold it, and its member loses a ref (freed with its last). Up to
    /// `budget` units; a bucket freed is added to `fx`.
    fn free_front(&mut self, budget: usize, fx: &mut Effects) -> usize {
        let (c, sums, up) = (&mut self.content, &mut self.sums, &mut self.upkeep);
        let Some(front) = c.buckets.front() else {
            return 0;
        };
        let (idx, len) = (front.idx, front.len());
        // A sum that holds the whole bucket (and nothing stored below) walks it from its end.
        for r in sums.reach.iter_mut().filter(|r| r.lo < idx) {
            *r = Reach::from(idx);
        }
        let cost = c.members.index_op_cost();
        let mut done = 0;
        while up.freed < len {
            let pos = len - 1 - up.freed;
            let (id, count) = front.at(pos);
            let holding = (sums.reach[..sums.clock_sum()].iter())
                .filter(|r| count != 0 && r.holds(idx, pos))
                .count();
            let last = c.members.refs(id) == 1;
            let ops = if last { sums.clock_sum() } else { holding };
            let Some(charged) = charge(done, 1 + ops * cost, budget) else {
                return budget;
            };
            done = charged;
            if last {
                // Its last entry: its totals are this entry's part; out of every index at once.
                #[cfg(test)]
                super::seen::note(
                    &super::seen::INDEX_OPS,
                    (0..sums.clock_sum())
                        .filter(|&s| c.members.names.total(s, id) != 0)
                        .count(),
                );
                sums.forget(id);
                c.members.free(id);
            } else {
                for s in 0..sums.reach.len() {
                    if count != 0 && sums.reach[s].holds(idx, pos) {
                        sums.add(&mut c.members, s, id, -i128::from(count));
                    }
                }
                c.members.drop_ref(id);
            }
            up.freed += 1;
            for r in sums.reach.iter_mut().filter(|r| r.lo == idx) {
                r.end = r.end.min(pos);
            }
        }
        let Some(charged) = charge(done, front.drop_cost(), budget) else {
            return budget;
        };
        if let Some(gone) = c.buckets.pop_front() {
            c.entries -= gone.len();
            c.unsealed -= usize::from(!gone.is_sealed());
            let bytes = gone.heap_bytes();
            dispose_value(gone, bytes);
        }
        for r in sums.reach.iter_mut().filter(|r| r.lo <= idx) {
            *r = Reach::from(idx + 1);
        }
        up.freed = 0;
        fx.retired += 1;
        charged
    }

    /// Walks each sum out of the buckets below its target, from each one's last position down,
    /// up to `budget` units. A walk goes at any stage of its bucket: the entries a write adds
    /// meanwhile come after the positions it holds, and the bucket's sealing waits for it. A
    /// bucket the window's sum leaves is added to `fx`.
    fn leave(&mut self, budget: usize, fx: &mut Effects) -> usize {
        let (c, sums, up) = (&mut self.content, &mut self.sums, &mut self.upkeep);
        let cost = c.members.index_op_cost();
        let mut done = 0;
        for s in 0..sums.reach.len() {
            let target = sums.target(&c.shape, up.now_ms, s);
            while done < budget && sums.reach[s].lo < target {
                let Reach { lo, end } = sums.reach[s];
                let i = c.buckets.partition_point(|b| b.idx < lo);
                let Some(b) = c.buckets.get(i).filter(|b| b.idx < target) else {
                    sums.reach[s] = Reach::from(target);
                    break;
                };
                // From here on the sum holds the bucket's entries up to its length now only.
                let mut end = if b.idx > lo {
                    b.len()
                } else {
                    end.min(b.len())
                };
                while end > 0 {
                    let (id, count) = b.at(end - 1);
                    let Some(charged) = charge(done, 1 + usize::from(count != 0) * cost, budget)
                    else {
                        done = budget;
                        break;
                    };
                    done = charged;
                    if count != 0 {
                        sums.add(&mut c.members, s, id, -i128::from(count));
                    }
                    end -= 1;
                }
                sums.reach[s] = Reach { lo: b.idx, end };
                if end == 0 {
                    sums.reach[s] = Reach::from(b.idx + 1);
                    fx.aged += usize::from(s == 0);
                }
            }
        }
        done
    }

    /// Whether a sum is half-way through a walk out of the bucket at `i`.
    fn half_walked(&self, i: usize) -> bool {
        let b = &self.content.buckets[i];
        (self.sums.reach.iter()).any(|r| r.lo == b.idx && r.end < b.len())
    }

    /// Starts or advances the sealing of a bucket that owes it, up to about `budget` units;
    /// returns the work done (0: none owed).
    fn seal(&mut self, budget: usize) -> usize {
        let Some(i) = self.sealing_owed() else {
            return 0;
        };
        // Its positions change as it ends: no walk may be half-way through it. None is: walks
        // come first in `retire`, which seals only once they are done.
        debug_assert!(!self.half_walked(i), "a sealing under a walk");
        let ids = self.content.members.slots();
        let work = self.content.buckets[i].seal(budget, ids);
        if self.content.buckets[i].is_sealed() {
            self.content.unsealed -= 1;
            #[cfg(test)]
            super::seen::note(&super::seen::SEALINGS, 1);
        }
        work
    }

    /// Moves the whole state to a graveyard (the clock just moved past every stored bucket);
    /// returns the buckets it held.
    pub(super) fn bury(&mut self) -> usize {
        let (c, sums, up) = (&mut self.content, &mut self.sums, &mut self.upkeep);
        let retired = c.buckets.len();
        up.freed = 0;
        let members = std::mem::replace(&mut c.members, Members::new(sums.ks.len()));
        let buckets = std::mem::take(&mut c.buckets);
        (c.entries, c.unsealed) = (0, 0);
        sums.big.iter_mut().for_each(|b| *b = IdMap::default());
        for s in 0..sums.reach.len() {
            sums.reach[s] = Reach::from(sums.target(&c.shape, up.now_ms, s));
        }
        let grave = Graveyard { members, buckets };
        if !grave.is_empty() {
            up.graveyards.push(grave);
        }
        retired
    }
}
