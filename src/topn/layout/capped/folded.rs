//! What makes a capped key's write cost O(log CAPACITY) whatever its number of
//! buckets: the sealed buckets' counts summed once, so a write's reply (the
//! member's count over the window) looks up one table and a few buckets
//! instead of every bucket. Derived state: rebuilt after a load, never encoded,
//! no answer depends on how far it got. Pure Rust, no FFI.
//!
//! A member's count over the window is `sum(present ? count : floor)` over its
//! buckets. Over a set of *folded* buckets that is `floors + excess[member]`:
//! `floors` sums their floors, `excess[member]` their `count - floor` where
//! the member is present (never negative: a floor is a smallest count; an entry
//! at 0 is dropped). So a reply is that plus the unfolded buckets looked up
//! directly.
//!
//! - Buckets fold oldest first, a counter a unit of work ([`Folded::step`]: a
//!   bounded share on each write, the rest by the upkeep timer), once sealed
//!   (older than the clock's bucket, which takes the writes), on keys of
//!   `FOLD_FROM` (32) buckets in use or more: fewer are looked up directly. The window's
//!   first `whole` buckets are folded whole; the next may be folded in part
//!   (its first `done` slots; slots are stable, an eviction reuses its slot);
//!   the rest is unfolded. So a write looks up the buckets from `whole` on:
//!   the clock's and the ones not folded yet, one or two once upkeep keeps up.
//! - A bucket leaving the window takes its floor out at once and its counters
//!   piecewise (`leaving`, looked up until done, to take out what is still
//!   in). When more counters leave than stay folded, the table is dropped
//!   instead (freed off the main thread) and the staying buckets fold again.
//! - A late event (`AT`) into a folded bucket updates its counter's excess in
//!   O(1); when it moves the bucket's floor (an eviction at a full bucket),
//!   every folded counter of the bucket is fixed at once: O(CAPACITY) lookups,
//!   at most 10,000.

use std::collections::VecDeque;

use super::summary::{hash, Summary};
use crate::topn::shape::Shape;
use crate::topn::storage::dispose_value;
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::table::Table;

/// Counters a write folds or unfolds at most, when work is owed.
pub const FOLD_PER_WRITE: usize = 32;

/// Buckets in use from which folding starts; it stops (the sums dropped)
/// below half of it. Fewer buckets are looked up directly (a few
/// microseconds), and their keys spend no memory on sums (`WINDOW 24
/// CAPACITY 117` stays within a TOPK's memory). Tests fold from a few
/// buckets, so that small windows cover folding, its start and its stop.
#[cfg(not(test))]
const FOLD_FROM: usize = 32;
#[cfg(test)]
const FOLD_FROM: usize = 4;

/// The window's buckets, ascending. Boxed, so that the deque's growth, or a bucket put in its
/// middle, moves pointers (8 bytes a bucket), never the buckets.
pub type Buckets = VecDeque<Box<Bucket>>;

/// A bucket of the window and how far it is folded.
#[derive(Clone, Debug)]
pub struct Bucket {
    pub idx: i64,
    pub summary: Summary,
    /// The floor counted in `floors`, once folding began: always the
    /// summary's floor (a move fixes the folded counters at once).
    folded_floor: Option<i64>,
    /// Slots summed into `excess` (the first ones).
    done: usize,
}

impl Bucket {
    pub fn new(idx: i64, summary: Summary) -> Bucket {
        Bucket {
            idx,
            summary,
            folded_floor: None,
            done: 0,
        }
    }

    #[cfg(test)]
    fn whole(&self) -> bool {
        self.folded_floor.is_some() && self.done == self.summary.len()
    }
}

/// A bucket that left the window with counters still summed: slots
/// `next..end` are in `excess` with `count - floor`.
#[derive(Clone, Debug)]
struct Leaving {
    summary: Summary,
    floor: i64,
    next: usize,
    end: usize,
}

/// A member's summed `count - floor` over the folded buckets holding it.
type Excess = (Box<[u8]>, i128);

