//! Reads: a member's count and the top `n` over any read window (`AT`, `LAST k`), exact in every
//! state. A running sum (the window's or a view's, `mod.rs`) is turned into the read window's
//! counts by *fixes*: the stored buckets it holds outside the window, subtracted, and what it
//! does not hold of the window's buckets, added. A top is a walk of the sum's order index when
//! it needs no fix; else a walk that corrects each candidate by lookups, taken only when its
//! first keys prove it stops within a quarter of the cheapest sum (tried first down a sum that
//! holds the whole read window, whose fixes add nothing to a bound, then down the one of the
//! fewest fixes); else that sum, into dense accumulators.
//!
//! Costs, in units of an entry added to an accumulator (about a nanosecond): a lookup of a
//! member in a bucket 40 (a cache miss, or a binary search in a sealed bucket), a step of an
//! index walk 8, a member's slot in a sum 1 (its accumulator zeroed, then selected).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::accumulator::{with_accumulator, Acc, Kept};
use super::bucket::Bucket;
use super::key::{Full, Reach};
use super::members::Members;
use crate::topn::select::{self, clamp_i64, top_dense, top_rows, Rows};
use crate::topn::storage::Key;
use crate::topn::window::Query;
use crate::tuples::chunked;

// A sum's totals come in parts of a chunked vector's chunks, each a whole number of the
// selection's chunks.
const _: () = assert!(chunked::CHUNK.is_multiple_of(select::CHUNK));

const INDEX_STEP_COST: usize = 8;
const LOOKUP_COST: usize = 40;
const SLOT_COST: usize = 1;
/// An entry summed into a hash map (sums over few of many members): a random probe and an
/// insertion, about 100 entries added to dense accumulators.
const MAP_ENTRY_COST: usize = 100;
/// A walk's proof counts this many times the rows asked of the index's first keys: the index
/// orders by a total the read corrects, so its leaders in the read window are among its first
/// keys, rarely all of the first n.
const HEAD: usize = 4;
/// A walk with fixes may cost up to 1/`WALK_SHARE` of the cheapest sum: it is taken only when
/// proven to stop within that (the share leaves room for the model's error on cold lookups).
const WALK_SHARE: usize = 4;

/// The stored buckets `[i0, i1)` (deque positions) of a read window.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) i0: usize,
    pub(super) i1: usize,
}

/// How a read corrects a sum's total for one bucket: the sign and the positions concerned.
#[derive(Clone, Copy)]
enum Fix<'a> {
    /// A bucket outside the read window: subtract the entries the sum holds (below this
    /// position).
    Sub(&'a Bucket, usize),
    /// A bucket of the read window the sum does not hold wholly: add its entries from this
    /// position on.
    Add(&'a Bucket, usize),
}

impl<'a> Fix<'a> {
    /// The bucket, the positions `from..to` concerned, and whether they are subtracted.
    #[inline]
    fn parts(self) -> (&'a Bucket, usize, usize, bool) {
        match self {
            Fix::Sub(b, below) => (b, 0, below, true),
            Fix::Add(b, from) => (b, from, usize::MAX, false),
        }
    }

    /// The correction of member `id`'s total.
    #[inline]
    fn value(self, id: u32) -> i128 {
        let (b, from, to, negate) = self.parts();
        let part: i128 = (b.find(id).iter().flatten())
            .filter(|e| (from..to).contains(&e.0))
            .map(|e| i128::from(e.1))
            .sum();
        if negate {
            -part
        } else {
            part
        }
    }

    /// The most this correction can add to a member's count.
    fn slack(self) -> i128 {
        match self {
            Fix::Sub(b, _) => -i128::from(b.min),
            Fix::Add(b, _) => i128::from(b.max),
        }
    }
}

/// A walk down sum `s`'s order index: each candidate's total corrected by `fixes` (or counted
/// in the read window's buckets `count_in`, when that takes fewer lookups), stopping once the
/// next candidate's bound (its total plus the most the fixes add) cannot beat the n-th best;
/// given up once it has cost more than `cap`.
struct Walk<'f> {
    s: usize,
    fixes: &'f [Fix<'f>],
    want: usize,
    cap: usize,
    /// A bucket of the read window holds a negative count: a member of bound <= 0 may still
    /// count.
    has_neg: bool,
    count_in: Option<(usize, usize)>,
    slack: i128,
    /// The cost of a step: an index key and the lookups counting it.
    step: usize,
}

