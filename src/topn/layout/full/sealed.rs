//! A sealed bucket's entries, sorted by member id (12 bytes an entry, against about 17 in the
//! table that took its writes): a lookup is a binary search, and a sum adds them to its
//! accumulators in ascending order, which streams through the cache. Made from the entries of
//! a bucket that no longer takes the usual writes, a bounded slice at a time by the upkeep
//! timer ([`Packer`]: the entries collected, then sorted by a least-significant-digit radix
//! sort whose passes are resumable). Pure Rust, no FFI.

use super::accumulator::want_warm;
use super::entries::Entries;
use crate::tuples::defrag::Mover;

/// Keys of this many member slots or more have their sums' accumulators made ready ahead (16
/// KB of them: fewer pages fault in a few microseconds).
const WARM_FROM: usize = 4096;

/// Bits of the member id sorted per radix pass.
const DIGIT_BITS: u32 = 11;
const DIGITS: usize = 1 << DIGIT_BITS;

#[derive(Clone, Default)]
pub(super) struct Sealed {
    ids: Box<[u32]>,
    counts: Box<[i64]>,
}

impl Sealed {
    /// Entries given sorted by id, none twice.
    pub(super) fn from_sorted(ids: Vec<u32>, counts: Vec<i64>) -> Sealed {
        debug_assert!(ids.windows(2).all(|w| w[0] < w[1]));
        Sealed {
            ids: ids.into_boxed_slice(),
            counts: counts.into_boxed_slice(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The position of `id`'s entry.
    #[inline]
    pub(super) fn find(&self, id: u32) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    #[inline]
    pub(super) fn at(&self, pos: usize) -> (u32, i64) {
        (self.ids[pos], self.counts[pos])
    }

    /// Adds `delta` to the count at `pos` (a late write); returns the count after.
    #[inline]
    pub(super) fn add_at(&mut self, pos: usize, delta: i64) -> i64 {
        let c = &mut self.counts[pos];
        *c = c.wrapping_add(delta);
        *c
    }

    /// The ids and counts of positions `from..to`.
    #[inline]
    pub(super) fn range(&self, from: usize, to: usize) -> (&[u32], &[i64]) {
        let to = to.min(self.len());
        let from = from.min(to);
        (&self.ids[from..to], &self.counts[from..to])
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.len() * 12
    }

    pub(super) fn defrag(&mut self, m: &mut impl Mover) {
        m.slice(&mut self.ids);
        m.slice(&mut self.counts);
    }
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
    counts: Vec<i64>,
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
    /// A sealing of `entries`, frozen until it is done, whose member ids are below `id_limit`.
    pub(super) fn new(entries: &Entries, id_limit: usize) -> Packer {
        // The key's sums will read the sealed bucket: their accumulators (one slot per id) made
        // ready ahead of the first (`accumulator.rs`), when they are more than a few pages.
        if id_limit >= WARM_FROM {
            want_warm(id_limit);
        }
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
            counts: Vec::new(),
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
                                self.ids = Vec::with_capacity(self.words.len());
                                self.counts = Vec::with_capacity(self.words.len());
                                (self.phase, self.pos) = (Phase::Gathering, 0);
                            }
                            false => self.start_pass(),
                        }
                    }
                }
                Phase::Gathering => {
                    let end = self.words.len().min(self.pos + left);
                    for &w in &self.words[self.pos..end] {
                        self.ids.push((w >> 32) as u32);
                        self.counts.push(entries.at(w as u32 as usize).1);
                    }
                    done += end - self.pos + 1;
                    self.pos = end;
                    if end == self.words.len() {
                        let ids = std::mem::take(&mut self.ids);
                        let counts = std::mem::take(&mut self.counts);
                        return Step::Done(Sealed::from_sorted(ids, counts));
                    }
                }
            }
        }
        Step::Working(done)
    }

    /// The next radix pass: its histogram zeroed and its destination sized.
    fn start_pass(&mut self) {
        self.offsets.clear();
        self.offsets.resize(DIGITS, 0);
        self.out.resize(self.words.len(), 0);
        (self.phase, self.pos) = (Phase::Counting, 0);
    }

    pub(super) fn heap_bytes(&self) -> usize {
        (self.words.capacity() + self.out.capacity() + self.offsets.capacity()) * 8
            + self.ids.capacity() * 4
            + self.counts.capacity() * 8
    }

    /// Offers its blocks to a defrag pass, at any point (it holds positions, no pointers).
    pub(super) fn defrag(&mut self, m: &mut impl Mover) {
        m.vec(&mut self.words);
        m.vec(&mut self.out);
        m.vec(&mut self.offsets);
        m.vec(&mut self.ids);
        m.vec(&mut self.counts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Sealing in slices of any size gives the entries sorted by id, and finds each.
    #[test]
    fn seals_in_slices() {
        let mut rng = StdRng::seed_from_u64(5);
        for round in 0..60 {
            let limit = [10u32, 3000, 70_000, 5_000_000][round % 4];
            let mut entries = Entries::default();
            let mut want = std::collections::BTreeMap::new();
            for _ in 0..rng.gen_range(0..5000) {
                let id = rng.gen_range(0..limit);
                let delta = match rng.gen_range(0..10) {
                    0 => i64::MAX / 4,
                    1 => -rng.gen_range(1..5),
                    _ => rng.gen_range(0..50),
                };
                let (_, count) = entries.add(id, delta);
                want.insert(id, count);
            }
            let mut p = Packer::new(&entries, limit as usize);
            let budget = rng.gen_range(1..3000);
            let sealed = loop {
                match p.step(budget, &entries) {
                    Step::Working(w) => assert!(w <= budget + DIGITS / 64 + 2),
                    Step::Done(sealed) => break sealed,
                }
            };
            let got: Vec<(u32, i64)> = (0..sealed.len()).map(|i| sealed.at(i)).collect();
            let want: Vec<(u32, i64)> = want.into_iter().collect();
            assert_eq!(got, want, "round {round}");
            for (pos, &(id, _)) in want.iter().enumerate() {
                assert_eq!(sealed.find(id), Some(pos));
            }
        }
    }
}
