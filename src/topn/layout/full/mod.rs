//! TOPN's data structure: exact top-N over a sliding window of time buckets.
//! Pure Rust, std only, no FFI.
//!
//! Design:
//! - Time is cut into buckets starting ALIGN after the epoch's multiples of the bucket width
//!   (`bucket = (at_ms - align_ms).div_euclid(bucket_ms)`). The key's *clock* is the newest
//!   bucket ever written (monotone); *live* buckets are `[clock - window + 1, clock]`. Writes
//!   older than that are ignored; reads only ever see live buckets.
//! - Members are interned once: each name is one heap block `[id][len][bytes]` owned by its slot
//!   (`id -> name, total, refs`, in fixed chunks that never reallocate) and referenced by the
//!   lookup table (`hash|id` cells, linear probing, grown by incremental migration like Redis'
//!   rehash) and by the order index (16-byte keys).
//! - Each bucket is a flat open-addressing map `u32 id -> i64 count` (two plain arrays: freeing
//!   a bucket is a few deallocations, whatever its size), with a per-bucket hash seed.
//! - No call does O(size) work at once: hash tables grow by incremental migration, big new
//!   arrays are initialized lazily chunk by chunk, slot chunks never reallocate.
//! - A running aggregate `total` per member (exact: i128, in a side table when beyond i64) is
//!   ordered by `BTreeSet<(total desc, name asc)>`: a read whose window is the aggregate's is a
//!   walk of n keys. The aggregate covers the stored buckets from `agg_lo` up; the bucket at
//!   `agg_lo` may be covered only from table cell `agg_pos` on.
//! - Two kinds of retirement, both incremental (`retire`, a budget of work units per `incr`, and
//!   `upkeep`, the server's timer):
//!   - *freeing*: a bucket older than the key's window (the clock moved) is walked cell by cell,
//!     each entry released (and subtracted if still in the aggregate); a member is freed when
//!     no stored bucket holds it (`refs == 0`). When the clock jumps past the whole window, the
//!     whole old state moves to a graveyard freed piecewise.
//!   - *aging*: a bucket that left the window at the server's time (`observe_time`) is walked
//!     cell by cell and subtracted from the aggregate, its data kept: reads at an earlier `AT`
//!     still see it, and only the clock frees it. So once upkeep has caught up, the aggregate is
//!     exactly the window at the server's time, however long ago the last write was. This is
//!     internal state: no answer depends on it, and servers need not agree on it.
//! - A bucket being walked is *frozen*: its cells never move (no new cell, no migration), so a
//!   cursor tells which cells are done. Only a bucket being aged can still take writes (a
//!   replica or an AOF replay lagging the server's time): a member it holds is updated in place,
//!   counted in the aggregate if its cell is not aged yet; a new member goes to the bucket's
//!   `extra`, a side bucket never in the aggregate.
//! - A second running total per member, its *clock total*, covers every stored bucket (the
//!   window at the clock, plus what is left of a stale bucket being freed): writes add to it,
//!   freeing subtracts, aging does not touch it (one more addition per write). While a live
//!   bucket is aged (the server's time ran ahead of the clock: an idle key, a replica, a
//!   reload), the clock totals differ from the aggregate, and upkeep builds a second order
//!   index over them, the *clock index*, a slice at a time (O(M log M) once per such spell);
//!   a write then repositions its member in both indexes. Once the clock passes the aged
//!   buckets the clock index is dropped (freed off the main thread).
//! - Reads are `&self` and exact in every state. A read window's counts are one of the two
//!   totals corrected by *fixes*: for the aggregate, subtract its buckets outside the read
//!   window (stale ones, newer than `AT`, older than `LAST k`) and add the aged buckets inside
//!   it; for the clock totals, subtract the stored buckets outside the read window. Each read
//!   corrects whichever needs fewer fixes. Its plans, cheapest first (`read.rs`):
//!   1. no fix: a walk of n keys of an index, O(n log M). A read at the server's time once
//!      upkeep caught up (the aggregate), and a whole-window read at the clock, also with
//!      buckets aged (the clock index).
//!   2. a walk with fixes: each candidate corrected with one lookup per fix, stopping once the
//!      next candidate's bound (its total plus the most a fix can add, from per-bucket value
//!      bounds) cannot beat the n-th best. `LAST 6`, `LAST 12` at the clock.
//!   3. a threshold merge of the read window's k buckets (`merge.rs`, Fagin's TA): their
//!      entries in descending count order (a sealed bucket's from its packed prefix, the
//!      newest bucket's selected at read time: a scan of its cells), k lookups per member
//!      seen, stopping once the n-th best is above the sum of the lists' next counts. Lists
//!      are made when that costs at most half the cheapest sum.
//!   4. sums (`select.rs` then picks the rows): one stored bucket in the read window (`LAST
//!      1`): a selection over that bucket's cells, O(cells); else the cheaper of a dense scan
//!      of the read window's buckets (O(cells + M): an accumulator per member slot, then two
//!      selection passes) and a base's totals corrected by scans of its fixes' buckets (O(M +
//!      their cells)); a hash-map sum only when members outnumber the entries summed about
//!      100 to 1 (a map insertion costs ~100 scanned cells).
//!
//!   Cost unit: a scanned cell (~1.4 ns); a lookup 40, an index step 8. The plan is decided
//!   before any is tried (`plan.rs`): from a floor of the n-th best count (a few likely
//!   leaders counted exactly), a walk or a merge is taken only when it is known to stop
//!   within an eighth of the cheapest sum (the cheaper of the two), else the read sums at
//!   once; so a read costs at most about 1.5x the cheapest sum (lists made for nothing), and
//!   usually a walk or a merge of a few dozen entries. A bucket older than the newest one (of 4,096 entries or
//!   more) gets a *packed copy* from the upkeep timer (`packed.rs`: its entries as id-sorted
//!   8-byte words and its 1,024 highest counts in order, built in resumable slices, dropped by
//!   a write into the bucket, rebuilt 1 s later): a sum scans it at half a unit an entry.
//!   Selection reads names only for the rows returned and for ties at the n-th count.
//!   Measured in-process (`timings::bench_reads`: the bench's `topn-reads` key, 24 buckets x
//!   50,000 events over 200,000 members, ~41,000 distinct a bucket, popularity reversing
//!   half-way; reads at the newest bucket with 3 and 9 buckets aged): `LAST 1` ~110 us (a
//!   selection), `LAST 2` 160-230 us (a merge), `LAST 6` 12-29 us, `LAST 12` 1-2.6 us (walks), the
//!   whole window 0.5-0.7 us (a walk of the clock index). On flat counts (weighted events
//!   spread evenly: `timings::bench_reads_weighted`) the planner sends reads straight to the
//!   sum (`LAST 12` ~0.5 ms, in 32-bit accumulators when the value bounds allow). A load packs every sealed bucket at once. Memory: 8 bytes an entry of a
//!   sealed bucket and 8 KB a sealed bucket (packed copies), 8 bytes a member (clock totals),
//!   ~36 bytes a member while the clock index exists.
//! - *Views* (`VIEWS k ...`, `views.rs`): per declared k, each member's total over the k newest
//!   buckets at the key's newest time, with its own order index, kept by writes and by the same
//!   upkeep budgets (a bucket leaving a view is subtracted from a snapshot of its ids). A read
//!   whose stored buckets are exactly a view's walks that index (plan 1); otherwise views play
//!   no part. About 44 bytes a member a view; a write pays one more index update a view.
//! - The encoding is a function of the content (members in byte order, a bucket's entries by
//!   member): servers with other table layouts (a replica) write the same bytes.
//! - Big arrays no longer needed (a hash table migrated away from) go to `storage::dispose`,
//!   which the server layer points at a background thread: freeing megabytes costs ~1 ms.
//!
//! Files: this one (the type, writes, sizes), `bucket.rs` (a bucket's table and the scans of
//! sums), `members.rs` (names, totals, order index, lookup), `retire.rs` (freeing, aging,
//! packing, the clock index: the upkeep), `views.rs` (views), `read.rs` (fixes, the cost
//! model, the walk and the sums), `plan.rs` (which plan a read takes), `merge.rs` (threshold merges), `encoding.rs` (persistence),
//! `packed.rs` (packed copies of sealed buckets), `defrag.rs` (active defrag); tests in
//! `tests.rs` (shared helpers, reads), `tables_tests.rs`, `rules_tests.rs`, `encoding_tests.rs`,
//! `model_tests.rs`, `plan_tests.rs`, `align_tests.rs`, `defrag_tests.rs`, `views_tests.rs`, `timings.rs`.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use crate::topn::parse::Pair;
use crate::topn::shape::{Overflow, Shape};
use bucket::Bucket;
use members::{Members, MIGRATE_STEP};
use packed::Packer;
use retire::Graveyard;

