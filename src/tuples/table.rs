//! A hash table that never moves much at once, for tables that may hold
//! millions of entries inside one key. Pure Rust, no FFI.
//!
//! Redis' `dict` doubles and then rehashes a few buckets per operation. This
//! table gets the same bound by *linear hashing* over small hashbrown tables
//! ("shards"): entries are spread over `n` shards by bits of their hash that
//! the shards themselves do not use, and `n` grows or shrinks by one shard at
//! a time, splitting one shard in two or merging the last one into its
//! buddy. So:
//!
//! - a shard holds about [`SHARD_ENTRIES`] entries (between half and twice
//!   that), so a shard's own growth or shrink, a split and a merge each move
//!   at most a few thousand entries: tens of microseconds, at any size;
//! - an operation splits or merges at most one shard, and one is enough to
//!   keep the average in bounds (the threshold moves by a whole shard);
//! - no allocation is bigger than one shard, so a big table never asks for a
//!   huge zeroed block (page faults spread with the shards);
//! - the shards' directory grows in fixed segments (`shards.rs`): a split
//!   never copies it;
//! - a small table is one shard: a plain hashbrown table, as before.
//!
//! The caller keeps the hasher (entries are often ids whose hash comes from
//! bytes stored elsewhere) and passes it to the operations that may move
//! entries.

use super::defrag::{Mover, Pass, SLAB_MAX};
use super::shards::Shards;
use crate::stats::PAGED_LOOKED;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::sync::OnceLock;

/// Average entries per shard before a split; a merge comes at a quarter.
pub const SHARD_ENTRIES: usize = 512;

#[derive(Clone, Debug)]
pub struct Table<T> {
    shards: Shards<T>,
    len: usize,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table {
            shards: Shards::one(),
            len: 0,
        }
    }
}

/// The shard of an entry hashed `hash` among `n` shards (linear hashing:
/// the low bits of the hash's high half; the shards below the split point
/// use one bit more).
#[inline]
fn shard_of(hash: u64, n: usize) -> usize {
    let bits = (hash >> 32) as usize;
    let high = n.next_power_of_two();
    let i = bits & (high - 1);
    if i < n {
        i
    } else {
        i - high / 2
    }
}

/// The hasher of the tables a read pages through: one per process (random,
/// as Redis seeds its dicts), so every key, and one key before and after a
/// change of layout, orders the same bytes the same way, and a cursor stays
/// good across such changes (not across a restart, as SCAN's).
pub fn process_hasher() -> DefaultHashBuilder {
    static HASHER: OnceLock<DefaultHashBuilder> = OnceLock::new();
    *HASHER.get_or_init(DefaultHashBuilder::default)
}

/// An entry's place in a table's order: the high half of its hash with the
/// bits reversed. Linear hashing picks a shard by the low bits of that half,
/// so each shard holds one contiguous range of places, and a walk in place
/// order reads one shard at a time (how a paged read stays bounded).
#[inline]
pub fn place_of(hash: u64) -> u32 {
    ((hash >> 32) as u32).reverse_bits()
}

/// Places run from 0 to this, exclusive.
pub const PLACES: u64 = 1 << 32;

