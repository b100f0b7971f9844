//! A TOPN key with `CAPACITY m`: each bucket keeps at most m counters, a
//! Space-Saving summary (Metwally et al.) with deterministic eviction, so the
//! memory of a key is bounded by `WINDOW x m` counters whatever the number of
//! distinct members, and every count comes with its bound. Pure Rust, no FFI.
//!
//! - A bucket's counter is `(count, error)`: the member's true count in the
//!   bucket lies in `[count - error, count]`. A member new to a bucket with
//!   room gets `(by, 0)`; at a full bucket it takes the place of the smallest
//!   counter (the smallest count, ties by the smallest member, so every
//!   server evicts the same one and replicas need no effects) with
//!   `(min + by, min)`: what the evicted counter may have held.
//! - A member absent from a bucket counted at most that bucket's *floor*: its
//!   smallest count once it is full (and has evicted), 0 before.
//! - A read sums over its buckets: `count = sum(present ? count : floor)`,
//!   `error = sum(present ? error : floor)`, so the true count over the read
//!   lies in `[count - error, count]` (the summaries merge, the bounds add).
//!   While no bucket of the read has evicted, every error is 0: exact.
//! - A top lists the n members with the highest `count - error` (the least
//!   each surely counted), shown by count. By count alone, a member absent
//!   from most buckets (a new leader of the last hours) is counted each
//!   one's floor and passes members truly ahead of it, counted nearly
//!   exactly; while exact, both orders agree. O(counters of the read).
//! - Counts only grow: `BY` must be positive (Space-Saving's bounds need it).
//!
//! Costs. A write: one lookup in its bucket, O(log m) to keep the bucket's
//! heap, and its reply, the member's count over the window: from the
//! newest bucket's slot, which keeps its member's sum over the other
//! buckets (`older.rs`), once summed: O(1); summing it is one lookup a
//! bucket (or the folded sums, `folded.rs`, from 32 buckets), again after an
//! eviction in the newest bucket or any write to another one, unless a
//! filter of the older buckets' members says none holds it (their floors
//! then). A batch (`TOPN.INCRBY`) finds its bucket once and sums each
//! distinct member once.
//! Memory: at most `WINDOW x m` counters of about 40 bytes and their
//! members' bytes; a bucket gives back its spare room when a newer one
//! starts; `older` is 8 bytes a counter of the newest bucket and half a
//! byte one of the others.

use hashbrown::{HashMap, HashTable};
use smallvec::SmallVec;
use std::collections::VecDeque;

use crate::topn::encoding::Reader;
use crate::topn::error::Error;
use crate::topn::error::Overflow;
use crate::topn::error::{MAX_CAPACITY, MAX_NAME_BYTES, MAX_WINDOW};
use crate::topn::parse::Pair;
use crate::topn::select::clamp_i64;
use crate::topn::shape::{Landing, Shape};
use crate::topn::window::{Counted, Effects, Query, Row, Upkept, Window};
use folded::{Bucket, Buckets, Folded, FOLD_PER_WRITE};
use older::Older;
use summary::{hash, Summary};

mod folded;
#[cfg(test)]
mod folded_tests;
mod older;
#[cfg(test)]
mod recall_tests;
mod summary;
mod trial;
#[cfg(test)]
mod trial_tests;
use crate::tuples::defrag::{Mover, Pass};

const _: () = assert!(MAX_CAPACITY as usize <= summary::MAX_COUNTERS);

/// The first byte of a capped key's encoding (an exact key's are 1, 2 and 4:
/// `topn/encoding.rs`).
pub const ENCODING_VERSION_CAPPED: u8 = 3;

/// A bucket's counters as written: `(bucket, evicted, [(member, count, error)])`.
pub type BucketCounters<'a> = (i64, bool, Vec<(&'a [u8], i64, i64)>);