mod bucket;
mod defrag;
mod encoding;
mod members;
mod merge;
mod packed;
mod plan;
mod read;
mod retire;
mod views;

pub use read::{release_if_idle, READ_BUFFER_BYTES};

#[cfg(test)]
mod align_tests;
#[cfg(test)]
mod defrag_tests;
#[cfg(test)]
mod encoding_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod tables_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timings;
#[cfg(test)]
mod views_tests;

/// Entries of stale buckets retired (or graveyard items freed) per `incr` call by default.
pub const DEFAULT_RETIRE_BUDGET: usize = 64;

/// Buckets of at least this many entries get a packed copy once sealed.
pub const DEFAULT_PACK_MIN: usize = 4096;
/// After a write dropped a packed copy, packing waits this long (server time).
const REPACK_DELAY_MS: i64 = 1000;

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

const EMPTY: u32 = u32::MAX;

#[cfg(test)]
thread_local! {
    /// Test-only path counters: [plain walks, corrected walks, direct fallbacks, buries,
    /// retirement steps in a bucket caught mid-growth, writes to a frozen bucket's extra,
    /// writes to an aged bucket, buckets aged, sums over a packed copy, packings done,
    /// clock-index build steps, walks of the clock index, threshold merges, walks of a view].
    static PATHS: std::cell::Cell<[usize; 14]> = const { std::cell::Cell::new([0; 14]) };
}

