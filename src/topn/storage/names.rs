//! Interned member names and the order indexes whose keys point at them, in one type
//! ([`NameTable`]) so that this module alone upholds the invariant that makes the key reads
//! sound (see the module above).

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ptr::NonNull;

use crate::tuples::chunked::Chunked;
use crate::tuples::defrag::{rebuild, Mover, Pass};

// ---------------------------------------------------------------------------------------------
// Interned names.

/// An interned member name: one heap block `[id: u32][len: u32][bytes]`, uniquely owned (like
/// a `Box<[u8]>`), immutable after `new`.
struct Name(NonNull<u8>);

// SAFETY: `Name` uniquely owns its block, like `Box<[u8]>`, and the block is never written
// after `new`: moving it to another thread or sharing `&Name` between threads is sound.
unsafe impl Send for Name {}
// SAFETY: see `Send` above; `&Name` only reads.
unsafe impl Sync for Name {}

impl Name {
    fn layout(len: usize) -> Layout {
        Layout::from_size_align(8 + len, 4).expect("member name layout")
    }

    fn new(id: u32, bytes: &[u8]) -> Name {
        let len = u32::try_from(bytes.len()).expect("member name too long");
        let layout = Self::layout(bytes.len());
        // SAFETY: the layout has a non-zero size (at least the 8-byte header); the block is
        // written within its bounds and is 4-aligned for the two u32 header fields.
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            (p.as_ptr() as *mut u32).write(id);
            (p.as_ptr().add(4) as *mut u32).write(len);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.as_ptr().add(8), bytes.len());
            Name(p)
        }
    }

    #[inline]
    fn ptr(&self) -> NonNull<u8> {
        self.0
    }

    #[inline]
    fn id(&self) -> u32 {
        // SAFETY: the block is alive while `self` is.
        unsafe { block_id(self.0) }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        // SAFETY: the block is alive while `self` is, so for the borrow of `self`.
        unsafe { block_bytes(self.0) }
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the layout of the stored length, freed only here.
        unsafe {
            let len = (self.0.as_ptr().add(4) as *const u32).read() as usize;
            dealloc(self.0.as_ptr(), Self::layout(len));
        }
    }
}

/// The id in a name block.
///
/// # Safety
/// `p` must point to a live block made by `Name::new`.
#[inline]
unsafe fn block_id(p: NonNull<u8>) -> u32 {
    // SAFETY: the caller guarantees a live block; its header starts with the 4-aligned id.
    unsafe { (p.as_ptr() as *const u32).read() }
}

/// The bytes in a name block.
///
/// # Safety
/// `p` must point to a block made by `Name::new` that stays alive for `'a`.
#[inline]
unsafe fn block_bytes<'a>(p: NonNull<u8>) -> &'a [u8] {
    // SAFETY: the caller guarantees the block lives for `'a`; the block holds `len` bytes
    // after the 8-byte header, and is never written after `Name::new`.
    unsafe {
        let len = (p.as_ptr().add(4) as *const u32).read() as usize;
        std::slice::from_raw_parts(p.as_ptr().add(8), len)
    }
}

// ---------------------------------------------------------------------------------------------
// Member slots and the order index.

/// Slots per chunk of the slot table: the first grows as a `Vec` does, later ones are made
/// whole at once, so a new slot never copies the others.
pub(super) const CHUNK: usize = 4096;

/// Slots whose name blocks one unit of defrag work offers: each costs a lookup in one or two
/// B-trees (under a microsecond on a million members).
const DEFRAG_RUN: usize = 128;

/// One member slot: its interned name (`None` for a free slot) and data of the caller's.
pub(in crate::topn) struct Slot<P> {
    name: Option<Name>,
    pub(in crate::topn) data: P,
}

impl<P> Slot<P> {
    #[inline]
    pub(in crate::topn) fn is_live(&self) -> bool {
        self.name.is_some()
    }
}

