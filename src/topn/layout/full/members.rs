//! The member table: interned names, each member's running total, the order index over the
//! totals (in `storage::NameTable`), and the lookup table by name hash (linear probing,
//! backward-shift deletion, grown by incremental migration).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use super::hash::{mix, GOLDEN};
use crate::topn::select::clamp_i64;
use crate::topn::storage::{dispose, dispose_value, Cells, NameTable};

/// A member's data besides its name and total (kept in its `NameTable` slot).
#[derive(Clone, Copy)]
pub(super) struct Meta {
    /// Number of stored buckets holding an entry for this member.
    pub(super) refs: u32,
    pub(super) hash: u32,
}

/// Lookup cells: `hash << 32 | id`; an empty cell has id `EMPTY`, a deleted one (only in the
/// table being migrated away from) has id `TOMB`.
pub(super) const EMPTY_CELL: u64 = u64::MAX;
pub(super) const TOMB: u32 = u32::MAX - 1;
pub(super) const TOMB_CELL: u64 = TOMB as u64;
/// Lookup cells migrated from the old table per write.
pub(super) const MIGRATE_STEP: usize = 16;

#[inline]
pub(super) fn cell_id(c: u64) -> u32 {
    c as u32
}

#[inline]
pub(super) fn cell_hash(c: u64) -> u32 {
    (c >> 32) as u32
}

#[inline]
pub(super) fn cell_home(hash: u32, cap: usize) -> usize {
    ((hash as u64 * cap as u64) >> 32) as usize
}

/// The member table.
pub(super) struct Members {
    /// Slots (`id -> name, total, refs, hash`) and the order index.
    pub(super) names: NameTable<Meta>,
    pub(super) nslots: usize,
    pub(super) free_ids: Vec<u32>,
    pub(super) live: usize,
    pub(super) name_bytes: usize,
    /// Open-addressing lookup by name hash (linear probing, backward-shift deletion).
    pub(super) table: Cells<u64>,
    /// The previous table while it is migrated into `table` a few cells per write.
    pub(super) old: Cells<u64>,
    pub(super) old_pos: usize,
    pub(super) hasher: RandomState,
    /// Exact totals that do not fit an i64 (the slot and the index hold the clamped value).
    pub(super) big: IdMap<i128>,
    /// The same for clock totals.
    pub(super) big_clock: IdMap<i128>,
    /// The same for each view's totals.
    pub(super) big_views: Vec<IdMap<i128>>,
}