#[derive(Clone, Debug, Default)]
pub struct Folded {
    /// The folded buckets' floors summed.
    floors: i128,
    excess: Table<Excess>,
    /// Bytes of the members in `excess`.
    name_bytes: usize,
    /// The window's first buckets folded whole.
    whole: usize,
    /// Slots of the window's buckets summed into `excess`.
    summed: usize,
    leaving: VecDeque<Leaving>,
    /// Slots of `leaving` still summed.
    leaving_summed: usize,
}

fn excess_hash(e: &Excess) -> u64 {
    hash(&e.0)
}

impl Folded {
    /// Adds `delta` to `member`'s excess (`h`: its hash).
    fn bump(&mut self, member: &[u8], h: u64, delta: i128) {
        if delta == 0 {
            return;
        }
        if let Some(e) = self.excess.find_mut(h, |e| *e.0 == *member) {
            e.1 += delta;
            if e.1 != 0 {
                return;
            }
            self.excess.remove(h, |e| *e.0 == *member, excess_hash);
            self.name_bytes -= member.len();
            return;
        }
        debug_assert!(delta > 0, "an excess below 0");
        self.excess
            .insert_unique(h, (member.into(), delta), excess_hash);
        self.name_bytes += member.len();
    }

    /// `member`'s count over the window's `buckets` (`h`: its hash).
    pub fn count(&self, buckets: &Buckets, member: &[u8], h: u64) -> i128 {
        let mut count = self.floors;
        if let Some(e) = self.excess.find(h, |e| *e.0 == *member) {
            count += e.1;
        }
        for b in buckets.range(self.whole.min(buckets.len())..) {
            let slot = b.summary.find(member, h);
            count += match (b.folded_floor, slot) {
                (None, None) => i128::from(b.summary.floor()),
                (None, Some(s)) => i128::from(b.summary.entry(s).1),
                (Some(f), Some(s)) if s >= b.done => i128::from(b.summary.entry(s).1 - f),
                (Some(_), _) => 0,
            };
        }
        for l in &self.leaving {
            if let Some(s) = l
                .summary
                .find(member, h)
                .filter(|s| (l.next..l.end).contains(s))
            {
                count -= i128::from(l.summary.entry(s).1 - l.floor);
            }
        }
        count
    }

    /// The floors of the window's `buckets` summed (the most any count over
    /// it over-counts).
    pub fn floors(&self, buckets: &Buckets) -> i128 {
        let rest = buckets.range(self.whole.min(buckets.len())..);
        self.floors
            + rest
                .filter(|b| b.folded_floor.is_none())
                .map(|b| i128::from(b.summary.floor()))
                .sum::<i128>()
    }

    /// Whether anything is summed (or leaving).
    pub fn started(&self) -> bool {
        self.summed > 0 || !self.leaving.is_empty()
    }

    /// Whether there is work: counters leaving, or a sealed bucket (older
    /// than the clock of `shape`) not folded whole, at `FOLD_FROM` buckets or
    /// once begun.
    pub fn owes(&self, buckets: &Buckets, shape: &Shape) -> bool {
        !self.leaving.is_empty()
            || ((self.started() || buckets.len() >= FOLD_FROM)
                && (buckets.get(self.whole)).is_some_and(|b| shape.has_newer(b.idx)))
    }

    /// Up to `budget` counters unfolded (leaving buckets first) or folded
    /// (sealed buckets: older than the clock of `shape`); returns the work
    /// done, `< budget` when nothing is left.
    pub fn step(&mut self, buckets: &mut Buckets, shape: &Shape, budget: usize) -> usize {
        let mut done = 0;
        if !self.started() && buckets.len() < FOLD_FROM {
            return 0;
        }
        while done < budget {
            if let Some(l) = self.leaving.front_mut() {
                if l.next < l.end {
                    let (member, count) = l.summary.entry(l.next);
                    let (member, delta) = (member.to_vec(), i128::from(count - l.floor));
                    l.next += 1;
                    self.leaving_summed -= 1;
                    self.bump(&member, hash(&member), -delta);
                } else if let Some(l) = self.leaving.pop_front() {
                    let bytes = l.summary.heap_bytes();
                    dispose_value(l.summary, bytes);
                }
                done += 1;
                continue;
            }
            let Some(b) = buckets
                .get_mut(self.whole)
                .filter(|b| shape.has_newer(b.idx))
            else {
                break;
            };
            let floor = match b.folded_floor {
                Some(f) => f,
                None => {
                    let f = b.summary.floor();
                    b.folded_floor = Some(f);
                    self.floors += i128::from(f);
                    f
                }
            };
            let (member, count) = b.summary.entry(b.done);
            self.bump(member, hash(member), i128::from(count - floor));
            b.done += 1;
            self.summed += 1;
            if b.done == b.summary.len() {
                self.whole += 1;
            }
            done += 1;
        }
        done
    }

