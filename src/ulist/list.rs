//! The data of one ULIST key: values unique within their scope, each kept in
//! the partition where it was added, with an optional expiry. Pure Rust, no
//! FFI; `value.rs` puts it in a key.
//!
//! Two layouts, as Redis keeps small sets in a listpack: up to
//! `recipes.ulist-compact-max` values the list is compact (`compact.rs`: one
//! buffer, found by a scan); past that it turns hashed (`hashed.rs`: a table
//! per scope, an index of partitions, an expiry queue), and back once it has
//! fewer than half that many. A conversion moves at most compact-max values.
//! Replies, replication and RDB bytes are the same in both.
//!
//! Time is always an argument: a value whose expiry is at or before the
//! time of a read is not there, whether or not it was reclaimed yet.

use super::compact::{Compact, NotCompact, MAX_PLACES};
pub use super::entry::{Row, Stored, ValueKeys, NEVER};
use super::hashed::Hashed;
use crate::args::MAX_TTL_S;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::encoding;
use crate::tuples::index::Filter;
use crate::tuples::page::Page;
use crate::tuples::schema::{Declaration, DecodeError, Role, Schema};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::num::NonZeroI64;
use std::sync::Arc;

/// How ULIST.CREATE declares names; every ULIST keyword is refused as a name.
pub static DECLARATION: Declaration = Declaration {
    lists: &[
        ("VALUE", Role::Value),
        ("SCOPE", Role::Scope),
        ("PARTITION", Role::Partition),
    ],
    may_share: &[],
    reserved: &[
        "VALUE",
        "SCOPE",
        "PARTITION",
        "EXPIRE",
        "NEVER",
        "AT",
        "PXAT",
    ],
};

/// Values a list keeps compact at most, unless configured.
pub const DEFAULT_COMPACT_MAX: usize = 512;

#[derive(Clone, Debug)]
enum Layout {
    Compact(Compact),
    Hashed(Box<Hashed>),
}

/// Small, as a key of a small list holds one: 96 bytes with its compact
/// layout inline (the schema is shared, [`Schema::shared`]).
#[derive(Clone, Debug)]
pub struct UList {
    schema: Arc<Schema>,
    /// EXPIRE s given at CREATE, for ADDs without EXPIRE/NEVER.
    default_expire_s: Option<NonZeroI64>,
    layout: Layout,
    /// Values kept compact at most (a layout setting, not content).
    compact_max: u32,
}

