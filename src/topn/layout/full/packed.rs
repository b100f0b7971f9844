//! Packed copies of sealed buckets, for sums. Pure Rust, no FFI.
//!
//! A bucket's table is a hash table 60-80% full of 12-byte cells: a sum scans every cell and
//! adds each count at a random place of the accumulators (~1.4 ns a cell). A packed copy holds
//! the same entries sorted by member id, most as 4-byte words (the id's low 16 bits and a
//! count of 1 to 65,535, with where each 65,536 ids begin), the others as 8-byte words
//! `id << 32 | count`: a scan reads a third of the bytes and writes the accumulators in
//! ascending order (~0.5 ns an entry, measured). The short words halve a copy's memory; a sum
//! over them was no faster on a quiet machine (a flat `LAST 12` over 200,000 members, 11
//! copies of 50,000 entries: 0.25 ms at best either way, its additions bound it there), and
//! reads a third of the bytes where other work shares the memory bus.
//!
//! Copies are made for buckets that no longer take the usual writes (older than the key's
//! newest bucket) by the upkeep timer, a bounded slice at a time ([`Packer`]): the occupied
//! cells are collected, then sorted by a least-significant-digit radix sort whose passes are
//! resumable. A write into the bucket drops its copy (and restarts a packing in progress:
//! packings check the bucket's write generation); the timer packs it again later. Counts that
//! do not fit an i32 are never packed (the bucket's value bounds tell).
//!
//! A packing ends with the bucket's [`Prefix`]: its `PREFIX_LEN` highest positive counts in
//! descending order, selected a slice at a time, which threshold merges (`merge.rs`)
//! read instead of the whole bucket.

use super::accumulator::want_warm;
use crate::tuples::defrag::Mover;

/// Bits of the member id sorted per radix pass.
const DIGIT_BITS: u32 = 11;
const DIGITS: usize = 1 << DIGIT_BITS;

/// Entries a prefix keeps at most.
pub(super) const PREFIX_LEN: usize = 1024;

/// A bucket's table entries (not its `extra`), by member id, and its prefix.
#[derive(Clone, Default)]
pub(super) struct Packed {
    /// The entries whose count is 1 to `SHORT_MAX`, as `(id & 0xFFFF) << 16 | count`.
    short: Vec<u32>,
    /// Where in `short` the ids of each 65,536 begin (one more than the spans: the end).
    spans: Vec<u32>,
    /// The other entries, as words.
    words: Vec<u64>,
    prefix: Prefix,
}

/// The highest count of a short word.
const SHORT_MAX: i64 = 0xFFFF;

/// The highest positive counts of a set of entries, as words `tag << 32 | count`, highest
/// first; every entry left out has a count of at most `rest` (0 when none positive is).
#[derive(Clone, Default)]
pub(super) struct Prefix {
    pub(super) words: Vec<u64>,
    pub(super) rest: i64,
}

/// A word's count.
#[inline]
pub(super) fn word_count(w: u64) -> i64 {
    w as u32 as i32 as i64
}

/// A word of `tag` and `count` (which fits an i32).
#[inline]
pub(super) fn word(tag: u32, count: i64) -> u64 {
    (tag as u64) << 32 | count as i32 as u32 as u64
}

/// Selects a [`Prefix`] from entries pushed one at a time (in any order, in as many slices
/// as wanted): counts above the best `len` so far are buffered, and the buffer is cut back to
/// the best `len` when full (amortized O(1) an entry).
#[derive(Clone)]
pub(super) struct PrefixBuilder {
    len: usize,
    buf: Vec<u64>,
    floor: i64,
    /// A positive count was left out.
    dropped: bool,
}

impl PrefixBuilder {
    pub(super) fn new(len: usize) -> PrefixBuilder {
        PrefixBuilder {
            len: len.max(1),
            buf: Vec::new(),
            floor: 0,
            dropped: false,
        }
    }

    #[inline]
    pub(super) fn push(&mut self, w: u64) {
        let c = word_count(w);
        if c <= self.floor {
            self.dropped |= c > 0;
            return;
        }
        self.buf.push(w);
        if self.buf.len() >= 2 * self.len + 64 {
            self.cut();
            self.floor = word_count(self.buf[self.len - 1]);
        }
    }

    /// Keeps the best `len` of the buffer.
    fn cut(&mut self) {
        if self.buf.len() > self.len {
            self.buf
                .select_nth_unstable_by_key(self.len - 1, |w| std::cmp::Reverse(word_count(*w)));
            self.buf.truncate(self.len);
            self.dropped = true;
        }
    }