/// Order index key: best first (highest total, then member ascending); 16 bytes.
///
/// Invariant (upheld by `NameTable`, the only place keys are made, stored and dropped): a key
/// lives only in an order index of a `NameTable` (one per running sum, carrying the slot's
/// total in that sum) and points to the name block of a live slot of that same table.
/// `NameTable` removes a slot's keys before it frees or replaces the slot's name, and
/// re-points them when defrag moves the name (before anything reads them again), so every key
/// in an index points to a live block, and a `&Key` (only ever handed out borrowed from the
/// table) keeps the table, hence the block, alive.
///
/// The pointer is a `Cell` so that defrag can re-point a key in place: the moved block holds
/// the same bytes, so the key keeps its place in the B-tree's order. The total is a `Cell` so
/// that a new total that keeps the key between its neighbours is written in place
/// (`reposition`): the order, hence the B-tree, is unchanged.
pub(in crate::topn) struct Key {
    total: Cell<i64>,
    name: Cell<NonNull<u8>>,
}

// SAFETY: a key is a shared, read-only view of a name block owned by the same `NameTable`
// (see the invariant on `Key`); the blocks are immutable and move with the table, so keys may
// move and be shared across threads exactly like the `Name`s they point to.
unsafe impl Send for Key {}
// SAFETY: see `Send` above. The `Cell`s are written only by `NameTable::defrag` and
// `reposition` (through `NameTable` methods), which hold the table by `&mut` (so no other
// reference to any of its keys exists, on any thread).
unsafe impl Sync for Key {}

impl Key {
    #[inline]
    pub(in crate::topn) fn total(&self) -> i64 {
        self.total.get()
    }

    fn new(total: i64, name: NonNull<u8>) -> Key {
        Key {
            total: Cell::new(total),
            name: Cell::new(name),
        }
    }

    /// Whether `other` is this key: the same name block with the same total.
    #[inline]
    fn is(&self, other: &Key) -> bool {
        self.name.get() == other.name.get() && self.total.get() == other.total.get()
    }

    /// The member id.
    #[inline]
    pub(in crate::topn) fn id(&self) -> u32 {
        // SAFETY: the block is alive (the invariant on `Key`).
        unsafe { block_id(self.name.get()) }
    }

    /// The member name.
    #[inline]
    pub(in crate::topn) fn bytes(&self) -> &[u8] {
        // SAFETY: the block is alive at least as long as the table `self` is borrowed from
        // (the invariant on `Key`).
        unsafe { block_bytes(self.name.get()) }
    }
}

// The memory estimates count 16 bytes a key (`INDEX_BYTES_PER_KEY`): the `Cell`s cost none.
const _: () = assert!(std::mem::size_of::<Key>() == 16);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .total
            .get()
            .cmp(&self.total.get())
            .then_with(|| cmp_names(self.bytes(), other.bytes()))
    }
}

/// `a.cmp(b)` (bytes in lexicographic order), deciding most pairs on their first 8 bytes read
/// as one big-endian word: counts that tie compare names all along a search, and a call to
/// `memcmp` a comparison costs more than the comparison.
#[inline(never)]
fn cmp_names(a: &[u8], b: &[u8]) -> Ordering {
    let (x, y) = (head_word(a), head_word(b));
    if x != y {
        return x.cmp(&y);
    }
    // Equal heads: a name of at most 8 bytes is a prefix of the other (the zeros that pad it).
    if a.len() <= 8 || b.len() <= 8 {
        return a.len().cmp(&b.len());
    }
    a[8..].cmp(&b[8..])
}

/// The first 8 bytes of `s` as a big-endian word, padded with zeros.
#[inline]
fn head_word(s: &[u8]) -> u64 {
    match s.first_chunk::<8>() {
        Some(head) => u64::from_be_bytes(*head),
        None => s
            .iter()
            .enumerate()
            .fold(0, |w, (i, &b)| w | u64::from(b) << (56 - 8 * i)),
    }
}

/// Whether `reposition` first tries to write a new total in place. A try that finds the key
/// must move after all costs one more search, so it pays while most tries succeed (counts far
/// apart: a heavy-tailed stream) and not while most fail (counts that tie: a key moves past
/// its equals); the odds are learnt from recent tries, and while they are poor one update in
/// `PROBE_EVERY` still tries, so that they are learnt again.
#[derive(Default, Clone, Copy)]
struct InPlaceOdds {
    /// Successes minus failures of recent tries, within `-ODDS_SPAN..=ODDS_SPAN`.
    score: i8,
    skipped: u8,
}

const ODDS_SPAN: i8 = 8;
const PROBE_EVERY: u8 = 8;

