//! The compact layout of a small ULIST: its values back to back in one
//! buffer, found by a scan, as Redis keeps a small set in one listpack.
//! `list.rs` turns a list hashed past `recipes.ulist-compact-max` values and
//! compact again below half of it. Pure Rust, no FFI.
//!
//! A value is `u8 place, packed value, varint expiry`: the place is an index
//! into the list's places (the encodings of SCOPE then PARTITION values, at
//! most [`MAX_PLACES`], each held while a value is in it); the value is its
//! tuple encoding packed ([`varint::pack_tuple`]: a number in a few bytes);
//! the expiry is its absolute time in ms, 0 for never. A value that expires
//! thus costs 5 or 6 bytes more than one that does not.

use super::entry::{Row, Stored, ValueKeys, NEVER};
use crate::tuples::defrag::Mover;
use crate::tuples::encoding;
use crate::tuples::index::{matches, Filter};
use crate::tuples::page::{Page, Step};
use crate::tuples::prefetch::prefetch;
use crate::tuples::table::{place_of, process_hasher, PLACES};
use crate::tuples::varint::{self, pack_tuple, unpack_tuple};
use memchr::memmem;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasher;
use std::ops::Range;

/// A live value: its scope, its encoding, its place's index.
type Live<'a> = (&'a [u8], Cow<'a, [u8]>, usize);

/// Places a compact list holds at most (a place is a byte).
pub const MAX_PLACES: usize = 256;

/// The list cannot stay compact (a value too long to pack, or a place
/// more than [`MAX_PLACES`]); nothing was changed.
#[derive(Debug, PartialEq, Eq)]
pub struct NotCompact;

#[derive(Clone, Debug, Default)]
pub struct Compact {
    /// Inline for the first: a list of one partition needs no allocation
    /// (nor a cache miss) for it.
    places: SmallVec<[Place; 1]>,
    /// The filter's bytes (`filter_words` 64-bit words), then the values.
    values: Vec<u8>,
    len: u32,
    /// A Bloom filter of the packed values (three bits in one 64-bit word
    /// a value; 8 to 16 bits a value, none below [`FILTER_FROM`] values):
    /// most adds are of new values, which it answers without reading the
    /// values. Bits of removed values stay until it is rebuilt (when the list
    /// outgrows it, or at [`Compact::shrink`]): they cost a search, never a
    /// wrong answer.
    filter_words: u16,
    /// The earliest expiry (NEVER: none).
    due: i64,
    /// Whether the places are of more than one scope (usually they are all
    /// of one: a scope check is then one comparison, not one per place).
    scopes_differ: bool,
}

/// A place: the encodings of its SCOPE then PARTITION values.
#[derive(Clone, Debug)]
struct Place {
    key: Box<[u8]>,
    /// The length of its SCOPE part.
    scope_len: u32,
    /// [`tag`] of `key`: a search compares tags, and reads a key (a cache
    /// miss each) only when they are equal.
    tag: u32,
}

impl Place {
    fn new(key: &[u8], scope_len: usize) -> Self {
        Place {
            key: key.into(),
            scope_len: scope_len as u32,
            tag: tag(key),
        }
    }
}

/// A cheap hash (FxHash's mix, over 8-byte words).
fn hash(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64;
    for word in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..word.len()].copy_from_slice(word);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    h
}

fn tag(key: &[u8]) -> u32 {
    (hash(key) >> 32) as u32
}

/// Lists of fewer values have no filter: a search of so few is quick. Not
/// 16, a power of two: the filter would be built at 16 values and built
/// again, twice as large, at 17.
const FILTER_FROM: usize = 17;

/// Filter words for `len` values: 8 bits a value, rounded up to a power of
/// two (so it is rebuilt each time the list doubles).
fn filter_words_for(len: usize) -> u16 {
    if len < FILTER_FROM {
        return 0;
    }
    (len.next_power_of_two() / 8).min(u16::MAX as usize / 2 + 1) as u16
}

