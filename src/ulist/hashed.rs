//! The hashed layout of a ULIST (`list.rs` keeps a small list compact):
//! any size, every operation bounded. Pure Rust, no FFI.
//!
//! Layout, chosen so a value costs less memory than in the gem's sets:
//! - every value is one fixed-size record in a chunked slab (no doubling
//!   slack): its bytes (the encoding of its VALUE values, inline up to 16
//!   bytes), its scope, its partition and its expiry;
//! - per scope (the encoding of its SCOPE values), a hash table of record
//!   numbers keyed by the value's bytes: the uniqueness check is one lookup;
//! - the partition index, keyed by the encoding of SCOPE then PARTITION
//!   values, with each partition's value count and latest expiry (a
//!   partition is listed while it holds a live value);
//! - an expiry queue of the records that expire, for background reclaim,
//!   by the second (8 bytes a value): reclaim takes a value once its second
//!   is over, up to a second after its exact time (which reads use).
//!
//! Time is always an argument: a value whose expiry is at or before the
//! time of a read is not there, whether or not it was reclaimed yet.

use super::entry::{Bytes, Row, ValueKeys, NEVER};
use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{rebuild, Mover, Pass};
use crate::tuples::encoding;
use crate::tuples::expiry::SecondQueue;
use crate::tuples::index::{matches, Filter, PartitionIndex};
use crate::tuples::page::{Page, Step};
use crate::tuples::prefetch::read_ahead;
use crate::tuples::sample::estimate;
use crate::tuples::table::{place_of, process_hasher, IdMap, Table, PLACES};
use hashbrown::DefaultHashBuilder;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;
use std::ops::Bound;

/// A value's record.
#[derive(Clone, Debug)]
struct Record {
    value: Bytes,
    /// Its scope's id.
    scope: u32,
    partition: u32,
    expire_at: i64,
}

/// Fixed-size records addressed by number, kept dense: removing one moves
/// the last record into its place, so memory follows the values held with
/// no free list. Chunked, so growing never copies a big list.
#[derive(Clone, Debug, Default)]
struct Slab(Chunked<Record>);

impl Slab {
    fn get(&self, n: u32) -> &Record {
        self.0.get(n as usize).expect("a stored record number")
    }

    fn used(&self) -> usize {
        self.0.len()
    }

    fn push(&mut self, record: Record) -> u32 {
        self.0.push(record);
        (self.0.len() - 1) as u32
    }

    /// Removes record `n`; the last record moves into its place. Returns the
    /// old number of the one that moved, if one did.
    fn swap_remove(&mut self, n: u32) -> Option<u32> {
        let last = (self.0.len() - 1) as u32;
        self.0.swap_remove(n as usize);
        (n != last).then_some(last)
    }

    fn heap_bytes(&self, samples: usize) -> usize {
        let spilled = estimate(self.0.iter(), self.used(), samples, |r| {
            if r.value.spilled() {
                r.value.capacity()
            } else {
                0
            }
        });
        self.0.heap_bytes() + spilled
    }
}

#[derive(Clone, Debug)]
struct Scope {
    id: u32,
    /// Record numbers, hashed by their value's bytes.
    values: Table<u32>,
}

#[derive(Clone, Debug)]
struct Partition {
    id: u32,
    values: u64,
    /// The latest expiry of its values (NEVER if one never expires).
    latest_expiry: i64,
}

#[derive(Clone, Debug)]
pub struct Hashed {
    /// How many SCOPE names the schema has.
    scope_names: usize,
    records: Slab,
    scopes: BTreeMap<Box<[u8]>, Scope>,
    /// Scope id -> its key in `scopes`.
    scope_keys: IdMap<Box<[u8]>>,
    partitions: PartitionIndex<Partition>,
    /// Partition id -> its key in `partitions`.
    partition_keys: IdMap<Box<[u8]>>,
    /// The last id given to a scope or partition.
    last_id: u32,
    /// Record numbers of the values that expire, by the second they expire
    /// in (8 bytes a value; the record keeps the exact time).
    expiry: SecondQueue,
    hasher: DefaultHashBuilder,
}