    pub(super) fn finish(mut self) -> Prefix {
        self.cut();
        self.buf
            .sort_unstable_by_key(|w| std::cmp::Reverse(word_count(*w)));
        let rest = match self.buf.last() {
            Some(&w) if self.dropped => word_count(w),
            _ => 0,
        };
        self.buf.shrink_to_fit();
        Prefix {
            words: self.buf,
            rest,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.buf.capacity() * 8
    }
}

impl Packed {
    #[inline]
    fn unpack(w: u64) -> (usize, i64) {
        ((w >> 32) as usize, w as u32 as i32 as i64)
    }

    pub(super) fn len(&self) -> usize {
        self.short.len() + self.words.len()
    }

    /// Adds (subtracts with `negate`) every count of each copy into `acc[id]` (wrapping); true
    /// if one overflowed. Id block by id block:
    /// the words are id-sorted, so a block of `acc` stays in cache while every copy adds its
    /// run to it, where copy after copy would each stream all of `acc` through the cache (a
    /// sum of 12 buckets over 200,000 members: ~10% faster).
    pub(super) fn scan_many_into<A: Acc>(copies: &[(&Packed, bool)], acc: &mut [A]) -> bool {
        /// Ids a block: 64 KB of `acc` (a span of 65,536 ids holds whole blocks).
        const BLOCK: u64 = 8192;
        // Each copy's short words not read yet (from where they are) and its long ones.
        let mut rest: Vec<(usize, &[u64])> =
            copies.iter().map(|(p, _)| (0, &p.words[..])).collect();
        let mut overflow = false;
        let mut end = BLOCK;
        let left = |rest: &[(usize, &[u64])]| {
            rest.iter()
                .zip(copies)
                .any(|((at, words), (p, _))| *at < p.short.len() || !words.is_empty())
        };
        while left(&rest) {
            let span = ((end - 1) >> 16) as usize;
            let (base, below) = ((span as u64) << 16, ((end - 1) & 0xFFFF) as u32 + 1);
            for ((at, words), (p, negate)) in rest.iter_mut().zip(copies) {
                if let Some(&stop) = p.spans.get(span + 1) {
                    let short = &p.short[*at..stop as usize];
                    let (run, o) = if *negate {
                        scan_short::<true, A>(short, base, below, acc)
                    } else {
                        scan_short::<false, A>(short, base, below, acc)
                    };
                    overflow |= o;
                    *at += run;
                }
                let (run, o) = if *negate {
                    scan::<true, A>(words, end, acc)
                } else {
                    scan::<false, A>(words, end, acc)
                };
                overflow |= o;
                *words = &words[run..];
            }
            end += BLOCK;
        }
        overflow
    }

    /// The highest counts (tags are member ids).
    pub(super) fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    pub(super) fn heap_bytes(&self) -> usize {
        (self.short.capacity() + self.spans.capacity()) * 4
            + (self.words.capacity() + self.prefix.words.capacity()) * 8
    }

    /// Offers its blocks to a defrag pass.
    pub(super) fn defrag(&mut self, m: &mut impl Mover) {
        m.vec(&mut self.short);
        m.vec(&mut self.spans);
        m.vec(&mut self.words);
        m.vec(&mut self.prefix.words);
    }