#[derive(Clone, Debug)]
pub struct Capped {
    shape: Shape,
    capacity: u32,
    /// The window's buckets, ascending (boxed: `folded::Buckets`).
    buckets: Buckets,
    /// The buckets' counts and counters by segment, and the sealed buckets'
    /// counts summed, for writes (derived, `folded.rs`).
    folded: Folded,
    /// For each slot of the newest bucket, its member's count over the
    /// other buckets of the window, and which members those may hold
    /// (`older.rs`): a write's reply is then one lookup, whatever the
    /// number of buckets, and an evicting member's usually a few.
    older: Older,
}

/// What `member` counts in a bucket: its counter, else the bucket's floor.
fn part(s: &Summary, member: &[u8], h: u64) -> i64 {
    s.get(member, h).map_or(s.floor(), |(count, _)| count)
}

/// A batch's members' hashes, each with the newest bucket's slot counting
/// it when known: on the stack for up to 16 pairs.
type Hashed = SmallVec<[(u64, Option<usize>); 16]>;

/// Equal when they hold the same counters, whatever their derived state.
impl PartialEq for Capped {
    fn eq(&self, other: &Capped) -> bool {
        let content = |c: &Capped| (c.shape, c.capacity, c.folded.total(), c.buckets.len());
        content(self) == content(other)
            && (self.buckets.iter().zip(&other.buckets))
                .all(|(a, b)| a.idx == b.idx && a.summary == b.summary)
    }
}

impl Eq for Capped {}

