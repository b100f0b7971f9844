//! The full layout's key: the type, its writes and sizes (the module above says how it
//! works).

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use super::bucket::Bucket;
use super::graveyard::Graveyard;
use super::members::{Members, MIGRATE_STEP};
use super::packed::Packer;
use super::paths::note_path;
use super::view::View;
use crate::topn::parse::Pair;
use crate::topn::shape::{Overflow, Shape};

/// Entries of stale buckets retired (or graveyard items freed) per `incr` call by default.
pub const DEFAULT_RETIRE_BUDGET: usize = 64;

/// Buckets of at least this many entries get a packed copy once sealed.
pub const DEFAULT_PACK_MIN: usize = 4096;
/// After a write dropped a packed copy, packing waits this long (server time).
pub(super) const REPACK_DELAY_MS: i64 = 1000;

/// Where an increment lands and what it starts from (`Full::prepare`).
struct Prepared {
    bucket: i64,
    new_clock: i64,
    advancing: bool,
    /// Every stored bucket leaves the window as the clock moves.
    all_stale: bool,
    hash: u32,
    id: Option<u32>,
    /// The member's count over the window at `new_clock`.
    live: i128,
    /// The member's entry in `bucket`.
    entry: i64,
}

/// Exact top-N over a sliding window of time buckets. See the module docs.
pub struct Full {
    pub(super) bucket_ms: i64,
    /// Bucket boundaries sit this far after the epoch's multiples of `bucket_ms`
    /// (0 <= align_ms < bucket_ms), e.g. so that daily buckets start at a local midnight.
    pub(super) align_ms: i64,
    pub(super) window: u32,
    /// Newest bucket ever written.
    pub(super) clock: Option<i64>,
    pub(super) m: Members,
    /// Stored buckets, ascending index; the front ones may be stale (being freed).
    pub(super) buckets: VecDeque<Bucket>,
    /// Freeing cursor into the front bucket when it is stale (its table cells, then `extra`'s).
    pub(super) retire_pos: usize,
    /// The running aggregate (`total` per member) covers every stored bucket above `agg_lo`
    /// and, of the bucket at `agg_lo`, the table cells from `agg_pos` on (all of them when
    /// `agg_pos` is 0). Stored buckets below are *aged*: still data, out of the aggregate.
    pub(super) agg_lo: i64,
    pub(super) agg_pos: usize,
    /// Oldest bucket of the window at the newest server time seen (`observe_time`).
    pub(super) wall_lo: i64,
    pub(super) graveyards: Vec<Graveyard>,
    pub(super) retire_budget: usize,
    pub(super) last_retire_work: usize,
    /// Buckets freed (or buried) since the last `take_retired_buckets`.
    pub(super) retired_buckets: usize,
    /// Buckets taken out of the aggregate since the last `take_aged_buckets`.
    pub(super) aged_buckets: usize,
    /// Entries of all stored buckets (`extra`s and freed cells of the front bucket included).
    pub(super) total_entries: usize,
    /// Stored buckets that ever held a negative count.
    pub(super) neg: BTreeSet<i64>,
    /// Buckets whose table growth is in progress, advanced a step by every write so that a
    /// bucket that stops taking writes does not keep two tables.
    pub(super) growing: VecDeque<i64>,
    /// The packing of a sealed bucket in progress (upkeep's last job).
    pub(super) packer: Option<Packer>,
    /// Buckets with fewer entries are not packed (a scan of them is short anyway).
    pub(super) pack_min: usize,
    /// Packed copies dropped by writes (in `shape`: upkeep is owed again).
    pub(super) packs_dropped: u64,
    /// The newest server time seen (`observe_time`).
    pub(super) seen_ms: i64,
    /// No packing before this server time: a write just dropped a packed copy, and more late
    /// writes into that bucket may follow (each would throw a new packing away).
    pub(super) pack_after_ms: i64,
    /// The declared views' running state (`views.rs`), ascending k.
    pub(super) views: Vec<View>,
}

impl Clone for Full {
    /// Copies the data; the graveyard (already unreachable state) is not copied.
    fn clone(&self) -> Full {
        Full {
            bucket_ms: self.bucket_ms,
            align_ms: self.align_ms,
            window: self.window,
            clock: self.clock,
            m: self.m.clone(),
            buckets: self.buckets.clone(),
            retire_pos: self.retire_pos,
            agg_lo: self.agg_lo,
            agg_pos: self.agg_pos,
            wall_lo: self.wall_lo,
            graveyards: Vec::new(),
            retire_budget: self.retire_budget,
            last_retire_work: 0,
            retired_buckets: 0,
            aged_buckets: 0,
            total_entries: self.total_entries,
            neg: self.neg.clone(),
            growing: self.growing.clone(),
            packer: None,
            pack_min: self.pack_min,
            packs_dropped: 0,
            seen_ms: self.seen_ms,
            pack_after_ms: self.pack_after_ms,
            views: self.views.clone(),
        }
    }
}

