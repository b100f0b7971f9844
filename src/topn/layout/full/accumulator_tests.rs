//! Tests of `accumulator.rs`.

use super::*;

fn held<A: Kept>() -> (usize, usize) {
    A::kept().with(|k| {
        let k = k.borrow();
        (k.len(), k.capacity())
    })
}

/// Packing asks, the timer makes the pages ready in slices, a read of that size finds
/// them; nothing used for a period frees everything.
#[test]
fn accumulators_are_warmed_ahead_and_freed_when_idle() {
    let t0 = 1_000_000;
    tend(t0);
    tend(t0 + RELEASE_MS); // nothing used: freed
    assert_eq!(held::<i32>().1, 0);
    let asked = 3 * WARM_SLICE;
    let slots = asked + asked / 8;
    want_warm(asked);
    let mut steps = 0;
    while tend(t0 + RELEASE_MS + 1 + steps) == WARM_TICK_MS {
        steps += 1;
        assert!(held::<i32>().0 < slots);
    }
    assert_eq!(steps, 3);
    assert_eq!(held::<i32>(), (slots, slots));
    // A read of that size uses the same pages (no new allocation).
    let ptr = ACCUMULATOR_32.with(|k| k.borrow().as_ptr());
    with_accumulator::<i32, _>(slots, |acc| assert_eq!(acc.as_ptr(), ptr));
    // After a fork the timer writes the same pages again before a read.
    forked();
    assert_eq!(held::<i32>(), (0, slots));
    while tend(t0 + RELEASE_MS + 1) == WARM_TICK_MS {}
    assert_eq!(held::<i32>(), (slots, slots));
    assert_eq!(ACCUMULATOR_32.with(|k| k.borrow().as_ptr()), ptr);
    // A read that grew it past the ready part: that is freed after a period unused (and
    // the ready part made again); the ready part is kept while idle up to the hold.
    with_accumulator::<i32, _>(2 * slots, |_| ());
    with_accumulator::<i64, _>(slots, |_| ());
    let mut now = t0 + 2 * RELEASE_MS + 10;
    tend(now);
    assert_eq!(held::<i32>().0, 2 * slots);
    now += RELEASE_MS;
    tend(now);
    assert_eq!(held::<i64>(), (0, 0));
    assert!(held::<i32>().0 < slots);
    while tend(now) == WARM_TICK_MS {}
    assert_eq!(held::<i32>(), (slots, slots));
    // The last look that saw a use.
    let used = t0 + 2 * RELEASE_MS + 10;
    while now + RELEASE_MS - used < WARM_HOLD_MS {
        now += RELEASE_MS;
        tend(now);
        assert_eq!(held::<i32>().0, slots);
    }
    now += RELEASE_MS;
    tend(now);
    assert_eq!(held::<i32>(), (0, 0));
    // Asks above the bound are cut to it.
    want_warm(usize::MAX);
    assert_eq!(WANTED_32.get(), KEPT_WARM);
}

/// Packings keep the ready part, not what reads grew beyond it (a key whose late writes
/// keep its buckets packing must not hold a big read's accumulators).
#[test]
fn packings_keep_the_ready_part_only() {
    let mut now = 1_000_000;
    // Small keys ask for none.
    want_warm(WARM_FROM - 1);
    assert_eq!(WANTED_32.get(), 0);
    want_warm(8000);
    while tend(now) == WARM_TICK_MS {}
    assert_eq!(held::<i32>(), (9000, 9000));
    with_accumulator::<i32, _>(50_000, |_| ());
    with_accumulator::<i64, _>(50_000, |_| ());
    now += RELEASE_MS;
    tend(now);
    assert_eq!(held::<i32>().0, 50_000);
    for _ in 0..3 {
        want_warm(8000);
        now += RELEASE_MS;
        while tend(now) == WARM_TICK_MS {}
    }
    assert_eq!(held::<i32>(), (9000, 9000));
    assert_eq!(held::<i64>(), (0, 0));
}
