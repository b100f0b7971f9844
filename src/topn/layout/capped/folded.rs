//! What makes a capped key's write cost O(log CAPACITY) whatever its number of
//! buckets, and whatever number of them leave at once: the buckets counted by
//! segment (each `SEGMENT` bucket indexes: their counts and counters summed),
//! and the sealed buckets' counts summed per segment, so a write's reply (the
//! member's count over the window) looks up one table a segment and a few
//! buckets instead of every bucket, and buckets leaving take whole segments
//! out at once. The sums are derived state: rebuilt after a load, never
//! encoded, no answer depends on how far they got. Pure Rust, no FFI.
//!
//! A member's count over the window is `sum(present ? count : floor)` over its
//! buckets. Over a set of *folded* buckets that is `floors + excess[member]`:
//! `floors` sums their floors, `excess[member]` their `count - floor` where
//! the member is present (never negative: a floor is a smallest count; an entry
//! at 0 is dropped). So a reply is that, summed over the segments, plus the
//! unfolded buckets looked up directly.
//!
//! - Buckets fold oldest first, a counter a unit of work ([`Folded::step`]: a
//!   bounded share on each write, the rest by the upkeep timer), once sealed
//!   (older than the clock's bucket, which takes the writes), on keys of
//!   `FOLD_FROM` (32) buckets in use or more: fewer are looked up directly. The window's
//!   first `whole` buckets are folded whole; the next may be folded in part
//!   (its first `done` slots; slots are stable, an eviction reuses its slot);
//!   the rest is unfolded. So a write looks up the buckets from `whole` on:
//!   the clock's and the ones not folded yet, one or two once upkeep keeps up.
//! - Buckets leave the window oldest first. A segment all of whose buckets
//!   left goes whole (its table freed off the main thread): O(1), however
//!   many buckets it held. Of the segment the window now starts in, the
//!   buckets that left (fewer than `SEGMENT`) take their floors out at once
//!   and their counters piecewise (`leaving`, looked up until done, to take
//!   out what is still in). So a clock moved past most of a long window costs
//!   a write O(segments + SEGMENT) lookups, and the staying buckets stay
//!   folded.
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

/// Bucket indexes a segment spans: a reply looks up a table a segment (49
/// at `WINDOW 100000`), and a move of the clock handles fewer buckets than
/// this one by one (and looks up fewer leaving ones until they are out).
/// Keys of up to 2,048 buckets have one or two segments. Tests use segments
/// of a few buckets, so that small windows span several.
#[cfg(not(test))]
pub const SEGMENT: i64 = 2048;
#[cfg(test)]
pub const SEGMENT: i64 = 4;

/// The segment of bucket `idx`.
fn segment_of(idx: i64) -> i64 {
    idx.div_euclid(SEGMENT)
}

/// The window's buckets, ascending. Boxed, so that the deque's growth, or a bucket put in its
/// middle, moves pointers (8 bytes a bucket), never the buckets.
pub type Buckets = VecDeque<Box<Bucket>>;

/// A bucket of the window and how far it is folded.
#[derive(Clone, Debug)]
pub struct Bucket {
    pub idx: i64,
    pub summary: Summary,
    /// The floor counted in its segment's `floors`, once folding began:
    /// always the summary's floor (a move fixes the folded counters at once).
    folded_floor: Option<i64>,
    /// Slots summed into its segment's `excess` (the first ones).
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

/// A bucket that left the window with counters still summed in segment
/// `segment`: slots `next..end` are in its `excess` with `count - floor`.
#[derive(Clone, Debug)]
struct Leaving {
    segment: i64,
    summary: Summary,
    floor: i64,
    next: usize,
    end: usize,
}

/// A member's summed `count - floor` over the folded buckets holding it.
type Excess = (Box<[u8]>, i128);

fn excess_hash(e: &Excess) -> u64 {
    hash(&e.0)
}

/// The buckets of one segment: what they count, and the sums of those folded.
#[derive(Clone, Debug, Default)]
struct Segment {
    key: i64,
    /// The counts of its buckets summed, and their counters (every bucket).
    total: i128,
    counters: usize,
    /// Its folded buckets' floors summed.
    floors: i128,
    excess: Table<Excess>,
    /// Bytes of the members in `excess`.
    name_bytes: usize,
    /// Slots of its buckets in the window summed into `excess`.
    summed: usize,
}

impl Segment {
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

