//! A TOPN key is one of three layouts of its window; [`Layout`] chooses and converts:
//!
//! - [`Compact`] (`compact.rs`): every (bucket, member, count) in one buffer, while an exact key
//!   holds at most `recipes.topn-compact-max` entries;
//! - [`Full`] (`full/`): the buckets and running sums of an exact key past that;
//! - [`Capped`] (`capped/`): a key with CAPACITY, a bounded summary per bucket, every count
//!   with its error.
//!
//! Each implements [`Window`] (`topn/window.rs`), which every operation goes through; what is
//! here is only what depends on which layout a key has: the conversions, and what one layout
//! alone has (a capped key's counters, an exact key's increments to replay). A write past the
//! limit turns an exact key full; a full key whose entries fall to half of it turns compact
//! again (hysteresis: a key at the limit does not flip back and forth). Answers, replicated
//! effects and encoded bytes do not depend on the exact layout. The layouts use what `topn/`
//! shares below them (shape, window, encoding, views, storage, selection) and never each other.
//! Pure Rust, no FFI.

use super::declaration::Declaration;
use super::error::{Error, Overflow};
use super::parse::Pair;
use super::shape::Shape;
use super::storage::dispose_value;
use super::views::Views;
use super::window::{final_counts, Counted, Effects, Query, Row, Window};
use crate::tuples::defrag::{Mover, Pass};
use capped::{BucketCounters, Capped, ENCODING_VERSION_CAPPED};
use compact::{packed_bytes, Compact};
use full::Full;

pub mod capped;
pub mod compact;
pub mod full;

/// Entries a key keeps compact at most, unless configured.
pub const DEFAULT_COMPACT_MAX: usize = 128;

/// Bytes of entries a compact key holds at most (long member names make a
/// scan long before the entries are many).
const COMPACT_BYTES_MAX: usize = 8 << 10;

#[derive(Clone, Debug)]
pub enum Layout {
    Compact(Compact),
    Full(Box<Full>),
    /// A key with CAPACITY (`capped/`): bounded, every count with its error.
    Capped(Box<Capped>),
}

impl Layout {
    /// An empty exact key: compact unless `compact_max` is 0.
    pub fn new(bucket_ms: i64, window: u32, align_ms: i64, compact_max: usize) -> Layout {
        let shape = Shape::new(bucket_ms, window, align_ms);
        match compact_max {
            0 => Layout::Full(Box::new(Full::empty(shape, Views::NONE))),
            _ => Layout::Compact(Compact::new(shape)),
        }
    }

    /// The same (empty) key with `views` declared; a capped key takes none (CREATE refuses
    /// CAPACITY with VIEWS).
    pub fn with_views(self, views: Views) -> Layout {
        match self {
            Layout::Compact(s) => Layout::Compact(s.with_views(views)),
            Layout::Full(f) => Layout::Full(Box::new(Full::empty(*f.shape(), views))),
            Layout::Capped(c) => Layout::Capped(c),
        }
    }

    /// An empty key with CAPACITY `capacity`.
    pub fn capped(bucket_ms: i64, window: u32, align_ms: i64, capacity: u32) -> Layout {
        let shape = Shape::new(bucket_ms, window, align_ms);
        Layout::Capped(Box::new(Capped::new(shape, capacity)))
    }

    /// Its window, whatever the layout.
    pub fn window(&self) -> &dyn Window {
        match self {
            Layout::Compact(s) => s,
            Layout::Full(f) => f.as_ref(),
            Layout::Capped(c) => c.as_ref(),
        }
    }

    fn window_mut(&mut self) -> &mut dyn Window {
        match self {
            Layout::Compact(s) => s,
            Layout::Full(f) => f.as_mut(),
            Layout::Capped(c) => c.as_mut(),
        }
    }

    pub fn shape(&self) -> Shape {
        *self.window().shape()
    }

    /// Heap bytes of each view, ascending k (0 while compact: its views are declared only).
    pub fn view_memory(&self) -> Vec<(u32, usize)> {
        let views = self.window().views();
        match self {
            Layout::Full(f) => (views.iter().enumerate())
                .map(|(v, k)| (k, f.view_memory(v)))
                .collect(),
            _ => views.iter().map(|k| (k, 0)).collect(),
        }
    }

    /// An empty key as `d` declares it: capped with a CAPACITY, else exact (compact unless
    /// `compact_max` is 0) with its views.
    pub fn declared(d: &Declaration, compact_max: usize) -> Layout {
        let (bucket_ms, align_ms) = (d.bucket_s * 1000, d.align_s * 1000);
        match d.capacity {
            Some(m) => Layout::capped(bucket_ms, d.window, align_ms, m),
            None => Layout::new(bucket_ms, d.window, align_ms, compact_max).with_views(d.views),
        }
    }

