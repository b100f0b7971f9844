//! The data of one HCOUNTER key: counts in cells, cells in partitions, and
//! for a unique counter the UNIQUE tuples already counted. Pure Rust, no FFI;
//! `value.rs` puts it in a key.
//!
//! Layout:
//! - slots hold the partitions (a freed slot is reused), so a unique tuple
//!   and the expiry queue name a partition with a `u32`; the partition index
//!   holds slot numbers only, ordered and hashed by the key each partition's
//!   record holds (the encoding of its PARTITION values);
//! - a partition is one record (`record.rs`) with its key, the latest AT of
//!   its writes and, up to `recipes.hcounter-compact-max` cells, its cells
//!   packed (key: the encoding of the cell's GROUP values that are not
//!   PARTITION values; count); past that a hash table of cells, boxed apart
//!   with the unique tuples first counted in it (`partition.rs`);
//! - one hash table over every remembered unique tuple (the encoding of its
//!   SCOPE values, then its UNIQUE values), each pointing at its partition,
//!   so the uniqueness check is one lookup;
//! - with a TTL, an expiry queue of partitions for background reclaim. A
//!   write that extends a partition's life does not touch the queue: reclaim
//!   finds the real time when it visits and queues the partition again;
//! - every container grows without moving much at once (chunked vectors,
//!   tables grown by linear hashing), and a big partition is removed in two
//!   steps: at once it leaves the index (gone for every read and write), then
//!   it is *torn down* a bounded slice at a time (its unique tuples leave the
//!   table, its cells are freed) by [`HCounter::tear_down`], which the server
//!   runs from a timer on every server. A tuple found in the table that
//!   belongs to a partition being torn down counts as absent.
//!
//! Time is always an argument: a partition whose TTL has run out by the time
//! of a call is not there for that call, reclaimed yet or not.

use super::partition::{Partition, Pos};
use super::record::Record;
use crate::args::MAX_TTL_S;
use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::encoding;
use crate::tuples::expiry::ExpiryQueue;
use crate::tuples::index::Filter;
use crate::tuples::ordered::{Keys, OrderedIds};
use crate::tuples::page::{Page, Step};
use crate::tuples::sample::estimate;
use crate::tuples::schema::{Declaration, DecodeError, Role, Schema};
use crate::tuples::table::{process_hasher, Table, PLACES};
use hashbrown::DefaultHashBuilder;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::hash::BuildHasher;

/// How HCOUNTER.CREATE declares names. A name may be both PARTITION and
/// GROUP; UNIQUE and SCOPE names may also be PARTITION or GROUP names.
/// `value` names the count in rows, so it is no name either.
pub static DECLARATION: Declaration = Declaration {
    lists: &[
        ("PARTITION", Role::Partition),
        ("GROUP", Role::Group),
        ("UNIQUE", Role::Unique),
        ("SCOPE", Role::Scope),
    ],
    may_share: &[
        (Role::Partition, Role::Group),
        (Role::Unique, Role::Partition),
        (Role::Unique, Role::Group),
        (Role::Scope, Role::Partition),
        (Role::Scope, Role::Group),
    ],
    reserved: &[
        "PARTITION",
        "GROUP",
        "UNIQUE",
        "SCOPE",
        "TTL",
        "FLOAT",
        "AT",
        "value",
    ],
};

/// Encoded bytes, inline up to 16 (most cell keys need no allocation).
pub type Bytes = SmallVec<[u8; 16]>;

/// A count: integer, or (FLOAT counters) a finite double.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Count {
    Int(i64),
    Float(f64),
}

/// An increment would leave the range of counts (integer overflow, or a
/// double that is not finite).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange;

