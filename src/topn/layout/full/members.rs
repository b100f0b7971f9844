//! The members of a key: interned names by id (in `storage::NameTable`, which also keeps the
//! running sums' totals and order indexes, whose keys point at the names), how many entries of
//! the stored buckets refer to each (a member is freed with its last), and the lookup by name
//! (`tuples::table::Table`, hashed with the process's hasher). Pure Rust, no FFI.

use std::hash::{BuildHasher, Hasher};

use crate::topn::storage::{dispose_value, NameTable};
use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::table::{process_hasher, Table};

/// A member's data besides its name (kept in its `NameTable` slot).
#[derive(Clone, Copy)]
pub(super) struct Meta {
    /// Entries of the stored buckets that hold the member.
    pub(super) refs: u32,
    /// Its name's hash, so the lookup table moves it without reading the name.
    hash: u32,
}

/// Estimated heap bytes per interned name besides its bytes (8-byte header, allocator rounding).
const NAME_OVERHEAD: usize = 8 + 8;
/// Estimated heap bytes per order-index entry (16-byte key plus its share of B-tree nodes).
pub(super) const INDEX_BYTES_PER_KEY: usize = 36;

pub(super) struct Members {
    pub(super) names: NameTable<Meta>,
    lookup: Table<u32>,
    /// Ids of freed slots, reused first (in fixed chunks: a free never copies the others).
    free_ids: Chunked<u32>,
    /// Live members.
    pub(super) live: usize,
    name_bytes: usize,
}

/// The lookup table's hash of a member hashed `hash`.
#[inline]
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Clone for Members {
    /// The names (the same ids) and refs, with no sum counted nor indexed: the sums are derived,
    /// and a copy rebuilds them (`Full::built`).
    fn clone(&self) -> Members {
        Members {
            names: self.names.copy_names(),
            lookup: self.lookup.clone(),
            free_ids: self.free_ids.clone(),
            live: self.live,
            name_bytes: self.name_bytes,
        }
    }
}

impl Members {
    /// No members; names kept with `indexed` running sums with an order index and the clock's
    /// sum (totals only).
    pub(super) fn new(indexed: usize) -> Members {
        Members {
            names: NameTable::new(indexed, 1),
            lookup: Table::new(),
            free_ids: Chunked::default(),
            live: 0,
            name_bytes: 0,
        }
    }

    /// Slots, live or free: ids are below it.
    pub(super) fn slots(&self) -> usize {
        self.names.slots()
    }

    #[inline]
    pub(super) fn name(&self, id: u32) -> &[u8] {
        self.names.name(id)
    }

    #[inline]
    pub(super) fn refs(&self, id: u32) -> u32 {
        self.names.data(id).refs
    }

    #[inline]
    pub(super) fn add_ref(&mut self, id: u32) {
        self.names.data_mut(id).refs += 1;
    }

    /// Drops one ref of `id`; true when it was the last (the caller then frees the member).
    #[inline]
    pub(super) fn drop_ref(&mut self, id: u32) -> bool {
        let meta = self.names.data_mut(id);
        meta.refs -= 1;
        meta.refs == 0
    }

    #[inline]
    pub(super) fn hash(name: &[u8]) -> u32 {
        let mut h = process_hasher().build_hasher();
        h.write(name);
        (h.finish() >> 32) as u32
    }

    #[inline]
    pub(super) fn find(&self, name: &[u8], hash: u32) -> Option<u32> {
        let names = &self.names;
        let same = |id: &u32| names.data(*id).hash == hash && names.name(*id) == name;
        self.lookup.find(spread(hash), same).copied()
    }

    /// A new member (no refs, totals 0: in no order index), in the lookup table.
    pub(super) fn intern(&mut self, name: &[u8], hash: u32) -> u32 {
        let meta = Meta { refs: 0, hash };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.names.refill(id, name, meta);
                id
            }
            None => {
                assert!(
                    self.names.slots() < u32::MAX as usize,
                    "too many TOPN members"
                );
                self.names.push(name, meta)
            }
        };
        let names = &self.names;
        (self.lookup).insert_unique(spread(hash), id, |id| spread(names.data(*id).hash));
        self.live += 1;
        self.name_bytes += name.len();
        id
    }

    /// Frees member `id` (out of the lookup and every index; its id reused later).
    pub(super) fn free(&mut self, id: u32) {
        let hash = self.names.data(id).hash;
        let names = &self.names;
        let rehash = |id: &u32| spread(names.data(*id).hash);
        self.lookup.remove(spread(hash), |x| *x == id, rehash);
        self.name_bytes -= self.names.free(id);
        self.free_ids.push(id);
        self.live -= 1;
    }

    /// Live member ids (ascending).
    pub(super) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.names.ids()
    }

    /// Work units of an order-index operation (an insertion, removal or repositioning), against
    /// 1 a member visited: a search whose comparisons of tied totals read names all along, so
    /// about its depth (1-5 us on a key of 200,000 members: 10 units). Slices of upkeep charge
    /// them, so that a slice is bounded in time whatever the number of views.
    #[inline]
    pub(super) fn index_op_cost(&self) -> usize {
        1 + (usize::BITS - self.live.leading_zeros()) as usize / 2
    }

    /// Heap bytes of the names, slots and lookup (the sums' totals and indexes are counted with
    /// the sums: [`Members::sums_heap_bytes`]).
    pub(super) fn heap_bytes(&self) -> usize {
        self.names.slot_heap_bytes()
            + self.free_ids.heap_bytes()
            + self.live * NAME_OVERHEAD
            + self.name_bytes
            + self.lookup.allocation_size()
    }

    /// Heap bytes of the running sums' totals and order indexes.
    pub(super) fn sums_heap_bytes(&self) -> usize {
        let (keys, totals) = self.names.sum_sizes();
        keys * INDEX_BYTES_PER_KEY + totals * 8
    }

    pub(super) fn effort(&self) -> usize {
        self.live + self.names.sum_sizes().0 / 8 + self.names.chunk_count() + 3
    }

    /// Frees up to `budget` items (a graveyard's members); returns the work done.
    pub(super) fn free_step(&mut self, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            done += 1;
            if self.names.index_pop_last() {
                continue;
            }
            if self.lookup.take_shard().is_some() {
                continue;
            }
            if !self.names.pop_step() {
                let ids = std::mem::take(&mut self.free_ids);
                let bytes = ids.heap_bytes();
                dispose_value(ids, bytes);
                self.names.release();
                (self.live, self.name_bytes) = (0, 0);
                break;
            }
        }
        done
    }

    /// Where the first freed id waiting to be reused is kept, if any.
    #[cfg(test)]
    pub(super) fn first_free_id(&self) -> Option<*const u32> {
        self.free_ids.get(0).map(|id| id as *const u32)
    }

    pub(super) fn is_freed(&self) -> bool {
        self.names.is_freed() && self.lookup.is_empty() && self.free_ids.heap_bytes() == 0
    }

    /// The free ids and the lookup table, then the name table.
    pub(super) fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.free_ids.defrag(pass, |_, _| {});
        self.lookup.defrag(pass);
        self.names.defrag(pass);
    }
}