impl UList {
    pub fn new(schema: Schema, default_expire_s: Option<i64>) -> Self {
        UList {
            schema: schema.shared(),
            default_expire_s: default_expire_s.and_then(NonZeroI64::new),
            layout: Layout::Compact(Compact::new()),
            compact_max: DEFAULT_COMPACT_MAX as u32,
        }
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn default_expire_s(&self) -> Option<i64> {
        self.default_expire_s.map(NonZeroI64::get)
    }

    /// Sets how many values the list keeps compact at most
    /// (`recipes.ulist-compact-max`); applied from the next write.
    pub fn set_compact_max(&mut self, values: usize) {
        self.compact_max = values.try_into().unwrap_or(u32::MAX);
    }

    fn compact_max(&self) -> usize {
        self.compact_max as usize
    }

    fn scope_names(&self) -> usize {
        self.schema.of(Role::Scope).len()
    }

    /// The `ULIST.CREATE` arguments that declare this list again.
    pub fn declaration(&self) -> Vec<Vec<u8>> {
        let mut create = self.schema.create_args(&DECLARATION);
        if let Some(s) = self.default_expire_s() {
            create.extend([b"EXPIRE".to_vec(), s.to_string().into_bytes()]);
        }
        create
    }

    /// Values stored, expired ones not yet reclaimed included.
    pub fn stored_values(&self) -> usize {
        match &self.layout {
            Layout::Compact(c) => c.len(),
            Layout::Hashed(h) => h.len(),
        }
    }

    /// Values stored with an expiry (expired ones not yet reclaimed included).
    pub fn expiring_values(&self) -> usize {
        match &self.layout {
            Layout::Compact(c) => c.expiring(),
            Layout::Hashed(h) => h.expiring(),
        }
    }

    /// Partitions stored (SCOPE and PARTITION tuples holding a value).
    pub fn stored_partitions(&self) -> usize {
        match &self.layout {
            Layout::Compact(c) => c.places(),
            Layout::Hashed(h) => h.partition_count(),
        }
    }

    /// Live values at `now` of the partitions matching `filter`.
    pub fn count(&self, filter: &Filter, now: i64) -> usize {
        match &self.layout {
            Layout::Compact(c) => c.count(filter, now),
            Layout::Hashed(h) => h.count(filter, now),
        }
    }

    #[cfg(test)]
    fn is_compact(&self) -> bool {
        matches!(self.layout, Layout::Compact(_))
    }

    /// Every stored value as (place: SCOPE then PARTITION encodings, value
    /// encoding, expiry), in no order.
    fn stored(&self) -> Box<dyn Iterator<Item = Stored<'_>> + '_> {
        match &self.layout {
            Layout::Compact(c) => Box::new(c.stored()),
            Layout::Hashed(h) => Box::new(h.stored().map(|(p, v, e)| (p, Cow::Borrowed(v), e))),
        }
    }

    /// Moves the values to the hashed layout.
    fn make_hashed(&mut self) {
        let mut hashed = Hashed::new(self.scope_names());
        for (place, value, expire_at) in self.stored() {
            hashed.insert_new(place, &value, expire_at);
        }
        self.layout = Layout::Hashed(Box::new(hashed));
    }

    /// Back to compact once a hashed list holds fewer than half of
    /// compact-max values (hysteresis: a list at the threshold does not
    /// flip back and forth), if the compact layout can hold them.
    fn settle(&mut self) {
        self.compact_below(self.compact_max() / 2);
    }

    /// A hashed list of fewer than `limit` values turns compact, if the
    /// compact layout can hold them.
    fn compact_below(&mut self, limit: usize) {
        let Layout::Hashed(h) = &self.layout else {
            return;
        };
        if h.len() >= limit || h.partition_count() > MAX_PLACES {
            return;
        }
        let mut compact = Compact::new();
        let scope_names = self.scope_names();
        for (place, value, expire_at) in h.stored() {
            let keys = ValueKeys {
                place: place.into(),
                scope_len: encoding::prefix_len(place, scope_names),
                value: value.into(),
            };
            if compact.add(&keys, i64::MIN, expire_at) != Ok(true) {
                return;
            }
        }
        compact.shrink();
        self.layout = Layout::Compact(compact);
    }

    /// Whether anything stored expires: if not, and an add's value never
    /// expires, the add's outcome does not depend on its time.
    pub fn has_expiring_values(&self) -> bool {
        self.next_due().is_some()
    }

    /// Gives a value live at `at` the absolute expiry `expire_at` (`NEVER`
    /// for none): sliding expiry. True if its expiry changed; its partition
    /// stays.
    pub fn refresh(&mut self, keys: &ValueKeys, at: i64, expire_at: i64) -> bool {
        if let Layout::Compact(c) = &mut self.layout {
            match c.refresh(keys, at, expire_at) {
                Ok(changed) => return changed,
                Err(NotCompact) => self.make_hashed(),
            }
        }
        match &mut self.layout {
            Layout::Hashed(h) => h.refresh(keys, at, expire_at),
            Layout::Compact(_) => false,
        }
    }

    /// Adds a value at `at` with its absolute expiry (`NEVER` for none).
    /// True if the value is new within its scope at `at`: absent, or present
    /// but expired by then. A live value is left as it is (its expiry and
    /// partition stay).
    pub fn add(&mut self, keys: &ValueKeys, at: i64, expire_at: i64) -> bool {
        if let Layout::Compact(c) = &mut self.layout {
            match c.add(keys, at, expire_at) {
                Ok(new) => {
                    if c.len() > self.compact_max() {
                        self.make_hashed();
                    }
                    return new;
                }
                Err(NotCompact) => self.make_hashed(),
            }
        }
        match &mut self.layout {
            Layout::Hashed(h) => h.add(keys, at, expire_at),
            Layout::Compact(_) => false,
        }
    }

    /// Starts loading what [`UList::add`] touches last, so that its cache
    /// miss overlaps with the command's parsing.
    pub fn prefetch_for_add(&self) {
        if let Layout::Compact(c) = &self.layout {
            c.prefetch_for_add();
        }
    }

    /// Whether the value is live in its scope at `now` (its partition, if
    /// `keys` names one, does not matter).
    pub fn has(&self, keys: &ValueKeys, now: i64) -> bool {
        match &self.layout {
            Layout::Compact(c) => c.has(keys, now),
            Layout::Hashed(h) => h.has(keys, now),
        }
    }

    /// The partitions (SCOPE then PARTITION values) matching `filter` (over
    /// the same positions) that hold a live value at `now`, ascending.
    pub fn partitions(&self, filter: &Filter, now: i64) -> Vec<Row> {
        match &self.layout {
            Layout::Compact(c) => c.partitions(filter, now),
            Layout::Hashed(h) => h.partitions(filter, now),
        }
    }

    /// Live values at `now` of the partitions matching `filter`, in
    /// ascending order of scope, then value.
    pub fn data(&self, filter: &Filter, now: i64) -> Vec<Row> {
        match &self.layout {
            Layout::Compact(c) => c.data(filter, now),
            Layout::Hashed(h) => h.data(filter, now),
        }
    }

    /// One page of [`UList::partitions`] (`tuples::page`).
    pub fn partitions_page(&self, filter: &Filter, now: i64, page: &Page) -> (Vec<Row>, Vec<u8>) {
        match &self.layout {
            Layout::Compact(c) => c.partitions_page(filter, now, page),
            Layout::Hashed(h) => h.partitions_page(filter, now, page),
        }
    }

    /// One page of [`UList::data`]'s rows, ordered for paging: by scope,
    /// then in an order of the scope's own (`tuples::page`).
    pub fn data_page(&self, filter: &Filter, now: i64, page: &Page) -> (Vec<Row>, Vec<u8>) {
        match &self.layout {
            Layout::Compact(c) => c.data_page(filter, now, page),
            Layout::Hashed(h) => h.data_page(filter, now, page),
        }
    }

    /// Deletes the partitions matching `filter` with all their values.
    /// Returns (partitions deleted, of which held a live value at `now`).
    pub fn delete(&mut self, filter: &Filter, now: i64) -> (usize, usize) {
        let deleted = match &mut self.layout {
            Layout::Compact(c) => c.delete(filter, now),
            Layout::Hashed(h) => h.delete(filter, now),
        };
        self.settle();
        deleted
    }

    /// When the next value expires, if one does.
    pub fn next_due(&self) -> Option<i64> {
        match &self.layout {
            Layout::Compact(c) => c.next_due(),
            Layout::Hashed(h) => h.next_due(),
        }
    }

    /// Removes up to `budget` values expired at `now`, earliest first (a
    /// hashed list takes a value once its second is over, so up to a second
    /// after its exact time, which reads use). Returns each as one tuple encoding: its SCOPE then VALUE values (what
    /// [`UList::remove_items`] takes, on replicas and AOF replays).
    pub fn reclaim(&mut self, now: i64, budget: usize) -> Vec<Vec<u8>> {
        let items = match &mut self.layout {
            Layout::Compact(c) => c.reclaim(now, budget),
            Layout::Hashed(h) => h.reclaim(now, budget),
        };
        self.settle();
        items
    }

    /// Removes the values named by `items` (as [`UList::reclaim`] returns
    /// them), whatever their expiry: a master decided they were gone.
    /// Returns how many were there.
    pub fn remove_items(&mut self, items: &[&[u8]]) -> usize {
        let scope_names = self.scope_names();
        let removed = match &mut self.layout {
            Layout::Compact(c) => c.remove_items(items, scope_names),
            Layout::Hashed(h) => h.remove_items(items),
        };
        self.settle();
        removed
    }

    /// Every stored value as `(scope values, partition values, value
    /// values, expire_at)`, for AOF rewrite.
    pub fn entries(&self) -> impl Iterator<Item = (Row, Row, Row, i64)> + '_ {
        let scope_names = self.scope_names();
        self.stored().filter_map(move |(place, value, expire_at)| {
            let mut scope = encoding::decode(place).ok()?;
            let partition = scope.split_off(scope_names);
            Some((scope, partition, encoding::decode(&value).ok()?, expire_at))
        })
    }

