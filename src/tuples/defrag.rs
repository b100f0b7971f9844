//! Active defrag, the pure part: which heap blocks a value offers to be
//! moved, in what order, and where a pass that was told to stop resumes.
//! Pure Rust, no FFI: the server layer (`server::defrag`) supplies the
//! [`Mover`] that asks the allocator, unit tests a model.
//!
//! A value walks its blocks through a [`Pass`] as nested sequences
//! ([`Pass::each`]) of units of work ([`Pass::work`]), each bounded (a chunk
//! of a chunked vector with what its items own, one shard of a hash table):
//! between two units the server may say stop, and the pass then answers the
//! path of the unit it stopped before, which the next call resumes from. A
//! resumed walk skips what comes before that path in O(1) per sequence, and
//! the value may have changed in between (commands run between two calls):
//! positions past the end are skipped, so a stale path costs some blocks a
//! visit more or less, never a wrong move.
//!
//! Blocks are moved in three ways: vectors, boxes and spilled small vectors
//! by pointer (the allocator moves a block only when its page is sparse);
//! hash tables and B-trees, which do not expose their blocks, by a rebuild
//! into fresh blocks the allocator places ([`Mover::placed`]): hash table
//! shards of at most [`SLAB_MAX`] bytes, trees of at most [`REBUILD_MAX`]
//! entries (one unit each).

use smallvec::{Array, SmallVec};
use std::alloc::Layout;
use std::collections::VecDeque;
use std::ptr::NonNull;

/// The largest block the allocator (jemalloc, 4 KiB pages) keeps in a slab
/// of equal-sized blocks, the only ones fragmentation strands and a move can
/// help; a bigger block is whole pages of its own.
pub const SLAB_MAX: usize = 14 * 1024;

/// B-trees of at most this many entries are rebuilt, in one unit of work;
/// bigger ones (every entry is moved by a rebuild) keep their nodes.
pub const REBUILD_MAX: usize = 1024;

/// Sequence items visited between two checks of whether to stop, when the
/// items hold no work (a chunk of small partitions).
const ITEMS_PER_CHECK: u64 = 256;

/// What moves blocks: the server's allocator, or a model in tests.
pub trait Mover {
    /// Offers the buffer of `v` to be moved.
    fn vec<T>(&mut self, v: &mut Vec<T>);
    /// Offers the block of `b` to be moved.
    fn boxed<T>(&mut self, b: &mut Box<T>);
    /// Offers the block of `b` to be moved.
    fn slice<T>(&mut self, b: &mut Box<[T]>);
    /// Offers the heap buffer of `v`, if it spilled, to be moved.
    fn small_vec<A: Array>(&mut self, v: &mut SmallVec<A>);
    /// Offers a block no owner type describes (a hand-made block that
    /// others point into) to be moved; answers where it is now.
    ///
    /// # Safety
    /// `block` is live, from the global allocator with `layout`. When the
    /// answer differs, the block moved: the old address is freed, and the
    /// caller must point everything that pointed at it at the answer
    /// before anything reads through it again.
    unsafe fn raw(&mut self, block: NonNull<u8>, layout: Layout) -> NonNull<u8>;
    /// Runs `rebuild`, whose new blocks the allocator places where they help
    /// (for containers rebuilt into fresh blocks).
    fn placed<R>(&mut self, rebuild: impl FnOnce(&mut Self) -> R) -> R;
    /// Whether the server wants the pass to stop now.
    fn should_stop(&mut self) -> bool;
}

/// Where a stopped pass resumes: a position per nesting level, outermost
/// first (the server keeps it between calls).
pub type Resume = Vec<u64>;

/// One call's walk over a value's blocks; see the module doc.
pub struct Pass<'m, M: Mover> {
    mover: &'m mut M,
    /// Where the previous call stopped (empty: from the start).
    resume: Resume,
    /// Still on the way to `resume`: everything before it is skipped.
    resuming: bool,
    /// The position at each level of the walk now.
    path: Vec<u64>,
    /// Units and items done in this call: a call does at least one before
    /// it may stop, so every call makes progress.
    done: u64,
    /// Items visited since the last check of whether to stop.
    unchecked: u64,
    stopped: Option<Resume>,
}

impl<'m, M: Mover> Pass<'m, M> {
    /// A pass from the start (`resume` empty) or from where one stopped.
    pub fn new(mover: &'m mut M, resume: Resume) -> Self {
        Pass {
            mover,
            resuming: !resume.is_empty(),
            resume,
            path: vec![0],
            done: 0,
            unchecked: 0,
            stopped: None,
        }
    }

