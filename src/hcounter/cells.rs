//! The cells of one partition: count per cell key (the encoding of the
//! cell's GROUP values). Pure Rust, no FFI.
//!
//! Two layouts, as Redis keeps small hashes in a listpack:
//! - few cells: one byte buffer, each cell `u8 key length, key, i64 count`
//!   back to back, found by scanning (about 14 bytes a cell, where a vector
//!   of cells and a hash table cost about 80 for a partition of 20);
//! - past `PACKED_CELLS` cells (or a key longer than 255 bytes): a chunked
//!   vector of cells and a hash table of their positions, neither of which
//!   moves more than a chunk or a shard at once, whatever the size.

use crate::tuples::chunked::Chunked;
use crate::tuples::sample::estimate;
use crate::tuples::table::Table;
use hashbrown::DefaultHashBuilder;
use smallvec::SmallVec;
use std::hash::BuildHasher;

/// Cells kept packed at most.
const PACKED_CELLS: usize = 64;

/// Encoded bytes, inline up to 16 (most cell keys need no allocation).
type Bytes = SmallVec<[u8; 16]>;

#[derive(Clone, Debug)]
struct Cell {
    key: Bytes,
    count: i64,
}

/// Where a cell is: the offset of its count (packed) or its index (hashed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos(usize);

#[derive(Clone, Debug, Default)]
pub struct Cells(Layout);

#[derive(Clone, Debug)]
enum Layout {
    Packed(Vec<u8>),
    /// Boxed: a partition's slot stays small while it is packed.
    Hashed(Box<Hashed>),
}

#[derive(Clone, Debug)]
struct Hashed {
    cells: Chunked<Cell>,
    /// Indices into `cells`, hashed by key.
    table: Table<u32>,
}

impl Hashed {
    fn cell(&self, i: usize) -> &Cell {
        self.cells.get(i).expect("a stored cell index")
    }

    fn push(&mut self, key: &[u8], count: i64, hasher: &DefaultHashBuilder) {
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
}

impl Default for Layout {
    fn default() -> Self {
        Layout::Packed(Vec::new())
    }
}

/// The packed cells of `buf` as (key, offset of its count).
fn packed(buf: &[u8]) -> impl Iterator<Item = (&[u8], usize)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let len = *buf.get(at)? as usize;
        let key = &buf[at + 1..at + 1 + len];
        let count = at + 1 + len;
        at = count + 8;
        Some((key, count))
    })
}

fn read_count(buf: &[u8], pos: usize) -> i64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&buf[pos..pos + 8]);
    i64::from_le_bytes(bytes)
}

impl Cells {
    pub fn find(&self, key: &[u8], hasher: &DefaultHashBuilder) -> Option<Pos> {
        match &self.0 {
            Layout::Packed(buf) => packed(buf).find(|(k, _)| *k == key).map(|(_, at)| Pos(at)),
            Layout::Hashed(h) => h
                .table
                .find(hasher.hash_one(key), |&i| {
                    h.cell(i as usize).key.as_slice() == key
                })
                .map(|&i| Pos(i as usize)),
        }
    }

    pub fn count(&self, pos: Pos) -> i64 {
        match &self.0 {
            Layout::Packed(buf) => read_count(buf, pos.0),
            Layout::Hashed(h) => h.cell(pos.0).count,
        }
    }

    pub fn set(&mut self, pos: Pos, count: i64) {
        match &mut self.0 {
            Layout::Packed(buf) => buf[pos.0..pos.0 + 8].copy_from_slice(&count.to_le_bytes()),
            Layout::Hashed(h) => {
                if let Some(cell) = h.cells.get_mut(pos.0) {
                    cell.count = count;
                }
            }
        }
    }

    /// Adds a cell known to be absent.
    pub fn push(&mut self, key: &[u8], count: i64, hasher: &DefaultHashBuilder) {
        if let Layout::Packed(buf) = &mut self.0 {
            if key.len() <= u8::MAX as usize && packed(buf).count() < PACKED_CELLS {
                // Grow by a quarter, not double: small partitions are many.
                let entry = 1 + key.len() + 8;
                if buf.capacity() - buf.len() < entry {
                    buf.reserve_exact(entry.max(buf.len() / 4));
                }
                buf.push(key.len() as u8);
                buf.extend_from_slice(key);
                buf.extend_from_slice(&count.to_le_bytes());
                return;
            }
            let old = std::mem::take(buf);
            let mut hashed = Hashed {
                cells: Chunked::default(),
                table: Table::new(),
            };
            for (k, at) in packed(&old) {
                hashed.push(k, read_count(&old, at), hasher);
            }
            self.0 = Layout::Hashed(Box::new(hashed));
        }
        if let Layout::Hashed(h) = &mut self.0 {
            h.push(key, count, hasher);
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Layout::Packed(buf) => packed(buf).count(),
            Layout::Hashed(h) => h.cells.len(),
        }
    }