impl fmt::Debug for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Full")
            .field("bucket_ms", &self.bucket_ms)
            .field("align_ms", &self.align_ms)
            .field("window", &self.window)
            .field("clock", &self.clock)
            .field("members", &self.m.live)
            .field("buckets", &self.buckets.len())
            .field("agg_lo", &self.agg_lo)
            .field("agg_pos", &self.agg_pos)
            .field("wall_lo", &self.wall_lo)
            .finish()
    }
}

impl Full {
    /// An empty structure. `bucket_ms` must be >= 1 and `window` >= 1 (smaller values are
    /// raised to 1; the caller validates user input).
    pub fn new(bucket_ms: i64, window: u32) -> Full {
        Full {
            bucket_ms: bucket_ms.max(1),
            align_ms: 0,
            window: window.max(1),
            clock: None,
            m: Members::new(),
            buckets: VecDeque::new(),
            retire_pos: 0,
            agg_lo: i64::MIN,
            agg_pos: 0,
            wall_lo: i64::MIN,
            graveyards: Vec::new(),
            retire_budget: DEFAULT_RETIRE_BUDGET,
            last_retire_work: 0,
            retired_buckets: 0,
            aged_buckets: 0,
            total_entries: 0,
            neg: BTreeSet::new(),
            growing: VecDeque::new(),
            packer: None,
            pack_min: DEFAULT_PACK_MIN,
            packs_dropped: 0,
            seen_ms: i64::MIN,
            pack_after_ms: i64::MIN,
            views: Vec::new(),
        }
    }

    /// The same structure with its bucket boundaries shifted by `align_ms` (brought into
    /// `0..bucket_ms`; the caller validates user input). Only for an empty structure.
    pub fn with_align(mut self, align_ms: i64) -> Full {
        self.align_ms = align_ms.rem_euclid(self.bucket_ms);
        self
    }

    #[cfg(test)]
    pub fn bucket_ms(&self) -> i64 {
        self.bucket_ms
    }

    #[cfg(test)]
    pub fn align_ms(&self) -> i64 {
        self.align_ms
    }

    #[cfg(test)]
    pub fn window(&self) -> u32 {
        self.window
    }

    #[cfg(test)]
    /// Newest bucket index ever written (`None` before the first write).
    pub fn clock(&self) -> Option<i64> {
        self.clock
    }

    /// The bucket index holding `at_ms`.
    pub fn bucket_of(&self, at_ms: i64) -> i64 {
        self.key_shape().bucket_of(at_ms)
    }

    /// The first millisecond of bucket `idx` (saturating).
    pub fn bucket_start(&self, idx: i64) -> i64 {
        self.key_shape().bucket_start(idx)
    }

    /// Whether an event at `at_ms` is older than the key's own window (the window ending at
    /// its newest bucket written): `incr` ignores it.
    #[cfg(test)]
    pub fn is_older_than_window(&self, at_ms: i64) -> bool {
        self.key_shape().is_older_than_window(at_ms)
    }

    /// The shape and clock, as both layouts of a key hold them.
    pub fn key_shape(&self) -> Shape {
        Shape {
            bucket_ms: self.bucket_ms,
            window: self.window,
            align_ms: self.align_ms,
            clock: self.clock,
        }
    }

    /// Oldest live bucket for a clock.
    #[inline]
    pub(super) fn live_lo(&self, clock: i64) -> i64 {
        self.key_shape().live_lo(clock)
    }

    #[inline]
    pub(super) fn is_stale(&self, idx: i64) -> bool {
        match self.clock {
            Some(c) => idx < self.live_lo(c),
            None => false,
        }
    }

    /// Whether table cell `pos` of bucket `idx` counts in the aggregate.
    #[inline]
    pub(super) fn cell_in_agg(&self, idx: i64, pos: usize) -> bool {
        idx > self.agg_lo || (idx == self.agg_lo && pos >= self.agg_pos)
    }

    /// A bucket whose cells are being walked (freed, or aged out of the aggregate): its table
    /// must not move a cell, so it takes no new cell and does not migrate.
    #[inline]
    pub(super) fn is_frozen(&self, idx: i64) -> bool {
        self.is_stale(idx) || (idx == self.agg_lo && self.agg_pos > 0)
    }