/// As replied and replicated: an integer, or a FLOAT count as Redis writes
/// HINCRBYFLOAT's (decimal, never with an exponent), with the shortest
/// digits that read back as the same double.
impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Count::Int(n) => write!(f, "{n}"),
            Count::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Count {
    /// `self + by`, both of one kind.
    fn plus(self, by: Count) -> Result<Count, OutOfRange> {
        match (self, by) {
            (Count::Int(a), Count::Int(b)) => a.checked_add(b).map(Count::Int).ok_or(OutOfRange),
            (Count::Float(a), Count::Float(b)) => {
                let sum = a + b;
                // 0.0 rather than -0.0: one zero, one spelling.
                let sum = if sum == 0.0 { 0.0 } else { sum };
                sum.is_finite()
                    .then_some(Count::Float(sum))
                    .ok_or(OutOfRange)
            }
            _ => Err(OutOfRange),
        }
    }

    /// Stored as 8 bytes: the integer, or the double's bits.
    pub fn bits(self) -> i64 {
        match self {
            Count::Int(n) => n,
            Count::Float(f) => f.to_bits() as i64,
        }
    }
}

/// A partition this small is torn down at once when removed (tiny in unit
/// tests, so the model crosses both paths).
const TEAR_DOWN_AT_ONCE: usize = if cfg!(test) { 4 } else { 256 };

/// A remembered unique tuple: the `index`-th of `slots[slot]`'s.
#[derive(Clone, Copy, Debug)]
struct SeenRef {
    slot: u32,
    index: u32,
}

/// The encodings a call's cell is found and kept under, made once per call.
pub struct Place {
    /// The PARTITION values.
    pub partition: SmallVec<[u8; 64]>,
    /// The GROUP values that are not PARTITION values.
    pub cell: Bytes,
    /// The SCOPE then UNIQUE values (unique counters only).
    pub seen: SmallVec<[u8; 64]>,
}

/// What an increment did.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    /// Whether the count moved (false: a unique tuple already counted).
    pub counted: bool,
    /// The cell's count after the call.
    pub count: Count,
    /// Partitions found expired at the call's time and dropped on the way.
    pub expired: usize,
}

/// One cell, as DATA lists it.
pub struct CellRow<'a> {
    pub partition: &'a [u8],
    pub cell: Cow<'a, [u8]>,
    pub count: Count,
}

/// Cells a partition packs in its record at most, unless configured.
pub const DEFAULT_COMPACT_MAX: usize = 128;

/// The slots' records hold the partition index's keys.
#[derive(Clone, Copy)]
struct SlotKeys<'a>(&'a Chunked<Option<Partition>>);

impl Keys for SlotKeys<'_> {
    fn key(&self, id: u32) -> &[u8] {
        self.0
            .get(id as usize)
            .and_then(Option::as_ref)
            .map_or(&[], |p| p.record.key())
    }
}

#[derive(Clone, Debug)]
pub struct HCounter {
    schema: Schema,
    /// Schema indices of the GROUP names that are not PARTITION names: what
    /// a cell key holds.
    cell_names: SmallVec<[u16; 4]>,
    ttl_s: Option<i64>,
    float: bool,
    index: OrderedIds,
    slots: Chunked<Option<Partition>>,
    free_slots: Chunked<u32>,
    seen: Table<SeenRef>,
    /// Slots of removed partitions still being torn down (not in `index`).
    dying: Vec<u32>,
    /// Cells stored, in every slot (for the cost of freeing).
    cells: usize,
    /// Slots by when their partition may expire (due at or before it).
    expiry: ExpiryQueue<u32>,
    hasher: DefaultHashBuilder,
    /// Cells a partition packs at most (a layout setting, not content).
    compact_max: usize,
}

impl HCounter {
    pub fn new(schema: Schema, ttl_s: Option<i64>, float: bool) -> Self {
        let partition_names = schema.of(Role::Partition);
        let cell_names = schema
            .of(Role::Group)
            .iter()
            .copied()
            .filter(|i| !partition_names.contains(i))
            .collect();
        HCounter {
            schema,
            cell_names,
            ttl_s,
            float,
            index: OrderedIds::default(),
            slots: Chunked::default(),
            free_slots: Chunked::default(),
            seen: Table::new(),
            dying: Vec::new(),
            cells: 0,
            expiry: ExpiryQueue::default(),
            hasher: process_hasher(),
            compact_max: DEFAULT_COMPACT_MAX,
        }
    }