impl Capped {
    pub fn new(shape: Shape, capacity: u32) -> Capped {
        Capped {
            shape,
            capacity: capacity.clamp(1, MAX_CAPACITY),
            buckets: VecDeque::new(),
            folded: Folded::default(),
            older: Older::default(),
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Adds `by` (>= 1) at `at_ms`; returns the member's count over the
    /// window ending at the clock. An event older than that window changes
    /// nothing; buckets leave as the clock moves (at most WINDOW x CAPACITY
    /// counters freed at once). O(log CAPACITY) and a bounded share of the
    /// folding (`folded.rs`), whatever the number of buckets. Also returns the buckets that
    /// left.
    pub fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<(i64, Effects), Overflow> {
        let Some(at) = self.shape.landing(at_ms) else {
            return Ok((self.window_count(member), Effects::default()));
        };
        let (b, h) = (at.bucket, hash(member));
        // Checked before anything changes. Any count is at most the counts'
        // sum, so only near the range's end is the member's count over the
        // new window looked up (the folded sums: O(1) once folded).
        if self.folded.total() + i128::from(by) > i128::from(i64::MAX) {
            let count = self.count_over(member, h, at.clock);
            i64::try_from(count + i128::from(by)).map_err(|_| Overflow)?;
        }
        let found = self.bucket(b).and_then(|x| x.summary.find(member, h));
        let (slot, fx) = self.add(member, h, found, by, at)?;
        let newest = self.buckets.back().is_some_and(|x| x.idx == b);
        let count = self.reply_count(member, h, newest.then_some(slot));
        Ok((clamp_i64(count), fx))
    }

    /// The member's count over the window at the clock, for a write's
    /// reply: from `older` when the newest bucket holds the member and its
    /// slot is summed (no lookup when `slot`, the newest bucket's slot
    /// counting the member, is known), else from the folded sums (and then
    /// kept in `older`).
    fn reply_count(&mut self, member: &[u8], h: u64, slot: Option<usize>) -> i128 {
        let Some(newest) = self.buckets.back().map(|x| &x.summary) else {
            return 0;
        };
        debug_assert!(slot.is_none_or(|s| newest.entry(s).0 == member));
        let held = slot.or_else(|| newest.find(member, h));
        let Some(s) = held else {
            return self.folded.count(&self.buckets, member, h);
        };
        let own = i128::from(newest.counter(s).0);
        if let Some(older) = self.older.sum(s) {
            return i128::from(older) + own;
        }
        // Unfolded, the buckets would be looked up one by one; a member
        // none of the older ones holds is counted their floors there.
        let unfolded = !self.folded.started();
        let older = if unfolded && self.older.surely_absent(&self.buckets, h) {
            let older = self.buckets.range(..self.buckets.len() - 1);
            older.map(|b| i128::from(b.summary.floor())).sum()
        } else {
            self.folded.count(&self.buckets, member, h) - own
        };
        if let Ok(sum) = i64::try_from(older) {
            self.older.keep(s, sum, self.capacity as usize);
        }
        older + own
    }

    /// The member's count over the window ending at the clock, from the
    /// folded sums: O(1) and the buckets not folded yet.
    pub fn window_count(&self, member: &[u8]) -> i64 {
        match self.shape.clock {
            Some(_) => clamp_i64(self.folded.count(&self.buckets, member, hash(member))),
            None => 0,
        }
    }

    /// Where bucket `b` is or would go in the buckets (ascending): the
    /// newest, which takes the writes, tried first.
    fn place(&self, b: i64) -> usize {
        match self.buckets.back() {
            Some(x) if x.idx == b => self.buckets.len() - 1,
            Some(x) if x.idx < b => self.buckets.len(),
            _ => self.buckets.partition_point(|x| x.idx < b),
        }
    }

    fn bucket(&self, b: i64) -> Option<&Bucket> {
        self.buckets
            .get(self.place(b))
            .filter(|x| x.idx == b)
            .map(|x| &**x)
    }

    /// Adds `by` to `member`'s counter in the bucket an event lands in
    /// (`found`: its slot there), the clock moving to it when it is newer and
    /// the buckets that leave the window dropped, then folds a bounded share;
    /// returns the slot that counts the member and the buckets that left.
    /// Refused, changing nothing, when the counter would overflow.
    fn add(
        &mut self,
        member: &[u8],
        h: u64,
        found: Option<usize>,
        by: i64,
        at: Landing,
    ) -> Result<(usize, Effects), Overflow> {
        let b = at.bucket;
        let pos = self.place(b);
        let slot = match self.buckets.get(pos) {
            Some(bucket) if bucket.idx == b => self.add_in(pos, member, h, found, by)?,
            _ => {
                let mut s = Summary::default();
                s.add(member, h, None, by, self.capacity as usize)?;
                self.older.forget();
                self.insert_bucket(pos, Box::new(Bucket::new(b, s)));
                self.folded.tally(b, i128::from(by), 1);
                self.folded.inserted(&mut self.buckets, pos);
                0
            }
        };
        self.shape.clock = Some(at.clock);
        let fx = self.retire();
        (self.folded).step(&mut self.buckets, &self.shape, FOLD_PER_WRITE);
        Ok((slot, fx))
    }

    /// Adds `by` to `member`'s counter in the bucket at `pos` (`found`: its
    /// slot there); returns the slot that counts the member. Refused,
    /// changing nothing, on an overflow.
    fn add_in(
        &mut self,
        pos: usize,
        member: &[u8],
        h: u64,
        found: Option<usize>,
        by: i64,
    ) -> Result<usize, Overflow> {
        let capacity = self.capacity as usize;
        let newest = pos + 1 == self.buckets.len();
        let bucket = &mut self.buckets[pos];
        let (slot, len) = (bucket.summary.target(found, capacity), bucket.summary.len());
        (self.older).changing(newest, found.is_none().then_some(slot), h);
        (self.folded).change(bucket, slot, |s| s.add(member, h, found, by, capacity))?;
        let added = bucket.summary.len() - len;
        self.folded.tally(bucket.idx, i128::from(by), added);
        Ok(slot)
    }

    /// Inserts a bucket at `pos` (before the folded sums learn of it): the
    /// buckets' vector grows at most to WINDOW + 1 (a bucket joins before
    /// the oldest leaves), and the bucket it makes no longer the newest
    /// gives back its spare bytes (only late events write to it now).
    fn insert_bucket(&mut self, pos: usize, bucket: Box<Bucket>) {
        let len = self.buckets.len();
        if len == self.buckets.capacity() {
            let most = self.shape.window as usize + 1;
            self.buckets
                .reserve_exact(len.max(4).min(most.saturating_sub(len)).max(1));
        }
        if pos == len && pos > 0 {
            self.buckets[pos - 1].summary.shrink();
        }
        self.buckets.insert(pos, bucket);
    }

    /// Applies `(increment, member)` pairs (each >= 1) all at `at_ms`, in
    /// order, as as many `incr`s would; returns each pair's member's count
    /// over the window after the call, each distinct member summed once,
    /// and the buckets that left. All or nothing: `Err(i)` when pair `i`
    /// would overflow, and then nothing changed.
    pub fn incr_all(&mut self, pairs: &[Pair], at_ms: i64) -> Result<(Vec<i64>, Effects), usize> {
        let Some(at) = self.shape.landing(at_ms) else {
            let counts = pairs.iter().map(|&(_, m)| self.window_count(m));
            return Ok((counts.collect(), Effects::default()));
        };
        let b = at.bucket;
        if !self.surely_fits(pairs, at_ms) {
            // Near the range of counts (or of a bucket's member bytes): each
            // pair tried on the bucket it writes, nothing changed or copied
            // (`trial.rs`), so a refusal changes nothing.
            let base = self.bucket(b).map(|x| &x.summary);
            trial::check(base, self.capacity as usize, pairs, |m, h| {
                let here = base.map_or(0, |s| part(s, m, h));
                self.count_over(m, h, at.clock) - i128::from(here)
            })?;
        }
        // No count can pass the range now: each pair is its bucket's add
        // alone. The first may move the clock; the others add to the same
        // bucket, found once, and fold their shares at the end.
        let mut hashed = Hashed::with_capacity(pairs.len());
        let (mut pos, mut fx) = (0, Effects::default());
        for (i, &(by, member)) in pairs.iter().enumerate() {
            let h = hash(member);
            let slot = if i == 0 {
                let found = self.bucket(b).and_then(|x| x.summary.find(member, h));
                let slot;
                (slot, fx) = self.add(member, h, found, by, at).map_err(|_| i)?;
                pos = self.place(b);
                slot
            } else {
                let summary = &self.buckets[pos].summary;
                let (found, len) = (summary.find(member, h), summary.len());
                let slot = self.add_in(pos, member, h, found, by).map_err(|_| i)?;
                if found.is_none() && slot < len {
                    // An eviction: the slot no longer counts the earlier
                    // pairs' member it held.
                    (hashed.iter_mut().filter(|x| x.1 == Some(slot))).for_each(|x| x.1 = None);
                }
                slot
            };
            hashed.push((h, Some(slot)));
        }
        if pairs.len() > 1 {
            let share = FOLD_PER_WRITE.saturating_mul(pairs.len() - 1);
            self.folded.step(&mut self.buckets, &self.shape, share);
        }
        if pos + 1 != self.buckets.len() {
            // The slots are the newest bucket's only.
            hashed.iter_mut().for_each(|x| x.1 = None);
        }
        Ok((self.replies(pairs, &hashed), fx))
    }

    /// Each pair's member's count over the window, a member repeated in
    /// the call summed once (`hashed`: each member's hash, and the slot of
    /// the newest bucket that counted it when the call wrote there).
    fn replies(&mut self, pairs: &[Pair], hashed: &[(u64, Option<usize>)]) -> Vec<i64> {
        // Up to a few dozen pairs, a scan of the earlier ones finds a repeat
        // at less than a table's cost.
        const SCANNED: usize = 24;
        let mut seen: HashTable<usize> = HashTable::new();
        if pairs.len() > SCANNED {
            seen.reserve(pairs.len(), |&j| hashed[j].0);
        }
        let mut out: Vec<i64> = Vec::with_capacity(pairs.len());
        for (i, (&(_, member), &(h, slot))) in pairs.iter().zip(hashed).enumerate() {
            let same = |j: &usize| hashed[*j].0 == h && pairs[*j].1 == member;
            let first = match pairs.len() > SCANNED {
                false => (0..i).find(same),
                true => seen.find(h, same).copied(),
            };
            if let Some(j) = first {
                out.push(out[j]);
                continue;
            }
            if pairs.len() > SCANNED {
                seen.insert_unique(h, i, |&j| hashed[j].0);
            }
            out.push(clamp_i64(self.reply_count(member, h, slot)));
        }
        out
    }

    /// `member`'s count over the window ending at `clock` (the key's clock
    /// or a later one): the folded sums less the buckets that leave the
    /// window, or the ones that stay summed directly, when fewer.
    fn count_over(&self, member: &[u8], h: u64, clock: i64) -> i128 {
        let lo = self.shape.live_lo(clock);
        let leaving = self.buckets.partition_point(|x| x.idx < lo);
        let sum = |range: std::ops::Range<usize>| -> i128 {
            (self.buckets.range(range))
                .map(|x| i128::from(part(&x.summary, member, h)))
                .sum()
        };
        match leaving {
            0 => self.folded.count(&self.buckets, member, h),
            n if 2 * n >= self.buckets.len() => sum(n..self.buckets.len()),
            n => self.folded.count(&self.buckets, member, h) - sum(0..n),
        }
    }

    /// Whether no count can leave its range by `pairs` at `at_ms` (every
    /// count stays within the counts' sum) and the bucket's members fit.
    fn surely_fits(&self, pairs: &[Pair], at_ms: i64) -> bool {
        let added: i128 = pairs.iter().map(|&(by, _)| i128::from(by)).sum();
        let names: usize = pairs.iter().map(|(_, m)| m.len()).sum();
        let b = self.shape.bucket_of(at_ms);
        let held = self.bucket(b).map_or(0, |x| x.summary.name_bytes());
        self.folded.total() + added <= i128::from(i64::MAX) && held + names <= MAX_NAME_BYTES
    }

    fn read(&self, lo: i64, hi: i64) -> impl Iterator<Item = &Summary> + '_ {
        self.buckets
            .iter()
            .filter(move |x| x.idx >= lo && x.idx <= hi)
            .map(|x| &x.summary)
    }

    /// A member's count and error over buckets `lo..=hi`, summed directly
    /// (one lookup a bucket).
    fn sum_in_range(&self, member: &[u8], h: u64, lo: i64, hi: i64) -> (i128, i128) {
        let (mut count, mut error) = (0i128, 0i128);
        for s in self.read(lo, hi) {
            let (c, e) = s.get(member, h).unwrap_or((s.floor(), s.floor()));
            count += i128::from(c);
            error += i128::from(e);
        }
        (count, error)
    }

    fn count_in_range(&self, member: &[u8], lo: i64, hi: i64) -> Counted {
        let (count, error) = self.sum_in_range(member, hash(member), lo, hi);
        Counted {
            count: clamp_i64(count),
            error: clamp_i64(error),
        }
    }

    /// The count and error over the window at the clock, summed directly:
    /// the oracle of [`Capped::window_count`].
    #[cfg(test)]
    pub fn count_at_clock(&self, member: &[u8]) -> Counted {
        let Some(clock) = self.shape.clock else {
            return Counted { count: 0, error: 0 };
        };
        self.count_in_range(member, self.shape.live_lo(clock), clock)
    }

    /// A member's count over a read, and its error.
    pub fn count_of(&self, member: &[u8], q: &Query) -> Counted {
        self.shape
            .read_range(q.at_ms, q.last)
            .map_or(Counted { count: 0, error: 0 }, |(lo, hi)| {
                self.count_in_range(member, lo, hi)
            })
    }

    /// The `q.n` members with the highest counts less errors (the least each
    /// surely counted) over a read, ties by count, then member; listed by
    /// count descending, then member, each with its error (while exact,
    /// errors are 0: the `n` highest counts). Only
    /// members some bucket of the read holds are candidates: any other
    /// counted at most the floors' sum, which is every listed member's
    /// count at least.
    pub fn top_of(&self, q: &Query) -> Vec<(&[u8], Counted)> {
        let n = q.n;
        let Some((lo, hi)) = self.shape.read_range(q.at_ms, q.last) else {
            return Vec::new();
        };
        // Every candidate starts at the floors' sum; a bucket holding it adds
        // its counter less its floor. O(counters of the read).
        let floors: i128 = self.read(lo, hi).map(|s| i128::from(s.floor())).sum();
        let mut acc: HashMap<&[u8], (i128, i128)> = HashMap::new();
        for s in self.read(lo, hi) {
            let floor = i128::from(s.floor());
            for (m, c, e) in s.iter() {
                let a = acc.entry(m).or_insert((floors, floors));
                a.0 += i128::from(c) - floor;
                a.1 += i128::from(e) - floor;
            }
        }
        let mut rows: Vec<(&[u8], Counted)> = acc
            .into_iter()
            .map(|(m, (c, e))| {
                let b = Counted {
                    count: clamp_i64(c),
                    error: clamp_i64(e),
                };
                (m, b)
            })
            .collect();
        let order = |a: &(&[u8], Counted), b: &(&[u8], Counted)| {
            b.1.count.cmp(&a.1.count).then_with(|| a.0.cmp(b.0))
        };
        // The n listed are the surest: the highest counts less errors
        // (both at least 0), then by `order`. A member absent from many
        // buckets is counted every one's floor; chosen by `count` it would
        // pass members counted nearly exactly and truly ahead of it.
        let surest = |a: &(&[u8], Counted), b: &(&[u8], Counted)| {
            let sure = |r: &(&[u8], Counted)| r.1.count - r.1.error;
            sure(b).cmp(&sure(a)).then_with(|| order(a, b))
        };
        if rows.len() > n && n > 0 {
            rows.select_nth_unstable_by(n - 1, surest);
            rows.truncate(n);
        }
        rows.sort_by(order);
        rows.truncate(n);
        rows
    }

    /// The most any count of the window at the clock over-counts (the sum
    /// of the floors): 0 while the key is exact.
    pub fn bound(&self) -> i64 {
        clamp_i64(self.folded.floors(&self.buckets))
    }

    pub fn counters(&self) -> usize {
        self.folded.counters()
    }

    /// Every counter as `(bucket, member, count, error)`, by bucket then
    /// member, and whether each bucket evicted: what the encoding writes and
    /// the AOF rewrite replays.
    pub fn counters_by_bucket(&self) -> Vec<BucketCounters<'_>> {
        self.buckets
            .iter()
            .map(|x| {
                let mut list: Vec<(&[u8], i64, i64)> = x.summary.iter().collect();
                list.sort_unstable();
                (x.idx, x.summary.evicted, list)
            })
            .collect()
    }

