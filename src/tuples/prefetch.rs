//! A hint that memory is about to be read, so that its cache miss overlaps
//! with the work before the read instead of stalling it (a small key's
//! blocks are cold when a write reaches it among many keys).

/// Starts loading the cache line holding `p` into every cache level; no
/// effect on targets without the instruction.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // Sound: a prefetch is only a hint; it never faults, whatever the
    // address, and changes no state a program can observe (SSE, which has
    // the instruction, is part of every x86_64 CPU).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How many items ahead [`read_ahead`] asks for memory: enough for a miss
/// to complete during the work on the items between.
const AHEAD: usize = 16;

/// `items` mapped by `read`, the memory `at` gives for each asked for
/// [`AHEAD`] items before `read` reaches it: a walk through an index into
/// records that are likely cold (a paged read's shard of a big table).
pub fn read_ahead<'a, I: Copy + 'a, T: 'a, R>(
    items: Vec<I>,
    at: impl Fn(I) -> &'a T + 'a,
    mut read: impl FnMut(I) -> R + 'a,
) -> impl Iterator<Item = R> + 'a {
    (0..items.len()).map(move |k| {
        if let Some(&ahead) = items.get(k + AHEAD) {
            prefetch(at(ahead));
        }
        read(items[k])
    })
}
