//! The compact layout of a small TOPN: every (bucket, member, count) of the
//! window in one buffer, as Redis keeps a small zset in one listpack, found
//! by a scan. `layout/mod.rs` turns a key full past `recipes.topn-compact-max`
//! entries and compact again below half of it. Pure Rust, no FFI.
//!
//! Reads compute the window's counts from the entries (at most compact-max
//! of them); the answers, the encoding and the replayed increments are those
//! of the full layout (`full/`) for the same events: both follow the
//! definitions, and `layout/mod.rs`'s model test checks them against each other.

use crate::topn::encoding::write as write_encoding;
use crate::topn::error::Overflow;
use crate::topn::parse::Pair;
use crate::topn::select::clamp_i64;
use crate::topn::shape::{Landing, Shape};
use crate::topn::views::Views;
use crate::topn::window::{final_counts, Counted, Effects, Query, Row, Upkept, Window};
use crate::tuples::varint;
use std::collections::BTreeMap;

/// One stored count.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry<'a> {
    bucket: i64,
    member: &'a [u8],
    count: i64,
}

#[derive(Clone, Debug)]
pub struct Compact {
    shape: Shape,
    /// The entries by (bucket, member), each `varint(clock - bucket),
    /// varint(len), member, zigzag varint(count)`: never a zero count, never
    /// a bucket outside the window ending at the clock.
    buf: Vec<u8>,
    /// Views declared: their k lead `buf`, a `u32` each (so a key without views is no
    /// bigger). Declared only: reads of a compact key are cheap without running totals,
    /// which the full layout makes when the key goes full.
    views: u8,
}

impl Compact {
    pub fn new(shape: Shape) -> Compact {
        Compact {
            shape,
            buf: Vec::new(),
            views: 0,
        }
    }

    /// The same key with `views` declared.
    pub fn with_views(mut self, views: Views) -> Compact {
        let mut buf: Vec<u8> = views.iter().flat_map(u32::to_le_bytes).collect();
        buf.extend_from_slice(self.entry_bytes());
        self.buf = buf;
        self.views = views.len() as u8;
        self
    }

    /// The entries' part of `buf` (after the views).
    fn entry_bytes(&self) -> &[u8] {
        &self.buf[4 * self.views as usize..]
    }

    /// The layout of a content given as `(bucket, member, count)` entries of
    /// the window ending at `shape.clock`, at most one per (bucket, member)
    /// (bucket indexes, not times: a time saturates where an index does not).
    pub fn from_entries(shape: Shape, entries: &[(i64, &[u8], i64)]) -> Compact {
        let mut entries: Vec<Entry> = entries
            .iter()
            .filter(|e| e.2 != 0)
            .map(|&(bucket, member, count)| Entry {
                bucket,
                member,
                count,
            })
            .collect();
        entries.sort_unstable_by(|a, b| (a.bucket, a.member).cmp(&(b.bucket, b.member)));
        let mut small = Compact::new(shape);
        small.buf = pack(shape.clock.unwrap_or(0), &entries);
        small
    }

    fn entries(&self) -> impl Iterator<Item = Entry<'_>> + '_ {
        let clock = self.shape.clock.unwrap_or(0);
        let mut rest = self.entry_bytes();
        std::iter::from_fn(move || {
            let (back, n) = varint::get(rest)?;
            let (len, m) = varint::get(&rest[n..])?;
            let start = n + m;
            let member = rest.get(start..start + len as usize)?;
            let (count, k) = varint::get(&rest[start + len as usize..])?;
            rest = &rest[start + len as usize + k..];
            Some(Entry {
                bucket: clock - back as i64,
                member,
                count: varint::unzigzag(count),
            })
        })
    }

    /// Stored entries.
    pub fn len(&self) -> usize {
        self.entries().count()
    }

    /// Bytes of entries stored.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Each member's count over buckets `lo..=hi`, nonzero ones, by member.
    fn counts(&self, lo: i64, hi: i64) -> BTreeMap<&[u8], i128> {
        let mut out: BTreeMap<&[u8], i128> = BTreeMap::new();
        for e in self.entries().filter(|e| e.bucket >= lo && e.bucket <= hi) {
            *out.entry(e.member).or_default() += i128::from(e.count);
        }
        out.retain(|_, c| *c != 0);
        out
    }