    /// Sets a counter as an encoding or a rewrite holds it (`evicted`: the
    /// bucket's floor is its smallest count), the key's clock then at
    /// `clock` (a rewrite's counters move it; a decoded key's name its own).
    /// Returns the buckets that left the window. Refused, changing nothing,
    /// past the capacity or outside the window ending at `clock`, or with a
    /// clock going back.
    pub fn set_counter(
        &mut self,
        clock: i64,
        bucket: i64,
        member: &[u8],
        (count, error): (i64, i64),
        evicted: bool,
    ) -> Result<Effects, Error> {
        if count < 1 || error < 0 || error > count {
            return Err(Error::CounterRange);
        }
        let lo = self.shape.live_lo(clock);
        if bucket > clock || bucket < lo || self.shape.clock.is_some_and(|c| c > clock) {
            return Err(Error::CounterOutside);
        }
        let (capacity, counter) = (self.capacity as usize, (count, error));
        self.older.forget();
        let pos = self.buckets.partition_point(|x| x.idx < bucket);
        match self.buckets.get_mut(pos) {
            Some(x) if x.idx == bucket => {
                let (before, len) = (x.summary.sum(), x.summary.len());
                let found = x.summary.find(member, hash(member));
                let slot = found.unwrap_or(len);
                (self.folded).change(x, slot, |s| s.set(member, counter, evicted, capacity))?;
                let (total, added) = (x.summary.sum() - before, x.summary.len() - len);
                self.folded.tally(bucket, total, added);
            }
            _ => {
                let mut s = Summary::default();
                s.set(member, counter, evicted, capacity)?;
                let total = s.sum();
                self.insert_bucket(pos, Box::new(Bucket::new(bucket, s)));
                self.folded.tally(bucket, total, 1);
                self.folded.inserted(&mut self.buckets, pos);
            }
        }
        self.shape.clock = Some(clock);
        Ok(self.retire())
    }

