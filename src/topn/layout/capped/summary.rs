//! A bucket's Space-Saving summary for a TOPN key with `CAPACITY m`
//! (`capped/mod.rs`): at most m counters `(count, error)`, and the counter to
//! evict (the smallest count, ties by the smallest member) found in O(1).
//! Compact: no allocation per counter, about 40 bytes a counter with an
//! 8-byte member (a map and an ordered set of boxed names took about 130).
//!
//! - `slots`: one per counter, `{count, error, name offset, name length}`,
//!   dense: a counter is never removed, only replaced by an eviction.
//! - `arenas`: the bytes of the members of up to `SHORT_MOST` bytes, one
//!   arena a group of `GROUP_SLOTS` slots; an evicted member leaves a hole,
//!   and its group's arena is rebuilt from the group's slots when its holes
//!   outweigh its live bytes, or when it is full and a quarter is holes. A
//!   longer member has a block of its own, with its hash (`long`). So no
//!   write copies, hashes or scans more than a group's arena (at most 128
//!   KiB) besides its own member, whatever the bucket's member bytes (one
//!   arena for the bucket took 7-10 ms a write at 10,000 members of 1 KB).
//! - `links`: a binary min-heap of slot numbers keyed by (count, member),
//!   and each slot's place in it: the root is the counter to evict, an
//!   increment sifts in O(log m).
//! - `table`: open addressing with linear probing over slot numbers, sized
//!   about 1.5 x the counters (at most 3/4 full), hashed with the process's
//!   hasher. A cell holds its slot's number (14 bits) and 2 bits of its
//!   member's hash, so a probe compares a member's bytes once in 4 times
//!   where it differs (a lookup of an absent member probes about 5 cells).
//!   It only finds a member: no reply, order or encoding depends on it or on
//!   the arenas' layout. A rebuild (as it grows) hashes the short members:
//!   past `HASHED_MOST` bytes of them it takes its full size at once.
//!
//! Slot numbers are 14 bits (`MAX_COUNTERS`); an arena's offsets fit in u32
//! (`GROUP_SLOTS x SHORT_MOST`, and as many holes). Pure Rust, no FFI.

use std::fmt;
use std::hash::{BuildHasher, Hasher};

use crate::topn::error::Overflow;
use crate::topn::error::{Error, MAX_NAME_BYTES};
use crate::tuples::defrag::Mover;
use crate::tuples::table::process_hasher;

/// An empty cell of the table.
const EMPTY: u16 = u16::MAX;
/// A cell's slot number: its low 14 bits (the high 2 are its member's tag).
const SLOT_BITS: u16 = (1 << 14) - 1;
/// Counters a summary holds at most (slot numbers are 14 bits, but `EMPTY`'s).
pub const MAX_COUNTERS: usize = SLOT_BITS as usize;
/// Slots whose short members share an arena.
const GROUP_SLOTS: usize = 256;
/// Member bytes kept in an arena at most; a longer member has a block of its own.
const SHORT_MOST: usize = 256;
/// Short member bytes a rebuild of the table hashes at most: past them it takes its full size.
const HASHED_MOST: usize = 64 << 10;

/// A table cell: slot `s` with its member's tag (2 bits of its hash).
fn cell(s: usize, hash: u64) -> u16 {
    s as u16 | tag(hash)
}

/// The 2 bits of a hash a cell keeps (the low ones: `home` takes the high).
fn tag(hash: u64) -> u16 {
    (hash as u16) << 14
}