/// The best `want` candidates offered, by count then name: a max-heap on "worseness", whose
/// root is the current n-th best.
struct Best<'a> {
    heap: BinaryHeap<(Reverse<i128>, &'a [u8])>,
    want: usize,
}

impl<'a> Best<'a> {
    fn new(want: usize) -> Best<'a> {
        Best {
            heap: BinaryHeap::with_capacity(want + 1),
            want,
        }
    }

    /// The n-th best count and name, once `want` candidates were offered.
    #[inline]
    fn nth(&self) -> Option<(i128, &'a [u8])> {
        match self.heap.peek() {
            Some(&(Reverse(c), name)) if self.heap.len() >= self.want => Some((c, name)),
            _ => None,
        }
    }

    #[inline]
    fn offer(&mut self, count: i128, name: &'a [u8]) {
        if self.heap.len() < self.want {
            self.heap.push((Reverse(count), name));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if (Reverse(count), name) < *worst {
                *worst = (Reverse(count), name);
            }
        }
    }

    /// The rows, highest first.
    fn into_rows(self) -> Rows<'a> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|(Reverse(c), m)| (m, clamp_i64(c)))
            .collect()
    }
}

impl Full {
    fn m(&self) -> &Members {
        &self.content.members
    }

    /// The stored buckets of `[lo, hi]`, if any.
    #[inline]
    pub(super) fn span_of(&self, lo: i64, hi: i64) -> Option<Span> {
        let buckets = &self.content.buckets;
        let i0 = buckets.partition_point(|b| b.idx < lo);
        let i1 = buckets.partition_point(|b| b.idx <= hi);
        (lo <= hi && i0 < i1).then_some(Span { i0, i1 })
    }

    /// The stored buckets a read covers, if any.
    pub(super) fn span(&self, q: &Query) -> Option<Span> {
        let (lo, hi) = self.content.shape.read_range(q.at_ms, q.last)?;
        self.span_of(lo, hi)
    }

    /// The first stored bucket sum `s` holds (maybe in part), and the positions of it it holds
    /// (those below; at least its length when it holds it whole).
    #[inline]
    fn held_from(&self, s: usize) -> (usize, usize) {
        let Reach { lo, end } = self.sums.reach[s];
        let buckets = &self.content.buckets;
        let j = buckets.partition_point(|b| b.idx < lo);
        let end = match buckets.get(j) {
            Some(b) if b.idx == lo => end,
            _ => Reach::ALL,
        };
        (j, end)
    }

    /// Whether sum `s` holds the bucket at `j` in part only (`end`: from `held_from`).
    #[inline]
    fn in_part(&self, j: usize, end: usize) -> bool {
        self.content.buckets.get(j).is_some_and(|b| end < b.len())
    }

    /// How many fixes turn sum `s`'s totals into the counts over `sp` (`fixes`, not built).
    #[inline]
    fn fix_count(&self, sp: &Span, s: usize) -> usize {
        let (j, end) = self.held_from(s);
        let len = self.content.buckets.len();
        let subs = sp.i0.max(j) - j + (len - sp.i1.max(j));
        let adds = sp.i1.min(j).saturating_sub(sp.i0);
        subs + adds + usize::from((sp.i0..sp.i1).contains(&j) && self.in_part(j, end))
    }

