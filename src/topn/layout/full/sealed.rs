//! A sealed bucket's entries, sorted by member id: 8 bytes an entry (the id, and the count as
//! an i32 when the bucket's counts fit one; 12 bytes else), against about 25 in the table that
//! took its writes. A sum adds them to its accumulators in ascending order; a lookup is a
//! binary search within a block of about 16 entries that a directory of the ids' high bits
//! points at (a cache miss or two, as a hash table's; a search of the whole array takes four
//! or five, which a read's proof of a walk pays for each of its few dozen candidates). Made
//! from the entries of a bucket that no longer takes the usual writes, a bounded slice at a
//! time ([`Packer`]: the entries collected, then sorted by a least-significant-digit radix sort
//! whose passes are resumable). Pure Rust, no FFI.

use super::accumulator::{want_warm, Acc};
use super::entries::Entries;
use crate::tuples::defrag::Mover;

/// Bits of the member id sorted per radix pass.
const DIGIT_BITS: u32 = 11;
const DIGITS: usize = 1 << DIGIT_BITS;

/// Entries a directory block holds on average.
const BLOCK_ENTRIES: usize = 16;

/// The counts, by position: as i32 when every count the bucket held fits one.
#[derive(Clone)]
enum Counts {
    Narrow(Box<[i32]>),
    Wide(Box<[i64]>),
}

/// The same, while a packing gathers them.
#[derive(Clone)]
enum Gathered {
    Narrow(Vec<i32>),
    Wide(Vec<i64>),
}

#[derive(Clone)]
pub(super) struct Sealed {
    ids: Box<[u32]>,
    counts: Counts,
    /// `blocks[k]`: the first position of an id of at least `k << shift`.
    blocks: Box<[u32]>,
    shift: u32,
}

/// The directory's shift for `len` entries whose ids are at most `max`: about
/// `BLOCK_ENTRIES` entries a block.
fn shift_for(len: usize, max: u32) -> u32 {
    let bits = |x: usize| usize::BITS - x.leading_zeros();
    bits(max as usize).saturating_sub(bits(len / BLOCK_ENTRIES))
}

/// Extends a directory being built (`blocks`, whose last block started at most at the block
/// of `id`) with the blocks up to `id`'s, which starts at position `pos`.
#[inline]
fn direct(blocks: &mut Vec<u32>, shift: u32, id: u32, pos: usize) {
    while blocks.len() <= (id >> shift) as usize {
        blocks.push(pos as u32);
    }
}

impl Sealed {
    /// Entries given sorted by id, none twice.
    pub(super) fn from_sorted(ids: Vec<u32>, counts: Vec<i64>) -> Sealed {
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let shift = shift_for(ids.len(), ids.last().copied().unwrap_or(0));
        let mut blocks = Vec::new();
        for (pos, &id) in ids.iter().enumerate() {
            direct(&mut blocks, shift, id, pos);
        }
        let counts = match counts.iter().all(|&c| i32::try_from(c).is_ok()) {
            true => Gathered::Narrow(counts.into_iter().map(|c| c as i32).collect()),
            false => Gathered::Wide(counts),
        };
        Sealed::of(ids, counts, blocks, shift)
    }

