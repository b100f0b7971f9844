//! Retirement and upkeep: freeing buckets older than the key's window (and whole states the
//! clock jumped past, through graveyards), aging buckets that left the window at the server's
//! time out of the running aggregate, and packing sealed buckets (`packed.rs`). All of it in
//! bounded slices: a budget of work units per `incr`, and the server timer's `upkeep` calls.

use super::bucket::EMPTY;
use super::bucket::{Bucket, BUCKET_MIGRATE_STEP, MOVED};
use super::graveyard::Graveyard;
use super::key::{Full, REPACK_DELAY_MS};
use super::members::{Members, INDEX_BYTES_PER_KEY};
use super::packed::{packable, Packer, Step};
use super::paths::note_path;
use crate::topn::storage::dispose_value;

/// Work units of a slot added to the clock index (a B-tree insertion; the build runs only in
/// upkeep, whose budgets are bigger, and must outpace the members that writes add).
const CLOCK_SLOT_COST: usize = 4;
/// Work units of an old-table cell migrated (about 4 cells collected).
pub(super) const MIGRATED_CELL_COST: usize = 4;

/// The work done after a step of `cost` units, if the step fits in what is left of `budget`
/// (if not, the slice reports the whole budget: more is left). A step always fits in an empty
/// slice, which then reports at most the budget: every slice progresses, and none reports more
/// than its budget.
#[inline]
pub(super) fn charge(done: usize, cost: usize, budget: usize) -> Option<usize> {
    (done == 0 || done + cost <= budget).then(|| (done + cost).min(budget))
}

/// What a key's upkeep due time depends on, besides retirement progress.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct UpkeepShape {
    pub clock: Option<i64>,
    /// Stored buckets.
    pub buckets: usize,
    /// Packed copies writes dropped.
    pub packs_dropped: u64,
    /// The newest bucket is big enough for a packed copy once the server's time seals it.
    pub newest_packable: bool,
}

impl Full {
    #[cfg(test)]
    /// Retirement work allowed per `incr` (entries of stale buckets, or graveyard items). >= 1.
    pub fn set_retire_budget(&mut self, budget: usize) {
        self.retire_budget = budget.max(1);
    }

    #[cfg(test)]
    /// Buckets of at least this many entries (>= 1) get a packed copy once sealed.
    pub fn set_pack_min(&mut self, entries: usize) {
        self.pack_min = entries.max(1);
    }

    #[cfg(test)]
    /// Retirement work units done by the last `incr` call.
    pub fn last_retire_work(&self) -> usize {
        self.last_retire_work
    }

    /// Number of buckets that left the window and were dropped (or handed to the graveyard)
    /// since the last call; resets the counter. For INFO's expired-bucket statistics.
    pub fn take_retired_buckets(&mut self) -> usize {
        std::mem::take(&mut self.retired_buckets)
    }

    /// Number of buckets taken out of the running aggregate (because they left the window at
    /// the server's time) since the last call; resets the counter.
    pub fn take_aged_buckets(&mut self) -> usize {
        std::mem::take(&mut self.aged_buckets)
    }

    /// True when no stale bucket or graveyard waits to be freed: all the
    /// structure holds is in the window.
    pub fn holds_only_live(&self) -> bool {
        self.graveyards.is_empty() && self.buckets.front().is_none_or(|b| !self.is_stale(b.idx))
    }

    #[cfg(test)]
    /// True when no stale bucket, graveyard or aging is waiting.
    pub fn is_settled(&self) -> bool {
        self.graveyards.is_empty()
            && self.buckets.front().is_none_or(|b| !self.is_stale(b.idx))
            && !self.aging_pending()
            && !self.views_pending()
            && !self.clock_index_pending()
            && !self.packing_pending()
    }

