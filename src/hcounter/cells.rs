//! The cells of a partition past the compact size (`record.rs` packs the
//! cells of small partitions): a chunked vector of cells and a hash table of
//! their positions, neither of which moves more than a chunk or a shard at
//! once, whatever the size. Pure Rust, no FFI.

use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::prefetch::read_ahead;
use crate::tuples::sample::estimate;
use crate::tuples::table::Table;
use hashbrown::DefaultHashBuilder;
use smallvec::SmallVec;
use std::hash::BuildHasher;

/// Encoded bytes, inline up to 16 (most cell keys need no allocation).
type Bytes = SmallVec<[u8; 16]>;

#[derive(Clone, Debug)]
struct Cell {
    key: Bytes,
    count: i64,
}

#[derive(Clone, Debug, Default)]
pub struct Hashed {
    cells: Chunked<Cell>,
    /// Indices into `cells`, hashed by key.
    table: Table<u32>,
}

impl Hashed {
    fn cell(&self, i: usize) -> &Cell {
        self.cells.get(i).expect("a stored cell index")
    }

    /// The index of the cell keyed `key`.
    pub fn find(&self, key: &[u8], hasher: &DefaultHashBuilder) -> Option<usize> {
        self.table
            .find(hasher.hash_one(key), |&i| {
                self.cell(i as usize).key.as_slice() == key
            })
            .map(|&i| i as usize)
    }

    pub fn count(&self, i: usize) -> i64 {
        self.cell(i).count
    }

    pub fn set(&mut self, i: usize, count: i64) {
        if let Some(cell) = self.cells.get_mut(i) {
            cell.count = count;
        }
    }

    /// Adds a cell known to be absent.
    pub fn push(&mut self, key: &[u8], count: i64, hasher: &DefaultHashBuilder) {
        self.cells.push(Cell {
            key: key.into(),
            count,
        });
        let i = (self.cells.len() - 1) as u32;
        let cells = &self.cells;
        self.table.insert_unique(hasher.hash_one(key), i, |&j| {
            cells
                .get(j as usize)
                .map_or(0, |c| hasher.hash_one(c.key.as_slice()))
        });
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// (key, count) of every cell, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], i64)> + '_ {
        self.cells.iter().map(|c| (c.key.as_slice(), c.count))
    }

    /// The (key, count) of the cells in the table's shard holding `place`,
    /// and the end of its places (`Table::shard_at`).
    pub fn shard_at(&self, place: u32) -> (impl Iterator<Item = (&[u8], i64)> + '_, u64) {
        let (shard, end) = self.table.shard_at(place);
        let at = |i: u32| self.cell(i as usize);
        let cells = read_ahead(shard.copied().collect(), at, move |i| {
            let cell = at(i);
            (cell.key.as_slice(), cell.count)
        });
        (cells, end)
    }

    /// Heap bytes held, the keys' sized from `samples` cells (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        let spilled = estimate(self.cells.iter(), self.cells.len(), samples, |c| {
            if c.key.spilled() {
                c.key.capacity()
            } else {
                0
            }
        });
        self.cells.heap_bytes() + spilled + self.table.allocation_size()
    }

    /// Frees a slice of the cells (about `budget` units of work: a table
    /// entry or a cell each, a chunk or a table shard at the least). Returns
    /// the work done, 0 once nothing is left, and the cells freed. A big
    /// partition is thus freed over several calls.
    pub fn shed(&mut self, budget: usize) -> (usize, usize) {
        let (mut work, mut freed) = (0, 0);
        while work < budget.max(1) {
            // The table first: its entries point into the cells.
            if let Some(entries) = self.table.take_shard() {
                work += entries.len();
                continue;
            }
            let before = self.cells.len();
            if !self.cells.drop_chunk() {
                break;
            }
            work += before - self.cells.len();
            freed += before - self.cells.len();
        }
        (work, freed)
    }
}

impl Hashed {
    /// Offers its blocks to a defrag pass: the cells with their spilled
    /// keys, then the table.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.cells
            .defrag(pass, |cell, m| m.small_vec(&mut cell.key));
        self.table.defrag(pass);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    /// Random sets and adds against a map, then freed in slices.
    #[test]
    fn matches_a_map_and_sheds_in_slices() {
        let hasher = DefaultHashBuilder::default();
        let mut rng = StdRng::seed_from_u64(5);
        let mut cells = Hashed::default();
        let mut model: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
        for _ in 0..3_000 {
            let key = rng.gen_range(0..1500u32).to_string().into_bytes();
            let by = rng.gen_range(-5..5i64);
            match cells.find(&key, &hasher) {
                Some(i) => cells.set(i, cells.count(i) + by),
                None => cells.push(&key, by, &hasher),
            }
            *model.entry(key).or_insert(0) += by;
            assert_eq!(cells.len(), model.len());
        }
        let mut all: Vec<(&[u8], i64)> = cells.iter().collect();
        all.sort_unstable();
        let want: Vec<(&[u8], i64)> = model.iter().map(|(k, v)| (k.as_slice(), *v)).collect();
        assert_eq!(all, want);
        let (mut steps, mut freed) = (0, 0);
        loop {
            let (work, gone) = cells.shed(100);
            if work == 0 {
                break;
            }
            freed += gone;
            steps += 1;
        }
        assert_eq!(freed, model.len());
        assert!(steps > 3, "{steps}");
    }
}
