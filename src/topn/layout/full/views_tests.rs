//! Model test of views: a key with views beside the same key without (whose reads the model
//! tests check against sums of events), through bucket boundaries, late events, server time
//! running ahead, clock jumps, upkeep in small slices, loads and copies. Every read agrees, and
//! reads at the server's time once upkeep caught up walk a view's index without a fix.

use super::key::*;
use super::tests::check_invariants;
use crate::topn::views::Views;
use crate::topn::window::Query;
use crate::topn::window::Upkept;
use crate::topn::window::Window;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn owned(rows: Vec<(&[u8], i64)>) -> Vec<(Vec<u8>, i64)> {
    rows.into_iter().map(|(m, c)| (m.to_vec(), c)).collect()
}

/// Every read of both keys at `at`, each `LAST k` and a few members, agrees.
fn same_reads(a: &Full, b: &Full, at: i64, pool: usize, what: &str) {
    for k in 1..=a.window() {
        for n in [1, 3, 50] {
            assert_eq!(
                owned(a.top_in(n, at, k)),
                owned(b.top_in(n, at, k)),
                "{what}: top {n} at {at} last {k}"
            );
        }
        for m in 0..pool.min(12) {
            let m = format!("m{m}");
            assert_eq!(
                a.count_in(m.as_bytes(), at, k),
                b.count_in(m.as_bytes(), at, k),
                "{what}: count {m} at {at} last {k}"
            );
        }
    }
}

fn run(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let window = rng.gen_range(3..9u32);
    let mut ks: Vec<i64> = (2..window as i64).filter(|_| rng.gen_bool(0.6)).collect();
    if ks.is_empty() {
        ks.push(2);
    }
    let views = Views::new(&ks, window).unwrap();
    let bucket_ms = 1000;
    let mut with = Full::new(bucket_ms, window).with_views(&views);
    let mut plain = Full::new(bucket_ms, window);
    let budget = rng.gen_range(1..40);
    with.set_retire_budget(budget);
    let pool = rng.gen_range(3..60);
    let mut now: i64 = 10_000;
    for step in 0..1500 {
        now += match rng.gen_range(0..100) {
            0 => (window as i64 + 1) * bucket_ms, // past the whole window
            1..=6 => bucket_ms,
            _ => rng.gen_range(0..60),
        };
        let at = match rng.gen_range(0..10) {
            0 => now - rng.gen_range(0..(window as i64 + 1) * bucket_ms), // late
            _ => now,
        };
        let member = format!("m{}", rng.gen_range(0..pool));
        let by = match rng.gen_range(0..25) {
            0 => -rng.gen_range(1..4),
            _ => rng.gen_range(1..50),
        };
        let server = now + rng.gen_range(0..3) * bucket_ms; // the server's time, maybe ahead
        with.observe_time(server);
        plain.observe_time(server);
        // Counts alike; when each frees what is stale depends on its upkeep.
        let a = with.incr(member.as_bytes(), by, at).map(|w| w.0);
        let b = plain.incr(member.as_bytes(), by, at).map(|w| w.0);
        assert_eq!(a, b, "seed {seed} step {step}: incr");
        if rng.gen_bool(0.3) {
            with.upkeep(rng.gen_range(1..200));
            plain.upkeep(1000);
        }
        if step % 7 == 0 {
            check_invariants(&with);
            let what = format!("seed {seed} step {step}");
            same_reads(&with, &plain, server, pool, &what);
            same_reads(&with, &plain, now - rng.gen_range(0..3000), pool, &what);
        }
        if step % 250 == 0 {
            // A load (RDB, a replica's sync) and a copy read alike and keep the views.
            let loaded = Full::decode_at(&with.encode(), Some(server)).unwrap();
            assert_eq!(loaded.views(), views);
            check_invariants(&loaded);
            assert_eq!(loaded.encode(), with.encode());
            let what = format!("seed {seed} step {step} loaded");
            same_reads(&loaded, &plain, server, pool, &what);
            let copy = with.clone();
            check_invariants(&copy);
            same_reads(&copy, &plain, server, pool, &what);
        }
    }
    // Caught up at the server's time, the writes stopped a while (the newest bucket sealed):
    // a view's read walks its index.
    let server = now + 2 * bucket_ms + crate::topn::shape::SEAL_DELAY_MS;
    with.observe_time(server);
    while with.upkeep(1000).0 >= 1000 {}
    check_invariants(&with);
    for k in views.iter() {
        let rows = owned(with.top_in(5, server, k));
        assert_eq!(rows, owned(plain.top_in(5, server, k)));
        if with
            .span(&Query {
                at_ms: server,
                last: k,
                n: 0,
            })
            .is_some()
        {
            // Its view's index, or the window's when that holds the same buckets.
            let walked = with.walked_sum(server, k);
            assert!(walked.is_some(), "seed {seed}: a view's read walks it");
        }
    }
}