    /// The parts, the directory's last block still to close.
    fn of(ids: Vec<u32>, counts: Gathered, mut blocks: Vec<u32>, shift: u32) -> Sealed {
        blocks.push(ids.len() as u32);
        Sealed {
            ids: ids.into_boxed_slice(),
            counts: match counts {
                Gathered::Narrow(c) => Counts::Narrow(c.into_boxed_slice()),
                Gathered::Wide(c) => Counts::Wide(c.into_boxed_slice()),
            },
            blocks: blocks.into_boxed_slice(),
            shift,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The position of `id`'s entry.
    #[inline]
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        let k = (id >> self.shift) as usize;
        let (lo, hi) = (*self.blocks.get(k)?, *self.blocks.get(k + 1)?);
        let (lo, hi) = (lo as usize, hi as usize);
        self.ids[lo..hi].binary_search(&id).ok().map(|p| lo + p)
    }

    #[inline]
    pub(super) fn at(&self, pos: usize) -> (u32, i64) {
        let count = match &self.counts {
            Counts::Narrow(c) => c[pos].into(),
            Counts::Wide(c) => c[pos],
        };
        (self.ids[pos], count)
    }

    /// Adds `delta` to the count at `pos` (a late write); returns the count after, or `None`
    /// (nothing changed) when it would not fit the bucket's counts (the write goes elsewhere).
    #[inline]
    pub(super) fn add_at(&mut self, pos: usize, delta: i64) -> Option<i64> {
        match &mut self.counts {
            Counts::Narrow(c) => {
                let count = i32::try_from(i64::from(c[pos]).wrapping_add(delta)).ok()?;
                c[pos] = count;
                Some(count.into())
            }
            Counts::Wide(c) => {
                c[pos] = c[pos].wrapping_add(delta);
                Some(c[pos])
            }
        }
    }

    /// Adds (`negate`: subtracts) the counts of positions `from..to` into `acc[id]`, in id
    /// order; true if one overflowed.
    pub(super) fn scan<A: Acc>(&self, from: usize, to: usize, negate: bool, acc: &mut [A]) -> bool {
        let to = to.min(self.len());
        let from = from.min(to);
        let ids = &self.ids[from..to];
        match (&self.counts, negate) {
            (Counts::Narrow(c), true) => add::<true, A, i32>(ids, &c[from..to], acc),
            (Counts::Narrow(c), false) => add::<false, A, i32>(ids, &c[from..to], acc),
            (Counts::Wide(c), true) => add::<true, A, i64>(ids, &c[from..to], acc),
            (Counts::Wide(c), false) => add::<false, A, i64>(ids, &c[from..to], acc),
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        let counts = match &self.counts {
            Counts::Narrow(c) => c.len() * 4,
            Counts::Wide(c) => c.len() * 8,
        };
        self.len() * 4 + counts + self.blocks.len() * 4
    }

    pub(super) fn defrag(&mut self, m: &mut impl Mover) {
        m.slice(&mut self.ids);
        match &mut self.counts {
            Counts::Narrow(c) => m.slice(c),
            Counts::Wide(c) => m.slice(c),
        }
        m.slice(&mut self.blocks);
    }
}

/// Adds (`NEGATE`: subtracts) each count into `acc[id]`; true if one overflowed. One instance
/// per sign and width, so its state stays in registers.
#[inline(never)]
fn add<const NEGATE: bool, A: Acc, C: Copy + Into<i64>>(
    ids: &[u32],
    counts: &[C],
    acc: &mut [A],
) -> bool {
    let mut overflow = false;
    for (&id, &count) in ids.iter().zip(counts) {
        let a = &mut acc[id as usize];
        let (v, o) = a.apply::<NEGATE>(count.into());
        *a = v;
        overflow |= o;
    }
    overflow
}

/// A sealing in progress: entries collected as words `id << 32 | position`, sorted by id a
/// radix pass at a time, then gathered with their counts.
#[derive(Clone)]
pub(super) struct Packer {
    /// Collected words; during the sort, the source of the current pass.
    words: Vec<u64>,
    /// The destination of the current pass.
    out: Vec<u64>,
    pass: u32,
    passes: u32,
    phase: Phase,
    /// The next entry, word or position of the phase.
    pos: usize,
    offsets: Vec<usize>,
    ids: Vec<u32>,
    counts: Gathered,
    blocks: Vec<u32>,
    shift: u32,
    /// Every count the bucket held fits an i32.
    narrow: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Collecting,
    Counting,
    Scattering,
    Gathering,
}

/// What a sealing step did.
pub(super) enum Step {
    /// More to do; the work done, in entries.
    Working(usize),
    /// Finished.
    Done(Sealed),
}

impl Packer {
    /// A sealing of `entries`, frozen until it is done, whose member ids are below `id_limit`
    /// (`narrow`: every count the bucket held fits an i32).
    pub(super) fn new(entries: &Entries, id_limit: usize, narrow: bool) -> Packer {
        // The key's sums will read the sealed bucket: their accumulators (one slot per id) made
        // ready ahead of the first (`accumulator.rs`), when they are more than a few pages.
        want_warm(id_limit);
        let bits = usize::BITS - id_limit.max(1).leading_zeros();
        Packer {
            // Reserved at once: growing by doubling would copy megabytes in one step.
            words: Vec::with_capacity(entries.len()),
            out: Vec::new(),
            pass: 0,
            passes: bits.div_ceil(DIGIT_BITS).max(1),
            phase: Phase::Collecting,
            pos: 0,
            offsets: Vec::new(),
            ids: Vec::new(),
            counts: Gathered::Wide(Vec::new()),
            blocks: Vec::new(),
            shift: 0,
            narrow,
        }
    }

    /// About `budget` entries of work on `entries` (the same frozen ones every step).
    pub(super) fn step(&mut self, budget: usize, entries: &Entries) -> Step {
        let mut done = 0;
        while done < budget {
            let left = budget - done;
            match self.phase {
                Phase::Collecting => {
                    let end = entries.len().min(self.pos + left);
                    if self.out.capacity() == 0 {
                        self.out = Vec::with_capacity(entries.len());
                    }
                    // Zero counts too: an entry is a ref of its member until the bucket is freed.
                    for pos in self.pos..end {
                        let (id, _) = entries.at(pos);
                        self.words.push(u64::from(id) << 32 | pos as u64);
                    }
                    done += end - self.pos + 1;
                    self.pos = end;
                    if end == entries.len() {
                        self.start_pass();
                    }
                }
                Phase::Counting => {
                    let shift = 32 + self.pass * DIGIT_BITS;
                    let end = self.words.len().min(self.pos + left);
                    for &w in &self.words[self.pos..end] {
                        self.offsets[(w >> shift) as usize & (DIGITS - 1)] += 1;
                    }
                    // The destination zeroed along (a big one at once would be a long step;
                    // later passes reuse the previous source, whose every word a scatter
                    // overwrites).
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
                        (self.phase, self.pos) = (Phase::Scattering, 0);
                        done += DIGITS / 64;
                    }
                }
                Phase::Scattering => {
                    let shift = 32 + self.pass * DIGIT_BITS;
                    let end = self.words.len().min(self.pos + left);
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
                        match self.pass == self.passes {
                            true => {
                                self.out = Vec::new();
                                let len = self.words.len();
                                let max = self.words.last().map_or(0, |w| (w >> 32) as u32);
                                self.shift = shift_for(len, max);
                                // Every block reserved at once, as the entries are.
                                self.blocks = Vec::with_capacity((max >> self.shift) as usize + 2);
                                self.ids = Vec::with_capacity(len);
                                self.counts = match self.narrow {
                                    true => Gathered::Narrow(Vec::with_capacity(len)),
                                    false => Gathered::Wide(Vec::with_capacity(len)),
                                };
                                (self.phase, self.pos) = (Phase::Gathering, 0);
                            }
                            false => self.start_pass(),
                        }
                    }
                }
                Phase::Gathering => {
                    let end = self.words.len().min(self.pos + left);
                    for &w in &self.words[self.pos..end] {
                        let id = (w >> 32) as u32;
                        direct(&mut self.blocks, self.shift, id, self.ids.len());
                        self.ids.push(id);
                        let count = entries.at(w as u32 as usize).1;
                        match &mut self.counts {
                            Gathered::Narrow(c) => c.push(count as i32),
                            Gathered::Wide(c) => c.push(count),
                        }
                    }
                    done += end - self.pos + 1;
                    self.pos = end;
                    if end == self.words.len() {
                        let ids = std::mem::take(&mut self.ids);
                        let counts =
                            std::mem::replace(&mut self.counts, Gathered::Wide(Vec::new()));
                        let blocks = std::mem::take(&mut self.blocks);
                        return Step::Done(Sealed::of(ids, counts, blocks, self.shift));
                    }
                }
            }
        }
        Step::Working(done)
    }