    /// Tells the structure the server's time. Internal state only: the aggregate then follows
    /// the window at that time (buckets that left it are aged by later upkeep), which makes
    /// reads at the server's time cheap. Answers never depend on it. Times going backwards are
    /// ignored.
    /// Returns true if the window moved.
    pub fn observe_time(&mut self, now_ms: i64) -> bool {
        let lo = self
            .bucket_of(now_ms)
            .saturating_sub(self.window as i64 - 1);
        let moved = lo > self.wall_lo;
        if moved {
            self.wall_lo = lo;
        }
        self.seen_ms = self.seen_ms.max(now_ms);
        moved
    }

    /// What upkeep's due time depends on besides retirement progress (a write that changes
    /// none of it, and a window that did not move, leaves the due time where it was or later).
    pub fn shape(&self) -> UpkeepShape {
        UpkeepShape {
            clock: self.clock,
            buckets: self.buckets.len(),
            packs_dropped: self.packs_dropped,
            newest_packable: self.buckets.back().is_some_and(|b| b.len >= self.pack_min),
        }
    }

    /// Does up to `budget` units of upkeep (freeing stale buckets and graveyards, aging buckets
    /// out of the aggregate, then packing sealed buckets); returns the work done (`< budget`
    /// when nothing is left to do).
    pub fn upkeep(&mut self, budget: usize) -> usize {
        let budget = budget.max(1);
        let mut done = self.retire(budget);
        if done < budget {
            done += self.build_clock_index(budget - done);
        }
        if done >= budget {
            return done;
        }
        // Packing may pass its share by a prefix sum: report the budget (more may be left).
        (done + self.pack(budget - done)).min(budget)
    }