impl Members {
    pub(super) fn new() -> Members {
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
            big_clock: IdMap::default(),
            big_views: Vec::new(),
        }
    }

    /// Gives an empty table `n` views' totals and indexes.
    pub(super) fn add_views(&mut self, n: usize) {
        self.names.add_views(n);
        self.big_views = vec![IdMap::default(); n];
    }

    /// The member's total in view `v`, exact.
    #[inline]
    pub(super) fn view_total(&self, v: usize, id: u32) -> i128 {
        exact(self.names.view_total(v, id), &self.big_views[v], id)
    }

    #[inline]
    pub(super) fn set_view_total(&mut self, v: usize, id: u32, total: i128) {
        let clamped = clamp_keeping(total, &mut self.big_views[v], id);
        #[cfg(test)]
        count_index_ops(usize::from(self.names.view_total(v, id) != clamped));
        self.names.set_view_total(v, id, clamped);
    }

    #[inline]
    pub(super) fn meta(&self, id: u32) -> &Meta {
        &self.names.slot(id).data
    }

    #[inline]
    pub(super) fn meta_mut(&mut self, id: u32) -> &mut Meta {
        self.names.data_mut(id)
    }

    #[inline]
    pub(super) fn name(&self, id: u32) -> &[u8] {
        self.names.name(id)
    }

    /// Work units of an order-index operation (an insertion, removal or repositioning), against
    /// 1 a member visited: a search whose comparisons of tied totals read names all along, so
    /// about its depth (1-5 us on a key of 200,000 members: 10 units). Retirement charges them,
    /// so that a slice of a budget is bounded in time whatever the number of views.
    #[inline]
    pub(super) fn index_op_cost(&self) -> usize {
        1 + (usize::BITS - self.live.leading_zeros()) as usize / 2
    }

    /// Order indexes a member is in: the aggregate's, each view's, the clock index if built.
    #[inline]
    pub(super) fn indexes(&self) -> usize {
        1 + self.big_views.len() + usize::from(self.names.has_clock_index())
    }

    /// The member's running total, exact.
    #[inline]
    pub(super) fn total(&self, id: u32) -> i128 {
        exact(self.names.slot(id).total(), &self.big, id)
    }

    /// The member's clock total (its count over every stored bucket), exact.
    #[inline]
    pub(super) fn clock_total(&self, id: u32) -> i128 {
        exact(self.names.slot(id).clock_total(), &self.big_clock, id)
    }

    #[inline]
    pub(super) fn hash_name(&self, name: &[u8]) -> u32 {
        let mut h = self.hasher.build_hasher();
        h.write(name);
        (h.finish() >> 32) as u32
    }

    #[inline]
    pub(super) fn probe(&self, table: &Cells<u64>, name: &[u8], hash: u32) -> Option<u32> {
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

    #[inline]
    pub(super) fn find(&self, name: &[u8], hash: u32) -> Option<u32> {
        self.probe(&self.table, name, hash)
            .or_else(|| self.probe(&self.old, name, hash))
    }

    #[inline]
    pub(super) fn place(table: &mut Cells<u64>, cell: u64) {
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
    #[inline]
    pub(super) fn migrate(&mut self, cells: usize) {
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

    #[inline]
    pub(super) fn table_insert(&mut self, id: u32, hash: u32) {
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

    pub(super) fn table_remove(&mut self, id: u32, hash: u32) {
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
    pub(super) fn reserve(&mut self, n: usize) {
        if self.live == 0 && self.old.len() == 0 {
            self.table = Cells::new((n * 5 / 4 + 8).max(self.table.len()), EMPTY_CELL);
        }
    }

    /// Creates a member with total 0 and no refs, in the lookup table but not in the index.
    pub(super) fn intern_raw(&mut self, name: &[u8], hash: u32) -> u32 {
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

    #[inline]
    pub(super) fn intern(&mut self, name: &[u8], hash: u32) -> u32 {
        let id = self.intern_raw(name, hash);
        self.names.index_insert(id);
        #[cfg(test)]
        count_index_ops(self.indexes());
        id
    }

    #[inline]
    pub(super) fn set_total(&mut self, id: u32, total: i128) {
        let clamped = clamp_keeping(total, &mut self.big, id);
        #[cfg(test)]
        count_index_ops(usize::from(self.names.slot(id).total() != clamped));
        self.names.set_total(id, clamped);
    }

    #[inline]
    pub(super) fn set_clock_total(&mut self, id: u32, total: i128) {
        let clamped = clamp_keeping(total, &mut self.big_clock, id);
        #[cfg(test)]
        count_index_ops(usize::from(
            self.names.has_clock_index() && self.names.slot(id).clock_total() != clamped,
        ));
        self.names.set_clock_total(id, clamped);
    }

    /// Drops one ref of `id`; frees the member when none is left.
    #[inline]
    pub(super) fn release(&mut self, id: u32) {
        let s = self.meta_mut(id);
        s.refs -= 1;
        if s.refs == 0 {
            self.free(id);
        }
    }

    pub(super) fn free(&mut self, id: u32) {
        if !self.big.is_empty() {
            self.big.remove(&id);
        }
        if !self.big_clock.is_empty() {
            self.big_clock.remove(&id);
        }
        for big in &mut self.big_views {
            big.remove(&id);
        }
        #[cfg(test)]
        count_index_ops(self.indexes());
        let hash = self.meta(id).hash;
        self.table_remove(id, hash);
        self.name_bytes -= self.names.free(id);
        self.meta_mut(id).refs = 0;
        self.free_ids.push(id);
        self.live -= 1;
    }

    /// Live member ids (ascending).
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.names.ids()
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.names.slot_heap_bytes()
            + self.free_ids.capacity() * 4
            + self.live * NAME_OVERHEAD
            + self.name_bytes
            + self.table.heap_bytes()
            + self.old.heap_bytes()
            + (self.names.index_len() + self.names.clock_index_len()) * INDEX_BYTES_PER_KEY
            + (self.big.capacity() + self.big_clock.capacity()) * 32
            + self.views_heap_bytes()
    }

    /// Heap bytes of the views' totals and indexes.
    pub(super) fn views_heap_bytes(&self) -> usize {
        let (keys, totals) = self.names.view_sizes();
        keys * INDEX_BYTES_PER_KEY
            + totals * 8
            + self
                .big_views
                .iter()
                .map(|b| b.capacity() * 32)
                .sum::<usize>()
    }

    pub(super) fn effort(&self) -> usize {
        self.live
            + (self.names.index_len() + self.names.clock_index_len()) / 8
            + self.names.chunk_count()
            + 3
    }

    /// Frees up to `budget` items (graveyard use); returns the work done.
    pub(super) fn free_step(&mut self, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            done += 1;
            if self.names.index_pop_last() {
                continue;
            }
            if !self.names.pop_step() {
                self.live = 0;
                self.name_bytes = 0;
                dispose(std::mem::replace(
                    &mut self.table,
                    Cells::new(0, EMPTY_CELL),
                ));
                dispose(std::mem::replace(&mut self.old, Cells::new(0, EMPTY_CELL)));
                let ids = std::mem::take(&mut self.free_ids);
                let bytes = ids.capacity() * 4;
                dispose_value(ids, bytes);
                self.big = IdMap::default();
                self.big_clock = IdMap::default();
                self.big_views = Vec::new();
                self.names.release();
                break;
            }
        }
        done
    }

    pub(super) fn is_freed(&self) -> bool {
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
            big_clock: self.big_clock.clone(),
            big_views: self.big_views.clone(),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Order-index operations (B-tree searches) done on this thread, for tests that bound them
    /// per call.
    pub(super) static INDEX_OPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn count_index_ops(n: usize) {
    INDEX_OPS.with(|c| c.set(c.get() + n));
}

/// A total stored clamped to i64, made exact again from the side table of totals beyond i64.
#[inline]
fn exact(clamped: i64, big: &IdMap<i128>, id: u32) -> i128 {
    if (clamped == i64::MAX || clamped == i64::MIN) && !big.is_empty() {
        if let Some(&b) = big.get(&id) {
            return b;
        }
    }
    clamped as i128
}

/// `total` clamped to i64, kept exact in `big` when it does not fit (and dropped from it when
/// it does).
#[inline]
fn clamp_keeping(total: i128, big: &mut IdMap<i128>, id: u32) -> i64 {
    let clamped = clamp_i64(total);
    if clamped as i128 != total {
        big.insert(id, total);
    } else if !big.is_empty() {
        big.remove(&id);
    }
    clamped
}

/// Estimated heap bytes per order-index entry (16-byte key plus its share of B-tree nodes).
pub(super) const INDEX_BYTES_PER_KEY: usize = 36;
/// Estimated heap bytes per interned name besides its bytes (8-byte header, allocator rounding).
pub(super) const NAME_OVERHEAD: usize = 8 + 8;

#[derive(Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

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

pub(super) type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;