impl Hashed {
    pub fn new(scope_names: usize) -> Self {
        Hashed {
            scope_names,
            records: Slab::default(),
            scopes: BTreeMap::new(),
            scope_keys: IdMap::default(),
            partitions: PartitionIndex::default(),
            partition_keys: IdMap::default(),
            last_id: 0,
            expiry: SecondQueue::default(),
            hasher: process_hasher(),
        }
    }

    /// Values stored, expired ones not yet reclaimed included.
    pub fn len(&self) -> usize {
        self.records.used()
    }

    /// Partitions holding a stored value.
    pub fn partition_count(&self) -> usize {
        self.partitions.len()
    }

    fn scope_names(&self) -> usize {
        self.scope_names
    }

    fn next_id(&mut self) -> u32 {
        self.last_id = self.last_id.wrapping_add(1);
        self.last_id
    }

    /// The record of `value` in the scope keyed `scope_key`, if stored.
    fn find(&self, scope_key: &[u8], value: &[u8]) -> Option<u32> {
        self.find_hashed(scope_key, value, self.hasher.hash_one(value))
    }

    /// [`UList::find`] with the value's hash already known.
    fn find_hashed(&self, scope_key: &[u8], value: &[u8], hash: u64) -> Option<u32> {
        let scope = self.scopes.get(scope_key)?;
        let records = &self.records;
        scope
            .values
            .find(hash, |&n| records.get(n).value.as_slice() == value)
            .copied()
    }

    /// Stores a value known to be absent from its scope (`place`: SCOPE
    /// then PARTITION encodings).
    pub fn insert_new(&mut self, place: &[u8], value: &[u8], expire_at: i64) {
        let scope = &place[..encoding::prefix_len(place, self.scope_names)];
        let hash = self.hasher.hash_one(value);
        self.insert(scope, place, value.into(), hash, expire_at);
    }

    /// Whether `value` is stored in the scope keyed `scope_key`.
    pub fn contains(&self, scope_key: &[u8], value: &[u8]) -> bool {
        self.find(scope_key, value).is_some()
    }

