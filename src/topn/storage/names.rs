//! Interned member names and the order indexes whose keys point at them, in one type
//! ([`NameTable`]) so that this module alone upholds the invariant that makes the key reads
//! sound (see the module above).

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ptr::NonNull;

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

/// Slots per chunk of the slot table (chunks never reallocate once full).
const CHUNK: usize = 4096;

/// Slots whose name blocks one unit of defrag work offers: each costs a lookup in one or two
/// B-trees (under a microsecond on a million members).
const DEFRAG_RUN: usize = 128;

/// One member slot: its interned name (`None` for a free slot), its running total, and data
/// of the caller's.
pub(in crate::topn) struct Slot<P> {
    name: Option<Name>,
    total: i64,
    /// The second total (see the clock index).
    clock_total: i64,
    pub(in crate::topn) data: P,
}

impl<P> Slot<P> {
    #[inline]
    pub(in crate::topn) fn is_live(&self) -> bool {
        self.name.is_some()
    }

    #[inline]
    pub(in crate::topn) fn total(&self) -> i64 {
        self.total
    }

    #[inline]
    pub(in crate::topn) fn clock_total(&self) -> i64 {
        self.clock_total
    }
}

/// Order index key: best first (highest total, then member ascending); 16 bytes.
///
/// Invariant (upheld by `NameTable`, the only place keys are made, stored and dropped): a key
/// lives only in an index of a `NameTable` (its order index, carrying the slot's total, or its
/// clock index, carrying the slot's clock total) and points to the name block of a live slot
/// of that same table; or in a `DroppedKeys`, which is never read. `NameTable` removes a
/// slot's keys before it frees or replaces the slot's name, and re-points them when defrag
/// moves the name (before anything reads them again), so every key in an index points to a
/// live block, and a `&Key` (only ever handed out borrowed from the table) keeps the table,
/// hence the block, alive.
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

/// The second order index, over `clock_total`, while it is built and once it is: every live
/// slot below `built` is in it (all of them once `built` reaches the slot count, which new
/// slots then keep it at).
struct ClockIndex {
    keys: BTreeSet<Key>,
    odds: InPlaceOdds,
    built: usize,
}

/// The order index of a view (`layout/full/views.rs`): each slot's view total (`totals[id]`,
/// clamped; 0 for a free slot) and, for the slots indexed, its key over that total.
#[derive(Default)]
struct ViewIndex {
    keys: BTreeSet<Key>,
    odds: InPlaceOdds,
    totals: Vec<i64>,
}

/// Keys taken out of a table with its clock index, only to be dropped (dropping a key reads
/// nothing it points to): they cannot be read, so the invariant on `Key` holds.
pub(in crate::topn) struct DroppedKeys {
    _keys: BTreeSet<Key>,
}

/// The member slots (`id -> name, total, clock total, data`, in fixed chunks that never
/// reallocate), the order index over the indexed ones (`BTreeSet` of `(total desc, name
/// asc)`), when asked for, the clock index (the same over `clock_total`), and an index per
/// view of the key (the same over the view's totals; every indexed slot is in each).
pub(in crate::topn) struct NameTable<P> {
    // Declared first so that keys are dropped before the names they point to.
    index: BTreeSet<Key>,
    index_odds: InPlaceOdds,
    clock: Option<ClockIndex>,
    views: Vec<ViewIndex>,
    chunks: Vec<Vec<Slot<P>>>,
}

impl<P> NameTable<P> {
    pub(in crate::topn) fn new() -> NameTable<P> {
        NameTable {
            index: BTreeSet::new(),
            index_odds: InPlaceOdds::default(),
            clock: None,
            views: Vec::new(),
            chunks: Vec::new(),
        }
    }

    /// Gives an empty table `n` view indexes.
    pub(in crate::topn) fn add_views(&mut self, n: usize) {
        debug_assert!(self.slots() == 0);
        self.views = (0..n).map(|_| ViewIndex::default()).collect();
    }

    /// The total of live slot `id` in view `v`.
    #[inline]
    pub(in crate::topn) fn view_total(&self, v: usize, id: u32) -> i64 {
        self.views[v].totals[id as usize]
    }