#[test]
fn views_read_as_sums_of_their_buckets() {
    for seed in 0..60 {
        run(seed);
    }
}

#[test]
fn a_view_read_is_a_walk() {
    let views = Views::new(&[2, 3], 6).unwrap();
    let mut t = Full::new(1000, 6).with_views(&views);
    for b in 0..6i64 {
        for m in 0..50 {
            let name = format!("m{m}");
            t.incr(name.as_bytes(), (m * (b + 1)) % 17 + 1, b * 1000 + 5)
                .unwrap();
        }
    }
    t.observe_time(5_500);
    while t.upkeep(1000).0 >= 1000 {}
    check_invariants(&t);
    let top = owned(t.top_in(3, 5_500, 3));
    assert_eq!(t.walked_sum(5_500, 3), Some(2), "the view of 3");
    let sp = t
        .span(&Query {
            at_ms: 5_500,
            last: 3,
            n: 0,
        })
        .unwrap();
    assert_eq!(top, owned(t.top_direct(3, &sp)));
}

/// A backfill (a day of past buckets, oldest first, the server's time at the newest) costs a
/// view only the events of its own buckets: a write into a bucket the view has left is not added
/// to it and walked out again, and a member new to the key has no key in a view's index until it
/// counts there. Counted in order-index operations, every event replied to as without views.
#[test]
fn a_backfill_costs_a_view_its_own_buckets_only() {
    use super::seen::{get, INDEX_OPS};
    const H: i64 = 3_600_000;
    let (buckets, events, members) = (24i64, 2_000, 8_000);
    let now = 1000 * H + H / 2;
    let load = |views: &Views| {
        let mut t = Full::new(H, 24).with_views(views);
        let mut rng = StdRng::seed_from_u64(1);
        let (ops, mut replies) = (get(&INDEX_OPS), Vec::new());
        for b in 0..buckets {
            for _ in 0..events {
                let m = format!("m{}", rng.gen_range(0..members));
                t.observe_time(now);
                let at = (1000 - (buckets - 1) + b) * H + 5;
                replies.push(t.incr(m.as_bytes(), 1, at).unwrap());
            }
        }
        check_invariants(&t);
        (get(&INDEX_OPS) - ops, replies)
    };
    let views = Views::new(&[6, 12], 24).unwrap();
    let (plain, replies) = load(&Views::NONE);
    let (with, replies_with) = load(&views);
    assert_eq!(replies, replies_with);
    // Each view: its buckets' events (a new member's key put in is one); and the first write,
    // which a new key's sums take before they know where they start (and walk out of).
    let owed: usize = views.iter().map(|k| k as usize * events + 2).sum();
    assert!(
        with <= plain + owed,
        "index operations: {with} with views, {plain} without, {owed} owed to the views"
    );
}

/// A key read at a time in the past, its views walked on to the server's time since (an idle
/// key, a replica after its sync): `AT <newest bucket> LAST k` of a declared k, a few buckets
/// later, on the `topn-reads` shape (a skewed head, popularity reversing half-way). Each read
/// walks the index of a sum that holds its whole window (corrected by the buckets it holds
/// besides, which take nothing from the bound) and sums no bucket: counted in walks, none given
/// up; every answer as the read window's buckets summed.
#[test]
fn a_view_read_in_the_past_walks() {
    use super::seen::{get, GAVE_UP, WALKS};
    let (buckets, events, members, head) = (24i64, 10_000, 40_000, 1_000);
    let views = Views::new(&[2, 6, 12], 24).unwrap();
    let mut t = Full::new(1000, 24).with_views(&views);
    let mut rng = StdRng::seed_from_u64(24);
    let first = 1_000i64;
    // Written ahead of the server's clock, oldest bucket first.
    t.observe_time(first * 1000 - 1000);
    for b in 0..buckets {
        for e in 0..events {
            let rank = match e < head {
                true => (200.0 * rng.gen::<f64>().powi(3)) as i64,
                false => rng.gen_range(0..members),
            };
            let m = if b < buckets / 2 {
                rank
            } else {
                members - 1 - rank
            };
            let at = (first + b) * 1000 + 1;
            t.incr(format!("m{m}").as_bytes(), 1, at).unwrap();
        }
    }
    let newest = (first + buckets - 1) * 1000;
    t.observe_time(newest + 3_000);
    while t.upkeep(1000).0 >= 1000 {}
    check_invariants(&t);
    for k in views.iter() {
        let q = Query {
            at_ms: newest + 500,
            last: k,
            n: 10,
        };
        let sp = t.span(&q).unwrap();
        let (walks, gave_up) = (get(&WALKS), get(&GAVE_UP));
        let rows = owned(t.top_of(&q));
        assert_eq!(
            (get(&WALKS) - walks, get(&GAVE_UP) - gave_up),
            (1, 0),
            "LAST {k}: a walk, not a sum"
        );
        assert_eq!(rows, owned(t.top_direct(10, &sp)), "LAST {k}");
    }
}