// Member bytes a summary copied or hashed on this thread: what tests bound a write's work by,
// whatever the machine's time.
#[cfg(test)]
thread_local! {
    pub static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` copied or hashed ([`WORK`]; nothing outside tests).
#[inline]
fn work(bytes: usize) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + bytes));
    let _ = bytes;
}

/// A member's hash for [`Summary`]'s lookups: computed once for every
/// bucket of a read (the process's hasher).
pub fn hash(member: &[u8]) -> u64 {
    work(member.len());
    let mut h = process_hasher().build_hasher();
    h.write(member);
    h.finish()
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    count: i64,
    error: i64,
    off: u32,
    len: u32,
}

/// The members of up to `SHORT_MOST` bytes of a group of slots, and the bytes of those
/// evicted since the arena was last rebuilt.
#[derive(Clone, Default)]
struct Arena {
    bytes: Vec<u8>,
    holes: u32,
}

/// A member longer than `SHORT_MOST` bytes: its slot's `off` is its place in `long`, and it
/// names its slot back (a removal moves the last one into its place).
#[derive(Clone)]
struct Long {
    name: Box<[u8]>,
    hash: u64,
    slot: u16,
}

/// `links[i].heap`: the slot at place i of the heap; `links[s].pos`: slot
/// s's place in it (both vectors as long as the counters, so one).
#[derive(Clone, Copy, Debug)]
struct Link {
    heap: u16,
    pos: u16,
}

#[derive(Clone, Default)]
pub struct Summary {
    slots: Vec<Slot>,
    links: Vec<Link>,
    table: Box<[u16]>,
    arenas: Vec<Arena>,
    long: Vec<Long>,
    /// Bytes of the members held.
    name_bytes: usize,
    /// Whether the bucket ever evicted: its floor is then its smallest count.
    pub evicted: bool,
    /// The counts' sum: every count is at most it (an eviction hands the
    /// smallest count on, so it grows by each increment exactly).
    sum: i128,
}

impl Summary {
    /// Offers its blocks to a defrag pass.
    pub fn defrag(&mut self, m: &mut impl Mover) {
        m.vec(&mut self.slots);
        m.vec(&mut self.links);
        m.slice(&mut self.table);
        m.vec(&mut self.arenas);
        self.arenas.iter_mut().for_each(|a| m.vec(&mut a.bytes));
        m.vec(&mut self.long);
        self.long.iter_mut().for_each(|l| m.slice(&mut l.name));
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// What a member absent from the bucket counted at most: its smallest
    /// count once it evicted, 0 before.
    pub fn floor(&self) -> i64 {
        match (self.evicted, self.min()) {
            (true, Some(count)) => count,
            _ => 0,
        }
    }

    /// The counts' sum.
    pub fn sum(&self) -> i128 {
        self.sum
    }

    /// The bytes of its members.
    pub fn name_bytes(&self) -> usize {
        self.name_bytes
    }

    /// The smallest counter's count.
    pub fn min(&self) -> Option<i64> {
        self.links
            .first()
            .map(|l| self.slots[l.heap as usize].count)
    }

    /// `member`'s slot (`hash` is [`hash`]'s).
    pub fn find(&self, member: &[u8], hash: u64) -> Option<usize> {
        if self.table.is_empty() {
            return None;
        }
        let (mut i, tag) = (self.home(hash), tag(hash));
        loop {
            let c = self.table[i];
            if c == EMPTY {
                return None;
            }
            let s = (c & SLOT_BITS) as usize;
            if c & !SLOT_BITS == tag && self.name(s) == member {
                return Some(s);
            }
            i = self.next(i);
        }
    }

    /// A slot's `(count, error)`.
    pub fn counter(&self, slot: usize) -> (i64, i64) {
        let s = &self.slots[slot];
        (s.count, s.error)
    }

    /// The slot at place `i` of the heap (place 0 holds the counter to
    /// evict; place i's children are 2i + 1 and 2i + 2).
    pub fn heap_slot(&self, i: usize) -> Option<usize> {
        self.links.get(i).map(|l| l.heap as usize)
    }

    /// Slot `slot`'s member and count.
    pub fn entry(&self, slot: usize) -> (&[u8], i64) {
        (self.name(slot), self.slots[slot].count)
    }

    /// The slot an add of a member found at `found` changes: its own, a new
    /// one below `capacity`, else the counter it evicts.
    pub fn target(&self, found: Option<usize>, capacity: usize) -> usize {
        match (found, self.links.first()) {
            (Some(s), _) => s,
            (None, Some(root)) if self.len() >= capacity.min(MAX_COUNTERS) => root.heap as usize,
            _ => self.len(),
        }
    }

    pub fn get(&self, member: &[u8], hash: u64) -> Option<(i64, i64)> {
        self.find(member, hash).map(|s| self.counter(s))
    }

    /// Every counter as `(member, count, error)`, in no set order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], i64, i64)> + '_ {
        (0..self.slots.len()).map(|s| (self.name(s), self.slots[s].count, self.slots[s].error))
    }

    /// Adds `by` (>= 1) to `member` (`found`: its slot, [`Summary::find`]'s
    /// answer on this summary as it is); at a full summary of `capacity` the
    /// member takes the smallest counter's place with `(min + by, min)`.
    /// Returns its count after; refused before anything changes.
    pub fn add(
        &mut self,
        member: &[u8],
        hash: u64,
        found: Option<usize>,
        by: i64,
        capacity: usize,
    ) -> Result<i64, Overflow> {
        if let Some(s) = found {
            let new = self.slots[s].count.checked_add(by).ok_or(Overflow)?;
            self.slots[s].count = new;
            // A count that grew only sinks.
            self.sink(s as u16, self.links[s].pos as usize);
            self.sum += i128::from(by);
            return Ok(new);
        }
        if self.len() < capacity.min(MAX_COUNTERS) {
            self.names_fit(member, 0).map_err(|_| Overflow)?;
            self.push(member, hash, (by, 0), capacity);
            self.sum += i128::from(by);
            return Ok(by);
        }
        let Some(root) = self.links.first().map(|l| l.heap as usize) else {
            return Ok(0);
        };
        let min = self.slots[root].count;
        let new = min.checked_add(by).ok_or(Overflow)?;
        self.names_fit(member, self.slots[root].len as usize)
            .map_err(|_| Overflow)?;
        self.replace(root, member, hash, (new, min));
        self.evicted = true;
        self.sum += i128::from(by);
        Ok(new)
    }

    /// Sets `member`'s counter as an encoding or a rewrite holds it (`evicted`:
    /// the bucket's floor is its smallest count). Refused, changing nothing,
    /// for a new member past `capacity`.
    pub fn set(
        &mut self,
        member: &[u8],
        counter: (i64, i64),
        evicted: bool,
        capacity: usize,
    ) -> Result<(), Error> {
        let hash = hash(member);
        match self.find(member, hash) {
            Some(s) => {
                self.sum -= i128::from(self.slots[s].count);
                (self.slots[s].count, self.slots[s].error) = counter;
                self.resift(s);
            }
            None => {
                if self.len() >= capacity.min(MAX_COUNTERS) {
                    return Err(Error::PastCapacity);
                }
                self.names_fit(member, 0)?;
                self.push(member, hash, counter, capacity);
            }
        }
        self.sum += i128::from(counter.0);
        self.evicted |= evicted;
        Ok(())
    }

    /// Gives back the spare capacity of its vectors (kept while it takes
    /// writes, so that they grow by halves or doublings): the last group's
    /// arena's (the others gave theirs back as their groups filled).
    pub fn shrink(&mut self) {
        self.slots.shrink_to_fit();
        self.links.shrink_to_fit();
        if let Some(a) = self.arenas.last_mut() {
            work(a.bytes.len());
            a.bytes.shrink_to_fit();
        }
    }

    /// The heap bytes allocated (capacities, not lengths).
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.links.capacity() * std::mem::size_of::<Link>()
            + std::mem::size_of_val(&*self.table)
            + self.arenas.capacity() * std::mem::size_of::<Arena>()
            + self
                .arenas
                .iter()
                .map(|a| a.bytes.capacity())
                .sum::<usize>()
            + self.long.capacity() * std::mem::size_of::<Long>()
            + self.long.iter().map(|l| l.name.len()).sum::<usize>()
    }

    fn name(&self, slot: usize) -> &[u8] {
        let s = &self.slots[slot];
        match s.len as usize {
            len if len > SHORT_MOST => &self.long[s.off as usize].name,
            len => &self.arenas[slot / GROUP_SLOTS].bytes[s.off as usize..][..len],
        }
    }

    /// A slot's member's hash: kept for a long member.
    fn slot_hash(&self, slot: usize) -> u64 {
        let s = &self.slots[slot];
        match s.len as usize > SHORT_MOST {
            true => self.long[s.off as usize].hash,
            false => hash(self.name(slot)),
        }
    }

    /// Whether `member` fits in the bucket's member bytes, `freed` of them
    /// leaving.
    fn names_fit(&self, member: &[u8], freed: usize) -> Result<(), Error> {
        let live = self.name_bytes - freed;
        if live + member.len() > MAX_NAME_BYTES {
            return Err(Error::MembersPastLimit);
        }
        Ok(())
    }

    /// A new slot for `member` (the summary below its capacity).
    fn push(&mut self, member: &[u8], hash: u64, (count, error): (i64, i64), capacity: usize) {
        let s = self.slots.len();
        if s == self.slots.capacity() {
            // Doubling up to the capacity: a full bucket holds no spare slots.
            let more = s.max(4).min(capacity.saturating_sub(s)).max(1);
            self.slots.reserve_exact(more);
            self.links.reserve_exact(more);
        }
        if 4 * (s + 1) > 3 * self.table.len() {
            let cap = capacity.min(MAX_COUNTERS);
            let full = cap + cap / 2 + 2;
            let short: usize = self.arenas.iter().map(|a| a.bytes.len()).sum();
            let size = match short > HASHED_MOST {
                true => full,
                false => (self.table.len() * 2).max(8).min(full),
            };
            self.rebuild_table(size.max((s + 1) * 4 / 3 + 2));
        }
        if s.is_multiple_of(GROUP_SLOTS) && s > 0 {
            // The group before is full: only evictions write to its arena now.
            if let Some(a) = self.arenas.get_mut(s / GROUP_SLOTS - 1) {
                work(a.bytes.len());
                a.bytes.shrink_to_fit();
            }
        }
        let (off, len) = self.push_name(s, member, hash);
        self.slots.push(Slot {
            count,
            error,
            off,
            len,
        });
        let place = s as u16;
        self.links.push(Link {
            heap: place,
            pos: place,
        });
        self.index(s, hash);
        self.resift(s);
    }

    /// Slot `s` (the heap's root) taken by `member`.
    fn replace(&mut self, s: usize, member: &[u8], hash: u64, (count, error): (i64, i64)) {
        self.unindex(s);
        self.release_name(s);
        let (off, len) = self.push_name(s, member, hash);
        self.slots[s] = Slot {
            count,
            error,
            off,
            len,
        };
        self.index(s, hash);
        self.settle_root(s as u16);
    }

    /// Slot `s`'s member given up (the slot then names the empty member).
    fn release_name(&mut self, s: usize) {
        let Slot { off, len, .. } = self.slots[s];
        if len as usize > SHORT_MOST {
            self.long.swap_remove(off as usize);
            if let Some(moved) = self.long.get(off as usize) {
                self.slots[moved.slot as usize].off = off;
            }
        } else {
            let arena = &mut self.arenas[s / GROUP_SLOTS];
            if off as usize + len as usize == arena.bytes.len() {
                arena.bytes.truncate(off as usize);
            } else {
                arena.holes += len;
            }
        }
        self.name_bytes -= len as usize;
        (self.slots[s].off, self.slots[s].len) = (0, 0);
    }

    /// Slot `s`'s member stored (its slot not pointing to a member): a long one in a block of
    /// its own; a short one appended to its group's arena. The arena is rebuilt first (its
    /// group's live members only) when its holes outweigh its live bytes, or when it is full
    /// and a quarter of it is holes; grown by half otherwise. An empty name is at 0 (so a
    /// truncation leaves no offset past the end).
    fn push_name(&mut self, s: usize, member: &[u8], hash: u64) -> (u32, u32) {
        self.name_bytes += member.len();
        work(member.len());
        let g = s / GROUP_SLOTS;
        if g >= self.arenas.len() {
            self.arenas.resize_with(g + 1, Arena::default);
        }
        let long = member.len() > SHORT_MOST;
        let room = if long { 0 } else { member.len() };
        let arena = &mut self.arenas[g];
        let holes = arena.holes as usize;
        let live = arena.bytes.len() - holes;
        let full = arena.bytes.capacity() - arena.bytes.len() < room;
        if holes > live || (full && holes > 0 && 4 * holes >= live) {
            let want = live + room;
            let mut bytes = Vec::with_capacity(want + want / 4);
            let group = g * GROUP_SLOTS..self.slots.len().min((g + 1) * GROUP_SLOTS);
            for slot in &mut self.slots[group] {
                if slot.len > 0 && slot.len as usize <= SHORT_MOST {
                    let start = slot.off as usize;
                    slot.off = bytes.len() as u32;
                    bytes.extend_from_slice(&arena.bytes[start..][..slot.len as usize]);
                }
            }
            work(bytes.len());
            (arena.bytes, arena.holes) = (bytes, 0);
        } else if full {
            work(arena.bytes.len());
            (arena.bytes).reserve_exact(room.max(arena.bytes.len() / 2));
        }
        if long {
            let (name, slot) = (member.into(), s as u16);
            self.long.push(Long { name, hash, slot });
            return ((self.long.len() - 1) as u32, member.len() as u32);
        }
        if member.is_empty() {
            return (0, 0);
        }
        let off = arena.bytes.len() as u32;
        arena.bytes.extend_from_slice(member);
        (off, member.len() as u32)
    }

    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.table.len() as u128) >> 64) as usize
    }

    fn next(&self, i: usize) -> usize {
        if i + 1 == self.table.len() {
            0
        } else {
            i + 1
        }
    }

    /// Slot `s` into the table (not in it yet).
    fn index(&mut self, s: usize, hash: u64) {
        let mut i = self.home(hash);
        while self.table[i] != EMPTY {
            i = self.next(i);
        }
        self.table[i] = cell(s, hash);
    }

    /// Slot `s` out of the table, the cells after it shifted back
    /// (linear probing's deletion, no tombstones).
    fn unindex(&mut self, s: usize) {
        let h = self.slot_hash(s);
        let mut i = self.home(h);
        while self.table[i] != cell(s, h) {
            i = self.next(i);
        }
        let mut j = i;
        loop {
            j = self.next(j);
            let t = self.table[j];
            if t == EMPTY {
                break;
            }
            let k = self.home(self.slot_hash((t & SLOT_BITS) as usize));
            // The entry at j stays unless its home lies cyclically in (i, j].
            let stays = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !stays {
                self.table[i] = t;
                i = j;
            }
        }
        self.table[i] = EMPTY;
    }

    fn rebuild_table(&mut self, size: usize) {
        self.table = vec![EMPTY; size].into_boxed_slice();
        for s in 0..self.slots.len() {
            self.index(s, self.slot_hash(s));
        }
    }

    /// Whether slot a orders before slot b: (count, member) ascending.
    fn less(&self, a: u16, b: u16) -> bool {
        let (x, y) = (&self.slots[a as usize], &self.slots[b as usize]);
        x.count < y.count || (x.count == y.count && self.name_less(a as usize, b as usize))
    }

    /// Whether slot x's member orders before slot y's. Tied counts are
    /// common at the bottom of a bucket (the heap compares their members at
    /// every level): members of up to 8 bytes are compared as words.
    fn name_less(&self, a: usize, b: usize) -> bool {
        if let (Some(p), Some(q)) = (self.prefix(a), self.prefix(b)) {
            if p != q {
                return p < q;
            }
            let (x, y) = (self.slots[a].len, self.slots[b].len);
            if x <= 8 && y <= 8 {
                return x < y;
            }
        }
        self.name(a) < self.name(b)
    }

    /// A slot's first 8 member bytes as a big-endian word, 0 past its end
    /// (so words order as the bytes do, a prefix before what it starts),
    /// read whole from its arena (or block) when 8 bytes are there (not at
    /// the arena's end).
    fn prefix(&self, slot: usize) -> Option<u64> {
        let s = &self.slots[slot];
        let bytes = match s.len as usize > SHORT_MOST {
            true => self.long[s.off as usize].name.get(..8)?,
            false => {
                (self.arenas[slot / GROUP_SLOTS].bytes).get(s.off as usize..s.off as usize + 8)?
            }
        };
        let word = u64::from_be_bytes(bytes.try_into().ok()?);
        Some(match s.len {
            0 => 0,
            len @ 1..8 => word & (u64::MAX << (64 - 8 * len)),
            _ => word,
        })
    }

    fn place(&mut self, i: usize, s: u16) {
        self.links[i].heap = s;
        self.links[s as usize].pos = i as u16;
    }

    /// Slot `s` to its place in the heap after its count changed.
    fn resift(&mut self, s: usize) {
        let s = s as u16;
        let i = self.rise(s, self.links[s as usize].pos as usize);
        self.sink(s, i);
    }

    /// Slot `s`, taken to be at place `i`, up past the parents it orders
    /// before; returns the place it stops at (not yet written).
    fn rise(&mut self, s: u16, mut i: usize) -> usize {
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.links[parent].heap;
            if !self.less(s, p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        i
    }

    /// Slot `s` (the root, an evicting member's counter) to its place,
    /// bottom-up: the hole at the root goes down the smaller children to a
    /// leaf, one comparison a level, and `s` rises from there. Its count,
    /// the smallest plus the increment, is usually tied with or just above
    /// the bottom's, so it ends deep: fewer comparisons than sinking it (two
    /// a level).
    fn settle_root(&mut self, s: u16) {
        debug_assert_eq!(self.links[0].heap, s);
        let mut i = 0;
        while let Some(c) = self.smaller_child(i) {
            self.place(i, self.links[c].heap);
            i = c;
        }
        let i = self.rise(s, i);
        self.place(i, s);
    }

    /// Slot `s`, taken to be at place `i`, down past the children that order
    /// before it; places it.
    fn sink(&mut self, s: u16, mut i: usize) {
        while let Some(c) = self.smaller_child(i) {
            let ch = self.links[c].heap;
            if !self.less(ch, s) {
                break;
            }
            self.place(i, ch);
            i = c;
        }
        self.place(i, s);
    }

    /// The place of the child of place `i` that orders first, if it has one.
    #[inline]
    fn smaller_child(&self, i: usize) -> Option<usize> {
        let (n, l) = (self.links.len(), 2 * i + 1);
        if l >= n {
            return None;
        }
        let r = l + 1;
        Some(
            if r < n && self.less(self.links[r].heap, self.links[l].heap) {
                r
            } else {
                l
            },
        )
    }
}

/// Equal when they hold the same counters and eviction state, whatever
/// their layouts.
impl PartialEq for Summary {
    fn eq(&self, other: &Summary) -> bool {
        self.evicted == other.evicted
            && self.len() == other.len()
            && self
                .iter()
                .all(|(m, c, e)| other.get(m, hash(m)) == Some((c, e)))
    }
}

impl Eq for Summary {}

impl fmt::Debug for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut counters: Vec<(&[u8], i64, i64)> = self.iter().collect();
        counters.sort_unstable();
        f.debug_struct("Summary")
            .field("evicted", &self.evicted)
            .field("counters", &counters)
            .finish()
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
