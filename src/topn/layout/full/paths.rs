//! Which paths the full layout's code took, counted in tests only (they check that a
//! case takes the path it is meant to).

#[cfg(test)]
thread_local! {
    /// Test-only path counters: [plain walks, corrected walks, direct fallbacks, buries,
    /// retirement steps in a bucket caught mid-growth, writes to a frozen bucket's extra,
    /// writes to an aged bucket, buckets aged, sums over a packed copy, packings done,
    /// clock-index build steps, walks of the clock index, threshold merges, walks of a view].
    pub(super) static PATHS: std::cell::Cell<[usize; 14]> = const { std::cell::Cell::new([0; 14]) };
}

#[inline]
pub(super) fn note_path(_i: usize) {
    #[cfg(test)]
    PATHS.with(|p| {
        let mut v = p.get();
        v[_i] += 1;
        p.set(v);
    });
}