    /// Member `id`'s frozen count became 0 (it moved to a late entry): the copy follows, if
    /// gathered already (gathered ids ascend).
    pub(super) fn zero(&mut self, id: u32) {
        let Ok(i) = self.ids.binary_search(&id) else {
            return;
        };
        match &mut self.counts {
            Gathered::Narrow(c) => c[i] = 0,
            Gathered::Wide(c) => c[i] = 0,
        }
    }

    /// The next radix pass, its histogram zeroed.
    fn start_pass(&mut self) {
        self.offsets.clear();
        self.offsets.resize(DIGITS, 0);
        (self.phase, self.pos) = (Phase::Counting, 0);
    }

    pub(super) fn heap_bytes(&self) -> usize {
        let counts = match &self.counts {
            Gathered::Narrow(c) => c.capacity() * 4,
            Gathered::Wide(c) => c.capacity() * 8,
        };
        (self.words.capacity() + self.out.capacity() + self.offsets.capacity()) * 8
            + (self.ids.capacity() + self.blocks.capacity()) * 4
            + counts
    }

    /// Offers its blocks to a defrag pass, at any point (it holds positions, no pointers).
    pub(super) fn defrag(&mut self, m: &mut impl Mover) {
        m.vec(&mut self.words);
        m.vec(&mut self.out);
        m.vec(&mut self.offsets);
        m.vec(&mut self.ids);
        match &mut self.counts {
            Gathered::Narrow(c) => m.vec(c),
            Gathered::Wide(c) => m.vec(c),
        }
        m.vec(&mut self.blocks);
    }
}

#[cfg(test)]
#[path = "sealed_tests.rs"]
mod tests;