    /// Heap bytes held, each collection's variable part sized from `samples`
    /// of its items (0: all). The shared schema is counted in no key, so
    /// that a key's figure does not depend on other keys.
    pub fn mem_usage(&self, samples: usize) -> usize {
        let layout = match &self.layout {
            Layout::Compact(c) => c.heap_bytes(),
            Layout::Hashed(h) => std::mem::size_of::<Hashed>() + h.mem_usage(samples),
        };
        std::mem::size_of::<Self>() + layout
    }

    /// About how many allocations freeing it takes (a value may own one).
    pub fn free_effort(&self) -> usize {
        match &self.layout {
            Layout::Compact(c) => 1 + c.places(),
            Layout::Hashed(h) => h.free_effort(),
        }
    }

    /// Its contents in the order of every encoding (`format.rs`): the
    /// partition keys ascending, then each value as (its partition's number
    /// in that list, value encoding, expiry), by scope then value, whatever
    /// the layout.
    pub(super) fn sorted(&self) -> (Vec<&[u8]>, Vec<SortedValue<'_>>) {
        let scope_names = self.scope_names();
        let scope = |place: &[u8]| place[..encoding::prefix_len(place, scope_names)].to_vec();
        // Each value with its scope, to sort by.
        let mut values: Vec<(Vec<u8>, Stored)> = self.stored().map(|v| (scope(v.0), v)).collect();
        values.sort_unstable_by(|a, b| (&a.0, &a.1 .1).cmp(&(&b.0, &b.1 .1)));
        let mut index: BTreeMap<&[u8], u32> = values.iter().map(|v| (v.1 .0, 0)).collect();
        for (i, n) in index.values_mut().enumerate() {
            *n = i as u32;
        }
        let values = values
            .into_iter()
            .map(|(_, (place, value, expire_at))| (index[place], value, expire_at))
            .collect();
        (index.into_keys().collect(), values)
    }

