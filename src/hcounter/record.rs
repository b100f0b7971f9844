//! A partition's record: one allocation with what every partition needs (the
//! latest AT of its writes, when it is queued for expiry, its key) and, while
//! it is small, its cells packed back to back, as Redis keeps a small hash in
//! one listpack. Pure Rust, no FFI.
//!
//! Layout: `u8 flags, i64 last_at, [i64 queued_at: counters with a TTL],
//! varint key length, key, cells`. A packed cell is its key packed
//! ([`varint::pack_tuple`]: `12345` in 3 bytes, not 8), then its count, a
//! zigzag varint (integer counters) or the double's 8 bytes (FLOAT). A count
//! whose varint changes length moves the cells after it, as in a listpack:
//! the record is small by construction (`recipes.hcounter-compact-max`).

use crate::tuples::defrag::Mover;
use crate::tuples::varint::{self, unpack_tuple};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::ops::Range;

const TIMED: u8 = 1;
const FLOAT: u8 = 2;
/// `queued_at` when the partition is not in the expiry queue.
const NOT_QUEUED: i64 = i64::MIN;
#[derive(Clone, Debug, Default)]
pub struct Record(Box<[u8]>);

/// A count as stored (at most 10 bytes).
type Count = SmallVec<[u8; 10]>;

impl Record {
    /// A record without cells; `timed` for a counter with a TTL.
    pub fn new(key: &[u8], last_at: i64, timed: bool, float: bool) -> Record {
        let mut buf = Vec::with_capacity(1 + 16 + 2 + key.len());
        buf.push(if timed { TIMED } else { 0 } | if float { FLOAT } else { 0 });
        buf.extend_from_slice(&last_at.to_le_bytes());
        if timed {
            buf.extend_from_slice(&NOT_QUEUED.to_le_bytes());
        }
        varint::put(&mut buf, key.len() as u64);
        buf.extend_from_slice(key);
        Record(buf.into_boxed_slice())
    }

    fn flag(&self, flag: u8) -> bool {
        self.0[0] & flag != 0
    }

