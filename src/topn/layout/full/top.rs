//! A read of the full layout (`TOPN.TOP`): which plan it takes (`plan.rs`), then that plan:
//! a walk of an index or the sums (`read.rs`), or a threshold merge (`merge.rs`).

use super::key::Full;
use super::paths::note_path;
use super::plan::{note_tried, Ask, Plan};
use super::read::{Base, Fix, Walk, INDEX_STEP_COST, LOOKUP_COST, SLOT_COST, WALK_SHARE};

impl Full {
    #[cfg(test)]
    /// Exact top `n` over the window ending at `at_ms` (before or after the clock), highest
    /// first, ties by member ascending; members whose count is 0 are left out.
    pub fn top(&self, n: usize, at_ms: i64) -> Vec<(&[u8], i64)> {
        self.top_in(n, at_ms, self.window)
    }

    /// `top` over the `k` newest buckets of the window ending at `at_ms` (`LAST k`; TOP24 on a
    /// key whose window is longer than 24 hours). Only buckets inside the key's own window
    /// count.
    ///
    /// Cost (the plans of the module notes): with no fix (the read window is the aggregate's,
    /// or the clock index's) a walk of the index, O(n log M). Otherwise a walk correcting each
    /// candidate with one lookup per fix, or a threshold merge of the read window's buckets,
    /// each given up after 1/WALK_SHARE of the cheapest sum; then that sum.
    pub fn top_in(&self, n: usize, at_ms: i64, k: u32) -> Vec<(&[u8], i64)> {
        if n == 0 {
            return Vec::new();
        }
        let Some(sp) = self.span(at_ms, k) else {
            return Vec::new();
        };
        let want = n.min(self.m.live);
        if want == 0 {
            return Vec::new();
        }
        // Whether a bucket of the read window may hold a negative count (then a member with a
        // non-positive bound can still have a nonzero, negative count).
        let incl_has_neg = self.neg.range(sp.lo..=sp.hi).next().is_some();
        if let Some(v) = self.view_for(&sp) {
            note_path(13);
            // A view's totals are the read window's: a walk of its index, as for the window.
            return self
                .walk(Base::View(v), &Walk::uncapped(&[], want, incl_has_neg))
                .unwrap_or_default();
        }
        let agg = self.fixes(&sp, Base::Agg);
        let clock = self.fixes(&sp, Base::Clock);
        // The walk goes down the index that needs fewer fixes (the clock index once built).
        let clock_walk = self.m.names.clock_index_ready() && clock.len() < agg.len();
        let (walk_base, walk_fixes) = if clock_walk {
            (Base::Clock, &clock)
        } else {
            (Base::Agg, &agg)
        };
        if walk_fixes.is_empty() {
            note_path(if clock_walk { 11 } else { 0 });
            return self
                .walk(walk_base, &Walk::uncapped(walk_fixes, want, incl_has_neg))
                .unwrap_or_default();
        }
        // The cheapest sum: the read window's buckets, or a base's totals (copying them reads
        // a slot each: about a scanned cell) corrected by scans of its fixes' buckets.
        let totals_cost = |fixes: &[Fix<'_>]| {
            (SLOT_COST + 1) * self.m.nslots + fixes.iter().map(|f| f.cost()).sum::<usize>()
        };
        let (agg_cost, clock_cost) = (totals_cost(&agg), totals_cost(&clock));
        let (totals_base, totals_fixes, totals) = if clock_cost < agg_cost {
            (Base::Clock, &clock, clock_cost)
        } else {
            (Base::Agg, &agg, agg_cost)
        };
        let direct = self.direct_cost(sp.i0, sp.i1);
        let sum_cost = direct.min(totals);
        let cap = sum_cost / WALK_SHARE;
        // A candidate of the walk is counted by its fixes or by the read window's buckets,
        // whichever takes fewer lookups (a cache miss each when cold).
        let count_in = (sp.i1 - sp.i0 < walk_fixes.len()).then_some((sp.i0, sp.i1));
        let ask = Ask {
            sp: &sp,
            want,
            base: walk_base,
            step: INDEX_STEP_COST + LOOKUP_COST * Walk::lookups(walk_fixes.len(), count_in),
            slack: walk_fixes.iter().map(|f| f.slack()).sum(),
            cap,
            setup_cap: sum_cost / 2,
            incl_has_neg,
        };
        // Each plan is taken only when known to stop within the cap: a `None` is not expected
        // (it still sums, exact).
        match self.plan(&ask) {
            Plan::Walk(head) => {
                note_tried(0);
                note_path(if clock_walk { 11 } else { 1 });
                let walk = Walk {
                    fixes: walk_fixes,
                    want,
                    cap,
                    incl_has_neg,
                    head: &head,
                    count_in,
                };
                if let Some(rows) = self.walk(walk_base, &walk) {
                    return rows;
                }
                note_tried(2);
            }
            Plan::Merge(lists) => {
                note_tried(1);
                note_path(12);
                if let Some(rows) = self.merge_lists(want, &sp, lists, cap) {
                    return rows;
                }
                note_tried(2);
            }
            Plan::Sum => {}
        }
        note_path(2);
        if totals < direct {
            if let Some(rows) = self.top_through_totals(n, totals_base, totals_fixes) {
                return rows;
            }
        }
        self.top_direct(n, sp.i0, sp.i1)
    }
}
