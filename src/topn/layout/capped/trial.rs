//! A batch (`TOPN.INCRBY`) whose counts may pass the range of `i64`, tried
//! before anything changes, without copying anything: its pairs all write
//! one bucket, so only that bucket's counters move, and they are followed
//! in a small overlay of the slots the pairs touch, over the bucket as it is
//! (read, never cloned). Each pair is refused exactly where `Capped::incr`
//! would refuse it, the pairs applied one after the other: when its member's
//! count over the window would pass `i64::MAX`, or its counter would, or
//! the bucket's member bytes would pass their limit. O(p log p) for p pairs
//! and a lookup of each distinct member in the other buckets (the folded
//! sums), whatever the key's history. Pure Rust, no FFI.
//!
//! An add to a full bucket evicts its smallest counter (the smallest count,
//! ties by the smallest member): the smallest of the counters the pairs
//! changed (kept in order) and of the bucket's untouched ones, whose heap is
//! walked in order only as far as evictions reach (a frontier of places).

use hashbrown::HashMap;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use super::summary::{hash, Summary, MAX_COUNTERS};
use crate::topn::error::MAX_NAME_BYTES;

/// The bucket a batch writes, as the pairs tried so far would leave it.
struct Trial<'a> {
    /// The bucket as it is (`None`: the batch makes it).
    base: Option<&'a Summary>,
    capacity: usize,
    /// Slots the pairs changed (past the base's: new ones): member, count.
    changed: HashMap<usize, (&'a [u8], i64)>,
    /// The members the pairs counted, by member.
    placed: HashMap<&'a [u8], usize>,
    /// The changed slots in eviction order.
    order: BTreeSet<(i64, &'a [u8], usize)>,
    /// Places of the base's heap that may hold its smallest untouched
    /// counter: (count, member, place).
    frontier: BinaryHeap<Reverse<(i64, &'a [u8], usize)>>,
    len: usize,
    names: usize,
    evicted: bool,
}

impl<'a> Trial<'a> {
    fn new(base: Option<&'a Summary>, capacity: usize) -> Trial<'a> {
        let mut trial = Trial {
            base,
            capacity: capacity.min(MAX_COUNTERS),
            changed: HashMap::new(),
            placed: HashMap::new(),
            order: BTreeSet::new(),
            frontier: BinaryHeap::new(),
            len: base.map_or(0, Summary::len),
            names: base.map_or(0, Summary::name_bytes),
            evicted: base.is_some_and(|s| s.evicted),
        };
        trial.reach(0);
        trial
    }

    /// Puts place `i` of the base's heap on the frontier.
    fn reach(&mut self, i: usize) {
        if let Some((base, slot)) = self.base.and_then(|b| Some((b, b.heap_slot(i)?))) {
            let (member, count) = base.entry(slot);
            self.frontier.push(Reverse((count, member, i)));
        }
    }

    /// The smallest counter now: (count, member, slot).
    fn smallest(&mut self) -> Option<(i64, &'a [u8], usize)> {
        let untouched = loop {
            let Some(&Reverse((count, member, i))) = self.frontier.peek() else {
                break None;
            };
            let slot = self
                .base
                .and_then(|b| b.heap_slot(i))
                .expect("on the frontier");
            if !self.changed.contains_key(&slot) {
                break Some((count, member, slot));
            }
            self.frontier.pop();
            self.reach(2 * i + 1);
            self.reach(2 * i + 2);
        };
        match (untouched, self.order.first().copied()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What `member` counts in the bucket now: its counter, else the floor.
    fn part(&mut self, member: &[u8], h: u64) -> i64 {
        match self.find(member, h) {
            Some((_, count)) => count,
            None if self.evicted => self.smallest().map_or(0, |(count, _, _)| count),
            None => 0,
        }
    }

    /// `member`'s slot and count now.
    fn find(&self, member: &[u8], h: u64) -> Option<(usize, i64)> {
        if let Some(&slot) = self.placed.get(member) {
            return Some((slot, self.changed[&slot].1));
        }
        let base = self.base?;
        let slot = base.find(member, h)?;
        (!self.changed.contains_key(&slot)).then(|| (slot, base.entry(slot).1))
    }

    fn set(&mut self, slot: usize, member: &'a [u8], count: i64) {
        if let Some((old, old_count)) = self.changed.insert(slot, (member, count)) {
            self.order.remove(&(old_count, old, slot));
            if old != member {
                self.placed.remove(old);
            }
        }
        self.order.insert((count, member, slot));
        self.placed.insert(member, slot);
    }

    /// Adds `by` to `member` as `Summary::add` would; `None` where it refuses.
    fn add(&mut self, member: &'a [u8], h: u64, by: i64) -> Option<()> {
        if let Some((slot, count)) = self.find(member, h) {
            self.set(slot, member, count.checked_add(by)?);
            return Some(());
        }
        if self.len < self.capacity {
            if self.names + member.len() > MAX_NAME_BYTES {
                return None;
            }
            self.names += member.len();
            self.len += 1;
            self.set(self.len - 1, member, by);
            return Some(());
        }
        let (min, evicted, slot) = self.smallest()?;
        let count = min.checked_add(by)?;
        if self.names - evicted.len() + member.len() > MAX_NAME_BYTES {
            return None;
        }
        self.names = self.names - evicted.len() + member.len();
        self.set(slot, member, count);
        self.evicted = true;
        Some(())
    }
}

/// Tries `pairs`, all written to the bucket `base` (`None`: a new one) of
/// a key of `capacity`, one after the other; `others(member, hash)` is the
/// member's count over the window the batch writes, without that bucket.
/// `Err(i)`: pair `i` is the first refused (nothing was changed).
pub fn check<'a>(
    base: Option<&'a Summary>,
    capacity: usize,
    pairs: &[(i64, &'a [u8])],
    mut others: impl FnMut(&[u8], u64) -> i128,
) -> Result<(), usize> {
    let mut trial = Trial::new(base, capacity);
    let mut outside: HashMap<&[u8], i128> = HashMap::new();
    for (i, &(by, member)) in pairs.iter().enumerate() {
        let h = hash(member);
        let beside = *outside.entry(member).or_insert_with(|| others(member, h));
        let count = beside + i128::from(trial.part(member, h));
        if count + i128::from(by) > i128::from(i64::MAX) {
            return Err(i);
        }
        trial.add(member, h, by).ok_or(i)?;
    }
    Ok(())
}
