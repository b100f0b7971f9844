//! Tests of `capped/mod.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The reads as the tests name them: `n`, `at_ms` and the `last` buckets.
impl Capped {
    pub(super) fn top_in(&self, n: usize, at_ms: i64, last: u32) -> Vec<(&[u8], Counted)> {
        self.top_of(&Query { at_ms, last, n })
    }

    pub(super) fn count_in(&self, member: &[u8], at_ms: i64, last: u32) -> Counted {
        self.count_of(member, &Query { at_ms, last, n: 0 })
    }
}

fn shape(window: u32) -> Shape {
    Shape::of_seconds(window)
}

/// Random skewed streams against the exact counts: every read's every
/// member lies within its bound, the exact members are listed while the
/// key is exact, and the true leaders are listed once they beat the
/// bound.
#[test]
fn every_bound_holds() {
    for seed in 0..30u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let window = rng.gen_range(1..6);
        let capacity = rng.gen_range(1..40);
        let mut key = Capped::new(shape(window), capacity);
        let mut events: Vec<(String, i64, i64)> = Vec::new();
        let mut t = 10_000i64;
        for _ in 0..1_500 {
            t += rng.gen_range(0..40);
            let x: f64 = rng.gen();
            let m = format!("m{}", (x * x * x * 120.0) as u32);
            let by = rng.gen_range(1..5);
            let at = t - rng.gen_range(0..2_000);
            let before = key.clone();
            let reply = key.incr(m.as_bytes(), by, at).unwrap().0;
            assert_eq!(reply, key.count_at_clock(m.as_bytes()).count, "seed {seed}");
            if before.shape.landing(at).is_none() {
                assert_eq!(before, key, "a late event changed the key");
            } else {
                events.push((m, by, key.shape.bucket_of(at)));
            }
        }
        let clock = key.shape.clock.unwrap();
        for k in 1..=window {
            let at = clock * 1000 + 999;
            let (lo, hi) = key.shape.read_range(at, k).unwrap();
            let mut exact: HashMap<&str, i64> = HashMap::new();
            for (m, by, b) in &events {
                if *b >= lo && *b <= hi {
                    *exact.entry(m).or_default() += by;
                }
            }
            for m in (0..125).map(|i| format!("m{i}")) {
                let truth = exact.get(m.as_str()).copied().unwrap_or(0);
                let got = key.count_in(m.as_bytes(), at, k);
                assert!(
                    got.count - got.error <= truth && truth <= got.count,
                    "seed {seed} k {k} {m}: true {truth}, got {got:?}"
                );
            }
            let top = key.top_in(5, at, k);
            let floors: i64 = key.read(lo, hi).map(|s| s.floor()).sum();
            if floors == 0 {
                let mut want: Vec<(&str, i64)> = exact.iter().map(|(m, c)| (*m, *c)).collect();
                want.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                want.truncate(5);
                let got: Vec<(&str, i64)> = top
                    .iter()
                    .map(|(m, b)| (std::str::from_utf8(m).unwrap(), b.count))
                    .collect();
                assert_eq!(got, want, "seed {seed}: exact while no bucket evicted");
                assert!(top.iter().all(|r| r.1.error == 0));
            }
        }
    }
}