    /// Starts loading a list of `schema` (see [`Loading`]).
    pub(super) fn loading<'a>(
        schema: Schema,
        default_expire_s: Option<i64>,
    ) -> Result<Loading<'a>, DecodeError> {
        if schema.of(Role::Value).is_empty() {
            return Err(DecodeError::Invalid("a schema without VALUE names"));
        }
        if default_expire_s.is_some_and(|s| !(1..=MAX_TTL_S).contains(&s)) {
            return Err(DecodeError::Invalid("default expiry"));
        }
        let list = UList::new(schema, default_expire_s);
        Ok(Loading {
            hashed: Hashed::new(list.scope_names()),
            list,
            places: Vec::new(),
        })
    }
}

/// A value as the encodings hold it: (its partition's number, value
/// encoding, expiry).
pub(super) type SortedValue<'a> = (u32, Cow<'a, [u8]>, i64);

/// A list being loaded from an encoding, checked as it comes: partitions,
/// then values. Loaded hashed (which finds a value given twice in its
/// scope), then made compact when small.
pub(super) struct Loading<'a> {
    list: UList,
    hashed: Hashed,
    places: Vec<&'a [u8]>,
}

impl<'a> Loading<'a> {
    /// The next partition's key (SCOPE then PARTITION encodings).
    pub fn partition(&mut self, key: &'a [u8]) -> Result<(), DecodeError> {
        let schema = &self.list.schema;
        let names = schema.of(Role::Scope).len() + schema.of(Role::Partition).len();
        if !encoding::is_tuple_of(key, names) {
            return Err(DecodeError::Invalid("partition key: bad tuple"));
        }
        self.places.push(key);
        Ok(())
    }

    /// A value of the partition numbered `partition` (in the order given).
    pub fn value(
        &mut self,
        partition: u64,
        value: &[u8],
        expire_at: i64,
    ) -> Result<(), DecodeError> {
        let key = *usize::try_from(partition)
            .ok()
            .and_then(|p| self.places.get(p))
            .ok_or(DecodeError::Invalid("partition number"))?;
        if !encoding::is_tuple_of(value, self.list.schema.of(Role::Value).len()) {
            return Err(DecodeError::Invalid("value: bad tuple"));
        }
        let scope_key = &key[..encoding::prefix_len(key, self.list.scope_names())];
        if self.hashed.contains(scope_key, value) {
            return Err(DecodeError::Invalid("a value twice in its scope"));
        }
        self.hashed.insert_new(key, value, expire_at);
        Ok(())
    }

    /// The list, compact when it holds at most `compact_max` values.
    pub fn finish(self, compact_max: usize) -> UList {
        let mut list = self.list;
        list.set_compact_max(compact_max);
        list.layout = Layout::Hashed(Box::new(self.hashed));
        list.compact_below(compact_max + 1);
        list
    }
}