    /// The view-`v` key of live slot `id`.
    fn view_key(&self, v: usize, id: u32) -> Key {
        let name = self.slot(id).name.as_ref().expect("live member").ptr();
        Key::new(self.views[v].totals[id as usize], name)
    }

    /// Sets the total of live slot `id` in view `v`, repositioning its key if indexed.
    pub(in crate::topn) fn set_view_total(&mut self, v: usize, id: u32, total: i64) {
        let key = self.view_key(v, id);
        let view = &mut self.views[v];
        view.totals[id as usize] = total;
        reposition(&mut view.keys, &mut view.odds, key, total);
    }

    /// View `v`'s index, best first.
    pub(in crate::topn) fn view_iter(&self, v: usize) -> impl Iterator<Item = &Key> + '_ {
        self.views[v].keys.iter()
    }

    /// Keys in every view index, and the slots their totals cover.
    pub(in crate::topn) fn view_sizes(&self) -> (usize, usize) {
        let keys = self.views.iter().map(|v| v.keys.len()).sum();
        (keys, self.views.iter().map(|v| v.totals.capacity()).sum())
    }

    /// Takes live slot `id` out of every view index (totals to 0).
    fn views_remove(&mut self, id: u32) {
        for v in 0..self.views.len() {
            let key = self.view_key(v, id);
            let view = &mut self.views[v];
            view.keys.remove(&key);
            view.totals[id as usize] = 0;
        }
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

    /// Appends a live slot (total 0, not in the index); returns its id, the slot count before.
    pub(in crate::topn) fn push(&mut self, name: &[u8], data: P) -> u32 {
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            self.chunks.push(Vec::new());
        }
        let id = ((self.chunks.len() - 1) * CHUNK + self.chunks.last().map_or(0, |c| c.len()))
            .try_into()
            .expect("too many TOPN members");
        let slot = Slot {
            name: Some(Name::new(id, name)),
            total: 0,
            clock_total: 0,
            data,
        };
        self.chunks.last_mut().expect("chunk").push(slot);
        for view in &mut self.views {
            view.totals.push(0);
        }
        if let Some(c) = &mut self.clock {
            // A complete clock index covers the new slot too (`index_insert` puts it in).
            if c.built == id as usize {
                c.built += 1;
            }
        }
        id
    }

    /// Makes free slot `id` live again (total 0, not in the index).
    pub(in crate::topn) fn refill(&mut self, id: u32, name: &[u8], data: P) {
        let s = self.slot_mut(id);
        assert!(s.name.is_none(), "refill of a live slot");
        s.name = Some(Name::new(id, name));
        s.total = 0;
        s.clock_total = 0;
        s.data = data;
    }

    /// The key of live slot `id`.
    fn key(&self, id: u32) -> Key {
        let s = self.slot(id);
        Key::new(s.total, s.name.as_ref().expect("live member").ptr())
    }

    /// A key of another table's, over this table's copy of its name.
    fn copy_key(&self, key: &Key) -> Key {
        let name = self
            .slot(key.id())
            .name
            .as_ref()
            .expect("live member")
            .ptr();
        Key::new(key.total(), name)
    }

    /// The clock-index key of live slot `id`.
    fn clock_key(&self, id: u32) -> Key {
        let s = self.slot(id);
        Key::new(s.clock_total, s.name.as_ref().expect("live member").ptr())
    }

    /// Whether live slot `id` belongs in the clock index (it exists and was built past `id`).
    #[inline]
    fn in_clock(&self, id: u32) -> bool {
        self.clock.as_ref().is_some_and(|c| (id as usize) < c.built)
    }

    /// Adds live slot `id` to the index (and to the clock index, if that covers it).
    pub(in crate::topn) fn index_insert(&mut self, id: u32) {
        let key = self.key(id);
        self.index.insert(key);
        for v in 0..self.views.len() {
            let key = self.view_key(v, id);
            self.views[v].keys.insert(key);
        }
        if self.in_clock(id) {
            let key = self.clock_key(id);
            if let Some(c) = &mut self.clock {
                c.keys.insert(key);
            }
        }
    }

    /// Sets the clock total of live slot `id`, repositioning it in the clock index if there.
    #[inline]
    pub(in crate::topn) fn set_clock_total(&mut self, id: u32, total: i64) {
        if !self.in_clock(id) {
            self.slot_mut(id).clock_total = total;
            return;
        }
        let key = self.clock_key(id);
        self.slot_mut(id).clock_total = total;
        if let Some(c) = &mut self.clock {
            reposition(&mut c.keys, &mut c.odds, key, total);
        }
    }

    /// Sets the total of live slot `id`, repositioning it in the index if it is there.
    pub(in crate::topn) fn set_total(&mut self, id: u32, total: i64) {
        let key = self.key(id);
        self.slot_mut(id).total = total;
        reposition(&mut self.index, &mut self.index_odds, key, total);
    }

    /// Frees live slot `id` (out of the index, name dropped, total 0); returns the name length.
    pub(in crate::topn) fn free(&mut self, id: u32) -> usize {
        let key = self.key(id);
        self.index.remove(&key);
        self.clock_remove(id);
        self.views_remove(id);
        let s = self.slot_mut(id);
        let name = s.name.take().expect("live member");
        s.total = 0;
        s.clock_total = 0;
        name.bytes().len()
    }

    /// Takes live slot `id` out of the clock index, if it is there.
    fn clock_remove(&mut self, id: u32) {
        if self.in_clock(id) {
            let key = self.clock_key(id);
            if let Some(c) = &mut self.clock {
                c.keys.remove(&key);
            }
        }
    }

    /// Builds the whole clock index at once (at a load, beside `rebuild_index`).
    pub(in crate::topn) fn rebuild_clock_index(&mut self) {
        let mut keys: Vec<Key> = self.ids().map(|id| self.clock_key(id)).collect();
        keys.sort_unstable();
        self.clock = Some(ClockIndex {
            keys: keys.into_iter().collect(),
            odds: InPlaceOdds::default(),
            built: self.slots(),
        });
    }

    /// Starts a clock index (empty; `clock_index_step` builds it).
    pub(in crate::topn) fn clock_index_start(&mut self) {
        self.clock = Some(ClockIndex {
            keys: BTreeSet::new(),
            odds: InPlaceOdds::default(),
            built: 0,
        });
    }

    /// Adds up to `slots` more slots to the clock index being built; returns the slots
    /// visited (0 when it is complete or absent).
    pub(in crate::topn) fn clock_index_step(&mut self, slots: usize) -> usize {
        let total = self.slots();
        let Some(from) = self.clock.as_ref().map(|c| c.built) else {
            return 0;
        };
        let to = total.min(from.saturating_add(slots));
        let keys: Vec<Key> = (from..to)
            .filter(|&id| self.slot(id as u32).is_live())
            .map(|id| self.clock_key(id as u32))
            .collect();
        if let Some(c) = &mut self.clock {
            c.keys.extend(keys);
            c.built = to;
        }
        to - from
    }

    /// Whether there is a complete clock index.
    pub(in crate::topn) fn clock_index_ready(&self) -> bool {
        self.clock.as_ref().is_some_and(|c| c.built >= self.slots())
    }

    /// Whether a clock index exists (complete or being built).
    pub(in crate::topn) fn has_clock_index(&self) -> bool {
        self.clock.is_some()
    }

    /// Takes the clock index away (to be dropped, maybe on another thread).
    pub(in crate::topn) fn clock_index_take(&mut self) -> Option<DroppedKeys> {
        self.clock.take().map(|c| DroppedKeys { _keys: c.keys })
    }

    /// The complete clock index, best first (`None` while it is absent or being built).
    pub(in crate::topn) fn clock_index_iter(&self) -> Option<impl Iterator<Item = &Key> + '_> {
        if !self.clock_index_ready() {
            return None;
        }
        self.clock.as_ref().map(|c| c.keys.iter())
    }

    /// Keys in the clock index.
    pub(in crate::topn) fn clock_index_len(&self) -> usize {
        self.clock.as_ref().map_or(0, |c| c.keys.len())
    }

    /// Whether live slot `id` is in the clock index exactly when it should be, with its
    /// current clock total.
    #[cfg(test)]
    pub(in crate::topn) fn clock_index_consistent(&self, id: u32) -> bool {
        let found = self.clock.as_ref().is_some_and(|c| {
            c.keys
                .get(&self.clock_key(id))
                .is_some_and(|k| k.id() == id)
        });
        found == self.in_clock(id)
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

    /// Writes every slot's total (its clock total with `clock`) into `out[id]` (0 for a free
    /// slot); `out` has a cell per slot.
    pub(in crate::topn) fn totals_into(&self, clock: bool, out: &mut [i64]) {
        // Chunk by chunk: a plain loop over each (a flattened iterator checks its state at
        // every slot).
        for (out, chunk) in out.chunks_mut(CHUNK).zip(&self.chunks) {
            for (o, s) in out.iter_mut().zip(chunk) {
                *o = if clock { s.clock_total } else { s.total };
            }
        }
    }

    /// Rebuilds the index over every live slot.
    pub(in crate::topn) fn rebuild_index(&mut self) {
        let mut keys: Vec<Key> = self.ids().map(|id| self.key(id)).collect();
        keys.sort_unstable();
        self.index = keys.into_iter().collect();
        for v in 0..self.views.len() {
            let mut keys: Vec<Key> = self.ids().map(|id| self.view_key(v, id)).collect();
            keys.sort_unstable();
            self.views[v].keys = keys.into_iter().collect();
        }
    }

    /// The index, best first.
    pub(in crate::topn) fn index_iter(&self) -> impl DoubleEndedIterator<Item = &Key> + '_ {
        self.index.iter()
    }

    pub(in crate::topn) fn index_len(&self) -> usize {
        self.index.len()
    }

    /// Whether live slot `id` is in the index, with its current total.
    #[cfg(test)]
    pub(in crate::topn) fn index_contains(&self, id: u32) -> bool {
        self.index.get(&self.key(id)).is_some_and(|k| k.id() == id)
    }

    /// Drops the worst index key (clock index first, then views'); false if every index was
    /// empty.
    pub(in crate::topn) fn index_pop_last(&mut self) -> bool {
        if let Some(c) = &mut self.clock {
            if c.keys.pop_last().is_some() {
                return true;
            }
            self.clock = None;
        }
        if let Some(view) = self.views.last_mut() {
            if view.keys.pop_last().is_none() {
                self.views.pop();
            }
            return true;
        }
        self.index.pop_last().is_some()
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
                    if !self.index.is_empty() {
                        let key = self.key(id);
                        self.index.remove(&key);
                    }
                    self.clock_remove(id);
                    self.views_remove(id);
                }
                self.chunks.last_mut().expect("chunk").pop();
            }
            None => {
                self.chunks.pop();
            }
        }
        true
    }

    /// Releases the (empty) chunk list and index.
    pub(in crate::topn) fn release(&mut self) {
        self.index = BTreeSet::new();
        self.clock = None;
        self.views = Vec::new();
        self.chunks = Vec::new();
    }

    /// True when nothing is left to free.
    pub(in crate::topn) fn is_freed(&self) -> bool {
        self.index.is_empty()
            && self.clock.is_none()
            && self.views.is_empty()
            && self.chunks.capacity() == 0
    }

    /// Number of chunks of the slot table.
    pub(in crate::topn) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Offers its blocks to a defrag pass (`tuples::defrag`): the chunk list; a chunk per
    /// unit, then the name blocks of its slots a run per unit, each name's keys re-pointed in
    /// the unit that moves it; then the indexes' nodes, rebuilt when small ([`rebuild`]).
    /// A clock index being built is walked as it stands: a slot it covers has its key there.
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
        let keys = self.index.len();
        rebuild(pass, &mut self.index, keys, |_, _| {});
        if let Some(clock) = &mut self.clock {
            let keys = clock.keys.len();
            rebuild(pass, &mut clock.keys, keys, |_, _| {});
        }
        for view in &mut self.views {
            let keys = view.keys.len();
            rebuild(pass, &mut view.keys, keys, |_, _| {});
            pass.work(|m| m.vec(&mut view.totals));
        }
    }

    /// Offers the name blocks of the live slots `lo..lo + DEFRAG_RUN` of chunk `c` (those that
    /// exist), re-pointing the keys of each name that moves.
    fn move_names(&mut self, c: usize, lo: usize, m: &mut impl Mover) {
        let NameTable {
            index,
            clock,
            views,
            chunks,
            ..
        } = self;
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
            // this one's too). A key carries its slot's total (clock total in the clock index,
            // for the slots it covers) and name, and names are unique in a table: these
            // lookups find every key there is (a covered slot without one has none: the index
            // is being freed, `index_pop_last`).
            let key = index.get(&Key::new(slot.total, old));
            let clock_key = clock
                .as_ref()
                .filter(|k| c * CHUNK + i < k.built)
                .and_then(|k| k.keys.get(&Key::new(slot.clock_total, old)));
            let id = c * CHUNK + i;
            let view_keys = views
                .iter()
                .map(|v| v.keys.get(&Key::new(v.totals[id], old)));
            let keys: Vec<Option<&Key>> = [key, clock_key].into_iter().chain(view_keys).collect();
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

    /// Whether every key of both indexes points at its slot's name block.
    #[cfg(test)]
    pub(in crate::topn) fn keys_point_at_names(&self) -> bool {
        let clock = self.clock.iter().flat_map(|c| c.keys.iter());
        let views = self.views.iter().flat_map(|v| v.keys.iter());
        self.index.iter().chain(clock).chain(views).all(|k| {
            let id = k.id() as usize;
            id < self.slots()
                && self
                    .slot(id as u32)
                    .name
                    .as_ref()
                    .is_some_and(|n| n.ptr() == k.name.get())
        })
    }

    /// Heap bytes of the slot table (not the names nor the index).
    pub(in crate::topn) fn slot_heap_bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Vec<Slot<P>>>()
            + self
                .chunks
                .iter()
                .map(|c| c.capacity() * std::mem::size_of::<Slot<P>>())
                .sum::<usize>()
    }
}