    fn count_of(&self, member: &[u8], lo: i64, hi: i64) -> i64 {
        let sum: i128 = self
            .entries()
            .filter(|e| e.member == member && e.bucket >= lo && e.bucket <= hi)
            .map(|e| i128::from(e.count))
            .sum();
        clamp_i64(sum)
    }

    /// What an increment of `member` at `at_ms` would start from: its count
    /// over the window at the clock the event sets, and its entry in the
    /// event's bucket (None: the event is older than the window).
    pub fn headroom(&self, member: &[u8], at_ms: i64) -> Option<(i128, i64)> {
        let Landing { bucket: b, lo, .. } = self.shape.landing(at_ms)?;
        let (mut live, mut entry) = (0i128, 0i64);
        for e in self
            .entries()
            .filter(|e| e.member == member && e.bucket >= lo)
        {
            live += i128::from(e.count);
            if e.bucket == b {
                entry = e.count;
            }
        }
        Some((live, entry))
    }

    /// Applies `(increment, member)` pairs all at `at_ms`, in order, in one
    /// pass over the buffer; the caller checked that none overflows (one
    /// that would is skipped). An event older than the window changes nothing. Returns the
    /// buckets that left the window.
    pub fn incr_all(&mut self, pairs: &[Pair], at_ms: i64) -> Effects {
        let Some(Landing {
            bucket: b, clock, ..
        }) = self.shape.landing(at_ms)
        else {
            return Effects::default();
        };
        let after = Shape {
            clock: Some(clock),
            ..self.shape
        };
        let mut entries: Vec<Entry> = self.entries().collect();
        let stale = after.stale_front(entries.len(), |i| entries[i].bucket);
        let retired = distinct_buckets(&entries[..stale]);
        entries.drain(..stale);
        for &(by, member) in pairs {
            let at = entries.partition_point(|e| (e.bucket, e.member) < (b, member));
            match entries.get_mut(at) {
                Some(e) if e.bucket == b && e.member == member => {
                    e.count = e.count.checked_add(by).unwrap_or(e.count);
                    if e.count == 0 {
                        entries.remove(at);
                    }
                }
                _ if by != 0 => entries.insert(
                    at,
                    Entry {
                        bucket: b,
                        member,
                        count: by,
                    },
                ),
                _ => {}
            }
        }
        let buf = match self.views {
            0 => pack(clock, &entries),
            n => {
                let mut buf = self.buf[..4 * n as usize].to_vec();
                buf.extend_from_slice(&pack(clock, &entries));
                buf.shrink_to_fit();
                buf
            }
        };
        self.buf = buf;
        self.shape = after;
        Effects { retired, aged: 0 }
    }

    /// The content as the full layout replays it: `(member, by, at)` by
    /// bucket, then a `(b"", 0, clock)` mark when the clock's bucket holds
    /// nothing.
    pub fn replay_events(&self) -> Vec<(&[u8], i64, i64)> {
        let mut out: Vec<(&[u8], i64, i64)> = self
            .entries()
            .map(|e| (e.member, e.count, self.shape.bucket_start(e.bucket)))
            .collect();
        if let Some(c) = self.shape.clock {
            if !self.entries().any(|e| e.bucket == c) {
                out.push((b"", 0, self.shape.bucket_start(c)));
            }
        }
        out
    }

    /// The buffer, for defrag.
    pub fn buf_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

impl Window for Compact {
    fn shape(&self) -> &Shape {
        &self.shape
    }

    fn views(&self) -> Views {
        let ks: Vec<i64> = self.buf[..4 * self.views as usize]
            .chunks_exact(4)
            .map(|k| i64::from(u32::from_le_bytes([k[0], k[1], k[2], k[3]])))
            .collect();
        Views::new(&ks, self.shape.window).unwrap_or_default()
    }