    /// Its sums dropped (the tallies kept); returns the table.
    fn unfold(&mut self) -> Table<Excess> {
        (self.floors, self.name_bytes, self.summed) = (0, 0, 0);
        std::mem::take(&mut self.excess)
    }

    fn heap_bytes(&self) -> usize {
        self.excess.allocation_size() + self.name_bytes
    }
}

#[derive(Clone, Debug, Default)]
pub struct Folded {
    /// The segments that hold buckets of the window, ascending.
    segments: VecDeque<Segment>,
    /// Every segment's `total` and `counters` summed.
    total: i128,
    counters: usize,
    /// The window's first buckets folded whole.
    whole: usize,
    /// Slots of the window's buckets summed (every segment's `summed`).
    summed: usize,
    leaving: VecDeque<Leaving>,
    /// Slots of `leaving` still summed.
    leaving_summed: usize,
}

impl Folded {
    /// Where segment `key` is or would go.
    fn place(&self, key: i64) -> usize {
        match self.segments.back() {
            Some(s) if s.key == key => self.segments.len() - 1,
            Some(s) if s.key < key => self.segments.len(),
            _ => self.segments.partition_point(|s| s.key < key),
        }
    }

    /// The segment of bucket `idx`, made when it has none yet.
    fn segment_mut(&mut self, idx: i64) -> &mut Segment {
        let key = segment_of(idx);
        let pos = self.place(key);
        if self.segments.get(pos).is_none_or(|s| s.key != key) {
            // Grown from one (a key of up to 2,048 buckets has one or two).
            let len = self.segments.len();
            if len == self.segments.capacity() {
                self.segments.reserve_exact(len.max(1));
            }
            let segment = Segment {
                key,
                ..Segment::default()
            };
            self.segments.insert(pos, segment);
        }
        &mut self.segments[pos]
    }

    /// Bucket `idx` gained `total` in counts and `counters` counters.
    pub fn tally(&mut self, idx: i64, total: i128, counters: usize) {
        let s = self.segment_mut(idx);
        s.total += total;
        s.counters += counters;
        self.total += total;
        self.counters += counters;
    }

    /// The window's counts summed: any count over any window is at most it.
    pub fn total(&self) -> i128 {
        self.total
    }

    /// The window's counters.
    pub fn counters(&self) -> usize {
        self.counters
    }

    /// `member`'s count over the window's `buckets` (`h`: its hash).
    pub fn count(&self, buckets: &Buckets, member: &[u8], h: u64) -> i128 {
        let mut count = 0;
        for s in &self.segments {
            count += s.floors;
            if let Some(e) = s.excess.find(h, |e| *e.0 == *member) {
                count += e.1;
            }
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
        self.segments.iter().map(|s| s.floors).sum::<i128>()
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
                    let key = l.segment;
                    let pos = self.place(key);
                    self.segments[pos].bump(&member, hash(&member), -delta);
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
            let pos = self.place(segment_of(b.idx));
            let segment = &mut self.segments[pos];
            let floor = match b.folded_floor {
                Some(f) => f,
                None => {
                    let f = b.summary.floor();
                    b.folded_floor = Some(f);
                    segment.floors += i128::from(f);
                    f
                }
            };
            let (member, count) = b.summary.entry(b.done);
            segment.bump(member, hash(member), i128::from(count - floor));
            b.done += 1;
            segment.summed += 1;
            self.summed += 1;
            if b.done == b.summary.len() {
                self.whole += 1;
            }
            done += 1;
        }
        done
    }

