//! A bucket's entries while they take writes: `(member id, count)` in the order they came, each
//! at a position that never moves (a walk over them stays valid while writes go on), found by id
//! through an index (`tuples::table::IdMap`). Both grow a bounded step at a time: the entries in
//! fixed chunks, the index by linear hashing. Pure Rust, no FFI.

use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::table::IdMap;

/// A member id and its count, 12 bytes (no padding).
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(super) struct Entry {
    pub(super) count: i64,
    pub(super) id: u32,
}

#[derive(Clone, Default)]
pub(super) struct Entries {
    list: Chunked<Entry>,
    /// Each id's position.
    index: IdMap<u32>,
}

impl Entries {
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// The position of `id`'s entry.
    #[inline]
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.index.get(id).map(|&pos| pos as usize)
    }

    /// The id and count at `pos`.
    #[inline]
    pub(super) fn at(&self, pos: usize) -> (u32, i64) {
        let e = self.list.get(pos).copied().expect("an entry's position");
        (e.id, e.count)
    }

    /// Adds `delta` to `id`'s count, a new entry at the end when it has none; returns its
    /// position and count after.
    #[inline]
    pub(super) fn add(&mut self, id: u32, delta: i64) -> (usize, i64) {
        match self.find(id) {
            Some(pos) => (pos, self.add_at(pos, delta)),
            None => {
                let pos = self.list.len();
                self.index.insert(id, pos as u32);
                self.list.push(Entry { count: delta, id });
                (pos, delta)
            }
        }
    }

    /// Adds `delta` to the count at `pos`; returns the count after.
    #[inline]
    pub(super) fn add_at(&mut self, pos: usize, delta: i64) -> i64 {
        let e = self.list.get_mut(pos).expect("an entry's position");
        e.count = e.count.wrapping_add(delta);
        e.count
    }

    /// The entries chunk by chunk, in position order.
    pub(super) fn slices(&self) -> impl Iterator<Item = &[Entry]> + '_ {
        self.list.slices()
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.list.heap_bytes() + self.index.allocation_size()
    }

    pub(super) fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.list.defrag(pass, |_, _| {});
        self.index.defrag(pass, |_, _| {});
    }
}
