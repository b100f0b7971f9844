//! Reads: a member's count and the top `n` over any window (`AT`, `LAST k`), exact in every
//! state. The running aggregate is turned into the read window's counts by *fixes*; the cost
//! model below chooses between an index walk and the sums (see the module notes in `mod.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::accumulator::{with_accumulator, Kept};
use super::bucket::Bucket;
use super::key::Full;
use super::members::IdMap;
use super::packed::Acc;
use crate::topn::select::{clamp_i64, top_dense, top_positive, top_rows, Rows};
use crate::topn::storage::Key;

/// Stored buckets `[i0, i1)` (deque positions) of the read window `[lo, hi]` (bucket indexes).
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) lo: i64,
    pub(super) hi: i64,
    pub(super) i0: usize,
    pub(super) i1: usize,
}

/// Which running total a read corrects: the aggregate (the window at the server's time, with
/// the order index) or the clock totals (every stored bucket; ordered by the clock index once
/// that is built).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Base {
    Agg,
    Clock,
    /// A view's totals (`views.rs`), only when they are the read window's (no fix).
    View(usize),
}

/// How a read corrects a member's running total for one bucket.
#[derive(Clone, Copy)]
pub(super) enum Fix<'a> {
    /// A bucket outside the read window: subtract its part inside the aggregate (its table
    /// cells from the given one on).
    Sub(&'a Bucket, usize),
    /// A bucket outside the read window: subtract all of it (clock totals hold it all).
    SubAll(&'a Bucket),
    /// An aged bucket inside the read window: add its part outside the aggregate (its table
    /// cells below the given one, all when `None`, and its `extra`).
    Add(&'a Bucket, Option<usize>),
}

impl<'a> Fix<'a> {
    #[inline]
    fn value(self, id: u32) -> i128 {
        match self {
            Fix::Sub(b, from) => match b.find(id) {
                Some(p) if p >= from => -(b.cell(p).1 as i128),
                _ => 0,
            },
            Fix::SubAll(b) => -(b.get(id) as i128),
            Fix::Add(b, below) => {
                let table = match b.find(id) {
                    Some(p) if below.is_none_or(|q| p < q) => b.cell(p).1,
                    _ => 0,
                };
                table as i128 + b.extra_get(id) as i128
            }
        }
    }

    /// This correction as a scan of a whole bucket, if it is one: `(bucket, negate,
    /// with_extra)` for `Bucket::sum_into`.
    fn whole(self) -> Option<(&'a Bucket, bool, bool)> {
        match self {
            Fix::Sub(b, 0) => Some((b, true, false)),
            Fix::SubAll(b) => Some((b, true, true)),
            Fix::Add(b, None) => Some((b, false, true)),
            Fix::Sub(..) | Fix::Add(..) => None,
        }
    }

    /// The model's cost of a scan of this correction.
    pub(super) fn cost(self) -> usize {
        match self {
            Fix::Sub(b, 0) | Fix::Add(b, None) | Fix::SubAll(b) => b.sum_cost(),
            Fix::Sub(b, _) | Fix::Add(b, _) => b.scan_cost(),
        }
    }

    /// Applies this correction to every member's running total in `acc` (by id), scanning the
    /// bucket's cells; true on overflow. (A whole bucket's goes through `Bucket::sum_into`
    /// instead, which reads its packed copy: see `whole`.)
    fn scan_into(self, acc: &mut [i64]) -> bool {
        match self {
            Fix::Sub(b, from) => b.scan_cells(from, usize::MAX, true, acc),
            Fix::SubAll(b) => b.scan_cells(0, usize::MAX, true, acc) | b.extra_into(true, acc),
            Fix::Add(b, below) => {
                b.scan_cells(0, below.unwrap_or(usize::MAX), false, acc) | b.extra_into(false, acc)
            }
        }
    }

    /// The most this correction can add to a member's count.
    pub(super) fn slack(self) -> i128 {
        match self {
            Fix::Sub(b, _) | Fix::SubAll(b) => -(b.min_val.min(0) as i128),
            Fix::Add(b, _) => b.max_val.max(0) as i128,
        }
    }
}

/// Cost model of reads, in units of one entry of a sum's branch-free scan (a few ns). A step
/// of the index walk (one key, its name nearby) costs this many.
pub(super) const INDEX_STEP_COST: usize = 8;
/// A lookup of a member in a bucket table (a random probe, usually a cache miss).
pub(super) const LOOKUP_COST: usize = 40;
/// A member slot in a sum: its accumulator zeroed, then two selection passes over it.
pub(super) const SLOT_COST: usize = 1;
/// An entry summed into a hash map (sums over few of many members): a random probe and an
/// insertion, about 100x a scanned cell (measured: 42k entries in 5-7 ms).
const MAP_ENTRY_COST: usize = 100;
/// A corrected walk or a merge may cost up to 1/`WALK_SHARE` of the cheaper sum (the planner,
/// `plan.rs`, takes one only when it knows it stops within that, so it never gives up: the
/// share leaves room for the model's error on lookups, a cache miss each when cold).
pub(super) const WALK_SHARE: usize = 4;
/// A walk down an order index: each candidate's total corrected by `fixes`, stopping once the
/// next candidate's bound (its total plus the most the fixes can add) cannot beat the n-th
/// best; given up (`None`) once it has cost more than `cap`. The index's first keys count
/// `head` (counted already by the planner).
#[derive(Clone, Copy)]
pub(super) struct Walk<'f, 'h> {
    pub(super) fixes: &'f [Fix<'f>],
    pub(super) want: usize,
    pub(super) cap: usize,
    pub(super) incl_has_neg: bool,
    pub(super) head: &'h [i128],
    /// The read window's stored buckets (deque positions), when summing them counts a
    /// candidate in fewer lookups than the fixes (`LAST 6` of 24 buckets: 6, not 18).
    pub(super) count_in: Option<(usize, usize)>,
}

impl<'f> Walk<'f, '_> {
    /// A walk that never gives up and counts every key itself.
    pub(super) fn uncapped(fixes: &'f [Fix<'f>], want: usize, incl_has_neg: bool) -> Self {
        Walk {
            fixes,
            want,
            cap: usize::MAX,
            incl_has_neg,
            head: &[],
            count_in: None,
        }
    }

    /// The lookups counting a candidate takes.
    pub(super) fn lookups(fixes: usize, count_in: Option<(usize, usize)>) -> usize {
        count_in.map_or(fixes, |(i0, i1)| i1 - i0)
    }
}

