//! Active defrag of a TOPN (`tuples::defrag`): every heap block the structure owns, offered in
//! bounded units of work. The member names are the delicate part (the order indexes point into
//! them): `storage::NameTable::defrag` moves them a run at a time, re-pointing their keys in
//! the same unit. Everything else is owned outright and holds positions, never pointers, so a
//! move is safe at any point of an incremental job (a table migration, a packing, a clock
//! index being built, a graveyard being freed): the job's positions stay valid.

use super::bucket::{Bucket, Table};
use super::graveyard::Graveyard;
use super::key::Full;
use super::members::Members;
use crate::tuples::defrag::{rebuild, vec_deque, Mover, Pass, SLAB_MAX};
use std::collections::HashMap;
use std::hash::BuildHasher;

impl Full {
    /// Offers its blocks to a defrag pass: the small ones in a first unit, then the members
    /// (names a run per unit), a bucket per unit, and each graveyard like the live state.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| {
            vec_deque(m, &mut self.buckets);
            vec_deque(m, &mut self.growing);
            m.vec(&mut self.graveyards);
            if let Some(packer) = &mut self.packer {
                packer.defrag(m);
            }
        });
        let negative = self.neg.len();
        rebuild(pass, &mut self.neg, negative, |_, _| {});
        self.m.defrag(pass);
        pass.each(self.buckets.iter_mut(), |b, pass| {
            pass.work(|m| b.defrag(m))
        });
        pass.each(self.graveyards.iter_mut(), |g, pass| g.defrag(pass));
    }
}

impl Members {
    /// The lookup tables, free ids and side tables in one unit, then the name table.
    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| {
            self.table.defrag(m);
            self.old.defrag(m);
            m.vec(&mut self.free_ids);
            placed_if_small(m, &mut self.big);
            placed_if_small(m, &mut self.big_clock);
        });
        self.names.defrag(pass);
    }
}

/// A hash map (which does not expose its block) copied into a block the allocator places, when
/// that block is small enough to share its pages (see `SLAB_MAX`).
fn placed_if_small<V: Clone, S: BuildHasher + Clone>(
    m: &mut impl Mover,
    map: &mut HashMap<u32, V, S>,
) {
    let bytes = map.capacity() * (std::mem::size_of::<(u32, V)>() + 1);
    if map.capacity() > 0 && bytes <= SLAB_MAX {
        *map = m.placed(|_| map.clone());
    }
}

impl Table {
    fn defrag(&mut self, m: &mut impl Mover) {
        self.keys.defrag(m);
        self.vals.defrag(m);
    }
}

impl Bucket {
    /// Its tables, the old one while it grows, `extra` and the packed copy: a few blocks (one
    /// unit of work).
    fn defrag<M: Mover>(&mut self, m: &mut M) {
        self.cur.defrag(m);
        if let Some(old) = &mut self.old {
            m.boxed(old);
            old.t.defrag(m);
        }
        if let Some(extra) = &mut self.extra {
            m.boxed(extra);
            extra.defrag(m);
        }
        if let Some(packed) = &mut self.packed {
            m.boxed(packed);
            packed.defrag(m);
        }
    }
}

impl Graveyard {
    /// What is left of a buried state: freed from its front meanwhile, so a resumed walk may
    /// visit a bucket twice or skip one (never a wrong move).
    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| vec_deque(m, &mut self.buckets));
        self.members.defrag(pass);
        pass.each(self.buckets.iter_mut(), |b, pass| {
            pass.work(|m| b.defrag(m))
        });
    }
}
