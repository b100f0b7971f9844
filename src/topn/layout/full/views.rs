//! Views (`VIEWS k ...`): per view, each member's total over the k newest buckets, kept
//! running with its own order index (in `storage::NameTable`), so a `LAST k` read at the
//! server's time is a walk of n keys, as a read of the whole window is.
//!
//! A view counts the stored buckets from `lo` up. Its *target* is the k newest buckets at the
//! key's newest time (the clock, or the server's time when later). A bucket that leaves the
//! view is subtracted a member at a time by the same budgets as retirement (`retire`, a slice
//! per write; `upkeep`, the timer): a cursor walks its cells and subtracts each member's current
//! entry once (the member is then *done*). A write into that bucket meanwhile subtracts the
//! member's old entry itself and leaves the view alone (the member is done too), so every entry
//! leaves exactly once. The bucket may still take writes between slices: a new entry takes an
//! empty cell (and is done: it was never counted), but a table growth or migration step moves
//! cells, so a walk whose bucket changed its layout (`Bucket::layout`) starts over (members
//! already done are skipped at an eighth of a unit, as empty cells are), and a growth in
//! progress is finished first. A stale bucket is
//! freed only once every view has passed it (a view's target is always inside the window at
//! the clock, so it does), so freeing never touches a view. Internal state: reads use a view
//! only while its buckets are exactly the read window's; otherwise they read as without it.

use super::bucket::MOVED;
use super::key::Full;
use super::read::Span;
use super::retire::{charge, MIGRATED_CELL_COST};
use super::view::{Aging, IdSet, View};
use crate::topn::storage::dispose_value;
use crate::topn::views::Views;

/// Cells visited per work unit when empty or done (a sequential scan).
const SKIPPED_CELLS_PER_UNIT: usize = 8;

impl Full {
    /// The same empty structure with `views` declared.
    pub fn with_views(mut self, views: &Views) -> Full {
        self.views = views
            .iter()
            .map(|k| View {
                k,
                lo: i64::MIN,
                aging: None,
            })
            .collect();
        self.m.add_views(self.views.len());
        self
    }

    /// The declared views.
    pub fn declared_views(&self) -> Views {
        let ks: Vec<i64> = self.views.iter().map(|v| i64::from(v.k)).collect();
        Views::new(&ks, self.window).unwrap_or_default()
    }

    /// Heap bytes of view `v` (its share of the totals and index, and a subtraction's copy).
    pub fn view_memory(&self, v: usize) -> usize {
        self.m.views_heap_bytes() / self.views.len().max(1) + self.views[v].heap_bytes()
    }

    /// The oldest bucket a view of `k` should count: the k newest at the key's newest time.
    fn view_target(&self, k: u32) -> i64 {
        let Some(c) = self.clock else {
            return i64::MIN;
        };
        let now = if self.seen_ms == i64::MIN {
            c
        } else {
            c.max(self.bucket_of(self.seen_ms))
        };
        now.saturating_sub(i64::from(k) - 1)
    }

    /// Fresh views after `bury` (the new member table has none): nothing stored is counted.
    pub(super) fn reset_views(&mut self) {
        for v in &mut self.views {
            v.lo = i64::MIN;
            v.aging = None;
        }
        self.m.add_views(self.views.len());
    }

    /// A load's views: each counts the buckets of its target (before the indexes are built).
    pub(super) fn load_views(&mut self) {
        for v in 0..self.views.len() {
            let lo = self.view_target(self.views[v].k);
            self.views[v].lo = lo;
            let from = self.buckets.partition_point(|b| b.idx < lo);
            for i in from..self.buckets.len() {
                let entries: Vec<(u32, i64)> = self.buckets[i].iter().collect();
                for (id, c) in entries {
                    let t = self.m.view_total(v, id) + c as i128;
                    self.m.set_view_total(v, id, t);
                }
            }
        }
    }

    /// Keeps the views in step with a write of `by` to member `id` in bucket `b`, whose entry
    /// there was `old` before it.
    pub(super) fn views_store(&mut self, id: u32, b: i64, by: i64, old: i64) {
        for v in 0..self.views.len() {
            let view = &mut self.views[v];
            let delta = match &mut view.aging {
                _ if b < view.lo => continue,
                // Being subtracted: the member's entry leaves now, once.
                Some(a) if b == view.lo => {
                    if !a.done.insert(id) || old == 0 {
                        continue;
                    }
                    -(old as i128)
                }
                _ => by as i128,
            };
            let t = self.m.view_total(v, id) + delta;
            self.m.set_view_total(v, id, t);
        }
    }

    /// Whether every view has passed bucket `idx` (so freeing it touches no view).
    pub(super) fn views_passed(&self, idx: i64) -> bool {
        self.views.iter().all(|v| v.lo > idx)
    }

    /// Whether a view has a bucket to subtract.
    pub(super) fn views_pending(&self) -> bool {
        (0..self.views.len()).any(|v| self.view_due(v).is_some())
    }

    /// The first stored bucket view `v` counts that is older than its target, if any.
    fn view_due(&self, v: usize) -> Option<i64> {
        let view = &self.views[v];
        if view.aging.is_some() {
            return Some(view.lo);
        }
        let target = self.view_target(view.k);
        // The usual write: the view is where it should be (no search).
        if view.lo >= target {
            return None;
        }
        let i = self.buckets.partition_point(|b| b.idx < view.lo);
        self.buckets.get(i).map(|b| b.idx).filter(|&x| x < target)
    }