/// Where the values start in a buffer whose filter has `words` words.
fn start_of(words: u16) -> usize {
    words as usize * 8
}

/// Sets the bits of the packed value hashed `h` in `filter` (none if
/// there is no filter).
fn mark(filter: &mut [u8], h: u64) {
    if !filter.is_empty() {
        let (word, bits) = filter_slot(h, filter.len() / 8);
        let old = filter_word(filter, word);
        filter[word * 8..word * 8 + 8].copy_from_slice(&(old | bits).to_le_bytes());
    }
}

/// Where the packed value hashed `h` sits in a filter of `words` words (a
/// power of two): one word, so that a lookup reads one cache line, and
/// three bits in it.
fn filter_slot(h: u64, words: usize) -> (usize, u64) {
    let word = (h >> 32) as usize & (words - 1);
    let bits = 1 << (h >> 26 & 63) | 1 << (h >> 52 & 63) | 1 << (h >> 58);
    (word, bits)
}

/// Word `word` of the filter's bytes.
fn filter_word(filter: &[u8], word: usize) -> u64 {
    let bytes = &filter[word * 8..word * 8 + 8];
    u64::from_le_bytes(bytes.try_into().unwrap_or_default())
}

/// One value as stored.
struct Entry {
    /// Its bytes in the buffer.
    at: Range<usize>,
    place: usize,
    /// Its packed value.
    value: Range<usize>,
    expire_at: i64,
}

/// The entries of `buf` from `at` on (where its values start).
fn entries_of(buf: &[u8], mut at: usize) -> impl Iterator<Item = Entry> + '_ {
    std::iter::from_fn(move || {
        let place = *buf.get(at)? as usize;
        let value_end = at + 1 + varint::packed_len(&buf[at + 1..])?;
        let (expiry, n) = varint::get(&buf[value_end..])?;
        let entry = Entry {
            at: at..value_end + n,
            place,
            value: at + 1..value_end,
            expire_at: if expiry == 0 { NEVER } else { expiry as i64 },
        };
        at = value_end + n;
        Some(entry)
    })
}