    /// Every stored value as (place: SCOPE then PARTITION encodings, value
    /// encoding, expiry), in no order.
    pub fn stored(&self) -> impl Iterator<Item = (&[u8], &[u8], i64)> + '_ {
        self.records.0.iter().filter_map(move |r| {
            let place = self.partition_keys.get(r.partition)?;
            Some((&**place, r.value.as_slice(), r.expire_at))
        })
    }

    /// Adds a value at `at` with its absolute expiry (`NEVER` for none).
    /// True if the value is new within its scope at `at`: absent, or present
    /// but expired by then. A live value is left as it is (its expiry and
    /// partition stay).
    pub fn add(&mut self, keys: &ValueKeys, at: i64, expire_at: i64) -> bool {
        let hash = self.hasher.hash_one(keys.value.as_slice());
        if let Some(n) = self.find_hashed(keys.scope(), &keys.value, hash) {
            if self.records.get(n).expire_at > at {
                return false;
            }
            self.forget(n);
        }
        self.insert(
            keys.scope(),
            &keys.place,
            keys.value.clone(),
            hash,
            expire_at,
        );
        true
    }

    /// Gives a value live at `at` the expiry `expire_at` (sliding expiry);
    /// true if its expiry changed. Its partition stays.
    pub fn refresh(&mut self, keys: &ValueKeys, at: i64, expire_at: i64) -> bool {
        let hash = self.hasher.hash_one(keys.value.as_slice());
        let Some(n) = self.find_hashed(keys.scope(), &keys.value, hash) else {
            return false;
        };
        let record = self.records.get(n);
        if record.expire_at <= at || record.expire_at == expire_at {
            return false;
        }
        let Some(place) = self.partition_keys.get(record.partition).cloned() else {
            return false;
        };
        self.forget(n);
        self.insert(keys.scope(), &place, keys.value.clone(), hash, expire_at);
        true
    }

    /// Stores a value (hashed `hash`) known to be absent from its scope.
    fn insert(
        &mut self,
        scope_key: &[u8],
        partition_key: &[u8],
        value: Bytes,
        hash: u64,
        expire_at: i64,
    ) {
        let partition = match self.partitions.get_mut(partition_key) {
            Some(part) => {
                part.values += 1;
                part.latest_expiry = part.latest_expiry.max(expire_at);
                part.id
            }
            None => {
                let id = self.next_id();
                self.partition_keys.insert(id, partition_key.into());
                let new = Partition {
                    id,
                    values: 1,
                    latest_expiry: expire_at,
                };
                self.partitions.get_or_insert_with(partition_key, || new);
                id
            }
        };
        if !self.scopes.contains_key(scope_key) {
            let id = self.next_id();
            self.scope_keys.insert(id, scope_key.into());
            let values = Table::new();
            self.scopes.insert(scope_key.into(), Scope { id, values });
        }
        let scope = self.scopes.get_mut(scope_key).expect("made above");
        let n = self.records.push(Record {
            value,
            scope: scope.id,
            partition,
            expire_at,
        });
        if expire_at != NEVER {
            self.expiry.push(expire_at, n);
        }
        let (records, hasher) = (&self.records, &self.hasher);
        scope.values.insert_unique(hash, n, |&m| {
            hasher.hash_one(records.get(m).value.as_slice())
        });
    }

    /// Removes a stored record: from its scope, partition, the expiry queue
    /// and the slab. Record numbers above `n` may change (the last record
    /// takes its place).
    fn forget(&mut self, n: u32) {
        let record = self.records.get(n);
        let (scope, partition, expire_at) = (record.scope, record.partition, record.expire_at);
        let hash = self.hasher.hash_one(record.value.as_slice());
        if let Some(scope_key) = self.scope_keys.get(scope) {
            let (records, hasher) = (&self.records, &self.hasher);
            let emptied = self.scopes.get_mut(scope_key).is_some_and(|s| {
                s.values.remove(
                    hash,
                    |&m| m == n,
                    |&m| hasher.hash_one(records.get(m).value.as_slice()),
                );
                s.values.is_empty()
            });
            if emptied {
                self.scopes.remove(scope_key);
                self.scope_keys.remove(scope);
            }
        }
        if expire_at != NEVER {
            self.expiry.remove(expire_at, n);
        }
        if let Some(from) = self.records.swap_remove(n) {
            self.renumber(from, n);
        }
        self.release_value_of(partition);
    }

    /// The record numbered `from` is now numbered `to`.
    fn renumber(&mut self, from: u32, to: u32) {
        let record = self.records.get(to);
        let hash = self.hasher.hash_one(record.value.as_slice());
        if let Some(scope) = self
            .scope_keys
            .get(record.scope)
            .and_then(|k| self.scopes.get_mut(k))
        {
            if let Some(entry) = scope.values.find_mut(hash, |&m| m == from) {
                *entry = to;
            }
        }
        if record.expire_at != NEVER {
            self.expiry.remove(record.expire_at, from);
            self.expiry.push(record.expire_at, to);
        }
    }

    /// One value fewer in partition `id`; the partition goes with its last.
    fn release_value_of(&mut self, id: u32) {
        let Some(key) = self.partition_keys.get(id) else {
            return;
        };
        let emptied = self.partitions.get_mut(key).is_some_and(|p| {
            p.values -= 1;
            p.values == 0
        });
        if emptied {
            self.partitions.remove(key);
            self.partition_keys.remove(id);
        }
    }

    /// Whether the value is live in its scope at `now` (its partition, if
    /// `keys` names one, does not matter).
    pub fn has(&self, keys: &ValueKeys, now: i64) -> bool {
        self.find(keys.scope(), &keys.value)
            .is_some_and(|n| self.records.get(n).expire_at > now)
    }

    /// The partitions (SCOPE then PARTITION values) matching `filter` (over
    /// the same positions) that hold a live value at `now`, ascending.
    pub fn partitions(&self, filter: &Filter, now: i64) -> Vec<Row> {
        self.partitions
            .matching(filter)
            .filter(|(_, p)| p.latest_expiry > now)
            .filter_map(|(key, _)| encoding::decode(key).ok())
            .collect()
    }

    /// How many values of the partitions matching `filter` are live at
    /// `now`: from the partitions' counts when nothing stored can have
    /// expired yet, else by a walk of the matching scopes.
    pub fn count(&self, filter: &Filter, now: i64) -> usize {
        let maybe_expired = self.expiry.next_due().is_some_and(|end| end - 1000 <= now);
        if !maybe_expired {
            return self
                .partitions
                .matching(filter)
                .map(|(_, p)| p.values as usize)
                .sum();
        }
        let (scopes, wanted) = self.live_in(filter, now);
        self.live_records(&scopes, now, |r| wanted.contains_key(&r.partition))
            .count()
    }

    /// Values stored with an expiry.
    pub fn expiring(&self) -> usize {
        self.expiry.len()
    }

    /// Live values at `now` of the partitions matching `filter`, in
    /// ascending order of scope, then value.
    pub fn data(&self, filter: &Filter, now: i64) -> Vec<Row> {
        let (scopes, parts) = self.live_in(filter, now);
        let wanted: HashMap<u32, Row> = parts
            .into_iter()
            .map(|(id, key)| (id, encoding::decode(key).unwrap_or_default()))
            .collect();
        let mut rows = Vec::new();
        for scope in scopes {
            let one = [scope];
            let mut live: Vec<&Record> = self
                .live_records(&one, now, |r| wanted.contains_key(&r.partition))
                .collect();
            live.sort_unstable_by(|a, b| a.value.cmp(&b.value));
            for record in live {
                let mut row = encoding::decode(&record.value).unwrap_or_default();
                row.extend(wanted[&record.partition].iter().cloned());
                rows.push(row);
            }
        }
        rows
    }

    /// One page of [`Hashed::data`]'s rows, in the order of a paged read
    /// (`tuples::page`): scope by scope from the cursor's, each scope's
    /// table a shard at a time.
    pub fn data_page(&self, filter: &Filter, now: i64, page: &Page) -> (Vec<Row>, Vec<u8>) {
        let mut step = Step::new(page);
        let names = self.scope_names;
        let fixed = filter[..names].iter().take_while(|v| v.is_some()).count();
        let prefix = encoding::encode(filter[..fixed].iter().map(|v| v.unwrap_or_default()));
        let start = step.first_group(names).max(prefix.as_slice());
        let by_partition = filter[names..].iter().any(Option::is_some);
        // Each partition's row part (None: filtered out), decoded once a step.
        let mut parts: HashMap<u32, Option<Row>> = HashMap::new();
        let scopes = self
            .scopes
            .range::<[u8], _>((Bound::Included(start), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(&prefix));
        for (scope_key, scope) in scopes {
            if step.done() {
                break;
            }
            // A scope the filter leaves out is passed over whole: one entry
            // of the step's budget, whatever it holds.
            let wanted = matches(scope_key, filter);
            let (records, hasher) = (&self.records, &self.hasher);
            step.group(
                scope_key,
                |place| {
                    if !wanted {
                        return (Vec::new(), PLACES);
                    }
                    let (shard, end) = scope.values.shard_at(place);
                    let numbers = shard.copied().collect();
                    let entries = read_ahead(
                        numbers,
                        |n| records.get(n),
                        |n| {
                            let value = records.get(n).value.as_slice();
                            (place_of(hasher.hash_one(value)), value.into(), n)
                        },
                    );
                    (entries.collect(), end)
                },
                |_, n| {
                    let record = records.get(n);
                    if record.expire_at <= now {
                        return None;
                    }
                    let part = parts.entry(record.partition).or_insert_with(|| {
                        let key = self.partition_keys.get(record.partition)?;
                        (!by_partition || matches(key, filter))
                            .then(|| encoding::decode(key).unwrap_or_default())
                    });
                    let mut row = encoding::decode(&record.value).unwrap_or_default();
                    row.extend(part.as_ref()?.iter().cloned());
                    Some(row)
                },
            );
        }
        step.finish()
    }

    /// One page of [`Hashed::partitions`]' rows, from the cursor's.
    pub fn partitions_page(&self, filter: &Filter, now: i64, page: &Page) -> (Vec<Row>, Vec<u8>) {
        let mut step = Step::new(page);
        for (key, part, matching) in self.partitions.matching_from(filter, step.after()) {
            if step.done() {
                break;
            }
            let live = matching && part.latest_expiry > now;
            step.key(key, live.then(|| encoding::decode(key).unwrap_or_default()));
        }
        step.finish()
    }

    /// The scopes (ascending) of the partitions matching `filter` that may
    /// hold a live value at `now`, and those partitions' keys by id.
    fn live_in<'s>(
        &'s self,
        filter: &'s Filter,
        now: i64,
    ) -> (Vec<&'s [u8]>, HashMap<u32, &'s [u8]>) {
        let scope_names = self.scope_names();
        let mut wanted = HashMap::new();
        let mut scopes: Vec<&[u8]> = Vec::new();
        for (key, part) in self.partitions.matching(filter) {
            if part.latest_expiry <= now {
                continue;
            }
            let scope = &key[..encoding::prefix_len(key, scope_names)];
            if scopes.last() != Some(&scope) {
                scopes.push(scope);
            }
            wanted.insert(part.id, key);
        }
        (scopes, wanted)
    }

    /// The records of `scopes` live at `now` that `keep` accepts.
    fn live_records<'s>(
        &'s self,
        scopes: &'s [&[u8]],
        now: i64,
        keep: impl Fn(&Record) -> bool + 's,
    ) -> impl Iterator<Item = &'s Record> + 's {
        scopes
            .iter()
            .filter_map(|scope| self.scopes.get(*scope))
            .flat_map(|scope| scope.values.iter())
            .map(|&n| self.records.get(n))
            .filter(move |r| r.expire_at > now && keep(r))
    }

    /// Deletes the partitions matching `filter` with all their values.
    /// Returns (partitions deleted, of which held a live value at `now`).
    pub fn delete(&mut self, filter: &Filter, now: i64) -> (usize, usize) {
        let removed = self.partitions.remove_matching(filter);
        let scope_names = self.scope_names();
        let mut by_scope: BTreeMap<Vec<u8>, HashSet<u32>> = BTreeMap::new();
        let mut live = 0;
        for (key, part) in &removed {
            live += (part.latest_expiry > now) as usize;
            self.partition_keys.remove(part.id);
            let scope = key[..encoding::prefix_len(key, scope_names)].to_vec();
            by_scope.entry(scope).or_default().insert(part.id);
        }
        for (scope_key, ids) in by_scope {
            let Some(scope) = self.scopes.get(scope_key.as_slice()) else {
                continue;
            };
            let mut doomed: Vec<u32> = scope
                .values
                .iter()
                .copied()
                .filter(|&n| ids.contains(&self.records.get(n).partition))
                .collect();
            // Highest first: the record that moves into a freed number is
            // then never one still to remove, nor moved below one. Their
            // partitions are gone already: forgetting finds none.
            doomed.sort_unstable_by(|a, b| b.cmp(a));
            for n in doomed {
                self.forget(n);
            }
        }
        (removed.len(), live)
    }

    /// When the next value expires, if one does.
    pub fn next_due(&self) -> Option<i64> {
        self.expiry.next_due()
    }

    /// The tuple encoding of a record's SCOPE then VALUE values: how
    /// [`UList::remove_items`] names it.
    fn item(&self, n: u32) -> Vec<u8> {
        let record = self.records.get(n);
        let mut item = self
            .scope_keys
            .get(record.scope)
            .map(|k| k.to_vec())
            .unwrap_or_default();
        item.extend_from_slice(&record.value);
        item
    }

    /// Removes up to `budget` values whose second of expiry is over at
    /// `now`, earliest second first.
    /// Returns each as one tuple encoding: its SCOPE then VALUE values (what
    /// [`UList::remove_items`] takes, on replicas and AOF replays).
    pub fn reclaim(&mut self, now: i64, budget: usize) -> Vec<Vec<u8>> {
        let mut items = Vec::new();
        while items.len() < budget {
            // One at a time: forgetting a record may renumber another.
            // A value goes once its whole second is over: its exact time,
            // which reads use, is past then too.
            match self.expiry.first_due(now) {
                Some(n) => {
                    items.push(self.item(n));
                    self.forget(n);
                }
                None => break,
            }
        }
        items
    }

    /// Removes the values named by `items` (as [`UList::reclaim`] returns
    /// them), whatever their expiry: a master decided they were gone.
    /// Returns how many were there.
    pub fn remove_items(&mut self, items: &[&[u8]]) -> usize {
        let scope_names = self.scope_names();
        let mut removed = 0;
        for item in items {
            let (scope_key, value) = item.split_at(encoding::prefix_len(item, scope_names));
            if let Some(n) = self.find(scope_key, value) {
                self.forget(n);
                removed += 1;
            }
        }
        removed
    }

    /// Heap bytes held, each collection's variable part sized from `samples`
    /// of its items (0: all). B-tree maps count twice their entries (their
    /// nodes are about half full when keys arrive in order, as expiry times
    /// do).
    pub fn mem_usage(&self, samples: usize) -> usize {
        let btree = |entry: usize, n: usize| n * entry * 2;
        let scopes = estimate(self.scopes.iter(), self.scopes.len(), samples, |(k, s)| {
            k.len() * 2 + s.values.allocation_size()
        }) + btree(std::mem::size_of::<(Box<[u8]>, Scope)>(), self.scopes.len());
        self.records.heap_bytes(samples)
            + scopes
            + self.scope_keys.allocation_size()
            + self.partition_keys.allocation_size()
            + self.partitions.heap_bytes(samples)
            + btree(std::mem::size_of::<u64>(), self.expiry.len())
    }

    /// About how many allocations freeing it takes (a value may own one).
    pub fn free_effort(&self) -> usize {
        self.records.0.allocations()
            + self.records.used()
            + self.scopes.len()
            + self.partitions.len()
    }
}