    // ----- writes ---------------------------------------------------------------------------

    /// Applies an increment at time `at_ms`. Returns the member's count over the window ending
    /// at the key's clock (newest bucket ever written, which this call may advance). An event
    /// older than the window changes nothing and returns the current window count. A zero `by`
    /// stores nothing but still advances the clock. On overflow nothing changes.
    pub fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<i64, Overflow> {
        self.last_retire_work = 0;
        let Some(p) = self.prepare(member, at_ms) else {
            return Ok(self.count_at_clock(member));
        };
        let new_live = i64::try_from(p.live + by as i128).map_err(|_| Overflow)?;
        let new_entry = p.entry.checked_add(by).ok_or(Overflow)?;
        self.commit(member, &p, by, new_entry);
        self.last_retire_work = self.retire(self.retire_budget);
        Ok(new_live)
    }

    /// Applies `(increment, member)` pairs all at `at_ms`, in order, as as many `incr`s
    /// would, with the window's upkeep once for the call; the caller checked that none
    /// overflows (one that would is skipped). An event older than the window changes nothing.
    pub fn incr_all(&mut self, pairs: &[Pair], at_ms: i64) {
        self.last_retire_work = 0;
        for &(by, member) in pairs {
            let Some(p) = self.prepare(member, at_ms) else {
                return;
            };
            let fits = i64::try_from(p.live + by as i128).is_ok();
            if let (true, Some(new_entry)) = (fits, p.entry.checked_add(by)) {
                self.commit(member, &p, by, new_entry);
            }
        }
        self.last_retire_work = self.retire(self.retire_budget);
    }

    /// Stores a prepared increment, then moves the member table's and the buckets' growth
    /// a step (each insert pays its share of it).
    fn commit(&mut self, member: &[u8], p: &Prepared, by: i64, new_entry: i64) {
        if p.advancing {
            if p.all_stale {
                self.bury();
            }
            self.clock = Some(p.new_clock);
        }
        if by != 0 {
            self.store(member, p.hash, p.id, p.bucket, by, new_entry);
        }
        self.m.migrate(MIGRATE_STEP);
        self.advance_growth();
    }

    /// What an increment of `member` at `at_ms` would start from: the member's count over the
    /// window at the clock the event sets and its entry in the event's bucket (None: the event
    /// is older than the window). Changes nothing.
    pub fn headroom(&self, member: &[u8], at_ms: i64) -> Option<(i128, i64)> {
        self.prepare(member, at_ms).map(|p| (p.live, p.entry))
    }

    fn prepare(&self, member: &[u8], at_ms: i64) -> Option<Prepared> {
        let b = self.bucket_of(at_ms);
        let (new_clock, advancing) = match self.clock {
            None => (b, true),
            Some(c) => {
                if b < self.live_lo(c) {
                    return None;
                }
                (c.max(b), b > c)
            }
        };
        let new_lo = self.live_lo(new_clock);
        let all_stale = advancing && self.buckets.back().is_some_and(|bk| bk.idx < new_lo);
        let hash = self.m.hash_name(member);
        let id = if all_stale {
            None
        } else {
            self.m.find(member, hash)
        };
        let (live, entry) = match id {
            None => (0i128, 0i64),
            Some(id) => {
                // The usual write: every stored bucket is in the window, whose count is then
                // the clock total (what `count_id` finds after two searches).
                let live = if self.buckets.front().is_some_and(|f| f.idx >= new_lo) {
                    self.m.clock_total(id)
                } else {
                    self.span_of(new_lo, new_clock)
                        .map_or(0, |sp| self.count_id(id, &sp))
                };
                let entry = match self.bucket_pos(b) {
                    Ok(i) => self.buckets[i].get(id),
                    Err(_) => 0,
                };
                (live, entry)
            }
        };
        Some(Prepared {
            bucket: b,
            new_clock,
            advancing,
            all_stale,
            hash,
            id,
            live,
            entry,
        })
    }

    /// Where bucket `b` is (or would go) in `buckets`; the newest first, where writes go.
    #[inline]
    fn bucket_pos(&self, b: i64) -> Result<usize, usize> {
        let n = self.buckets.len();
        match self.buckets.back() {
            None => Err(0),
            Some(last) if last.idx == b => Ok(n - 1),
            Some(last) if last.idx < b => Err(n),
            Some(_) => self.buckets.binary_search_by_key(&b, |bk| bk.idx),
        }
    }

