//! TOPN's data structure: exact top-N over a sliding window of time buckets.
//! Pure Rust, std only, no FFI.
//!
//! Design:
//! - Time is cut into epoch-aligned buckets (`bucket = at_ms.div_euclid(bucket_ms)`). The key's
//!   *clock* is the newest bucket ever written (monotone); *live* buckets are
//!   `[clock - window + 1, clock]`. Writes older than that are ignored; reads only ever see
//!   live buckets.
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
//! - Reads are `&self` and exact in every state. The aggregate is turned into the read window's
//!   counts by *fixes*: subtract the buckets of the aggregate outside the read window (stale
//!   ones, newer than `AT`, older than `LAST k`), add the aged buckets inside it. No fix (a read
//!   at the server's time once upkeep caught up): a walk of the index, O(n log M). With fixes:
//!   the index walk computes each candidate's count with one lookup per fix, and stops once the
//!   next candidate's bound (`total` plus the most a fix can add, from per-bucket value bounds)
//!   cannot beat the n-th best. If that walk would cost more than an eighth of the cheapest sum,
//!   it sums instead (`select.rs` then picks the rows):
//!   - one stored bucket in the read window (`LAST 1`): a selection over that bucket's cells,
//!     no sum at all: O(cells);
//!   - else the cheaper of a dense scan of the read window's buckets (O(cells + M): an
//!     accumulator per member slot, then two selection passes over them) and the running totals
//!     corrected by scans of the fixes' buckets (O(M + their cells)); a hash-map sum only when
//!     members outnumber the entries summed about 100 to 1 (a map insertion costs ~100 scanned
//!     cells).
//!
//!   Cost unit: a scanned cell (~1.4 ns). A bucket older than the newest one (of 4,096 entries
//!   or more) gets a *packed copy* from the upkeep timer (`packed.rs`: its entries as id-sorted
//!   8-byte words, built in resumable slices, dropped by a write into the bucket, rebuilt 1 s
//!   later): a sum scans it at half a unit an entry. Selection reads names only for the rows
//!   returned and for ties at the n-th count. So a read costs at most 1.125x the cheapest sum,
//!   and usually an index walk: on 24 buckets x 45k of 200k members (flat counts, popularity
//!   reversing half-way; measured in-process) `LAST 1` ~0.07 ms, `LAST 2` ~0.3 ms, `LAST 6`
//!   ~0.45 ms, `LAST 12` a walk of ~5 us, a whole window whose aggregate aged 3 to 9 buckets
//!   0.5-0.65 ms. Memory: the packed copies add 8 bytes an entry of a sealed bucket.
//! - The encoding is a function of the content (members in byte order, a bucket's entries by
//!   member): servers with other table layouts (a replica) write the same bytes.
//! - Big arrays no longer needed (a hash table migrated away from) go to `storage::dispose`,
//!   which the server layer points at a background thread: freeing megabytes costs ~1 ms.

use std::cmp::Reverse;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use super::packed::{packable, Packed, Packer, Step};
use super::select::{clamp_i64, top_positive, top_rows, Rows};
use super::storage::{dispose, dispose_value, Cells, NameTable};

/// Entries of stale buckets retired (or graveyard items freed) per `incr` call by default.
pub const DEFAULT_RETIRE_BUDGET: usize = 64;

/// Buckets of at least this many entries get a packed copy once sealed.
pub const DEFAULT_PACK_MIN: usize = 4096;
/// After a write dropped a packed copy, packing waits this long (server time).
const REPACK_DELAY_MS: i64 = 1000;

/// Version byte that starts every encoding.
pub const ENCODING_VERSION: u8 = 1;

/// An increment would overflow a bucket count or a window total; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("increment or decrement would overflow")
    }
}

impl std::error::Error for Overflow {}

/// Why `TopN::decode` refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended early.
    Truncated,
    /// The first byte is not a known encoding version.
    UnknownVersion(u8),
    /// The input is structurally wrong (the text says how).
    Invalid(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated => f.write_str("truncated TOPN encoding"),
            DecodeError::UnknownVersion(v) => write!(f, "unknown TOPN encoding version {v}"),
            DecodeError::Invalid(why) => write!(f, "invalid TOPN encoding: {why}"),
        }
    }
}

impl std::error::Error for DecodeError {}

const EMPTY: u32 = u32::MAX;