impl InPlaceOdds {
    #[inline]
    fn worth_trying(&mut self) -> bool {
        if self.score >= 0 {
            return true;
        }
        self.skipped = self.skipped.wrapping_add(1);
        self.skipped.is_multiple_of(PROBE_EVERY)
    }

    #[inline]
    fn learn(&mut self, in_place: bool) {
        self.score = if in_place {
            (self.score + 1).min(ODDS_SPAN)
        } else {
            (self.score - 1).max(-ODDS_SPAN)
        };
    }
}

/// A running sum's totals (by slot: 0 for a free one; in fixed chunks, so a new slot never
/// copies the others) and, if it is `indexed`, its order index over the indexed slots.
#[derive(Default)]
struct SumIndex {
    keys: BTreeSet<Key>,
    odds: InPlaceOdds,
    totals: Chunked<i64>,
    indexed: bool,
}

impl SumIndex {
    #[inline]
    fn total(&self, id: u32) -> i64 {
        *self.totals.get(id as usize).expect("a slot's total")
    }

    #[inline]
    fn total_mut(&mut self, id: u32) -> &mut i64 {
        self.totals.get_mut(id as usize).expect("a slot's total")
    }
}

/// The member slots (`id -> name, data`, in fixed chunks that never reallocate) and, for each
/// running sum of the key, every slot's total and (the indexed sums first) an order index of
/// the live slots whose total in it is not 0 (a `BTreeSet` of `(total desc, name asc)`). A
/// member new to a key, or written only in buckets a sum does not hold (a backfill's, for a
/// view), costs that index nothing until its total there moves from 0.
pub(in crate::topn) struct NameTable<P> {
    // Declared first so that keys are dropped before the names they point to.
    sums: Vec<SumIndex>,
    chunks: Vec<Vec<Slot<P>>>,
    /// False while totals are set in bulk (a load, a copy): the indexes are built after, at
    /// once ([`NameTable::rebuild_indexes`]).
    indexing: bool,
}

impl<P> NameTable<P> {
    /// An empty table with `indexed` running sums that keep an order index, then `plain` ones
    /// that keep totals only.
    pub(in crate::topn) fn new(indexed: usize, plain: usize) -> NameTable<P> {
        let sum = |s: usize| SumIndex {
            indexed: s < indexed,
            ..SumIndex::default()
        };
        NameTable {
            sums: (0..indexed + plain).map(sum).collect(),
            chunks: Vec::new(),
            indexing: true,
        }
    }

    /// The total of live slot `id` in sum `s`.
    #[inline]
    pub(in crate::topn) fn total(&self, s: usize, id: u32) -> i64 {
        self.sums[s].total(id)
    }

    /// Every slot's total in sum `s` (0 for a free slot), by id: consecutive parts, each but
    /// the last of `tuples::chunked::CHUNK` totals.
    pub(in crate::topn) fn totals(&self, s: usize) -> Vec<&[i64]> {
        self.sums[s].totals.slices().collect()
    }

    /// The sum-`s` key of live slot `id`.
    fn key(&self, s: usize, id: u32) -> Key {
        let name = self.slot(id).name.as_ref().expect("live member").ptr();
        Key::new(self.sums[s].total(id), name)
    }

    /// Sets the total of live slot `id` in sum `s`, repositioning its key if indexed (in, out
    /// of or within the index as the total leaves 0, comes to 0 or moves).
    #[inline]
    pub(in crate::topn) fn set_total(&mut self, s: usize, id: u32, total: i64) {
        self.update_total(s, id, |_| Some(total));
    }

    /// Adds `delta` to the total of live slot `id` in sum `s` (as [`NameTable::set_total`]),
    /// unless the total after would not fit an i64: then false, nothing changed.
    #[inline]
    pub(in crate::topn) fn add_total(&mut self, s: usize, id: u32, delta: i64) -> bool {
        self.update_total(s, id, |old| old.checked_add(delta))
    }

    /// The total of live slot `id` in sum `s` to `new(old)`, if that is some; whether it was.
    #[inline]
    fn update_total(&mut self, s: usize, id: u32, new: impl FnOnce(i64) -> Option<i64>) -> bool {
        let NameTable {
            sums,
            chunks,
            indexing,
        } = self;
        let sum = &mut sums[s];
        let total = sum.total_mut(id);
        let old = *total;
        let Some(set) = new(old) else {
            return false;
        };
        *total = set;
        if sum.indexed && *indexing && old != set {
            let slot = &chunks[id as usize / CHUNK][id as usize % CHUNK];
            let name = slot.name.as_ref().expect("live member").ptr();
            reposition(&mut sum.keys, &mut sum.odds, Key::new(old, name), set);
        }
        true
    }