impl<T> Table<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn shard(&self, hash: u64) -> &HashTable<T> {
        match self.shards.only() {
            // Most tables are one shard: no bits to pick it by.
            Some(only) => only,
            None => self.shards.get(shard_of(hash, self.shards.len())),
        }
    }

    pub fn find(&self, hash: u64, eq: impl FnMut(&T) -> bool) -> Option<&T> {
        self.shard(hash).find(hash, eq)
    }

    pub fn find_mut(&mut self, hash: u64, eq: impl FnMut(&T) -> bool) -> Option<&mut T> {
        let i = shard_of(hash, self.shards.len());
        self.shards.get_mut(i).find_mut(hash, eq)
    }

    /// Adds an entry the caller knows is absent.
    pub fn insert_unique(&mut self, hash: u64, value: T, hasher: impl Fn(&T) -> u64) {
        let i = shard_of(hash, self.shards.len());
        self.shards.get_mut(i).insert_unique(hash, value, &hasher);
        self.len += 1;
        if self.len > self.shards.len() * SHARD_ENTRIES {
            self.split(&hasher);
        }
    }

    /// Removes the entry hashed `hash` for which `eq` holds, if there is one.
    pub fn remove(
        &mut self,
        hash: u64,
        eq: impl FnMut(&T) -> bool,
        hasher: impl Fn(&T) -> u64,
    ) -> Option<T> {
        let i = shard_of(hash, self.shards.len());
        let shard = self.shards.get_mut(i);
        let (value, _) = shard.find_entry(hash, eq).ok()?.remove();
        self.len -= 1;
        // Give memory back as a shard empties (rehashing a quarter of it).
        if shard.capacity() > 64 && shard.len() * 4 < shard.capacity() {
            shard.shrink_to(shard.len() * 2, &hasher);
        }
        if self.shards.len() > 1 && self.len * 4 < self.shards.len() * SHARD_ENTRIES {
            self.merge(&hasher);
        }
        Some(value)
    }

    /// One shard more: the entries of the new shard's buddy that now belong
    /// to the new shard move there.
    fn split(&mut self, hasher: &impl Fn(&T) -> u64) {
        let n = self.shards.len() + 1;
        let new = n - 1;
        let buddy = new - n.next_power_of_two() / 2;
        let mut moved = HashTable::new();
        for value in (self.shards.get_mut(buddy)).extract_if(|v| shard_of(hasher(v), n) == new) {
            moved.insert_unique(hasher(&value), value, hasher);
        }
        let shard = self.shards.get_mut(buddy);
        if shard.capacity() > 64 && shard.len() * 4 < shard.capacity() {
            shard.shrink_to(shard.len() * 2, hasher);
        }
        self.shards.push(moved);
    }

    /// One shard fewer: the last shard's entries move into its buddy.
    fn merge(&mut self, hasher: &impl Fn(&T) -> u64) {
        let Some(last) = self.shards.pop() else {
            return;
        };
        let n = self.shards.len();
        for value in last {
            let hash = hasher(&value);
            (self.shards.get_mut(shard_of(hash, n))).insert_unique(hash, value, hasher);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.shards.iter().flat_map(HashTable::iter)
    }

    /// The entries of the shard that holds the entries placed at `place`
    /// ([`place_of`]), and the end (exclusive) of that shard's range of
    /// places. How paged reads walk a table: counted as looked at.
    pub fn shard_at(&self, place: u32) -> (impl Iterator<Item = &T> + '_, u64) {
        let n = self.shards.len();
        let s = shard_of(u64::from(place.reverse_bits()) << 32, n);
        PAGED_LOOKED.add(self.shards.get(s).len() as i64);
        let high = n.next_power_of_two();
        // Split shards, and the ones split off, use log2(high) bits; the
        // others one bit fewer.
        let bits = high.trailing_zeros() - u32::from(!(s >= high / 2 || s < n - high / 2));
        let width = PLACES >> bits;
        let start = u64::from(place) & !(width - 1);
        (self.shards.get(s).iter(), start + width)
    }

    /// Heap bytes held.
    pub fn allocation_size(&self) -> usize {
        let shards: usize = self.shards.iter().map(HashTable::allocation_size).sum();
        shards + self.shards.heap_bytes()
    }

    /// Takes the entries out a shard at a time: up to one shard's entries per
    /// call (`None` once empty), so a huge table can be freed in slices.
    pub fn take_shard(&mut self) -> Option<Vec<T>> {
        if self.len == 0 {
            return None;
        }
        let shard = if self.shards.len() > 1 {
            self.shards.pop().unwrap_or_default()
        } else {
            std::mem::take(self.shards.get_mut(0))
        };
        self.len -= shard.len();
        Some(shard.into_iter().collect())
    }

    #[cfg(test)]
    pub fn shards(&self) -> usize {
        self.shards.len()
    }
}

impl<T: Clone> Table<T> {
    /// Offers its blocks to a defrag pass: the shard list, then each shard,
    /// one per unit of work: copied into a placed block (a hashbrown table
    /// does not expose its own) when it sits in a slab, which copies what
    /// its entries own too; else (whole pages) its entries' blocks.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.defrag_with(pass, |_, _| {});
    }

    /// [`Table::defrag`], where `entry` offers the blocks an entry owns.
    pub fn defrag_with<M: Mover>(
        &mut self,
        pass: &mut Pass<M>,
        mut entry: impl FnMut(&mut T, &mut M),
    ) {
        self.shards.defrag(pass, |shard, pass| {
            pass.work(|m| {
                if (1..=SLAB_MAX).contains(&shard.allocation_size()) {
                    *shard = m.placed(|_| shard.clone());
                } else {
                    shard.iter_mut().for_each(|e| entry(e, m));
                }
            })
        });
    }
}