    /// Where to resume, if the pass stopped before the end.
    pub fn finish(self) -> Option<Resume> {
        self.stopped
    }

    fn level(&self) -> usize {
        self.path.len() - 1
    }

    /// Stops here if the server says so and this call did something.
    fn stop_here(&mut self) -> bool {
        if self.done > 0 && self.mover.should_stop() {
            self.stopped = Some(self.path.clone());
            return true;
        }
        false
    }

    /// One unit of work (bounded), unless the pass is before its resume
    /// point or stops here.
    pub fn work(&mut self, unit: impl FnOnce(&mut M)) {
        if self.stopped.is_some() {
            return;
        }
        let level = self.level();
        if self.resuming {
            match self.resume.get(level) {
                Some(&r) if self.path[level] < r => {
                    self.path[level] += 1;
                    return;
                }
                _ => self.resuming = false,
            }
        }
        if self.stop_here() {
            return;
        }
        unit(self.mover);
        self.done += 1;
        self.path[level] += 1;
    }

    /// A sequence of items, each walked by `visit` one level deeper.
    pub fn each<I: ExactSizeIterator>(
        &mut self,
        items: I,
        mut visit: impl FnMut(I::Item, &mut Self),
    ) {
        if self.stopped.is_some() {
            return;
        }
        let level = self.level();
        let first = self.path[level];
        let n = items.len() as u64;
        let mut start = 0;
        if self.resuming {
            match self.resume.get(level).copied() {
                Some(r) if r >= first + n => {
                    self.path[level] += n;
                    return;
                }
                Some(r) if r >= first => {
                    start = r - first;
                    // When the path ends here, it named this item: done resuming.
                    self.resuming = self.resume.len() > level + 1;
                }
                // Past it (the value changed).
                _ => self.resuming = false,
            }
        }
        self.path[level] = first + start;
        for item in items.skip(start as usize) {
            self.unchecked += 1;
            if self.unchecked >= ITEMS_PER_CHECK {
                self.unchecked = 0;
                if self.stop_here() {
                    return;
                }
            }
            self.path.push(0);
            visit(item, self);
            self.path.pop();
            if self.stopped.is_some() {
                return;
            }
            // An item whose walk did not reach the resume point (it shrank):
            // resume from the next one.
            self.resuming = false;
            self.done += 1;
            self.path[level] += 1;
        }
    }
}

/// Offers the buffer of `d` to be moved (through a `Vec`: no copy of its
/// items when they do not wrap around its end, a shift of them when they do).
pub fn vec_deque<T>(m: &mut impl Mover, d: &mut VecDeque<T>) {
    let mut v = Vec::from(std::mem::take(d));
    m.vec(&mut v);
    *d = VecDeque::from(v);
}

/// A B-tree rebuilt into fresh nodes in one unit of work when it holds at
/// most [`REBUILD_MAX`] entries: the entries move over (none is copied),
/// each shown to `entry` on the way (to offer the blocks it owns).
pub fn rebuild<C, M>(
    pass: &mut Pass<M>,
    tree: &mut C,
    entries: usize,
    mut entry: impl FnMut(&mut C::Item, &mut M),
) where
    C: Default + IntoIterator + FromIterator<C::Item>,
    M: Mover,
{
    if entries == 0 || entries > REBUILD_MAX {
        return;
    }
    pass.work(|m| {
        let old = std::mem::take(tree);
        *tree = m.placed(|m| {
            old.into_iter()
                .map(|mut e| {
                    entry(&mut e, m);
                    e
                })
                .collect()
        });
    });
}

#[cfg(test)]
pub(crate) mod model {
    //! A [`Mover`] that moves every block it is offered (so a test sees
    //! that a value still reads the same) and counts what it did. A block
    //! moved by [`Mover::raw`] (and so a box) is zeroed and kept, not freed,
    //! until the test's thread ends: anything still pointing at it reads
    //! zeros (an empty name, id 0), which a test sees as wrong answers
    //! instead of a read of freed memory that may happen to work.
    use super::*;
    use std::cell::RefCell;

    /// A moved-away block, freed when its thread ends.
    struct Quarantined(NonNull<u8>, Layout);

    impl Drop for Quarantined {
        fn drop(&mut self) {
            // SAFETY: allocated by the global allocator with this layout
            // (the contract of `Mover::raw`) and freed only here.
            unsafe { std::alloc::dealloc(self.0.as_ptr(), self.1) }
        }
    }

    thread_local! {
        static QUARANTINE: RefCell<Vec<Quarantined>> = const { RefCell::new(Vec::new()) };
    }

