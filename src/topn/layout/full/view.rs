//! One view's running state (`views.rs` keeps it), apart from the code that keeps it so the
//! key type can hold it without a circle.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use super::members::IdHasher;

pub(super) type IdSet = HashSet<u32, BuildHasherDefault<IdHasher>>;

/// One view's running state.
#[derive(Clone, Debug)]
pub(super) struct View {
    pub(super) k: u32,
    /// Stored buckets from this one up are counted (of the one at `lo`, while it is being
    /// subtracted, only the ids not done yet).
    pub(super) lo: i64,
    pub(super) aging: Option<Box<Aging>>,
}

/// The subtraction of bucket `lo` from a view in progress.
#[derive(Clone, Debug)]
pub(super) struct Aging {
    /// Next cell to visit (the table's, then `extra`'s: `Bucket::any_cell`).
    pub(super) pos: usize,
    /// The bucket's layout when `pos` last moved: another one starts the walk over.
    pub(super) layout: [usize; 6],
    /// Members whose entry left the view.
    pub(super) done: IdSet,
}

impl View {
    pub(super) fn heap_bytes(&self) -> usize {
        self.aging.as_ref().map_or(0, |a| a.heap_bytes())
    }
}

impl Aging {
    pub(super) fn heap_bytes(&self) -> usize {
        self.done.capacity() * 8
    }
}