/// `u32` ids to values, on a [`Table`].
#[derive(Clone, Debug, Default)]
pub struct IdMap<V> {
    table: Table<(u32, V)>,
}

#[inline]
fn hash_id(id: u32) -> u64 {
    // A multiplicative mix spreads consecutive ids over both halves of the
    // hash: the shard bits (high) and the shards' own bits (low).
    let h = (id as u64 ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 29)
}

impl<V> IdMap<V> {
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub fn get(&self, id: u32) -> Option<&V> {
        self.table.find(hash_id(id), |e| e.0 == id).map(|e| &e.1)
    }

    /// Adds `id`, which the caller knows is absent.
    pub fn insert(&mut self, id: u32, value: V) {
        self.table
            .insert_unique(hash_id(id), (id, value), |e| hash_id(e.0));
    }

    pub fn remove(&mut self, id: u32) -> Option<V> {
        self.table
            .remove(hash_id(id), |e| e.0 == id, |e| hash_id(e.0))
            .map(|e| e.1)
    }

    pub fn allocation_size(&self) -> usize {
        self.table.allocation_size()
    }
}

impl<V: Clone> IdMap<V> {
    /// [`Table::defrag_with`], `value` offering the blocks a value owns.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>, mut value: impl FnMut(&mut V, &mut M)) {
        self.table.defrag_with(pass, |(_, v), m| value(v, m));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn shard_of_is_linear_hashing() {
        // With n shards, every hash lands below n, and going from n to n+1
        // moves entries only from the new shard's buddy to the new shard.
        let mut rng = StdRng::seed_from_u64(1);
        for n in 1..300usize {
            let buddy = n - (n + 1).next_power_of_two() / 2;
            for _ in 0..200 {
                let h: u64 = rng.gen();
                let (a, b) = (shard_of(h, n), shard_of(h, n + 1));
                assert!(a < n && b <= n);
                assert!(
                    a == b || (a == buddy && b == n),
                    "n {n} h {h:x}: {a} -> {b}"
                );
            }
        }
    }

    /// Random inserts and removes against a model, through growth to many
    /// shards and back to one, checking every read and the shard bounds.
    #[test]
    fn model_through_splits_and_merges() {
        let hasher = hashbrown::DefaultHashBuilder::default();
        let h = |k: &u64| hasher.hash_one(k);
        let mut rng = StdRng::seed_from_u64(7);
        let mut table: Table<u64> = Table::new();
        let mut model: HashSet<u64> = HashSet::new();
        let mut most_shards = 0;
        // Grow to ~40 shards, shrink to one, grow again.
        for phase in [0.9, 0.1, 0.9, 0.02] {
            for _ in 0..60_000 {
                let k = rng.gen_range(0..50_000u64);
                if rng.gen_bool(phase) {
                    if model.insert(k) {
                        table.insert_unique(h(&k), k, h);
                    }
                } else {
                    let removed = table.remove(h(&k), |&v| v == k, h);
                    assert_eq!(removed.is_some(), model.remove(&k));
                }
                assert_eq!(table.len(), model.len());
                let probe = rng.gen_range(0..50_000u64);
                assert_eq!(
                    table.find(h(&probe), |&v| v == probe).is_some(),
                    model.contains(&probe)
                );
                most_shards = most_shards.max(table.shards());
                // Bounded shards: the average stays within [1/4, 1] of the target.
                assert!(table.len() <= table.shards() * SHARD_ENTRIES);
                assert!(
                    table.shards() == 1 || table.len() * 4 >= table.shards() * SHARD_ENTRIES - 4
                );
            }
            let mut all: Vec<u64> = table.iter().copied().collect();
            all.sort_unstable();
            let mut expected: Vec<u64> = model.iter().copied().collect();
            expected.sort_unstable();
            assert_eq!(all, expected);
        }
        assert!(most_shards >= 30, "grew to {most_shards} shards only");
        // Every entry is in the shard its hash names.
        for (i, shard) in table.shards.iter().enumerate() {
            for v in shard.iter() {
                assert_eq!(shard_of(h(v), table.shards()), i);
            }
        }
    }

