//! One bucket of a key's window through its life, one representation a stage:
//!
//! - *open* while it takes the usual writes: its entries in the order they came, found by id
//!   (`entries.rs`);
//! - *sealing* once a newer bucket exists or the server's time has sealed it (`Shape::seals_at`):
//!   those entries frozen while the upkeep timer sorts them a slice at a time (`sealed.rs`);
//! - *sealed*: sorted by id, 12 bytes an entry.
//!
//! Writes that come once it stopped being open (late events, a lagging replica's stream) go to
//! the bucket's `late` entries, or, sealed, update a member's sealed entry in place. A member's
//! count in the bucket is in one entry: its late one once it has one (its main entry then 0).
//! Each entry has a position (the main entries first, then the late ones) that stays put within
//! a stage, and a new entry takes the next one: a running sum walks out of a bucket by position,
//! from its last down, while writes go on (`upkeep.rs`), and the sealing (which changes
//! positions) ends only once no walk is half-way through it. Pure Rust, no FFI.

use std::collections::VecDeque;

use super::accumulator::Acc;
use super::entries::{Entries, Entry};
use super::sealed::{Packer, Sealed, Step};
use crate::topn::storage::dispose_value;
use crate::tuples::defrag::{Mover, Pass};

#[derive(Clone)]
pub(super) struct Bucket {
    pub(super) idx: i64,
    stage: Stage,
    /// Writes since it stopped being open, of members its frozen or sealed entries do not hold
    /// or cannot (and, while it is sealing, of every member), each member's main entry then 0.
    late: Entries,
    /// Bounds of every count the bucket ever held (an entry's, a member's) and 0: the most a
    /// correction by this bucket moves a total (`read.rs`).
    pub(super) min: i64,
    pub(super) max: i64,
    /// The server's time at its last write (`i64::MIN`: unknown), which its sealing waits on.
    pub(super) written_ms: i64,
}

#[derive(Clone)]
enum Stage {
    Open(Entries),
    Sealing(Entries, Box<Packer>),
    Sealed(Sealed),
}

/// An entry a write changed.
pub(super) struct Written {
    pub(super) pos: usize,
    /// A new entry (a new position).
    pub(super) inserted: bool,
    /// The main entry whose count the write moved to `pos` (its position, the count).
    pub(super) moved: Option<(usize, i64)>,
}

/// Heap bytes of stored buckets, each boxed (the deque's own room aside).
pub(super) fn boxed_bytes(buckets: &VecDeque<Box<Bucket>>) -> usize {
    buckets.iter().map(|b| Bucket::SIZE + b.heap_bytes()).sum()
}

impl Bucket {
    /// Bytes of the bucket itself (a key holds it boxed).
    pub(super) const SIZE: usize = std::mem::size_of::<Bucket>();

    pub(super) fn new(idx: i64) -> Bucket {
        Bucket {
            idx,
            stage: Stage::Open(Entries::default()),
            late: Entries::default(),
            min: 0,
            max: 0,
            written_ms: i64::MIN,
        }
    }

    /// A sealed bucket of `sealed`'s entries (a load's).
    pub(super) fn sealed(idx: i64, sealed: Sealed) -> Bucket {
        let mut b = Bucket::new(idx);
        for pos in 0..sealed.len() {
            b.note(sealed.at(pos).1);
        }
        b.stage = Stage::Sealed(sealed);
        b
    }

    /// Entries of the main stage: the open or frozen ones, or the sealed ones.
    #[inline]
    fn main_len(&self) -> usize {
        match &self.stage {
            Stage::Open(e) | Stage::Sealing(e, _) => e.len(),
            Stage::Sealed(s) => s.len(),
        }
    }