    /// A bucket inserted at `pos` of the window (late, or the clock's), once
    /// tallied: folded at once (it holds one counter) when it lands among the
    /// folded ones.
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
        let segment = self.segment_mut(b.idx);
        let floor = b.summary.floor();
        b.folded_floor = Some(floor);
        segment.floors += i128::from(floor);
        let n = b.summary.len();
        for s in 0..n {
            let (m, c) = b.summary.entry(s);
            segment.bump(m, hash(m), i128::from(c - floor));
        }
        b.done = n;
        segment.summed += n;
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
        let pos = self.place(segment_of(bucket.idx));
        let segment = &mut self.segments[pos];
        let (done, len) = (bucket.done, bucket.summary.len());
        let summed = |b: &Bucket, f: i64| {
            let (m, c) = b.summary.entry(slot);
            (m.to_vec(), i128::from(c - f))
        };
        let before = (slot < done).then(|| summed(bucket, floor));
        if let Some((m, delta)) = &before {
            segment.bump(m, hash(m), -delta);
        }
        let out = match change(&mut bucket.summary) {
            Ok(out) => out,
            Err(e) => {
                if let Some((m, delta)) = &before {
                    segment.bump(m, hash(m), *delta);
                }
                return Err(e);
            }
        };
        let new_floor = bucket.summary.floor();
        if new_floor != floor {
            let moved = i128::from(new_floor - floor);
            for s in (0..done).filter(|&s| s != slot) {
                let m = bucket.summary.entry(s).0;
                segment.bump(m, hash(m), -moved);
            }
            segment.floors += moved;
            bucket.folded_floor = Some(new_floor);
        }
        // A new slot of a bucket folded whole is folded at once.
        let pushed = slot == len && bucket.summary.len() > len && done == len;
        if pushed {
            bucket.done += 1;
            segment.summed += 1;
            self.summed += 1;
        }
        if slot < done || pushed {
            let (m, delta) = summed(bucket, new_floor);
            segment.bump(&m, hash(&m), delta);
        }
        Ok(out)
    }

    /// The window's first buckets, `gone`, left it; `buckets` (at least one)
    /// stay. The segments they emptied go whole, off the main thread; of the
    /// segment the window now starts in, the buckets that left (fewer than
    /// `SEGMENT`) take their tallies and floors out now and their summed
    /// counters piecewise. Below half of `FOLD_FROM` buckets every sum is
    /// dropped. O(segments + SEGMENT), whatever the number of buckets gone.
    pub fn left(&mut self, mut gone: Buckets, buckets: &mut Buckets) {
        self.whole = self.whole.saturating_sub(gone.len());
        let counters = self.counters;
        let first = buckets.front().map_or(i64::MAX, |b| segment_of(b.idx));
        let mut emptied = Vec::new();
        while let Some(s) = self.segments.front().filter(|s| s.key < first) {
            (self.total, self.counters) = (self.total - s.total, self.counters - s.counters);
            self.summed -= s.summed;
            emptied.extend(self.segments.pop_front());
        }
        let (stay, out): (VecDeque<Leaving>, VecDeque<Leaving>) =
            (self.leaving.drain(..)).partition(|l| l.segment >= first);
        self.leaving = stay;
        self.leaving_summed -= out.iter().map(|l| l.end - l.next).sum::<usize>();
        let split = gone.partition_point(|b| segment_of(b.idx) < first);
        for b in gone.range_mut(split..) {
            let segment = &mut self.segments[0];
            let (total, counters) = (b.summary.sum(), b.summary.len());
            (segment.total, segment.counters) =
                (segment.total - total, segment.counters - counters);
            (self.total, self.counters) = (self.total - total, self.counters - counters);
            let Some(floor) = b.folded_floor else {
                continue;
            };
            segment.floors -= i128::from(floor);
            segment.summed -= b.done;
            self.summed -= b.done;
            if b.done > 0 {
                self.leaving_summed += b.done;
                self.leaving.push_back(Leaving {
                    segment: first,
                    summary: std::mem::take(&mut b.summary),
                    floor,
                    next: 0,
                    end: b.done,
                });
            }
        }
        if buckets.len() < FOLD_FROM / 2 && self.started() {
            self.unfold(buckets);
        }
        // About 40 bytes a counter and its bucket's own (`summary.rs`).
        let bytes = (counters - self.counters) * 40
            + gone.len() * std::mem::size_of::<Bucket>()
            + emptied.iter().map(Segment::heap_bytes).sum::<usize>();
        dispose_value((gone, emptied, out), bytes);
    }

    /// Every sum dropped, off the main thread (the tallies kept), and the
    /// window's `buckets` to fold again.
    fn unfold(&mut self, buckets: &mut Buckets) {
        for b in buckets.range_mut(..(self.whole + 1).min(buckets.len())) {
            (b.folded_floor, b.done) = (None, 0);
        }
        let tables: Vec<_> = self.segments.iter_mut().map(Segment::unfold).collect();
        let leaving: Vec<_> = self.leaving.drain(..).map(|l| l.summary).collect();
        (self.whole, self.summed, self.leaving_summed) = (0, 0, 0);
        let bytes = leaving.iter().map(Summary::heap_bytes).sum::<usize>()
            + tables.iter().map(Table::allocation_size).sum::<usize>();
        dispose_value((tables, leaving), bytes);
    }

