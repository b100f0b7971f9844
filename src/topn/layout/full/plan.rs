//! Plans of reads, decided before any is tried: a read whose window needs fixes (`read.rs`)
//! walks an index or merges its buckets' lists only when it knows beforehand that the plan
//! stops within its cap (an eighth of the cheapest sum); otherwise it sums at once. So no read
//! pays for an attempt that gives up (on flat counts every fast plan would), and the decision
//! depends on the key's content alone, not on the reads before.
//!
//! The proof needs a *floor*: a count the read window's n-th best reaches for sure. The planner
//! counts exactly the few members most likely to lead (the index's first n and the lists' first
//! n entries, in the merge's order): their n-th best nonzero count is one. Then
//! - a walk stops at the latest at the first key whose bound (total plus the fixes' slack) is
//!   below the floor: every member of the n best has a bound at least its count, so all were
//!   visited. The keys above the floor are counted without lookups (an index step each, an
//!   eighth of a walk's step with one fix);
//! - a merge stops at the latest where its lists' next counts sum below the floor
//!   (`merge::rehearse` reads the lists in the merge's order without counting).
//!
//! On small keys (a cap of a few microseconds) a walk neither proven nor ruled out is still
//! tried. Counting the candidates costs `2 n` lookups per bucket a count needs at most, and a scan of
//! the newest bucket when its list is wanted (both small shares of the sum they may save).

use std::cmp::Reverse;

use super::merge::{rehearse, List};
use super::packed::word_count;
use super::read::{Base, Span, LOOKUP_COST};
use super::key::Full;
use crate::topn::storage::Key;

/// How a read answers.
pub(super) enum Plan<'a> {
    /// A walk of the read's index (proven to stop within the cap).
    Walk,
    /// A threshold merge of these lists (proven to stop within the cap).
    Merge(Vec<List<'a>>),
    /// A sum.
    Sum,
}

/// What the planner is asked: the read window, how many rows, the walk's index and the cost
/// of a step of it (the lookups of its fixes), the most the fixes can add to a total, and the
/// caps of a plan and of making the lists.
pub(super) struct Ask<'s> {
    pub(super) sp: &'s Span,
    pub(super) want: usize,
    pub(super) base: Base,
    pub(super) step: usize,
    pub(super) slack: i128,
    pub(super) cap: usize,
    pub(super) setup_cap: usize,
    pub(super) incl_has_neg: bool,
}

#[cfg(test)]
thread_local! {
    /// Test-only: [walks tried, merges tried, plans that gave up].
    pub(super) static TRIED: std::cell::Cell<[usize; 3]> = const { std::cell::Cell::new([0; 3]) };
}

/// Notes a plan tried (0 a walk, 1 a merge) or given up (2).
#[inline]
pub(super) fn note_tried(_i: usize) {
    #[cfg(test)]
    TRIED.with(|t| {
        let mut v = t.get();
        v[_i] += 1;
        t.set(v);
    });
}

/// A plan neither proven nor ruled out is still tried (a walk) when its cap is below this, a
/// few microseconds: on small keys a proof rarely fits the cap, and giving up costs nothing
/// worth counting.
const TRY_BELOW: usize = 4096;

/// The `want`-th best of `counts` (nonzero), if there are that many.
fn floor_of(want: usize, counts: &mut [i128]) -> Option<i128> {
    if counts.len() < want {
        return None;
    }
    let (_, &mut floor, _) = counts.select_nth_unstable_by_key(want - 1, |c| Reverse(*c));
    Some(floor)
}

impl Full {
    /// The plan of a read (see the module notes).
    pub(super) fn plan<'a>(&'a self, ask: &Ask<'_>) -> Plan<'a> {
        match self.proven_plan(ask) {
            Plan::Sum if ask.cap < TRY_BELOW && ask.want.saturating_mul(ask.step) <= ask.cap => {
                Plan::Walk
            }
            plan => plan,
        }
    }