    /// What the key was declared with.
    pub fn declaration(&self) -> Declaration {
        let s = self.shape();
        Declaration {
            bucket_s: s.bucket_ms / 1000,
            window: s.window,
            align_s: s.align_ms / 1000,
            capacity: self.capacity(),
            views: self.window().views(),
        }
    }

    fn capacity(&self) -> Option<u32> {
        match self {
            Layout::Capped(c) => Some(c.capacity()),
            _ => None,
        }
    }

    /// The first of `pairs` whose increment the key refuses before counting anything (one
    /// below 1 on a key with CAPACITY: Space-Saving's bounds need counts that only grow).
    pub fn first_refused(&self, pairs: &[Pair]) -> Option<usize> {
        match self {
            Layout::Capped(_) => pairs.iter().position(|&(by, _)| by < 1),
            _ => None,
        }
    }

    /// What `TOPN.INFO` adds for a key with CAPACITY: its capacity, counters, bound (the
    /// most a count of the window over-counts) and whether it is exact (the bound 0).
    pub fn capped_info(&self) -> Vec<(&'static [u8], i64)> {
        let Layout::Capped(c) = self else {
            return Vec::new();
        };
        vec![
            (b"capacity", c.capacity().into()),
            (b"counters", c.counters() as i64),
            (b"bound", c.bound()),
            (b"exact", (c.bound() == 0) as i64),
        ]
    }

    /// A key loaded from its encoding, in the layout its size calls for.
    pub fn decode_at(bytes: &[u8], now_ms: i64, compact_max: usize) -> Result<Layout, Error> {
        if bytes.first() == Some(&ENCODING_VERSION_CAPPED) {
            return Ok(Layout::Capped(Box::new(Capped::decode(bytes)?)));
        }
        let full = Full::decode_at(bytes, Some(now_ms))?;
        let mut core = Layout::Full(Box::new(full));
        core.settle(compact_max, compact_max);
        Ok(core)
    }

    /// Goes compact when a full key holds at most `to_small` entries, full
    /// when a compact one holds more than `compact_max` (or too many bytes).
    fn settle(&mut self, to_small: usize, compact_max: usize) {
        match self {
            // Once what the clock left behind is freed (piecewise, by upkeep
            // and writes), so nothing big is dropped at once here.
            Layout::Full(full)
                if compact_max > 0
                    && full.stored_entries() <= to_small
                    && full.holds_only_live() =>
            {
                // Counted first: a key of few but long members would
                // otherwise pack (and drop) a compact copy on every write.
                let shape = *full.shape();
                let views = full.views();
                let bytes =
                    4 * views.len() + packed_bytes(shape.clock.unwrap_or(0), full.live_entries());
                if bytes <= COMPACT_BYTES_MAX {
                    let entries: Vec<_> = full.live_entries().collect();
                    let small = Compact::from_entries(shape, &entries).with_views(views);
                    let full = std::mem::replace(self, Layout::Compact(small));
                    // Its tables may still have the capacity of a big past.
                    let bytes = full.mem_usage();
                    dispose_value(full, bytes);
                }
            }
            Layout::Compact(small)
                if small.len() > compact_max || small.bytes() > COMPACT_BYTES_MAX =>
            {
                self.make_full();
            }
            _ => {}
        }
    }

    /// A compact key in the full layout.
    fn make_full(&mut self) {
        if let Layout::Compact(small) = self {
            // Through the encoding: it loads any content (an increment
            // replay could pass the range of counts on the way).
            let full = Full::decode_at(&small.encode(), None).expect("a layout's own encoding");
            *self = Layout::Full(Box::new(full));
        }
    }

    #[cfg(test)]
    pub fn is_compact(&self) -> bool {
        matches!(self, Layout::Compact(_))
    }

    /// Applies an increment, then settles the layout for `compact_max`; returns the member's
    /// count and what else the write did.
    pub fn incr(
        &mut self,
        member: &[u8],
        by: i64,
        at_ms: i64,
        compact_max: usize,
    ) -> Result<(i64, Effects), Overflow> {
        let written = self.window_mut().incr(member, by, at_ms)?;
        self.settle(compact_max / 2, compact_max);
        Ok(written)
    }