/// `a == b`, without a call to `memcmp` for the few bytes of a packed
/// value (the scan compares one per value).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Compact {
    pub fn new() -> Self {
        Compact {
            due: NEVER,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn places(&self) -> usize {
        self.places.len()
    }

    /// Where the values start in `values` (after the filter).
    fn values_start(&self) -> usize {
        start_of(self.filter_words)
    }

    /// Whether the filter lets the packed value hashed `h` be stored.
    fn may_hold(&self, h: u64) -> bool {
        let filter = &self.values[..self.values_start()];
        if filter.is_empty() {
            return true;
        }
        let (word, bits) = filter_slot(h, filter.len() / 8);
        filter_word(filter, word) & bits == bits
    }

    /// Starts loading what an add reads and writes last, the buffer's end,
    /// while the command is still parsing its arguments.
    pub fn prefetch_for_add(&self) {
        prefetch(self.values.as_ptr().wrapping_add(self.values.len()));
    }

    /// Rebuilds the filter at `words` words.
    /// In place: the values move, the buffer is not allocated again unless
    /// it must grow.
    fn refilter(&mut self, words: u16) {
        let (old, new, len) = (self.values_start(), start_of(words), self.values.len());
        if new > old {
            self.values.reserve_exact(new - old);
            self.values.resize(len + new - old, 0);
            self.values.copy_within(old..len, new);
        } else {
            self.values.copy_within(old..len, new);
            self.values.truncate(len + new - old);
        }
        self.values[..new].fill(0);
        self.filter_words = words;
        let (filter, values) = self.values.split_at_mut(start_of(words));
        for value in entries_of(values, 0) {
            mark(filter, hash(&values[value.value]));
        }
    }

    fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        entries_of(&self.values, self.values_start())
    }

    fn scope_of(&self, place: usize) -> &[u8] {
        let place = &self.places[place];
        &place.key[..place.scope_len as usize]
    }

    /// A bit per place of the scope `scope`.
    fn in_scope(&self, scope: &[u8]) -> [u64; MAX_PLACES / 64] {
        let mut bits = [0u64; MAX_PLACES / 64];
        if !self.scopes_differ {
            if self
                .places
                .first()
                .is_some_and(|_| same(self.scope_of(0), scope))
            {
                for p in 0..self.places.len() {
                    bits[p / 64] |= 1 << (p % 64);
                }
            }
            return bits;
        }
        for p in 0..self.places.len() {
            if same(self.scope_of(p), scope) {
                bits[p / 64] |= 1 << (p % 64);
            }
        }
        bits
    }

    /// The index of the place keyed `place`.
    fn place(&self, place: &[u8]) -> Option<usize> {
        let tag = tag(place);
        self.places
            .iter()
            .position(|p| p.tag == tag && *p.key == *place)
    }

    /// The stored value `packed` (hashed `h`) of the scope keyed `scope`.
    fn find(&self, scope: &[u8], packed: &[u8], h: u64) -> Option<Entry> {
        // Most adds are of new values: the filter answers most of them, and
        // when the packed bytes are nowhere in the values, one vectorized
        // search answers without the walk.
        if !self.may_hold(h) {
            return None;
        }
        memmem::find(&self.values[self.values_start()..], packed)?;
        let in_scope = self.in_scope(scope);
        self.entries().find(|e| {
            in_scope[e.place / 64] & (1 << (e.place % 64)) != 0
                && same(&self.values[e.value.clone()], packed)
        })
    }

    /// Removes the entries at `doomed` (ascending, disjoint byte ranges),
    /// then the places left without a value.
    fn remove(&mut self, doomed: &[Range<usize>]) {
        if doomed.is_empty() {
            return;
        }
        let mut kept = Vec::with_capacity(self.values.len());
        let mut from = self.values_start();
        kept.extend_from_slice(&self.values[..from]);
        for range in doomed {
            kept.extend_from_slice(&self.values[from..range.start]);
            from = range.end;
        }
        kept.extend_from_slice(&self.values[from..]);
        self.values = kept;
        self.len -= doomed.len() as u32;
        let mut used = vec![false; self.places.len()];
        for e in self.entries() {
            used[e.place] = true;
        }
        if used.iter().any(|u| !u) {
            // Renumber: place p becomes the number of used places below it.
            let mut new_index = Vec::with_capacity(used.len());
            let mut next = 0u8;
            for &u in &used {
                new_index.push(next);
                next = next.wrapping_add(u as u8);
            }
            let starts: Vec<usize> = self.entries().map(|e| e.at.start).collect();
            for at in starts {
                self.values[at] = new_index[self.values[at] as usize];
            }
            let mut p = 0;
            self.places.retain(|_| {
                p += 1;
                used[p - 1]
            });
            let differs = |p| self.scope_of(p) != self.scope_of(0);
            self.scopes_differ = (1..self.places.len()).any(differs);
        }
        self.due = self.entries().map(|e| e.expire_at).min().unwrap_or(NEVER);
    }

    /// As [`super::hashed::Hashed::add`]; `NotCompact` (nothing changed)
    /// for a value the layout cannot hold.
    pub fn add(&mut self, keys: &ValueKeys, at: i64, expire_at: i64) -> Result<bool, NotCompact> {
        let packed = pack_tuple(&keys.value).ok_or(NotCompact)?;
        let h = hash(&packed);
        if self.filter_words > 0 {
            // Its miss overlaps with the place's lookup.
            let (word, _) = filter_slot(h, self.filter_words as usize);
            prefetch(self.values.as_ptr().wrapping_add(word * 8));
        }
        let mut place = self.place(&keys.place);
        if (place.is_none() && self.places.len() >= MAX_PLACES) || expire_at <= 0 {
            return Err(NotCompact);
        }
        if let Some(e) = self.find(keys.scope(), &packed, h) {
            if e.expire_at > at {
                return Ok(false);
            }
            // Expired by `at`: new again, in this add's partition (places
            // may be renumbered).
            self.remove(&[e.at]);
            place = self.place(&keys.place);
        }
        let place = match place {
            Some(p) => p,
            None => {
                let first_scope = self.places.first().map(|_| self.scope_of(0));
                self.scopes_differ |= first_scope.is_some_and(|s| s != keys.scope());
                self.places.push(Place::new(&keys.place, keys.scope_len));
                self.places.len() - 1
            }
        };
        let expiry = if expire_at == NEVER {
            0
        } else {
            expire_at as u64
        };
        // Grow by a quarter (16 bytes at least), not double: small lists are
        // many.
        let values = &mut self.values;
        let entry_len = 1 + packed.len() + varint::len(expiry);
        if values.capacity() - values.len() < entry_len {
            values.reserve_exact(entry_len.max(values.len() / 4).max(16));
        }
        values.push(place as u8);
        values.extend_from_slice(&packed);
        varint::put(values, expiry);
        self.len += 1;
        self.due = self.due.min(expire_at);
        let words = filter_words_for(self.len());
        if words > self.filter_words {
            self.refilter(words);
        } else {
            let start = self.values_start();
            mark(&mut self.values[..start], h);
        }
        Ok(true)
    }

    /// As [`super::hashed::Hashed::refresh`]; `NotCompact` (nothing changed)
    /// for an expiry the layout cannot hold.
    pub fn refresh(
        &mut self,
        keys: &ValueKeys,
        at: i64,
        expire_at: i64,
    ) -> Result<bool, NotCompact> {
        let Some(packed) = pack_tuple(&keys.value) else {
            return Ok(false);
        };
        let Some(e) = self.find(keys.scope(), &packed, hash(&packed)) else {
            return Ok(false);
        };
        if e.expire_at <= at || e.expire_at == expire_at {
            return Ok(false);
        }
        if expire_at <= 0 {
            return Err(NotCompact);
        }
        // Out, and in again at its own place with the new expiry.
        let place = self.places[e.place].clone();
        self.remove(&[e.at]);
        let again = ValueKeys {
            place: SmallVec::from_slice(&place.key),
            scope_len: place.scope_len as usize,
            value: keys.value.clone(),
        };
        self.add(&again, at, expire_at).map(|_| true)
    }

    pub fn has(&self, keys: &ValueKeys, now: i64) -> bool {
        pack_tuple(&keys.value)
            .and_then(|packed| self.find(keys.scope(), &packed, hash(&packed)))
            .is_some_and(|e| e.expire_at > now)
    }

    /// Every stored value as (place, value encoding, expiry), in the order
    /// they were added.
    pub fn stored(&self) -> impl Iterator<Item = Stored<'_>> + '_ {
        self.entries().map(|e| {
            let value = unpack_tuple(&self.values[e.value]);
            (&*self.places[e.place].key, value, e.expire_at)
        })
    }

    /// The matching places with a value live at `now`, ascending.
    pub fn partitions(&self, filter: &Filter, now: i64) -> Vec<Row> {
        let mut live = BTreeSet::new();
        for e in self.entries().filter(|e| e.expire_at > now) {
            live.insert(&*self.places[e.place].key);
        }
        live.into_iter()
            .filter(|p| matches(p, filter))
            .filter_map(|p| encoding::decode(p).ok())
            .collect()
    }

    /// One page of [`Compact::partitions`]' rows, from the cursor's.
    pub fn partitions_page(&self, filter: &Filter, now: i64, page: &Page) -> (Vec<Row>, Vec<u8>) {
        let mut step = Step::new(page);
        for row in self.partitions(filter, now) {
            step.key(&encoding::encode(row.iter().map(Vec::as_slice)), Some(row));
        }
        step.finish()
    }

    /// How many values of the matching places are live at `now`.
    pub fn count(&self, filter: &Filter, now: i64) -> usize {
        self.live_entries(filter, now).count()
    }

    /// The entries of the matching places live at `now`, in no order.
    fn live_entries(&self, filter: &Filter, now: i64) -> impl Iterator<Item = Entry> + '_ {
        let wanted: Vec<bool> = self
            .places
            .iter()
            .map(|p| matches(&p.key, filter))
            .collect();
        self.entries()
            .filter(move |e| e.expire_at > now && wanted[e.place])
    }

    /// Values stored with an expiry.
    pub fn expiring(&self) -> usize {
        self.entries().filter(|e| e.expire_at != NEVER).count()
    }

    /// (scope, value encoding, place) of each value of the matching places
    /// live at `now`, in no order.
    fn live(&self, filter: &Filter, now: i64) -> Vec<Live<'_>> {
        self.live_entries(filter, now)
            .map(|e| {
                (
                    self.scope_of(e.place),
                    unpack_tuple(&self.values[e.value]),
                    e.place,
                )
            })
            .collect()
    }

    /// A value's row: its VALUE values, then its place's.
    fn row_of(&self, value: &[u8], place: usize) -> Row {
        let mut row = encoding::decode(value).unwrap_or_default();
        row.extend(encoding::decode(&self.places[place].key).unwrap_or_default());
        row
    }

    /// Live values of the matching places, by scope, then value.
    pub fn data(&self, filter: &Filter, now: i64) -> Vec<Row> {
        let mut rows = self.live(filter, now);
        rows.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        rows.into_iter()
            .map(|(_, value, place)| self.row_of(&value, place))
            .collect()
    }

    /// One page of [`Compact::data`]'s rows, in the order of a paged read
    /// (`tuples::page`): the list is small, so each scope is one shard.
    pub fn data_page(&self, filter: &Filter, now: i64, page: &Page) -> (Vec<Row>, Vec<u8>) {
        let hasher = process_hasher();
        let mut scopes: BTreeMap<&[u8], Vec<_>> = BTreeMap::new();
        for (scope, value, place) in self.live(filter, now) {
            let at = place_of(hasher.hash_one(&*value));
            let entry = (at, value.clone(), (value, place));
            scopes.entry(scope).or_default().push(entry);
        }
        let mut step = Step::new(page);
        for (scope, entries) in scopes {
            let mut entries = Some(entries);
            step.group(
                scope,
                |_| (entries.take().unwrap_or_default(), PLACES),
                |_, (value, place)| Some(self.row_of(&value, place)),
            );
        }
        step.finish()
    }

    /// Deletes the matching places with their values; returns (places
    /// deleted, of which held a value live at `now`).
    pub fn delete(&mut self, filter: &Filter, now: i64) -> (usize, usize) {
        let doomed: Vec<bool> = self
            .places
            .iter()
            .map(|p| matches(&p.key, filter))
            .collect();
        let mut live = vec![false; self.places.len()];
        let mut ranges = Vec::new();
        for e in self.entries().filter(|e| doomed[e.place]) {
            live[e.place] |= e.expire_at > now;
            ranges.push(e.at);
        }
        self.remove(&ranges);
        let live = live.iter().filter(|&&l| l).count();
        (doomed.iter().filter(|&&d| d).count(), live)
    }

    pub fn next_due(&self) -> Option<i64> {
        (self.due != NEVER).then_some(self.due)
    }

    /// As [`super::hashed::Hashed::reclaim`]: up to `budget` values expired
    /// at `now`, earliest first, each named by its SCOPE then VALUE
    /// encodings.
    pub fn reclaim(&mut self, now: i64, budget: usize) -> Vec<Vec<u8>> {
        let mut expired: Vec<Entry> = self.entries().filter(|e| e.expire_at <= now).collect();
        expired.sort_by_key(|e| (e.expire_at, e.at.start));
        expired.truncate(budget);
        let items = expired
            .iter()
            .map(|e| {
                let mut item = self.scope_of(e.place).to_vec();
                item.extend_from_slice(&unpack_tuple(&self.values[e.value.clone()]));
                item
            })
            .collect();
        let mut ranges: Vec<Range<usize>> = expired.into_iter().map(|e| e.at).collect();
        ranges.sort_by_key(|r| r.start);
        self.remove(&ranges);
        items
    }

    /// Removes the values named by `items` (SCOPE then VALUE encodings, the
    /// first `scope_names` elements the scope); returns how many were there.
    pub fn remove_items(&mut self, items: &[&[u8]], scope_names: usize) -> usize {
        let mut ranges = BTreeMap::new();
        for item in items {
            let (scope, value) = item.split_at(encoding::prefix_len(item, scope_names));
            let found = pack_tuple(value).and_then(|p| self.find(scope, &p, hash(&p)));
            if let Some(e) = found {
                ranges.insert(e.at.start, e.at);
            }
        }
        let ranges: Vec<Range<usize>> = ranges.into_values().collect();
        self.remove(&ranges);
        ranges.len()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.values.capacity()
            + if self.places.spilled() {
                self.places.capacity() * std::mem::size_of::<Place>()
            } else {
                0
            }
            + self.places.iter().map(|p| p.key.len()).sum::<usize>()
    }

    /// Gives back the buffer's spare room (after a conversion or a load).
    pub fn shrink(&mut self) {
        let words = filter_words_for(self.len());
        if words != self.filter_words {
            self.refilter(words);
        }
        self.values.shrink_to_fit();
        self.places.shrink_to_fit();
    }
}

