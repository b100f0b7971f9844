//! One bucket: an open-addressing map `u32 id -> i64 count`, linear probing, no deletion.
//! Capacity grows by 1.5x up to a load of 0.8, and growth is incremental (like Redis' rehash):
//! the previous table is moved into the new one a few cells per write, lookups probe both.
//! Each bucket hashes ids with its own seed, so the order in which one bucket hands out ids
//! (retirement walks its cells) never clusters another. Also the branch-free scans that sums
//! are made of.

use super::hash::{mix, reduce, GOLDEN};
use super::packed::{Acc, Packed};
use super::paths::note_path;
use crate::topn::storage::{dispose, dispose_value, Cells};

/// A cell that holds no member id.
pub(super) const EMPTY: u32 = u32::MAX;

/// An old-table cell whose entry has moved to the current table. Empty and moved cells hold
/// the count 0 (scans add them to a dummy slot without looking).
pub(super) const MOVED: u32 = u32::MAX - 1;
/// Old-table cells migrated per write to the bucket.
pub(super) const BUCKET_MIGRATE_STEP: usize = 8;

#[derive(Clone)]
pub(super) struct Table {
    pub(super) keys: Cells<u32>,
    pub(super) vals: Cells<i64>,
}

impl Default for Table {
    fn default() -> Table {
        Table::with_cap(0)
    }
}

impl Table {
    pub(super) fn with_cap(cap: usize) -> Table {
        Table {
            keys: Cells::new(cap, EMPTY),
            vals: Cells::new(cap, 0),
        }
    }

    #[inline]
    pub(super) fn cap(&self) -> usize {
        self.keys.len()
    }

