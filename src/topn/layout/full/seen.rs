//! What the tests count of the paths the code takes (compiled in tests only): which walks
//! were tried, which writes landed in a bucket being walked, and so on. Each is named; the
//! code notes it where the path is taken.

use std::cell::Cell;
use std::thread::LocalKey;

thread_local! {
    /// Order-index operations (B-tree searches): an insertion, a removal or a repositioning.
    pub(super) static INDEX_OPS: Cell<usize> = const { Cell::new(0) };
    /// Walks with fixes a read took, and those that gave up (a proven walk should not).
    pub(super) static WALKS: Cell<usize> = const { Cell::new(0) };
    pub(super) static GAVE_UP: Cell<usize> = const { Cell::new(0) };
    /// Writes into a bucket a sum was walking out of.
    pub(super) static WRITES_INTO_WALKS: Cell<usize> = const { Cell::new(0) };
    /// Top reads answered by a selection over the clock's totals (no sum of buckets).
    pub(super) static CLOCK_SELECTIONS: Cell<usize> = const { Cell::new(0) };
    /// Buckets sealed.
    pub(super) static SEALINGS: Cell<usize> = const { Cell::new(0) };
}

/// Adds `n` to a count.
pub(super) fn note(count: &'static LocalKey<Cell<usize>>, n: usize) {
    count.set(count.get() + n);
}

/// A count now.
pub(super) fn get(count: &'static LocalKey<Cell<usize>>) -> usize {
    count.get()
}
