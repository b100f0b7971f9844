//! One HCOUNTER partition: its record (times, key and, while it has at most
//! `recipes.hcounter-compact-max` cells, the cells packed), and what only
//! some partitions have, boxed apart so a small partition is one allocation
//! and a 24-byte slot: the hashed cells of a big one, the unique tuples first
//! counted in it. Pure Rust, no FFI.
//!
//! Cells only come (a partition is removed whole), so a partition turns
//! hashed once, moving at most compact-max cells, and never back.

use super::cells::Hashed;
use super::record::Record;
use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::page::Entry;
use crate::tuples::sample::estimate;
use crate::tuples::table::{place_of, PLACES};
use crate::tuples::varint::pack_tuple as pack;
use hashbrown::DefaultHashBuilder;
use std::borrow::Cow;
use std::hash::BuildHasher;

#[derive(Clone, Debug, Default)]
struct More {
    /// The cells, once past the compact size (the record then has none).
    hashed: Option<Hashed>,
    /// Unique tuples first counted here (SCOPE then UNIQUE encodings).
    seen: Chunked<Box<[u8]>>,
}

#[derive(Clone, Debug)]
pub struct Partition {
    pub record: Record,
    more: Option<Box<More>>,
}

/// Where a cell is: the offset of its count in the record, or its index
/// among the hashed cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    Packed(usize),
    Hashed(usize),
}

impl Partition {
    pub fn new(record: Record) -> Self {
        Partition { record, more: None }
    }

    fn hashed(&self) -> Option<&Hashed> {
        self.more.as_ref()?.hashed.as_ref()
    }

    fn more(&mut self) -> &mut More {
        self.more.get_or_insert_with(Default::default)
    }

    pub fn find(&self, cell: &[u8], hasher: &DefaultHashBuilder) -> Option<Pos> {
        match self.hashed() {
            Some(h) => h.find(cell, hasher).map(Pos::Hashed),
            None => self.record.find(&pack(cell)?).ok().map(Pos::Packed),
        }
    }

    pub fn count(&self, pos: Pos) -> i64 {
        match (pos, self.hashed()) {
            (Pos::Hashed(i), Some(h)) => h.count(i),
            (Pos::Packed(at), _) => self.record.count(at),
            (Pos::Hashed(_), None) => 0,
        }
    }

    pub fn set(&mut self, pos: Pos, count: i64) {
        match pos {
            Pos::Packed(at) => self.record.set_count(at, count),
            Pos::Hashed(i) => {
                if let Some(h) = self.more().hashed.as_mut() {
                    h.set(i, count);
                }
            }
        }
    }

    /// Adds a cell known to be absent. Past `compact_max` cells (or for a
    /// key too long to pack) the cells move to a hash table, for good.
    pub fn push(
        &mut self,
        cell: &[u8],
        count: i64,
        compact_max: usize,
        hasher: &DefaultHashBuilder,
    ) {
        if self.hashed().is_none() {
            if let Some(packed) = pack(cell) {
                if self
                    .record
                    .find(&packed)
                    .err()
                    .is_some_and(|n| n < compact_max)
                {
                    self.record.push(&packed, count);
                    return;
                }
            }
            let mut hashed = Hashed::default();
            for (key, bits) in self.record.take_cells() {
                hashed.push(&key, bits, hasher);
            }
            self.more().hashed = Some(hashed);
        }
        if let Some(h) = self.more().hashed.as_mut() {
            h.push(cell, count, hasher);
        }
    }

    pub fn len(&self) -> usize {
        match self.hashed() {
            Some(h) => h.len(),
            None => self.record.cell_counts().count(),
        }
    }

    /// (key, count) of every cell in ascending key order.
    pub fn sorted(&self) -> Vec<(Cow<'_, [u8]>, i64)> {
        let mut out: Vec<(Cow<[u8]>, i64)> = match self.hashed() {
            Some(h) => h.iter().map(|(k, c)| (Cow::Borrowed(k), c)).collect(),
            None => self.record.cell_counts().collect(),
        };
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The cells placed in the shard holding `place` (a packed record is
    /// one shard) as paged-read entries (`tuples::page`), and the end of the
    /// shard's places.
    pub fn shard_at<'p>(
        &'p self,
        place: u32,
        hasher: &DefaultHashBuilder,
    ) -> (Vec<Entry<'p, i64>>, u64) {
        let entry = |cell: Cow<'p, [u8]>, count| (place_of(hasher.hash_one(&*cell)), cell, count);
        match self.hashed() {
            Some(h) => {
                let (cells, end) = h.shard_at(place);
                (
                    cells.map(|(k, c)| entry(Cow::Borrowed(k), c)).collect(),
                    end,
                )
            }
            None => {
                let cells = self.record.cell_counts().map(|(k, c)| entry(k, c));
                (cells.collect(), PLACES)
            }
        }
    }

    pub fn seen(&self) -> impl Iterator<Item = &Box<[u8]>> + '_ {
        self.more.iter().flat_map(|m| m.seen.iter())
    }

    pub fn seen_len(&self) -> usize {
        self.more.as_ref().map_or(0, |m| m.seen.len())
    }

    pub fn seen_get(&self, index: usize) -> Option<&[u8]> {
        self.more.as_ref()?.seen.get(index).map(|t| &**t)
    }

    /// Remembers a unique tuple; returns its index.
    pub fn seen_push(&mut self, tuple: &[u8]) -> u32 {
        let seen = &mut self.more().seen;
        seen.push(tuple.into());
        (seen.len() - 1) as u32
    }

    pub fn seen_pop(&mut self) {
        if let Some(m) = self.more.as_mut() {
            m.seen.pop();
        }
    }

    /// What removing it costs: its cells and unique tuples.
    pub fn size(&self) -> usize {
        1 + self.len() + self.seen_len()
    }

    /// Frees a slice of the cells (about `budget` units of work) before the
    /// partition is dropped; returns the work done, the cells freed, and
    /// whether the rest may go with the partition in one drop (a compact
    /// partition's cells live in its record, so they go at once).
    pub fn shed(&mut self, budget: usize) -> (usize, usize, bool) {
        match self.more.as_mut().and_then(|m| m.hashed.as_mut()) {
            Some(h) => {
                let (work, freed) = h.shed(budget);
                (work, freed, work == 0)
            }
            None => {
                let n = self.len();
                (n, n, true)
            }
        }
    }

    /// Heap bytes held, the variable parts sized from `samples` (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        let more = self.more.as_ref().map_or(0, |m| {
            std::mem::size_of::<More>()
                + m.hashed.as_ref().map_or(0, |h| h.heap_bytes(samples))
                + m.seen.heap_bytes()
                + estimate(m.seen.iter(), m.seen.len(), samples, |t| t.len())
        });
        self.record.heap_bytes() + more
    }
}

impl Partition {
    /// Offers its own blocks (the record, the box of the rest) to a defrag
    /// pass, as part of a unit of work.
    pub fn defrag_own(&mut self, m: &mut impl Mover) {
        self.record.defrag(m);
        if let Some(more) = &mut self.more {
            m.boxed(more);
        }
    }

    /// Offers the blocks of its hashed cells and unique tuples, in units.
    pub fn defrag_inner<M: Mover>(&mut self, pass: &mut Pass<M>) {
        let Some(more) = &mut self.more else {
            return;
        };
        if let Some(hashed) = &mut more.hashed {
            hashed.defrag(pass);
        }
        more.seen.defrag(pass, |tuple, m| m.slice(tuple));
    }
}