    /// The cheaper of a walk and a merge known to stop within the cap, else the sum.
    fn proven_plan<'a>(&'a self, ask: &Ask<'_>) -> Plan<'a> {
        let Ask { sp, want, .. } = *ask;
        // Counting the candidates costs at most the cap.
        let count_cost = LOOKUP_COST * self.count_lookups(sp);
        if want.saturating_mul(2 * count_cost) > ask.cap {
            return Plan::Sum;
        }
        let walkable = want.saturating_mul(ask.step) <= ask.cap;
        let mut candidates: Vec<u32> = Vec::with_capacity(2 * want);
        self.with_index(ask.base, |keys| {
            candidates.extend(keys.take(want).map(Key::id))
        });
        let mut counts: Vec<i128> = Vec::with_capacity(2 * want);
        let count = |ids: &[u32], counts: &mut Vec<i128>| {
            counts.extend(
                ids.iter()
                    .map(|&id| self.count_id(id, sp))
                    .filter(|&c| c != 0),
            );
        };
        count(&candidates, &mut counts);
        let mut walk = if walkable {
            floor_of(want, &mut counts).and_then(|floor| self.walk_cost(ask, floor))
        } else {
            None
        };
        let setup = self.merge_setup_cost(sp);
        // A walk known to stop makes lists that cost a scan (the newest bucket's) not worth it.
        if walk.is_some() && setup != Some(0) {
            return Plan::Walk;
        }
        // The lists, when making them costs at most `setup_cap` (they are made already for
        // packed buckets).
        let Some(mut lists) = setup
            .filter(|&setup| setup <= ask.setup_cap)
            .map(|_| self.lists(sp))
        else {
            return if walk.is_some() {
                Plan::Walk
            } else {
                Plan::Sum
            };
        };
        let mut heads: Vec<u64> = lists.iter().flat_map(|l| l.head(want)).copied().collect();
        heads.sort_unstable_by_key(|w| Reverse(word_count(*w)));
        // The first `want` members in the merge's order (a member leading one list often
        // leads the others too), those not counted already.
        let mut from_lists: Vec<u32> = Vec::with_capacity(want);
        for id in heads.iter().map(|w| (w >> 32) as u32) {
            if from_lists.len() == want {
                break;
            }
            if !from_lists.contains(&id) {
                from_lists.push(id);
            }
        }
        from_lists.retain(|id| !candidates.contains(id));
        count(&from_lists, &mut counts);
        let Some(floor) = floor_of(want, &mut counts) else {
            return Plan::Sum;
        };
        if walkable && walk.is_none() {
            walk = self.walk_cost(ask, floor);
        }
        let merge = rehearse(&mut lists, ask.cap, floor);
        let lists = Some(lists);
        match (walk, merge, lists) {
            (Some(w), Some(m), Some(lists)) if m < w => Plan::Merge(lists),
            (Some(_), ..) => Plan::Walk,
            (None, Some(_), Some(lists)) => Plan::Merge(lists),
            _ => Plan::Sum,
        }
    }

    /// The most a walk of the read's index costs when the n-th best is at least `floor`, if it
    /// stays within the cap: its keys down to the first whose bound is below the floor.
    fn walk_cost(&self, ask: &Ask<'_>, floor: i128) -> Option<usize> {
        let limit = ask.cap / ask.step;
        self.with_index(ask.base, |keys| {
            let mut visited = 0usize;
            for key in keys {
                // As the walk: it visits this key and stops here (or is past its n-th best).
                visited += 1;
                if visited > limit {
                    return None;
                }
                let total = key.total();
                let bound = if total == i64::MAX {
                    i128::MAX
                } else {
                    total as i128 + ask.slack
                };
                if bound < floor || (bound <= 0 && !ask.incl_has_neg) {
                    break;
                }
            }
            Some(visited * ask.step)
        })
        .flatten()
    }

    /// Runs `f` on the keys of `base`'s order index (`None` when it has none yet).
    fn with_index<R>(
        &self,
        base: Base,
        f: impl FnOnce(&mut dyn Iterator<Item = &Key>) -> R,
    ) -> Option<R> {
        match base {
            Base::Agg => Some(f(&mut self.m.names.index_iter())),
            Base::Clock => Some(f(&mut self.m.names.clock_index_iter()?)),
            Base::View(v) => Some(f(&mut self.m.names.view_iter(v))),
        }
    }
}
