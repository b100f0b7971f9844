//! Estimates by sampling, as Redis' `MEMORY USAGE key [SAMPLES count]` does
//! for its own collections: a big key is sized from a few of its items, so
//! the command stays fast at any size; `SAMPLES 0` sizes every item.

/// The sum of `size` over `len` items, from the first `samples` of `items`
/// scaled up (every item when `samples` is 0 or covers them all).
pub fn estimate<T>(
    items: impl Iterator<Item = T>,
    len: usize,
    samples: usize,
    size: impl Fn(T) -> usize,
) -> usize {
    if samples == 0 || len <= samples {
        return items.map(size).sum();
    }
    let sampled: usize = items.take(samples).map(size).sum();
    (sampled as u128 * len as u128 / samples as u128) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_when_asked_or_small_else_scaled() {
        let sizes = [4usize, 4, 4, 4, 100];
        assert_eq!(estimate(sizes.iter(), 5, 0, |&s| s), 116);
        assert_eq!(estimate(sizes.iter(), 5, 5, |&s| s), 116);
        assert_eq!(estimate(sizes.iter(), 5, 2, |&s| s), 20);
        assert_eq!(estimate([0usize; 0].iter(), 0, 5, |&s| s), 0);
    }
}
