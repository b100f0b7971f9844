//! The full layout's key: the type and its three parts (the module above says how it works),
//! its sizes, and the running sums' arithmetic.

use std::collections::VecDeque;
use std::fmt;

use super::bucket::{boxed_bytes, Bucket};
use super::graveyard::Graveyard;
use super::members::Members;
use crate::topn::error::Overflow;
use crate::topn::parse::Pair;
use crate::topn::shape::Shape;
use crate::topn::views::Views;
use crate::topn::window::{final_counts, Counted, Effects, Query, Row, Window};
use crate::tuples::table::IdMap;

/// Units of upkeep per write by default (entries walked; an index operation costs more).
pub const DEFAULT_RETIRE_BUDGET: usize = 64;

/// An exact key past the compact layout. See the module notes.
pub struct Full {
    pub(super) content: Content,
    pub(super) sums: Sums,
    pub(super) upkeep: Upkeep,
}

/// What the encoding writes (a clone leaves the sums beside the names out: `Members`' clone).
#[derive(Clone)]
pub(super) struct Content {
    pub(super) shape: Shape,
    pub(super) views: Views,
    pub(super) members: Members,
    /// Stored buckets, ascending; the front ones may be stale (being freed). Boxed, so that the
    /// deque's growth, or a bucket put in its middle, moves pointers (at most 8 bytes a bucket
    /// of the window), never the buckets.
    pub(super) buckets: VecDeque<Box<Bucket>>,
    /// Entries of the stored buckets (positions): the layout's size.
    pub(super) entries: usize,
    /// Stored buckets not sealed yet: usually the newest alone (upkeep then looks no further).
    pub(super) unsealed: usize,
}

/// The running sums: the window's, then each view's (each with an order index), then the
/// clock's: every live bucket at the clock (totals only, no index), which is what a window
/// read at the clock sums once the server's time has left buckets behind (an idle key, a
/// replica after its sync): a selection over its totals instead of a sum of the buckets.
pub(super) struct Sums {
    /// What each sum holds, the clock's last.
    pub(super) reach: Vec<Reach>,
    /// Each indexed sum's k (its newest buckets): WINDOW, then each view's.
    pub(super) ks: Vec<u32>,
    /// Exact totals beyond i64, per sum (the name table holds them clamped).
    pub(super) big: Vec<IdMap<i128>>,
}

/// The buckets a sum holds: every stored bucket newer than `lo`, and of bucket `lo` the entries
/// at positions below `end` (every one while `end` is [`Reach::ALL`]). A sum walks out of a
/// bucket from its last position down, so the entries a write adds to the bucket once the walk
/// began (new positions, at its end) are never the sum's: a backfill writing a bucket that a
/// view has left costs that view nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Reach {
    pub(super) lo: i64,
    pub(super) end: usize,
}

impl Reach {
    /// The `end` of a bucket held whole, whatever it grows to.
    pub(super) const ALL: usize = usize::MAX;

    /// Every stored bucket from `lo` on, whole.
    #[inline]
    pub(super) fn from(lo: i64) -> Reach {
        Reach {
            lo,
            end: Reach::ALL,
        }
    }

    /// Whether the sum holds the entry at `pos` of bucket `idx`.
    #[inline]
    pub(super) fn holds(&self, idx: i64, pos: usize) -> bool {
        idx > self.lo || (idx == self.lo && pos < self.end)
    }

    /// Whether the sum holds every entry of bucket `b`.
    #[inline]
    pub(super) fn holds_whole(&self, b: &Bucket) -> bool {
        b.idx > self.lo || (b.idx == self.lo && (self.end == Reach::ALL || self.end >= b.len()))
    }
}

/// Upkeep's state.
pub(super) struct Upkeep {
    /// The newest server time seen (`observe_time`).
    pub(super) now_ms: i64,
    /// Entries of the stale front bucket freed so far.
    pub(super) freed: usize,
    pub(super) graveyards: Vec<Graveyard>,
    /// Units of upkeep a write does, and what the last write did.
    pub(super) budget: usize,
    pub(super) last_work: usize,
}

impl Upkeep {
    pub(super) fn new(now_ms: i64) -> Upkeep {
        Upkeep {
            now_ms,
            freed: 0,
            graveyards: Vec::new(),
            budget: DEFAULT_RETIRE_BUDGET,
            last_work: 0,
        }
    }
}

