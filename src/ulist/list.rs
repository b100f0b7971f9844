//! The data of one ULIST key: values unique within their scope, each kept in
//! the partition where it was added, with an optional expiry. Pure Rust, no
//! FFI; `value.rs` puts it in a key.
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
//! - an expiry queue of the records that expire, for background reclaim.
//!
//! Time is always an argument: a value whose expiry is at or before the
//! time of a read is not there, whether or not it was reclaimed yet.

use crate::args::MAX_TTL_S;
use crate::tuples::chunked::Chunked;
use crate::tuples::encoding;
use crate::tuples::expiry::ExpiryQueue;
use crate::tuples::index::{Filter, PartitionIndex};
use crate::tuples::sample::estimate;
use crate::tuples::schema::{put_blob, DecodeError, Reader, Role, Schema};
use crate::tuples::table::{IdMap, Table};
use hashbrown::DefaultHashBuilder;
use smallvec::SmallVec;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasher;

/// Encoded bytes, inline up to 16 (most values need no allocation).
pub type Bytes = SmallVec<[u8; 16]>;

/// The expiry of a value that never expires.
pub const NEVER: i64 = i64::MAX;

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
pub struct UList {
    schema: Schema,
    /// EXPIRE s given at CREATE, for ADDs without EXPIRE/NEVER.
    default_expire_s: Option<i64>,
    records: Slab,
    scopes: BTreeMap<Box<[u8]>, Scope>,
    /// Scope id -> its key in `scopes`.
    scope_keys: IdMap<Box<[u8]>>,
    partitions: PartitionIndex<Partition>,
    /// Partition id -> its key in `partitions`.
    partition_keys: IdMap<Box<[u8]>>,
    /// The last id given to a scope or partition.
    last_id: u32,
    /// Record numbers by expiry.
    expiry: ExpiryQueue<u32>,
    hasher: DefaultHashBuilder,
}

/// The encodings a value is found and kept under, made once per call.
pub struct ValueKeys {
    /// SCOPE then PARTITION values; the first `scope_len` bytes are the scope.
    place: SmallVec<[u8; 64]>,
    scope_len: usize,
    value: Bytes,
}

impl ValueKeys {
    /// The keys of a value given the values of its SCOPE, PARTITION (none
    /// for a lookup) and VALUE names, each in declared order.
    pub fn new<'a>(
        scope: impl IntoIterator<Item = &'a [u8]>,
        partition: impl IntoIterator<Item = &'a [u8]>,
        value: impl IntoIterator<Item = &'a [u8]>,
    ) -> Self {
        let mut place = SmallVec::new();
        scope
            .into_iter()
            .for_each(|e| encoding::push_element(&mut place, e));
        let scope_len = place.len();
        partition
            .into_iter()
            .for_each(|e| encoding::push_element(&mut place, e));
        let mut encoded = Bytes::new();
        value
            .into_iter()
            .for_each(|e| encoding::push_element(&mut encoded, e));
        ValueKeys {
            place,
            scope_len,
            value: encoded,
        }
    }

    fn scope(&self) -> &[u8] {
        &self.place[..self.scope_len]
    }
}

/// One live value: the values of the schema's VALUE, SCOPE and PARTITION
/// names, in that order, each in declared order.
pub type Row = Vec<Vec<u8>>;