    /// Positions: every entry, main then late.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.main_len() + self.late.len()
    }

    pub(super) fn is_sealed(&self) -> bool {
        matches!(self.stage, Stage::Sealed(_))
    }

    #[cfg(test)]
    pub(super) fn is_open(&self) -> bool {
        matches!(self.stage, Stage::Open(_))
    }

    /// Whether every member holds one entry at most (none late).
    pub(super) fn ids_unique(&self) -> bool {
        self.late.len() == 0
    }

    /// The member id and count at `pos`.
    #[inline]
    pub(super) fn at(&self, pos: usize) -> (u32, i64) {
        let main = self.main_len();
        if pos >= main {
            return self.late.at(pos - main);
        }
        match &self.stage {
            Stage::Open(e) | Stage::Sealing(e, _) => e.at(pos),
            Stage::Sealed(s) => s.at(pos),
        }
    }

    /// `id`'s main entry and its late one, as `(position, count)`.
    #[inline]
    pub(super) fn find(&self, id: u32) -> [Option<(usize, i64)>; 2] {
        let main = match &self.stage {
            Stage::Open(e) | Stage::Sealing(e, _) => e.find(id).map(|p| (p, e.at(p).1)),
            Stage::Sealed(s) => s.find(id).map(|p| (p, s.at(p).1)),
        };
        let late = match self.late.len() {
            0 => None,
            _ => self
                .late
                .find(id)
                .map(|p| (self.main_len() + p, self.late.at(p).1)),
        };
        [main, late]
    }

    /// `id`'s count in the bucket.
    #[inline]
    pub(super) fn get(&self, id: u32) -> i64 {
        self.find(id).iter().flatten().map(|e| e.1).sum()
    }

    /// Adds `delta` to `id`'s count: to its open entry; once it stopped being open, to its late
    /// entry, else (sealed) to its sealed one if that can hold the count, else to a new late
    /// entry that takes the main entry's count along (the main entry left at 0). A member's
    /// count is thus in one entry, never split into parts that could each overflow where the
    /// count does not; the caller checked that the count after fits an i64.
    #[inline]
    pub(super) fn add(&mut self, id: u32, delta: i64) -> Written {
        let main = self.main_len();
        let Bucket { stage, late, .. } = self;
        // To the late entry, with the count of the main entry it empties, if any.
        let late_add = |late: &mut Entries, moved: Option<(usize, i64)>| {
            let n = late.len();
            let (pos, count) = late.add(id, delta.wrapping_add(moved.map_or(0, |m| m.1)));
            (main + pos, count, late.len() > n, moved)
        };
        let (pos, count, inserted, moved) = match stage {
            Stage::Open(e) => {
                let n = e.len();
                let (pos, count) = e.add(id, delta);
                (pos, count, e.len() > n, None)
            }
            _ if late.find(id).is_some() => late_add(late, None),
            Stage::Sealing(e, packer) => {
                let moved = e.find(id).map(|pos| {
                    let count = e.at(pos).1;
                    e.add_at(pos, count.wrapping_neg());
                    packer.zero(id);
                    (pos, count)
                });
                late_add(late, moved)
            }
            Stage::Sealed(s) => match s.find(id) {
                None => late_add(late, None),
                Some(pos) => match s.add_at(pos, delta) {
                    Some(count) => (pos, count, false, None),
                    None => {
                        let count = s.at(pos).1;
                        s.add_at(pos, count.wrapping_neg());
                        late_add(late, Some((pos, count)))
                    }
                },
            },
        };
        self.note(count);
        Written {
            pos,
            inserted,
            moved,
        }
    }

    /// Widens the bounds for a count held.
    #[inline]
    fn note(&mut self, count: i64) {
        self.min = self.min.min(count);
        self.max = self.max.max(count);
    }

    /// Starts the sealing of an open bucket (its entries frozen, whose member ids are below
    /// `id_limit`) or advances it by about `budget` entries; returns the work done. Positions
    /// change when it ends: no running sum may be walking out of the bucket meanwhile.
    pub(super) fn seal(&mut self, budget: usize, id_limit: usize) -> usize {
        let stage = std::mem::replace(&mut self.stage, Stage::Open(Entries::default()));
        let (stage, work) = match stage {
            Stage::Open(e) => {
                let narrow = i32::try_from(self.min).is_ok() && i32::try_from(self.max).is_ok();
                let packer = Box::new(Packer::new(&e, id_limit, narrow));
                (Stage::Sealing(e, packer), 1)
            }
            Stage::Sealing(e, mut packer) => match packer.step(budget, &e) {
                Step::Working(work) => (Stage::Sealing(e, packer), work),
                Step::Done(sealed) => {
                    let bytes = e.heap_bytes() + packer.heap_bytes();
                    dispose_value((e, packer), bytes);
                    (Stage::Sealed(sealed), budget)
                }
            },
            sealed => (sealed, 0),
        };
        self.stage = stage;
        work
    }

    /// Adds (`negate`: subtracts) the counts at positions `from..to` into `acc[id]`; true if
    /// one overflowed.
    pub(super) fn scan<A: Acc>(&self, from: usize, to: usize, negate: bool, acc: &mut [A]) -> bool {
        let main = self.main_len();
        let in_main = match &self.stage {
            Stage::Open(e) | Stage::Sealing(e, _) => {
                scan_entries(e, from, to.min(main), negate, acc)
            }
            Stage::Sealed(s) => s.scan(from, to, negate, acc),
        };
        let (from, to) = (from.saturating_sub(main), to.saturating_sub(main));
        in_main | scan_entries(&self.late, from, to, negate, acc)
    }

    /// Calls `f(id, count)` for every entry, in position order.
    pub(super) fn for_each(&self, mut f: impl FnMut(u32, i64)) {
        (0..self.len()).for_each(|pos| {
            let (id, count) = self.at(pos);
            f(id, count)
        });
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.late.heap_bytes()
            + match &self.stage {
                Stage::Open(e) => e.heap_bytes(),
                Stage::Sealing(e, p) => e.heap_bytes() + p.heap_bytes(),
                Stage::Sealed(s) => s.heap_bytes(),
            }
    }

    /// Work units charged for freeing its storage (large blocks cost page work).
    pub(super) fn drop_cost(&self) -> usize {
        1 + self.len() / 1024
    }

    /// Offers its blocks to a defrag pass (positions, no pointers: at any stage).
    pub(super) fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        match &mut self.stage {
            Stage::Open(e) => e.defrag(pass),
            Stage::Sealing(e, p) => {
                e.defrag(pass);
                pass.work(|m| {
                    m.boxed(p);
                    p.defrag(m)
                });
            }
            Stage::Sealed(s) => pass.work(|m| s.defrag(m)),
        }
        self.late.defrag(pass);
    }
}

