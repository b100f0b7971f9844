//! Partition index: partitions keyed by the encoding of their tuple, kept in
//! bytewise order inside the key, listed and deleted by any subset of their
//! names (a filter fixes some positions of the tuple). A filter that fixes
//! the first positions scans only the matching range; other positions are
//! checked one partition at a time. The keyspace is never scanned.

use super::defrag::{rebuild, Mover, Pass};
use super::encoding;
use super::sample::estimate;
use std::collections::BTreeMap;
use std::ops::Bound;

/// A filter: for each position of a partition tuple, the value it must have,
/// or `None` for any.
pub type Filter<'a> = [Option<&'a [u8]>];

#[derive(Clone, Debug)]
pub struct PartitionIndex<P> {
    map: BTreeMap<Box<[u8]>, P>,
}

impl<P> Default for PartitionIndex<P> {
    fn default() -> Self {
        PartitionIndex {
            map: BTreeMap::new(),
        }
    }
}

impl<P> PartitionIndex<P> {
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut P> {
        self.map.get_mut(key)
    }

    /// The partition of `key`, made with `new` if missing.
    pub fn get_or_insert_with(&mut self, key: &[u8], new: impl FnOnce() -> P) -> &mut P {
        if !self.map.contains_key(key) {
            self.map.insert(key.into(), new());
        }
        self.map.get_mut(key).expect("inserted above")
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<P> {
        self.map.remove(key)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Offers its blocks to a defrag pass: the tree and its keys, rebuilt
    /// when small ([`rebuild`]).
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        let len = self.map.len();
        rebuild(pass, &mut self.map, len, |(key, _), m| m.slice(key));
    }

    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &P)> {
        self.map.iter().map(|(k, p)| (&**k, p))
    }

    /// Partitions whose tuple matches `filter`, in ascending order.
    pub fn matching<'s>(
        &'s self,
        filter: &'s Filter<'s>,
    ) -> impl Iterator<Item = (&'s [u8], &'s P)> + 's {
        self.matching_from(filter, &[])
            .filter(|&(_, _, matching)| matching)
            .map(|(k, p, _)| (k, p))
    }

    /// The partitions at or after `from` in the range of the positions
    /// `filter` fixes first, ascending, each with whether it matches the
    /// rest of `filter` (a paged read counts those it passes over).
    pub fn matching_from<'s>(
        &'s self,
        filter: &'s Filter<'s>,
        from: &[u8],
    ) -> impl Iterator<Item = (&'s [u8], &'s P, bool)> + 's {
        let fixed = filter.iter().take_while(|v| v.is_some()).count();
        let prefix = encoding::encode(filter[..fixed].iter().map(|v| v.unwrap_or_default()));
        let rest_fixed = filter[fixed..].iter().any(|v| v.is_some());
        let start = from.max(prefix.as_slice()).to_vec();
        self.map
            .range::<[u8], _>((Bound::Included(start.as_slice()), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(move |(k, p)| (&**k, p, !rest_fixed || matches(k, filter)))
    }

    /// Removes the partitions matching `filter`; returns them, ascending.
    pub fn remove_matching(&mut self, filter: &Filter) -> Vec<(Box<[u8]>, P)> {
        let keys: Vec<Box<[u8]>> = self.matching(filter).map(|(k, _)| k.into()).collect();
        keys.into_iter()
            .filter_map(|k| self.map.remove_entry(&k))
            .collect()
    }

    /// Heap bytes of the keys and the tree, about (nodes about 3/4 full).
    /// Heap bytes held, the keys' sized from `samples` of them (0: all).
    pub fn heap_bytes(&self, samples: usize) -> usize {
        estimate(self.map.keys(), self.map.len(), samples, |k| k.len())
            + self.map.len() * std::mem::size_of::<(Box<[u8]>, P)>() * 4 / 3
    }
}

/// Whether the partition encoded as `key` has the values `filter` fixes.
pub(crate) fn matches(key: &[u8], filter: &Filter) -> bool {
    encoding::decode(key).is_ok_and(|elements| {
        filter
            .iter()
            .zip(&elements)
            .all(|(want, have)| want.is_none_or(|w| w == have.as_slice()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(parts: &[&str]) -> Vec<u8> {
        encoding::encode(parts.iter().map(|p| p.as_bytes()))
    }

    fn index() -> PartitionIndex<u32> {
        let mut idx = PartitionIndex::default();
        let rows = [
            ["2024-01", "c1", "d1"],
            ["2024-01", "c1", "d2"],
            ["2024-01", "c2", "d1"],
            ["2024-02", "c1", "d1"],
            ["2024-0", "c1:d1", ""],
        ];
        for (i, r) in rows.iter().enumerate() {
            *idx.get_or_insert_with(&key(r), || 0) = i as u32;
        }
        idx
    }

    fn found(idx: &PartitionIndex<u32>, filter: &[Option<&str>]) -> Vec<u32> {
        let filter: Vec<Option<&[u8]>> = filter.iter().map(|v| v.map(str::as_bytes)).collect();
        idx.matching(&filter).map(|(_, p)| *p).collect()
    }

    #[test]
    fn filters_by_any_subset_in_order() {
        let idx = index();
        assert_eq!(found(&idx, &[None, None, None]), [4, 0, 1, 2, 3]);
        assert_eq!(found(&idx, &[Some("2024-01"), None, None]), [0, 1, 2]);
        assert_eq!(found(&idx, &[Some("2024-01"), Some("c1"), None]), [0, 1]);
        assert_eq!(found(&idx, &[None, Some("c1"), None]), [0, 1, 3]);
        assert_eq!(found(&idx, &[None, None, Some("d1")]), [0, 2, 3]);
        assert_eq!(found(&idx, &[Some("2024-0"), None, None]), [4]);
        assert_eq!(found(&idx, &[None, Some("c1:d1"), Some("")]), [4]);
        assert_eq!(found(&idx, &[Some("2025"), None, None]), Vec::<u32>::new());
    }

    #[test]
    fn removes_only_the_matching() {
        let mut idx = index();
        let filter = [None, Some(&b"c1"[..]), Some(&b"d1"[..])];
        let gone: Vec<u32> = idx
            .remove_matching(&filter)
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert_eq!(gone, [0, 3]);
        assert_eq!(idx.len(), 3);
        assert_eq!(found(&idx, &[None, None, None]), [4, 1, 2]);
    }
}