    /// Applies `(increment, member)` pairs all at `at_ms`, in order, as as
    /// many [`Layout::incr`]s would, and settles the layout once; returns each
    /// pair's member's count over the window after the call, and what else
    /// the call did. All or nothing: `Err(i)` when pair `i` would overflow,
    /// and then nothing changed. A capped key takes increments >= 1 only
    /// (the caller checks).
    pub fn incr_many(
        &mut self,
        pairs: &[Pair],
        at_ms: i64,
        compact_max: usize,
    ) -> Result<(Vec<i64>, Effects), usize> {
        if self.shape().landing(at_ms).is_none() {
            let counts = pairs.iter().map(|(_, m)| self.count_at_clock(m));
            return Ok((counts.collect(), Effects::default()));
        }
        // A compact key that may pass its limit turns full first (its writes
        // rewrite the whole buffer), once the call is known to fit.
        if let Layout::Compact(s) = self {
            if s.len() + pairs.len() > compact_max {
                final_counts(pairs, |m| s.headroom(m, at_ms))?;
                self.make_full();
            }
        }
        let written = self.window_mut().incr_many(pairs, at_ms)?;
        self.settle(compact_max / 2, compact_max);
        Ok(written)
    }

    pub fn count_at_clock(&self, member: &[u8]) -> i64 {
        self.window().count_at_clock(member)
    }

    pub fn top(&self, q: &Query) -> Vec<Row<'_>> {
        self.window().top(q)
    }

    pub fn count(&self, member: &[u8], q: &Query) -> Counted {
        self.window().count(member, q)
    }

    pub fn members(&self) -> usize {
        self.window().members()
    }

    pub fn mem_usage(&self) -> usize {
        self.window().mem_usage()
    }

    pub fn encode(&self) -> Vec<u8> {
        self.window().encode()
    }

    /// An exact key's content as increments (the AOF rewrite); a capped key
    /// rewrites as its counters ([`Layout::counters_by_bucket`]).
    pub fn replay_events(&self) -> Vec<(&[u8], i64, i64)> {
        match self {
            Layout::Compact(s) => s.replay_events(),
            Layout::Full(f) => f.replay_events(),
            Layout::Capped(_) => Vec::new(),
        }
    }

    /// A capped key's counters by bucket: `(bucket, evicted, [(member,
    /// count, error)])`.
    pub fn counters_by_bucket(&self) -> Vec<BucketCounters<'_>> {
        match self {
            Layout::Capped(c) => c.counters_by_bucket(),
            _ => Vec::new(),
        }
    }

    /// Sets a capped key's counter (`TOPN.SETCOUNTER`, an AOF rewrite's), the
    /// clock moving to its bucket when that is newer; returns the buckets
    /// that left. Nothing changes on an error.
    pub fn set_counter(
        &mut self,
        bucket: i64,
        member: &[u8],
        counted: (i64, i64),
        evicted: bool,
    ) -> Result<Effects, Error> {
        let Layout::Capped(c) = self else {
            return Err(Error::NoCapacity);
        };
        let clock = c.shape().clock_after(bucket);
        c.set_counter(clock, bucket, member, counted, evicted)
    }

    /// Tells the key the server's time; true if its window moved.
    pub fn observe_time(&mut self, now_ms: i64) -> bool {
        self.window_mut().observe_time(now_ms)
    }

    /// Up to `budget` units of upkeep, and what they did; a full key that shrank turns
    /// compact.
    pub fn upkeep(&mut self, budget: usize, compact_max: usize) -> (usize, Effects) {
        let done = self.window_mut().upkeep(budget);
        self.settle(compact_max / 2, compact_max);
        done
    }

    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        match self {
            Layout::Compact(s) => pass.work(|m| m.vec(s.buf_mut())),
            Layout::Full(f) => {
                pass.work(|m| m.boxed(f));
                f.defrag(pass)
            }
            Layout::Capped(c) => {
                pass.work(|m| m.boxed(c));
                c.defrag(pass)
            }
        }
    }
}

/// The reads the tests compare: rows and counts without errors.
#[cfg(test)]
impl Layout {
    pub fn top_in(&self, n: usize, at_ms: i64, last: u32) -> Vec<(&[u8], i64)> {
        let q = Query { at_ms, last, n };
        self.top(&q)
            .into_iter()
            .map(|(m, c)| (m, c.count))
            .collect()
    }

    pub fn count_in(&self, member: &[u8], at_ms: i64, last: u32) -> i64 {
        let q = Query { at_ms, last, n: 0 };
        self.count(member, &q).count
    }

    pub fn views(&self) -> Views {
        self.window().views()
    }

    pub fn expire_at_ms(&self) -> Option<i64> {
        self.shape().expire_at_ms()
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