    #[derive(Default)]
    pub struct MoveAll {
        /// Blocks moved by pointer, in the order offered (their old address).
        pub moved: Vec<usize>,
        /// Rebuilds run.
        pub rebuilt: usize,
        /// Say stop after this many `should_stop` checks answered no.
        pub stop_after: Option<usize>,
        pub checks: usize,
    }

    impl MoveAll {
        pub fn stopping_after(checks: usize) -> Self {
            MoveAll {
                stop_after: Some(checks),
                ..Default::default()
            }
        }
    }

    impl Mover for MoveAll {
        fn vec<T>(&mut self, v: &mut Vec<T>) {
            if v.capacity() == 0 || std::mem::size_of::<T>() == 0 {
                return;
            }
            self.moved.push(v.as_ptr() as usize);
            let mut fresh = Vec::with_capacity(v.capacity());
            fresh.append(v);
            *v = fresh;
        }

        fn boxed<T>(&mut self, b: &mut Box<T>) {
            let layout = Layout::new::<T>();
            if layout.size() == 0 {
                return;
            }
            let block = NonNull::from(&mut **b).cast::<u8>();
            // SAFETY: a box's block is live, from the global allocator with
            // `T`'s layout. The box is overwritten in place, never dropped
            // (its old block is the quarantine's now), with a box of the
            // moved block, which holds the same `T`.
            unsafe {
                let moved = self.raw(block, layout);
                std::ptr::write(b, Box::from_raw(moved.cast::<T>().as_ptr()));
            }
        }

        fn slice<T>(&mut self, b: &mut Box<[T]>) {
            if b.is_empty() || std::mem::size_of::<T>() == 0 {
                return;
            }
            self.moved.push(b.as_ptr() as usize);
            let mut fresh = Vec::with_capacity(b.len());
            fresh.extend(Vec::from(std::mem::take(b)));
            *b = fresh.into_boxed_slice();
        }

        fn small_vec<A: Array>(&mut self, v: &mut SmallVec<A>) {
            if !v.spilled() {
                return;
            }
            self.moved.push(v.as_ptr() as usize);
            let mut fresh = SmallVec::with_capacity(v.capacity());
            fresh.extend(v.drain(..));
            *v = fresh;
        }

        unsafe fn raw(&mut self, block: NonNull<u8>, layout: Layout) -> NonNull<u8> {
            self.moved.push(block.as_ptr() as usize);
            // SAFETY: `block` is live with `layout` (the caller's contract),
            // whose size is not zero (blocks of the global allocator); the
            // new block is as big and does not overlap it. The old one is
            // zeroed and kept (see the module doc), never read by us again.
            unsafe {
                let fresh = std::alloc::alloc(layout);
                let Some(fresh) = NonNull::new(fresh) else {
                    std::alloc::handle_alloc_error(layout)
                };
                std::ptr::copy_nonoverlapping(block.as_ptr(), fresh.as_ptr(), layout.size());
                std::ptr::write_bytes(block.as_ptr(), 0, layout.size());
                QUARANTINE.with(|q| q.borrow_mut().push(Quarantined(block, layout)));
                fresh
            }
        }

        fn placed<R>(&mut self, rebuild: impl FnOnce(&mut Self) -> R) -> R {
            self.rebuilt += 1;
            rebuild(self)
        }

        fn should_stop(&mut self) -> bool {
            self.checks += 1;
            self.stop_after.is_some_and(|n| self.checks > n)
        }
    }

    /// Runs `walk` to the end in calls that each stop after `checks`
    /// checks; returns the blocks moved, over all calls, and the calls made.
    pub fn in_slices(
        checks: usize,
        mut walk: impl FnMut(&mut Pass<MoveAll>),
    ) -> (Vec<usize>, usize) {
        let mut moved = Vec::new();
        let mut resume = Resume::new();
        for calls in 1.. {
            let mut mover = MoveAll::stopping_after(checks);
            let mut pass = Pass::new(&mut mover, std::mem::take(&mut resume));
            walk(&mut pass);
            let stopped = pass.finish();
            moved.extend(mover.moved);
            match stopped {
                Some(at) => resume = at,
                None => return (moved, calls),
            }
            assert!(calls < 1_000_000, "the pass never ends");
        }
        unreachable!()
    }
}

#[cfg(test)]
mod tests {
    use super::model::*;
    use super::*;

    /// A nested value: a vector of boxes of vectors, plus a tail vector.
    struct Nested {
        outer: Vec<Vec<Vec<u8>>>,
        tail: Vec<u32>,
    }