    /// Entries the folded sums hold.
    #[cfg(test)]
    pub fn folded_entries(&self) -> usize {
        self.folded.len()
    }

    /// Offers every bucket's blocks to a defrag pass, a bucket a unit of work (at most
    /// `MAX_CAPACITY` counters), then the folded sums'.
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        for x in self.buckets.iter_mut() {
            pass.work(|m| {
                m.boxed(x);
                x.summary.defrag(m)
            });
        }
        self.folded.defrag(pass);
    }

    /// Drops the buckets the clock left behind (`Shape::stale_front`), not looked at one by
    /// one (that took 38 ms at 100,000 buckets): many counters are freed off the main thread
    /// (as big values are), and the folded sums let go of them by segment (`folded.rs`), so a
    /// write that moves the clock far costs O(segments). Returns them as retired.
    fn retire(&mut self) -> Effects {
        let n = (self.shape).stale_front(self.buckets.len(), |i| self.buckets[i].idx);
        let fx = Effects {
            retired: n,
            aged: 0,
        };
        if n == 0 {
            return fx;
        }
        self.older.forget();
        if n + 1 >= self.buckets.len() {
            let kept = self.buckets.split_off(n);
            let gone = std::mem::replace(&mut self.buckets, kept);
            self.folded.all_left(gone, &mut self.buckets);
            return fx;
        }
        let gone: Buckets = self.buckets.drain(..n).collect();
        self.folded.left(gone, &mut self.buckets);
        fx
    }
}