    /// `(id, count)` of every entry, by id.
    #[cfg(test)]
    pub(super) fn entries(&self) -> impl Iterator<Item = (u32, i64)> {
        let mut all: Vec<(u32, i64)> = self
            .words
            .iter()
            .map(|&w| {
                let (id, c) = Packed::unpack(w);
                (id as u32, c)
            })
            .collect();
        for (span, ends) in self.spans.windows(2).enumerate() {
            for &s in &self.short[ends[0] as usize..ends[1] as usize] {
                all.push(((span as u32) << 16 | s >> 16, (s & 0xFFFF) as i64));
            }
        }
        all.sort_unstable();
        all.into_iter()
    }
}

/// `scan` over short words of the span starting at id `base`: those whose low id bits are below
/// `below`; returns how many it read and whether a count overflowed.
#[inline(never)]
fn scan_short<const NEGATE: bool, A: Acc>(
    short: &[u32],
    base: u64,
    below: u32,
    acc: &mut [A],
) -> (usize, bool) {
    let mut overflow = false;
    let mut read = 0;
    for &s in short {
        if s >> 16 >= below {
            break;
        }
        read += 1;
        let a = &mut acc[(base + (s >> 16) as u64) as usize];
        let (v, o) = a.apply::<NEGATE>((s & 0xFFFF) as i64);
        *a = v;
        overflow |= o;
    }
    (read, overflow)
}

/// `Packed::scan_many_into`'s loop, one instance per sign so its state stays in registers: the
/// words of ids below `end`; returns how many it read and whether a count overflowed.
#[inline(never)]
fn scan<const NEGATE: bool, A: Acc>(words: &[u64], end: u64, acc: &mut [A]) -> (usize, bool) {
    let mut overflow = false;
    let mut read = 0;
    for &w in words {
        if w >> 32 >= end {
            break;
        }
        read += 1;
        let (id, c) = Packed::unpack(w);
        let a = &mut acc[id];
        let (v, o) = a.apply::<NEGATE>(c);
        *a = v;
        overflow |= o;
    }
    (read, overflow)
}

/// A dense sum's accumulator: `i64`, whose additions report overflow, or `i32` for a sum
/// whose bounds show no total can leave its range (half the bytes to stream through the
/// cache on a big read; its additions never overflow, by that check).
pub(super) trait Acc: Copy + Default + 'static {
    /// `self + x` (`self - x` with `NEGATE`) and whether it overflowed.
    fn apply<const NEGATE: bool>(self, x: i64) -> (Self, bool);
    fn get(self) -> i64;
}

impl Acc for i64 {
    #[inline(always)]
    fn apply<const NEGATE: bool>(self, x: i64) -> (i64, bool) {
        if NEGATE {
            self.overflowing_sub(x)
        } else {
            self.overflowing_add(x)
        }
    }
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
}

impl Acc for i32 {
    #[inline(always)]
    fn apply<const NEGATE: bool>(self, x: i64) -> (i32, bool) {
        let x = x as i32;
        let v = if NEGATE {
            self.wrapping_sub(x)
        } else {
            self.wrapping_add(x)
        };
        (v, false)
    }
    #[inline(always)]
    fn get(self) -> i64 {
        self as i64
    }
}

/// Whether a bucket whose counts lie in `[min, max]` can be packed.
pub(super) fn packable(min: i64, max: i64) -> bool {
    min >= i32::MIN as i64 && max <= i32::MAX as i64
}

/// A packing in progress: which bucket, at which write generation, and how far.
#[derive(Clone)]
pub(super) struct Packer {
    pub(super) idx: i64,
    pub(super) generation: u64,
    /// Cells collected so far (the next cell to look at).
    cell: usize,
    /// Collected words; during the sort, the source of the current pass.
    words: Vec<u64>,
    /// The destination of the current pass; when sorted, the long words.
    out: Vec<u64>,
    /// The short words and their spans, once sorted (`Packed`).
    short: Vec<u32>,
    spans: Vec<u32>,
    /// Current radix pass, and how many the ids need.
    pass: u32,
    passes: u32,
    /// Within a pass: histogram (`Counting`) or scatter (`Scattering`), and the position.
    phase: Phase,
    pos: usize,
    offsets: Vec<usize>,
    prefix: PrefixBuilder,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Collecting,
    Counting,
    Scattering,
    /// The prefix, selected from the sorted words.
    Selecting,
}

/// What a packing step did.
pub(super) enum Step {
    /// More to do; the work done, in entries or cells.
    Working(usize),
    /// Finished: the copy.
    Done(Packed),
}

impl Packer {
    /// A packing of bucket `idx` at write generation `generation`, whose member ids are below
    /// `id_limit`.
    /// `entries` bounds the words collected (reserved at once: growing by doubling would copy
    /// megabytes in one step).
    pub(super) fn new(idx: i64, generation: u64, id_limit: usize, entries: usize) -> Packer {
        // The key's sums will read this copy: their accumulators (one slot per id, and the
        // scan's dummy slot) made ready ahead of the first (`accumulator.rs`).
        want_warm(id_limit + 1);
        let bits = usize::BITS - id_limit.max(1).leading_zeros();
        Packer {
            idx,
            generation,
            cell: 0,
            words: Vec::with_capacity(entries),
            out: Vec::new(),
            short: Vec::new(),
            spans: Vec::new(),
            pass: 0,
            passes: bits.div_ceil(DIGIT_BITS).max(1),
            phase: Phase::Collecting,
            pos: 0,
            offsets: Vec::new(),
            prefix: PrefixBuilder::new(PREFIX_LEN),
        }
    }

