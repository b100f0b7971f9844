//! The read planner (`plan.rs`): a flat window goes straight to the sum and a skewed one to a
//! walk or a merge, each without trying the other plans, and no plan taken gives up; answers
//! as the sum's.

use super::plan::TRIED;
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// 24 buckets of 1 s, 10,000 events each over 40,000 members, popularity reversing half-way
/// (as the bench's `topn-reads` keys): flat (`BY` 1-100, members equally likely) or skewed
/// (unit events, a fifth of them on a head of 200 members), packed; then `aged` buckets
/// aged out of the running total.
fn key(skewed: bool, aged: i64) -> Full {
    let (members, events) = (40_000u64, 10_000u64);
    let mut rng = StdRng::seed_from_u64(37);
    let mut t = Full::new(1000, 24);
    for b in 0..24i64 {
        for e in 0..events {
            let (rank, by) = if !skewed {
                (rng.gen_range(0..members), rng.gen_range(1..=100))
            } else if e < events / 5 {
                let u: f64 = rng.gen();
                ((200.0 * u * u * u) as u64, 1)
            } else {
                (rng.gen_range(0..members), 1)
            };
            let m = if b < 12 { rank } else { members - 1 - rank };
            t.incr(format!("m{m}").as_bytes(), by, b * 1000 + 1)
                .unwrap();
        }
    }
    t.observe_time((23 + aged) * 1000 + 1);
    while t.upkeep(128) == 128 {}
    t
}

/// `[walks, merges, plans given up]` of a read of the top 10 of `LAST k` at the newest bucket,
/// checked against the sum of its buckets.
fn tried(t: &Full, k: u32) -> [usize; 3] {
    let at = 23 * 1000 + 500;
    let sp = t.span(at, k).unwrap();
    TRIED.with(|c| c.set([0; 3]));
    let rows = t.top_in(10, at, k);
    assert_eq!(rows, t.top_direct(10, sp.i0, sp.i1), "LAST {k}");
    TRIED.with(|c| c.get())
}

#[test]
fn a_flat_window_goes_straight_to_the_sum() {
    for aged in [0, 3] {
        let t = key(false, aged);
        for k in [2, 6, 12] {
            assert_eq!(tried(&t, k), [0, 0, 0], "LAST {k}, {aged} aged");
        }
    }
}

#[test]
fn a_skewed_window_walks_or_merges_without_trying_anything_else() {
    for aged in [0, 3] {
        let t = key(true, aged);
        // Few buckets of 24: a merge of their lists (k lookups a member seen) beats a walk that
        // corrects each candidate for the 24 - k others.
        for k in [2, 6] {
            assert_eq!(tried(&t, k), [0, 1, 0], "LAST {k}, {aged} aged");
        }
    }
    // `LAST 12`: the walk corrects each candidate for 12 buckets at most, and the packed
    // lists' heads prove it before the newest bucket's list is made (a scan of it).
    for aged in [0, 3] {
        assert_eq!(
            tried(&key(true, aged), 12),
            [1, 0, 0],
            "LAST 12, {aged} aged"
        );
    }
}
