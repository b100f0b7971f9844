//! Plans of reads, decided before they are tried: a read whose window needs fixes (`read.rs`)
//! walks an index or merges its buckets' lists only when it knows beforehand that the plan
//! stops within its cap (a quarter of the cheapest sum); otherwise it sums at once. So no read
//! pays for an attempt that gives up (on flat counts every fast plan would), and the decision
//! depends on the key's content alone, not on the reads before.
//!
//! The proof needs a *floor*: a count the read window's n-th best reaches for sure. The planner
//! counts exactly a few members likely to lead: the index's first n, then the first n (in the
//! merge's order) of the lists known without a scan (the packed buckets' prefixes); their n-th
//! best nonzero count is one. Then
//! - a walk stops at the latest at the first key whose bound (total plus the fixes' slack) is
//!   below the floor: every member of the n best has a bound at least its count, so all were
//!   visited. The keys above the floor are counted without lookups (an index step each, an
//!   eighth of a walk's step with one fix);
//! - a merge stops at the latest where its lists' next counts sum below the floor
//!   (`merge::rehearse` reads the lists in the merge's order without counting).
//!
//! The planning costs what the cheap plan it finds does: a few dozen lookups, no scan. A list
//! that costs a scan (the newest bucket's, still taking writes) is made only when no walk is
//! proven and a rehearsal on a guess of the lists (the free ones, the newest of them standing in
//! for each list not made, cut at its bucket's maximum) stops within half the cap (its heads
//! then raise the floor); on flat counts it does not, and the read sums without the scan (a
//! guess of 0 for those counts let flat `LAST 2` reads pay the scan for nothing: 0.19-0.34 ms
//! of a 0.3-0.5 ms read). On small keys (a cap of a few microseconds) a walk neither
//! proven nor ruled out is still tried. Counting the candidates costs at most half the cap.

use std::cmp::Reverse;

use super::key::Full;
use super::merge::{rehearse, List};
use super::packed::word_count;
use super::read::{Base, Span, LOOKUP_COST};
use crate::topn::storage::Key;

/// How a read answers.
pub(super) enum Plan<'a> {
    /// A walk of the read's index (proven to stop within the cap), with the exact counts of
    /// the index's first keys the planner counted (the walk does not count them again).
    Walk(Vec<i128>),
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

/// The cheaper of a proven walk and a proven merge (of `lists`), else the sum.
fn choose<'a>(
    walk: Option<usize>,
    merge: Option<usize>,
    lists: Vec<List<'a>>,
    head: Vec<i128>,
) -> Plan<'a> {
    match (walk, merge) {
        (Some(w), Some(m)) if m < w => Plan::Merge(lists),
        (Some(_), _) => Plan::Walk(head),
        (None, Some(_)) => Plan::Merge(lists),
        (None, None) => Plan::Sum,
    }
}

/// A floor of the read window's n-th best count: the exact counts of a few members likely to
/// lead, each counted once.
struct Floor<'f> {
    full: &'f Full,
    sp: &'f Span,
    want: usize,
    /// The most members counted.
    budget: usize,
    counted: Vec<u32>,
    counts: Vec<i128>,
}

impl<'f> Floor<'f> {
    fn new(full: &'f Full, sp: &'f Span, want: usize, budget: usize) -> Floor<'f> {
        Floor {
            full,
            sp,
            want,
            budget,
            counted: Vec::with_capacity(3 * want),
            counts: Vec::with_capacity(3 * want),
        }
    }

    /// Counts the members of `ids` not counted yet, within the budget.
    fn count(&mut self, ids: &[u32]) {
        for &id in ids {
            if self.counted.len() == self.budget {
                return;
            }
            if !self.counted.contains(&id) {
                self.add(id, self.full.count_id(id, self.sp));
            }
        }
    }

    /// Member `id`, not counted yet, counts `count`.
    fn add(&mut self, id: u32, count: i128) {
        self.counted.push(id);
        if count != 0 {
            self.counts.push(count);
        }
    }

    /// Counts the first `want` members of `lists` in the merge's order (a member leading one
    /// list often leads the others too) not counted yet.
    fn count_heads(&mut self, lists: &[List<'_>]) {
        let mut heads: Vec<u64> = lists
            .iter()
            .flat_map(|l| l.head(self.want))
            .copied()
            .collect();
        heads.sort_unstable_by_key(|w| Reverse(word_count(*w)));
        let mut fresh: Vec<u32> = Vec::with_capacity(self.want);
        for id in heads.iter().map(|w| (w >> 32) as u32) {
            if fresh.len() == self.want {
                break;
            }
            if !fresh.contains(&id) && !self.counted.contains(&id) {
                fresh.push(id);
            }
        }
        self.count(&fresh);
    }

    /// The floor, once `want` nonzero counts are known.
    fn get(&mut self) -> Option<i128> {
        floor_of(self.want, &mut self.counts)
    }
}