    /// Totals are about to be set in bulk (a load, a copy): the indexes wait for
    /// [`NameTable::rebuild_indexes`].
    pub(in crate::topn) fn suspend_indexes(&mut self) {
        self.indexing = false;
    }

    /// Sum `s`'s index, best first.
    pub(in crate::topn) fn iter(&self, s: usize) -> impl DoubleEndedIterator<Item = &Key> + '_ {
        self.sums[s].keys.iter()
    }

    /// Keys in sum `s`'s index.
    pub(in crate::topn) fn indexed(&self, s: usize) -> usize {
        self.sums[s].keys.len()
    }

    #[inline]
    pub(in crate::topn) fn slot(&self, id: u32) -> &Slot<P> {
        &self.chunks[id as usize / CHUNK][id as usize % CHUNK]
    }

    #[inline]
    fn slot_mut(&mut self, id: u32) -> &mut Slot<P> {
        &mut self.chunks[id as usize / CHUNK][id as usize % CHUNK]
    }

    /// The caller's data of slot `id`.
    #[inline]
    pub(in crate::topn) fn data(&self, id: u32) -> &P {
        &self.slot(id).data
    }

    #[inline]
    pub(in crate::topn) fn data_mut(&mut self, id: u32) -> &mut P {
        &mut self.slot_mut(id).data
    }

    /// The name of live slot `id`.
    #[inline]
    pub(in crate::topn) fn name(&self, id: u32) -> &[u8] {
        self.slot(id).name.as_ref().expect("live member").bytes()
    }

    /// Number of slots, live or free.
    pub(in crate::topn) fn slots(&self) -> usize {
        self.chunks.len().saturating_sub(1) * CHUNK + self.chunks.last().map_or(0, |c| c.len())
    }

    /// Appends a live slot (totals 0, not in the indexes); returns its id, the slot count
    /// before.
    pub(in crate::topn) fn push(&mut self, name: &[u8], data: P) -> u32 {
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            let capacity = if self.chunks.is_empty() { 0 } else { CHUNK };
            self.chunks.push(Vec::with_capacity(capacity));
        }
        let id = ((self.chunks.len() - 1) * CHUNK + self.chunks.last().map_or(0, |c| c.len()))
            .try_into()
            .expect("too many TOPN members");
        let slot = Slot {
            name: Some(Name::new(id, name)),
            data,
        };
        self.chunks.last_mut().expect("chunk").push(slot);
        for sum in &mut self.sums {
            sum.totals.push(0);
        }
        id
    }

    /// Makes free slot `id` live again (totals 0, not in the indexes).
    pub(in crate::topn) fn refill(&mut self, id: u32, name: &[u8], data: P) {
        let s = self.slot_mut(id);
        assert!(s.name.is_none(), "refill of a live slot");
        s.name = Some(Name::new(id, name));
        s.data = data;
    }

    /// Frees live slot `id` (out of every index, totals 0, name dropped); returns the name
    /// length.
    pub(in crate::topn) fn free(&mut self, id: u32) -> usize {
        self.unindex(id);
        self.slot_mut(id)
            .name
            .take()
            .expect("live member")
            .bytes()
            .len()
    }

    /// Takes live slot `id` out of every index (totals to 0).
    fn unindex(&mut self, id: u32) {
        for s in 0..self.sums.len() {
            let key = self.key(s, id);
            let sum = &mut self.sums[s];
            if sum.indexed && key.total() != 0 {
                sum.keys.remove(&key);
            }
            *sum.total_mut(id) = 0;
        }
    }

    /// Live slot ids (ascending).
    pub(in crate::topn) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.chunks
            .iter()
            .flatten()
            .enumerate()
            .filter(|(_, s)| s.is_live())
            .map(|(i, _)| i as u32)
    }

    /// Rebuilds every index over the live slots, from their totals (and indexes again).
    pub(in crate::topn) fn rebuild_indexes(&mut self) {
        for s in 0..self.sums.len() {
            if !self.sums[s].indexed {
                continue;
            }
            let mut keys: Vec<Key> = (self.ids().map(|id| self.key(s, id)))
                .filter(|k| k.total() != 0)
                .collect();
            keys.sort_unstable();
            self.sums[s].keys = keys.into_iter().collect();
        }
        self.indexing = true;
    }

    /// Drops the worst key of the last index that has one; false if every index is empty.
    pub(in crate::topn) fn index_pop_last(&mut self) -> bool {
        self.sums
            .iter_mut()
            .rev()
            .any(|sum| sum.keys.pop_last().is_some())
    }

    /// Frees one piece of the slot table (the last slot, or the last chunk once empty); false
    /// when no chunk is left.
    pub(in crate::topn) fn pop_step(&mut self) -> bool {
        let Some(chunk) = self.chunks.last() else {
            return false;
        };
        match chunk.last() {
            Some(s) => {
                if s.is_live() {
                    let id = ((self.chunks.len() - 1) * CHUNK + chunk.len() - 1) as u32;
                    self.unindex(id);
                }
                self.chunks.last_mut().expect("chunk").pop();
            }
            None => {
                self.chunks.pop();
            }
        }
        true
    }

    /// Releases the (empty) chunk list and indexes.
    pub(in crate::topn) fn release(&mut self) {
        self.sums = Vec::new();
        self.chunks = Vec::new();
    }

    /// True when nothing is left to free.
    pub(in crate::topn) fn is_freed(&self) -> bool {
        self.sums.is_empty() && self.chunks.capacity() == 0
    }

    /// Number of chunks of the slot table.
    pub(in crate::topn) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Offers its blocks to a defrag pass (`tuples::defrag`): the chunk list; a chunk per
    /// unit, then the name blocks of its slots a run per unit, each name's keys re-pointed in
    /// the unit that moves it; then the indexes' nodes, rebuilt when small ([`rebuild`]).
    pub(in crate::topn) fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| m.vec(&mut self.chunks));
        let chunks = self.chunks.len();
        pass.each(0..chunks, |c, pass| {
            pass.work(|m| {
                if let Some(chunk) = self.chunks.get_mut(c) {
                    m.vec(chunk)
                }
            });
            let slots = self.chunks.get(c).map_or(0, Vec::len);
            pass.each((0..slots).step_by(DEFRAG_RUN), |lo, pass| {
                pass.work(|m| self.move_names(c, lo, m))
            });
        });
        for sum in &mut self.sums {
            let keys = sum.keys.len();
            rebuild(pass, &mut sum.keys, keys, |_, _| {});
            sum.totals.defrag(pass, |_, _| {});
        }
    }

    /// Offers the name blocks of the live slots `lo..lo + DEFRAG_RUN` of chunk `c` (those that
    /// exist), re-pointing the keys of each name that moves.
    fn move_names(&mut self, c: usize, lo: usize, m: &mut impl Mover) {
        let NameTable { sums, chunks, .. } = self;
        let Some(chunk) = chunks.get_mut(c) else {
            return;
        };
        let hi = (lo + DEFRAG_RUN).min(chunk.len());
        for (i, slot) in chunk.iter_mut().enumerate().take(hi).skip(lo) {
            let Some(name) = &mut slot.name else {
                continue;
            };
            let old = name.ptr();
            // Every key pointing at this block, found while it is alive (a search reads names,
            // this one's too). A key carries its slot's total in its sum and its name, and
            // names are unique in a table: these lookups find every key there is (an indexed
            // slot without one has none: the index is being freed, `index_pop_last`).
            let id = c * CHUNK + i;
            let key = |sum: &SumIndex| {
                Some(Key::new(sum.total(id as u32), old)).filter(|k| k.total() != 0)
            };
            let keys: Vec<Option<&Key>> = sums
                .iter()
                .map(|sum| key(sum).and_then(|k| sum.keys.get(&k)))
                .collect();
            if keys.iter().flatten().any(|k| k.name.get() != old) {
                continue; // not this block's key: cannot happen (unique names); left alone
            }
            let layout = Name::layout(name.bytes().len());
            // SAFETY: `old` is the live block `Name::new` allocated with `layout`. What points
            // at it is the slot's `Name` and the keys found above (see there), and all of them
            // are re-pointed before anything reads them again.
            let moved = unsafe { m.raw(old, layout) };
            if moved != old {
                name.0 = moved;
                keys.into_iter().flatten().for_each(|k| k.name.set(moved));
            }
        }
    }

    /// Whether live slot `id` is in sum `s`'s index, with its current total.
    #[cfg(test)]
    pub(in crate::topn) fn index_contains(&self, s: usize, id: u32) -> bool {
        let key = self.key(s, id);
        self.sums[s].keys.get(&key).is_some_and(|k| k.id() == id)
    }

    /// Whether every key of every index points at its slot's name block.
    #[cfg(test)]
    pub(in crate::topn) fn keys_point_at_names(&self) -> bool {
        self.sums.iter().flat_map(|sum| sum.keys.iter()).all(|k| {
            let id = k.id() as usize;
            id < self.slots()
                && self
                    .slot(id as u32)
                    .name
                    .as_ref()
                    .is_some_and(|n| n.ptr() == k.name.get())
        })
    }

    /// Heap bytes of the slot table (not the names nor the indexes).
    pub(in crate::topn) fn slot_heap_bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Vec<Slot<P>>>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity() * std::mem::size_of::<Slot<P>>())
                .sum::<usize>()
    }

    /// Keys in every index, and the totals they keep room for (8 bytes each).
    pub(in crate::topn) fn sum_sizes(&self) -> (usize, usize) {
        let keys = self.sums.iter().map(|s| s.keys.len()).sum();
        let bytes: usize = self.sums.iter().map(|s| s.totals.heap_bytes()).sum();
        (keys, bytes / 8)
    }
}