impl Window for Capped {
    fn shape(&self) -> &Shape {
        &self.shape
    }

    fn top(&self, q: &Query) -> Vec<Row<'_>> {
        self.top_of(q)
    }

    fn count(&self, member: &[u8], q: &Query) -> Counted {
        self.count_of(member, q)
    }

    fn count_at_clock(&self, member: &[u8]) -> i64 {
        self.window_count(member)
    }

    fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<(i64, Effects), Overflow> {
        Capped::incr(self, member, by, at_ms)
    }

    fn incr_many(&mut self, pairs: &[Pair], at_ms: i64) -> Result<(Vec<i64>, Effects), usize> {
        self.incr_all(pairs, at_ms)
    }

    /// Members held, once per bucket that holds them (the counters: a count of distinct
    /// members across buckets would cost a scan of them all).
    fn members(&self) -> usize {
        self.folded.counters()
    }

    fn buckets_in_use(&self) -> usize {
        self.buckets.len()
    }

    fn mem_usage(&self) -> usize {
        std::mem::size_of::<Capped>()
            + self.buckets.capacity() * std::mem::size_of::<Box<Bucket>>()
            + self.buckets.len() * std::mem::size_of::<Bucket>()
            + (self.buckets.iter())
                .map(|x| x.summary.heap_bytes())
                .sum::<usize>()
            + self.folded.heap_bytes()
            + self.older.heap_bytes()
    }

    fn encode(&self) -> Vec<u8> {
        Capped::encode(self)
    }
}