impl Clone for Full {
    /// The key as a load makes it: the content copied, the sums rebuilt from it at the server's
    /// time seen, no upkeep under way (a stale bucket waiting to be freed comes along).
    fn clone(&self) -> Full {
        let mut copy = Full::built(self.content.clone(), self.upkeep.now_ms);
        copy.upkeep.freed = self.upkeep.freed;
        copy
    }
}

impl fmt::Debug for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Full")
            .field("shape", &self.content.shape)
            .field("views", &self.content.views)
            .field("members", &self.content.members.live)
            .field("buckets", &self.content.buckets.len())
            .field("reach", &self.sums.reach)
            .finish()
    }
}

impl Full {
    /// An empty key of `shape` (its clock `None`) with `views` declared.
    pub fn empty(shape: Shape, views: Views) -> Full {
        let content = Content {
            shape: Shape {
                clock: None,
                ..shape
            },
            views,
            members: Members::new(1 + views.len()),
            buckets: VecDeque::new(),
            entries: 0,
            unsealed: 0,
        };
        Full::built(content, i64::MIN)
    }

    /// A key of `content`, its sums built at the server's time `now_ms` (`i64::MIN`: unknown).
    pub(super) fn built(mut content: Content, now_ms: i64) -> Full {
        let ks: Vec<u32> = std::iter::once(content.shape.window)
            .chain(content.views.iter())
            .collect();
        let mut sums = Sums {
            reach: Vec::new(),
            big: vec![IdMap::default(); ks.len() + 1],
            ks,
        };
        let upkeep = Upkeep::new(now_ms);
        content.members.names.suspend_indexes();
        for s in 0..=sums.clock_sum() {
            let lo = sums.target(&content.shape, now_ms, s);
            sums.reach.push(Reach::from(lo));
            let from = content.buckets.partition_point(|b| b.idx < lo);
            for b in content.buckets.range(from..) {
                b.for_each(|id, count| {
                    let total = sums.total(&content.members, s, id) + i128::from(count);
                    sums.set(&mut content.members, s, id, total);
                });
            }
        }
        content.members.names.rebuild_indexes();
        // A loaded or copied key's sums read its sealed buckets: accumulators made ready, as
        // when it seals one (the first read of a replica after its sync would fault them in).
        if content.buckets.iter().any(|b| b.is_sealed()) {
            super::accumulator::want_warm(content.members.slots());
        }
        Full {
            content,
            sums,
            upkeep,
        }
    }

    /// Entries stored (of stale buckets not freed yet too): an upper bound on the live ones.
    pub fn stored_entries(&self) -> usize {
        self.content.entries
    }

    /// Estimate of the heap bytes held: the content's, the sums', upkeep's.
    fn heap_bytes(&self) -> usize {
        let sums = self.sums.heap_bytes(&self.content.members);
        std::mem::size_of::<Full>() + self.content.heap_bytes() + sums + self.upkeep.heap_bytes()
    }

    /// Heap bytes of view `v` (its sum's share: totals and index).
    pub fn view_memory(&self, v: usize) -> usize {
        let sums = self.content.members.sums_heap_bytes();
        sums / self.sums.ks.len() + self.sums.big[1 + v].allocation_size()
    }
}

impl Window for Full {
    fn shape(&self) -> &Shape {
        &self.content.shape
    }

    fn views(&self) -> Views {
        self.content.views
    }

    fn top(&self, q: &Query) -> Vec<Row<'_>> {
        let rows = self.top_of(q);
        rows.into_iter()
            .map(|(m, c)| (m, Counted::exact(c)))
            .collect()
    }

    fn count(&self, member: &[u8], q: &Query) -> Counted {
        Counted::exact(self.count_of(member, q))
    }

    fn count_at_clock(&self, member: &[u8]) -> i64 {
        Full::count_at_clock(self, member)
    }

    fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<(i64, Effects), Overflow> {
        Full::incr(self, member, by, at_ms)
    }

    fn incr_many(&mut self, pairs: &[Pair], at_ms: i64) -> Result<(Vec<i64>, Effects), usize> {
        let counts = final_counts(pairs, |m| self.headroom(m, at_ms))?;
        Ok((counts, self.incr_all(pairs, at_ms)))
    }

    /// Distinct members stored (also ones only in buckets not freed yet).
    fn members(&self) -> usize {
        self.content.members.live
    }

    fn buckets_in_use(&self) -> usize {
        self.content.buckets.len() - self.stale_buckets()
    }

    fn mem_usage(&self) -> usize {
        self.heap_bytes()
    }

    fn encode(&self) -> Vec<u8> {
        Full::encode(self)
    }
}