    /// (key, count) of every cell in ascending key order.
    pub fn sorted(&self) -> Vec<(&[u8], i64)> {
        let mut out: Vec<(&[u8], i64)> = match &self.0 {
            Layout::Packed(buf) => packed(buf)
                .map(|(k, at)| (k, read_count(buf, at)))
                .collect(),
            Layout::Hashed(h) => h
                .cells
                .iter()
                .map(|c| (c.key.as_slice(), c.count))
                .collect(),
        };
        out.sort_unstable_by(|a, b| a.0.cmp(b.0));
        out
    }

    /// Heap bytes held, the keys' sized from `samples` cells (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        match &self.0 {
            Layout::Packed(buf) => buf.capacity(),
            Layout::Hashed(h) => {
                let Hashed { cells, table } = &**h;
                let spilled = estimate(cells.iter(), cells.len(), samples, |c| {
                    if c.key.spilled() {
                        c.key.capacity()
                    } else {
                        0
                    }
                });
                std::mem::size_of::<Hashed>()
                    + cells.heap_bytes()
                    + spilled
                    + table.allocation_size()
            }
        }
    }

    /// Frees a slice of the cells (about `budget` units of work: a table
    /// entry or a cell each, a chunk or a table shard at the least). Returns
    /// the work done, 0 once nothing is left, and the cells freed. A big
    /// partition is thus freed over several calls.
    pub fn shed(&mut self, budget: usize) -> (usize, usize) {
        let Layout::Hashed(h) = &mut self.0 else {
            let n = self.len();
            self.0 = Layout::default();
            return (n, n);
        };
        let (mut work, mut freed) = (0, 0);
        while work < budget.max(1) {
            // The table first: its entries point into the cells.
            if let Some(entries) = h.table.take_shard() {
                work += entries.len();
                continue;
            }
            let before = h.cells.len();
            if !h.cells.drop_chunk() {
                break;
            }
            work += before - h.cells.len();
            freed += before - h.cells.len();
        }
        if h.cells.is_empty() {
            self.0 = Layout::default();
        }
        (work, freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    /// Random sets and adds against a map, across the switch to hashing
    /// (by count and by a long key).
    #[test]
    fn matches_a_map_in_both_layouts() {
        let hasher = DefaultHashBuilder::default();
        let mut rng = StdRng::seed_from_u64(5);
        for long_key_at in [None, Some(10)] {
            let mut cells = Cells::default();
            let mut model: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
            for step in 0..3_000 {
                let mut key = rng.gen_range(0..150u32).to_string().into_bytes();
                if long_key_at == Some(step) {
                    key = vec![b'k'; 300];
                }
                let by = rng.gen_range(-5..5i64);
                match cells.find(&key, &hasher) {
                    Some(pos) => {
                        let count = cells.count(pos) + by;
                        cells.set(pos, count);
                    }
                    None => cells.push(&key, by, &hasher),
                }
                *model.entry(key).or_insert(0) += by;
                assert_eq!(cells.len(), model.len());
                let packed = matches!(cells.0, Layout::Packed(_));
                assert_eq!(
                    packed,
                    model.len() <= PACKED_CELLS && model.keys().all(|k| k.len() < 256)
                );
            }
            let want: Vec<(&[u8], i64)> = model.iter().map(|(k, v)| (k.as_slice(), *v)).collect();
            assert_eq!(cells.sorted(), want);
        }
    }

    #[test]
    fn small_partitions_stay_small() {
        let hasher = DefaultHashBuilder::default();
        let mut cells = Cells::default();
        for i in 0..20u32 {
            cells.push(i.to_string().as_bytes(), i as i64, &hasher);
        }
        // 20 cells of 1-2 byte keys: 11-12 bytes each, a quarter of slack.
        assert!(
            cells.heap_bytes(0) <= 20 * 12 * 5 / 4 + 16,
            "{}",
            cells.heap_bytes(0)
        );
    }
}