    /// A bucket inserted at `pos` of the window (late, or the clock's): folded
    /// at once (it holds one counter) when it lands among the folded ones.
    pub fn inserted(&mut self, buckets: &mut Buckets, pos: usize) {
        let among = pos < self.whole
            || (pos == self.whole
                && buckets
                    .get(pos + 1)
                    .is_some_and(|b| b.folded_floor.is_some()));
        if !among {
            return;
        }
        let b = &mut buckets[pos];
        let floor = b.summary.floor();
        b.folded_floor = Some(floor);
        self.floors += i128::from(floor);
        let n = b.summary.len();
        for s in 0..n {
            let (m, c) = b.summary.entry(s);
            self.bump(m, hash(m), i128::from(c - floor));
        }
        b.done = n;
        self.summed += n;
        self.whole += 1;
    }

    /// Runs `change` on `bucket`'s summary, which changes slot `slot` only
    /// (a count, a member evicted for another, or a new slot) and maybe the
    /// floor, keeping the sums: the slot's excess out before and back after,
    /// the folded slots fixed when the floor moved. Nothing changes on an
    /// error.
    pub fn change<T, E>(
        &mut self,
        bucket: &mut Bucket,
        slot: usize,
        change: impl FnOnce(&mut Summary) -> Result<T, E>,
    ) -> Result<T, E> {
        let Some(floor) = bucket.folded_floor else {
            return change(&mut bucket.summary);
        };
        let (done, len) = (bucket.done, bucket.summary.len());
        let summed = |b: &Bucket, f: i64| {
            let (m, c) = b.summary.entry(slot);
            (m.to_vec(), i128::from(c - f))
        };
        let before = (slot < done).then(|| summed(bucket, floor));
        if let Some((m, delta)) = &before {
            self.bump(m, hash(m), -delta);
        }
        let out = match change(&mut bucket.summary) {
            Ok(out) => out,
            Err(e) => {
                if let Some((m, delta)) = &before {
                    self.bump(m, hash(m), *delta);
                }
                return Err(e);
            }
        };
        let new_floor = bucket.summary.floor();
        if new_floor != floor {
            let moved = i128::from(new_floor - floor);
            for s in (0..done).filter(|&s| s != slot) {
                let m = bucket.summary.entry(s).0;
                self.bump(m, hash(m), -moved);
            }
            self.floors += moved;
            bucket.folded_floor = Some(new_floor);
        }
        // A new slot of a bucket folded whole is folded at once.
        let pushed = slot == len && bucket.summary.len() > len && done == len;
        if pushed {
            bucket.done += 1;
            self.summed += 1;
        }
        if slot < done || pushed {
            let (m, delta) = summed(bucket, new_floor);
            self.bump(&m, hash(&m), delta);
        }
        Ok(out)
    }

    /// The window's first `gone` buckets left it: their floors out now,
    /// their summed counters piecewise; or, when more would leave than stay
    /// summed, every sum dropped and the staying `buckets` to fold again
    /// (or not: below half of `FOLD_FROM` buckets). What is freed (the
    /// summaries no longer needed, the buckets' boxes) goes to the
    /// background dropper in one piece.
    pub fn left(&mut self, mut gone: Buckets, buckets: &mut Buckets) {
        let mut free = Vec::new();
        for b in gone.iter_mut() {
            self.whole = self.whole.saturating_sub(1);
            let summary = std::mem::take(&mut b.summary);
            let Some(floor) = b.folded_floor else {
                free.push(summary);
                continue;
            };
            self.floors -= i128::from(floor);
            self.summed -= b.done;
            if b.done == 0 {
                free.push(summary);
                continue;
            }
            self.leaving_summed += b.done;
            self.leaving.push_back(Leaving {
                summary,
                floor,
                next: 0,
                end: b.done,
            });
        }
        let few = buckets.len() < FOLD_FROM / 2 && self.started();
        if self.leaving_summed > self.summed || few {
            for b in buckets.range_mut(..(self.whole + 1).min(buckets.len())) {
                (b.folded_floor, b.done) = (None, 0);
            }
            free.extend(self.leaving.drain(..).map(|l| l.summary));
            let old = std::mem::take(self);
            let bytes = old.heap_bytes();
            dispose_value(old, bytes);
        }
        let bytes = free.iter().map(Summary::heap_bytes).sum::<usize>()
            + gone.len() * std::mem::size_of::<Bucket>();
        dispose_value((free, gone), bytes);
    }