/// The best `want` candidates offered, by count then name: a max-heap on "worseness", whose
/// root is the current n-th best.
pub(super) struct Best<'a> {
    heap: BinaryHeap<(Reverse<i128>, &'a [u8])>,
    want: usize,
}

impl<'a> Best<'a> {
    pub(super) fn new(want: usize) -> Best<'a> {
        Best {
            heap: BinaryHeap::with_capacity(want + 1),
            want,
        }
    }

    /// The n-th best count and name, once `want` candidates were offered.
    #[inline]
    pub(super) fn nth(&self) -> Option<(i128, &'a [u8])> {
        match self.heap.peek() {
            Some(&(Reverse(c), name)) if self.heap.len() >= self.want => Some((c, name)),
            _ => None,
        }
    }

    #[inline]
    pub(super) fn offer(&mut self, count: i128, name: &'a [u8]) {
        if self.heap.len() < self.want {
            self.heap.push((Reverse(count), name));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if (Reverse(count), name) < *worst {
                *worst = (Reverse(count), name);
            }
        }
    }

    /// The rows, highest first.
    pub(super) fn into_rows(self) -> Rows<'a> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|(Reverse(c), m)| (m, clamp_i64(c)))
            .collect()
    }
}

impl Full {
    /// The member's count over the window ending at the clock.
    #[inline]
    pub fn count_at_clock(&self, member: &[u8]) -> i64 {
        let Some(c) = self.clock else { return 0 };
        let Some(id) = self.m.find(member, self.m.hash_name(member)) else {
            return 0;
        };
        let lo = self.live_lo(c);
        self.span_of(lo, c)
            .map_or(0, |sp| clamp_i64(self.count_id(id, &sp)))
    }

    /// The stored buckets of `[lo, hi]`, if any.
    #[inline]
    pub(super) fn span_of(&self, lo: i64, hi: i64) -> Option<Span> {
        if lo > hi {
            return None;
        }
        let i0 = self.buckets.partition_point(|b| b.idx < lo);
        let i1 = self.buckets.partition_point(|b| b.idx <= hi);
        (i0 < i1).then_some(Span { lo, hi, i0, i1 })
    }