#[test]
fn encodings_round_trip_and_refuse_damage() {
    let mut key = Capped::new(shape(3), 3);
    for (i, m) in ["a", "b", "c", "d", "e", "a"].iter().enumerate() {
        key.incr(m.as_bytes(), 1 + i as i64, (i as i64 / 2) * 1000)
            .unwrap();
    }
    let bytes = key.encode();
    let back = Capped::decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);
    assert_eq!(back.top_in(9, 2_999, 3), key.top_in(9, 2_999, 3));
    for cut in 0..bytes.len() {
        assert!(Capped::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut flipped = bytes.clone();
    flipped[1 + 8 + 4 + 8 + 1 + 8] = 0; // capacity 0
    assert!(Capped::decode(&flipped).is_err());
}

/// A rewrite's counters rebuild a key; a refused one changes nothing.
#[test]
fn set_counters_rebuild_and_refusals_change_nothing() {
    let mut key = Capped::new(shape(3), 1);
    key.set_counter(5, 4, b"a", (3, 1), true).unwrap();
    key.set_counter(6, 6, b"b", (2, 0), false).unwrap();
    let before = key.clone();
    for (clock, bucket, member, counted) in [
        (6, 4, &b"c"[..], (1, 0)), // past the capacity
        (9, 6, b"c", (1, 0)),      // outside the window of 9
        (5, 5, b"c", (1, 0)),      // the clock going back
        (6, 6, b"c", (1, 2)),      // an error past the count
    ] {
        assert!(key
            .set_counter(clock, bucket, member, counted, false)
            .is_err());
        assert_eq!(key, before);
    }
    assert_eq!(key.count_in(b"a", 6_999, 3), Counted { count: 3, error: 1 });
    assert_eq!(key.bound(), 3);
}

#[test]
fn eviction_is_deterministic_and_bounded() {
    let mut key = Capped::new(shape(2), 2);
    for (m, by) in [("b", 3), ("a", 3), ("c", 1)] {
        key.incr(m.as_bytes(), by, 0).unwrap();
    }
    // "a" and "b" tie at 3: "a", the smaller, made room for "c".
    let top: Vec<(&[u8], Counted)> = key.top_in(5, 0, 2);
    assert_eq!(
        top,
        [
            (&b"c"[..], Counted { count: 4, error: 3 }),
            (&b"b"[..], Counted { count: 3, error: 0 })
        ]
    );
    assert_eq!(key.bound(), 3);
    assert_eq!(key.count_in(b"a", 0, 2), Counted { count: 3, error: 3 });
    assert_eq!(key.counters(), 2);
}

/// Buckets as they come move no bucket (the key holds them boxed: a deque of buckets
/// doubling copied every bucket of the window in one write).
#[test]
fn new_buckets_move_no_bucket() {
    let mut key = Capped::new(shape(20_000), 4);
    key.incr(b"first", 1, 0).unwrap();
    let first = &*key.buckets[0] as *const Bucket;
    for b in 1..9_000i64 {
        key.incr(format!("m{b}").as_bytes(), 1, b * 1_000).unwrap();
    }
    assert_eq!(&*key.buckets[0] as *const Bucket, first);
    assert_eq!(key.buckets.len(), 9_000);
}

/// A defrag pass, in calls stopped after every check, moves every
/// bucket's blocks and changes no answer.
#[test]
fn defrag_moves_every_bucket_and_changes_nothing() {
    use crate::tuples::defrag::model::MoveAll;
    use crate::tuples::defrag::Resume;
    let mut key = Capped::new(shape(6), 20);
    let mut rng = StdRng::seed_from_u64(8);
    for i in 0..3_000 {
        let m = format!("m{}", rng.gen_range(0..200));
        key.incr(m.as_bytes(), rng.gen_range(1..5), (i / 500) * 1_000)
            .unwrap();
    }
    let before = key.clone();
    let (mut resume, mut moved, mut calls) = (Resume::new(), 0, 0);
    loop {
        calls += 1;
        let mut mover = MoveAll::stopping_after(1);
        let mut pass = Pass::new(&mut mover, std::mem::take(&mut resume));
        key.defrag(&mut pass);
        let stopped = pass.finish();
        moved += mover.moved.len();
        match stopped {
            Some(at) => resume = at,
            None => break,
        }
        assert!(calls < 100, "the pass never ends");
    }
    assert_eq!(key, before);
    assert_eq!(
        moved,
        6 * 6,
        "six blocks a bucket (its box, its summary's slots, links, table, arenas and arena)"
    );
    assert_eq!(key.encode(), before.encode());
}
