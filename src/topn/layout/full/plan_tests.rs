//! The read planner (`plan.rs`): a flat window goes straight to the sum (without making the
//! newest bucket's list) and a skewed one to a walk or a merge, each without trying the other
//! plans, and no plan taken gives up; answers as the sum's.

use super::merge::SCANNED;
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

/// `[walks, merges, plans given up, lists made by a scan]` of a read of the top 10 of `LAST k`
/// at the newest bucket, checked against the sum of its buckets.
fn tried(t: &Full, k: u32) -> [usize; 4] {
    let at = 23 * 1000 + 500;
    let sp = t.span(at, k).unwrap();
    TRIED.with(|c| c.set([0; 3]));
    SCANNED.with(|c| c.set(0));
    let rows = t.top_in(10, at, k);
    assert_eq!(rows, t.top_direct(10, sp.i0, sp.i1), "LAST {k}");
    let [walks, merges, gave_up] = TRIED.with(|c| c.get());
    [walks, merges, gave_up, SCANNED.with(|c| c.get())]
}

#[test]
fn a_flat_window_goes_straight_to_the_sum() {
    for aged in [0, 3] {
        let t = key(false, aged);
        for k in [2, 6, 12] {
            // Not even the newest bucket's list is made (its scan would be for nothing).
            assert_eq!(tried(&t, k), [0, 0, 0, 0], "LAST {k}, {aged} aged");
        }
    }
}

#[test]
fn a_skewed_window_walks_or_merges_without_trying_anything_else() {
    for aged in [0, 3] {
        let t = key(true, aged);
        // Two buckets of 24: a merge of their lists (2 lookups a member seen) beats a walk
        // whose order (the running total's) says little about them. The newest bucket's list
        // is a scan of it while the server's time is in it, its packed copy once the time
        // has been past its end for a while (3 s: the key was idle since).
        let scans = usize::from(aged == 0);
        assert_eq!(tried(&t, 2), [0, 1, 0, scans], "LAST 2, {aged} aged");
        // `LAST 6`, `LAST 12`: the walk counts each candidate in k lookups at most (the read
        // window's buckets, not the fixes for the 24 - k others), and the index's head and the
        // packed lists' heads prove it before the newest bucket's list is made (a scan of it).
        // With every bucket's list packed (the key idle), `LAST 6` merges its six lists (no
        // scan), cheaper than the walk; `LAST 12`'s merge is not.
        for k in [6, 12] {
            let plan = match (aged, k) {
                (0, _) | (_, 12) => [1, 0, 0, 0],
                _ => [0, 1, 0, 0],
            };
            assert_eq!(tried(&t, k), plan, "LAST {k}, {aged} aged");
        }
    }
}