    /// Every bucket but `kept`'s (at most one) left the window: `gone`
    /// (holding `counters`) and every sum dropped in one piece, off the main
    /// thread, and the kept bucket to fold again. O(1): `gone` is not
    /// looked at.
    pub fn all_left(&mut self, gone: Buckets, counters: usize, kept: &mut Buckets) {
        debug_assert!(kept.len() <= 1);
        for b in kept.iter_mut() {
            (b.folded_floor, b.done) = (None, 0);
        }
        let old = std::mem::take(self);
        // About 40 bytes a counter and its bucket's own (`summary.rs`).
        let bytes = old.heap_bytes() + counters * 40 + gone.len() * std::mem::size_of::<Bucket>();
        dispose_value((gone, old), bytes);
    }

    /// Heap bytes held: the sums and the leaving buckets.
    pub fn heap_bytes(&self) -> usize {
        self.excess.allocation_size()
            + self.name_bytes
            + self.leaving.capacity() * std::mem::size_of::<Leaving>()
            + self
                .leaving
                .iter()
                .map(|l| l.summary.heap_bytes())
                .sum::<usize>()
    }

    /// Entries held (members with an excess).
    pub fn len(&self) -> usize {
        self.excess.len()
    }

    /// Offers the table (and its members' blocks) and the leaving buckets'
    /// blocks to a defrag pass.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.excess.defrag_with(pass, |e, m| m.slice(&mut e.0));
        for l in self.leaving.iter_mut() {
            pass.work(|m| l.summary.defrag(m));
        }
    }
}

#[cfg(test)]
impl Folded {
    /// Buckets folded whole, slots summed, buckets leaving.
    pub fn progress(&self) -> (usize, usize, usize) {
        (self.whole, self.summed, self.leaving.len())
    }

    /// Every sum recomputed from the buckets' state.
    pub fn check(&self, buckets: &Buckets) {
        use hashbrown::HashMap;
        let mut want: HashMap<Vec<u8>, i128> = HashMap::new();
        let (mut floors, mut summed) = (0i128, 0usize);
        for (pos, b) in buckets.iter().enumerate() {
            assert_eq!(
                pos < self.whole,
                b.whole(),
                "bucket {pos} of whole {}",
                self.whole
            );
            match b.folded_floor {
                None => assert_eq!(b.done, 0),
                Some(f) => {
                    assert!(pos <= self.whole, "a folded bucket past the frontier");
                    assert_eq!(f, b.summary.floor());
                    floors += i128::from(f);
                    summed += b.done;
                    for s in 0..b.done {
                        let (m, c) = b.summary.entry(s);
                        *want.entry(m.to_vec()).or_default() += i128::from(c - f);
                    }
                }
            }
        }
        for l in &self.leaving {
            for s in l.next..l.end {
                let (m, c) = l.summary.entry(s);
                *want.entry(m.to_vec()).or_default() += i128::from(c - l.floor);
            }
        }
        want.retain(|_, v| *v != 0);
        assert_eq!((self.floors, self.summed), (floors, summed));
        assert_eq!(self.excess.len(), want.len());
        for (m, v) in &want {
            let got = self.excess.find(hash(m), |e| *e.0 == **m).map(|e| e.1);
            assert_eq!(got, Some(*v));
        }
        let names: usize = want.keys().map(Vec::len).sum();
        assert_eq!(self.name_bytes, names);
    }
}