#[cfg(test)]
thread_local! {
    /// Test-only path counters: [plain walks, corrected walks, direct fallbacks, buries,
    /// retirement steps in a bucket caught mid-growth, writes to a frozen bucket's extra,
    /// writes to an aged bucket, buckets aged, sums over a packed copy, packings done].
    static PATHS: std::cell::Cell<[usize; 10]> = const { std::cell::Cell::new([0; 10]) };
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

// ---------------------------------------------------------------------------------------------
// One bucket: open-addressing map u32 id -> i64 count, linear probing, no deletion.
// Capacity grows by 1.5x up to a load of 0.8, and growth is incremental (like Redis' rehash):
// the previous table is moved into the new one a few cells per write, lookups probe both.
// Each bucket hashes ids with its own seed, so the order in which one bucket hands out ids
// (retirement walks its cells) never clusters another.

/// An old-table cell whose entry has moved to the current table. Empty and moved cells hold
/// the count 0 (scans add them to a dummy slot without looking).
const MOVED: u32 = u32::MAX - 1;
/// Old-table cells migrated per write to the bucket.
const BUCKET_MIGRATE_STEP: usize = 8;

#[derive(Clone)]
struct Table {
    keys: Cells<u32>,
    vals: Cells<i64>,
}

impl Default for Table {
    fn default() -> Table {
        Table::with_cap(0)
    }
}

impl Table {
    fn with_cap(cap: usize) -> Table {
        Table {
            keys: Cells::new(cap, EMPTY),
            vals: Cells::new(cap, 0),
        }
    }

    #[inline]
    fn cap(&self) -> usize {
        self.keys.len()
    }

    #[inline]
    fn probe(&self, id: u32, seed: u64) -> Option<usize> {
        let cap = self.keys.len();
        if cap == 0 {
            return None;
        }
        let mut i = reduce(mix(id as u64 ^ seed), cap);
        loop {
            let k = self.keys.get(i);
            if k == id {
                return Some(i);
            }
            if k == EMPTY {
                return None;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    /// Puts `id` (absent) in a free cell; returns its position.
    #[inline]
    fn place(&mut self, id: u32, v: i64, seed: u64) -> usize {
        let cap = self.keys.len();
        let mut i = reduce(mix(id as u64 ^ seed), cap);
        while self.keys.get(i) != EMPTY {
            i += 1;
            if i == cap {
                i = 0;
            }
        }
        self.keys.set(i, id);
        self.vals.set(i, v);
        i
    }

    fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes() + self.vals.heap_bytes()
    }
}

/// A bucket's entries. Cells are numbered across both tables: `[0, old cap)` are the old
/// table's, then the current table's. Numbers stay valid until the next `entry` call.
///
/// A bucket whose cells are being walked (see `TopN::is_frozen`) takes no new cells: a write
/// of a member it does not hold then goes to `extra`, a bucket of its own that is never part of
/// the running aggregate. A member is in the table or in `extra`, never in both.
#[derive(Clone)]
struct Bucket {
    idx: i64,
    cur: Table,
    /// The previous table while growth is in progress (boxed: most buckets have none).
    old: Option<Box<OldTable>>,
    /// Entries in both tables (not counting `extra`).
    len: usize,
    /// Lower bound of every count this bucket holds, `extra` included (min over all values
    /// ever stored, and 0).
    min_val: i64,
    /// Upper bound of every count this bucket holds, `extra` included (max over all values
    /// ever stored, and 0).
    max_val: i64,
    seed: u64,
    /// Writes that arrived while the table was frozen (boxed: almost every bucket has none).
    extra: Option<Box<Bucket>>,
    /// The table's entries packed for sums (`packed.rs`), while no write changed them.
    packed: Option<Box<Packed>>,
    /// Bumped by every change of the table (a count, a new cell, a migration step): a packing
    /// in progress restarts when it moved.
    generation: u64,
}

#[derive(Clone)]
struct OldTable {
    t: Table,
    /// Cells below this have been moved.
    pos: usize,
}

impl Bucket {
    fn new(idx: i64) -> Bucket {
        Bucket {
            idx,
            cur: Table::default(),
            old: None,
            len: 0,
            min_val: 0,
            max_val: 0,
            seed: mix(idx as u64 ^ GOLDEN),
            extra: None,
            packed: None,
            generation: 0,
        }
    }

    #[inline]
    fn old_cap(&self) -> usize {
        self.old.as_ref().map_or(0, |o| o.t.cap())
    }

    /// Number of cells (both tables).
    #[inline]
    fn cells(&self) -> usize {
        self.old_cap() + self.cur.cap()
    }

    /// The id in a cell (`EMPTY` or `MOVED` for none) and its count.
    #[inline]
    fn cell(&self, c: usize) -> (u32, i64) {
        match &self.old {
            Some(o) if c < o.t.cap() => (o.t.keys.get(c), o.t.vals.get(c)),
            _ => {
                let c = c - self.old_cap();
                (self.cur.keys.get(c), self.cur.vals.get(c))
            }
        }
    }

    /// Sets the count of an occupied cell.
    #[inline]
    fn set_val(&mut self, c: usize, v: i64) {
        if let Some(p) = self.packed.take() {
            let bytes = p.heap_bytes();
            dispose_value(p, bytes);
        }
        self.generation += 1;
        let o = self.old_cap();
        match &mut self.old {
            Some(old) if c < o => old.t.vals.set(c, v),
            _ => self.cur.vals.set(c - o, v),
        }
    }

    #[inline]
    fn find(&self, id: u32) -> Option<usize> {
        if let Some(p) = self.cur.probe(id, self.seed) {
            return Some(self.old_cap() + p);
        }
        self.old.as_ref().and_then(|o| o.t.probe(id, self.seed))
    }

    /// The count of `id` in the table (0 if absent).
    #[inline]
    fn table_get(&self, id: u32) -> i64 {
        match self.find(id) {
            Some(c) => self.cell(c).1,
            None => 0,
        }
    }

    /// The count of `id` in `extra` (0 if absent or no `extra`).
    #[inline]
    fn extra_get(&self, id: u32) -> i64 {
        self.extra.as_ref().map_or(0, |x| x.table_get(id))
    }

    /// The count of `id` in this bucket.
    #[inline]
    fn get(&self, id: u32) -> i64 {
        self.table_get(id) + self.extra_get(id)
    }

    /// Entries in the table and in `extra`.
    #[inline]
    fn entries(&self) -> usize {
        self.len + self.extra.as_ref().map_or(0, |x| x.len)
    }

    /// Moves up to `cells` old-table cells into the current table.
    fn migrate(&mut self, cells: usize) {
        let Some(old) = &mut self.old else { return };
        self.generation += 1;
        let end = old.pos.saturating_add(cells).min(old.t.cap());
        for i in old.pos..end {
            let k = old.t.keys.get(i);
            if k != EMPTY && k != MOVED {
                self.cur.place(k, old.t.vals.get(i), self.seed);
                old.t.keys.set(i, MOVED);
                old.t.vals.set(i, 0);
            }
        }
        old.pos = end;
        if end == old.t.cap() {
            if let Some(old) = self.old.take() {
                let OldTable { t, .. } = *old;
                dispose(t.keys);
                dispose(t.vals);
            }
        }
    }

    /// Cell of `id`, inserting it with count 0 if absent; `true` if inserted.
    fn entry(&mut self, id: u32) -> (usize, bool) {
        self.generation += 1;
        self.migrate(BUCKET_MIGRATE_STEP);
        if (self.len + 1) * 5 > self.cur.cap() * 4 {
            // Growth by 1.5x leaves 0.4 x old capacity writes before the next one, and each
            // write migrates BUCKET_MIGRATE_STEP cells: the old table is normally gone by then.
            self.migrate(usize::MAX);
            let new_cap = (self.cur.cap() + self.cur.cap() / 2).max(8);
            let prev = std::mem::replace(&mut self.cur, Table::with_cap(new_cap));
            if prev.cap() > 0 {
                self.old = Some(Box::new(OldTable { t: prev, pos: 0 }));
            }
            self.migrate(BUCKET_MIGRATE_STEP);
        }
        if let Some(p) = self.cur.probe(id, self.seed) {
            return (self.old_cap() + p, false);
        }
        if let Some(old) = &mut self.old {
            if let Some(p) = old.t.probe(id, self.seed) {
                // Move it now, so the returned cell is in the current table.
                let v = old.t.vals.get(p);
                old.t.keys.set(p, MOVED);
                old.t.vals.set(p, 0);
                let q = self.cur.place(id, v, self.seed);
                return (self.old_cap() + q, false);
            }
        }
        let q = self.cur.place(id, 0, self.seed);
        self.len += 1;
        (self.old_cap() + q, true)
    }

    /// Widens the value bounds for a count stored in this bucket (or its `extra`); true if this
    /// made the bucket hold a negative count for the first time.
    fn note(&mut self, v: i64) -> bool {
        let first_negative = v < 0 && self.min_val >= 0;
        self.min_val = self.min_val.min(v);
        self.max_val = self.max_val.max(v);
        first_negative
    }

    /// Stores a count in a table cell; true if this made the bucket hold a negative count for
    /// the first time.
    fn set(&mut self, c: usize, v: i64) -> bool {
        self.set_val(c, v);
        self.note(v)
    }

    /// The table's entries.
    fn table_iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        (0..self.cells())
            .map(|c| self.cell(c))
            .filter(|(k, _)| *k != EMPTY && *k != MOVED)
    }

    /// Every entry, table then `extra` (which has no `extra` of its own).
    fn iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.table_iter()
            .chain(self.extra.iter().flat_map(|x| x.table_iter()))
    }

    /// Adds every entry (table and `extra`) into `acc[id]`; see `table_scan`.
    fn add_into(&self, acc: &mut [i64]) -> bool {
        self.table_into(false, acc) | self.extra_into(false, acc)
    }

    /// Adds (subtracts with `negate`) every table entry into `acc[id]`, from the packed copy
    /// when there is one; see `table_scan`.
    fn table_into(&self, negate: bool, acc: &mut [i64]) -> bool {
        match &self.packed {
            Some(p) => {
                note_path(8);
                p.scan_into(negate, acc)
            }
            None => self.scan_cells(0, usize::MAX, negate, acc),
        }
    }

    /// Adds (subtracts with `negate`) the table cells numbered `[lo, hi)` into `acc[id]`;
    /// see `table_scan`.
    fn scan_cells(&self, lo: usize, hi: usize, negate: bool, acc: &mut [i64]) -> bool {
        let oc = self.old_cap();
        let mut overflow = false;
        if let Some(o) = &self.old {
            overflow |= table_scan(&o.t, lo.min(oc), hi.min(oc), negate, acc);
        }
        overflow
            | table_scan(
                &self.cur,
                lo.saturating_sub(oc),
                hi.saturating_sub(oc),
                negate,
                acc,
            )
    }

    /// Adds (subtracts with `negate`) the entries of `extra` into `acc[id]`.
    fn extra_into(&self, negate: bool, acc: &mut [i64]) -> bool {
        self.extra
            .as_ref()
            .is_some_and(|x| x.scan_cells(0, usize::MAX, negate, acc))
    }

    /// Calls `f(id, count)` for every entry, table then `extra`.
    fn for_each(&self, f: &mut impl FnMut(u32, i64)) {
        if let Some(o) = &self.old {
            table_for_each(&o.t, f);
        }
        table_for_each(&self.cur, f);
        if let Some(x) = &self.extra {
            if let Some(o) = &x.old {
                table_for_each(&o.t, f);
            }
            table_for_each(&x.cur, f);
        }
    }

    /// Cell `pos` of the table (`[0, cells)`) or of `extra` (from `cells` on): id and count.
    fn any_cell(&self, pos: usize) -> (u32, i64) {
        let cells = self.cells();
        match &self.extra {
            Some(x) if pos >= cells => x.cell(pos - cells),
            _ => self.cell(pos),
        }
    }

    /// `(count, cell)` of every cell of the table and of `extra` (numbered as in `any_cell`);
    /// empty and moved cells count 0. Walks only the written runs of the counts.
    fn cell_counts(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
        let runs = table_counts;
        let old = self.old.as_ref().map(|o| runs(&o.t, 0));
        let cur = runs(&self.cur, self.old_cap());
        let extra = self.extra.as_ref().map(|x| {
            let base = self.cells();
            let xo = x.old.as_ref().map(|o| runs(&o.t, base));
            xo.into_iter()
                .flatten()
                .chain(runs(&x.cur, base + x.old_cap()))
        });
        old.into_iter()
            .flatten()
            .chain(cur)
            .chain(extra.into_iter().flatten())
    }

    /// The model's cost of a selection over every cell (table and `extra`).
    fn scan_cost(&self) -> usize {
        self.cells() + self.extra.as_ref().map_or(0, |x| x.cells())
    }

    /// The model's cost of summing every entry (table and `extra`): a packed entry costs half
    /// a scanned cell.
    fn sum_cost(&self) -> usize {
        match &self.packed {
            Some(p) => p.len() / 2 + self.extra.as_ref().map_or(0, |x| x.cells()),
            None => self.scan_cost(),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.packed.as_ref().map_or(0, |p| p.heap_bytes())
            + self.cur.heap_bytes()
            + self
                .old
                .as_ref()
                .map_or(0, |o| o.t.heap_bytes() + std::mem::size_of::<OldTable>())
            + self
                .extra
                .as_ref()
                .map_or(0, |x| x.heap_bytes() + std::mem::size_of::<Bucket>())
    }

    /// Work units charged for freeing this bucket's storage (large blocks cost page work).
    fn drop_cost(&self) -> usize {
        1 + self.cells() / 1024 + self.extra.as_ref().map_or(0, |x| x.drop_cost())
    }
}

/// Adds (or, with `negate`, subtracts) the counts of table cells `[lo, hi)` into `acc[id]`
/// (wrapping); true if an addition overflowed. `acc` has one slot more than any id: empty and
/// moved cells add 0 there. Branch-free on purpose: whether a cell is occupied is a coin toss at
/// the tables' load, and a branch on it costs more than the whole scan.
#[inline]
fn table_scan(t: &Table, lo: usize, hi: usize, negate: bool, acc: &mut [i64]) -> bool {
    let hi = hi.min(t.cap());
    if lo >= hi {
        return false;
    }
    let dummy = (acc.len() - 1) as u32;
    let mut overflow = false;
    let mut vals = t.vals.init_runs().peekable();
    for (run, keys) in t.keys.init_runs() {
        let (a, b) = (lo.max(run), hi.min(run + keys.len()));
        if a >= b {
            continue;
        }
        while vals.peek().is_some_and(|(vlo, _)| *vlo < run) {
            vals.next();
        }
        let Some(v) = vals.peek().filter(|(vlo, _)| *vlo == run).map(|(_, v)| *v) else {
            continue; // no value written in this run: every count in it is 0
        };
        let (keys, v) = (&keys[a - run..b - run], &v[a - run..b - run]);
        overflow |= if negate {
            apply_run::<true>(keys, v, acc, dummy)
        } else {
            apply_run::<false>(keys, v, acc, dummy)
        };
    }
    overflow
}

/// `table_scan`'s loop over one run, adding or (`NEGATE`) subtracting; each
/// instance kept apart so its state stays in registers.
#[inline(never)]
fn apply_run<const NEGATE: bool>(keys: &[u32], vals: &[i64], acc: &mut [i64], dummy: u32) -> bool {
    let mut overflow = false;
    for (k, x) in keys.iter().zip(vals) {
        // Empty and moved cells hold 0: only where it goes depends on the key.
        let i = if *k < MOVED { *k } else { dummy };
        let a = &mut acc[i as usize];
        let (v, o) = if NEGATE {
            a.overflowing_sub(*x)
        } else {
            a.overflowing_add(*x)
        };
        *a = v;
        overflow |= o;
    }
    overflow
}

/// `(count, base + cell)` of every cell of a table whose count was written (the others hold 0).
fn table_counts(t: &Table, base: usize) -> impl Iterator<Item = (i64, u32)> + '_ {
    t.vals.init_runs().flat_map(move |(lo, vals)| {
        vals.iter()
            .enumerate()
            .map(move |(i, v)| (*v, (base + lo + i) as u32))
    })
}

/// Calls `f(id, count)` for the occupied cells of a table, walking initialized runs.
#[inline]
fn table_for_each(t: &Table, f: &mut impl FnMut(u32, i64)) {
    let mut vals = t.vals.init_runs().peekable();
    for (lo, keys) in t.keys.init_runs() {
        // Values are written only into occupied cells, whose key run is initialized too; a value
        // run missing here would hold only zeros.
        while vals.peek().is_some_and(|(vlo, _)| *vlo < lo) {
            vals.next();
        }
        let vrun = match vals.peek() {
            Some((vlo, v)) if *vlo == lo => Some(*v),
            _ => None,
        };
        match vrun {
            Some(v) => {
                for (k, x) in keys.iter().zip(v) {
                    if *k != EMPTY && *k != MOVED {
                        f(*k, *x);
                    }
                }
            }
            None => {
                for k in keys {
                    if *k != EMPTY && *k != MOVED {
                        f(*k, 0);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Members: interned names, per-member aggregate, order index, lookup table.

/// A member's data besides its name and total (kept in its `NameTable` slot).
#[derive(Clone, Copy)]
struct Meta {
    /// Number of stored buckets holding an entry for this member.
    refs: u32,
    hash: u32,
}

/// Lookup cells: `hash << 32 | id`; an empty cell has id `EMPTY`, a deleted one (only in the
/// table being migrated away from) has id `TOMB`.
const EMPTY_CELL: u64 = u64::MAX;
const TOMB: u32 = u32::MAX - 1;
const TOMB_CELL: u64 = TOMB as u64;
/// Lookup cells migrated from the old table per write.
const MIGRATE_STEP: usize = 16;

#[inline]
fn cell_id(c: u64) -> u32 {
    c as u32
}

#[inline]
fn cell_hash(c: u64) -> u32 {
    (c >> 32) as u32
}

#[inline]
fn cell_home(hash: u32, cap: usize) -> usize {
    ((hash as u64 * cap as u64) >> 32) as usize
}

/// The member table.
struct Members {
    /// Slots (`id -> name, total, refs, hash`) and the order index.
    names: NameTable<Meta>,
    nslots: usize,
    free_ids: Vec<u32>,
    live: usize,
    name_bytes: usize,
    /// Open-addressing lookup by name hash (linear probing, backward-shift deletion).
    table: Cells<u64>,
    /// The previous table while it is migrated into `table` a few cells per write.
    old: Cells<u64>,
    old_pos: usize,
    hasher: RandomState,
    /// Exact totals that do not fit an i64 (the slot and the index hold the clamped value).
    big: IdMap<i128>,
}

impl Members {
    fn new() -> Members {
        Members {
            names: NameTable::new(),
            nslots: 0,
            free_ids: Vec::new(),
            live: 0,
            name_bytes: 0,
            table: Cells::new(0, EMPTY_CELL),
            old: Cells::new(0, EMPTY_CELL),
            old_pos: 0,
            hasher: RandomState::new(),
            big: IdMap::default(),
        }
    }

    #[inline]
    fn meta(&self, id: u32) -> &Meta {
        &self.names.slot(id).data
    }

    #[inline]
    fn meta_mut(&mut self, id: u32) -> &mut Meta {
        self.names.data_mut(id)
    }

    #[inline]
    fn name(&self, id: u32) -> &[u8] {
        self.names.name(id)
    }

    /// The member's running total, exact.
    #[inline]
    fn total(&self, id: u32) -> i128 {
        let t = self.names.slot(id).total();
        if (t == i64::MAX || t == i64::MIN) && !self.big.is_empty() {
            if let Some(&b) = self.big.get(&id) {
                return b;
            }
        }
        t as i128
    }

    #[inline]
    fn hash_name(&self, name: &[u8]) -> u32 {
        let mut h = self.hasher.build_hasher();
        h.write(name);
        (h.finish() >> 32) as u32
    }

    fn probe(&self, table: &Cells<u64>, name: &[u8], hash: u32) -> Option<u32> {
        let cap = table.len();
        if cap == 0 {
            return None;
        }
        let mut i = cell_home(hash, cap);
        loop {
            let c = table.get(i);
            if c == EMPTY_CELL {
                return None;
            }
            let id = cell_id(c);
            if cell_hash(c) == hash && id != TOMB && self.name(id) == name {
                return Some(id);
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    fn find(&self, name: &[u8], hash: u32) -> Option<u32> {
        self.probe(&self.table, name, hash)
            .or_else(|| self.probe(&self.old, name, hash))
    }

    fn place(table: &mut Cells<u64>, cell: u64) {
        let cap = table.len();
        let mut i = cell_home(cell_hash(cell), cap);
        while table.get(i) != EMPTY_CELL {
            i += 1;
            if i == cap {
                i = 0;
            }
        }
        table.set(i, cell);
    }

    /// Moves up to `cells` cells of the old table into the current one.
    fn migrate(&mut self, cells: usize) {
        if self.old.len() == 0 {
            return;
        }
        let end = self.old_pos.saturating_add(cells).min(self.old.len());
        for i in self.old_pos..end {
            let c = self.old.get(i);
            if c != EMPTY_CELL && cell_id(c) != TOMB {
                Self::place(&mut self.table, c);
                // A tombstone, not an empty cell: later cells of a probe run stay reachable.
                self.old.set(i, TOMB_CELL);
            }
        }
        self.old_pos = end;
        if end == self.old.len() {
            dispose(std::mem::replace(&mut self.old, Cells::new(0, EMPTY_CELL)));
            self.old_pos = 0;
        }
    }

    fn table_insert(&mut self, id: u32, hash: u32) {
        self.migrate(MIGRATE_STEP);
        if (self.live + 1) * 5 > self.table.len() * 4 {
            // Growth by 1.5x leaves 0.4 x old capacity inserts before the next one, and each
            // insert migrates MIGRATE_STEP cells, so the old table is normally empty here.
            self.migrate(usize::MAX);
            let new_cap = (self.table.len() + self.table.len() / 2).max(8);
            self.old = std::mem::replace(&mut self.table, Cells::new(new_cap, EMPTY_CELL));
            self.old_pos = 0;
            self.migrate(MIGRATE_STEP);
        }
        Self::place(&mut self.table, (hash as u64) << 32 | id as u64);
    }

    fn table_remove(&mut self, id: u32, hash: u32) {
        let cap = self.table.len();
        if cap > 0 {
            let mut i = cell_home(hash, cap);
            loop {
                let c = self.table.get(i);
                if c == EMPTY_CELL {
                    break;
                }
                if cell_id(c) == id {
                    // Backward-shift deletion.
                    let mut j = i;
                    loop {
                        j += 1;
                        if j == cap {
                            j = 0;
                        }
                        let other = self.table.get(j);
                        if other == EMPTY_CELL {
                            break;
                        }
                        let k = cell_home(cell_hash(other), cap);
                        let stays = if i <= j {
                            i < k && k <= j
                        } else {
                            i < k || k <= j
                        };
                        if !stays {
                            self.table.set(i, other);
                            i = j;
                        }
                    }
                    self.table.set(i, EMPTY_CELL);
                    return;
                }
                i += 1;
                if i == cap {
                    i = 0;
                }
            }
        }
        // Not in the current table: it is in the old one, where deletions leave a tombstone.
        let cap = self.old.len();
        let mut i = cell_home(hash, cap);
        loop {
            let c = self.old.get(i);
            assert!(c != EMPTY_CELL, "member missing from the lookup table");
            if cell_id(c) == id {
                self.old.set(i, TOMB_CELL);
                return;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    /// Makes room for `n` members in the lookup table (on an empty table only).
    fn reserve(&mut self, n: usize) {
        if self.live == 0 && self.old.len() == 0 {
            self.table = Cells::new((n * 5 / 4 + 8).max(self.table.len()), EMPTY_CELL);
        }
    }

    /// Creates a member with total 0 and no refs, in the lookup table but not in the index.
    fn intern_raw(&mut self, name: &[u8], hash: u32) -> u32 {
        let meta = Meta { refs: 0, hash };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.names.refill(id, name, meta);
                id
            }
            None => {
                assert!(self.nslots < TOMB as usize, "too many TOPN members");
                let id = self.names.push(name, meta);
                debug_assert_eq!(id as usize, self.nslots);
                self.nslots += 1;
                id
            }
        };
        self.table_insert(id, hash);
        self.live += 1;
        self.name_bytes += name.len();
        id
    }

    fn intern(&mut self, name: &[u8], hash: u32) -> u32 {
        let id = self.intern_raw(name, hash);
        self.names.index_insert(id);
        id
    }

    fn set_total(&mut self, id: u32, total: i128) {
        let clamped = clamp_i64(total);
        if clamped as i128 != total {
            self.big.insert(id, total);
        } else if !self.big.is_empty() {
            self.big.remove(&id);
        }
        self.names.set_total(id, clamped);
    }

    /// Drops one ref of `id`; frees the member when none is left.
    fn release(&mut self, id: u32) {
        let s = self.meta_mut(id);
        s.refs -= 1;
        if s.refs == 0 {
            self.free(id);
        }
    }

    fn free(&mut self, id: u32) {
        if !self.big.is_empty() {
            self.big.remove(&id);
        }
        let hash = self.meta(id).hash;
        self.table_remove(id, hash);
        self.name_bytes -= self.names.free(id);
        self.meta_mut(id).refs = 0;
        self.free_ids.push(id);
        self.live -= 1;
    }

    /// Live member ids (ascending).
    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.names.ids()
    }

    fn heap_bytes(&self) -> usize {
        self.names.slot_heap_bytes()
            + self.free_ids.capacity() * 4
            + self.live * NAME_OVERHEAD
            + self.name_bytes
            + self.table.heap_bytes()
            + self.old.heap_bytes()
            + self.names.index_len() * INDEX_BYTES_PER_KEY
            + self.big.capacity() * 32
    }

    fn effort(&self) -> usize {
        self.live + self.names.index_len() / 8 + self.names.chunk_count() + 3
    }

    /// Frees up to `budget` items (graveyard use); returns the work done.
    fn free_step(&mut self, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            done += 1;
            if self.names.index_pop_last() {
                continue;
            }
            if !self.names.pop_step() {
                self.live = 0;
                self.name_bytes = 0;
                self.table = Cells::new(0, EMPTY_CELL);
                self.old = Cells::new(0, EMPTY_CELL);
                self.free_ids = Vec::new();
                self.big = IdMap::default();
                self.names.release();
                break;
            }
        }
        done
    }

    fn is_freed(&self) -> bool {
        self.names.is_freed()
            && self.table.len() == 0
            && self.old.len() == 0
            && self.free_ids.capacity() == 0
    }
}

impl Clone for Members {
    /// A deep copy: names are copied, the index is rebuilt over the copies.
    fn clone(&self) -> Members {
        Members {
            names: self.names.clone(),
            nslots: self.nslots,
            free_ids: self.free_ids.clone(),
            live: self.live,
            name_bytes: self.name_bytes,
            table: self.table.clone(),
            old: self.old.clone(),
            old_pos: self.old_pos,
            hasher: self.hasher.clone(),
            big: self.big.clone(),
        }
    }
}

/// Everything of a state the clock has entirely passed, freed piecewise by later writes.
struct Graveyard {
    members: Members,
    buckets: VecDeque<Bucket>,
}

impl Graveyard {
    fn is_empty(&self) -> bool {
        self.buckets.is_empty() && self.members.is_freed()
    }

    /// Frees up to `budget` items; returns the work done.
    fn step(&mut self, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            if let Some(b) = self.buckets.front() {
                let cost = b.drop_cost();
                if done > 0 && done + cost > budget {
                    break;
                }
                self.buckets.pop_front();
                done = (done + cost).min(budget);
            } else {
                done += self.members.free_step(budget - done);
                break;
            }
        }
        if self.buckets.is_empty() && self.buckets.capacity() > 0 {
            self.buckets = VecDeque::new();
        }
        done
    }

    fn heap_bytes(&self) -> usize {
        self.members.heap_bytes()
            + self
                .buckets
                .iter()
                .map(|b| b.heap_bytes() + std::mem::size_of::<Bucket>())
                .sum::<usize>()
    }

    fn effort(&self) -> usize {
        self.members.effort() + self.buckets.len() * 2
    }
}

/// Estimated heap bytes per order-index entry (16-byte key plus its share of B-tree nodes).
const INDEX_BYTES_PER_KEY: usize = 36;
/// Estimated heap bytes per interned name besides its bytes (8-byte header, allocator rounding).
const NAME_OVERHEAD: usize = 8 + 8;

#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = mix(self.0 ^ *b as u64);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = mix(v as u64 ^ GOLDEN);
    }
}

type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

// ---------------------------------------------------------------------------------------------

/// Exact top-N over a sliding window of time buckets. See the module docs.
pub struct TopN {
    bucket_ms: i64,
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
}

impl Clone for TopN {
    /// Copies the data; the graveyard (already unreachable state) is not copied.
    fn clone(&self) -> TopN {
        TopN {
            bucket_ms: self.bucket_ms,
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
        }
    }
}

impl fmt::Debug for TopN {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TopN")
            .field("bucket_ms", &self.bucket_ms)
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

/// Stored buckets `[i0, i1)` (deque positions) of the read window `[lo, hi]` (bucket indexes).
#[derive(Clone, Copy, Debug)]
struct Span {
    lo: i64,
    hi: i64,
    i0: usize,
    i1: usize,
}

/// How a read corrects a member's running total for one bucket.
#[derive(Clone, Copy)]
enum Fix<'a> {
    /// A bucket outside the read window: subtract its part inside the aggregate (its table
    /// cells from the given one on).
    Sub(&'a Bucket, usize),
    /// An aged bucket inside the read window: add its part outside the aggregate (its table
    /// cells below the given one, all when `None`, and its `extra`).
    Add(&'a Bucket, Option<usize>),
}

impl Fix<'_> {
    #[inline]
    fn value(self, id: u32) -> i128 {
        match self {
            Fix::Sub(b, from) => match b.find(id) {
                Some(p) if p >= from => -(b.cell(p).1 as i128),
                _ => 0,
            },
            Fix::Add(b, below) => {
                let table = match b.find(id) {
                    Some(p) if below.is_none_or(|q| p < q) => b.cell(p).1,
                    _ => 0,
                };
                table as i128 + b.extra_get(id) as i128
            }
        }
    }

    /// The model's cost of a scan of this correction.
    fn cost(self) -> usize {
        match self {
            Fix::Sub(b, 0) | Fix::Add(b, None) => b.sum_cost(),
            Fix::Sub(b, _) | Fix::Add(b, _) => b.scan_cost(),
        }
    }

    /// Applies this correction to every member's running total in `acc` (by id), scanning the
    /// bucket; true on overflow.
    fn scan_into(self, acc: &mut [i64]) -> bool {
        match self {
            Fix::Sub(b, 0) => b.table_into(true, acc),
            Fix::Sub(b, from) => b.scan_cells(from, usize::MAX, true, acc),
            Fix::Add(b, None) => b.add_into(acc),
            Fix::Add(b, Some(below)) => {
                b.scan_cells(0, below, false, acc) | b.extra_into(false, acc)
            }
        }
    }

    /// The most this correction can add to a member's count.
    fn slack(self) -> i128 {
        match self {
            Fix::Sub(b, _) => -(b.min_val.min(0) as i128),
            Fix::Add(b, _) => b.max_val.max(0) as i128,
        }
    }
}

/// Cost model of reads, in units of one entry of a sum's branch-free scan (a few ns). A step
/// of the index walk (one key, its name nearby) costs this many.
const INDEX_STEP_COST: usize = 8;
/// A lookup of a member in a bucket table (a random probe, usually a cache miss).
const LOOKUP_COST: usize = 24;
/// A member slot in a sum: its accumulator zeroed, then two selection passes over it.
const SLOT_COST: usize = 1;
/// An entry summed into a hash map (sums over few of many members): a random probe and an
/// insertion, about 100x a scanned cell (measured: 42k entries in 5-7 ms).
const MAP_ENTRY_COST: usize = 100;
/// A corrected walk may spend up to 1/`WALK_SHARE` of the cost of the cheaper sum before it
/// gives up and sums (so a read costs at most 1 + 1/WALK_SHARE times that sum, and usually
/// far less).
const WALK_SHARE: usize = 8;

impl TopN {
    /// An empty structure. `bucket_ms` must be >= 1 and `window` >= 1 (smaller values are
    /// raised to 1; the caller validates user input).
    pub fn new(bucket_ms: i64, window: u32) -> TopN {
        TopN {
            bucket_ms: bucket_ms.max(1),
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
        }
    }

    pub fn bucket_ms(&self) -> i64 {
        self.bucket_ms
    }

    pub fn window(&self) -> u32 {
        self.window
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// Newest bucket index ever written (`None` before the first write).
    pub fn clock(&self) -> Option<i64> {
        self.clock
    }

    /// The bucket index holding `at_ms`.
    pub fn bucket_of(&self, at_ms: i64) -> i64 {
        at_ms.div_euclid(self.bucket_ms)
    }

    /// Whether an event at `at_ms` is outside the window of `window` buckets of `bucket_ms`
    /// that ends at `now_ms` (a late or backfilled event, at the server's time).
    pub fn outside_window_at(bucket_ms: i64, window: u32, at_ms: i64, now_ms: i64) -> bool {
        let bm = bucket_ms.max(1);
        at_ms.div_euclid(bm)
            < now_ms
                .div_euclid(bm)
                .saturating_sub(window.max(1) as i64 - 1)
    }

    /// Whether an event at `at_ms` is older than the key's own window (the window ending at
    /// its newest bucket written): `incr` ignores it.
    pub fn is_older_than_window(&self, at_ms: i64) -> bool {
        self.clock
            .is_some_and(|c| self.bucket_of(at_ms) < self.live_lo(c))
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// Retirement work allowed per `incr` (entries of stale buckets, or graveyard items). >= 1.
    pub fn set_retire_budget(&mut self, budget: usize) {
        self.retire_budget = budget.max(1);
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// Buckets of at least this many entries (>= 1) get a packed copy once sealed.
    pub fn set_pack_min(&mut self, entries: usize) {
        self.pack_min = entries.max(1);
    }

    #[cfg_attr(not(test), allow(dead_code))]
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

    #[cfg_attr(not(test), allow(dead_code))]
    /// True when no stale bucket, graveyard or aging is waiting.
    pub fn is_settled(&self) -> bool {
        self.graveyards.is_empty()
            && self.buckets.front().is_none_or(|b| !self.is_stale(b.idx))
            && !self.aging_pending()
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

    /// What upkeep's due time depends on besides retirement progress: the clock, the
    /// stored buckets and the packed copies writes dropped. (A write that changes neither, and a window that did not move, leaves
    /// the due time where it was or later.)
    pub fn shape(&self) -> (Option<i64>, usize, u64) {
        (self.clock, self.buckets.len(), self.packs_dropped)
    }

    /// Does up to `budget` units of upkeep (freeing stale buckets and graveyards, aging buckets
    /// out of the aggregate, then packing sealed buckets); returns the work done (`< budget`
    /// when nothing is left to do).
    pub fn upkeep(&mut self, budget: usize) -> usize {
        let budget = budget.max(1);
        let done = self.retire(budget);
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
        {
            return Some(0);
        }
        let packing = self.packing_owed().then(|| self.pack_after_ms.max(0));
        let i = self.buckets.partition_point(|b| b.idx < self.agg_lo);
        let aging = self.buckets.get(i).map(|b| {
            b.idx
                .saturating_add(self.window as i64)
                .saturating_mul(self.bucket_ms)
        });
        match (packing, aging) {
            (Some(p), Some(a)) => Some(p.min(a)),
            (p, a) => p.or(a),
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

    /// Where the aggregate should start: no stale bucket, and nothing that left the window at
    /// the server's time.
    #[inline]
    fn agg_target(&self) -> i64 {
        match self.clock {
            Some(c) => self.live_lo(c).max(self.wall_lo),
            None => self.wall_lo,
        }
    }

    /// Whether a stored (non-stale) bucket is waiting to be aged out of the aggregate.
    fn aging_pending(&self) -> bool {
        let target = self.agg_target();
        if self.agg_lo >= target {
            return false;
        }
        let i = self.buckets.partition_point(|b| b.idx < self.agg_lo);
        self.buckets.get(i).is_some_and(|b| b.idx < target)
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

    // ----- retirement -----------------------------------------------------------------------

    /// Moves the whole state (every stored bucket is stale) to a graveyard.
    fn bury(&mut self) {
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
        if !g.is_empty() {
            self.graveyards.push(g);
        }
    }

    /// Does up to `budget` units of retirement work; returns the work done. In order:
    /// graveyards, stale buckets (freed: their entries released, their part of the aggregate
    /// subtracted), then aging (buckets that left the window at the server's time are
    /// subtracted from the aggregate, their data kept for reads at earlier times).
    fn retire(&mut self, budget: usize) -> usize {
        let mut done = 0;
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
            let Some(front) = self.buckets.front() else {
                break;
            };
            if self.is_stale(front.idx) {
                // Free the stale front bucket, a cell at a time (it takes no writes, so its
                // cells stay where they are).
                let idx = front.idx;
                let cells = front.cells();
                let all = cells + front.extra.as_ref().map_or(0, |x| x.cells());
                if self.retire_pos >= all {
                    let cost = front.drop_cost();
                    if done > 0 && done + cost > budget {
                        break;
                    }
                    self.total_entries -= front.entries();
                    self.neg.remove(&idx);
                    self.buckets.pop_front();
                    self.retire_pos = 0;
                    self.retired_buckets += 1;
                    if idx >= self.agg_lo {
                        self.agg_lo = idx + 1;
                        self.agg_pos = 0;
                    }
                    done = (done + cost).min(budget);
                    continue;
                }
                let pos = self.retire_pos;
                self.retire_pos += 1;
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
                    empty_visits += 1;
                    if empty_visits & 7 == 0 {
                        done += 1;
                    }
                    continue;
                }
                // Keep the key so lookups still probe past it; the count is now released.
                let b0 = &mut self.buckets[0];
                if pos < cells {
                    b0.set_val(pos, 0);
                } else if let Some(x) = &mut b0.extra {
                    x.set_val(pos - cells, 0);
                }
                done += 1;
                if self.m.meta(id).refs == 1 {
                    // Its last entry: the total is exactly this entry's part; free without
                    // repositioning.
                    self.m.free(id);
                } else {
                    if in_agg && c != 0 {
                        let t = self.m.total(id) - c as i128;
                        self.m.set_total(id, t);
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
                let pos = self.agg_pos;
                // From the first cell on, the bucket is frozen (see `is_frozen`).
                self.agg_pos += 1;
                let (id, c) = self.buckets[i].cell(pos);
                if id == EMPTY || id == MOVED {
                    empty_visits += 1;
                    if empty_visits & 7 == 0 {
                        done += 1;
                    }
                    continue;
                }
                done += 1;
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

    // ----- packing ---------------------------------------------------------------------------

    /// Whether bucket `b` should get a packed copy: sealed (older than the clock, not stale),
    /// big enough, counts that fit an i32, none yet, and a growth in progress that upkeep may
    /// finish (not while its cells are being walked).
    fn wants_packing(&self, b: &Bucket) -> bool {
        b.packed.is_none()
            && b.len >= self.pack_min
            && self.clock.is_some_and(|c| b.idx < c)
            && !self.is_stale(b.idx)
            && packable(b.min_val, b.max_val)
            && (b.old.is_none() || !self.is_frozen(b.idx))
    }

    /// Whether a bucket wants packing (maybe not yet: see `pack_after_ms`).
    fn packing_owed(&self) -> bool {
        self.buckets.iter().any(|b| self.wants_packing(b))
    }

    /// Whether upkeep would pack now.
    fn packing_pending(&self) -> bool {
        self.seen_ms >= self.pack_after_ms && self.packing_owed()
    }

    /// Does up to about `budget` units of packing (elements collected or sorted; finishing a
    /// bucket's growth first); returns the work done, which may pass `budget` by a radix
    /// pass's prefix sum (33 units).
    fn pack(&mut self, budget: usize) -> usize {
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
                        // Finish the growth first (a migrated cell costs about 4 collected).
                        let cells = (budget - done).div_ceil(4);
                        b.migrate(cells);
                        done += cells * 4;
                        continue;
                    }
                    Packer::new(b.idx, b.generation, self.m.nslots, b.len)
                }
            };
            done += 1;
            let current = self
                .buckets
                .binary_search_by_key(&packer.idx, |b| b.idx)
                .ok()
                .filter(|&i| {
                    let b = &self.buckets[i];
                    b.generation == packer.generation && self.wants_packing(b)
                });
            let Some(i) = current else {
                // The bucket is gone or was written since: start again.
                let bytes = packer.heap_bytes();
                dispose_value(packer, bytes);
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
    fn advance_growth(&mut self) {
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

    // ----- writes ---------------------------------------------------------------------------

    /// Applies an increment at time `at_ms`. Returns the member's count over the window ending
    /// at the key's clock (newest bucket ever written, which this call may advance). An event
    /// older than the window changes nothing and returns the current window count. A zero `by`
    /// stores nothing but still advances the clock. On overflow nothing changes.
    pub fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<i64, Overflow> {
        self.last_retire_work = 0;
        let b = self.bucket_of(at_ms);
        let (new_clock, advancing) = match self.clock {
            None => (b, true),
            Some(c) => {
                if b < self.live_lo(c) {
                    return Ok(self.count_at_clock(member));
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
        let new_live = live + by as i128;
        if new_live > i64::MAX as i128 || new_live < i64::MIN as i128 {
            return Err(Overflow);
        }
        let new_entry = entry.checked_add(by).ok_or(Overflow)?;

        // Commit.
        if advancing {
            if all_stale {
                self.bury();
            }
            self.clock = Some(new_clock);
        }
        if by != 0 {
            self.store(member, hash, id, b, by, new_entry);
        }
        self.m.migrate(MIGRATE_STEP);
        self.advance_growth();
        self.last_retire_work = self.retire(self.retire_budget);
        Ok(new_live as i64)
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
        if inserted {
            self.total_entries += 1;
            self.m.meta_mut(id).refs += 1;
        }
        if counted {
            let t = self.m.total(id) + by as i128;
            self.m.set_total(id, t);
        }
    }

    // ----- reads ----------------------------------------------------------------------------

    /// The member's count over the window ending at the clock.
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
    fn span_of(&self, lo: i64, hi: i64) -> Option<Span> {
        if lo > hi {
            return None;
        }
        let i0 = self.buckets.partition_point(|b| b.idx < lo);
        let i1 = self.buckets.partition_point(|b| b.idx <= hi);
        (i0 < i1).then_some(Span { lo, hi, i0, i1 })
    }

    /// The read window of the `k` newest buckets of the window ending at `at_ms` (cut to the
    /// live window of the clock), if it holds a stored bucket.
    fn span(&self, at_ms: i64, k: u32) -> Option<Span> {
        let c = self.clock?;
        if k == 0 {
            return None;
        }
        let hi = self.bucket_of(at_ms);
        let lo = hi.saturating_sub(k as i64 - 1).max(self.live_lo(c));
        self.span_of(lo, hi)
    }

    /// What turns a running total into a count over `sp`: buckets of the aggregate outside the
    /// span, and aged buckets inside it.
    fn fixes(&self, sp: &Span) -> Vec<Fix<'_>> {
        let len = self.buckets.len();
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

    /// Number of fixes `fixes(sp)` would return, without building them.
    fn fix_count(&self, sp: &Span) -> usize {
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
    fn entries_in(&self, i0: usize, i1: usize) -> usize {
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

    /// Member `id`'s exact count over `sp`: the running total corrected, or the span's buckets
    /// summed, whichever takes fewer lookups.
    fn count_id(&self, id: u32, sp: &Span) -> i128 {
        // The usual write: the span is every stored bucket and all of them are in the aggregate.
        if sp.i0 == 0
            && sp.i1 == self.buckets.len()
            && (self.buckets[0].idx > self.agg_lo
                || (self.buckets[0].idx == self.agg_lo
                    && self.agg_pos == 0
                    && self.buckets[0].extra.is_none()))
        {
            return self.m.total(id);
        }
        if self.fix_count(sp) < sp.i1 - sp.i0 {
            let mut c = self.m.total(id);
            for f in self.fixes(sp) {
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

    #[cfg_attr(not(test), allow(dead_code))]
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
        clamp_i64(self.count_id(id, &sp))
    }

    #[cfg_attr(not(test), allow(dead_code))]
    /// Exact top `n` over the window ending at `at_ms` (before or after the clock), highest
    /// first, ties by member ascending; members whose count is 0 are left out.
    pub fn top(&self, n: usize, at_ms: i64) -> Vec<(&[u8], i64)> {
        self.top_in(n, at_ms, self.window)
    }

    /// `top` over the `k` newest buckets of the window ending at `at_ms` (`LAST k`; TOP24 on a
    /// key whose window is longer than 24 hours). Only buckets inside the key's own window
    /// count.
    ///
    /// Cost: with no fix (the read window is the aggregate's, e.g. a read at the server's time
    /// once upkeep has caught up) a walk of the order index, O(n log M). Otherwise the index
    /// walk corrects each candidate with one lookup per fix, and stops when the next
    /// candidate's bound cannot beat the n-th best; if that walk would cost more than
    /// 1/WALK_SHARE of summing the read window's buckets, it sums them instead.
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
        let fixes = self.fixes(&sp);
        // Whether a bucket of the read window may hold a negative count (then a member with a
        // non-positive bound can still have a nonzero, negative count).
        let incl_has_neg = self.neg.range(sp.lo..=sp.hi).next().is_some();
        let slack: i128 = fixes.iter().map(|f| f.slack()).sum();
        let step = INDEX_STEP_COST + LOOKUP_COST * fixes.len();
        // The cheaper of the two sums: the read window's buckets, or every running total and
        // the fixes' buckets.
        let (sum_cost, through_totals) = if fixes.is_empty() {
            (usize::MAX, false)
        } else {
            let direct = self.direct_cost(sp.i0, sp.i1);
            // Copying the totals reads a whole slot each: about a scanned cell.
            let totals =
                (SLOT_COST + 1) * self.m.nslots + fixes.iter().map(|f| f.cost()).sum::<usize>();
            (direct.min(totals), totals < direct)
        };
        let sum = || {
            note_path(2);
            if through_totals {
                if let Some(rows) = self.top_through_totals(n, &fixes) {
                    return rows;
                }
            }
            self.top_direct(n, sp.i0, sp.i1)
        };
        let cap = if fixes.is_empty() {
            usize::MAX
        } else {
            let cap = sum_cost / WALK_SHARE;
            if want.saturating_mul(step) > cap {
                return sum();
            }
            cap
        };
        note_path(if fixes.is_empty() { 0 } else { 1 });
        let mut cost = 0usize;

        // Max-heap on "worseness": the root is the current n-th best.
        let mut heap: BinaryHeap<(Reverse<i128>, &[u8])> = BinaryHeap::with_capacity(want + 1);
        for key in self.m.names.index_iter() {
            cost += step;
            if cost > cap {
                return sum();
            }
            let kt = key.total();
            let name: &[u8] = key.bytes();
            // A clamped total (the exact one is beyond i64) bounds nothing.
            let bound = if kt == i64::MAX {
                i128::MAX
            } else {
                kt as i128 + slack
            };
            if heap.len() >= want {
                let &(Reverse(wc), wn) = heap.peek().expect("non-empty");
                if bound < wc || (bound == wc && name > wn) {
                    break;
                }
            }
            if bound <= 0 && !incl_has_neg {
                break;
            }
            let id = key.id();
            let mut cnt = if kt == i64::MAX || kt == i64::MIN {
                self.m.total(id)
            } else {
                kt as i128
            };
            for f in &fixes {
                cnt += f.value(id);
            }
            if cnt == 0 {
                continue;
            }
            if heap.len() < want {
                heap.push((Reverse(cnt), name));
            } else {
                let mut worst = heap.peek_mut().expect("non-empty");
                if (Reverse(cnt), name) < *worst {
                    *worst = (Reverse(cnt), name);
                }
            }
        }
        heap.into_sorted_vec()
            .into_iter()
            .map(|(Reverse(c), m)| (m, clamp_i64(c)))
            .collect()
    }

    /// Top `n` from every member's running total, corrected by scanning the fixes' buckets;
    /// `None` if a total is beyond i64 or a sum overflows (then `top_direct`).
    fn top_through_totals(&self, n: usize, fixes: &[Fix<'_>]) -> Option<Rows<'_>> {
        if !self.m.big.is_empty() {
            return None;
        }
        let slots = self.m.nslots;
        let mut acc: Vec<i64> = vec![0; slots + 1];
        self.m.names.totals_into(&mut acc[..slots]);
        let mut overflow = false;
        for f in fixes {
            overflow |= f.scan_into(&mut acc);
        }
        if overflow {
            return None;
        }
        Some(self.select_dense(n, &acc[..slots]))
    }

    /// The top `n` of dense sums (`acc[id]`).
    fn select_dense(&self, n: usize, acc: &[i64]) -> Rows<'_> {
        let name = |id: u32| self.m.name(id);
        let all = || acc.iter().enumerate().map(|(id, v)| (*v, id as u32));
        top_positive(n, all, name).unwrap_or_else(|| {
            top_rows(
                n,
                || all().filter(|c| c.0 != 0).map(|(v, id)| (v as i128, id)),
                name,
            )
        })
    }

    /// Whether `top_direct` over this many entries uses dense accumulators (one per member
    /// slot) rather than a hash map.
    fn dense_sum(&self, entries: usize) -> bool {
        self.m.nslots.saturating_mul(SLOT_COST) <= entries.saturating_mul(MAP_ENTRY_COST)
    }

    /// The model's cost of `top_direct` over deque positions `[i0, i1)`.
    fn direct_cost(&self, i0: usize, i1: usize) -> usize {
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

    /// Top `n` by summing the buckets at deque positions `[i0, i1)` directly.
    fn top_direct(&self, n: usize, i0: usize, i1: usize) -> Rows<'_> {
        if i1 - i0 == 1 {
            return self.top_of_bucket(n, &self.buckets[i0]);
        }
        let range = || self.buckets.range(i0..i1);
        let entries: usize = range().map(Bucket::entries).sum();
        let slots = self.m.nslots;
        if self.dense_sum(entries) {
            // Dense accumulators indexed by member id (plus the scan's dummy slot); i64 unless a
            // sum overflows.
            let mut acc: Vec<i64> = vec![0; slots + 1];
            let mut overflow = false;
            for b in range() {
                overflow |= b.add_into(&mut acc);
            }
            if !overflow {
                return self.select_dense(n, &acc[..slots]);
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
    fn top_of_bucket<'a>(&'a self, n: usize, b: &'a Bucket) -> Rows<'a> {
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

    /// Distinct members currently stored (including ones only in buckets not yet retired).
    pub fn members(&self) -> usize {
        self.m.live
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
        std::mem::size_of::<TopN>()
            + self.m.heap_bytes()
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
            + self.buckets.iter().map(Bucket::heap_bytes).sum::<usize>()
            + self.neg.len() * 16
            + self.packer.as_ref().map_or(0, |p| p.heap_bytes())
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

    /// When the whole window has passed with no writes: `(clock + window) * bucket_ms`
    /// (saturating); `None` before the first write.
    pub fn expire_at_ms(&self) -> Option<i64> {
        let c = self.clock?;
        Some(
            c.saturating_add(self.window as i64)
                .saturating_mul(self.bucket_ms),
        )
    }

    // ----- persistence ----------------------------------------------------------------------

    /// Live buckets with their nonzero entries, ascending.
    fn live_buckets(&self) -> impl Iterator<Item = &Bucket> + '_ {
        self.buckets.iter().filter(move |b| !self.is_stale(b.idx))
    }

    /// Versioned binary encoding (little endian):
    /// `u8 version=1, i64 bucket_ms, u32 window, u8 has_clock, i64 clock,
    ///  u32 nmembers, nmembers x (u32 len, bytes),
    ///  u32 nbuckets, nbuckets x (i64 bucket, u32 nentries, nentries x (u32 member, i64 count))`.
    /// Only live buckets and nonzero counts are written. The bytes are a function of the
    /// content alone (members in byte order, a bucket's entries by member), not of table
    /// layouts, so a replica encodes exactly what its master does. Cost: sorting the names,
    /// O(M log M), and each bucket's entries.
    pub fn encode(&self) -> Vec<u8> {
        let buckets: Vec<(i64, Vec<(u32, i64)>)> = self
            .live_buckets()
            .map(|b| (b.idx, b.iter().filter(|(_, v)| *v != 0).collect::<Vec<_>>()))
            .filter(|(_, entries)| !entries.is_empty())
            .collect();
        // Member numbers: the members written, in byte order.
        let mut renum: Vec<u32> = vec![EMPTY; self.m.nslots];
        let mut names: Vec<u32> = Vec::new();
        for (_, entries) in &buckets {
            for &(id, _) in entries {
                if renum[id as usize] == EMPTY {
                    renum[id as usize] = 0;
                    names.push(id);
                }
            }
        }
        names.sort_unstable_by(|a, b| self.m.name(*a).cmp(self.m.name(*b)));
        for (n, &id) in names.iter().enumerate() {
            renum[id as usize] = n as u32;
        }
        let name_bytes: usize = names.iter().map(|&id| 4 + self.m.name(id).len()).sum();
        let entries: usize = buckets.iter().map(|(_, e)| 12 + 12 * e.len()).sum();
        let mut out = Vec::with_capacity(34 + name_bytes + entries);
        out.push(ENCODING_VERSION);
        out.extend_from_slice(&self.bucket_ms.to_le_bytes());
        out.extend_from_slice(&self.window.to_le_bytes());
        out.push(self.clock.is_some() as u8);
        out.extend_from_slice(&self.clock.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&(names.len() as u32).to_le_bytes());
        for &id in &names {
            let n = self.m.name(id);
            out.extend_from_slice(&(n.len() as u32).to_le_bytes());
            out.extend_from_slice(n);
        }
        out.extend_from_slice(&(buckets.len() as u32).to_le_bytes());
        for (idx, entries) in buckets {
            let mut entries: Vec<(u32, i64)> = entries
                .into_iter()
                .map(|(id, v)| (renum[id as usize], v))
                .collect();
            entries.sort_unstable_by_key(|e| e.0);
            out.extend_from_slice(&idx.to_le_bytes());
            out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
            for (r, v) in entries {
                out.extend_from_slice(&r.to_le_bytes());
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// Rebuilds a structure from `encode()` output. Rejects truncated or malformed input.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn decode(bytes: &[u8]) -> Result<TopN, DecodeError> {
        Self::decode_at(bytes, None)
    }

    /// `decode`, for a server whose time is `now_ms`: buckets that already left the window at
    /// that time are loaded aged (out of the aggregate), so no upkeep is owed for them.
    pub fn decode_at(bytes: &[u8], now_ms: Option<i64>) -> Result<TopN, DecodeError> {
        let mut r = Reader { buf: bytes };
        let version = r.u8()?;
        if version != ENCODING_VERSION {
            return Err(DecodeError::UnknownVersion(version));
        }
        let bucket_ms = r.i64()?;
        if bucket_ms < 1 {
            return Err(DecodeError::Invalid("bucket_ms"));
        }
        let window = r.u32()?;
        if window < 1 {
            return Err(DecodeError::Invalid("window"));
        }
        let has_clock = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(DecodeError::Invalid("clock flag")),
        };
        let clock = r.i64()?;
        if !has_clock && clock != 0 {
            return Err(DecodeError::Invalid("clock"));
        }
        let mut t = TopN::new(bucket_ms, window);
        t.clock = if has_clock { Some(clock) } else { None };
        if let Some(now) = now_ms {
            t.observe_time(now);
        }
        if has_clock {
            t.agg_lo = t.agg_target();
        }

        let nmembers = r.u32()? as usize;
        if nmembers > r.buf.len() / 4 {
            return Err(DecodeError::Truncated);
        }
        if !has_clock && nmembers != 0 {
            return Err(DecodeError::Invalid("members without clock"));
        }
        t.m.reserve(nmembers);
        for _ in 0..nmembers {
            let len = r.u32()? as usize;
            let name = r.take(len)?;
            let hash = t.m.hash_name(name);
            if t.m.find(name, hash).is_some() {
                return Err(DecodeError::Invalid("duplicate member"));
            }
            t.m.intern_raw(name, hash);
        }
        let nbuckets = r.u32()? as usize;
        if nbuckets > r.buf.len() / 12 {
            return Err(DecodeError::Truncated);
        }
        let lo = t.live_lo(clock);
        let mut prev: Option<i64> = None;
        for _ in 0..nbuckets {
            let idx = r.i64()?;
            if !has_clock || idx < lo || idx > clock {
                return Err(DecodeError::Invalid("bucket outside the window"));
            }
            if prev.is_some_and(|p| idx <= p) {
                return Err(DecodeError::Invalid("buckets out of order"));
            }
            prev = Some(idx);
            let nentries = r.u32()? as usize;
            if nentries == 0 {
                return Err(DecodeError::Invalid("empty bucket"));
            }
            if nentries > r.buf.len() / 12 {
                return Err(DecodeError::Truncated);
            }
            let mut b = Bucket::new(idx);
            b.cur = Table::with_cap(nentries * 5 / 4 + 1);
            for _ in 0..nentries {
                let m = r.u32()?;
                let v = r.i64()?;
                if m as usize >= nmembers {
                    return Err(DecodeError::Invalid("member number"));
                }
                if v == 0 {
                    return Err(DecodeError::Invalid("zero count"));
                }
                let (pos, inserted) = b.entry(m);
                if !inserted {
                    return Err(DecodeError::Invalid("duplicate entry"));
                }
                b.set(pos, v);
                t.total_entries += 1;
                t.m.meta_mut(m).refs += 1;
                if idx >= t.agg_lo {
                    let total = t.m.total(m) + v as i128;
                    t.m.set_total(m, total);
                }
            }
            if b.min_val < 0 {
                t.neg.insert(idx);
            }
            t.buckets.push_back(b);
        }
        if !r.buf.is_empty() {
            return Err(DecodeError::Invalid("trailing bytes"));
        }
        if t.m.ids().any(|id| t.m.meta(id).refs == 0) {
            return Err(DecodeError::Invalid("unused member"));
        }
        t.m.names.rebuild_index();
        Ok(t)
    }

    /// Increments that rebuild an equal structure when replayed with `incr` in order (on a
    /// fresh `TopN::new(bucket_ms, window)`): `(member, by, at_ms)` in ascending bucket order.
    /// A final `(b"", 0, clock_ms)` restores the clock when the newest live bucket holds no
    /// nonzero count.
    pub fn replay_events(&self) -> Vec<(&[u8], i64, i64)> {
        let mut out = Vec::new();
        let mut last: Option<i64> = None;
        for b in self.live_buckets() {
            let at = b.idx.saturating_mul(self.bucket_ms);
            for (id, v) in b.iter() {
                if v != 0 {
                    out.push((self.m.name(id), v, at));
                    last = Some(b.idx);
                }
            }
        }
        if let Some(c) = self.clock {
            if last != Some(c) {
                out.push((&b""[..], 0, c.saturating_mul(self.bucket_ms)));
            }
        }
        out
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<TopN>();
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const H: i64 = 3_600_000;

    fn top_owned(t: &TopN, n: usize, at: i64) -> Vec<(Vec<u8>, i64)> {
        t.top(n, at)
            .into_iter()
            .map(|(m, c)| (m.to_vec(), c))
            .collect()
    }

    fn row(m: &str, c: i64) -> (Vec<u8>, i64) {
        (m.as_bytes().to_vec(), c)
    }

    /// Checks internal invariants: totals (over the aggregate's part of each bucket), refs,
    /// `extra`s, the aggregate bounds, index and lookup consistency.
    fn check_invariants(t: &TopN) {
        let mut totals: HashMap<u32, (i128, u32)> = HashMap::new();
        let mut seen_agg_bucket = false;
        for (bi, b) in t.buckets.iter().enumerate() {
            let mut n = 0;
            let skip = if bi == 0 && t.is_stale(b.idx) {
                t.retire_pos
            } else {
                0
            };
            let cells = b.cells();
            let mut table_ids = std::collections::HashSet::new();
            for pos in 0..cells {
                let (id, v) = b.cell(pos);
                if id == EMPTY || id == MOVED {
                    assert_eq!(v, 0, "an empty or moved cell holds a count");
                    continue;
                }
                n += 1;
                if pos < skip {
                    assert_eq!(v, 0, "freed entry keeps a count");
                    continue;
                }
                table_ids.insert(id);
                let e = totals.entry(id).or_insert((0, 0));
                e.1 += 1;
                if t.cell_in_agg(b.idx, pos) {
                    e.0 += v as i128;
                }
                assert!(v >= b.min_val && v <= b.max_val);
                assert!(t.m.names.slot(id).is_live(), "entry of a freed member");
            }
            assert_eq!(n, b.len);
            if let Some(p) = &b.packed {
                let mut want: Vec<(u32, i64)> = b.table_iter().filter(|e| e.1 != 0).collect();
                want.sort_unstable();
                assert_eq!(
                    p.entries().collect::<Vec<_>>(),
                    want,
                    "packed copy of {}",
                    b.idx
                );
            }
            if let Some(x) = &b.extra {
                assert!(b.idx <= t.agg_lo, "extra on a bucket of the aggregate");
                assert!(x.extra.is_none());
                let mut nx = 0;
                for (xpos, (id, v)) in (0..x.cells()).map(|c| (c, x.cell(c))) {
                    if id == EMPTY || id == MOVED {
                        continue;
                    }
                    nx += 1;
                    if skip > cells && xpos < skip - cells {
                        assert_eq!(v, 0, "freed extra entry keeps a count");
                        continue;
                    }
                    assert!(!table_ids.contains(&id), "member in a table and its extra");
                    totals.entry(id).or_insert((0, 0)).1 += 1;
                    assert!(v >= b.min_val && v <= b.max_val);
                }
                assert_eq!(nx, x.len);
            }
            if b.idx == t.agg_lo {
                seen_agg_bucket = true;
            }
        }
        if t.agg_pos > 0 {
            assert!(seen_agg_bucket, "aging cursor on a bucket that is gone");
        }
        let mut live = 0;
        let mut name_bytes = 0;
        for id in t.m.ids() {
            let s = t.m.meta(id);
            live += 1;
            name_bytes += t.m.name(id).len();
            let (sum, refs) = totals.get(&id).copied().unwrap_or((0, 0));
            assert_eq!(t.m.total(id), sum, "total of member {id}");
            assert_eq!(s.refs, refs, "refs of member {id}");
            assert!(refs > 0, "member {id} kept without refs");
            assert_eq!(s.hash, t.m.hash_name(t.m.name(id)));
            assert_eq!(t.m.find(t.m.name(id), s.hash), Some(id));
            assert!(t.m.names.index_contains(id));
        }
        assert_eq!(live, t.m.live);
        assert_eq!(name_bytes, t.m.name_bytes);
        assert_eq!(t.m.names.index_len(), live);
        assert_eq!(t.m.nslots, t.m.names.slots());
        assert_eq!(t.m.free_ids.len() + live, t.m.nslots);
        let cells = |tb: &Cells<u64>| {
            (0..tb.len())
                .map(|i| tb.get(i))
                .filter(|c| *c != EMPTY_CELL && cell_id(*c) != TOMB)
                .count()
        };
        assert_eq!(cells(&t.m.table) + cells(&t.m.old), live);
        assert!((0..t.m.table.len()).all(|i| cell_id(t.m.table.get(i)) != TOMB));
        assert_eq!(
            t.total_entries,
            t.buckets.iter().map(|b| b.entries()).sum::<usize>()
        );
        let neg: BTreeSet<i64> = t
            .buckets
            .iter()
            .filter(|b| b.min_val < 0)
            .map(|b| b.idx)
            .collect();
        assert_eq!(t.neg, neg);
        for w in t.buckets.iter().collect::<Vec<_>>().windows(2) {
            assert!(w[0].idx < w[1].idx);
        }
    }

    #[test]
    fn lazy_cells() {
        for len in [0usize, 1, 511, 512, 513, 4096, 4097, 5000, 70_000] {
            let mut c = Cells::new(len, 7u32);
            let mut model = vec![7u32; len];
            let mut rng = StdRng::seed_from_u64(len as u64);
            for _ in 0..len / 3 {
                let i = rng.gen_range(0..len);
                let v = rng.gen();
                c.set(i, v);
                model[i] = v;
            }
            assert!((0..len).all(|i| c.get(i) == model[i]));
            let d = c.clone();
            assert!((0..len).all(|i| d.get(i) == model[i]));
        }
    }

    #[test]
    fn bucket_table_incremental_growth() {
        let mut rng = StdRng::seed_from_u64(8);
        let mut b = Bucket::new(3);
        let mut model: HashMap<u32, i64> = HashMap::new();
        let mut mid = 0;
        for step in 0..50_000 {
            let id = rng.gen_range(0..20_000u32);
            assert_eq!(b.get(id), model.get(&id).copied().unwrap_or(0));
            let (c, inserted) = b.entry(id);
            assert_eq!(inserted, !model.contains_key(&id));
            assert_eq!(b.cell(c).0, id);
            let v = model.get(&id).copied().unwrap_or(0) + rng.gen_range(-2..5);
            b.set(c, v);
            model.insert(id, v);
            mid += b.old.is_some() as usize;
            if step % 997 == 0 {
                assert_eq!(b.len, model.len());
                let mut got: Vec<(u32, i64)> = b.iter().collect();
                got.sort();
                let mut want: Vec<(u32, i64)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                want.sort();
                assert_eq!(got, want);
                let cells = (0..b.cells())
                    .filter(|c| !matches!(b.cell(*c).0, EMPTY | MOVED))
                    .count();
                assert_eq!(cells, model.len());
                for (k, v) in &model {
                    assert_eq!(b.cell(b.find(*k).unwrap()).1, *v);
                }
                assert!(b.min_val <= *model.values().min().unwrap().min(&0));
            }
        }
        assert!(mid > 1000, "growth was never caught in progress ({mid})");
    }

    #[test]
    fn growth_finishes_without_writes_to_the_bucket() {
        let mut t = TopN::new(1000, 4);
        let mut i = 0u32;
        // Stop writing bucket 0 right after a growth started.
        loop {
            t.incr(&i.to_le_bytes(), 1, 0).unwrap();
            i += 1;
            if i > 5000 && t.buckets[0].old.is_some() {
                break;
            }
        }
        for k in 0..10_000u32 {
            t.incr(&k.to_be_bytes(), 1, 1000).unwrap();
        }
        assert!(
            t.buckets[0].old.is_none(),
            "bucket 0 still holds its previous table"
        );
        assert!(t.growing.iter().all(|&idx| idx == 1));
        check_invariants(&t);
    }

    #[test]
    fn member_table_incremental_rehash() {
        let mut rng = StdRng::seed_from_u64(5);
        let mut m = Members::new();
        let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut saw_old = 0;
        for step in 0..60_000 {
            let name = format!("n{}", rng.gen_range(0..5000)).into_bytes();
            let h = m.hash_name(&name);
            let found = m.find(&name, h);
            assert_eq!(found, model.get(&name).copied(), "step {step}");
            match found {
                None => {
                    let id = m.intern(&name, h);
                    m.meta_mut(id).refs = 1;
                    model.insert(name, id);
                }
                Some(id) => {
                    if rng.gen_ratio(1, 2) {
                        m.release(id);
                        model.remove(&name);
                    } else {
                        let t = m.total(id) + rng.gen_range(-3..4);
                        m.set_total(id, t);
                    }
                }
            }
            if m.old.len() > 0 {
                saw_old += 1;
            }
            if step % 1000 == 0 {
                assert_eq!(m.live, model.len());
                assert_eq!(m.names.index_len(), model.len());
                let mut keys: Vec<(i64, Vec<u8>)> = model
                    .iter()
                    .map(|(n, id)| (-clamp_i64(m.total(*id)), n.clone()))
                    .collect();
                keys.sort();
                let got: Vec<(i64, Vec<u8>)> = m
                    .names
                    .index_iter()
                    .map(|k| (-k.total(), k.bytes().to_vec()))
                    .collect();
                assert_eq!(got, keys);
                let c = m.clone();
                for (n, id) in &model {
                    assert_eq!(c.find(n, c.hash_name(n)), Some(*id));
                    assert_eq!(c.name(*id), &n[..]);
                }
            }
        }
        assert!(saw_old > 100, "the old table was never live ({saw_old})");
        let mut g = Graveyard {
            members: m,
            buckets: VecDeque::new(),
        };
        let mut steps = 0;
        while !g.is_empty() {
            assert!(g.step(7) <= 7);
            steps += 1;
        }
        assert!(steps > 100);
    }

    #[test]
    fn bucket_arithmetic_and_window_bounds() {
        let mut t = TopN::new(1000, 3);
        assert_eq!(t.bucket_of(0), 0);
        assert_eq!(t.bucket_of(999), 0);
        assert_eq!(t.bucket_of(1000), 1);
        assert_eq!(t.incr(b"a", 1, 999).unwrap(), 1); // bucket 0
        assert_eq!(t.incr(b"a", 10, 1000).unwrap(), 11); // bucket 1
        assert_eq!(t.incr(b"a", 100, 2999).unwrap(), 111); // bucket 2
                                                           // Window ending in bucket 2 = buckets 0..=2.
        assert_eq!(t.count(b"a", 2000), 111);
        assert_eq!(t.count(b"a", 2999), 111);
        // Bucket 3: buckets 1..=3.
        assert_eq!(t.count(b"a", 3000), 110);
        assert_eq!(t.count(b"a", 3999), 110);
        assert_eq!(t.count(b"a", 4000), 100);
        assert_eq!(t.count(b"a", 5000), 0);
        // Before the clock: windows ending in bucket 1 and 0.
        assert_eq!(t.count(b"a", 1999), 11);
        assert_eq!(t.count(b"a", 0), 1);
        assert_eq!(t.top(10, 3500), vec![(&b"a"[..], 110)]);
        assert_eq!(t.expire_at_ms(), Some(5000));
        assert_eq!(t.buckets_in_use(), 3);
        // Default sizes: one hour x 24.
        let mut d = TopN::new(H, 24);
        d.incr(b"x", 1, 5 * H + 1).unwrap();
        assert_eq!(d.count(b"x", 5 * H + 23 * H + H - 1), 1);
        assert_eq!(d.count(b"x", 5 * H + 24 * H), 0);
        assert_eq!(d.expire_at_ms(), Some(29 * H));
        assert_eq!(TopN::new(H, 24).expire_at_ms(), None);
    }

    #[test]
    fn ties_zero_and_negative() {
        let mut t = TopN::new(1000, 5);
        for m in [&b"b"[..], b"ab", b"a", b"a\0", b"\xff", b""] {
            t.incr(m, 2, 10).unwrap();
        }
        t.incr(b"z", 3, 10).unwrap();
        let top = top_owned(&t, 10, 10);
        let expect: Vec<(Vec<u8>, i64)> = vec![
            (b"z".to_vec(), 3),
            (b"".to_vec(), 2),
            (b"a".to_vec(), 2),
            (b"a\0".to_vec(), 2),
            (b"ab".to_vec(), 2),
            (b"b".to_vec(), 2),
            (b"\xff".to_vec(), 2),
        ];
        assert_eq!(top, expect);
        assert_eq!(top_owned(&t, 3, 10), expect[..3].to_vec());
        // Zero counts are hidden; negatives listed last.
        assert_eq!(t.incr(b"z", -3, 10).unwrap(), 0);
        assert_eq!(t.incr(b"neg", -4, 1010).unwrap(), -4);
        assert_eq!(t.incr(b"neg2", -1, 1010).unwrap(), -1);
        let top = top_owned(&t, 100, 1010);
        assert_eq!(top.len(), 8);
        assert_eq!(top[6], row("neg2", -1));
        assert_eq!(top[7], row("neg", -4));
        assert!(top.iter().all(|(m, _)| m != b"z"));
        assert_eq!(t.count(b"z", 1010), 0);
        // Cancel across buckets: +5 in bucket 1, -5 in bucket 2.
        t.incr(b"c", 5, 1500).unwrap();
        t.incr(b"c", -5, 2500).unwrap();
        assert_eq!(t.count(b"c", 2500), 0);
        assert!(top_owned(&t, 100, 2500).iter().all(|(m, _)| m != b"c"));
        // Read ending in bucket 1 sees +5 only.
        assert!(top_owned(&t, 100, 1500).contains(&row("c", 5)));
        check_invariants(&t);
    }

    #[test]
    fn overflow_rejected_and_nothing_changed() {
        let mut t = TopN::new(1000, 3);
        t.incr(b"a", i64::MAX, 0).unwrap();
        let before = t.encode();
        assert_eq!(t.incr(b"a", 1, 0), Err(Overflow));
        // Window total overflows although the new bucket would not.
        assert_eq!(t.incr(b"a", 1, 1000), Err(Overflow));
        assert_eq!(t.encode(), before, "clock must not advance either");
        assert_eq!(t.count(b"a", 1000), i64::MAX);
        assert_eq!(t.incr(b"a", -1, 1000).unwrap(), i64::MAX - 1);
        assert_eq!(t.incr(b"b", i64::MIN, 1000).unwrap(), i64::MIN);
        assert_eq!(t.incr(b"b", -1, 1000), Err(Overflow));
        assert_eq!(t.incr(b"b", -1, 2000), Err(Overflow));
        assert_eq!(t.count(b"b", 2000), i64::MIN);
        // Once bucket 0 has left the window, a = MAX-1 ... only bucket 1 (-1) remains.
        assert_eq!(t.incr(b"a", i64::MAX, 3000).unwrap(), i64::MAX - 1);
        assert_eq!(t.count(b"a", 3000), i64::MAX - 1);
        assert_eq!(t.top(1, 3000), vec![(&b"a"[..], i64::MAX - 1)]);
        check_invariants(&t);
        for _ in 0..10 {
            t.incr(b"q", 1, 3000).unwrap();
        }
        assert!(t.is_settled());
        check_invariants(&t);
    }

    #[test]
    fn aggregate_overflow_with_stale_bucket_pending() {
        // The stale bucket still counts in the aggregate: the write must purge it, not fail.
        let mut t = TopN::new(1000, 2);
        t.set_retire_budget(1);
        for i in 0..50 {
            t.incr(format!("m{i}").as_bytes(), 1, 0).unwrap();
        }
        t.incr(b"a", i64::MAX, 0).unwrap();
        t.incr(b"b", 1, 1000).unwrap();
        // Bucket 0 becomes stale, bucket 1 stays live: not a full reset.
        assert_eq!(t.incr(b"a", i64::MAX, 2000).unwrap(), i64::MAX);
        assert!(!t.is_settled());
        assert_eq!(t.count(b"a", 2000), i64::MAX);
        assert_eq!(t.top(1, 2000), vec![(&b"a"[..], i64::MAX)]);
        check_invariants(&t);
        while !t.is_settled() {
            t.incr(b"b", 1, 2000).unwrap();
            check_invariants(&t);
        }
        assert_eq!(t.count(b"a", 2000), i64::MAX);
    }

    #[test]
    fn late_events_and_reads_around_the_clock() {
        let mut t = TopN::new(10, 3);
        t.incr(b"a", 1, 100).unwrap(); // bucket 10 -> clock 10, live 8..=10
        assert_eq!(
            t.incr(b"a", 5, 79).unwrap(),
            1,
            "bucket 7 is older than the window"
        );
        assert_eq!(t.incr(b"b", 5, 79).unwrap(), 0);
        assert_eq!(t.members(), 1);
        assert_eq!(t.incr(b"a", 2, 80).unwrap(), 3, "bucket 8 is live");
        assert_eq!(t.count(b"a", 100), 3);
        assert_eq!(t.count(b"a", 80), 2);
        assert_eq!(t.count(b"a", 79), 0);
        assert_eq!(t.count(b"a", 119), 1); // window 10..=11... ends at 11: 9..=11
        assert_eq!(t.count(b"a", 120), 1);
        assert_eq!(t.count(b"a", 130), 0);
        assert_eq!(t.top(5, 95), vec![(&b"a"[..], 2)]);
        assert!(t.top(5, 79).is_empty());
        assert!(t.top(5, 1_000_000).is_empty());
        // A write far in the future resets everything.
        assert_eq!(t.incr(b"c", 1, 10_000).unwrap(), 1);
        assert_eq!(t.members(), 1);
        assert_eq!(t.count(b"a", 10_000), 0);
        assert_eq!(t.count(b"a", 100), 0, "old buckets are gone for all reads");
        assert!(t.top(5, 100).is_empty());
        assert_eq!(t.top(5, 10_000), vec![(&b"c"[..], 1)]);
        check_invariants(&t);
    }

    #[test]
    fn by_zero_advances_clock_only() {
        let mut t = TopN::new(10, 3);
        t.incr(b"a", 4, 0).unwrap();
        assert_eq!(t.incr(b"a", 0, 25).unwrap(), 4);
        assert_eq!(t.clock(), Some(2));
        assert_eq!(t.incr(b"new", 0, 25).unwrap(), 0);
        assert_eq!(t.members(), 1);
        assert_eq!(t.incr(b"a", 0, 30).unwrap(), 0);
        assert_eq!(t.expire_at_ms(), Some(60));
        let ev: Vec<_> = t.replay_events();
        assert_eq!(ev, vec![(&b""[..], 0, 30)]);
        let mut r = TopN::new(10, 3);
        for (m, by, at) in ev {
            r.incr(m, by, at).unwrap();
        }
        assert_eq!(r.clock(), t.clock());
        assert_eq!(r.encode(), t.encode());
    }

    #[test]
    fn outside_the_window_at_the_servers_time() {
        // One-minute buckets, 24 of them: at 12:00:30 the window is 11:37..12:00.
        let (m, now) = (60_000, 720 * 60_000 + 30_000);
        assert!(TopN::outside_window_at(m, 24, now - 41 * m, now));
        assert!(TopN::outside_window_at(m, 24, 696 * m + 59_999, now));
        assert!(!TopN::outside_window_at(m, 24, 697 * m, now));
        assert!(!TopN::outside_window_at(m, 24, now - 20 * m, now));
        assert!(
            !TopN::outside_window_at(m, 24, now + 100 * m, now),
            "the future is inside"
        );
        assert!(!TopN::outside_window_at(m, 1, now - 30_000, now));
        assert!(TopN::outside_window_at(m, 1, now - 30_001, now));
        assert!(!TopN::outside_window_at(1, 100_000, 0, 0));
        // The key's own window (at its clock) is the other rule.
        let mut t = TopN::new(m, 3);
        assert!(!t.is_older_than_window(0));
        t.incr(b"a", 1, 10 * m).unwrap();
        assert!(t.is_older_than_window(8 * m - 1));
        assert!(!t.is_older_than_window(8 * m));
    }

    #[test]
    fn upkeep_follows_the_servers_time() {
        let mut t = TopN::new(1000, 3);
        assert_eq!(t.upkeep_due_ms(), None);
        for i in 0..300 {
            t.incr(format!("m{i}").as_bytes(), 1, 10_000).unwrap();
            t.incr(format!("m{i}").as_bytes(), 2, 11_000).unwrap();
        }
        t.observe_time(11_500);
        // Bucket 10 leaves the window at 13 000 (window 11..13).
        assert_eq!(t.upkeep_due_ms(), Some(13_000));
        assert!(t.is_settled());
        t.observe_time(13_000);
        assert_eq!(t.upkeep_due_ms(), Some(0), "bucket 10 is due now");
        assert!(!t.is_settled());
        let before = top_owned(&t, 5, 11_000);
        let mut steps = 0;
        while t.upkeep(16) == 16 {
            steps += 1;
            check_invariants(&t);
            // Exact in every state, at the server's time and before.
            assert_eq!(t.count(b"m7", 13_000), 2);
            assert_eq!(t.count(b"m7", 11_000), 3);
            assert_eq!(top_owned(&t, 5, 11_000), before);
        }
        assert!(steps >= 300 / 16, "aging was not spread: {steps} steps");
        assert!(t.is_settled());
        assert_eq!(t.take_aged_buckets(), 1);
        assert_eq!(t.upkeep_due_ms(), Some(14_000));
        assert_eq!(t.members(), 300, "aging keeps the data");
        // A read at the server's time now walks a plain index.
        assert_eq!(t.top(2, 13_000), vec![(&b"m0"[..], 2), (&b"m1"[..], 2)]);
        // Time going backwards changes nothing; past the whole window nothing is owed.
        t.observe_time(0);
        assert_eq!(t.upkeep_due_ms(), Some(14_000));
        t.observe_time(100_000);
        while t.upkeep(64) == 64 {}
        assert_eq!(t.upkeep_due_ms(), None);
        assert_eq!(
            t.count(b"m7", 11_000),
            3,
            "data stays until the key's clock moves"
        );
        check_invariants(&t);
    }

    #[test]
    fn decode_at_loads_buckets_already_aged() {
        let t = sample(5, 40, 600);
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
        let c = t.clock().unwrap();
        for ahead in 0..6 {
            let d = TopN::decode_at(&t.encode(), Some((c + ahead) * 1000 + 1)).unwrap();
            check_invariants(&d);
            assert!(d.is_settled(), "nothing owed after a load ({ahead} ahead)");
            same_answers(&t, &d, &names);
        }
    }

    #[test]
    fn totals_beyond_i64_stay_exact() {
        let mut t = TopN::new(1000, 3);
        t.set_retire_budget(1);
        t.incr(b"a", -5, 0).unwrap();
        t.incr(b"a", i64::MAX, 1000).unwrap();
        t.incr(b"a", 5, 2000).unwrap();
        t.incr(b"b", i64::MAX - 1, 2000).unwrap();
        assert_eq!(t.count(b"a", 2000), i64::MAX);
        // Bucket 0 leaves: a's window count is MAX + 5 (replies clamp), b's MAX - 1.
        t.incr(b"z", 1, 3000).unwrap();
        while !t.is_settled() {
            t.incr(b"z", 1, 3000).unwrap();
        }
        check_invariants(&t);
        assert_eq!(
            t.m.total(t.m.find(b"a", t.m.hash_name(b"a")).unwrap()),
            i64::MAX as i128 + 5
        );
        assert_eq!(t.count(b"a", 3000), i64::MAX);
        assert_eq!(
            t.top(2, 3000),
            vec![(&b"a"[..], i64::MAX), (&b"b"[..], i64::MAX - 1)],
            "a (MAX + 5) ranks above b (MAX - 1)"
        );
        let z = t.count(b"z", 3000);
        assert_eq!(t.top_in(1, 3000, 1), vec![(&b"z"[..], z)]);
        assert_eq!(t.count_in(b"a", 3000, 2), 5);
        // Aging by time goes through the same exact totals.
        t.observe_time(4000);
        while t.upkeep(1) == 1 {}
        check_invariants(&t);
        assert_eq!(t.top(1, 4000), vec![(&b"b"[..], i64::MAX - 1)]);
        assert_eq!(t.count(b"a", 4000), 5);
        assert_eq!(t.top(1, 3000), vec![(&b"a"[..], i64::MAX)]);
    }

    fn sample(seed: u64, members: usize, events: usize) -> TopN {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut t = TopN::new(1000, 4);
        let mut now = 0;
        for _ in 0..events {
            if rng.gen_ratio(1, 20) {
                now += rng.gen_range(0..1500);
            }
            let m = format!("m{}", rng.gen_range(0..members));
            let by = if rng.gen_ratio(1, 10) {
                -2
            } else {
                rng.gen_range(1..4)
            };
            let at = if rng.gen_ratio(1, 10) {
                (now - 2500).max(0)
            } else {
                now
            };
            t.incr(m.as_bytes(), by, at).unwrap();
        }
        t
    }

    fn same_answers(a: &TopN, b: &TopN, names: &[Vec<u8>]) {
        let c = a.clock().unwrap_or(0);
        assert_eq!(a.clock(), b.clock());
        for k in -6..8 {
            let at = (c + k) * a.bucket_ms() + 1;
            assert_eq!(top_owned(a, 1000, at), top_owned(b, 1000, at), "at {at}");
            assert_eq!(top_owned(a, 3, at), top_owned(b, 3, at), "at {at}");
            for m in names {
                assert_eq!(a.count(m, at), b.count(m, at));
            }
        }
        assert_eq!(a.expire_at_ms(), b.expire_at_ms());
        assert_eq!(a.bucket_ms(), b.bucket_ms());
        assert_eq!(a.window(), b.window());
    }

    #[test]
    fn encode_decode_roundtrip() {
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
        for seed in 0..5 {
            let t = sample(seed, 40, 400);
            let enc = t.encode();
            assert_eq!(enc[0], ENCODING_VERSION);
            let d = TopN::decode(&enc).unwrap();
            check_invariants(&d);
            same_answers(&t, &d, &names);
            same_answers(&t, &TopN::decode(&d.encode()).unwrap(), &names);
            assert_eq!(d.buckets_in_use(), t.buckets_in_use());
        }
        let empty = TopN::new(5000, 7);
        let d = TopN::decode(&empty.encode()).unwrap();
        assert_eq!((d.bucket_ms(), d.window(), d.clock()), (5000, 7, None));
        let mut bin = TopN::new(1, 1);
        bin.incr(&[0, 255, 0], -3, 5).unwrap();
        bin.incr(b"", 2, 5).unwrap();
        let d = TopN::decode(&bin.encode()).unwrap();
        assert_eq!(d.top(5, 5), vec![(&b""[..], 2), (&[0u8, 255, 0][..], -3)]);
    }

    /// The bytes follow the content alone: the same events in other orders, through other
    /// table states (grown, aged, with writes into a bucket being aged), encode the same.
    #[test]
    fn encoding_is_a_function_of_the_content() {
        let mut rng = StdRng::seed_from_u64(21);
        let events: Vec<(Vec<u8>, i64, i64)> = (0..3000)
            .map(|_| {
                let m = format!("m{}", rng.gen_range(0..700)).into_bytes();
                (m, rng.gen_range(-2..6), rng.gen_range(0..6) * 1000 + 7)
            })
            .collect();
        let build = |order: &[usize], upkeep_at: Option<i64>| {
            let mut t = TopN::new(1000, 8);
            t.set_retire_budget(3);
            // The newest bucket first, so every later event is inside the window.
            t.incr(b"m0", 1, 5007).unwrap();
            for (n, &i) in order.iter().enumerate() {
                if let (Some(now), 0) = (upkeep_at, n % 50) {
                    t.observe_time(now);
                    t.upkeep(7);
                }
                let (m, by, at) = &events[i];
                t.incr(m, *by, *at).unwrap();
            }
            t
        };
        let mut order: Vec<usize> = (0..events.len()).collect();
        let a = build(&order, None);
        order.reverse();
        let b = build(&order, Some(12_000));
        for i in (1..order.len()).rev() {
            order.swap(i, rng.gen_range(0..=i));
        }
        let c = build(&order, Some(10_500));
        assert_eq!(a.encode(), b.encode());
        assert_eq!(a.encode(), c.encode());
        assert_eq!(a.encode(), TopN::decode(&c.encode()).unwrap().encode());
    }

    #[test]
    fn decode_rejects_truncated_and_garbage() {
        let mut t = sample(7, 10, 60);
        t.incr(b"", 1, 1_000_000).unwrap();
        t.incr(b"x", 2, 999_999).unwrap();
        let enc = t.encode();
        for len in 0..enc.len() {
            assert!(
                TopN::decode(&enc[..len]).is_err(),
                "truncation to {len} accepted"
            );
        }
        let mut long = enc.clone();
        long.push(0);
        assert!(TopN::decode(&long).is_err());
        let mut v = enc.clone();
        v[0] = 2;
        assert_eq!(
            TopN::decode(&v).unwrap_err(),
            DecodeError::UnknownVersion(2)
        );
        // Random garbage and single-byte corruptions never panic.
        let mut rng = StdRng::seed_from_u64(99);
        for _ in 0..20_000 {
            let len = rng.gen_range(0..80);
            let mut g: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if !g.is_empty() {
                g[0] = 1;
            }
            let _ = TopN::decode(&g);
        }
        for i in 0..enc.len() {
            for x in [0u8, 1, 0x7f, 0x80, 0xff] {
                let mut c = enc.clone();
                c[i] ^= x;
                if let Ok(d) = TopN::decode(&c) {
                    check_invariants(&d);
                    let _ = d.top(10, 1_000_000);
                }
            }
        }
        // Hand-made invalid inputs.
        let mut dup = TopN::new(10, 2);
        dup.incr(b"a", 1, 0).unwrap();
        dup.incr(b"b", 1, 0).unwrap();
        let mut e = dup.encode();
        // Rename member 1 to member 0's name ("a"/"b" are the last byte of each name record).
        let pos = e.iter().rposition(|&c| c == b'b' || c == b'a').unwrap();
        let other = if e[pos] == b'a' { b'b' } else { b'a' };
        let _ = other;
        let first = e.iter().position(|&c| c == b'a' || c == b'b').unwrap();
        e[pos] = e[first];
        assert_eq!(
            TopN::decode(&e).unwrap_err(),
            DecodeError::Invalid("duplicate member")
        );
    }

    #[test]
    fn replay_rebuilds_equal_structure() {
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
        for seed in 0..5 {
            let t = sample(seed + 100, 40, 500);
            let mut r = TopN::new(t.bucket_ms(), t.window());
            for (m, by, at) in t.replay_events() {
                r.incr(m, by, at).unwrap();
            }
            same_answers(&t, &r, &names);
            let dec = TopN::decode(&t.encode()).unwrap();
            let mut a = dec.replay_events();
            let mut b = r.replay_events();
            a.sort();
            b.sort();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn clone_is_independent() {
        let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
        let mut t = sample(3, 40, 300);
        let c = t.clone();
        same_answers(&t, &c, &names);
        let before = top_owned(&c, 100, 0);
        let at = (t.clock().unwrap() + 1) * 1000;
        t.incr(b"m1", 1000, at).unwrap();
        assert_eq!(top_owned(&c, 100, 0), before);
        check_invariants(&c);
        check_invariants(&t);
    }

    // ----- model-based test ------------------------------------------------------------------

    struct Model {
        bucket_ms: i64,
        window: i64,
        clock: Option<i64>,
        events: Vec<(Vec<u8>, i64, i64)>, // member, by, bucket
    }

    impl Model {
        fn lo(&self, c: i64) -> i64 {
            c - self.window + 1
        }
        fn sum(&self, m: &[u8], lo: i64, hi: i64) -> i128 {
            self.events
                .iter()
                .filter(|e| e.0 == m && e.2 >= lo && e.2 <= hi)
                .map(|e| e.1 as i128)
                .sum()
        }
        fn incr(&mut self, m: &[u8], by: i64, at: i64) -> Result<i64, Overflow> {
            let b = at.div_euclid(self.bucket_ms);
            if let Some(c) = self.clock {
                if b < self.lo(c) {
                    return Ok(self.sum(m, self.lo(c), c) as i64);
                }
            }
            let nc = self.clock.map_or(b, |c| c.max(b));
            let entry = self.sum(m, b, b) as i64;
            entry.checked_add(by).ok_or(Overflow)?;
            let live = self.sum(m, self.lo(nc), nc) + by as i128;
            if live > i64::MAX as i128 || live < i64::MIN as i128 {
                return Err(Overflow);
            }
            self.clock = Some(nc);
            self.events.push((m.to_vec(), by, b));
            Ok(live as i64)
        }
        fn counts(&self, at: i64) -> HashMap<Vec<u8>, i128> {
            self.counts_in(at, self.window)
        }
        fn counts_in(&self, at: i64, w: i64) -> HashMap<Vec<u8>, i128> {
            let mut out = HashMap::new();
            let Some(c) = self.clock else { return out };
            let tb = at.div_euclid(self.bucket_ms);
            let lo = (tb - w + 1).max(self.lo(c));
            for e in &self.events {
                if e.2 >= lo && e.2 <= tb {
                    *out.entry(e.0.clone()).or_insert(0) += e.1 as i128;
                }
            }
            out
        }
        fn top(&self, n: usize, at: i64) -> Vec<(Vec<u8>, i64)> {
            self.top_in(n, at, self.window)
        }
        fn top_in(&self, n: usize, at: i64, w: i64) -> Vec<(Vec<u8>, i64)> {
            let mut v: Vec<(Vec<u8>, i64)> = self
                .counts_in(at, w)
                .into_iter()
                .filter(|(_, c)| *c != 0)
                .map(|(m, c)| (m, clamp_i64(c)))
                .collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(n);
            v
        }
    }

    fn member_name(rng: &mut StdRng, pool: usize) -> Vec<u8> {
        // Skewed popularity, binary-ish names with shared prefixes.
        let x: f64 = rng.gen();
        let i = ((x * x * x) * pool as f64) as usize;
        let mut v = format!("user:{:05}", i).into_bytes();
        if i.is_multiple_of(7) {
            v.push(0);
            v.push((i % 251) as u8);
        }
        if i.is_multiple_of(11) {
            v.truncate(3);
            v.extend_from_slice(&(i as u32).to_be_bytes());
        }
        v
    }

    /// Random events against the model, with reads checked at many times. `lead`: how many
    /// buckets the server's time may run ahead of the events (0: the server's time is never
    /// told); with it, buckets age out of the aggregate (by writes and by `upkeep`, the timer's
    /// call) while later events still land in them, as on a replica or a replayed AOF.
    fn run_model(
        seed: u64,
        budget: usize,
        window: u32,
        nbuckets: i64,
        nevents: usize,
        pool: usize,
    ) {
        run_model_ahead(seed, budget, window, nbuckets, nevents, pool, 0)
    }

    fn run_model_ahead(
        seed: u64,
        budget: usize,
        window: u32,
        nbuckets: i64,
        nevents: usize,
        pool: usize,
        lead: i64,
    ) {
        let bucket_ms = 1000;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut t = TopN::new(bucket_ms, window);
        t.set_retire_budget(budget);
        t.set_pack_min(1 + (seed % 5) as usize);
        let mut m = Model {
            bucket_ms,
            window: window as i64,
            clock: None,
            events: Vec::new(),
        };
        let mut now: i64 = rng.gen_range(0..5000);
        let end = nbuckets * bucket_ms;
        let step = (end / nevents as i64).max(1) * 2;
        let mut since_check = 0;
        let mut checks = 0;
        for ev in 0..nevents {
            if rng.gen_ratio(1, 2) {
                now += rng.gen_range(0..step);
            }
            if rng.gen_ratio(1, 3000) {
                now += (window as i64 + rng.gen_range(0..3)) * bucket_ms; // big jump
            }
            let at = if rng.gen_ratio(1, 12) {
                (now - rng.gen_range(0..(window as i64 + 3) * bucket_ms)).max(0)
            } else {
                now
            };
            if lead > 0 {
                t.observe_time(now + rng.gen_range(0..=lead * bucket_ms));
            }
            // Upkeep (aging with a lead, packing sealed buckets, retirement) interleaved with
            // the writes and reads, in slices of any size.
            if rng.gen_ratio(1, 8) {
                let work = rng.gen_range(1..4 * budget + 2);
                assert!(t.upkeep(work) <= work, "seed {seed}: upkeep over budget");
            }
            if rng.gen_ratio(1, 50) {
                check_invariants(&t);
            }
            let name = member_name(&mut rng, pool);
            let by = match rng.gen_range(0..20) {
                0..=2 => -rng.gen_range(1..4),
                3 => 0,
                _ => rng.gen_range(1..6),
            };
            let got = t.incr(&name, by, at);
            let want = m.incr(&name, by, at);
            assert_eq!(
                got,
                want,
                "seed {seed} event {ev}: incr({:?}, {by}, {at})",
                String::from_utf8_lossy(&name)
            );
            assert!(
                t.last_retire_work() <= budget,
                "seed {seed}: retirement budget exceeded"
            );
            since_check += 1;
            if since_check >= nevents / 40 || ev + 1 == nevents {
                since_check = 0;
                checks += 1;
                let c = m.clock.unwrap();
                let mut times = vec![
                    now,
                    at,
                    c * bucket_ms,
                    c * bucket_ms + bucket_ms - 1,
                    (c + 1) * bucket_ms,
                    (c + window as i64 / 2) * bucket_ms + 17,
                    (c + window as i64 - 1) * bucket_ms,
                    (c + window as i64) * bucket_ms,
                    i64::MAX / 2,
                    0,
                ];
                for _ in 0..4 {
                    times.push(
                        (c - rng.gen_range(0..window as i64 + 3)) * bucket_ms
                            + rng.gen_range(0..bucket_ms),
                    );
                }
                for &tm in &times {
                    for n in [1usize, 3, 10, 50, 100_000] {
                        let want = m.top(n, tm);
                        assert_eq!(
                            top_owned(&t, n, tm),
                            want,
                            "seed {seed} event {ev}: top({n}, {tm}) clock {c}"
                        );
                        if let Some(sp) = t.span(tm, window) {
                            let d: Vec<(Vec<u8>, i64)> = t
                                .top_direct(n, sp.i0, sp.i1)
                                .into_iter()
                                .map(|(m, c)| (m.to_vec(), c))
                                .collect();
                            assert_eq!(d, want, "seed {seed}: top_direct({n}, {tm})");
                            if let Some(rows) = t.top_through_totals(n, &t.fixes(&sp)) {
                                let d: Vec<(Vec<u8>, i64)> =
                                    rows.into_iter().map(|(m, c)| (m.to_vec(), c)).collect();
                                assert_eq!(d, want, "seed {seed}: top_through_totals({n}, {tm})");
                            }
                        } else {
                            assert!(want.is_empty());
                        }
                    }
                    let w2 = rng.gen_range(1..window + 3);
                    for n in [1usize, 10, 1000] {
                        let got: Vec<(Vec<u8>, i64)> = t
                            .top_in(n, tm, w2)
                            .into_iter()
                            .map(|(m, c)| (m.to_vec(), c))
                            .collect();
                        assert_eq!(
                            got,
                            m.top_in(n, tm, w2 as i64),
                            "seed {seed}: top_in({n}, {tm}, {w2})"
                        );
                    }
                    let counts2 = m.counts_in(tm, w2 as i64);
                    for _ in 0..10 {
                        let name = member_name(&mut rng, pool);
                        let want = clamp_i64(counts2.get(&name).copied().unwrap_or(0));
                        assert_eq!(
                            t.count_in(&name, tm, w2),
                            want,
                            "seed {seed}: count_in at {tm} w {w2}"
                        );
                    }
                    let counts = m.counts(tm);
                    for _ in 0..20 {
                        let name = member_name(&mut rng, pool);
                        let want = clamp_i64(counts.get(&name).copied().unwrap_or(0));
                        assert_eq!(t.count(&name, tm), want, "seed {seed}: count at {tm}");
                    }
                }
                if checks % 5 == 0 {
                    check_invariants(&t);
                    let d = TopN::decode(&t.encode()).expect("decode");
                    for &tm in &times {
                        assert_eq!(
                            top_owned(&d, 1000, tm),
                            m.top(1000, tm),
                            "seed {seed}: decoded"
                        );
                    }
                    let mut r = TopN::new(bucket_ms, window);
                    for (mm, by, at) in t.replay_events() {
                        r.incr(mm, by, at).unwrap();
                    }
                    for &tm in &times {
                        assert_eq!(
                            top_owned(&r, 1000, tm),
                            m.top(1000, tm),
                            "seed {seed}: replayed"
                        );
                    }
                }
            }
        }
        // Settle: retirement completes with writes in the current bucket (packing, with the
        // timer's upkeep).
        let c = m.clock.unwrap();
        let mut guard = 0;
        while !t.is_settled() {
            t.upkeep(64);
            t.incr(b"settle", 1, c * bucket_ms).unwrap();
            m.incr(b"settle", 1, c * bucket_ms).unwrap();
            guard += 1;
            assert!(guard < 10_000_000);
        }
        check_invariants(&t);
        let live: std::collections::HashSet<&Vec<u8>> = m
            .events
            .iter()
            .filter(|e| e.2 >= m.lo(c) && e.1 != 0)
            .map(|e| &e.0)
            .collect();
        // Members only in retired buckets are reclaimed (zero-count entries may keep a few).
        assert!(t.members() >= live.len());
        assert_eq!(
            top_owned(&t, usize::MAX, c * bucket_ms),
            m.top(usize::MAX, c * bucket_ms)
        );
        eprintln!(
            "seed {seed}: paths [plain, corrected, direct, bury, mid-growth retire, \
             frozen write, aged write, aged] = {:?}",
            PATHS.with(|p| p.get())
        );
    }

    #[test]
    fn model_small_budget() {
        for seed in 0..4 {
            run_model(seed, 3, 6, 20, 4000, 3000);
        }
    }

    #[test]
    fn model_default_budget() {
        for seed in 10..13 {
            run_model(seed, DEFAULT_RETIRE_BUDGET, 6, 20, 6000, 3000);
        }
    }

    #[test]
    fn model_window_one_and_few_members() {
        for seed in 20..24 {
            run_model(seed, 2, 1, 30, 3000, 30);
            run_model(seed, 5, 3, 30, 3000, 8);
        }
    }

    #[test]
    fn model_many_buckets() {
        run_model(30, 7, 50, 300, 4000, 300);
        run_model(31, 1, 40, 100, 3000, 2000);
    }

    #[test]
    fn model_server_time_ahead() {
        // Buckets age out of the aggregate (writes and timer upkeep) while events keep landing
        // in them, some in a bucket caught half-aged; reads at every time and LAST k.
        PATHS.with(|p| p.set([0; 10]));
        for seed in 40..44 {
            run_model_ahead(seed, 3, 6, 25, 4000, 2000, 8);
        }
        run_model_ahead(44, DEFAULT_RETIRE_BUDGET, 12, 40, 5000, 300, 3);
        run_model_ahead(45, 1, 1, 20, 2000, 30, 2);
        run_model_ahead(46, 7, 30, 120, 4000, 500, 40);
        let p = PATHS.with(|p| p.get());
        assert!(p[5] > 50, "writes into a half-aged bucket: {p:?}");
        assert!(p[6] > 500, "writes into aged buckets: {p:?}");
        assert!(p[7] > 40, "buckets aged: {p:?}");
        assert!(
            p[1] > 100 && p[2] > 100,
            "corrected and direct reads: {p:?}"
        );
        assert!(p[9] > 100, "packings done: {p:?}");
        assert!(p[8] > 100, "sums over packed copies: {p:?}");
    }

    #[test]
    fn model_random_seed() {
        let seed: u64 = rand::random();
        eprintln!("model_random_seed: seed {seed}");
        let window = 2 + (seed % 7) as u32;
        run_model_ahead(
            seed,
            1 + (seed % 50) as usize,
            window,
            25,
            4000,
            2000,
            (seed >> 8) as i64 % (window as i64 + 3),
        );
    }

    // ----- bounded retirement ---------------------------------------------------------------

    #[test]
    fn retirement_is_bounded_and_completes() {
        let mut t = TopN::new(1000, 2);
        t.set_retire_budget(64);
        for i in 0..100_000u32 {
            t.incr(&i.to_le_bytes(), 1, 0).unwrap();
        }
        t.incr(b"one", 1, 1000).unwrap();
        assert_eq!(t.members(), 100_001);
        // Bucket 2: bucket 0 falls out while bucket 1 stays.
        assert_eq!(t.incr(b"one", 1, 2000).unwrap(), 2);
        assert!(t.last_retire_work() <= 64 && t.last_retire_work() > 0);
        assert!(!t.is_settled());
        assert_eq!(t.top(3, 2000), vec![(&b"one"[..], 2)]);
        assert_eq!(t.count(&7u32.to_le_bytes(), 2000), 0);
        assert_eq!(t.count(&7u32.to_le_bytes(), 1000), 1 - 1); // bucket 0 is no longer live
        let mut calls = 1;
        while !t.is_settled() {
            t.incr(b"two", 1, 2000).unwrap();
            assert!(t.last_retire_work() <= 64);
            calls += 1;
        }
        // 100k entries plus empty cells at 1/8: a few thousand calls.
        assert!(
            calls > 100_000 / 64 && calls < 4 * 100_000 / 64,
            "calls {calls}"
        );
        assert_eq!(t.members(), 2);
        check_invariants(&t);

        // Whole-window jump: the state goes to the graveyard, freed piecewise.
        let mut t = TopN::new(1000, 2);
        t.set_retire_budget(64);
        for i in 0..100_000u32 {
            t.incr(&i.to_le_bytes(), 1, 0).unwrap();
        }
        t.incr(b"x", 1, 10_000).unwrap();
        assert!(t.last_retire_work() <= 64);
        assert_eq!(t.members(), 1);
        assert!(!t.is_settled());
        let mem_before = t.mem_usage();
        let mut calls = 1;
        while !t.is_settled() {
            t.incr(b"x", 1, 10_000).unwrap();
            assert!(t.last_retire_work() <= 64);
            calls += 1;
        }
        assert!(calls < 10_000, "calls {calls}");
        assert!(t.mem_usage() < mem_before / 10);
        check_invariants(&t);
    }

    #[test]
    fn mem_usage_and_free_effort_grow() {
        let mut t = TopN::new(1000, 4);
        let m0 = t.mem_usage();
        let f0 = t.free_effort();
        for i in 0..1000 {
            t.incr(format!("member-{i}").as_bytes(), 1, 0).unwrap();
        }
        assert!(t.mem_usage() > m0 + 1000 * 40);
        assert!(t.free_effort() > f0 + 1000);
    }

    // ----- timings (not asserted): cargo test --release -- --ignored --nocapture ---------------

    fn fill(buckets: i64, per: u32, overlap: bool) -> TopN {
        let mut t = TopN::new(H, 24);
        let mut rng = StdRng::seed_from_u64(1);
        let mut worst = std::time::Duration::ZERO;
        for b in 0..buckets {
            for i in 0..per {
                let id = if overlap { i } else { b as u32 * per + i };
                let name = format!("user:{:08}", id);
                let by = 1 + (rng.gen::<u32>() % 50) as i64 * (i.is_multiple_of(7)) as i64;
                let s = std::time::Instant::now();
                t.incr(name.as_bytes(), by, b * H + 1).unwrap();
                worst = worst.max(s.elapsed());
            }
        }
        eprintln!("fill: worst incr {worst:?}");
        t
    }

    fn time<F: FnMut() -> R, R>(label: &str, iters: u32, mut f: F) {
        let start = std::time::Instant::now();
        for _ in 0..iters {
            std::hint::black_box(f());
        }
        let per = start.elapsed() / iters;
        eprintln!("{label}: {per:?} per call");
    }

    #[test]
    #[ignore]
    fn bench() {
        for overlap in [true, false] {
            eprintln!(
                "--- 24 buckets x 50k entries, members {}",
                if overlap {
                    "shared (50k)"
                } else {
                    "disjoint (1.2M)"
                }
            );
            let t0 = std::time::Instant::now();
            let mut t = fill(24, 50_000, overlap);
            let entries = 24 * 50_000;
            eprintln!(
                "fill: {:?} ({:?}/incr); members {}; mem_usage {} MB = {} bytes/entry; free_effort {}",
                t0.elapsed(),
                t0.elapsed() / entries,
                t.members(),
                t.mem_usage() >> 20,
                t.mem_usage() / entries as usize,
                t.free_effort()
            );
            let at = 23 * H + 5;
            time("top(10) plain", 200, || t.top(10, at).len());
            time("top(100) plain", 200, || t.top(100, at).len());
            time("top(10) at clock-6h", 50, || t.top(10, at - 6 * H).len());
            time("top(10) at clock+6h", 50, || t.top(10, at + 6 * H).len());
            time("count", 100_000, || t.count(b"user:00000042", at));
            let mut i = 0u32;
            time("incr existing member, same bucket", 200_000, || {
                i = (i + 7919) % 50_000;
                t.incr(format!("user:{:08}", i).as_bytes(), 1, at).unwrap()
            });
            // Cross a bucket boundary: bucket 0 becomes stale.
            let at2 = 24 * H + 5;
            let s = std::time::Instant::now();
            t.incr(b"user:00000001", 1, at2).unwrap();
            eprintln!(
                "first incr after boundary: {:?} (retire work {})",
                s.elapsed(),
                t.last_retire_work()
            );
            time("top(10) with a pending stale bucket", 200, || {
                t.top(10, at2).len()
            });
            let mut worst = std::time::Duration::ZERO;
            let mut calls = 0;
            let s = std::time::Instant::now();
            while !t.is_settled() {
                i = (i + 7919) % 50_000;
                let name = format!("user:{:08}", i);
                let c0 = std::time::Instant::now();
                t.incr(name.as_bytes(), 1, at2).unwrap();
                worst = worst.max(c0.elapsed());
                calls += 1;
            }
            eprintln!(
                "retirement: {calls} incr calls, {:?} total, worst call {:?}",
                s.elapsed(),
                worst
            );
            time("top(10) settled", 200, || t.top(10, at2).len());
            time("top(10) at clock+12h, no writes since", 20, || {
                t.top(10, at2 + 12 * H).len()
            });
            let c = std::time::Instant::now();
            let cl = t.clone();
            eprintln!("clone: {:?}", c.elapsed());
            let e = std::time::Instant::now();
            let enc = t.encode();
            eprintln!("encode: {:?}, {} bytes", e.elapsed(), enc.len());
            let d = std::time::Instant::now();
            let dec = TopN::decode(&enc).unwrap();
            eprintln!("decode: {:?}", d.elapsed());
            let f = std::time::Instant::now();
            drop(dec);
            drop(cl);
            eprintln!("drop x2: {:?}", f.elapsed());
            // Whole window passes: a single write far ahead.
            let s = std::time::Instant::now();
            t.incr(b"x", 1, 100 * H).unwrap();
            eprintln!("incr after whole-window jump: {:?}", s.elapsed());
            let mut worst = std::time::Duration::ZERO;
            let mut calls = 0;
            while !t.is_settled() {
                let c0 = std::time::Instant::now();
                t.incr(b"x", 1, 100 * H).unwrap();
                worst = worst.max(c0.elapsed());
                calls += 1;
            }
            eprintln!("graveyard freed in {calls} calls, worst {:?}", worst);
        }
    }

    /// The bench's bucket-boundary scenario: the bucket leaving the window and the newest one
    /// hold 100k members each (half shared), 22 buckets of 1000 in between, every count 1.
    #[test]
    #[ignore]
    fn bench_boundary() {
        let mut t = TopN::new(H, 24);
        let name = |i: u64| format!("{}", 100_000_000 + i);
        for i in 0..100_000 {
            t.incr(name(i).as_bytes(), 1, 1000).unwrap();
        }
        for b in 1..23 {
            for i in 0..1000 {
                t.incr(name(i).as_bytes(), 1, b * H + 1000).unwrap();
            }
        }
        for i in 50_000..150_000 {
            t.incr(name(i).as_bytes(), 1, 23 * H + 1000).unwrap();
        }
        t.incr(name(7).as_bytes(), 1, 24 * H).unwrap();
        assert!(!t.is_settled());
        time(
            "boundary: top24(10) right after, stale bucket pending",
            50,
            || t.top_in(10, 24 * H + 5, 24).len(),
        );
        let sp = t.span(24 * H + 5, 24).unwrap();
        let fixes = t.fixes(&sp);
        time("boundary:   direct", 20, || {
            t.top_direct(10, sp.i0, sp.i1).len()
        });
        time("boundary:   through totals", 20, || {
            t.top_through_totals(10, &fixes).map(|r| r.len())
        });
        let mut k = 0;
        while !t.is_settled() {
            t.incr(name(k % 1000).as_bytes(), 1, 24 * H + 7).unwrap();
            k += 1;
        }
        time("boundary: top24(10) settled", 200, || {
            t.top_in(10, 24 * H + 5, 24).len()
        });
    }

    /// Worst case for corrected reads: popularity reverses half-way through the window, so the
    /// aggregate's order says nothing about the read window's. The issue's scenario: reads of
    /// LAST k, and the read at the server's time 18 buckets after the last write.
    #[test]
    #[ignore]
    fn bench_adverse() {
        let mut t = TopN::new(H, 24);
        let n = 50_000u32;
        for b in 0..24i64 {
            for i in 0..n {
                let rank = if b < 12 { i } else { n - 1 - i };
                t.incr(
                    format!("user:{:08}", i).as_bytes(),
                    1 + (n - rank) as i64 / 1000,
                    b * H + 1,
                )
                .unwrap();
            }
        }
        let c = 23 * H + 1;
        time("adverse: top(10) plain", 100, || t.top(10, c).len());
        for k in [1u32, 6, 12, 18] {
            time(&format!("adverse: top(10) LAST {k}"), 20, || {
                t.top_in(10, c, k).len()
            });
        }
        time("adverse: top(100) LAST 1", 20, || t.top_in(100, c, 1).len());
        for k in [1u32, 6, 12] {
            let sp = t.span(c, k).unwrap();
            time(&format!("adverse: top_direct LAST {k}"), 20, || {
                t.top_direct(10, sp.i0, sp.i1).len()
            });
            time(&format!("adverse: scan only LAST {k}"), 20, || {
                let mut acc = vec![0i64; t.m.nslots + 1];
                for b in t.buckets.range(sp.i0..sp.i1) {
                    b.add_into(&mut acc);
                }
                acc.len()
            });
        }
        time("adverse: count LAST 6", 10_000, || {
            t.count_in(b"user:00000042", c, 6)
        });
        time("adverse: top(10) at clock+1h (1 excluded)", 20, || {
            t.top(10, c + H).len()
        });
        time("adverse: top(10) at clock+12h (12 excluded)", 5, || {
            t.top(10, c + 12 * H).len()
        });
        time("adverse: top(10) at clock-12h (12 excluded)", 5, || {
            t.top(10, c - 12 * H).len()
        });
        time("adverse: top(10) at clock-20h (20 excluded)", 5, || {
            t.top(10, c - 20 * H).len()
        });
        // Idle: the server's time is 18 buckets past the newest bucket; upkeep (the timer's
        // calls, 128 units each) ages 18 buckets out of the aggregate.
        let idle = c + 18 * H;
        time("adverse: top(10) idle, before upkeep", 5, || {
            t.top(10, idle).len()
        });
        t.observe_time(idle);
        let mut worst = std::time::Duration::ZERO;
        let mut calls = 0;
        let s = std::time::Instant::now();
        while t.upkeep(128) == 128 {
            calls += 1;
            let c0 = std::time::Instant::now();
            t.upkeep(128);
            worst = worst.max(c0.elapsed());
        }
        eprintln!(
            "adverse: upkeep of 18 buckets: {:?} in {} calls of 128 units, slowest call {:?}",
            s.elapsed(),
            calls * 2,
            worst
        );
        assert!(t.is_settled());
        time("adverse: top(10) idle, after upkeep", 200, || {
            t.top(10, idle).len()
        });
        // The next data bucket leaves the window: reads while it is being aged.
        t.observe_time(idle + H);
        let mut done = 0;
        for pct in [0usize, 10, 50, 90] {
            let goal = n as usize * pct / 100;
            done += t.upkeep((goal - done).max(1));
            time(
                &format!("adverse: top(10) idle, a bucket {pct}% aged"),
                50,
                || t.top(10, idle + H).len(),
            );
            let sp = t.span(idle + H, 24).unwrap();
            let fixes = t.fixes(&sp);
            time(
                &format!("adverse:   through totals ({} fixes)", fixes.len()),
                50,
                || t.top_through_totals(10, &fixes).map(|r| r.len()),
            );
        }
        while t.upkeep(128) == 128 {}
        time("adverse: top(10) LAST 18 idle", 50, || {
            t.top_in(10, idle + H, 18).len()
        });
        time("adverse: top(10) LAST 1 idle", 200, || {
            t.top_in(10, idle, 1).len()
        });
        time(
            "adverse: top(10) at the last write, after aging (18 added)",
            5,
            || t.top(10, c).len(),
        );
        time(
            "adverse: top(10) LAST 6 at the last write, after aging",
            20,
            || t.top_in(10, c, 6).len(),
        );
        time(
            "adverse: top(10) LAST 12 at the last write, after aging",
            20,
            || t.top_in(10, c, 12).len(),
        );
    }
}