    fn stamp(&self, at: usize) -> i64 {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&self.0[at..at + 8]);
        i64::from_le_bytes(bytes)
    }

    /// The latest AT of the partition's writes.
    pub fn last_at(&self) -> i64 {
        self.stamp(1)
    }

    pub fn set_last_at(&mut self, at: i64) {
        self.0[1..9].copy_from_slice(&at.to_le_bytes());
    }

    /// When its entry in the expiry queue is due (`None`: not queued).
    pub fn queued_at(&self) -> Option<i64> {
        if !self.flag(TIMED) {
            return None;
        }
        Some(self.stamp(9)).filter(|&t| t != NOT_QUEUED)
    }

    /// Records its entry in the expiry queue (a counter with a TTL only).
    pub fn set_queued_at(&mut self, due: Option<i64>) {
        if self.flag(TIMED) {
            self.0[9..17].copy_from_slice(&due.unwrap_or(NOT_QUEUED).to_le_bytes());
        }
    }

    fn key_range(&self) -> Range<usize> {
        let at = if self.flag(TIMED) { 17 } else { 9 };
        let (len, n) = varint::get(&self.0[at..]).unwrap_or((0, 0));
        at + n..at + n + len as usize
    }

    /// The partition's key (the encoding of its PARTITION values).
    pub fn key(&self) -> &[u8] {
        &self.0[self.key_range()]
    }

    /// The packed cells as (packed key, count) byte ranges, in the order
    /// they were added.
    fn cells(&self) -> impl Iterator<Item = (Range<usize>, Range<usize>)> + '_ {
        let buf = &self.0;
        let float = self.flag(FLOAT);
        let mut at = self.key_range().end;
        std::iter::from_fn(move || {
            let key_end = at + varint::packed_len(buf.get(at..)?)?;
            let count_end = if float {
                key_end + 8
            } else {
                key_end + varint::get(&buf[key_end..])?.1
            };
            let cell = (at..key_end, key_end..count_end);
            at = count_end;
            Some(cell)
        })
    }

    /// The offset of the count of the cell packed as `key`, or the number
    /// of packed cells when there is none.
    pub fn find(&self, key: &[u8]) -> Result<usize, usize> {
        let mut seen = 0;
        for (k, count) in self.cells() {
            if &self.0[k] == key {
                return Ok(count.start);
            }
            seen += 1;
        }
        Err(seen)
    }

    /// The bits of the count at `pos` (as [`Record::find`] gives it) and
    /// where it ends.
    fn read_count(&self, pos: usize) -> (i64, usize) {
        if self.flag(FLOAT) {
            (self.stamp(pos), pos + 8)
        } else {
            let (z, n) = varint::get(&self.0[pos..]).unwrap_or((0, 0));
            (varint::unzigzag(z), pos + n)
        }
    }

    pub fn count(&self, pos: usize) -> i64 {
        self.read_count(pos).0
    }

    fn put_count(&self, out: &mut Count, bits: i64) {
        if self.flag(FLOAT) {
            out.extend_from_slice(&bits.to_le_bytes());
        } else {
            varint::put(out, varint::zigzag(bits));
        }
    }

    /// Sets the count at `pos`; the cells after it move if its length
    /// changes.
    pub fn set_count(&mut self, pos: usize, bits: i64) {
        let end = self.read_count(pos).1;
        let mut new = Count::new();
        self.put_count(&mut new, bits);
        if new.len() == end - pos {
            self.0[pos..end].copy_from_slice(&new);
            return;
        }
        let mut buf = std::mem::take(&mut self.0).into_vec();
        buf.reserve_exact(new.len().saturating_sub(end - pos));
        buf.splice(pos..end, new);
        self.0 = buf.into_boxed_slice();
    }

    /// Appends a cell (packed key `key`, known absent) with count `bits`.
    pub fn push(&mut self, key: &[u8], bits: i64) {
        let mut count = Count::new();
        self.put_count(&mut count, bits);
        let mut buf = std::mem::take(&mut self.0).into_vec();
        // Exactly: a small partition's record is one allocation that fits.
        buf.reserve_exact(key.len() + count.len());
        buf.extend_from_slice(key);
        buf.extend_from_slice(&count);
        self.0 = buf.into_boxed_slice();
    }

    /// The packed cells as (tuple encoding of the key, count bits).
    pub fn cell_counts(&self) -> impl Iterator<Item = (Cow<'_, [u8]>, i64)> + '_ {
        self.cells()
            .map(|(k, c)| (unpack_tuple(&self.0[k]), self.count(c.start)))
    }

    /// Removes the packed cells, returning them as [`Record::cell_counts`]
    /// lists them.
    pub fn take_cells(&mut self) -> Vec<(Vec<u8>, i64)> {
        let cells = self
            .cell_counts()
            .map(|(k, c)| (k.into_owned(), c))
            .collect();
        let end = self.key_range().end;
        let mut buf = std::mem::take(&mut self.0).into_vec();
        buf.truncate(end);
        self.0 = buf.into_boxed_slice();
        cells
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.0.len()
    }
}

impl Record {
    /// Offers its block to a defrag pass, as part of a unit of work.
    pub fn defrag(&mut self, m: &mut impl Mover) {
        m.slice(&mut self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuples::encoding;
    use crate::tuples::varint::pack_tuple as pack;

    #[test]
    fn stamps_key_and_cells_live_together() {
        for (timed, float) in [(false, false), (true, false), (true, true)] {
            let mut r = Record::new(b"key\x00\x01", 7, timed, float);
            assert_eq!(
                (r.key(), r.last_at(), r.queued_at()),
                (&b"key\x00\x01"[..], 7, None)
            );
            r.set_last_at(-3);
            r.set_queued_at(Some(99));
            assert_eq!(r.queued_at(), timed.then_some(99));
            let keys: Vec<Vec<u8>> = [&b"12345"[..], b"0", b"x", b"007", b"1\x00"]
                .iter()
                .map(|k| encoding::encode([*k]))
                .collect();
            for (i, k) in keys.iter().enumerate() {
                let packed = pack(k).unwrap();
                assert_eq!(r.find(&packed), Err(i));
                r.push(&packed, i as i64);
            }
            // Counts that change their length move the cells after them.
            for (i, k) in keys.iter().enumerate() {
                let pos = r.find(&pack(k).unwrap()).unwrap();
                let big = if float {
                    (1.5f64).to_bits() as i64
                } else {
                    -1_000_000 - i as i64
                };
                r.set_count(pos, big);
                assert_eq!(r.count(r.find(&pack(k).unwrap()).unwrap()), big);
            }
            let listed: Vec<Vec<u8>> = r.cell_counts().map(|(k, _)| k.into_owned()).collect();
            assert_eq!(listed, keys);
            assert_eq!(r.last_at(), -3);
            assert_eq!(r.take_cells().len(), keys.len());
            assert_eq!(r.cell_counts().count(), 0);
            assert_eq!(r.key(), b"key\x00\x01");
        }
    }
}