impl UList {
    /// Offers its blocks to a defrag pass (`tuples::defrag`).
    /// The schema is shared with other keys, so it stays where it is.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        match &mut self.layout {
            Layout::Compact(compact) => pass.work(|m| compact.defrag(m)),
            Layout::Hashed(hashed) => {
                pass.work(|m| m.boxed(hashed));
                hashed.defrag(pass);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        UList::new(Schema::declared(decl, &DECLARATION), None)
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

    /// Hashed, a value is reclaimed once its second is over; reads are exact
    /// to the millisecond either way.
    #[test]
    fn hashed_lists_reclaim_by_the_second_and_read_by_the_ms() {
        let mut l = list(&["VALUE", "v"]);
        l.set_compact_max(0);
        l.add_t(&[], &[], &[b("a")], 0, 1_500);
        l.add_t(&[], &[], &[b("b")], 0, 1_999);
        l.add_t(&[], &[], &[b("c")], 0, 2_000);
        assert!(!l.is_compact());
        assert!(l.has_t(&[], &[b("a")], 1_499));
        assert!(!l.has_t(&[], &[b("a")], 1_500));
        assert_eq!(l.next_due(), Some(2_000));
        assert_eq!(l.reclaim(1_999, 10).len(), 0);
        assert_eq!(strs(l.data(&[], 1_999)), [["c"]]);
        assert_eq!(l.reclaim(2_000, 10).len(), 2);
        assert_eq!(l.next_due(), Some(3_000));
        assert!(l.has_t(&[], &[b("c")], 1_999));
        assert!(!l.has_t(&[], &[b("c")], 2_000));
    }

    #[test]
    fn encoding_roundtrip_and_refusals() {
        let mut l = list(&["VALUE", "v", "w", "SCOPE", "s", "PARTITION", "p"]);
        l.default_expire_s = NonZeroI64::new(60);
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
        let back = UList::decode(&bytes, DEFAULT_COMPACT_MAX).unwrap();
        assert_eq!(back.encode(), bytes);
        assert_eq!(back.data(&[None, None], 0), l.data(&[None, None], 0));
        assert_eq!(back.next_due(), Some(7_000));
        for cut in 0..bytes.len() {
            assert!(
                UList::decode(&bytes[..cut], DEFAULT_COMPACT_MAX).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(UList::decode(&longer, DEFAULT_COMPACT_MAX).is_err());
    }

    /// A default expiry no EXPIRE can give would overflow `AT + EXPIRE`.
    #[test]
    fn decode_refuses_a_default_expiry_beyond_the_limit() {
        let mut l = list(&["VALUE", "v"]);
        l.default_expire_s = NonZeroI64::new(MAX_TTL_S + 1);
        let refused = UList::decode(&l.encode(), DEFAULT_COMPACT_MAX).err();
        assert_eq!(refused, Some(DecodeError::Invalid("default expiry")));
    }

    /// A key of a small list holds one `UList`: 96 bytes is one jemalloc
    /// size class (it was 200, in the 224 class, with its own schema).
    #[test]
    fn a_list_is_small_and_shares_its_schema() {
        assert!(std::mem::size_of::<UList>() <= 96);
        let (a, b) = (list(&["VALUE", "v"]), list(&["VALUE", "v"]));
        assert!(Arc::ptr_eq(&a.schema, &b.schema));
    }

    /// The hashed layout's invariants, when hashed.
    fn check_invariants(l: &UList) {
        if let Layout::Hashed(h) = &l.layout {
            h.check_invariants();
        }
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
        // Steps spent hashed, then compact.
        let mut layouts = [0; 2];
        for step in 0..30_000 {
            now += rng.gen_range(0..3);
            let numeric = rng.gen_bool(0.5);
            let (s, p, v) = (
                pick(&mut rng, 3, "s"),
                pick(&mut rng, 4, "p"),
                // Numbers are packed as varints in the compact layout.
                pick(&mut rng, 30, if numeric { "" } else { "v:" }),
            );
            layouts[l.is_compact() as usize] += 1;
            match rng.gen_range(0..12) {
                10 => l.set_compact_max([0, 2, 8, 40, 128][rng.gen_range(0..5)]),
                11 => {
                    // The bytes do not depend on the layout.
                    let bytes = l.encode();
                    l = UList::decode(&bytes, [0, 8, 128][rng.gen_range(0..3)]).unwrap();
                    assert_eq!(l.encode(), bytes, "step {step}");
                }
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
        let back = UList::decode(&l.encode(), 3).unwrap();
        assert_eq!(back.data(&[None, None], now), l.data(&[None, None], now));
        assert!(layouts.iter().all(|&n| n > 1_000), "{layouts:?}");
    }
}
