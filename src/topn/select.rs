//! Selection of the top rows of a sum: the `n` highest counts, ties by member name
//! ascending, zero counts left out. Pure; names are read through a closure, and only for the
//! rows returned and the candidates tied with the n-th count (names are cold: each read is
//! about a cache miss).
//!
//! Two passes over the candidates: the first finds the n-th highest count (counts above the
//! n-th highest so far are buffered, and the buffer is cut back to the n highest when full:
//! amortized O(1) a candidate in any order), the second collects the rows above it and the
//! members tied with it. [`top_dense`] is the fast case of dense sums: it reads plain counts a
//! chunk at a time, where a zero or negative count costs one well-predicted comparison.

use std::collections::BinaryHeap;

/// `(member, count)` rows, highest first.
pub(super) type Rows<'a> = Vec<(&'a [u8], i64)>;

/// Room of the pass-1 buffer beyond `2 n`.
const BUFFER_SLACK: usize = 1024;

/// The top `n` (`>= 1`) of the `(count, member id)` candidates of `candidates()` (called twice,
/// the same candidates each time, no zero count), highest first, ties by member ascending.
pub(super) fn top_rows<'a, I: Iterator<Item = (i128, u32)>>(
    n: usize,
    candidates: impl Fn() -> I,
    name: impl Fn(u32) -> &'a [u8],
) -> Rows<'a> {
    let desc = |a: &i128, b: &i128| b.cmp(a);
    let full = n.saturating_mul(2).saturating_add(BUFFER_SLACK);
    let mut buf: Vec<i128> = Vec::new();
    let mut floor: Option<i128> = None;
    // Internal iteration (`for_each`): candidates are often chains of runs, which a `for`
    // loop would step through one state check at a time.
    candidates().for_each(|(c, _)| {
        if floor.is_none_or(|f| c > f) {
            buf.push(c);
            if buf.len() >= full {
                buf.select_nth_unstable_by(n - 1, desc);
                buf.truncate(n);
                floor = Some(buf[n - 1]);
            }
        }
    });
    if buf.is_empty() {
        return Vec::new();
    }
    let threshold = if buf.len() >= n {
        buf.select_nth_unstable_by(n - 1, desc);
        Some(buf[n - 1])
    } else {
        None // fewer than n candidates: all of them
    };
    drop(buf);
    let mut rows: Vec<(i128, u32)> = Vec::new();
    let mut tied: Vec<u32> = Vec::new();
    candidates().for_each(|(c, id)| match threshold {
        Some(t) if c == t => tied.push(id),
        Some(t) if c < t => {}
        _ => rows.push((c, id)),
    });
    finish(n, threshold, rows, tied, name)
}

/// Counts a chunk of [`top_dense`] holds: its maximum is a vectorized pass, and a chunk whose
/// maximum is below the n-th best so far is skipped whole.
pub(super) const CHUNK: usize = 64;

/// [`top_rows`] over dense counts (`counts[id]`, given as consecutive parts, each but the
/// last a whole number of `CHUNK`s) when at least `n` (`>= 1`) of them are positive, `None`
/// otherwise (then ask `top_rows`): the same rows, chunk by chunk, a chunk read one count at a
/// time only when its maximum can reach the n-th best so far (on a dense sum over 200,000
/// members, a few hundred of them once the first chunks set the floor).
pub(super) fn top_dense<'a, T: Copy + Ord + Default + Into<i64>>(
    n: usize,
    parts: &[&[T]],
    name: impl Fn(u32) -> &'a [u8],
) -> Option<Rows<'a>> {
    debug_assert!(parts.iter().rev().skip(1).all(|p| p.len() % CHUNK == 0));
    let chunks = || parts.iter().flat_map(|p| p.chunks(CHUNK));
    let desc = |a: &i64, b: &i64| b.cmp(a);
    // A small buffer: the floor rises within the first chunks, and then most are skipped.
    let full = n.saturating_mul(2).saturating_add(CHUNK);
    // Each chunk's maximum, kept for the second pass.
    let maxima: Vec<i64> = chunks()
        .map(|chunk| chunk.iter().copied().fold(T::default(), Ord::max).into())
        .collect();
    let mut buf: Vec<i64> = Vec::new();
    let mut floor = 0i64;
    for (chunk, &max) in chunks().zip(&maxima) {
        if max <= floor {
            continue;
        }
        for &c in chunk {
            let c: i64 = c.into();
            if c > floor {
                buf.push(c);
                if buf.len() >= full {
                    buf.select_nth_unstable_by(n - 1, desc);
                    buf.truncate(n);
                    floor = buf[n - 1];
                }
            }
        }
    }
    if buf.len() < n {
        return None;
    }
    buf.select_nth_unstable_by(n - 1, desc);
    let t = buf[n - 1];
    drop(buf);
    let mut rows: Vec<(i128, u32)> = Vec::new();
    let mut tied: Vec<u32> = Vec::new();
    for (i, chunk) in chunks().enumerate() {
        if maxima[i] < t {
            continue;
        }
        for (j, &c) in chunk.iter().enumerate() {
            let c: i64 = c.into();
            let id = (i * CHUNK + j) as u32;
            if c > t {
                rows.push((c as i128, id));
            } else if c == t {
                tied.push(id);
            }
        }
    }
    Some(finish(n, Some(t as i128), rows, tied, name))
}

/// The rows above the threshold plus the members tied with it that fit in `n`, by name, all
/// sorted highest first, ties by member ascending.
fn finish<'a>(
    n: usize,
    threshold: Option<i128>,
    mut rows: Vec<(i128, u32)>,
    mut tied: Vec<u32>,
    name: impl Fn(u32) -> &'a [u8],
) -> Rows<'a> {
    if let Some(t) = threshold {
        let need = n - rows.len();
        if tied.len() > need * 8 {
            // Few of many: a bounded max-heap reads each tied name once.
            let mut heap: BinaryHeap<(&[u8], u32)> = BinaryHeap::with_capacity(need + 1);
            for id in tied.iter().copied() {
                let nm = name(id);
                if heap.len() < need {
                    heap.push((nm, id));
                } else if let Some(mut top) = heap.peek_mut() {
                    if nm < top.0 {
                        *top = (nm, id);
                    }
                }
            }
            tied = heap.into_iter().map(|(_, id)| id).collect();
        } else if tied.len() > need {
            tied.select_nth_unstable_by(need - 1, |a, b| name(*a).cmp(name(*b)));
            tied.truncate(need);
        }
        rows.extend(tied.into_iter().map(|id| (t, id)));
    }
    rows.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| name(a.1).cmp(name(b.1))));
    rows.into_iter()
        .map(|(c, id)| (name(id), clamp_i64(c)))
        .collect()
}

#[inline]
pub(super) fn clamp_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