    /// Sets how many cells a partition packs at most
    /// (`recipes.hcounter-compact-max`); partitions already hashed stay so.
    pub fn set_compact_max(&mut self, cells: usize) {
        self.compact_max = cells;
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    pub fn ttl_s(&self) -> Option<i64> {
        self.ttl_s
    }

    pub fn is_float(&self) -> bool {
        self.float
    }

    pub fn is_unique(&self) -> bool {
        !self.schema.of(Role::Unique).is_empty()
    }

    /// The GROUP names a cell key holds (those that are not PARTITION names).
    pub fn cell_names(&self) -> &[u16] {
        &self.cell_names
    }

    /// Zero, of this counter's kind.
    pub fn zero(&self) -> Count {
        if self.float {
            Count::Float(0.0)
        } else {
            Count::Int(0)
        }
    }

    fn count_of(&self, bits: i64) -> Count {
        if self.float {
            Count::Float(f64::from_bits(bits as u64))
        } else {
            Count::Int(bits)
        }
    }

    fn slot(&self, slot: u32) -> &Partition {
        self.slots
            .get(slot as usize)
            .and_then(Option::as_ref)
            .expect("a live slot")
    }

    fn slot_mut(&mut self, slot: u32) -> &mut Partition {
        self.slots
            .get_mut(slot as usize)
            .and_then(Option::as_mut)
            .expect("a live slot")
    }

    /// When partition `p` expires (`None`: never).
    fn expires_at(&self, p: &Partition) -> Option<i64> {
        self.ttl_s
            .map(|s| p.record.last_at().saturating_add(s * 1000))
    }

    fn live_at(&self, p: &Partition, t: i64) -> bool {
        self.expires_at(p).is_none_or(|e| e > t)
    }

    fn find_slot(&self, key: &[u8]) -> Option<u32> {
        self.index.get(key, &SlotKeys(&self.slots))
    }

    /// The slot of the partition keyed `key` as of time `at`: an expired one
    /// is dropped first (counted in `expired`).
    fn slot_at(&mut self, key: &[u8], at: i64, expired: &mut usize) -> Option<u32> {
        let slot = self.find_slot(key)?;
        if self.live_at(self.slot(slot), at) {
            return Some(slot);
        }
        self.remove_slot(slot);
        *expired += 1;
        None
    }

    /// Counts `at` as a write of partition `slot`, or (`None`) of a new
    /// partition keyed `key` (the caller knows there is none); returns its
    /// slot.
    fn touch(&mut self, slot: Option<u32>, key: &[u8], at: i64) -> u32 {
        let slot = match slot {
            Some(slot) => slot,
            None => {
                let timed = self.ttl_s.is_some();
                let partition = Partition::new(Record::new(key, at, timed, self.float));
                let slot = match self.free_slots.pop() {
                    Some(slot) => {
                        if let Some(free) = self.slots.get_mut(slot as usize) {
                            *free = Some(partition);
                        }
                        slot
                    }
                    None => {
                        self.slots.push(Some(partition));
                        (self.slots.len() - 1) as u32
                    }
                };
                self.index.insert(slot, &SlotKeys(&self.slots));
                slot
            }
        };
        let record = &mut self.slot_mut(slot).record;
        record.set_last_at(record.last_at().max(at));
        if record.queued_at().is_none() {
            if let Some(due) = self.expires_at(self.slot(slot)) {
                self.expiry.push(due, slot);
                self.slot_mut(slot).record.set_queued_at(Some(due));
            }
        }
        slot
    }

    /// Removes a partition: at once from the index and the expiry queue,
    /// so no call finds it again; its cells and unique tuples go at once if
    /// it is small, else a slice at a time ([`HCounter::tear_down`]).
    /// Returns its key and the work done now.
    fn remove_slot(&mut self, slot: u32) -> (Box<[u8]>, usize) {
        let key: Box<[u8]> = self.slot(slot).record.key().into();
        self.index.remove(&key, &SlotKeys(&self.slots));
        let work = self.unlist_slot(slot);
        self.give_back_slots();
        (key, work)
    }

    /// Removes partition `slot`, out of the index already, from the expiry
    /// queue, and frees it (now, or in slices when big). Returns the work
    /// done. The caller gives back the slots once the index is empty.
    fn unlist_slot(&mut self, slot: u32) -> usize {
        let p = self.slot(slot);
        let (queued, size) = (p.record.queued_at(), p.size());
        self.slot_mut(slot).record.set_queued_at(None);
        if let Some(due) = queued {
            self.expiry.remove(due, slot);
        }
        if size <= TEAR_DOWN_AT_ONCE {
            self.tear_down_slot(slot, usize::MAX);
            return size;
        }
        self.dying.push(slot);
        1
    }

    /// Whether removed partitions are still being torn down.
    pub fn tearing_down(&self) -> bool {
        !self.dying.is_empty()
    }

    /// Tears down removed partitions for about `budget` units of work (a
    /// unique tuple or a cell each); returns the work done (`budget` or more
    /// when more may be left). Internal state only: no content changes.
    pub fn tear_down(&mut self, budget: usize) -> usize {
        let mut work = 0;
        while work < budget {
            let Some(&slot) = self.dying.last() else {
                break;
            };
            let (done, finished) = self.tear_down_slot(slot, budget - work);
            work += done;
            if finished {
                self.dying.pop();
            }
        }
        self.give_back_slots();
        work
    }

    /// Frees about `budget` units of removed partition `slot` (unique tuples
    /// first, newest first, then cells), and the slot itself once empty.
    /// Returns the work done and whether the slot is free.
    fn tear_down_slot(&mut self, slot: u32, budget: usize) -> (usize, bool) {
        let mut work = 0;
        while work < budget {
            let Some(p) = self.slots.get(slot as usize).and_then(Option::as_ref) else {
                return (work, true);
            };
            let last = p.seen_len().checked_sub(1).and_then(|index| {
                let tuple = p.seen_get(index)?;
                Some((index as u32, self.hasher.hash_one(tuple)))
            });
            if let Some((index, hash)) = last {
                let (slots, hasher) = (&self.slots, &self.hasher);
                self.seen.remove(
                    hash,
                    |r| r.slot == slot && r.index == index,
                    |r| hasher.hash_one(seen_tuple(slots, *r)),
                );
                self.slot_mut(slot).seen_pop();
                work += 1;
                continue;
            }
            let (shed, freed, done) = self.slot_mut(slot).shed(budget - work);
            self.cells -= freed;
            work += shed;
            if done {
                if let Some(free) = self.slots.get_mut(slot as usize) {
                    *free = None;
                }
                self.free_slots.push(slot);
                return (work + 1, true);
            }
        }
        (work, false)
    }

    /// Once the last partition went, gives the slots' memory back.
    fn give_back_slots(&mut self) {
        if self.index.len() == 0 && self.dying.is_empty() && !self.slots.is_empty() {
            self.slots = Chunked::default();
            self.free_slots = Chunked::default();
        }
    }

    /// The partition holding unique tuple `tuple`, if remembered.
    fn seen_in(&self, tuple: &[u8], hash: u64) -> Option<u32> {
        let slots = &self.slots;
        self.seen
            .find(hash, |r| seen_tuple(slots, *r) == tuple)
            .map(|r| r.slot)
    }

    /// Forgets the table's entry for `tuple` if it belongs to a partition
    /// being torn down (it counts as absent); true if it did.
    fn forget_dying(&mut self, tuple: &[u8], hash: u64, owner: u32) -> bool {
        if !self.dying.contains(&owner) {
            return false;
        }
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.seen.remove(
            hash,
            |r| r.slot == owner && seen_tuple(slots, *r) == tuple,
            |r| hasher.hash_one(seen_tuple(slots, *r)),
        );
        true
    }

    /// Whether unique tuple `tuple` counts as seen at `at`; one remembered
    /// by a partition expired by then is dropped with it.
    fn was_seen(&mut self, tuple: &[u8], at: i64, expired: &mut usize) -> bool {
        let hash = self.hasher.hash_one(tuple);
        let Some(owner) = self.seen_in(tuple, hash) else {
            return false;
        };
        if self.forget_dying(tuple, hash, owner) {
            return false;
        }
        if self.live_at(self.slot(owner), at) {
            return true;
        }
        self.remove_slot(owner);
        // Torn down later: its entry for `tuple` goes now, so the tuple is
        // never in the table twice.
        self.forget_dying(tuple, hash, owner);
        *expired += 1;
        false
    }

    /// Remembers `tuple` (not remembered) in partition `slot`.
    fn remember_in(&mut self, slot: u32, tuple: &[u8]) {
        let index = self.slot_mut(slot).seen_push(tuple);
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.seen
            .insert_unique(hasher.hash_one(tuple), SeenRef { slot, index }, |r| {
                hasher.hash_one(seen_tuple(slots, *r))
            });
    }

    /// The count of cell `cell` in partition `slot`, if there is one.
    fn cell_count(&self, slot: Option<u32>, cell: &[u8]) -> Option<Count> {
        let p = self.slot(slot?);
        let pos = p.find(cell, &self.hasher)?;
        Some(self.count_of(p.count(pos)))
    }

    /// Sets cell `cell` of partition `slot` to `count`.
    fn put(&mut self, slot: u32, cell: &[u8], count: Count) {
        let pos = self.slot(slot).find(cell, &self.hasher);
        self.put_at(slot, cell, pos, count);
    }

    /// [`HCounter::put`] with the cell's position known (`None`: absent).
    fn put_at(&mut self, slot: u32, cell: &[u8], pos: Option<Pos>, count: Count) {
        let (hasher, compact_max) = (self.hasher, self.compact_max);
        let p = self.slot_mut(slot);
        match pos {
            Some(pos) => p.set(pos, count.bits()),
            None => {
                p.push(cell, count.bits(), compact_max, &hasher);
                self.cells += 1;
            }
        }
    }

    /// Adds `by` (of the counter's kind) to the cell at `place` at time
    /// `at`. On a unique counter it counts only if `place.seen` was not
    /// counted before within its scope; otherwise nothing changes (but an
    /// expired partition found on the way is dropped). An increment out of
    /// range changes nothing.
    pub fn incr(&mut self, place: &Place, by: Count, at: i64) -> Result<Outcome, OutOfRange> {
        let mut expired = 0;
        let slot = self.slot_at(&place.partition, at, &mut expired);
        let cell = slot.and_then(|s| self.slot(s).find(&place.cell, &self.hasher));
        let current = match (slot, cell) {
            (Some(s), Some(pos)) => Some(self.count_of(self.slot(s).count(pos))),
            _ => None,
        };
        if self.is_unique() && self.was_seen(&place.seen, at, &mut expired) {
            return Ok(Outcome {
                counted: false,
                count: current.unwrap_or(self.zero()),
                expired,
            });
        }
        // A tuple's owner dropped above was another partition: this one is
        // live at `at`, so it would have counted the tuple as seen; `slot`
        // and `cell` still hold.
        let count = current.unwrap_or(self.zero()).plus(by)?;
        let slot = self.touch(slot, &place.partition, at);
        self.put_at(slot, &place.cell, cell, count);
        if self.is_unique() {
            self.remember_in(slot, &place.seen);
        }
        Ok(Outcome {
            counted: true,
            count,
            expired,
        })
    }

    /// Sets the cell at `place` to `count` as of `at` (what a replica and an
    /// AOF receive for a FLOAT increment, and AOF rewrite for every cell).
    /// Returns the partitions found expired and dropped.
    pub fn set(&mut self, place: &Place, count: Count, at: i64) -> usize {
        let mut expired = 0;
        let slot = self.slot_at(&place.partition, at, &mut expired);
        let slot = self.touch(slot, &place.partition, at);
        self.put(slot, &place.cell, count);
        expired
    }

    /// Remembers `place.seen` in `place.partition` as of `at`, unless it is
    /// remembered already. Returns the partitions found expired and dropped.
    pub fn remember(&mut self, place: &Place, at: i64) -> usize {
        let mut expired = 0;
        let slot = self.slot_at(&place.partition, at, &mut expired);
        if !self.was_seen(&place.seen, at, &mut expired) {
            let slot = self.touch(slot, &place.partition, at);
            self.remember_in(slot, &place.seen);
        }
        expired
    }

    /// The count of the cell at `place` at `now` (zero if there is none).
    pub fn get(&self, place: &Place, now: i64) -> Count {
        let slot = self
            .find_slot(&place.partition)
            .filter(|&s| self.live_at(self.slot(s), now));
        self.cell_count(slot, &place.cell).unwrap_or(self.zero())
    }

    /// The partitions matching `filter` (over the PARTITION names) that are
    /// live at `now`, ascending.
    pub fn partitions<'s>(
        &'s self,
        filter: &'s Filter<'s>,
        now: i64,
    ) -> impl Iterator<Item = &'s [u8]> + 's {
        self.index
            .matching(filter, SlotKeys(&self.slots))
            .map(|s| self.slot(s))
            .filter(move |p| self.live_at(p, now))
            .map(|p| p.record.key())
    }