/// `apply` over the entries at positions `from..to`.
fn scan_entries<A: Acc>(e: &Entries, from: usize, to: usize, negate: bool, acc: &mut [A]) -> bool {
    if from >= to {
        return false;
    }
    let mut at = 0;
    let mut overflow = false;
    for slice in e.slices() {
        let (lo, hi) = (from.max(at), to.min(at + slice.len()));
        if lo < hi {
            let pairs = slice[lo - at..hi - at]
                .iter()
                .map(|&Entry { id, count }| (id, count));
            overflow |= match negate {
                true => apply::<true, A>(pairs, acc),
                false => apply::<false, A>(pairs, acc),
            };
        }
        at += slice.len();
    }
    overflow
}

/// Adds (`NEGATE`: subtracts) each `(id, count)` into `acc[id]`; true if one overflowed. One
/// instance per sign, so its state stays in registers.
#[inline(never)]
fn apply<const NEGATE: bool, A: Acc>(
    pairs: impl Iterator<Item = (u32, i64)>,
    acc: &mut [A],
) -> bool {
    let mut overflow = false;
    for (id, count) in pairs {
        let a = &mut acc[id as usize];
        let (v, o) = a.apply::<NEGATE>(count);
        *a = v;
        overflow |= o;
    }
    overflow
}