    /// Stores `new_entry` (the old one plus `by`) for the member in bucket `b`, creating what
    /// is missing, and keeps the aggregate in step.
    pub(super) fn store(
        &mut self,
        member: &[u8],
        hash: u32,
        id: Option<u32>,
        b: i64,
        by: i64,
        entry: i64,
    ) {
        let id = match id {
            Some(id) => id,
            None => self.m.intern(member, hash),
        };
        let bi = match self.bucket_pos(b) {
            Ok(i) => i,
            Err(i) => {
                // New buckets are live, so they sort after any bucket being freed.
                debug_assert!(i > 0 || self.retire_pos == 0);
                self.buckets.insert(i, Bucket::new(b));
                i
            }
        };
        let frozen = b == self.agg_lo && self.agg_pos > 0;
        let in_agg = b > self.agg_lo || (b == self.agg_lo && self.agg_pos == 0);
        let agg_pos = self.agg_pos;
        let bucket = &mut self.buckets[bi];
        let was_packed = bucket.packed.is_some();
        let in_table = if frozen { bucket.find(id) } else { None };
        let in_extra = bucket.extra.as_ref().is_some_and(|x| x.find(id).is_some());
        let (inserted, counted) = match in_table {
            // Frozen: a cell keeps its place; it counts in the aggregate if not aged yet.
            Some(p) => {
                bucket.set_val(p, entry);
                (false, p >= agg_pos)
            }
            None if frozen || in_extra => {
                note_path(5);
                let x = bucket.extra.get_or_insert_with(|| Box::new(Bucket::new(b)));
                let (p, inserted) = x.entry(id);
                x.set(p, entry);
                (inserted, false)
            }
            None => {
                if !in_agg {
                    note_path(6);
                }
                let had_old = bucket.old.is_some();
                let (p, inserted) = bucket.entry(id);
                if !had_old && bucket.old.is_some() {
                    self.growing.push_back(b);
                }
                bucket.set_val(p, entry);
                (inserted, in_agg)
            }
        };
        if was_packed && bucket.packed.is_none() {
            self.packs_dropped += 1;
            if self.seen_ms != i64::MIN {
                self.pack_after_ms = self.seen_ms.saturating_add(REPACK_DELAY_MS);
            }
        }
        if bucket.note(entry) {
            self.neg.insert(b);
        }
        if !self.views.is_empty() {
            self.views_store(id, b, by, entry - by);
        }
        if inserted {
            self.total_entries += 1;
            self.m.meta_mut(id).refs += 1;
        }
        if counted {
            let t = self.m.total(id) + by as i128;
            self.m.set_total(id, t);
        }
        let t = self.m.clock_total(id) + by as i128;
        self.m.set_clock_total(id, t);
    }

    /// Distinct members currently stored (including ones only in buckets not yet retired).
    pub fn members(&self) -> usize {
        self.m.live
    }

    /// Entries stored (of stale buckets not yet freed too): an upper bound
    /// on the live ones.
    pub fn stored_entries(&self) -> usize {
        self.total_entries
    }

    /// Live buckets (inside the window ending at the clock) that hold entries.
    pub fn buckets_in_use(&self) -> usize {
        match self.clock {
            Some(c) => {
                let lo = self.live_lo(c);
                self.buckets.len() - self.buckets.partition_point(|b| b.idx < lo)
            }
            None => 0,
        }
    }

    /// Estimate of the heap bytes held.
    pub fn mem_usage(&self) -> usize {
        std::mem::size_of::<Full>()
            + self.m.heap_bytes()
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
            + self.buckets.iter().map(Bucket::heap_bytes).sum::<usize>()
            + self.neg.len() * 16
            + self.packer.as_ref().map_or(0, |p| p.heap_bytes())
            + self.views.iter().map(View::heap_bytes).sum::<usize>()
            + self
                .graveyards
                .iter()
                .map(Graveyard::heap_bytes)
                .sum::<usize>()
    }

    /// About the number of allocations freeing this structure takes.
    pub fn free_effort(&self) -> usize {
        1 + self.m.effort()
            + self.buckets.len() * 2
            + self.graveyards.iter().map(Graveyard::effort).sum::<usize>()
    }

    /// When the whole window has passed with no writes (`Shape::expire_at_ms`).
    #[cfg(test)]
    pub fn expire_at_ms(&self) -> Option<i64> {
        self.key_shape().expire_at_ms()
    }
}

// A key may be freed on a background thread.
const _: fn() = || {
    pub(super) fn is<T: Send + Sync>() {}
    is::<Full>();
};
