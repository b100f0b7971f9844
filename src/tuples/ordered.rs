//! A partition index that holds only ids (`u32`), the keys living elsewhere
//! (in the records the ids name): about 10 bytes a partition, where a
//! B-tree map of boxed keys costs a key copy plus 40-60 bytes of node. Pure
//! Rust, no FFI.
//!
//! - Point lookups go through a hash table of ids hashed by their key.
//! - Order (listing, filters on leading names) comes from sorted chunks of
//!   at most [`CHUNK`] ids: a binary search over the chunks' last keys, then
//!   within one chunk. An insert or removal moves at most one chunk's ids
//!   and the chunk list (24 bytes a chunk: at 10 million partitions about
//!   1 MB, a fraction of a millisecond), so no call moves much at any size.
//!   Appending past the last key (keys arriving in order, as dates do)
//!   starts a new chunk rather than splitting, so such chunks stay full.

use super::defrag::{Mover, Pass};
use super::encoding;
use super::index::{matches, Filter};
use super::table::Table;
use hashbrown::DefaultHashBuilder;
use std::hash::BuildHasher;

/// Ids per chunk at most.
const CHUNK: usize = if cfg!(test) { 8 } else { 512 };

/// Where the ids' keys are.
pub trait Keys {
    /// The key of id `id` (an id the index holds).
    fn key(&self, id: u32) -> &[u8];
}

impl<T: Keys + ?Sized> Keys for &T {
    fn key(&self, id: u32) -> &[u8] {
        (**self).key(id)
    }
}

#[derive(Clone, Debug, Default)]
pub struct OrderedIds {
    /// Sorted by key, each non-empty.
    chunks: Vec<Vec<u32>>,
    /// The same ids, hashed by key.
    table: Table<u32>,
    hasher: DefaultHashBuilder,
}

impl OrderedIds {
    /// Offers its blocks to a defrag pass: the chunk list, each chunk, the table.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| m.vec(&mut self.chunks));
        pass.each(self.chunks.iter_mut(), |chunk, pass| {
            pass.work(|m| m.vec(chunk))
        });
        self.table.defrag(pass);
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// The id keyed `key`.
    pub fn get(&self, key: &[u8], keys: &impl Keys) -> Option<u32> {
        let hash = self.hasher.hash_one(key);
        self.table.find(hash, |&id| keys.key(id) == key).copied()
    }

    /// (chunk, position) of the first id whose key is at or after `key`.
    fn lower_bound(&self, key: &[u8], keys: &impl Keys) -> (usize, usize) {
        let last_key = |chunk: &Vec<u32>| keys.key(chunk[chunk.len() - 1]);
        let c = self.chunks.partition_point(|ch| last_key(ch) < key);
        match self.chunks.get(c) {
            Some(chunk) => (c, chunk.partition_point(|&id| keys.key(id) < key)),
            None => (c, 0),
        }
    }

    /// Adds `id`, whose key the index does not hold yet.
    pub fn insert(&mut self, id: u32, keys: &impl Keys) {
        let key = keys.key(id);
        let hasher = &self.hasher;
        self.table
            .insert_unique(hasher.hash_one(key), id, |&i| hasher.hash_one(keys.key(i)));
        let (c, i) = self.lower_bound(key, keys);
        if c == self.chunks.len() {
            // After every key: onto the last chunk, or a new one once full.
            match self.chunks.last_mut() {
                Some(last) if last.len() < CHUNK => last.push(id),
                _ => self.chunks.push(vec![id]),
            }
            return;
        }
        let chunk = &mut self.chunks[c];
        if chunk.len() < CHUNK {
            chunk.insert(i, id);
            return;
        }
        let mut tail = chunk.split_off(CHUNK / 2);
        if i <= CHUNK / 2 {
            chunk.insert(i, id);
        } else {
            tail.insert(i - CHUNK / 2, id);
        }
        self.chunks.insert(c + 1, tail);
    }

    /// Removes the id keyed `key`; returns it.
    pub fn remove(&mut self, key: &[u8], keys: &impl Keys) -> Option<u32> {
        let hasher = &self.hasher;
        let id = self.table.remove(
            hasher.hash_one(key),
            |&id| keys.key(id) == key,
            |&i| hasher.hash_one(keys.key(i)),
        )?;
        let (c, i) = self.lower_bound(key, keys);
        let chunk = &mut self.chunks[c];
        debug_assert_eq!(chunk[i], id);
        chunk.remove(i);
        if chunk.is_empty() {
            self.chunks.remove(c);
            return Some(id);
        }
        if chunk.capacity() > 16 && chunk.len() * 4 < chunk.capacity() {
            chunk.shrink_to(chunk.len() * 2);
        }
        // Keep chunks from thinning out: merge with the next when both fit
        // in half a chunk.
        if self
            .chunks
            .get(c + 1)
            .is_some_and(|next| self.chunks[c].len() + next.len() <= CHUNK / 2)
        {
            let next = self.chunks.remove(c + 1);
            self.chunks[c].extend(next);
        }
        Some(id)
    }