impl Upkept for Capped {
    fn free_effort(&self) -> usize {
        1 + self.folded.counters() + self.folded.len()
    }

    /// `Some(0)` while folding is owed (it follows the key's clock, not the server's time).
    fn upkeep_due_ms(&self) -> Option<i64> {
        self.folded.owes(&self.buckets, &self.shape).then_some(0)
    }

    /// Up to `budget` units of folding.
    fn upkeep(&mut self, budget: usize) -> (usize, Effects) {
        let done = (self.folded).step(&mut self.buckets, &self.shape, budget.max(1));
        (done, Effects::default())
    }

    fn upkeep_marker(&self) -> (Option<i64>, usize) {
        (self.shape.clock, self.buckets.len())
    }
}

impl Capped {
    /// `u8 3, i64 bucket_ms, u32 window, i64 align_ms, u8 has_clock, i64 clock,
    /// u32 capacity, u32 nbuckets, nbuckets x (i64 bucket, u8 evicted, u32 n,
    /// n x (u32 len, bytes, i64 count, i64 error))`, little endian, buckets
    /// ascending, counters by member: a function of the content, so replicas
    /// encode what their master does.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![ENCODING_VERSION_CAPPED];
        out.extend_from_slice(&self.shape.bucket_ms.to_le_bytes());
        out.extend_from_slice(&self.shape.window.to_le_bytes());
        out.extend_from_slice(&self.shape.align_ms.to_le_bytes());
        out.push(self.shape.clock.is_some() as u8);
        out.extend_from_slice(&self.shape.clock.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        let buckets = self.counters_by_bucket();
        out.extend_from_slice(&(buckets.len() as u32).to_le_bytes());
        for (idx, evicted, counters) in buckets {
            out.extend_from_slice(&idx.to_le_bytes());
            out.push(evicted as u8);
            out.extend_from_slice(&(counters.len() as u32).to_le_bytes());
            for (member, count, error) in counters {
                out.extend_from_slice(&(member.len() as u32).to_le_bytes());
                out.extend_from_slice(member);
                out.extend_from_slice(&count.to_le_bytes());
                out.extend_from_slice(&error.to_le_bytes());
            }
        }
        out
    }

