//! What every layout of a TOPN key answers and does (`layout/`): one trait, [`Window`], that the
//! compact, full and capped layouts implement, and one read type, [`Query`], that every
//! layout's `top` and `count` take. Pure Rust, no FFI.

use super::error::Overflow;
use super::parse::Pair;
use super::shape::Shape;
use super::views::Views;
use hashbrown::HashMap;

/// A read: the `last` newest buckets of the window ending at `at_ms` (only the key's own
/// window's buckets ever count), and how many rows a top lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    pub at_ms: i64,
    pub last: u32,
    pub n: usize,
}

/// A count over a read window and the most it over-counts: the true count lies in
/// `[count - error, count]` (the error is 0 on an exact key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    pub count: i64,
    pub error: i64,
}

impl Counted {
    /// An exact count.
    pub fn exact(count: i64) -> Counted {
        Counted { count, error: 0 }
    }
}

/// What a write or a slice of upkeep did to a key besides its answer (INFO's counters):
/// returned by the call that did it, never kept in the key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Buckets freed as the clock moved past them.
    pub retired: usize,
    /// Buckets taken out of the running total as the server's time moved.
    pub aged: usize,
}

impl std::ops::AddAssign for Effects {
    fn add_assign(&mut self, other: Effects) {
        self.retired += other.retired;
        self.aged += other.aged;
    }
}

/// A member of a top and its count.
pub type Row<'a> = (&'a [u8], Counted);

/// A key's window, whatever its layout: its data, what every layout answers and does. What
/// the server's upkeep does with it besides is [`Upkept`].
pub trait Window: Upkept {
    /// The shape and clock.
    fn shape(&self) -> &Shape;
    /// The declared views.
    fn views(&self) -> Views {
        Views::NONE
    }
    /// The `q.n` highest over the read window, highest first, ties by member ascending;
    /// members whose count is 0 are left out.
    fn top(&self, q: &Query) -> Vec<Row<'_>>;
    /// A member's count over the read window (`q.n` unused).
    fn count(&self, member: &[u8], q: &Query) -> Counted;
    /// A member's count over the window ending at the clock: a write's reply.
    fn count_at_clock(&self, member: &[u8]) -> i64;
    /// Counts an event at `at_ms` (one older than the window changes nothing); returns the
    /// member's count over the window at the clock after it, and what else the write did.
    /// Nothing changes on an overflow.
    fn incr(&mut self, member: &[u8], by: i64, at_ms: i64) -> Result<(i64, Effects), Overflow>;
    /// Applies `(increment, member)` pairs all at `at_ms` (inside the key's window), in order,
    /// as as many `incr`s would; returns each pair's member's count after the call, and what
    /// else the call did. All or nothing: `Err(i)` when pair `i` would overflow, and then
    /// nothing changed.
    fn incr_many(&mut self, pairs: &[Pair], at_ms: i64) -> Result<(Vec<i64>, Effects), usize>;
    /// Members held (`TOPN.INFO`).
    fn members(&self) -> usize;
    /// Buckets of the window ending at the clock that hold entries.
    fn buckets_in_use(&self) -> usize;
    /// Estimate of the heap bytes held.
    fn mem_usage(&self) -> usize;
    fn encode(&self) -> Vec<u8>;
}

/// The server's plumbing around a key's data: its freeing, and the upkeep its timer does (a
/// layout with no derived state to keep takes the defaults: no upkeep ever due).
pub trait Upkept {
    /// About the number of allocations freeing it takes.
    fn free_effort(&self) -> usize {
        1
    }
    /// Tells the key the server's time (internal state only); true if its window moved.
    fn observe_time(&mut self, _now_ms: i64) -> bool {
        false
    }
    /// When upkeep has work: `Some(0)` now; `None` never.
    fn upkeep_due_ms(&self) -> Option<i64> {
        None
    }
    /// Up to `budget` units of upkeep; returns the work done (`< budget` when nothing is left)
    /// and what it did.
    fn upkeep(&mut self, _budget: usize) -> (usize, Effects) {
        (0, Effects::default())
    }
    /// What upkeep's due time depends on besides its progress: a write that changes none of it
    /// leaves the due time where it was (the clock and the stored buckets, where upkeep
    /// follows them).
    fn upkeep_marker(&self) -> (Option<i64>, usize) {
        (None, 0)
    }
}

/// Each pair's member's count over the window once `pairs` are applied in order to an exact
/// key, each member starting from `start(member)` (its count and its entry in the event's
/// bucket before the call; None: the event is late), or `Err(i)` for the first pair that would
/// take either out of range.
pub fn final_counts<'a>(
    pairs: &[Pair<'a>],
    start: impl Fn(&[u8]) -> Option<(i128, i64)>,
) -> Result<Vec<i64>, usize> {
    let fits = |v: i128| i64::try_from(v).ok();
    if let [(by, member)] = pairs {
        let (live, entry) = start(member).unwrap_or_default();
        let by = i128::from(*by);
        return match (fits(live + by), fits(i128::from(entry) + by)) {
            (Some(count), Some(_)) => Ok(vec![count]),
            _ => Err(0),
        };
    }
    let mut running: HashMap<&[u8], (i128, i128)> = HashMap::with_capacity(pairs.len());
    for (i, &(by, member)) in pairs.iter().enumerate() {
        let (live, entry) = running.entry(member).or_insert_with(|| {
            let (live, entry) = start(member).unwrap_or_default();
            (live, i128::from(entry))
        });
        *live += i128::from(by);
        *entry += i128::from(by);
        if fits(*live).is_none() || fits(*entry).is_none() {
            return Err(i);
        }
    }
    // Within range: checked above.
    Ok(pairs.iter().map(|(_, m)| running[m].0 as i64).collect())
}