    /// The cells of the partitions matching `filter` live at `now`, ordered
    /// by partition, then cell.
    pub fn data<'s>(&'s self, filter: &'s Filter<'s>, now: i64) -> Vec<CellRow<'s>> {
        let mut rows = Vec::new();
        for s in self.index.matching(filter, SlotKeys(&self.slots)) {
            let p = self.slot(s);
            if !self.live_at(p, now) {
                continue;
            }
            rows.extend(p.sorted().into_iter().map(|(cell, count)| CellRow {
                partition: p.record.key(),
                cell,
                count: self.count_of(count),
            }));
        }
        rows
    }

    /// One page of [`HCounter::partitions`] (`tuples::page`).
    pub fn partitions_page<'s>(
        &'s self,
        filter: &'s Filter<'s>,
        now: i64,
        page: &Page,
    ) -> (Vec<&'s [u8]>, Vec<u8>) {
        let mut step = Step::new(page);
        let keys = SlotKeys(&self.slots);
        for (s, matching) in self.index.matching_from(filter, keys, step.after()) {
            if step.done() {
                break;
            }
            let p = self.slot(s);
            let key = p.record.key();
            step.key(key, (matching && self.live_at(p, now)).then_some(key));
        }
        step.finish()
    }

    /// One page of [`HCounter::data`]'s rows, ordered for paging: by
    /// partition, then in an order of the partition's own
    /// (`tuples::page`), a shard of its cells at a time.
    pub fn data_page<'s>(
        &'s self,
        filter: &'s Filter<'s>,
        now: i64,
        page: &Page,
    ) -> (Vec<CellRow<'s>>, Vec<u8>) {
        let mut step = Step::new(page);
        let keys = SlotKeys(&self.slots);
        let from = step.first_group(self.schema.of(Role::Partition).len());
        for (s, matching) in self.index.matching_from(filter, keys, from) {
            if step.done() {
                break;
            }
            let p = self.slot(s);
            let live = matching && self.live_at(p, now);
            let partition = p.record.key();
            step.group(
                partition,
                |place| match live {
                    true => p.shard_at(place, &self.hasher),
                    false => (Vec::new(), PLACES),
                },
                |cell, count| {
                    Some(CellRow {
                        partition,
                        cell: cell.clone(),
                        count: self.count_of(count),
                    })
                },
            );
        }
        step.finish()
    }

    /// Deletes the partitions matching `filter`, with their unique tuples.
    /// Returns (partitions deleted, of which live at `now`).
    pub fn delete(&mut self, filter: &Filter, now: i64) -> (usize, usize) {
        let slots: Vec<u32> = self.index.matching(filter, SlotKeys(&self.slots)).collect();
        self.index.remove_all(&slots, &SlotKeys(&self.slots));
        let mut live = 0;
        for &slot in &slots {
            live += self.live_at(self.slot(slot), now) as usize;
            self.unlist_slot(slot);
        }
        self.give_back_slots();
        (slots.len(), live)
    }

    /// When the next partition may expire (possibly earlier: a partition
    /// written since it was queued is queued again when visited).
    pub fn next_due(&self) -> Option<i64> {
        self.expiry.next_due()
    }

    /// Removes partitions expired at `now`, earliest first, until about
    /// `budget` cells and unique tuples went (at least one partition when
    /// one is due). Returns their keys, for [`HCounter::remove_partitions`]
    /// on replicas and AOF replays, and the work done (`budget` or more
    /// when more may be due).
    pub fn reclaim(&mut self, now: i64, budget: usize) -> (Vec<Box<[u8]>>, usize) {
        let mut removed = Vec::new();
        let mut work = 0;
        while work < budget {
            let Some((due, slot)) = self.expiry.first() else {
                break;
            };
            if due > now {
                break;
            }
            self.expiry.remove(due, slot);
            self.slot_mut(slot).record.set_queued_at(None);
            match self.expires_at(self.slot(slot)) {
                Some(expires) if expires <= now => {
                    let (key, done) = self.remove_slot(slot);
                    work += done;
                    removed.push(key);
                }
                Some(expires) => {
                    // Written since it was queued: queue it at its real time.
                    self.expiry.push(expires, slot);
                    self.slot_mut(slot).record.set_queued_at(Some(expires));
                    work += 1;
                }
                None => work += 1,
            }
        }
        (removed, work)
    }

    /// Removes the partitions keyed `keys` (as [`HCounter::reclaim`]
    /// returns them), whatever their time: a master decided they were gone.
    /// Returns how many were there.
    pub fn remove_partitions(&mut self, keys: &[&[u8]]) -> usize {
        let mut removed = 0;
        for key in keys {
            if let Some(slot) = self.find_slot(key) {
                self.remove_slot(slot);
                removed += 1;
            }
        }
        removed
    }

    /// Every partition as (key, latest AT, cells as (key, count), unique
    /// tuples), ascending, for AOF rewrite.
    #[allow(clippy::type_complexity)]
    pub fn entries(
        &self,
    ) -> impl Iterator<Item = (&[u8], i64, Vec<(Cow<'_, [u8]>, Count)>, Vec<&[u8]>)> + '_ {
        self.index.iter().map(|s| {
            let p = self.slot(s);
            let cells = p
                .sorted()
                .into_iter()
                .map(|(key, count)| (key, self.count_of(count)))
                .collect();
            let seen = p.seen().map(|t| &**t).collect();
            (p.record.key(), p.record.last_at(), cells, seen)
        })
    }

    /// Heap bytes held, each collection's variable part sized from
    /// `samples` of its items (0: all).
    pub fn mem_usage(&self, samples: usize) -> usize {
        let live_slots = self.index.len() + self.dying.len();
        let partitions = estimate(self.slots.iter().flatten(), live_slots, samples, |p| {
            p.heap_bytes(samples)
        });
        partitions
            + self.slots.heap_bytes()
            + self.free_slots.heap_bytes()
            + self.index.heap_bytes()
            + self.seen.allocation_size()
            + self.expiry.len() * std::mem::size_of::<(i64, u32)>() * 2
            + self.schema.len() * 32
    }

    /// About how many allocations freeing it takes.
    pub fn free_effort(&self) -> usize {
        self.slots.len() + self.seen.len() + self.cells + 1
    }

    /// Partitions stored (in the index).
    pub fn partition_count(&self) -> usize {
        self.index.len()
    }

    /// Cells stored.
    pub fn cells_stored(&self) -> usize {
        self.cells
    }

    /// Unique tuples remembered.
    pub fn seen_count(&self) -> usize {
        self.seen.len()
    }

    /// The `HCOUNTER.CREATE` arguments that declare this counter again.
    pub fn declaration(&self) -> Vec<Vec<u8>> {
        let mut create = self.schema.create_args(&DECLARATION);
        if let Some(s) = self.ttl_s {
            create.extend([b"TTL".to_vec(), s.to_string().into_bytes()]);
        }
        if self.float {
            create.push(b"FLOAT".to_vec());
        }
        create
    }

    /// Starts loading a counter (see [`Loading`]).
    pub(super) fn loading(
        schema: Schema,
        ttl_s: Option<i64>,
        float: bool,
        compact_max: usize,
    ) -> Result<Loading, DecodeError> {
        if ttl_s.is_some_and(|s| !(1..=MAX_TTL_S).contains(&s)) {
            return Err(DecodeError::Invalid("TTL"));
        }
        let mut counter = HCounter::new(schema, ttl_s, float);
        counter.set_compact_max(compact_max);
        let arity =
            |roles: &[Role]| -> usize { roles.iter().map(|&r| counter.schema.of(r).len()).sum() };
        Ok(Loading {
            partition_arity: arity(&[Role::Partition]),
            seen_arity: arity(&[Role::Scope, Role::Unique]),
            counter,
            slot: None,
        })
    }
}

/// A counter being loaded from an encoding (`format.rs`), checked as it
/// comes: each partition, then its cells and unique tuples.
pub(super) struct Loading {
    counter: HCounter,
    partition_arity: usize,
    seen_arity: usize,
    /// The partition being loaded.
    slot: Option<u32>,
}

impl Loading {
    pub fn is_float(&self) -> bool {
        self.counter.float
    }

    /// The next partition (ascending), with the latest AT of its writes.
    pub fn partition(&mut self, key: &[u8], last_at: i64) -> Result<(), DecodeError> {
        if !encoding::is_tuple_of(key, self.partition_arity)
            || self.counter.find_slot(key).is_some()
        {
            return Err(DecodeError::Invalid("partition key: bad tuple or repeated"));
        }
        self.slot = Some(self.counter.touch(None, key, last_at));
        Ok(())
    }

    /// A cell of the partition being loaded, its count as stored
    /// ([`Count::bits`]).
    pub fn cell(&mut self, cell: &[u8], bits: i64) -> Result<(), DecodeError> {
        let counter = &mut self.counter;
        let count = counter.count_of(bits);
        let finite = match count {
            Count::Float(f) => f.is_finite(),
            Count::Int(_) => true,
        };
        let slot = self
            .slot
            .ok_or(DecodeError::Invalid("a cell before its partition"))?;
        if !finite
            || !encoding::is_tuple_of(cell, counter.cell_names.len())
            || counter.cell_count(Some(slot), cell).is_some()
        {
            return Err(DecodeError::Invalid(
                "cell: bad tuple, repeated or not finite",
            ));
        }
        counter.put(slot, cell, count);
        Ok(())
    }

    /// A unique tuple first counted in the partition being loaded.
    pub fn unique(&mut self, tuple: &[u8]) -> Result<(), DecodeError> {
        let counter = &mut self.counter;
        let hash = counter.hasher.hash_one(tuple);
        let slot = self
            .slot
            .ok_or(DecodeError::Invalid("a tuple before its partition"))?;
        if !counter.is_unique()
            || !encoding::is_tuple_of(tuple, self.seen_arity)
            || counter.seen_in(tuple, hash).is_some()
        {
            return Err(DecodeError::Invalid(
                "unique tuple: not UNIQUE, bad tuple or repeated",
            ));
        }
        counter.remember_in(slot, tuple);
        Ok(())
    }

    pub fn finish(self) -> HCounter {
        self.counter
    }
}

/// The bytes of a remembered unique tuple.
fn seen_tuple(slots: &Chunked<Option<Partition>>, r: SeenRef) -> &[u8] {
    slots
        .get(r.slot as usize)
        .and_then(Option::as_ref)
        .and_then(|p| p.seen_get(r.index as usize))
        .unwrap_or_default()
}

impl HCounter {
    /// Offers its blocks to a defrag pass (`tuples::defrag`).
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| {
            self.schema.defrag(m);
            m.small_vec(&mut self.cell_names);
            m.vec(&mut self.dying);
        });
        self.index.defrag(pass);
        self.slots.defrag_nested(
            pass,
            |slot, m| slot.iter_mut().for_each(|p| p.defrag_own(m)),
            |slot, pass| slot.iter_mut().for_each(|p| p.defrag_inner(pass)),
        );
        self.free_slots.defrag(pass, |_, _| {});
        self.seen.defrag(pass);
        self.expiry.defrag(pass);
    }
}

#[cfg(test)]
#[path = "counter_tests.rs"]
pub(super) mod tests;