    /// Does about `budget` elements of work: collects the occupied cells through `cell(c)` (id
    /// and count, `None` past the last cell; empty cells and zero counts are skipped), then
    /// sorts them.
    pub(super) fn step(
        &mut self,
        budget: usize,
        cells: usize,
        cell: impl Fn(usize) -> Option<(u32, i64)>,
    ) -> Step {
        let mut done = 0;
        while done < budget {
            match self.phase {
                Phase::Collecting => {
                    let end = cells.min(self.cell + budget - done);
                    for c in self.cell..end {
                        if let Some((id, v)) = cell(c).filter(|e| e.1 != 0) {
                            self.words.push((id as u64) << 32 | v as i32 as u32 as u64);
                        }
                    }
                    done += end - self.cell;
                    self.cell = end;
                    if end == cells {
                        self.phase = Phase::Counting;
                        self.offsets = vec![0; DIGITS];
                        self.out = Vec::with_capacity(self.words.len());
                        done += 1;
                    }
                }
                Phase::Counting => {
                    let shift = 32 + self.pass * DIGIT_BITS;
                    let end = self.words.len().min(self.pos + budget - done);
                    for &w in &self.words[self.pos..end] {
                        self.offsets[(w >> shift) as usize & (DIGITS - 1)] += 1;
                    }
                    // The destination is zeroed along (first pass; later passes reuse the
                    // previous source, whose every word the scatter overwrites).
                    if self.out.len() < end {
                        self.out.resize(end, 0);
                    }
                    done += end - self.pos + 1;
                    self.pos = end;
                    if end == self.words.len() {
                        let mut sum = 0;
                        for o in &mut self.offsets {
                            (*o, sum) = (sum, sum + *o);
                        }
                        self.phase = Phase::Scattering;
                        self.pos = 0;
                        done += DIGITS / 64;
                    }
                }
                Phase::Scattering => {
                    let shift = 32 + self.pass * DIGIT_BITS;
                    let end = self.words.len().min(self.pos + budget - done);
                    for &w in &self.words[self.pos..end] {
                        let o = &mut self.offsets[(w >> shift) as usize & (DIGITS - 1)];
                        self.out[*o] = w;
                        *o += 1;
                    }
                    done += end - self.pos + 1;
                    self.pos = end;
                    if end == self.words.len() {
                        std::mem::swap(&mut self.words, &mut self.out);
                        self.pass += 1;
                        self.pos = 0;
                        if self.pass == self.passes {
                            // Sorted: the words are split into short and long ones along the
                            // selection (the long into the emptied destination).
                            self.phase = Phase::Selecting;
                            self.out.clear();
                            self.short = Vec::with_capacity(self.words.len());
                            continue;
                        }
                        self.offsets.iter_mut().for_each(|o| *o = 0);
                        self.phase = Phase::Counting;
                    }
                }
                Phase::Selecting => {
                    let end = self.words.len().min(self.pos + budget - done);
                    for &w in &self.words[self.pos..end] {
                        self.prefix.push(w);
                        let (id, count) = Packed::unpack(w);
                        if (1..=SHORT_MAX).contains(&count) {
                            while self.spans.len() <= id >> 16 {
                                self.spans.push(self.short.len() as u32);
                            }
                            self.short.push(((id & 0xFFFF) as u32) << 16 | count as u32);
                        } else {
                            self.out.push(w);
                        }
                    }
                    done += end - self.pos + 1;
                    self.pos = end;
                    if end == self.words.len() {
                        let prefix = std::mem::replace(&mut self.prefix, PrefixBuilder::new(1));
                        let mut spans = std::mem::take(&mut self.spans);
                        spans.push(self.short.len() as u32);
                        let mut short = std::mem::take(&mut self.short);
                        let mut words = std::mem::take(&mut self.out);
                        short.shrink_to_fit();
                        words.shrink_to_fit();
                        return Step::Done(Packed {
                            short,
                            spans,
                            words,
                            prefix: prefix.finish(),
                        });
                    }
                }
            }
        }
        Step::Working(done)
    }

    pub(super) fn heap_bytes(&self) -> usize {
        (self.words.capacity() + self.out.capacity()) * 8
            + (self.short.capacity() + self.spans.capacity()) * 4
            + self.offsets.capacity() * 8
            + self.prefix.heap_bytes()
    }