    impl Nested {
        fn new(shape: &[usize]) -> Self {
            Nested {
                outer: shape
                    .iter()
                    .map(|&n| (0..n).map(|i| vec![i as u8; 3]).collect())
                    .collect(),
                tail: vec![7; 5],
            }
        }

        fn walk<M: Mover>(&mut self, pass: &mut Pass<M>) {
            pass.work(|m| m.vec(&mut self.outer));
            pass.each(self.outer.iter_mut(), |inner, pass| {
                pass.work(|m| m.vec(inner));
                pass.each(inner.iter_mut(), |v, pass| pass.work(|m| m.vec(v)));
            });
            pass.work(|m| m.vec(&mut self.tail));
        }

        /// Blocks held (an empty vector holds none).
        fn blocks(&self) -> usize {
            let inner = |i: &Vec<Vec<u8>>| usize::from(i.capacity() > 0) + i.len();
            1 + self.outer.iter().map(inner).sum::<usize>() + 1
        }
    }

    #[test]
    fn a_pass_in_slices_moves_each_block_once_in_order() {
        let shape = [3, 0, 5, 1, 700];
        let mut whole = Nested::new(&shape);
        let (all, calls) = in_slices(usize::MAX, |p| whole.walk(p));
        assert_eq!((all.len(), calls), (whole.blocks(), 1));
        for checks in [0, 1, 2, 5, 300] {
            let mut sliced = Nested::new(&shape);
            let before: Vec<Vec<Vec<u8>>> = sliced.outer.clone();
            let (moved, calls) = in_slices(checks, |p| sliced.walk(p));
            assert_eq!(moved.len(), sliced.blocks(), "{checks} checks a call");
            let unique: std::collections::HashSet<_> = moved.iter().collect();
            assert_eq!(unique.len(), moved.len(), "a block moved twice");
            assert!(calls > 1, "{checks} checks a call: one call");
            assert_eq!(sliced.outer, before);
        }
    }

    #[test]
    fn a_stale_resume_point_skips_or_repeats_but_ends() {
        // Resume paths from a bigger value, used on a smaller one.
        let mut big = Nested::new(&[10, 10, 10]);
        let mut mover = MoveAll::stopping_after(15);
        let mut pass = Pass::new(&mut mover, Resume::new());
        big.walk(&mut pass);
        let at = pass.finish().expect("stopped");
        for shape in [&[][..], &[1], &[10, 2], &[2, 10, 10, 10]] {
            let mut small = Nested::new(shape);
            let mut mover = MoveAll::default();
            let mut pass = Pass::new(&mut mover, at.clone());
            small.walk(&mut pass);
            assert!(pass.finish().is_none());
            assert!(mover.moved.len() <= small.blocks());
        }
        // A path from nowhere (another type's) ends too.
        let mut small = Nested::new(&[3]);
        let mut mover = MoveAll::default();
        let mut pass = Pass::new(&mut mover, vec![u64::MAX, 3, u64::MAX]);
        small.walk(&mut pass);
        assert!(pass.finish().is_none());
    }

    #[test]
    fn items_without_work_are_visited_in_bounded_slices() {
        let mut visited = 0;
        let (_, calls) = in_slices(0, |p| p.each(0..10_000, |_, _| visited += 1));
        assert_eq!(visited, 10_000);
        // Stops every ITEMS_PER_CHECK items, not only at units of work.
        assert_eq!(calls as u64, 10_000u64.div_ceil(ITEMS_PER_CHECK - 1));
    }

    #[test]
    fn small_trees_are_rebuilt_big_ones_kept() {
        use std::collections::BTreeMap;
        let tree = |n: u64| -> BTreeMap<Box<[u8]>, u64> {
            (0..n).map(|i| (i.to_be_bytes().into(), i)).collect()
        };
        let (mut small, mut big) = (tree(100), tree(REBUILD_MAX as u64 + 1));
        let (before_small, before_big) = (small.clone(), big.clone());
        let mut mover = MoveAll::default();
        let mut pass = Pass::new(&mut mover, Resume::new());
        let (n_small, n_big) = (small.len(), big.len());
        rebuild(&mut pass, &mut small, n_small, |(k, _), m| m.slice(k));
        rebuild(&mut pass, &mut big, n_big, |(k, _), m| m.slice(k));
        assert!(pass.finish().is_none());
        // The small tree's keys moved with it; the big one stayed.
        assert_eq!((mover.rebuilt, mover.moved.len()), (1, 100));
        assert_eq!((small, big), (before_small, before_big));
    }
}