    /// When upkeep has work: `Some(0)` when it has some now, else the time at which the oldest
    /// bucket of the aggregate leaves the window (at the server's time); `None` when nothing is
    /// stored in the aggregate.
    pub fn upkeep_due_ms(&self) -> Option<i64> {
        if !self.graveyards.is_empty()
            || self.buckets.front().is_some_and(|b| self.is_stale(b.idx))
            || self.aging_pending()
            || self.clock_index_pending()
            || self.views_pending()
        {
            return Some(0);
        }
        let packing = self.packing_owed().then(|| self.pack_after_ms.max(0));
        // The newest bucket, once the server's time seals it.
        let newest = self.clock.filter(|&c| {
            self.buckets.back().is_some_and(|b| {
                b.idx == c && b.packed.is_none() && b.len >= self.pack_min && !self.is_sealed(c)
            })
        });
        let newest = newest.map(|c| self.key_shape().sealed_at(c));
        let i = self.buckets.partition_point(|b| b.idx < self.agg_lo);
        let aging = self
            .buckets
            .get(i)
            .map(|b| self.bucket_start(b.idx.saturating_add(self.window as i64)));
        [packing, newest, aging, self.views_due_ms()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Where the aggregate should start: no stale bucket, and nothing that left the window at
    /// the server's time.
    #[inline]
    pub(super) fn agg_target(&self) -> i64 {
        match self.clock {
            Some(c) => self.live_lo(c).max(self.wall_lo),
            None => self.wall_lo,
        }
    }

    /// Whether a stored (non-stale) bucket is waiting to be aged out of the aggregate.
    pub(super) fn aging_pending(&self) -> bool {
        let target = self.agg_target();
        if self.agg_lo >= target {
            return false;
        }
        let i = self.buckets.partition_point(|b| b.idx < self.agg_lo);
        self.buckets.get(i).is_some_and(|b| b.idx < target)
    }

    /// Moves the whole state (every stored bucket is stale) to a graveyard.
    pub(super) fn bury(&mut self) {
        note_path(3);
        self.retired_buckets += self.buckets.len();
        let fresh = Members {
            hasher: self.m.hasher.clone(),
            ..Members::new()
        };
        self.total_entries = 0;
        self.neg.clear();
        self.growing.clear();
        self.packer = None;
        let g = Graveyard {
            members: std::mem::replace(&mut self.m, fresh),
            buckets: std::mem::take(&mut self.buckets),
        };
        self.retire_pos = 0;
        self.agg_pos = 0;
        self.reset_views();
        if !g.is_empty() {
            self.graveyards.push(g);
        }
    }

    /// Does up to `budget` units of retirement work; returns the work done. In order:
    /// graveyards, stale buckets (freed: their entries released, their part of the aggregate
    /// subtracted), then aging (buckets that left the window at the server's time are
    /// subtracted from the aggregate, their data kept for reads at earlier times).
    pub(super) fn retire(&mut self, budget: usize) -> usize {
        let mut done = 0;
        if self.m.names.has_clock_index() && !self.wants_clock_index() {
            // The clock moved past the aged buckets: one index serves again.
            self.drop_clock_index();
            done += 1;
        }
        // Empty cells visited count 1/8 of a unit.
        let mut empty_visits = 0usize;
        while done < budget {
            if let Some(g) = self.graveyards.last_mut() {
                done += g.step(budget - done);
                if g.is_empty() {
                    self.graveyards.pop();
                }
                continue;
            }
            if self.views_pending() {
                // Before freeing: a stale bucket is freed once every view has passed it.
                done += self.age_views(budget - done);
                continue;
            }
            let Some(front) = self.buckets.front() else {
                break;
            };
            if self.is_stale(front.idx) {
                debug_assert!(self.views_passed(front.idx));
                // Free the stale front bucket, a cell at a time (it takes no writes, so its
                // cells stay where they are).
                let idx = front.idx;
                let cells = front.cells();
                let all = cells + front.extra.as_ref().map_or(0, |x| x.cells());
                if self.retire_pos >= all {
                    let cost = front.drop_cost();
                    let Some(charged) = charge(done, cost, budget) else {
                        done = budget;
                        break;
                    };
                    self.total_entries -= front.entries();
                    self.neg.remove(&idx);
                    if let Some(gone) = self.buckets.pop_front() {
                        let bytes = gone.heap_bytes();
                        dispose_value(gone, bytes);
                    }
                    self.retire_pos = 0;
                    self.retired_buckets += 1;
                    if idx >= self.agg_lo {
                        self.agg_lo = idx + 1;
                        self.agg_pos = 0;
                    }
                    done = charged;
                    continue;
                }
                let pos = self.retire_pos;
                let (id, c, in_agg) = if pos < cells {
                    let (id, c) = front.cell(pos);
                    (id, c, self.cell_in_agg(idx, pos))
                } else {
                    match &front.extra {
                        Some(x) => {
                            let (id, c) = x.cell(pos - cells);
                            (id, c, false)
                        }
                        None => (EMPTY, 0, false),
                    }
                };
                if front.old.is_some() {
                    note_path(4);
                }
                if id == EMPTY || id == MOVED {
                    self.retire_pos += 1;
                    empty_visits += 1;
                    if empty_visits & 7 == 0 {
                        done += 1;
                    }
                    continue;
                }
                let last = self.m.meta(id).refs == 1;
                let ops = if last {
                    self.m.indexes()
                } else {
                    usize::from(in_agg && c != 0)
                        + usize::from(c != 0 && self.m.names.has_clock_index())
                };
                let Some(charged) = charge(done, 1 + ops * self.m.index_op_cost(), budget) else {
                    done = budget;
                    break;
                };
                done = charged;
                self.retire_pos += 1;
                // Keep the key so lookups still probe past it; the count is now released.
                let b0 = &mut self.buckets[0];
                if pos < cells {
                    b0.set_val(pos, 0);
                } else if let Some(x) = &mut b0.extra {
                    x.set_val(pos - cells, 0);
                }
                if last {
                    // Its last entry: the total is exactly this entry's part; free without
                    // repositioning (out of every index).
                    self.m.free(id);
                } else {
                    if in_agg && c != 0 {
                        let t = self.m.total(id) - c as i128;
                        self.m.set_total(id, t);
                    }
                    if c != 0 {
                        let t = self.m.clock_total(id) - c as i128;
                        self.m.set_clock_total(id, t);
                    }
                    self.m.release(id);
                }
                continue;
            }
            // Aging: the oldest bucket of the aggregate below the target.
            let target = self.agg_target();
            if self.agg_lo >= target {
                break;
            }
            let i = self.buckets.partition_point(|b| b.idx < self.agg_lo);
            let Some(idx) = self.buckets.get(i).map(|b| b.idx).filter(|&x| x < target) else {
                self.agg_lo = target;
                self.agg_pos = 0;
                break;
            };
            if idx > self.agg_lo {
                self.agg_lo = idx;
                self.agg_pos = 0;
            }
            let cells = self.buckets[i].cells();
            while done < budget && self.agg_pos < cells {
                let (id, c) = self.buckets[i].cell(self.agg_pos);
                if id == EMPTY || id == MOVED {
                    self.agg_pos += 1;
                    empty_visits += 1;
                    if empty_visits & 7 == 0 {
                        done += 1;
                    }
                    continue;
                }
                let cost = 1 + usize::from(c != 0) * self.m.index_op_cost();
                let Some(charged) = charge(done, cost, budget) else {
                    done = budget;
                    break;
                };
                done = charged;
                // From the first cell on, the bucket is frozen (see `is_frozen`).
                self.agg_pos += 1;
                if c != 0 {
                    let t = self.m.total(id) - c as i128;
                    self.m.set_total(id, t);
                }
            }
            if self.agg_pos >= cells {
                self.agg_lo = idx + 1;
                self.agg_pos = 0;
                self.aged_buckets += 1;
                note_path(7);
            }
        }
        done
    }

    // ----- the clock index ---------------------------------------------------------------------

    /// Whether a live bucket (at the clock) is aged out of the running aggregate: the totals
    /// then differ from the clock totals, and reads at the clock want the clock index.
    pub(super) fn wants_clock_index(&self) -> bool {
        let Some(c) = self.clock else { return false };
        let i = self.buckets.partition_point(|b| b.idx < self.live_lo(c));
        self.buckets.get(i).is_some_and(|b| b.idx < self.agg_lo)
    }

    /// Whether upkeep has to build the clock index (or drop it).
    pub(super) fn clock_index_pending(&self) -> bool {
        if self.wants_clock_index() {
            !self.m.names.clock_index_ready()
        } else {
            self.m.names.has_clock_index()
        }
    }

    /// Builds the clock index a slice at a time (about `budget` units; a slot costs
    /// `CLOCK_SLOT_COST`) while it is wanted; returns the work done.
    fn build_clock_index(&mut self, budget: usize) -> usize {
        if !self.wants_clock_index() || self.m.names.clock_index_ready() {
            return 0;
        }
        if !self.m.names.has_clock_index() {
            self.m.names.clock_index_start();
        }
        let slots = budget.div_ceil(CLOCK_SLOT_COST);
        let visited = self.m.names.clock_index_step(slots);
        note_path(10);
        if visited < slots {
            return visited * CLOCK_SLOT_COST; // complete
        }
        budget
    }

    fn drop_clock_index(&mut self) {
        let keys = self.m.names.clock_index_len();
        if let Some(dropped) = self.m.names.clock_index_take() {
            dispose_value(dropped, keys * INDEX_BYTES_PER_KEY);
        }
    }

    // ----- packing ---------------------------------------------------------------------------

    /// Whether bucket `b` should get a packed copy: sealed, not stale, big enough, counts that
    /// fit an i32, none yet, and a growth in progress that upkeep may finish (not while its
    /// cells are being walked).
    pub(super) fn wants_packing(&self, b: &Bucket) -> bool {
        b.packed.is_none()
            && b.len >= self.pack_min
            && self.is_sealed(b.idx)
            && !self.is_stale(b.idx)
            && packable(b.min_val, b.max_val)
            && (b.old.is_none() || !self.is_frozen(b.idx))
    }

    /// Sealed: older than the clock, or the newest bucket once the server's time has sealed it
    /// (`Shape::is_sealed`: a key idle since reads it from a copy too).
    fn is_sealed(&self, idx: i64) -> bool {
        self.key_shape().is_sealed(idx, self.seen_ms)
    }

    /// Whether a bucket wants packing (maybe not yet: see `pack_after_ms`).
    pub(super) fn packing_owed(&self) -> bool {
        self.buckets.iter().any(|b| self.wants_packing(b))
    }

    /// Whether upkeep would pack now.
    #[cfg(test)]
    pub(super) fn packing_pending(&self) -> bool {
        self.seen_ms >= self.pack_after_ms && self.packing_owed()
    }

    /// Does up to about `budget` units of packing (elements collected or sorted; finishing a
    /// bucket's growth first); returns the work done, which may pass `budget` by a radix
    /// pass's prefix sum (33 units).
    pub(super) fn pack(&mut self, budget: usize) -> usize {
        if self.seen_ms < self.pack_after_ms {
            return 0;
        }
        let mut done = 0;
        while done < budget {
            let packer = match self.packer.take() {
                Some(p) => p,
                None => {
                    let Some(i) = self.buckets.iter().position(|b| self.wants_packing(b)) else {
                        break;
                    };
                    let b = &mut self.buckets[i];
                    if b.old.is_some() {
                        // Finish the growth first.
                        let cells = (budget - done).div_ceil(MIGRATED_CELL_COST);
                        b.migrate(cells);
                        done += cells * MIGRATED_CELL_COST;
                        continue;
                    }
                    Packer::new(b.idx, b.generation, self.m.nslots, b.len)
                }
            };
            done += 1;
            let packer_idx = packer.idx;
            let found = self
                .buckets
                .binary_search_by_key(&packer.idx, |b| b.idx)
                .ok();
            let written = found.is_some_and(|i| self.buckets[i].generation != packer.generation);
            let current = found.filter(|&i| !written && self.wants_packing(&self.buckets[i]));
            let Some(i) = current else {
                // The bucket is gone or was written since: start again; after a wait if it is
                // the newest, which late events may keep writing.
                let bytes = packer.heap_bytes();
                dispose_value(packer, bytes);
                if written && Some(packer_idx) == self.clock && self.seen_ms != i64::MIN {
                    self.pack_after_ms = self.seen_ms.saturating_add(REPACK_DELAY_MS);
                    break;
                }
                continue;
            };
            let b = &self.buckets[i];
            let mut packer = packer;
            let cell = |c: usize| {
                let (id, v) = b.cell(c);
                (id != EMPTY && id != MOVED).then_some((id, v))
            };
            match packer.step(budget - done, b.cells(), cell) {
                Step::Working(work) => {
                    done += work;
                    self.packer = Some(packer);
                }
                Step::Done(packed) => {
                    note_path(9);
                    self.buckets[i].packed = Some(Box::new(packed));
                    let bytes = packer.heap_bytes();
                    dispose_value(packer, bytes);
                }
            }
        }
        done
    }

    /// Moves the oldest bucket growth in progress a step forward. Frozen buckets are left as
    /// they are (their cells are being walked in place).
    pub(super) fn advance_growth(&mut self) {
        while let Some(&idx) = self.growing.front() {
            let Ok(i) = self.buckets.binary_search_by_key(&idx, |b| b.idx) else {
                self.growing.pop_front();
                continue;
            };
            if self.is_frozen(idx) || self.buckets[i].old.is_none() {
                self.growing.pop_front();
                continue;
            }
            self.buckets[i].migrate(BUCKET_MIGRATE_STEP);
            if self.buckets[i].old.is_none() {
                self.growing.pop_front();
            }
            break;
        }
    }
}