    /// Removes `ids`, which the index holds, ascending by key (as
    /// [`OrderedIds::matching`] lists them): one pass over the chunks they
    /// span, where one [`OrderedIds::remove`] each would search and shift a
    /// chunk per id.
    pub fn remove_all(&mut self, ids: &[u32], keys: &impl Keys) {
        let Some(&first) = ids.first() else {
            return;
        };
        let hasher = &self.hasher;
        for &id in ids {
            let hash = hasher.hash_one(keys.key(id));
            self.table
                .remove(hash, |&i| i == id, |&i| hasher.hash_one(keys.key(i)));
        }
        let (start, _) = self.lower_bound(keys.key(first), keys);
        let mut doomed = ids.iter().peekable();
        let mut end = start;
        while doomed.peek().is_some() && end < self.chunks.len() {
            self.chunks[end].retain(|id| doomed.next_if_eq(&id).is_none());
            end += 1;
        }
        debug_assert!(doomed.next().is_none(), "ids not held, or not in key order");
        // Drop the emptied chunks and merge thin neighbours, as `remove`
        // keeps them: at most about (end - start) chunks move.
        let mut kept: Vec<Vec<u32>> = Vec::with_capacity(end - start);
        for chunk in self.chunks.drain(start..end).filter(|c| !c.is_empty()) {
            match kept.last_mut() {
                Some(last) if last.len() + chunk.len() <= CHUNK / 2 => last.extend(chunk),
                _ => kept.push(chunk),
            }
        }
        for chunk in &mut kept {
            if chunk.capacity() > 16 && chunk.len() * 4 < chunk.capacity() {
                chunk.shrink_to(chunk.len() * 2);
            }
        }
        self.chunks.splice(start..start, kept);
    }

    /// Every id, ascending by key.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.chunks.iter().flatten().copied()
    }

    /// The ids whose key (a tuple encoding) matches `filter`, ascending. A
    /// filter fixing the leading positions reads only their range.
    pub fn matching<'s, K: Keys + Copy + 's>(
        &'s self,
        filter: &'s Filter<'s>,
        keys: K,
    ) -> impl Iterator<Item = u32> + 's {
        self.matching_from(filter, keys, &[])
            .filter(|&(_, matching)| matching)
            .map(|(id, _)| id)
    }

    /// The ids keyed at or after `from` in the range of the positions
    /// `filter` fixes first, ascending, each with whether it matches the
    /// rest of `filter` (a paged read counts those it passes over).
    pub fn matching_from<'s, K: Keys + Copy + 's>(
        &'s self,
        filter: &'s Filter<'s>,
        keys: K,
        from: &[u8],
    ) -> impl Iterator<Item = (u32, bool)> + 's {
        let fixed = filter.iter().take_while(|v| v.is_some()).count();
        let prefix = encoding::encode(filter[..fixed].iter().map(|v| v.unwrap_or_default()));
        let rest_fixed = filter[fixed..].iter().any(|v| v.is_some());
        let (c, i) = self.lower_bound(from.max(prefix.as_slice()), &keys);
        let first = self.chunks.get(c).map_or(&[][..], |ch| &ch[i..]);
        let rest = self.chunks.get(c + 1..).unwrap_or_default();
        first
            .iter()
            .chain(rest.iter().flatten())
            .copied()
            .take_while(move |&id| keys.key(id).starts_with(&prefix))
            .map(move |id| (id, !rest_fixed || matches(keys.key(id), filter)))
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Vec<u32>>()
            + self.chunks.iter().map(|c| c.capacity() * 4).sum::<usize>()
            + self.table.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;

    struct Names(Vec<Vec<u8>>);

    impl Keys for Names {
        fn key(&self, id: u32) -> &[u8] {
            &self.0[id as usize]
        }
    }

    /// Random inserts and removals (in order and not) against a map, with
    /// filtered listings.
    #[test]
    fn matches_a_sorted_map() {
        let mut rng = StdRng::seed_from_u64(3);
        let tuple = |a: u32, b: u32| encoding::encode([a.to_string().as_bytes(), &[b as u8]]);
        let names = Names((0..400u32).map(|i| tuple(i / 20 + 5, i % 20)).collect());
        let mut index = OrderedIds::default();
        let mut model: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        for id in 0..100u32 {
            index.insert(id, &names);
            model.insert(names.key(id).to_vec(), id);
        }
        for step in 0..5_000 {
            if step % 97 == 0 {
                // Bulk: everything under one leading value, or one trailing.
                let a = rng.gen_range(0..30u32).to_string().into_bytes();
                let b = vec![rng.gen_range(0..20u8)];
                let f: Vec<Option<&[u8]>> = if step % 2 == 0 {
                    vec![Some(&a), None]
                } else {
                    vec![None, Some(&b)]
                };
                let doomed: Vec<u32> = index.matching(&f, &names).collect();
                index.remove_all(&doomed, &names);
                model.retain(|k, _| !matches(k, &f));
                assert_eq!(index.len(), model.len(), "step {step}");
                assert!(index.iter().eq(model.values().copied()), "step {step}");
            }
            let id = rng.gen_range(0..400u32);
            let key = names.key(id).to_vec();
            if model.contains_key(&key) {
                assert_eq!(index.remove(&key, &names), Some(id), "step {step}");
                model.remove(&key);
            } else {
                assert_eq!(index.remove(&key, &names), None);
                index.insert(id, &names);
                model.insert(key.clone(), id);
            }
            assert_eq!(index.get(&key, &names), model.get(&key).copied());
            assert_eq!(index.len(), model.len());
            assert!(index
                .chunks
                .iter()
                .all(|c| !c.is_empty() && c.len() <= CHUNK));
            let a = rng.gen_range(0..30u32);
            let b = [rng.gen_range(0..20u8)];
            for filter in [
                vec![None, None],
                vec![Some(a.to_string().into_bytes()), None],
                vec![None, Some(b.to_vec())],
            ] {
                let f: Vec<Option<&[u8]>> = filter.iter().map(|v| v.as_deref()).collect();
                let want: Vec<u32> = model
                    .iter()
                    .filter(|(k, _)| matches(k, &f))
                    .map(|(_, &id)| id)
                    .collect();
                let got: Vec<u32> = index.matching(&f, &names).collect();
                assert_eq!(got, want, "step {step} {filter:?}");
            }
        }
    }
}