#[inline]
fn note_path(_i: usize) {
    #[cfg(test)]
    PATHS.with(|p| {
        let mut v = p.get();
        v[_i] += 1;
        p.set(v);
    });
}
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A strong 64-bit mixer (MurmurHash3's finalizer).
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Maps a hash onto `[0, cap)` (Lemire's multiply-shift on the high 32 bits).
#[inline]
fn reduce(h: u64, cap: usize) -> usize {
    (((h >> 32) * cap as u64) >> 32) as usize
}

/// Exact top-N over a sliding window of time buckets. See the module docs.
pub struct Full {
    bucket_ms: i64,
    /// Bucket boundaries sit this far after the epoch's multiples of `bucket_ms`
    /// (0 <= align_ms < bucket_ms), e.g. so that daily buckets start at a local midnight.
    align_ms: i64,
    window: u32,
    /// Newest bucket ever written.
    clock: Option<i64>,
    m: Members,
    /// Stored buckets, ascending index; the front ones may be stale (being freed).
    buckets: VecDeque<Bucket>,
    /// Freeing cursor into the front bucket when it is stale (its table cells, then `extra`'s).
    retire_pos: usize,
    /// The running aggregate (`total` per member) covers every stored bucket above `agg_lo`
    /// and, of the bucket at `agg_lo`, the table cells from `agg_pos` on (all of them when
    /// `agg_pos` is 0). Stored buckets below are *aged*: still data, out of the aggregate.
    agg_lo: i64,
    agg_pos: usize,
    /// Oldest bucket of the window at the newest server time seen (`observe_time`).
    wall_lo: i64,
    graveyards: Vec<Graveyard>,
    retire_budget: usize,
    last_retire_work: usize,
    /// Buckets freed (or buried) since the last `take_retired_buckets`.
    retired_buckets: usize,
    /// Buckets taken out of the aggregate since the last `take_aged_buckets`.
    aged_buckets: usize,
    /// Entries of all stored buckets (`extra`s and freed cells of the front bucket included).
    total_entries: usize,
    /// Stored buckets that ever held a negative count.
    neg: BTreeSet<i64>,
    /// Buckets whose table growth is in progress, advanced a step by every write so that a
    /// bucket that stops taking writes does not keep two tables.
    growing: VecDeque<i64>,
    /// The packing of a sealed bucket in progress (upkeep's last job).
    packer: Option<Packer>,
    /// Buckets with fewer entries are not packed (a scan of them is short anyway).
    pack_min: usize,
    /// Packed copies dropped by writes (in `shape`: upkeep is owed again).
    packs_dropped: u64,
    /// The newest server time seen (`observe_time`).
    seen_ms: i64,
    /// No packing before this server time: a write just dropped a packed copy, and more late
    /// writes into that bucket may follow (each would throw a new packing away).
    pack_after_ms: i64,
    /// The declared views' running state (`views.rs`), ascending k.
    views: Vec<views::View>,
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
        bucket_index(self.bucket_ms, self.align_ms, at_ms)
    }

    /// The first millisecond of bucket `idx` (saturating).
    pub fn bucket_start(&self, idx: i64) -> i64 {
        idx.saturating_mul(self.bucket_ms)
            .saturating_add(self.align_ms)
    }

    /// Whether an event at `at_ms` is outside a window of `window` buckets (of `bucket_ms`,
    /// shifted by `align_ms`) that ends at `now_ms` (a late or backfilled event, at the
    /// server's time): for a key that does not exist yet, as for one that does.
    pub fn outside_window_at(
        bucket_ms: i64,
        align_ms: i64,
        window: u32,
        at_ms: i64,
        now_ms: i64,
    ) -> bool {
        bucket_index(bucket_ms, align_ms, at_ms)
            < bucket_index(bucket_ms, align_ms, now_ms).saturating_sub(window.max(1) as i64 - 1)
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
    fn live_lo(&self, clock: i64) -> i64 {
        clock.saturating_sub(self.window as i64 - 1)
    }

    #[inline]
    fn is_stale(&self, idx: i64) -> bool {
        match self.clock {
            Some(c) => idx < self.live_lo(c),
            None => false,
        }
    }

    /// Whether table cell `pos` of bucket `idx` counts in the aggregate.
    #[inline]
    fn cell_in_agg(&self, idx: i64, pos: usize) -> bool {
        idx > self.agg_lo || (idx == self.agg_lo && pos >= self.agg_pos)
    }

    /// A bucket whose cells are being walked (freed, or aged out of the aggregate): its table
    /// must not move a cell, so it takes no new cell and does not migrate.
    #[inline]
    fn is_frozen(&self, idx: i64) -> bool {
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
                let live = self
                    .span_of(new_lo, new_clock)
                    .map_or(0, |sp| self.count_id(id, &sp));
                let entry = match self.buckets.binary_search_by_key(&b, |bk| bk.idx) {
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

    /// Stores `new_entry` (the old one plus `by`) for the member in bucket `b`, creating what
    /// is missing, and keeps the aggregate in step.
    fn store(&mut self, member: &[u8], hash: u32, id: Option<u32>, b: i64, by: i64, entry: i64) {
        let id = match id {
            Some(id) => id,
            None => self.m.intern(member, hash),
        };
        let bi = match self.buckets.binary_search_by_key(&b, |bk| bk.idx) {
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
            + self
                .views
                .iter()
                .map(views::View::heap_bytes)
                .sum::<usize>()
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

/// The bucket holding `at_ms` when buckets of `bucket_ms` start `align_ms` after the epoch's
/// multiples of `bucket_ms`.
fn bucket_index(bucket_ms: i64, align_ms: i64, at_ms: i64) -> i64 {
    at_ms.saturating_sub(align_ms).div_euclid(bucket_ms.max(1))
}

// A key may be freed on a background thread.
const _: fn() = || {
    fn is<T: Send + Sync>() {}
    is::<Full>();
};