/// Gives `key` (the key of a slot as `index` may hold it) the total `total`, if `index` holds
/// it. A new total that leaves the key between its neighbours (a member that passes no other:
/// the usual increment of a heavy-tailed stream) is written in place, after one search, when
/// `odds` say it is worth trying; otherwise the key is taken out and put back.
#[allow(clippy::mutable_key_type)] // a key's total changes in place only where its order holds
fn reposition(index: &mut BTreeSet<Key>, odds: &mut InPlaceOdds, key: Key, total: i64) {
    let old = key.total();
    if old == total {
        return;
    }
    let moved = Key::new(total, key.name.get());
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

impl<P: Clone> Clone for NameTable<P> {
    /// A deep copy: names are copied, the index is rebuilt over the copies (the clock index
    /// is not: it is built again when wanted).
    fn clone(&self) -> NameTable<P> {
        let chunks: Vec<Vec<Slot<P>>> = self
            .chunks
            .iter()
            .map(|c| {
                let mut v = Vec::with_capacity(c.capacity());
                v.extend(c.iter().map(|s| Slot {
                    name: s.name.as_ref().map(|n| Name::new(n.id(), n.bytes())),
                    total: s.total,
                    clock_total: s.clock_total,
                    data: s.data.clone(),
                }));
                v
            })
            .collect();
        let mut t = NameTable {
            index: BTreeSet::new(),
            index_odds: InPlaceOdds::default(),
            clock: None,
            views: Vec::new(),
            chunks,
        };
        // Already sorted: the bulk build is linear.
        let keys: Vec<Key> = self.index.iter().map(|k| t.key(k.id())).collect();
        t.index = keys.into_iter().collect();
        for view in &self.views {
            let keys: Vec<Key> = view.keys.iter().map(|k| t.copy_key(k)).collect();
            t.views.push(ViewIndex {
                keys: keys.into_iter().collect(),
                odds: InPlaceOdds::default(),
                totals: view.totals.clone(),
            });
        }
        t
    }
}