    /// Rebuilds a key from [`Capped::encode`]'s bytes; refuses anything else.
    pub fn decode(bytes: &[u8]) -> Result<Capped, Error> {
        let mut r = Reader::new(bytes);
        if r.take::<1>()? != [ENCODING_VERSION_CAPPED] {
            return Err(Error::Invalid("not a capped TOPN"));
        }
        let bucket_ms = i64::from_le_bytes(r.take()?);
        let window = u32::from_le_bytes(r.take()?);
        let align_ms = i64::from_le_bytes(r.take()?);
        let has_clock = r.take::<1>()?[0];
        let clock = i64::from_le_bytes(r.take()?);
        let capacity = u32::from_le_bytes(r.take()?);
        if bucket_ms < 1
            || !(1..=MAX_WINDOW).contains(&window)
            || !(0..bucket_ms).contains(&align_ms)
        {
            return Err(Error::Invalid("shape"));
        }
        if has_clock > 1 || !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(Error::Invalid("clock or capacity"));
        }
        let shape = Shape {
            bucket_ms,
            window,
            align_ms,
            clock: (has_clock == 1).then_some(clock),
        };
        let mut key = Capped::new(shape, capacity);
        let nbuckets = u32::from_le_bytes(r.take()?);
        let mut last = None;
        for _ in 0..nbuckets {
            let idx = i64::from_le_bytes(r.take()?);
            let evicted = r.take::<1>()?[0];
            let n = u32::from_le_bytes(r.take()?);
            if last.is_some_and(|l| idx <= l) || evicted > 1 || n == 0 || n > capacity {
                return Err(Error::Invalid("bucket"));
            }
            last = Some(idx);
            for _ in 0..n {
                let len = u32::from_le_bytes(r.take()?) as usize;
                let member = r.bytes(len)?;
                let count = i64::from_le_bytes(r.take()?);
                let error = i64::from_le_bytes(r.take()?);
                let clock = shape
                    .clock
                    .ok_or(Error::Invalid("counters without a clock"))?;
                key.set_counter(clock, idx, member, (count, error), evicted == 1)
                    .map_err(|e| Error::Payload(Box::new(e)))?;
            }
        }
        if !r.rest().is_empty() {
            return Err(Error::Invalid("trailing bytes"));
        }
        Ok(key)
    }
}

#[cfg(test)]
#[path = "capped_tests.rs"]
mod tests;