    #[inline]
    pub(super) fn probe(&self, id: u32, seed: u64) -> Option<usize> {
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
    pub(super) fn place(&mut self, id: u32, v: i64, seed: u64) -> usize {
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

    pub(super) fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes() + self.vals.heap_bytes()
    }
}

/// A bucket's entries. Cells are numbered across both tables: `[0, old cap)` are the old
/// table's, then the current table's. Numbers stay valid until the next `entry` call.
///
/// A bucket whose cells are being walked (see `Full::is_frozen`) takes no new cells: a write
/// of a member it does not hold then goes to `extra`, a bucket of its own that is never part of
/// the running aggregate. A member is in the table or in `extra`, never in both.
#[derive(Clone)]
pub(super) struct Bucket {
    pub(super) idx: i64,
    pub(super) cur: Table,
    /// The previous table while growth is in progress (boxed: most buckets have none).
    pub(super) old: Option<Box<OldTable>>,
    /// Entries in both tables (not counting `extra`).
    pub(super) len: usize,
    /// Lower bound of every count this bucket holds, `extra` included (min over all values
    /// ever stored, and 0).
    pub(super) min_val: i64,
    /// Upper bound of every count this bucket holds, `extra` included (max over all values
    /// ever stored, and 0).
    pub(super) max_val: i64,
    pub(super) seed: u64,
    /// Writes that arrived while the table was frozen (boxed: almost every bucket has none).
    pub(super) extra: Option<Box<Bucket>>,
    /// The table's entries packed for sums (`packed.rs`), while no write changed them.
    pub(super) packed: Option<Box<Packed>>,
    /// Bumped by every change of the table (a count, a new cell, a migration step): a packing
    /// in progress restarts when it moved.
    pub(super) generation: u64,
}

#[derive(Clone)]
pub(super) struct OldTable {
    pub(super) t: Table,
    /// Cells below this have been moved.
    pub(super) pos: usize,
}

impl Bucket {
    pub(super) fn new(idx: i64) -> Bucket {
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
    pub(super) fn old_cap(&self) -> usize {
        self.old.as_ref().map_or(0, |o| o.t.cap())
    }

    /// Number of cells (both tables).
    #[inline]
    pub(super) fn cells(&self) -> usize {
        self.old_cap() + self.cur.cap()
    }

    /// The id in a cell (`EMPTY` or `MOVED` for none) and its count.
    #[inline]
    pub(super) fn cell(&self, c: usize) -> (u32, i64) {
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
    pub(super) fn set_val(&mut self, c: usize, v: i64) {
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
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        if let Some(p) = self.cur.probe(id, self.seed) {
            return Some(self.old_cap() + p);
        }
        self.old.as_ref().and_then(|o| o.t.probe(id, self.seed))
    }

    /// The count of `id` in the table (0 if absent).
    #[inline]
    pub(super) fn table_get(&self, id: u32) -> i64 {
        match self.find(id) {
            Some(c) => self.cell(c).1,
            None => 0,
        }
    }

    /// The count of `id` in `extra` (0 if absent or no `extra`).
    #[inline]
    pub(super) fn extra_get(&self, id: u32) -> i64 {
        self.extra.as_ref().map_or(0, |x| x.table_get(id))
    }

    /// The count of `id` in this bucket.
    #[inline]
    pub(super) fn get(&self, id: u32) -> i64 {
        self.table_get(id) + self.extra_get(id)
    }

    /// Entries in the table and in `extra`.
    #[inline]
    pub(super) fn entries(&self) -> usize {
        self.len + self.extra.as_ref().map_or(0, |x| x.len)
    }

    /// Moves up to `cells` old-table cells into the current table.
    #[inline]
    pub(super) fn migrate(&mut self, cells: usize) {
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
    pub(super) fn entry(&mut self, id: u32) -> (usize, bool) {
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
    #[inline]
    pub(super) fn note(&mut self, v: i64) -> bool {
        let first_negative = v < 0 && self.min_val >= 0;
        self.min_val = self.min_val.min(v);
        self.max_val = self.max_val.max(v);
        first_negative
    }

    /// Stores a count in a table cell; true if this made the bucket hold a negative count for
    /// the first time.
    #[inline]
    pub(super) fn set(&mut self, c: usize, v: i64) -> bool {
        self.set_val(c, v);
        self.note(v)
    }

    /// The table's entries.
    #[inline]
    pub(super) fn table_iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        (0..self.cells())
            .map(|c| self.cell(c))
            .filter(|(k, _)| *k != EMPTY && *k != MOVED)
    }

    /// Every entry, table then `extra` (which has no `extra` of its own).
    #[inline]
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.table_iter()
            .chain(self.extra.iter().flat_map(|x| x.table_iter()))
    }

    /// Adds (subtracts) whole buckets into `acc[id]`: each `(bucket, negate, with_extra)` its
    /// table, and its `extra` when asked. The packed copies go together
    /// (`Packed::scan_many_into`), the other tables cell by cell. True on overflow.
    pub(super) fn sum_into<'a, A: Acc>(
        scans: impl Iterator<Item = (&'a Bucket, bool, bool)>,
        acc: &mut [A],
    ) -> bool {
        let mut overflow = false;
        let mut copies: Vec<(&Packed, bool)> = Vec::new();
        for (b, negate, with_extra) in scans {
            match &b.packed {
                Some(p) => {
                    note_path(8);
                    copies.push((p, negate));
                }
                None => overflow |= b.scan_cells(0, usize::MAX, negate, acc),
            }
            if with_extra {
                overflow |= b.extra_into(negate, acc);
            }
        }
        overflow | Packed::scan_many_into(&copies, acc)
    }

    /// Adds (subtracts with `negate`) the table cells numbered `[lo, hi)` into `acc[id]`;
    /// see `table_scan`.
    #[inline]
    pub(super) fn scan_cells<A: Acc>(
        &self,
        lo: usize,
        hi: usize,
        negate: bool,
        acc: &mut [A],
    ) -> bool {
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
    #[inline]
    pub(super) fn extra_into<A: Acc>(&self, negate: bool, acc: &mut [A]) -> bool {
        self.extra
            .as_ref()
            .is_some_and(|x| x.scan_cells(0, usize::MAX, negate, acc))
    }

    /// Calls `f(id, count)` for every entry, table then `extra`.
    #[inline]
    pub(super) fn for_each(&self, f: &mut impl FnMut(u32, i64)) {
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

    /// What cell numbers depend on (the tables' sizes and the migration's progress, `extra`'s
    /// too): while it stays the same, every entry keeps its cell (a new entry takes an empty
    /// one). A member moved by a write from the old table to the current one is in a later
    /// cell.
    pub(super) fn layout(&self) -> [usize; 6] {
        let own = |b: &Bucket| {
            [
                b.old_cap(),
                b.old.as_ref().map_or(0, |o| o.pos),
                b.cur.cap(),
            ]
        };
        let [a, b, c] = own(self);
        let [d, e, f] = self.extra.as_deref().map_or([0; 3], own);
        [a, b, c, d, e, f]
    }

    /// Cell `pos` of the table (`[0, cells)`) or of `extra` (from `cells` on): id and count.
    #[inline]
    pub(super) fn any_cell(&self, pos: usize) -> (u32, i64) {
        let cells = self.cells();
        match &self.extra {
            Some(x) if pos >= cells => x.cell(pos - cells),
            _ => self.cell(pos),
        }
    }

    /// `(count, cell)` of every cell of the table and of `extra` (numbered as in `any_cell`);
    /// empty and moved cells count 0. Walks only the written runs of the counts.
    #[inline]
    pub(super) fn cell_counts(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
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
    #[inline]
    pub(super) fn scan_cost(&self) -> usize {
        self.cells() + self.extra.as_ref().map_or(0, |x| x.cells())
    }

    /// The model's cost of summing every entry (table and `extra`): a packed entry costs half
    /// a scanned cell.
    #[inline]
    pub(super) fn sum_cost(&self) -> usize {
        match &self.packed {
            Some(p) => p.len() / 2 + self.extra.as_ref().map_or(0, |x| x.cells()),
            None => self.scan_cost(),
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
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
    pub(super) fn drop_cost(&self) -> usize {
        1 + self.cells() / 1024 + self.extra.as_ref().map_or(0, |x| x.drop_cost())
    }
}

/// Adds (or, with `negate`, subtracts) the counts of table cells `[lo, hi)` into `acc[id]`
/// (wrapping); true if an addition overflowed. `acc` has one slot more than any id: empty and
/// moved cells add 0 there. Branch-free on purpose: whether a cell is occupied is a coin toss at
/// the tables' load, and a branch on it costs more than the whole scan.
#[inline]
pub(super) fn table_scan<A: Acc>(
    t: &Table,
    lo: usize,
    hi: usize,
    negate: bool,
    acc: &mut [A],
) -> bool {
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
            apply_run::<true, A>(keys, v, acc, dummy)
        } else {
            apply_run::<false, A>(keys, v, acc, dummy)
        };
    }
    overflow
}

/// `table_scan`'s loop over one run, adding or (`NEGATE`) subtracting; each
/// instance kept apart so its state stays in registers.
#[inline(never)]
pub(super) fn apply_run<const NEGATE: bool, A: Acc>(
    keys: &[u32],
    vals: &[i64],
    acc: &mut [A],
    dummy: u32,
) -> bool {
    let mut overflow = false;
    for (k, x) in keys.iter().zip(vals) {
        // Empty and moved cells hold 0: only where it goes depends on the key.
        let i = if *k < MOVED { *k } else { dummy };
        let a = &mut acc[i as usize];
        let (v, o) = a.apply::<NEGATE>(*x);
        *a = v;
        overflow |= o;
    }
    overflow
}

/// `(count, base + cell)` of every cell of a table whose count was written (the others hold 0).
#[inline]
pub(super) fn table_counts(t: &Table, base: usize) -> impl Iterator<Item = (i64, u32)> + '_ {
    t.vals.init_runs().flat_map(move |(lo, vals)| {
        vals.iter()
            .enumerate()
            .map(move |(i, v)| (*v, (base + lo + i) as u32))
    })
}

/// Calls `f(id, count)` for the occupied cells of a table, walking initialized runs.
#[inline]
pub(super) fn table_for_each(t: &Table, f: &mut impl FnMut(u32, i64)) {
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