impl Hashed {
    /// Offers its blocks to a defrag pass: the records with their spilled
    /// values, each scope's table, the scope tree, the id maps, the
    /// partition index and the expiry queue (trees when small).
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.records
            .0
            .defrag(pass, |r, m| m.small_vec(&mut r.value));
        pass.each(self.scopes.values_mut(), |scope, pass| {
            scope.values.defrag(pass)
        });
        let scopes = self.scopes.len();
        rebuild(pass, &mut self.scopes, scopes, |(key, _), m| m.slice(key));
        self.scope_keys.defrag(pass, |key, m| m.slice(key));
        self.partitions.defrag(pass);
        self.partition_keys.defrag(pass, |key, m| m.slice(key));
        self.expiry.defrag(pass);
    }
}

#[cfg(test)]
impl Hashed {
    /// Every record is reachable from its scope's table under its own number,
    /// and the expiry queue holds exactly the expiring records.
    pub fn check_invariants(&self) {
        let mut reachable = 0;
        for (key, scope) in &self.scopes {
            assert_eq!(
                self.scope_keys.get(scope.id).map(AsRef::as_ref),
                Some(key.as_ref())
            );
            for &n in scope.values.iter() {
                let r = self.records.get(n);
                assert_eq!(r.scope, scope.id);
                assert_eq!(self.find(key, &r.value), Some(n));
                assert!(self.partition_keys.get(r.partition).is_some());
                reachable += 1;
            }
        }
        assert_eq!(reachable, self.records.used());
        let expiring = (0..self.records.used() as u32)
            .filter(|&n| self.records.get(n).expire_at != NEVER)
            .count();
        assert_eq!(self.expiry.len(), expiring);
        let counted: u64 = self.partitions.iter().map(|(_, p)| p.values).sum();
        assert_eq!(counted, self.records.used() as u64);
    }
}