impl Full {
    /// The plan of a read (see the module notes).
    pub(super) fn plan<'a>(&'a self, ask: &Ask<'_>) -> Plan<'a> {
        match self.proven_plan(ask) {
            Plan::Sum if ask.cap < TRY_BELOW && ask.want.saturating_mul(ask.step) <= ask.cap => {
                Plan::Walk(Vec::new())
            }
            plan => plan,
        }
    }

    /// The cheaper of a walk and a merge known to stop within the cap, else the sum. The floor
    /// comes first from what costs no scan (the index's head, the packed lists' heads); the
    /// lists that cost a scan (the newest bucket's) are made only when no walk is proven and
    /// a merge could still be, as if their counts were 0.
    fn proven_plan<'a>(&'a self, ask: &Ask<'_>) -> Plan<'a> {
        let Ask { sp, want, .. } = *ask;
        // Counting the candidates costs at most half the cap (at least `2 want` of them).
        let count_cost = LOOKUP_COST * self.count_lookups(sp);
        let budget = ask.cap / 2 / count_cost;
        if budget < 2 * want {
            return Plan::Sum;
        }
        let span = sp.i1 - sp.i0;
        let walkable = want.saturating_mul(ask.step) <= ask.cap;
        let mut floor = Floor::new(self, sp, want, budget);
        // The index's first keys (distinct members), counted as the walk would count them.
        let mut head: Vec<i128> = Vec::with_capacity(want);
        self.with_index(ask.base, |keys| {
            for id in keys.take(want).map(Key::id) {
                let count = self.count_id(id, sp);
                floor.add(id, count);
                head.push(count);
            }
        });
        let walk = |floor: Option<i128>| {
            floor
                .filter(|_| walkable)
                .and_then(|floor| self.walk_cost(ask, floor))
        };
        // The index's head alone often proves the walk (skewed counts): then the planning
        // cost the walk's first `want` steps.
        let setup = self.merge_setup_cost(sp);
        if setup != Some(0) && walk(floor.get()).is_some() {
            return Plan::Walk(head);
        }
        let mut free = self.free_lists(sp);
        floor.count_heads(&free);
        let mut walk_cost = walk(floor.get());
        if setup == Some(0) {
            // Every list is free: the cheaper proven plan.
            let merge = floor
                .get()
                .and_then(|f| rehearse(&mut free, span, ask.cap, f));
            return choose(walk_cost, merge, free, head);
        }
        if walk_cost.is_some() {
            return Plan::Walk(head);
        }
        // The lists that cost a scan, when a merge of the guessed lists (each such list a
        // stand-in like the free ones) stops within half the cap, and the scan costs at most
        // `setup_cap`.
        let mut guess = self.guessed_lists(sp);
        let hopeful = floor
            .get()
            .is_some_and(|f| rehearse(&mut guess, span, ask.cap / 2, f).is_some());
        if !hopeful || setup.is_none_or(|setup| setup > ask.setup_cap) {
            return Plan::Sum;
        }
        let mut lists = self.lists(sp);
        floor.count_heads(&lists);
        walk_cost = walk(floor.get());
        let merge = floor
            .get()
            .and_then(|f| rehearse(&mut lists, span, ask.cap, f));
        choose(walk_cost, merge, lists, head)
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