    /// Offers its blocks to a defrag pass, at any point of a packing (it holds positions into
    /// them, no pointers).
    pub(super) fn defrag(&mut self, m: &mut impl Mover) {
        m.vec(&mut self.words);
        m.vec(&mut self.out);
        m.vec(&mut self.short);
        m.vec(&mut self.spans);
        m.vec(&mut self.offsets);
        m.vec(&mut self.prefix.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Packing in slices of any size gives the cells' nonzero entries sorted by id, and a scan
    /// adds (subtracts) them.
    #[test]
    fn packs_in_slices_and_scans() {
        let mut rng = StdRng::seed_from_u64(5);
        for round in 0..60 {
            let limit = [10usize, 3000, 70_000, 5_000_000][round % 4];
            let cells: Vec<Option<(u32, i64)>> = (0..rng.gen_range(0..5000))
                .map(|_| {
                    rng.gen_bool(0.7).then(|| {
                        let v = match rng.gen_range(0..10) {
                            0 => 0,
                            1 => i32::MIN as i64,
                            2 => i32::MAX as i64,
                            3 => SHORT_MAX + rng.gen_range(0..2),
                            _ => rng.gen_range(-5..50),
                        };
                        (rng.gen_range(0..limit as u32), v)
                    })
                })
                .collect();
            // Ids are distinct in a bucket.
            let mut seen = std::collections::HashSet::new();
            let cells: Vec<Option<(u32, i64)>> = cells
                .into_iter()
                .map(|c| c.filter(|(id, _)| seen.insert(*id)))
                .collect();
            let mut p = Packer::new(3, 0, limit, cells.len());
            let budget = rng.gen_range(1..3000);
            let packed = loop {
                match p.step(budget, cells.len(), |c| cells[c]) {
                    Step::Working(w) => assert!(w <= budget + DIGITS / 64 + 2),
                    Step::Done(packed) => break packed,
                }
            };
            let mut want: Vec<(u32, i64)> = cells
                .iter()
                .flatten()
                .copied()
                .filter(|e| e.1 != 0)
                .collect();
            want.sort();
            assert_eq!(packed.entries().collect::<Vec<_>>(), want, "round {round}");
            check_prefix(packed.prefix(), &want);
            if limit <= 70_000 {
                let mut acc = vec![0i64; limit];
                let scan =
                    |negate, acc: &mut [i64]| Packed::scan_many_into(&[(&packed, negate)], acc);
                assert!(!scan(false, &mut acc));
                assert!(!scan(true, &mut acc));
                assert!(!scan(true, &mut acc));
                for (id, v) in &want {
                    assert_eq!(acc[*id as usize], -v);
                }
            }
        }
    }

    /// A prefix holds the highest positive counts (highest first, the longest it may), and
    /// `rest` bounds every positive count left out.
    fn check_prefix(p: &Prefix, entries: &[(u32, i64)]) {
        let mut positive: Vec<i64> = entries.iter().map(|e| e.1).filter(|c| *c > 0).collect();
        positive.sort_unstable_by(|a, b| b.cmp(a));
        let got: Vec<i64> = p.words.iter().map(|w| word_count(*w)).collect();
        assert_eq!(got, positive[..positive.len().min(PREFIX_LEN)]);
        for w in &p.words {
            assert!(entries.contains(&((w >> 32) as u32, word_count(*w))));
        }
        match positive.get(PREFIX_LEN) {
            Some(&left_out) => assert!(p.rest >= left_out && p.rest <= got[got.len() - 1]),
            None => assert_eq!(p.rest, 0),
        }
    }

    #[test]
    fn prefixes_in_any_order() {
        let mut rng = StdRng::seed_from_u64(8);
        for round in 0..40 {
            let entries: Vec<(u32, i64)> = (0..rng.gen_range(0..6000u32))
                .map(|id| (id, rng.gen_range(-3..[3, 50, 100_000][round % 3])))
                .collect();
            let mut b = PrefixBuilder::new(PREFIX_LEN);
            for &(id, c) in &entries {
                b.push(word(id, c));
            }
            check_prefix(&b.finish(), &entries);
        }
    }

    #[test]
    fn only_i32_counts_pack() {
        assert!(packable(i32::MIN as i64, i32::MAX as i64));
        assert!(!packable(i32::MIN as i64 - 1, 0));
        assert!(!packable(0, i32::MAX as i64 + 1));
    }
}