    /// Walking shard by shard from place 0 meets every entry once, each
    /// in the range of places its shard claims, at every number of shards.
    #[test]
    fn shards_hold_contiguous_places() {
        let hasher = hashbrown::DefaultHashBuilder::default();
        let h = |k: &u64| hasher.hash_one(k);
        let mut table: Table<u64> = Table::new();
        for k in 0..40_000u64 {
            table.insert_unique(h(&k), k, h);
            if k % 997 != 0 {
                continue;
            }
            let (mut place, mut seen) = (0u64, 0);
            while place < PLACES {
                let (entries, end) = table.shard_at(place as u32);
                assert!(end > place && end <= PLACES);
                for v in entries {
                    let at = u64::from(place_of(h(v)));
                    assert!(at >= place && at < end, "{k}: {at} outside {place}..{end}");
                    seen += 1;
                }
                place = end;
            }
            assert_eq!(seen, table.len(), "at {} shards", table.shards());
        }
    }

    #[test]
    fn no_shard_grows_far_past_its_share() {
        let hasher = hashbrown::DefaultHashBuilder::default();
        let h = |k: &u64| hasher.hash_one(k);
        let mut table: Table<u64> = Table::new();
        for k in 0..300_000u64 {
            table.insert_unique(h(&k), k, h);
        }
        let biggest = table.shards.iter().map(HashTable::len).max().unwrap_or(0);
        assert!(biggest <= 3 * SHARD_ENTRIES, "a shard of {biggest}");
        // Freed a shard at a time.
        let mut taken = 0;
        while let Some(entries) = table.take_shard() {
            assert!(entries.len() <= 3 * SHARD_ENTRIES);
            taken += entries.len();
        }
        assert_eq!(taken, 300_000);
        assert!(table.is_empty());
    }

    #[test]
    fn defrag_copies_small_shards_and_moves_what_big_ones_hold() {
        use crate::tuples::defrag::model::{in_slices, MoveAll};
        use crate::tuples::defrag::Resume;
        let mut map: IdMap<Box<[u8]>> = IdMap::default();
        for id in 0..20_000u32 {
            map.insert(id, id.to_string().into_bytes().into());
        }
        let shards = &map.table.shards;
        let (small, big): (Vec<_>, Vec<_>) =
            shards.iter().partition(|s| s.allocation_size() <= SLAB_MAX);
        let (small, in_big) = (small.len(), big.iter().map(|s| s.len()).sum::<usize>());
        assert!(in_big > 0 && small > 0, "{} shards", shards.len());
        let mut mover = MoveAll::default();
        let mut pass = crate::tuples::defrag::Pass::new(&mut mover, Resume::new());
        map.defrag(&mut pass, |v, m| m.slice(v));
        assert!(pass.finish().is_none());
        // The shard list, then every value of a big shard; small ones copied.
        assert_eq!(mover.moved.len(), 1 + in_big);
        assert_eq!(mover.rebuilt, small);
        for id in (0..20_000u32).step_by(7) {
            assert_eq!(map.get(id).map(|v| &v[..]), Some(id.to_string().as_bytes()));
        }
        // In slices, the same.
        let (moved, calls) = in_slices(2, |pass| map.defrag(pass, |v, m| m.slice(v)));
        assert_eq!((moved.len(), calls > 1), (1 + in_big, true));
    }

    #[test]
    fn id_map() {
        let mut map: IdMap<String> = IdMap::default();
        for id in 0..5_000u32 {
            map.insert(id, id.to_string());
        }
        assert_eq!(map.get(4_321).map(String::as_str), Some("4321"));
        for id in (0..5_000u32).step_by(2) {
            assert_eq!(map.remove(id), Some(id.to_string()));
        }
        assert_eq!(map.table.len(), 2_500);
        assert_eq!(map.get(2), None);
        assert_eq!(map.get(3).map(String::as_str), Some("3"));
        assert_eq!(map.remove(2), None);
    }
}