    /// When the oldest bucket of a view leaves it at the server's time (upkeep's due time).
    pub(super) fn views_due_ms(&self) -> Option<i64> {
        self.views
            .iter()
            .filter_map(|view| {
                let i = self.buckets.partition_point(|b| b.idx < view.lo);
                let b = self.buckets.get(i)?;
                Some(self.bucket_start(b.idx.saturating_add(i64::from(view.k))))
            })
            .min()
    }

    /// Up to `budget` units of the views' subtractions; returns the work done.
    pub(super) fn age_views(&mut self, budget: usize) -> usize {
        let mut done = 0;
        for v in 0..self.views.len() {
            while done < budget {
                let Some(idx) = self.view_due(v) else {
                    let target = self.view_target(self.views[v].k);
                    let view = &mut self.views[v];
                    view.lo = view.lo.max(target);
                    break;
                };
                let Ok(bi) = self.buckets.binary_search_by_key(&idx, |b| b.idx) else {
                    // Cannot happen (a view passes a bucket before it is freed): start over.
                    self.views[v].aging = None;
                    self.views[v].lo = idx + 1;
                    continue;
                };
                let mut aging = match self.views[v].aging.take() {
                    Some(a) => a,
                    None => {
                        let bucket = &self.buckets[bi];
                        done += 1;
                        self.views[v].lo = idx;
                        // Sized at once: no rehash of a big set inside a later slice.
                        let set =
                            IdSet::with_capacity_and_hasher(bucket.entries(), Default::default());
                        Box::new(Aging {
                            pos: 0,
                            layout: bucket.layout(),
                            done: set,
                        })
                    }
                };
                if self.buckets[bi].old.is_some() && !self.is_frozen(idx) {
                    // A growth moves cells a step a write: finish it (not in a bucket whose
                    // cells aging or freeing walks in place; those take no new cell).
                    let cells = ((budget - done) / MIGRATED_CELL_COST).max(1);
                    self.buckets[bi].migrate(cells);
                    done = (done + cells * MIGRATED_CELL_COST).min(budget);
                }
                let layout = self.buckets[bi].layout();
                if layout != aging.layout {
                    aging.pos = 0;
                    aging.layout = layout;
                }
                let end = self.buckets[bi].scan_cost();
                let mut skipped = 0usize;
                while done < budget && aging.pos < end {
                    let (id, _) = self.buckets[bi].any_cell(aging.pos);
                    if id >= MOVED || aging.done.contains(&id) {
                        aging.pos += 1;
                        skipped += 1;
                        if skipped.is_multiple_of(SKIPPED_CELLS_PER_UNIT) {
                            done += 1;
                        }
                        continue;
                    }
                    let c = self.buckets[bi].get(id);
                    let cost = 1 + usize::from(c != 0) * self.m.index_op_cost();
                    let Some(charged) = charge(done, cost, budget) else {
                        done = budget;
                        break;
                    };
                    done = charged;
                    aging.pos += 1;
                    aging.done.insert(id);
                    if c != 0 {
                        let t = self.m.view_total(v, id) - c as i128;
                        self.m.set_view_total(v, id, t);
                    }
                }
                if aging.pos < end {
                    self.views[v].aging = Some(aging);
                } else {
                    self.views[v].lo = idx + 1;
                    let bytes = aging.heap_bytes();
                    dispose_value(aging, bytes);
                }
            }
        }
        done
    }

    /// The view whose counted buckets are exactly the stored buckets of `sp`, if any.
    pub(super) fn view_for(&self, sp: &Span) -> Option<usize> {
        self.views.iter().position(|view| {
            view.aging.is_none()
                && self.buckets.partition_point(|b| b.idx < view.lo) == sp.i0
                && sp.i1 == self.buckets.len()
        })
    }
}

#[cfg(test)]
impl Full {
    /// Every view's totals are the sums of the buckets it counts, its index holds each indexed
    /// member once at its total, and a bucket being subtracted is still stored.
    pub(super) fn check_views(&self) {
        for (v, view) in self.views.iter().enumerate() {
            let from = self.buckets.partition_point(|b| b.idx < view.lo);
            if let Some(a) = &view.aging {
                assert_eq!(self.buckets.get(from).map(|b| b.idx), Some(view.lo));
                assert!(a.pos <= self.buckets[from].scan_cost());
            }
            for id in self.m.ids() {
                let mut sum = 0i128;
                for (i, b) in self.buckets.iter().enumerate().skip(from) {
                    let gone =
                        i == from && view.aging.as_ref().is_some_and(|a| a.done.contains(&id));
                    if !gone {
                        sum += b.get(id) as i128;
                    }
                }
                assert_eq!(self.m.view_total(v, id), sum, "view {} member {id}", view.k);
            }
            let keys: Vec<u32> = self.m.names.view_iter(v).map(|k| k.id()).collect();
            assert_eq!(
                keys.len(),
                self.m.names.index_len(),
                "view {} index",
                view.k
            );
        }
    }
}