    /// What turns sum `s`'s totals into the counts over `sp`.
    fn fixes(&self, sp: &Span, s: usize) -> Vec<Fix<'_>> {
        let (j, end) = self.held_from(s);
        let buckets = &self.content.buckets;
        let held = |i: usize| if i == j { end } else { Reach::ALL };
        let held_outside = (j..sp.i0.max(j)).chain(sp.i1.max(j)..buckets.len());
        let mut out: Vec<Fix> = held_outside
            .map(|i| Fix::Sub(&buckets[i], held(i)))
            .collect();
        out.extend((sp.i0..sp.i1.min(j)).map(|i| Fix::Add(&buckets[i], 0)));
        if (sp.i0..sp.i1).contains(&j) && self.in_part(j, end) {
            out.push(Fix::Add(&buckets[j], end));
        }
        out
    }

    /// The indexed sum that needs the fewest fixes for `sp`, and how many.
    pub(super) fn closest(&self, sp: &Span) -> (usize, usize) {
        self.closest_of(sp, 0..self.sums.clock_sum())
    }

    /// The sum of `sums` that needs the fewest fixes for `sp`, and how many.
    fn closest_of(&self, sp: &Span, sums: std::ops::Range<usize>) -> (usize, usize) {
        // The usual read at the server's time: the window's sum is the read window.
        if self.fix_count(sp, 0) == 0 {
            return (0, 0);
        }
        sums.map(|s| (s, self.fix_count(sp, s)))
            .min_by_key(|&(_, n)| n)
            .unwrap_or((0, usize::MAX))
    }

    /// The indexed sum that holds every entry of `sp`'s buckets with the fewest fixes, if any.
    /// Its fixes only subtract what it holds besides, so a candidate's bound is its total (no
    /// slack when no count is negative) and its walk stops at the read's n-th best, where a sum
    /// missing some of the read window's buckets must allow each member the most they add: a
    /// read in the past of a key whose views have moved on to the server's time, `AT <t> LAST k`
    /// once a view of k holds newer buckets only in part.
    fn holding(&self, sp: &Span) -> Option<usize> {
        let holds = |s: usize| {
            let (j, end) = self.held_from(s);
            j < sp.i0 || (j == sp.i0 && !self.in_part(j, end))
        };
        (0..self.sums.clock_sum())
            .filter(|&s| holds(s))
            .min_by_key(|&s| self.fix_count(sp, s))
    }

    /// Member `id`'s exact count over `sp`: a sum's total corrected (the clock's too), or the
    /// span's buckets summed, whichever takes fewer lookups.
    #[inline]
    pub(super) fn count_id(&self, id: u32, sp: &Span) -> i128 {
        let (s, n) = self.closest_of(sp, 0..self.sums.reach.len());
        let total = || self.sums.total(self.m(), s, id);
        match n {
            0 => total(),
            n if n < sp.i1 - sp.i0 => {
                total() + self.fixes(sp, s).iter().map(|f| f.value(id)).sum::<i128>()
            }
            _ => (self.content.buckets.range(sp.i0..sp.i1))
                .map(|b| i128::from(b.get(id)))
                .sum(),
        }
    }

    /// The member's count over the window ending at the clock.
    pub fn count_at_clock(&self, member: &[u8]) -> i64 {
        let Some(c) = self.content.shape.clock else {
            return 0;
        };
        self.count_over(member, self.span_of(self.content.shape.live_lo(c), c))
    }

    /// The member's count over a read.
    pub fn count_of(&self, member: &[u8], q: &Query) -> i64 {
        self.count_over(member, self.span(q))
    }

    fn count_over(&self, member: &[u8], sp: Option<Span>) -> i64 {
        let Some(sp) = sp else { return 0 };
        let m = self.m();
        match m.find(member, Members::hash(member)) {
            Some(id) => clamp_i64(self.count_id(id, &sp)),
            None => 0,
        }
    }

    /// The exact top `q.n` over a read (before or after the clock), highest first, ties by
    /// member ascending; members whose count is 0 are left out.
    pub fn top_of(&self, q: &Query) -> Rows<'_> {
        let Some(sp) = self.span(q) else {
            return Vec::new();
        };
        let want = q.n.min(self.m().live);
        if want == 0 {
            return Vec::new();
        }
        let buckets = &self.content.buckets;
        let has_neg = buckets.range(sp.i0..sp.i1).any(|b| b.min < 0);
        let (s, nfix) = self.closest(&sp);
        if nfix == 0 {
            let walk = self.walk_of(s, &[], want, has_neg);
            return self.walk(&walk, &[]).unwrap_or_default();
        }
        let fixes = self.fixes(&sp, s);
        // The cheapest sum: the read window's buckets, or the totals of sum `s` or the clock's
        // (copying them reads a slot each; a selection over them with no fix, none) corrected
        // by scans of their fixes' buckets.
        let via_cost = |fixes: &[Fix<'_>]| {
            (SLOT_COST + usize::from(!fixes.is_empty())) * self.m().slots()
                + fixes.iter().map(|f| f.parts().0.len()).sum::<usize>()
        };
        let clock = self.sums.clock_sum();
        let clock_fixes = self.fixes(&sp, clock);
        let (own_cost, clock_cost) = (via_cost(&fixes), via_cost(&clock_fixes));
        let (base, base_fixes, via) = match clock_cost < own_cost {
            true => (clock, &clock_fixes[..], clock_cost),
            false => (s, &fixes[..], own_cost),
        };
        let direct = self.direct_cost(&sp);
        let cap = direct.min(via) / WALK_SHARE;
        // Walks tried: down the index of a sum that holds the read window whole, then down the
        // one of the fewest fixes (see `holding`).
        let holding = self.holding(&sp).filter(|&h| h != s);
        let held_fixes = holding.map(|h| (h, self.fixes(&sp, h)));
        let tried = held_fixes.iter().map(|(h, f)| (*h, &f[..]));
        for (w, w_fixes) in tried.chain([(s, &fixes[..])]) {
            let mut walk = self.walk_of(w, w_fixes, want, has_neg);
            walk.cap = cap;
            // A candidate is counted by its fixes or by the read window's buckets, whichever
            // takes fewer lookups.
            walk.count_in = (sp.i1 - sp.i0 < w_fixes.len()).then_some((sp.i0, sp.i1));
            let lookups = walk.count_in.map_or(w_fixes.len(), |(i0, i1)| i1 - i0);
            walk.step = INDEX_STEP_COST + LOOKUP_COST * lookups;
            if let Some(head) = self.proven(&walk) {
                #[cfg(test)]
                super::seen::note(&super::seen::WALKS, 1);
                if let Some(rows) = self.walk(&walk, &head) {
                    return rows;
                }
                #[cfg(test)]
                super::seen::note(&super::seen::GAVE_UP, 1);
            }
        }
        if via < direct {
            if let Some(rows) = self.top_via(want, base, base_fixes) {
                return rows;
            }
        }
        self.top_direct(want, &sp)
    }

    /// A walk down sum `s`'s index corrected by `fixes`, uncapped, each candidate counted by
    /// its fixes.
    fn walk_of<'f>(&self, s: usize, fixes: &'f [Fix<'f>], want: usize, has_neg: bool) -> Walk<'f> {
        Walk {
            s,
            fixes,
            want,
            cap: usize::MAX,
            has_neg,
            count_in: None,
            slack: fixes.iter().map(|f| f.slack()).sum(),
            step: INDEX_STEP_COST,
        }
    }

    /// A candidate's exact count in a walk.
    #[inline]
    fn walked(&self, w: &Walk<'_>, key: &Key) -> i128 {
        let id = key.id();
        if let Some((i0, i1)) = w.count_in {
            let buckets = self.content.buckets.range(i0..i1);
            return buckets.map(|b| i128::from(b.get(id))).sum();
        }
        let t = key.total();
        let total = match t == i64::MAX || t == i64::MIN {
            true => self.sums.total(self.m(), w.s, id),
            false => i128::from(t),
        };
        total + w.fixes.iter().map(|f| f.value(id)).sum::<i128>()
    }

    /// A candidate's bound: its total plus the most the fixes add (none for a clamped total).
    #[inline]
    fn bound(w: &Walk<'_>, key: &Key) -> i128 {
        match key.total() {
            i64::MAX => i128::MAX,
            t => i128::from(t) + w.slack,
        }
    }

    /// The top `want` by walking (see [`Walk`]); the index's first keys count `head` (counted
    /// already). `None` when it gives up: past its cap, or where the members the index leaves
    /// out (their total in its sum 0, so their place between its positive keys and its
    /// negative ones) could be rows.
    fn walk(&self, w: &Walk<'_>, head: &[i128]) -> Option<Rows<'_>> {
        let mut cost = 0usize;
        let mut best = Best::new(w.want);
        let mut keys = self.m().names.iter(w.s).enumerate();
        // Stopped where no later candidate can be a row (a key of a total of 0 would be later
        // than a positive one, and its bound no higher), or at the end of the keys.
        let stopped = loop {
            let Some((i, key)) = keys.next() else {
                break false;
            };
            cost = cost.saturating_add(w.step);
            if cost > w.cap {
                return None;
            }
            if key.total() < 0 && !Full::zeros_out(w, &best) {
                return None;
            }
            let bound = Full::bound(w, key);
            let name = key.bytes();
            if let Some((wc, wn)) = best.nth() {
                if bound < wc || (bound == wc && name > wn) {
                    break true;
                }
            }
            if bound <= 0 && !w.has_neg {
                break true;
            }
            let count = head.get(i).copied().unwrap_or_else(|| self.walked(w, key));
            if count != 0 {
                best.offer(count, name);
            }
        };
        (stopped || Full::zeros_out(w, &best)).then(|| best.into_rows())
    }

    /// Whether no member the index leaves out (of a total of 0 in its sum) can be a row of the
    /// walk's read: its count there is what the fixes add, 0 without fixes, at most the slack.
    fn zeros_out(w: &Walk<'_>, best: &Best<'_>) -> bool {
        w.fixes.is_empty()
            || (w.slack <= 0 && !w.has_neg)
            || best.nth().is_some_and(|(wc, _)| w.slack < wc)
    }

    /// The counts of the index's first keys when they prove the walk stops within its cap:
    /// `HEAD` times `want` of them counted (at most half the cap), their n-th best nonzero
    /// count is a floor of the read window's n-th best, and the walk stops at the latest at the
    /// first key whose bound is below it.
    fn proven(&self, w: &Walk<'_>) -> Option<Vec<i128>> {
        let keys = || self.m().names.iter(w.s);
        let counted = (HEAD * w.want).min(w.cap / 2 / w.step);
        let head: Vec<i128> = keys().take(counted).map(|k| self.walked(w, k)).collect();
        let mut counts: Vec<i128> = head.iter().copied().filter(|&c| c != 0).collect();
        if counts.len() < w.want {
            return None;
        }
        let (_, &mut floor, _) = counts.select_nth_unstable_by_key(w.want - 1, |&c| Reverse(c));
        // The keys the walk visits at most, up to the cap (an index step each, no lookup). Past
        // the positive ones it meets the place of the members of a total of 0 (left out of the
        // index), which the floor must rule out.
        let limit = w.cap / w.step;
        let zeros_out = w.slack < floor || (w.slack <= 0 && !w.has_neg);
        let stop = keys().take(limit).find(|k| {
            let bound = Full::bound(w, k);
            bound < floor || (bound <= 0 && !w.has_neg)
        });
        let stops = match stop {
            Some(k) => k.total() > 0 || zeros_out,
            None => self.m().names.indexed(w.s) < limit && zeros_out,
        };
        stops.then_some(head)
    }

    /// Whether a sum over this many entries uses dense accumulators (one per member slot)
    /// rather than a hash map.
    fn dense_sum(&self, entries: usize) -> bool {
        self.m().slots().saturating_mul(SLOT_COST) <= entries.saturating_mul(MAP_ENTRY_COST)
    }

    /// The model's cost of `top_direct` over `sp`.
    fn direct_cost(&self, sp: &Span) -> usize {
        let entries: usize = self.span_buckets(sp).map(|b| b.len()).sum();
        match self.dense_sum(entries) {
            true => entries + SLOT_COST * self.m().slots(),
            false => MAP_ENTRY_COST * entries,
        }
    }

    fn span_buckets(&self, sp: &Span) -> impl Iterator<Item = &Bucket> + '_ {
        self.content.buckets.range(sp.i0..sp.i1).map(|b| &**b)
    }

    /// The most any count of a sum over these buckets can be, in size: the sum of their
    /// bounds. A sum whose buckets' bound fits an i32 adds into 32-bit accumulators.
    fn sums_bound<'a>(buckets: impl Iterator<Item = &'a Bucket>) -> i128 {
        buckets
            .map(|b| i128::from(b.min).abs().max(b.max.into()))
            .sum()
    }

    /// Top `n` from sum `s`'s totals corrected by scans of its fixes' buckets (none: a selection
    /// over its totals); `None` if a total is beyond i64 or a sum overflows (then
    /// `top_direct`).
    fn top_via(&self, n: usize, s: usize, fixes: &[Fix<'_>]) -> Option<Rows<'_>> {
        if !self.sums.big[s].is_empty() {
            return None;
        }
        if fixes.is_empty() {
            #[cfg(test)]
            super::seen::note(&super::seen::CLOCK_SELECTIONS, 1);
            return Some(self.select_dense(n, &self.m().names.totals(s)));
        }
        let (j, _) = self.held_from(s);
        let held = self.content.buckets.range(j..).map(|b| &**b);
        let added = fixes.iter().map(|f| f.parts().0);
        match Full::sums_bound(held.chain(added)) <= i32::MAX.into() {
            true => self.via::<i32>(n, s, fixes),
            false => self.via::<i64>(n, s, fixes),
        }
    }

    /// `top_via` into accumulators of type `A`.
    fn via<A: Kept + Acc + Ord + Into<i64>>(
        &self,
        n: usize,
        s: usize,
        fixes: &[Fix<'_>],
    ) -> Option<Rows<'_>> {
        let totals = self.m().names.totals(s);
        with_accumulator::<A, _>(self.m().slots(), |acc| {
            for (accs, part) in acc.chunks_mut(chunked::CHUNK).zip(&totals) {
                accs.iter_mut().zip(*part).for_each(|(a, &t)| *a = A::of(t));
            }
            let overflow = (fixes.iter().map(|f| f.parts()))
                .fold(false, |o, (b, from, to, negate)| {
                    o | b.scan(from, to, negate, acc)
                });
            (!overflow).then(|| self.select_dense(n, &[acc]))
        })
    }

    /// `top_via` from each sum (`None` where it declines).
    #[cfg(test)]
    pub(super) fn top_via_each(&self, n: usize, sp: &Span) -> Vec<Option<Rows<'_>>> {
        (0..self.sums.reach.len())
            .map(|s| self.top_via(n, s, &self.fixes(sp, s)))
            .collect()
    }

    /// The top `n` of dense sums (`acc[id]`, in consecutive parts).
    fn select_dense<A: Acc + Ord + Into<i64>>(&self, n: usize, parts: &[&[A]]) -> Rows<'_> {
        let name = |id: u32| self.m().name(id);
        top_dense(n, parts, name).unwrap_or_else(|| {
            let acc = || parts.iter().flat_map(|p| p.iter());
            let all = || acc().enumerate().map(|(id, v)| (v.get(), id as u32));
            top_rows(
                n,
                || all().filter(|c| c.0 != 0).map(|(v, id)| (v.into(), id)),
                name,
            )
        })
    }

    /// Top `n` by summing the buckets of `sp` directly.
    pub(super) fn top_direct(&self, n: usize, sp: &Span) -> Rows<'_> {
        let entries: usize = self.span_buckets(sp).map(|b| b.len()).sum();
        if !self.dense_sum(entries) {
            let mut acc: hashbrown::HashMap<u32, i128> = hashbrown::HashMap::new();
            for b in self.span_buckets(sp) {
                b.for_each(|id, v| *acc.entry(id).or_insert(0) += i128::from(v));
            }
            let all = || acc.iter().filter(|e| *e.1 != 0).map(|(id, v)| (*v, *id));
            return top_rows(n, all, |id| self.m().name(id));
        }
        // i32 accumulators when the buckets' bounds keep every sum in range (half the bytes to
        // stream), else i64 unless a sum overflows, else i128.
        let summed = match Full::sums_bound(self.span_buckets(sp)) <= i32::MAX.into() {
            true => self.dense_top::<i32>(n, sp),
            false => self.dense_top::<i64>(n, sp),
        };
        summed.unwrap_or_else(|| {
            let mut acc: Vec<i128> = vec![0; self.m().slots()];
            for b in self.span_buckets(sp) {
                b.for_each(|id, v| acc[id as usize] += i128::from(v));
            }
            let all = || (acc.iter().enumerate()).filter(|e| *e.1 != 0);
            top_rows(
                n,
                || all().map(|(id, v)| (*v, id as u32)),
                |id| self.m().name(id),
            )
        })
    }

    /// Top `n` of `sp`'s buckets summed into dense accumulators of type `A`; `None` if a sum
    /// overflows.
    fn dense_top<A: Kept + Acc + Ord + Into<i64>>(&self, n: usize, sp: &Span) -> Option<Rows<'_>> {
        with_accumulator::<A, _>(self.m().slots(), |acc| {
            let overflow =
                (self.span_buckets(sp)).fold(false, |o, b| o | b.scan(0, usize::MAX, false, acc));
            (!overflow).then(|| self.select_dense(n, &[acc]))
        })
    }
}