    /// The `q.n` highest counts over the read window, by count descending, then member.
    fn top(&self, q: &Query) -> Vec<Row<'_>> {
        let Some((lo, hi)) = self.shape.read_range(q.at_ms, q.last) else {
            return Vec::new();
        };
        let mut rows: Vec<Row> = self
            .counts(lo, hi)
            .into_iter()
            .map(|(m, c)| (m, Counted::exact(clamp_i64(c))))
            .collect();
        rows.sort_by(|a, b| b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0)));
        rows.truncate(q.n);
        rows
    }

    fn count(&self, member: &[u8], q: &Query) -> Counted {
        let range = self.shape.read_range(q.at_ms, q.last);
        Counted::exact(range.map_or(0, |(lo, hi)| self.count_of(member, lo, hi)))
    }

    fn count_at_clock(&self, member: &[u8]) -> i64 {
        self.shape
            .clock
            .map_or(0, |c| self.count_of(member, self.shape.live_lo(c), c))
    }

    /// Applies an increment at `at_ms` (as the full layout's `incr`).
    fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<(i64, Effects), Overflow> {
        let Some((live, entry)) = self.headroom(member, at_ms) else {
            return Ok((self.count_at_clock(member), Effects::default()));
        };
        let live = i64::try_from(live + i128::from(by)).map_err(|_| Overflow)?;
        entry.checked_add(by).ok_or(Overflow)?;
        Ok((live, self.incr_all(&[(by, member)], at_ms)))
    }

    fn incr_many(&mut self, pairs: &[Pair], at_ms: i64) -> Result<(Vec<i64>, Effects), usize> {
        let counts = final_counts(pairs, |m| self.headroom(m, at_ms))?;
        Ok((counts, self.incr_all(pairs, at_ms)))
    }

    /// Distinct members stored.
    fn members(&self) -> usize {
        let mut members: Vec<&[u8]> = self.entries().map(|e| e.member).collect();
        members.sort_unstable();
        members.dedup();
        members.len()
    }

    /// Buckets holding an entry.
    fn buckets_in_use(&self) -> usize {
        distinct_buckets(&self.entries().collect::<Vec<_>>())
    }

    /// Heap bytes held (the struct itself lives inline in the key's value).
    fn mem_usage(&self) -> usize {
        self.buf.capacity()
    }

    /// The encoding, byte for byte the full layout's for the same content.
    fn encode(&self) -> Vec<u8> {
        let entries: Vec<Entry> = self.entries().collect();
        let mut names: Vec<&[u8]> = entries.iter().map(|e| e.member).collect();
        names.sort_unstable();
        names.dedup();
        let mut buckets: Vec<(i64, Vec<(u32, i64)>)> = Vec::new();
        for e in &entries {
            let number = names.partition_point(|n| *n < e.member) as u32;
            match buckets.last_mut() {
                Some((idx, list)) if *idx == e.bucket => list.push((number, e.count)),
                _ => buckets.push((e.bucket, vec![(number, e.count)])),
            }
        }
        write_encoding(&self.shape, &self.views(), &names, &buckets)
    }
}

impl Upkept for Compact {}

fn distinct_buckets(entries: &[Entry]) -> usize {
    let mut n = 0;
    let mut last = None;
    for e in entries {
        if last != Some(e.bucket) {
            n += 1;
            last = Some(e.bucket);
        }
    }
    n
}

/// The buffer of `entries` (sorted by bucket, then member) for `clock`.
/// The bytes [`pack`] writes for `entries` (in any order), counted without
/// writing them: a full key learns whether it would fit compact before it
/// packs a copy.
pub fn packed_bytes<'a>(clock: i64, entries: impl Iterator<Item = (i64, &'a [u8], i64)>) -> usize {
    entries
        .filter(|e| e.2 != 0)
        .map(|(bucket, member, count)| {
            varint::len((clock - bucket) as u64)
                + varint::len(member.len() as u64)
                + member.len()
                + varint::len(varint::zigzag(count))
        })
        .sum()
}

fn pack(clock: i64, entries: &[Entry]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(entries.iter().map(|e| e.member.len() + 4).sum());
    for e in entries {
        varint::put(&mut buf, (clock - e.bucket) as u64);
        varint::put(&mut buf, e.member.len() as u64);
        buf.extend_from_slice(e.member);
        varint::put(&mut buf, varint::zigzag(e.count));
    }
    buf.shrink_to_fit();
    buf
}