    /// The read window of the `k` newest buckets of the window ending at `at_ms` (cut to the
    /// live window of the clock), if it holds a stored bucket.
    pub(super) fn span(&self, at_ms: i64, k: u32) -> Option<Span> {
        let c = self.clock?;
        if k == 0 {
            return None;
        }
        let hi = self.bucket_of(at_ms);
        let lo = hi.saturating_sub(k as i64 - 1).max(self.live_lo(c));
        self.span_of(lo, hi)
    }

    /// What turns a running total of `base` into a count over `sp`: for the aggregate, its
    /// buckets outside the span and the aged buckets inside it; for the clock totals, every
    /// stored bucket outside the span.
    pub(super) fn fixes(&self, sp: &Span, base: Base) -> Vec<Fix<'_>> {
        let len = self.buckets.len();
        if base == Base::Clock {
            let outside = self
                .buckets
                .range(..sp.i0)
                .chain(self.buckets.range(sp.i1..));
            return outside.map(Fix::SubAll).collect();
        }
        // The first stored bucket at or above `agg_lo`.
        let j0 = self.buckets.partition_point(|b| b.idx < self.agg_lo);
        let mut out = Vec::new();
        for i in (j0..sp.i0.max(j0)).chain(sp.i1.max(j0)..len) {
            let b = &self.buckets[i];
            let from = if b.idx == self.agg_lo {
                self.agg_pos
            } else {
                0
            };
            out.push(Fix::Sub(b, from));
        }
        for i in sp.i0..sp.i1.min(j0) {
            out.push(Fix::Add(&self.buckets[i], None));
        }
        if j0 >= sp.i0 && j0 < sp.i1 {
            let b = &self.buckets[j0];
            if b.idx == self.agg_lo && (self.agg_pos > 0 || b.extra.is_some()) {
                out.push(Fix::Add(b, Some(self.agg_pos)));
            }
        }
        out
    }

    /// Number of fixes `fixes(sp, Base::Agg)` would return, without building them (for the
    /// clock totals: the stored buckets outside the span).
    #[inline]
    pub(super) fn fix_count(&self, sp: &Span) -> usize {
        let len = self.buckets.len();
        let j0 = self.buckets.partition_point(|b| b.idx < self.agg_lo);
        let subs = sp.i0.max(j0) - j0 + (len - sp.i1.max(j0));
        let adds = sp.i1.min(j0).saturating_sub(sp.i0);
        let partial = j0 >= sp.i0
            && j0 < sp.i1
            && self.buckets[j0].idx == self.agg_lo
            && (self.agg_pos > 0 || self.buckets[j0].extra.is_some());
        subs + adds + partial as usize
    }

    /// Entries stored in deque positions `[i0, i1)`, summed over the smaller side.
    pub(super) fn entries_in(&self, i0: usize, i1: usize) -> usize {
        let n = self.buckets.len();
        if i1 - i0 <= n - (i1 - i0) {
            self.buckets.range(i0..i1).map(Bucket::entries).sum()
        } else {
            let outside: usize = self
                .buckets
                .range(..i0)
                .chain(self.buckets.range(i1..))
                .map(Bucket::entries)
                .sum();
            self.total_entries - outside
        }
    }

    /// The lookups `count_id` makes for a member over `sp`.
    pub(super) fn count_lookups(&self, sp: &Span) -> usize {
        let inside = sp.i1 - sp.i0;
        match self.buckets.len() - inside {
            0 => 1,
            outside => (1 + outside.min(self.fix_count(sp))).min(inside),
        }
    }

    /// Member `id`'s exact count over `sp`: the running total corrected, or the span's buckets
    /// summed, whichever takes fewer lookups.
    #[inline]
    pub(super) fn count_id(&self, id: u32, sp: &Span) -> i128 {
        let inside = sp.i1 - sp.i0;
        let outside = self.buckets.len() - inside;
        // The usual write: the span is every stored bucket.
        if outside == 0 {
            return self.m.clock_total(id);
        }
        let agg = self.fix_count(sp);
        if outside.min(agg) < inside {
            let base = if outside <= agg {
                Base::Clock
            } else {
                Base::Agg
            };
            let mut c = self.base_total(base, id);
            for f in self.fixes(sp, base) {
                c += f.value(id);
            }
            c
        } else {
            self.buckets
                .range(sp.i0..sp.i1)
                .map(|b| b.get(id) as i128)
                .sum()
        }
    }

    /// Member `id`'s running total of `base`, exact.
    #[inline]
    fn base_total(&self, base: Base, id: u32) -> i128 {
        match base {
            Base::Agg => self.m.total(id),
            Base::Clock => self.m.clock_total(id),
            Base::View(v) => self.m.view_total(v, id),
        }
    }

    #[cfg(test)]
    /// The member's count over the window ending at `at_ms`.
    pub fn count(&self, member: &[u8], at_ms: i64) -> i64 {
        self.count_in(member, at_ms, self.window)
    }

    /// The member's count over the `k` newest buckets of the window ending at `at_ms` (only
    /// buckets inside the key's own window ever count, so a larger `k` acts as the key's).
    pub fn count_in(&self, member: &[u8], at_ms: i64, k: u32) -> i64 {
        let Some(sp) = self.span(at_ms, k) else {
            return 0;
        };
        let Some(id) = self.m.find(member, self.m.hash_name(member)) else {
            return 0;
        };
        match self.view_for(&sp) {
            Some(v) => clamp_i64(self.m.view_total(v, id)),
            None => clamp_i64(self.count_id(id, &sp)),
        }
    }

    /// The top `want` by a walk of `base`'s order index (see [`Walk`]).
    pub(super) fn walk(&self, base: Base, walk: &Walk<'_, '_>) -> Option<Rows<'_>> {
        match base {
            Base::Agg => self.walk_keys(self.m.names.index_iter(), base, walk),
            Base::Clock => {
                let keys = self.m.names.clock_index_iter()?;
                self.walk_keys(keys, base, walk)
            }
            Base::View(v) => self.walk_keys(self.m.names.view_iter(v), base, walk),
        }
    }

    /// `walk` down `keys`.
    fn walk_keys<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a Key>,
        base: Base,
        walk: &Walk<'_, '_>,
    ) -> Option<Rows<'a>> {
        let Walk {
            fixes,
            want,
            cap,
            incl_has_neg,
            head,
            count_in,
        } = *walk;
        let slack: i128 = fixes.iter().map(|f| f.slack()).sum();
        let step = INDEX_STEP_COST + LOOKUP_COST * Walk::lookups(fixes.len(), count_in);
        let mut cost = 0usize;
        let mut best = Best::new(want);
        for (i, key) in keys.enumerate() {
            cost += step;
            if cost > cap {
                return None;
            }
            let kt = key.total();
            let name: &[u8] = key.bytes();
            // A clamped total (the exact one is beyond i64) bounds nothing.
            let bound = if kt == i64::MAX {
                i128::MAX
            } else {
                kt as i128 + slack
            };
            if let Some((wc, wn)) = best.nth() {
                if bound < wc || (bound == wc && name > wn) {
                    break;
                }
            }
            if bound <= 0 && !incl_has_neg {
                break;
            }
            let cnt = match (head.get(i), count_in) {
                (Some(&counted), _) => counted,
                (None, Some((i0, i1))) => {
                    let id = key.id();
                    self.buckets.range(i0..i1).map(|b| b.get(id) as i128).sum()
                }
                (None, None) => {
                    let id = key.id();
                    let mut cnt = if kt == i64::MAX || kt == i64::MIN {
                        self.base_total(base, id)
                    } else {
                        kt as i128
                    };
                    for f in fixes {
                        cnt += f.value(id);
                    }
                    cnt
                }
            };
            if cnt != 0 {
                best.offer(cnt, name);
            }
        }
        Some(best.into_rows())
    }

    /// Top `n` from every member's running total, corrected by scanning the fixes' buckets;
    /// `None` if a total is beyond i64 or a sum overflows (then `top_direct`).
    pub(super) fn top_through_totals(
        &self,
        n: usize,
        base: Base,
        fixes: &[Fix<'_>],
    ) -> Option<Rows<'_>> {
        let big = match base {
            Base::Agg => &self.m.big,
            Base::Clock => &self.m.big_clock,
            // Never summed: a view is read only by a walk.
            Base::View(_) => return None,
        };
        if !big.is_empty() {
            return None;
        }
        let slots = self.m.nslots;
        with_accumulator(slots + 1, |acc| {
            self.m
                .names
                .totals_into(base == Base::Clock, &mut acc[..slots]);
            let mut overflow = Bucket::sum_into(fixes.iter().filter_map(|f| f.whole()), acc);
            for f in fixes.iter().filter(|f| f.whole().is_none()) {
                overflow |= f.scan_into(acc);
            }
            (!overflow).then(|| self.select_dense(n, &acc[..slots]))
        })
    }

    /// The top `n` of dense sums (`acc[id]`).
    pub(super) fn select_dense<A: Acc + Ord + Into<i64>>(&self, n: usize, acc: &[A]) -> Rows<'_> {
        let name = |id: u32| self.m.name(id);
        let all = || acc.iter().enumerate().map(|(id, v)| (v.get(), id as u32));
        top_dense(n, acc, name).unwrap_or_else(|| {
            top_rows(
                n,
                || all().filter(|c| c.0 != 0).map(|(v, id)| (v as i128, id)),
                name,
            )
        })
    }

    /// Whether `top_direct` over this many entries uses dense accumulators (one per member
    /// slot) rather than a hash map.
    pub(super) fn dense_sum(&self, entries: usize) -> bool {
        self.m.nslots.saturating_mul(SLOT_COST) <= entries.saturating_mul(MAP_ENTRY_COST)
    }

    /// The model's cost of `top_direct` over deque positions `[i0, i1)`.
    pub(super) fn direct_cost(&self, i0: usize, i1: usize) -> usize {
        if i1 - i0 == 1 {
            return self.buckets[i0].scan_cost();
        }
        let entries = self.entries_in(i0, i1);
        if self.dense_sum(entries) {
            let scans: usize = self.buckets.range(i0..i1).map(Bucket::sum_cost).sum();
            scans + SLOT_COST * self.m.nslots
        } else {
            MAP_ENTRY_COST * entries
        }
    }

    /// Top `n` of the buckets at deque positions `[i0, i1)` summed into dense accumulators
    /// of type `A`; `None` if a sum overflows.
    fn dense_top<A: Kept + Acc + Ord + Into<i64>>(
        &self,
        n: usize,
        i0: usize,
        i1: usize,
    ) -> Option<Rows<'_>> {
        let slots = self.m.nslots;
        with_accumulator::<A, _>(slots + 1, |acc| {
            let overflow =
                Bucket::sum_into(self.buckets.range(i0..i1).map(|b| (b, false, true)), acc);
            (!overflow).then(|| self.select_dense(n, &acc[..slots]))
        })
    }

    /// Top `n` by summing the buckets at deque positions `[i0, i1)` directly.
    pub(super) fn top_direct(&self, n: usize, i0: usize, i1: usize) -> Rows<'_> {
        if i1 - i0 == 1 {
            return self.top_of_bucket(n, &self.buckets[i0]);
        }
        let range = || self.buckets.range(i0..i1);
        let entries: usize = range().map(Bucket::entries).sum();
        let slots = self.m.nslots;
        if self.dense_sum(entries) {
            // Dense accumulators indexed by member id (plus the scan's dummy slot): i32 when the
            // buckets' value bounds keep every sum in its range (half the bytes), else i64
            // unless a sum overflows.
            let bound: i128 = range()
                .map(|b| (b.min_val as i128).abs().max(b.max_val as i128))
                .sum();
            let summed = if bound <= i32::MAX as i128 {
                self.dense_top::<i32>(n, i0, i1)
            } else {
                self.dense_top::<i64>(n, i0, i1)
            };
            if let Some(rows) = summed {
                return rows;
            }
            let mut acc: Vec<i128> = vec![0; slots];
            for b in range() {
                b.for_each(&mut |id, v| acc[id as usize] += v as i128);
            }
            return top_rows(
                n,
                || {
                    acc.iter()
                        .enumerate()
                        .filter(|(_, v)| **v != 0)
                        .map(|(id, v)| (*v, id as u32))
                },
                |id| self.m.name(id),
            );
        }
        let mut acc: IdMap<i128> = IdMap::default();
        for b in range() {
            b.for_each(&mut |id, v| *acc.entry(id).or_insert(0) += v as i128);
        }
        top_rows(
            n,
            || {
                acc.iter()
                    .filter(|(_, v)| **v != 0)
                    .map(|(id, v)| (*v, *id))
            },
            |id| self.m.name(id),
        )
    }

    /// Top `n` of one bucket: a selection over its cells, no sum (a member's count is its
    /// entry). Candidates are cell numbers; names are read for the rows returned and the ties.
    pub(super) fn top_of_bucket<'a>(&'a self, n: usize, b: &'a Bucket) -> Rows<'a> {
        let name = |pos: u32| self.m.name(b.any_cell(pos as usize).0);
        top_positive(n, || b.cell_counts(), name).unwrap_or_else(|| {
            top_rows(
                n,
                || {
                    b.cell_counts()
                        .filter(|c| c.0 != 0)
                        .map(|(v, pos)| (v as i128, pos))
                },
                name,
            )
        })
    }
}