    /// Every bucket but `kept`'s (at most one) left the window: `gone` and
    /// every sum dropped in one piece, off the main thread, and the kept
    /// bucket tallied, to fold again. O(1): `gone` is not looked at.
    pub fn all_left(&mut self, gone: Buckets, kept: &mut Buckets) {
        debug_assert!(kept.len() <= 1);
        for b in kept.iter_mut() {
            (b.folded_floor, b.done) = (None, 0);
        }
        let old = std::mem::take(self);
        for b in kept.iter() {
            self.tally(b.idx, b.summary.sum(), b.summary.len());
        }
        // About 40 bytes a counter and its bucket's own (`summary.rs`).
        let bytes = old.heap_bytes()
            + (old.counters - self.counters) * 40
            + gone.len() * std::mem::size_of::<Bucket>();
        dispose_value((gone, old), bytes);
    }

    /// Heap bytes held: the segments, their sums and the leaving buckets.
    pub fn heap_bytes(&self) -> usize {
        self.segments.capacity() * std::mem::size_of::<Segment>()
            + self.segments.iter().map(Segment::heap_bytes).sum::<usize>()
            + self.leaving.capacity() * std::mem::size_of::<Leaving>()
            + self
                .leaving
                .iter()
                .map(|l| l.summary.heap_bytes())
                .sum::<usize>()
    }

    /// Entries held (members with an excess, once a segment).
    pub fn len(&self) -> usize {
        self.segments.iter().map(|s| s.excess.len()).sum()
    }

    /// Offers the tables (and their members' blocks) and the leaving
    /// buckets' blocks to a defrag pass.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        for s in self.segments.iter_mut() {
            s.excess.defrag_with(pass, |e, m| m.slice(&mut e.0));
        }
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

    /// Every tally and sum recomputed from the buckets' state.
    pub fn check(&self, buckets: &Buckets) {
        use hashbrown::HashMap;
        type Want = (i128, usize, i128, usize, HashMap<Vec<u8>, i128>);
        let mut want: HashMap<i64, Want> = HashMap::new();
        let mut summed = 0;
        for (pos, b) in buckets.iter().enumerate() {
            assert_eq!(
                pos < self.whole,
                b.whole(),
                "bucket {pos} of whole {}",
                self.whole
            );
            let w = want.entry(segment_of(b.idx)).or_default();
            w.0 += b.summary.sum();
            w.1 += b.summary.len();
            match b.folded_floor {
                None => assert_eq!(b.done, 0),
                Some(f) => {
                    assert!(pos <= self.whole, "a folded bucket past the frontier");
                    assert_eq!(f, b.summary.floor());
                    w.2 += i128::from(f);
                    w.3 += b.done;
                    summed += b.done;
                    for s in 0..b.done {
                        let (m, c) = b.summary.entry(s);
                        *w.4.entry(m.to_vec()).or_default() += i128::from(c - f);
                    }
                }
            }
        }
        for l in &self.leaving {
            let w = want
                .get_mut(&l.segment)
                .expect("a leaving bucket's segment");
            for s in l.next..l.end {
                let (m, c) = l.summary.entry(s);
                *w.4.entry(m.to_vec()).or_default() += i128::from(c - l.floor);
            }
        }
        assert_eq!(self.summed, summed);
        assert_eq!(self.segments.len(), want.len(), "a segment without buckets");
        assert!(self
            .segments
            .iter()
            .zip(self.segments.iter().skip(1))
            .all(|(a, b)| a.key < b.key));
        let (mut total, mut counters) = (0, 0);
        for s in &self.segments {
            let w = want.get_mut(&s.key).expect("a segment of the window");
            w.4.retain(|_, v| *v != 0);
            assert_eq!(
                (s.total, s.counters, s.floors, s.summed),
                (w.0, w.1, w.2, w.3)
            );
            assert_eq!(s.excess.len(), w.4.len());
            for (m, v) in &w.4 {
                let got = s.excess.find(hash(m), |e| *e.0 == **m).map(|e| e.1);
                assert_eq!(got, Some(*v));
            }
            let names: usize = w.4.keys().map(Vec::len).sum();
            assert_eq!(s.name_bytes, names);
            total += s.total;
            counters += s.counters;
        }
        assert_eq!((self.total, self.counters), (total, counters));
    }
}