/// Gives `key` (the key of a slot, which `index` holds unless its total is 0) the total
/// `total`: put in from 0, taken out at 0, else moved. A new total that leaves the key between
/// its neighbours (a member that passes no other: the usual increment of a heavy-tailed stream)
/// is written in place, after one search, when `odds` say it is worth trying; otherwise the key
/// is taken out and put back.
#[allow(clippy::mutable_key_type)] // a key's total changes in place only where its order holds
fn reposition(index: &mut BTreeSet<Key>, odds: &mut InPlaceOdds, key: Key, total: i64) {
    let old = key.total();
    let moved = Key::new(total, key.name.get());
    match (old, total) {
        (0, _) => {
            index.insert(moved);
            return;
        }
        (_, 0) => {
            index.remove(&key);
            return;
        }
        _ => {}
    }
    if odds.worth_trying() {
        // A higher total moves the key towards the front: only its predecessor can be
        // passed; a lower one towards the back: only its successor. (A range with one bound
        // searches once; with two, about twice.)
        let in_place = if total > old {
            let mut before = index.range(..=&key);
            match before.next_back() {
                Some(k) if k.is(&key) => before.next_back().is_none_or(|p| *p < moved).then_some(k),
                _ => return,
            }
        } else {
            let mut after = index.range(&key..);
            match after.next() {
                Some(k) if k.is(&key) => after.next().is_none_or(|n| moved < *n).then_some(k),
                _ => return,
            }
        };
        odds.learn(in_place.is_some());
        if let Some(k) = in_place {
            k.total.set(total);
            return;
        }
    }
    if index.remove(&key) {
        index.insert(moved);
    }
}

impl<P: Clone> NameTable<P> {
    /// A copy of the names and the caller's data (the same ids), with the sums' totals at 0
    /// and no key indexed: the sums are derived, and a copy rebuilds them.
    pub(in crate::topn) fn copy_names(&self) -> NameTable<P> {
        let chunks: Vec<Vec<Slot<P>>> = self
            .chunks
            .iter()
            .map(|c| {
                let mut v = Vec::with_capacity(c.capacity());
                v.extend(c.iter().map(|s| Slot {
                    name: s.name.as_ref().map(|n| Name::new(n.id(), n.bytes())),
                    data: s.data.clone(),
                }));
                v
            })
            .collect();
        let slots = self.slots();
        let zeros = || {
            let mut totals = Chunked::default();
            (0..slots).for_each(|_| totals.push(0));
            totals
        };
        NameTable {
            sums: (self.sums.iter())
                .map(|sum| SumIndex {
                    totals: zeros(),
                    indexed: sum.indexed,
                    ..SumIndex::default()
                })
                .collect(),
            chunks,
            indexing: true,
        }
    }
}