impl UList {
    pub fn new(schema: Schema, default_expire_s: Option<i64>) -> Self {
        UList {
            schema,
            default_expire_s,
            records: Slab::default(),
            scopes: BTreeMap::new(),
            scope_keys: IdMap::default(),
            partitions: PartitionIndex::default(),
            partition_keys: IdMap::default(),
            last_id: 0,
            expiry: ExpiryQueue::default(),
            hasher: DefaultHashBuilder::default(),
        }
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn default_expire_s(&self) -> Option<i64> {
        self.default_expire_s
    }

    /// Values stored, expired ones not yet reclaimed included.
    #[cfg(test)]
    pub fn stored_values(&self) -> u64 {
        self.records.used() as u64
    }

    fn scope_names(&self) -> usize {
        self.schema.of(Role::Scope).len()
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

    /// Whether anything stored expires: if not, and an add's value never
    /// expires, the add's outcome does not depend on its time.
    pub fn has_expiring_values(&self) -> bool {
        self.expiry.next_due().is_some()
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

    /// Live values at `now` of the partitions matching `filter`, in
    /// ascending order of scope, then value.
    pub fn data(&self, filter: &Filter, now: i64) -> Vec<Row> {
        let scope_names = self.scope_names();
        let mut wanted: HashMap<u32, Row> = HashMap::new();
        let mut scopes: Vec<&[u8]> = Vec::new();
        for (key, part) in self.partitions.matching(filter) {
            if part.latest_expiry <= now {
                continue;
            }
            let scope = &key[..encoding::prefix_len(key, scope_names)];
            if scopes.last() != Some(&scope) {
                scopes.push(scope);
            }
            wanted.insert(part.id, encoding::decode(key).unwrap_or_default());
        }
        let mut rows = Vec::new();
        for scope in scopes {
            let Some(scope) = self.scopes.get(scope) else {
                continue;
            };
            let mut live: Vec<&Record> = scope
                .values
                .iter()
                .map(|&n| self.records.get(n))
                .filter(|r| r.expire_at > now && wanted.contains_key(&r.partition))
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

    /// Removes up to `budget` values expired at `now`, earliest first.
    /// Returns each as one tuple encoding: its SCOPE then VALUE values (what
    /// [`UList::remove_items`] takes, on replicas and AOF replays).
    pub fn reclaim(&mut self, now: i64, budget: usize) -> Vec<Vec<u8>> {
        let mut items = Vec::new();
        while items.len() < budget {
            // One at a time: forgetting a record may renumber another.
            match self.expiry.first() {
                Some((due, n)) if due <= now => {
                    items.push(self.item(n));
                    self.forget(n);
                }
                _ => break,
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

    /// Every stored value as `(scope values, partition values, value
    /// values, expire_at)`, for AOF rewrite.
    pub fn entries(&self) -> impl Iterator<Item = (Row, Row, Row, i64)> + '_ {
        let scope_names = self.scope_names();
        self.scopes.values().flat_map(move |scope| {
            scope.values.iter().filter_map(move |&n| {
                let record = self.records.get(n);
                let key = self.partition_keys.get(record.partition)?;
                let mut where_ = encoding::decode(key).ok()?;
                let partition = where_.split_off(scope_names);
                Some((
                    where_,
                    partition,
                    encoding::decode(&record.value).ok()?,
                    record.expire_at,
                ))
            })
        })
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
            + btree(std::mem::size_of::<(i64, u32)>(), self.expiry.len())
            + self.schema.len() * 32
    }

    /// About how many allocations freeing it takes (a value may own one).
    pub fn free_effort(&self) -> usize {
        self.records.0.allocations()
            + self.records.used()
            + self.scopes.len()
            + self.partitions.len()
    }

    /// `schema, u8 has_default, i64 default_expire_s, u32 partitions x blob
    /// key, u64 values x (u32 partition index, blob value, i64 expire_at)`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.schema.encode(&mut out);
        out.push(self.default_expire_s.is_some() as u8);
        out.extend_from_slice(&self.default_expire_s.unwrap_or(0).to_le_bytes());
        let mut index: HashMap<u32, u32> = HashMap::new();
        out.extend_from_slice(&(self.partitions.len() as u32).to_le_bytes());
        for (i, (key, part)) in self.partitions.iter().enumerate() {
            index.insert(part.id, i as u32);
            put_blob(&mut out, key);
        }
        out.extend_from_slice(&(self.records.used() as u64).to_le_bytes());
        for scope in self.scopes.values() {
            let mut numbers: Vec<u32> = scope.values.iter().copied().collect();
            numbers.sort_unstable_by(|&a, &b| {
                self.records.get(a).value.cmp(&self.records.get(b).value)
            });
            for n in numbers {
                let record = self.records.get(n);
                out.extend_from_slice(&index[&record.partition].to_le_bytes());
                put_blob(&mut out, &record.value);
                out.extend_from_slice(&record.expire_at.to_le_bytes());
            }
        }
        out
    }

    /// The inverse of `encode`; an error saying what is wrong for bytes it
    /// cannot trust.
    pub fn decode(bytes: &[u8]) -> Result<UList, DecodeError> {
        let mut r = Reader { buf: bytes };
        let schema = Schema::decode(&mut r)?;
        if schema.of(Role::Value).is_empty() {
            return Err(DecodeError::Invalid("a schema without VALUE names"));
        }
        let default_expire_s = match (r.u8()?, r.i64()?) {
            (0, 0) => None,
            (1, s) if (1..=MAX_TTL_S).contains(&s) => Some(s),
            _ => return Err(DecodeError::Invalid("default expiry")),
        };
        let mut list = UList::new(schema, default_expire_s);
        let (scope_names, partition_names, value_names) = (
            list.schema.of(Role::Scope).len(),
            list.schema.of(Role::Partition).len(),
            list.schema.of(Role::Value).len(),
        );
        let is_tuple = |bytes: &[u8], n: usize| encoding::decode(bytes).is_ok_and(|e| e.len() == n);
        let count = r.count("partition", 4, false)?;
        let mut keys = Vec::with_capacity(count);
        for _ in 0..count {
            let key = r.blob()?;
            if !is_tuple(key, scope_names + partition_names) {
                return Err(DecodeError::Invalid("partition key: bad tuple"));
            }
            keys.push(key);
        }
        for _ in 0..r.count("value", 16, true)? {
            let key = *keys
                .get(r.u32()? as usize)
                .ok_or(DecodeError::Invalid("partition number"))?;
            let value = r.blob()?;
            let expire_at = r.i64()?;
            if !is_tuple(value, value_names) {
                return Err(DecodeError::Invalid("value: bad tuple"));
            }
            let scope_key = &key[..encoding::prefix_len(key, scope_names)];
            let hash = list.hasher.hash_one(value);
            if list.find_hashed(scope_key, value, hash).is_some() {
                return Err(DecodeError::Invalid("a value twice in its scope"));
            }
            list.insert(scope_key, key, value.into(), hash, expire_at);
        }
        match r.is_empty() {
            true => Ok(list),
            false => Err(DecodeError::Invalid("bytes after the last value")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::OptionSpec;
    use crate::ulist::command::DECLARATION;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap as Map;

    /// `add` and `has` with the tuples spelled out.
    trait Tuples {
        fn add_t(&mut self, s: &[&[u8]], p: &[&[u8]], v: &[&[u8]], at: i64, exp: i64) -> bool;
        fn has_t(&self, s: &[&[u8]], v: &[&[u8]], now: i64) -> bool;
    }

    impl Tuples for UList {
        fn add_t(&mut self, s: &[&[u8]], p: &[&[u8]], v: &[&[u8]], at: i64, exp: i64) -> bool {
            let keys = ValueKeys::new(s.iter().copied(), p.iter().copied(), v.iter().copied());
            self.add(&keys, at, exp)
        }
        fn has_t(&self, s: &[&[u8]], v: &[&[u8]], now: i64) -> bool {
            self.has(
                &ValueKeys::new(s.iter().copied(), [], v.iter().copied()),
                now,
            )
        }
    }

    fn list(decl: &[&str]) -> UList {
        let t: Vec<&[u8]> = decl.iter().map(|s| s.as_bytes()).collect();
        let (schema, []) = Schema::parse::<0>(&t, &DECLARATION, &[] as &[OptionSpec; 0]).unwrap();
        UList::new(schema, None)
    }

    fn b(s: &str) -> &[u8] {
        s.as_bytes()
    }

    fn strs(rows: Vec<Row>) -> Vec<Vec<String>> {
        rows.into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| String::from_utf8_lossy(&v).into_owned())
                    .collect()
            })
            .collect()
    }

    /// The gem's company users by month, partitioned by day.
    #[test]
    fn gem_company_users_by_month() {
        let mut l = list(&[
            "VALUE",
            "company_id",
            "user_id",
            "SCOPE",
            "start_month_date",
            "PARTITION",
            "date",
        ]);
        let add = |l: &mut UList, c: &str, u: &str, d: &str, m: &str| {
            l.add_t(&[b(m)], &[b(d)], &[b(c), b(u)], 0, NEVER)
        };
        let mut new = 0;
        for _ in 0..2 {
            new += add(&mut l, "1", "11", "2013-08-10", "2013-08-01") as i32;
        }
        for _ in 0..3 {
            new += add(&mut l, "1", "22", "2013-08-10", "2013-08-01") as i32;
        }
        for _ in 0..3 {
            new += add(&mut l, "1", "22", "2013-09-05", "2013-09-01") as i32;
        }
        for _ in 0..3 {
            new += add(&mut l, "2", "11", "2013-08-10", "2013-08-01") as i32;
        }
        for _ in 0..1 {
            new += add(&mut l, "2", "22", "2013-08-11", "2013-08-01") as i32;
        }
        assert_eq!(new, 5);
        let all = [None, None];
        assert_eq!(
            strs(l.partitions(&all, 1)),
            [
                ["2013-08-01", "2013-08-10"],
                ["2013-08-01", "2013-08-11"],
                ["2013-09-01", "2013-09-05"]
            ]
        );
        assert_eq!(
            strs(l.data(&[Some(b("2013-08-01")), Some(b("2013-08-10"))], 1)),
            [
                ["1", "11", "2013-08-01", "2013-08-10"],
                ["1", "22", "2013-08-01", "2013-08-10"],
                ["2", "11", "2013-08-01", "2013-08-10"]
            ]
        );
        assert!(l.has_t(&[b("2013-08-01")], &[b("2"), b("22")], 1));
        assert!(!l.has_t(&[b("2013-09-01")], &[b("2"), b("22")], 1));
        assert_eq!(l.delete(&[None, Some(b("2013-08-10"))], 1), (1, 1));
        assert!(!l.has_t(&[b("2013-08-01")], &[b("1"), b("11")], 1));
        assert_eq!(l.stored_values(), 2);
        // New again in its month once its day was deleted.
        assert!(add(&mut l, "1", "11", "2013-08-12", "2013-08-01"));
    }

    #[test]
    fn expiry_is_by_time_and_readd_makes_new() {
        let mut l = list(&["VALUE", "v"]);
        assert!(l.add_t(&[], &[], &[b("a")], 1000, 2000));
        assert!(!l.add_t(&[], &[], &[b("a")], 1999, 9000), "live: not new");
        assert!(l.has_t(&[], &[b("a")], 1999));
        assert!(!l.has_t(&[], &[b("a")], 2000), "gone at its expiry");
        assert_eq!(l.data(&[], 2000), Vec::<Row>::new());
        assert_eq!(l.partitions(&[], 2000), Vec::<Row>::new());
        assert_eq!(strs(l.partitions(&[], 1500)), [Vec::<String>::new()]);
        assert!(
            l.add_t(&[], &[], &[b("a")], 2000, NEVER),
            "expired: new again"
        );
        assert!(l.has_t(&[], &[b("a")], i64::MAX - 1));
        assert_eq!(l.next_due(), None);
        assert_eq!(l.stored_values(), 1);
    }

    #[test]
    fn reclaim_returns_items_that_remove_items_replays() {
        let mut l = list(&["VALUE", "v", "SCOPE", "s", "PARTITION", "p"]);
        for i in 0..10 {
            let v = format!("v{i}");
            l.add_t(&[b("s:1")], &[b("p")], &[v.as_bytes()], 0, 100 + i);
        }
        l.add_t(&[b("s:1")], &[b("q")], &[b("keep")], 0, NEVER);
        let mut replica = l.clone();
        assert_eq!(l.next_due(), Some(100));
        let first = l.reclaim(104, 3);
        assert_eq!(first.len(), 3);
        let rest = l.reclaim(104, 100);
        assert_eq!(rest.len(), 2);
        assert_eq!(l.next_due(), Some(105));
        let items: Vec<&[u8]> = first.iter().chain(&rest).map(|i| i.as_slice()).collect();
        assert_eq!(replica.remove_items(&items), 5);
        assert_eq!(replica.encode(), l.encode());
        assert_eq!(l.reclaim(1000, 100).len(), 5);
        assert_eq!(strs(l.partitions(&[None, None], 0)), [["s:1", "q"]]);
        assert_eq!(l.stored_values(), 1);
    }

    #[test]
    fn encoding_roundtrip_and_refusals() {
        let mut l = list(&["VALUE", "v", "w", "SCOPE", "s", "PARTITION", "p"]);
        l.default_expire_s = Some(60);
        l.add_t(&[b("\x00")], &[b(":")], &[b("a:b"), b("")], 5, 7_000);
        l.add_t(
            &[b("\x00")],
            &[b("x")],
            &[&b"\xff"[..], b("\x00")],
            5,
            NEVER,
        );
        l.add_t(&[b("")], &[b(":")], &[b("a"), b("b:")], 5, 9_000);
        let bytes = l.encode();
        let back = UList::decode(&bytes).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.data(&[None, None], 0), l.data(&[None, None], 0));
        assert_eq!(back.next_due(), Some(7_000));
        for cut in 0..bytes.len() {
            assert!(UList::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(UList::decode(&longer).is_err());
    }

    /// A default expiry no EXPIRE can give would overflow `AT + EXPIRE`.
    #[test]
    fn decode_refuses_a_default_expiry_beyond_the_limit() {
        let mut l = list(&["VALUE", "v"]);
        l.default_expire_s = Some(MAX_TTL_S + 1);
        let refused = UList::decode(&l.encode()).err();
        assert_eq!(refused, Some(DecodeError::Invalid("default expiry")));
    }

    /// Every record is reachable from its scope's table under its own number,
    /// and the expiry queue holds exactly the expiring records.
    fn check_invariants(l: &UList) {
        let mut reachable = 0;
        for (key, scope) in &l.scopes {
            assert_eq!(
                l.scope_keys.get(scope.id).map(AsRef::as_ref),
                Some(key.as_ref())
            );
            for &n in scope.values.iter() {
                let r = l.records.get(n);
                assert_eq!(r.scope, scope.id);
                assert_eq!(l.find(key, &r.value), Some(n));
                assert!(l.partition_keys.get(r.partition).is_some());
                reachable += 1;
            }
        }
        assert_eq!(reachable, l.records.used());
        let expiring = (0..l.records.used() as u32)
            .filter(|&n| l.records.get(n).expire_at != NEVER)
            .count();
        assert_eq!(l.expiry.len(), expiring);
        let counted: u64 = l.partitions.iter().map(|(_, p)| p.values).sum();
        assert_eq!(counted, l.records.used() as u64);
    }

    /// A model: scope -> value -> (partition, expire_at), the obvious way.
    #[derive(Default)]
    struct Model {
        scopes: Map<String, Map<String, (String, i64)>>,
    }

    impl Model {
        fn add(&mut self, s: &str, p: &str, v: &str, at: i64, exp: i64) -> bool {
            let scope = self.scopes.entry(s.into()).or_default();
            if scope.get(v).is_some_and(|e| e.1 > at) {
                return false;
            }
            scope.insert(v.into(), (p.into(), exp));
            true
        }
        fn data(&self, s: Option<&str>, p: Option<&str>, now: i64) -> Vec<Vec<String>> {
            let mut rows = Vec::new();
            for (scope, values) in &self.scopes {
                for (v, (part, exp)) in values {
                    if *exp > now && s.is_none_or(|s| s == scope) && p.is_none_or(|p| p == part) {
                        rows.push(vec![v.clone(), scope.clone(), part.clone()]);
                    }
                }
            }
            rows
        }
        fn partitions(&self, now: i64) -> Vec<Vec<String>> {
            let mut set = std::collections::BTreeSet::new();
            for r in self.data(None, None, now) {
                set.insert(vec![r[1].clone(), r[2].clone()]);
            }
            set.into_iter().collect()
        }
        fn delete(&mut self, s: Option<&str>, p: Option<&str>) {
            for (scope, values) in self.scopes.iter_mut() {
                if s.is_none_or(|s| s == scope) {
                    values.retain(|_, (part, _)| p.is_some_and(|p| p != part));
                }
            }
        }
    }

    #[test]
    fn random_operations_match_the_model() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut l = list(&["VALUE", "v", "SCOPE", "s", "PARTITION", "p"]);
        let mut m = Model::default();
        let pick = |rng: &mut StdRng, n: usize, tag: &str| format!("{tag}{}", rng.gen_range(0..n));
        let mut now = 0i64;
        for step in 0..30_000 {
            now += rng.gen_range(0..3);
            let (s, p, v) = (
                pick(&mut rng, 3, "s"),
                pick(&mut rng, 4, "p"),
                pick(&mut rng, 30, "v:"),
            );
            match rng.gen_range(0..10) {
                0..=5 => {
                    let at = now - rng.gen_range(0..20);
                    let exp = if rng.gen_bool(0.3) {
                        NEVER
                    } else {
                        at + rng.gen_range(1..60)
                    };
                    let want = m.add(&s, &p, &v, at, exp);
                    assert_eq!(
                        l.add_t(&[b(&s)], &[b(&p)], &[b(&v)], at, exp),
                        want,
                        "step {step}"
                    );
                }
                6 => {
                    let fs = rng.gen_bool(0.5).then_some(s.as_str());
                    let fp = rng.gen_bool(0.5).then_some(p.as_str());
                    m.delete(fs, fp);
                    l.delete(&[fs.map(b), fp.map(b)], now);
                }
                7 => {
                    // Reclaim removes only values expired at `now`, which no
                    // read shows; later adds at older times see them gone.
                    let before = strs(l.data(&[None, None], now));
                    for item in l.reclaim(now, rng.gen_range(0..10)) {
                        let sv = strs(vec![encoding::decode(&item).unwrap()]).remove(0);
                        let gone = m.scopes.get_mut(&sv[0]).unwrap().remove(&sv[1]).unwrap();
                        assert!(gone.1 <= now);
                    }
                    assert_eq!(strs(l.data(&[None, None], now)), before);
                }
                _ => {
                    check_invariants(&l);
                    let fs = rng.gen_bool(0.5).then_some(s.as_str());
                    let fp = rng.gen_bool(0.5).then_some(p.as_str());
                    assert_eq!(
                        strs(l.data(&[fs.map(b), fp.map(b)], now)),
                        m.data(fs, fp, now),
                        "step {step}"
                    );
                    assert_eq!(strs(l.partitions(&[None, None], now)), m.partitions(now));
                    assert_eq!(
                        l.has_t(&[b(&s)], &[b(&v)], now),
                        !m.data(Some(&s), None, now).iter().all(|r| r[0] != v)
                    );
                }
            }
        }
        let back = UList::decode(&l.encode()).unwrap();
        assert_eq!(back.data(&[None, None], now), l.data(&[None, None], now));
    }
}