impl Compact {
    /// Offers its blocks to a defrag pass, as one unit of work.
    pub fn defrag(&mut self, m: &mut impl Mover) {
        m.small_vec(&mut self.places);
        self.places.iter_mut().for_each(|p| m.slice(&mut p.key));
        m.vec(&mut self.values);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(place: &str, value: u64) -> ValueKeys {
        ValueKeys::new([], [place.as_bytes()], [value.to_string().as_bytes()])
    }

    /// The filter never hides a stored value, as the list grows past each
    /// of its sizes, loses values (whose bits stay) and is shrunk.
    #[test]
    fn the_filter_never_hides_a_stored_value() {
        let mut c = Compact::new();
        let holds = |c: &Compact, v: u64| c.has(&keys("p", v), 0);
        for v in 0..600u64 {
            assert_eq!(c.add(&keys("p", v * 7), 0, NEVER), Ok(true));
            assert_eq!(c.add(&keys("p", v * 7), 0, NEVER), Ok(false), "{v} again");
            assert_eq!(c.filter_words, filter_words_for(c.len()));
        }
        assert!((0..600).all(|v| holds(&c, v * 7)));
        assert_eq!((0..4200).filter(|&v| holds(&c, v)).count(), 600);
        // Every third value goes; its bits stay until the shrink.
        let items: Vec<Vec<u8>> = (0..600)
            .step_by(3)
            .map(|v| keys("p", v * 7).value.to_vec())
            .collect();
        let items: Vec<&[u8]> = items.iter().map(|i| &i[..]).collect();
        assert_eq!(c.remove_items(&items, 0), 200);
        let words = c.filter_words;
        for round in 0..2 {
            assert!(
                (0..600).all(|v| holds(&c, v * 7) == (v % 3 != 0)),
                "round {round}"
            );
            c.shrink();
        }
        assert!(c.filter_words < words);
        assert_eq!(c.filter_words, filter_words_for(400));
        // A filter over most values answers most absent ones alone.
        let passed = (1_000_000..1_010_000)
            .filter(|v| c.may_hold(hash(&pack(*v))))
            .count();
        assert!(
            passed < 1_000,
            "{passed} of 10,000 absent values passed the filter"
        );
    }

    fn pack(v: u64) -> varint::Packed {
        pack_tuple(&keys("p", v).value).unwrap()
    }
}
