//! The shard directory of a [`super::table::Table`]: its shards in order,
//! the first [`SEGMENT`] in one vector (a small table's one shard inline),
//! the others in segments of `SEGMENT` made whole at once. So a table that
//! gains a shard never copies the directory: a vector of shard headers (32
//! bytes a shard of about 512 entries) doubling copied them all in one
//! operation, 2 MB at 64 million entries. Pure Rust, no FFI.

use hashbrown::HashTable;
use smallvec::SmallVec;

use super::defrag::{Mover, Pass};

/// Shards of a segment: 32 KB of headers, about 500,000 entries.
const SEGMENT: usize = 1024;

#[derive(Clone, Debug)]
pub(super) struct Shards<T> {
    /// The first shards, up to `SEGMENT` (grown as a vector: at most a
    /// segment's headers copied at once).
    first: SmallVec<[HashTable<T>; 1]>,
    /// The others, `SEGMENT` a segment (the last may hold fewer), each
    /// allocated whole when it starts.
    rest: Vec<Vec<HashTable<T>>>,
}

impl<T> Shards<T> {
    /// One empty shard.
    pub fn one() -> Self {
        Shards {
            first: smallvec::smallvec![HashTable::new()],
            rest: Vec::new(),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self.rest.last() {
            None => self.first.len(),
            Some(last) => SEGMENT * self.rest.len() + last.len(),
        }
    }

    /// The shard of a table of one shard (most tables; `rest` has shards only
    /// once `first` is full).
    #[inline]
    pub fn only(&self) -> Option<&HashTable<T>> {
        match &self.first[..] {
            [only] => Some(only),
            _ => None,
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> &HashTable<T> {
        match i.checked_sub(SEGMENT) {
            None => &self.first[i],
            Some(j) => &self.rest[j / SEGMENT][j % SEGMENT],
        }
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut HashTable<T> {
        match i.checked_sub(SEGMENT) {
            None => &mut self.first[i],
            Some(j) => &mut self.rest[j / SEGMENT][j % SEGMENT],
        }
    }

    /// Adds a shard at the end.
    pub fn push(&mut self, shard: HashTable<T>) {
        if self.first.len() < SEGMENT {
            return self.first.push(shard);
        }
        match self.rest.last_mut() {
            Some(last) if last.len() < SEGMENT => last.push(shard),
            _ => {
                let mut segment = Vec::with_capacity(SEGMENT);
                segment.push(shard);
                self.rest.push(segment);
            }
        }
    }

    /// Takes the last shard (the first vector gives back its room as it
    /// empties).
    pub fn pop(&mut self) -> Option<HashTable<T>> {
        if let Some(last) = self.rest.last_mut() {
            let shard = last.pop();
            if last.is_empty() {
                self.rest.pop();
            }
            return shard;
        }
        let shard = self.first.pop();
        if self.first.spilled() && self.first.len() * 4 < self.first.capacity() {
            self.first.shrink_to_fit();
        }
        shard
    }

    pub fn iter(&self) -> impl Iterator<Item = &HashTable<T>> + '_ {
        self.first.iter().chain(self.rest.iter().flatten())
    }

    /// Heap bytes of the directory itself (not of the shards' entries).
    pub fn heap_bytes(&self) -> usize {
        let header = std::mem::size_of::<HashTable<T>>();
        let first = match self.first.spilled() {
            true => self.first.capacity() * header,
            false => 0,
        };
        let segments: usize = self.rest.iter().map(Vec::capacity).sum();
        first + segments * header + self.rest.capacity() * std::mem::size_of::<Vec<HashTable<T>>>()
    }

    /// Offers the directory's blocks to a defrag pass (one unit), then each
    /// shard to `shard`.
    pub fn defrag<M: Mover>(
        &mut self,
        pass: &mut Pass<M>,
        mut shard: impl FnMut(&mut HashTable<T>, &mut Pass<M>),
    ) {
        pass.work(|m| {
            m.small_vec(&mut self.first);
            m.vec(&mut self.rest);
            self.rest.iter_mut().for_each(|segment| m.vec(segment));
        });
        pass.each(0..self.len(), |i, pass| shard(self.get_mut(i), pass));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shards pushed and popped keep their order and place: past the first
    /// segment, no shard header moves as the directory grows.
    #[test]
    fn shards_stay_put_past_the_first_segment() {
        let mut shards: Shards<u32> = Shards::one();
        let n = 5 * SEGMENT + 7;
        for i in 1..n {
            let mut t = HashTable::new();
            t.insert_unique(i as u64, i as u32, |&v| v as u64);
            shards.push(t);
        }
        assert_eq!(shards.len(), n);
        let place = |s: &Shards<u32>, i: usize| s.get(i) as *const HashTable<u32>;
        let kept: Vec<*const HashTable<u32>> = (SEGMENT..n).map(|i| place(&shards, i)).collect();
        let firsts: Vec<*const HashTable<u32>> = (0..SEGMENT).map(|i| place(&shards, i)).collect();
        for i in n..n + 3 * SEGMENT {
            shards.push(HashTable::new());
            assert_eq!(shards.len(), i + 1);
        }
        assert!((SEGMENT..n).map(|i| place(&shards, i)).eq(kept));
        assert!((0..SEGMENT).map(|i| place(&shards, i)).eq(firsts));
        for i in 1..n {
            assert_eq!(shards.get(i).len(), 1, "shard {i}");
            assert!(shards.get(i).find(i as u64, |&v| v == i as u32).is_some());
        }
        assert_eq!(shards.iter().map(HashTable::len).sum::<usize>(), n - 1);
        while shards.len() > 1 {
            shards.pop();
        }
        assert!(shards.only().is_some());
        assert_eq!(shards.pop().map(|s| s.len()), Some(0));
        assert_eq!(shards.len(), 0);
    }
}