impl Content {
    /// Heap bytes of the names, refs and buckets.
    fn heap_bytes(&self) -> usize {
        let ring = self.buckets.capacity() * std::mem::size_of::<Box<Bucket>>();
        self.members.heap_bytes() + ring + boxed_bytes(&self.buckets)
    }

    /// About the number of allocations freeing it takes.
    pub(super) fn effort(&self) -> usize {
        self.members.effort() + self.buckets.len() * 3
    }
}

impl Upkeep {
    /// Heap bytes of the graveyards.
    fn heap_bytes(&self) -> usize {
        self.graveyards.iter().map(Graveyard::heap_bytes).sum()
    }
}

impl Sums {
    /// Heap bytes of the totals and order indexes (beside the names in `members`) and of the
    /// exact totals beyond i64.
    fn heap_bytes(&self, members: &Members) -> usize {
        let big: usize = self.big.iter().map(IdMap::allocation_size).sum();
        members.sums_heap_bytes() + big
    }

    /// The clock's sum (the last).
    #[inline]
    pub(super) fn clock_sum(&self) -> usize {
        self.ks.len()
    }

    /// Where sum `s` should start: its newest k buckets at the key's newest time (the clock, or
    /// the server's time `now_ms` when later); the clock's sum, the window at the clock.
    pub(super) fn target(&self, shape: &Shape, now_ms: i64, s: usize) -> i64 {
        let Some(clock) = shape.clock else {
            return i64::MIN;
        };
        if s == self.clock_sum() {
            return shape.live_lo(clock);
        }
        let newest = match now_ms {
            i64::MIN => clock,
            now => clock.max(shape.bucket_of(now)),
        };
        newest.saturating_sub(i64::from(self.ks[s]) - 1)
    }

    /// Member `id`'s total in sum `s`, exact.
    #[inline]
    pub(super) fn total(&self, m: &Members, s: usize, id: u32) -> i128 {
        let clamped = m.names.total(s, id);
        if (clamped == i64::MAX || clamped == i64::MIN) && !self.big[s].is_empty() {
            if let Some(&exact) = self.big[s].get(id) {
                return exact;
            }
        }
        i128::from(clamped)
    }

    /// Sets member `id`'s total in sum `s` (its index key repositioned), kept exact beyond i64.
    #[inline]
    pub(super) fn set(&mut self, m: &mut Members, s: usize, id: u32, total: i128) {
        let clamped = total.clamp(i64::MIN.into(), i64::MAX.into()) as i64;
        let big = &mut self.big[s];
        if i128::from(clamped) != total {
            big.remove(id);
            big.insert(id, total);
        } else if !big.is_empty() {
            big.remove(id);
        }
        // (An index operation: a key put in, taken out or moved.)
        #[cfg(test)]
        super::seen::note(
            &super::seen::INDEX_OPS,
            usize::from(s < self.clock_sum() && m.names.total(s, id) != clamped),
        );
        m.names.set_total(s, id, clamped);
    }

    /// Adds `delta` (not 0) to member `id`'s total in sum `s`.
    #[inline]
    pub(super) fn add(&mut self, m: &mut Members, s: usize, id: u32, delta: i128) {
        // The usual case, in one look at the total: no total of the sum beyond i64, none after.
        if self.big[s].is_empty() {
            if let Ok(d) = i64::try_from(delta) {
                if m.names.add_total(s, id, d) {
                    #[cfg(test)]
                    super::seen::note(&super::seen::INDEX_OPS, usize::from(s < self.clock_sum()));
                    return;
                }
            }
        }
        let total = self.total(m, s, id) + delta;
        self.set(m, s, id, total);
    }

    /// Forgets member `id`'s exact totals (it is being freed).
    pub(super) fn forget(&mut self, id: u32) {
        for big in self.big.iter_mut().filter(|b| !b.is_empty()) {
            big.remove(id);
        }
    }
}

// A key may be freed on a background thread.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Full>();
};
