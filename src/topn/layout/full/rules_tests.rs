//! Unit tests of the full layout's window rules: bucket arithmetic, ties, overflow, late
//! events, the server's time, upkeep and retirement, memory figures.

use super::key::*;
use super::tests::*;
use crate::topn::error::Overflow;
use crate::topn::shape::Shape;
use crate::topn::window::Upkept;
use crate::topn::window::Window;

#[test]
fn bucket_arithmetic_and_window_bounds() {
    let mut t = Full::new(1000, 3);
    assert_eq!(t.bucket_of(0), 0);
    assert_eq!(t.bucket_of(999), 0);
    assert_eq!(t.bucket_of(1000), 1);
    assert_eq!(t.incr(b"a", 1, 999).unwrap().0, 1); // bucket 0
    assert_eq!(t.incr(b"a", 10, 1000).unwrap().0, 11); // bucket 1
    assert_eq!(t.incr(b"a", 100, 2999).unwrap().0, 111); // bucket 2
                                                         // Window ending in bucket 2 = buckets 0..=2.
    assert_eq!(t.count(b"a", 2000), 111);
    assert_eq!(t.count(b"a", 2999), 111);
    // Bucket 3: buckets 1..=3.
    assert_eq!(t.count(b"a", 3000), 110);
    assert_eq!(t.count(b"a", 3999), 110);
    assert_eq!(t.count(b"a", 4000), 100);
    assert_eq!(t.count(b"a", 5000), 0);
    // Before the clock: windows ending in bucket 1 and 0.
    assert_eq!(t.count(b"a", 1999), 11);
    assert_eq!(t.count(b"a", 0), 1);
    assert_eq!(t.top(10, 3500), vec![(&b"a"[..], 110)]);
    assert_eq!(t.expire_at_ms(), Some(5000));
    assert_eq!(t.buckets_in_use(), 3);
    // Default sizes: one hour x 24.
    let mut d = Full::new(H, 24);
    d.incr(b"x", 1, 5 * H + 1).unwrap();
    assert_eq!(d.count(b"x", 5 * H + 23 * H + H - 1), 1);
    assert_eq!(d.count(b"x", 5 * H + 24 * H), 0);
    assert_eq!(d.expire_at_ms(), Some(29 * H));
    assert_eq!(Full::new(H, 24).expire_at_ms(), None);
}

#[test]
fn ties_zero_and_negative() {
    let mut t = Full::new(1000, 5);
    for m in [&b"b"[..], b"ab", b"a", b"a\0", b"\xff", b""] {
        t.incr(m, 2, 10).unwrap();
    }
    t.incr(b"z", 3, 10).unwrap();
    let top = top_owned(&t, 10, 10);
    let expect: Vec<(Vec<u8>, i64)> = vec![
        (b"z".to_vec(), 3),
        (b"".to_vec(), 2),
        (b"a".to_vec(), 2),
        (b"a\0".to_vec(), 2),
        (b"ab".to_vec(), 2),
        (b"b".to_vec(), 2),
        (b"\xff".to_vec(), 2),
    ];
    assert_eq!(top, expect);
    assert_eq!(top_owned(&t, 3, 10), expect[..3].to_vec());
    // Zero counts are hidden; negatives listed last.
    assert_eq!(t.incr(b"z", -3, 10).unwrap().0, 0);
    assert_eq!(t.incr(b"neg", -4, 1010).unwrap().0, -4);
    assert_eq!(t.incr(b"neg2", -1, 1010).unwrap().0, -1);
    let top = top_owned(&t, 100, 1010);
    assert_eq!(top.len(), 8);
    assert_eq!(top[6], row("neg2", -1));
    assert_eq!(top[7], row("neg", -4));
    assert!(top.iter().all(|(m, _)| m != b"z"));
    assert_eq!(t.count(b"z", 1010), 0);
    // Cancel across buckets: +5 in bucket 1, -5 in bucket 2.
    t.incr(b"c", 5, 1500).unwrap();
    t.incr(b"c", -5, 2500).unwrap();
    assert_eq!(t.count(b"c", 2500), 0);
    assert!(top_owned(&t, 100, 2500).iter().all(|(m, _)| m != b"c"));
    // Read ending in bucket 1 sees +5 only.
    assert!(top_owned(&t, 100, 1500).contains(&row("c", 5)));
    check_invariants(&t);
}

#[test]
fn overflow_rejected_and_nothing_changed() {
    let mut t = Full::new(1000, 3);
    t.incr(b"a", i64::MAX, 0).unwrap();
    let before = t.encode();
    assert_eq!(t.incr(b"a", 1, 0), Err(Overflow));
    // Window total overflows although the new bucket would not.
    assert_eq!(t.incr(b"a", 1, 1000), Err(Overflow));
    assert_eq!(t.encode(), before, "clock must not advance either");
    assert_eq!(t.count(b"a", 1000), i64::MAX);
    assert_eq!(t.incr(b"a", -1, 1000).unwrap().0, i64::MAX - 1);
    assert_eq!(t.incr(b"b", i64::MIN, 1000).unwrap().0, i64::MIN);
    assert_eq!(t.incr(b"b", -1, 1000), Err(Overflow));
    assert_eq!(t.incr(b"b", -1, 2000), Err(Overflow));
    assert_eq!(t.count(b"b", 2000), i64::MIN);
    // Once bucket 0 has left the window, a = MAX-1 ... only bucket 1 (-1) remains.
    assert_eq!(t.incr(b"a", i64::MAX, 3000).unwrap().0, i64::MAX - 1);
    assert_eq!(t.count(b"a", 3000), i64::MAX - 1);
    assert_eq!(t.top(1, 3000), vec![(&b"a"[..], i64::MAX - 1)]);
    check_invariants(&t);
    for _ in 0..10 {
        t.incr(b"q", 1, 3000).unwrap();
    }
    assert!(t.is_settled());
    check_invariants(&t);
}

/// A late write to a member of a bucket that is sealing (at every step of it) or sealed: its
/// count swings across nearly the whole range, as far as any count may, and stays exact.
#[test]
fn late_counts_swing_across_the_range_at_every_stage() {
    let big = i64::MIN / 2 - 1;
    for steps in 0..40 {
        let mut t = Full::new(1000, 4);
        t.set_retire_budget(2);
        for i in 0..30 {
            t.incr(format!("m{i}").as_bytes(), 1, 10).unwrap();
        }
        t.incr(b"a", 7, 10).unwrap();
        // Bucket 0 starts sealing; each write after is one more step of it.
        for i in 0..steps {
            t.incr(format!("n{i}").as_bytes(), 1, 1010).unwrap();
        }
        let stage = t.sealed()[0];
        let low = 7 + big + big;
        assert_eq!(t.incr(b"a", big, 20).unwrap().0, 7 + big);
        assert_eq!(t.incr(b"a", big, 30).unwrap().0, low, "steps {steps}");
        assert_eq!(t.incr(b"a", -10, 40), Err(Overflow));
        assert_eq!(t.incr(b"a", 1, 40).unwrap().0, low + 1);
        check_invariants(&t);
        assert_eq!(t.count(b"a", 1010), low + 1);
        assert_eq!(t.top_in(100, 999, 1).last(), Some(&(&b"a"[..], low + 1)));
        t.incr(b"a", -big, 50).unwrap();
        assert_eq!(
            t.incr(b"a", -big, 50).unwrap().0,
            8,
            "sealed before: {stage}"
        );
        while !t.is_settled() {
            t.incr(b"q", 1, 1010).unwrap();
            check_invariants(&t);
        }
        assert_eq!(t.count(b"a", 1010), 8);
        t.incr(b"a", big, 60).unwrap();
        assert_eq!(t.incr(b"a", big, 60).unwrap().0, low + 1);
        assert_eq!(t.top_in(100, 999, 1).last(), Some(&(&b"a"[..], low + 1)));
        assert_eq!(
            Full::decode(&t.encode()).unwrap().count(b"a", 1010),
            low + 1
        );
        check_invariants(&t);
    }
}

#[test]
fn aggregate_overflow_with_stale_bucket_pending() {
    // The stale bucket still counts in the aggregate: the write must purge it, not fail.
    let mut t = Full::new(1000, 2);
    t.set_retire_budget(1);
    for i in 0..50 {
        t.incr(format!("m{i}").as_bytes(), 1, 0).unwrap();
    }
    t.incr(b"a", i64::MAX, 0).unwrap();
    t.incr(b"b", 1, 1000).unwrap();
    // Bucket 0 becomes stale, bucket 1 stays live: not a full reset.
    assert_eq!(t.incr(b"a", i64::MAX, 2000).unwrap().0, i64::MAX);
    assert!(!t.is_settled());
    assert_eq!(t.count(b"a", 2000), i64::MAX);
    assert_eq!(t.top(1, 2000), vec![(&b"a"[..], i64::MAX)]);
    check_invariants(&t);
    while !t.is_settled() {
        t.incr(b"b", 1, 2000).unwrap();
        check_invariants(&t);
    }
    assert_eq!(t.count(b"a", 2000), i64::MAX);
}

#[test]
fn late_events_and_reads_around_the_clock() {
    let mut t = Full::new(10, 3);
    t.incr(b"a", 1, 100).unwrap(); // bucket 10 -> clock 10, live 8..=10
    assert_eq!(
        t.incr(b"a", 5, 79).unwrap().0,
        1,
        "bucket 7 is older than the window"
    );
    assert_eq!(t.incr(b"b", 5, 79).unwrap().0, 0);
    assert_eq!(t.members(), 1);
    assert_eq!(t.incr(b"a", 2, 80).unwrap().0, 3, "bucket 8 is live");
    assert_eq!(t.count(b"a", 100), 3);
    assert_eq!(t.count(b"a", 80), 2);
    assert_eq!(t.count(b"a", 79), 0);
    assert_eq!(t.count(b"a", 119), 1); // window 10..=11... ends at 11: 9..=11
    assert_eq!(t.count(b"a", 120), 1);
    assert_eq!(t.count(b"a", 130), 0);
    assert_eq!(t.top(5, 95), vec![(&b"a"[..], 2)]);
    assert!(t.top(5, 79).is_empty());
    assert!(t.top(5, 1_000_000).is_empty());
    // A write far in the future resets everything.
    assert_eq!(t.incr(b"c", 1, 10_000).unwrap().0, 1);
    assert_eq!(t.members(), 1);
    assert_eq!(t.count(b"a", 10_000), 0);
    assert_eq!(t.count(b"a", 100), 0, "old buckets are gone for all reads");
    assert!(t.top(5, 100).is_empty());
    assert_eq!(t.top(5, 10_000), vec![(&b"c"[..], 1)]);
    check_invariants(&t);
}

#[test]
fn by_zero_advances_clock_only() {
    let mut t = Full::new(10, 3);
    t.incr(b"a", 4, 0).unwrap();
    assert_eq!(t.incr(b"a", 0, 25).unwrap().0, 4);
    assert_eq!(t.clock(), Some(2));
    assert_eq!(t.incr(b"new", 0, 25).unwrap().0, 0);
    assert_eq!(t.members(), 1);
    assert_eq!(t.incr(b"a", 0, 30).unwrap().0, 0);
    assert_eq!(t.expire_at_ms(), Some(60));
    let ev: Vec<_> = t.replay_events();
    assert_eq!(ev, vec![(&b""[..], 0, 30)]);
    let mut r = Full::new(10, 3);
    for (m, by, at) in ev {
        r.incr(m, by, at).unwrap();
    }
    assert_eq!(r.clock(), t.clock());
    assert_eq!(r.encode(), t.encode());
}

#[test]
fn outside_the_window_at_the_servers_time() {
    // One-minute buckets, 24 of them: at 12:00:30 the window is 11:37..12:00.
    let (m, now) = (60_000, 720 * 60_000 + 30_000);
    assert!(Shape::new(m, 24, 0).is_late_at(now - 41 * m, now));
    assert!(Shape::new(m, 24, 0).is_late_at(696 * m + 59_999, now));
    assert!(!Shape::new(m, 24, 0).is_late_at(697 * m, now));
    assert!(!Shape::new(m, 24, 0).is_late_at(now - 20 * m, now));
    assert!(
        !Shape::new(m, 24, 0).is_late_at(now + 100 * m, now),
        "the future is inside"
    );
    assert!(!Shape::new(m, 1, 0).is_late_at(now - 30_000, now));
    assert!(Shape::new(m, 1, 0).is_late_at(now - 30_001, now));
    assert!(!Shape::new(1, 100_000, 0).is_late_at(0, 0));
    // The key's own window (at its clock) is the other rule.
    let mut t = Full::new(m, 3);
    assert!(!t.is_older_than_window(0));
    t.incr(b"a", 1, 10 * m).unwrap();
    assert!(t.is_older_than_window(8 * m - 1));
    assert!(!t.is_older_than_window(8 * m));
}

#[test]
fn upkeep_follows_the_servers_time() {
    let mut t = Full::new(1000, 3);
    assert_eq!(t.upkeep_due_ms(), None);
    for i in 0..300 {
        t.incr(format!("m{i}").as_bytes(), 1, 10_000).unwrap();
        t.incr(format!("m{i}").as_bytes(), 2, 11_000).unwrap();
    }
    t.observe_time(11_500);
    // Bucket 10 leaves the window at 13 000 (window 11..13).
    assert_eq!(t.upkeep_due_ms(), Some(13_000));
    assert!(t.is_settled());
    t.observe_time(13_000);
    assert_eq!(t.upkeep_due_ms(), Some(0), "bucket 10 is due now");
    assert!(!t.is_settled());
    let before = top_owned(&t, 5, 11_000);
    let (mut steps, mut aged) = (0, 0);
    while {
        let (work, effects) = t.upkeep(16);
        aged += effects.aged;
        work == 16
    } {
        steps += 1;
        check_invariants(&t);
        // Exact in every state, at the server's time and before.
        assert_eq!(t.count(b"m7", 13_000), 2);
        assert_eq!(t.count(b"m7", 11_000), 3);
        assert_eq!(top_owned(&t, 5, 11_000), before);
    }
    assert!(steps >= 300 / 16, "aging was not spread: {steps} steps");
    assert!(t.is_settled());
    assert_eq!(aged, 1, "the window's sum left one bucket");
    assert_eq!(t.upkeep_due_ms(), Some(14_000));
    assert_eq!(t.members(), 300, "aging keeps the data");
    // A read at the server's time now walks a plain index.
    assert_eq!(t.top(2, 13_000), vec![(&b"m0"[..], 2), (&b"m1"[..], 2)]);
    // Time going backwards changes nothing; past the whole window nothing is owed.
    t.observe_time(0);
    assert_eq!(t.upkeep_due_ms(), Some(14_000));
    t.observe_time(100_000);
    while t.upkeep(64).0 == 64 {}
    assert_eq!(t.upkeep_due_ms(), None);
    assert_eq!(
        t.count(b"m7", 11_000),
        3,
        "data stays until the key's clock moves"
    );
    check_invariants(&t);
}

#[test]
fn decode_at_loads_buckets_already_aged() {
    let t = sample(5, 40, 600);
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    let c = t.clock().unwrap();
    for ahead in 0..6 {
        let d = Full::decode_at(&t.encode(), Some((c + ahead) * 1000 + 1)).unwrap();
        check_invariants(&d);
        assert!(
            d.is_settled(),
            "no upkeep owed after a load ({ahead} ahead)"
        );
        same_answers(&t, &d, &names);
        let mut d = d;
        while !d.is_settled() {
            d.upkeep(3);
            check_invariants(&d);
        }
        same_answers(&t, &d, &names);
    }
}

#[test]
fn totals_beyond_i64_stay_exact() {
    let mut t = beyond_i64();
    assert_eq!(t.count(b"a", 2000), i64::MAX);
    // Bucket 0 leaves: a's window count is MAX + 5 (replies clamp), b's MAX - 1.
    t.incr(b"z", 1, 3000).unwrap();
    while !t.is_settled() {
        t.incr(b"z", 1, 3000).unwrap();
    }
    check_invariants(&t);
    assert_eq!(t.total_of(0, b"a"), i64::MAX as i128 + 5);
    assert_eq!(t.count(b"a", 3000), i64::MAX);
    assert_eq!(
        t.top(2, 3000),
        vec![(&b"a"[..], i64::MAX), (&b"b"[..], i64::MAX - 1)],
        "a (MAX + 5) ranks above b (MAX - 1)"
    );
    let z = t.count(b"z", 3000);
    assert_eq!(t.top_in(1, 3000, 1), vec![(&b"z"[..], z)]);
    assert_eq!(t.count_in(b"a", 3000, 2), 5);
    // Aging by time goes through the same exact totals.
    t.observe_time(4000);
    while t.upkeep(1).0 == 1 {}
    check_invariants(&t);
    assert_eq!(t.top(1, 4000), vec![(&b"b"[..], i64::MAX - 1)]);
    assert_eq!(t.count(b"a", 4000), 5);
    assert_eq!(t.top(1, 3000), vec![(&b"a"[..], i64::MAX)]);
}

#[test]
fn retirement_is_bounded_and_completes() {
    let mut t = Full::new(1000, 2);
    t.set_retire_budget(64);
    for i in 0..100_000u32 {
        t.incr(&i.to_le_bytes(), 1, 0).unwrap();
    }
    t.incr(b"one", 1, 1000).unwrap();
    assert_eq!(t.members(), 100_001);
    // Bucket 2: bucket 0 falls out while bucket 1 stays.
    assert_eq!(t.incr(b"one", 1, 2000).unwrap().0, 2);
    assert!(t.last_retire_work() <= 64 && t.last_retire_work() > 0);
    assert!(!t.is_settled());
    assert_eq!(t.top(3, 2000), vec![(&b"one"[..], 2)]);
    assert_eq!(t.count(&7u32.to_le_bytes(), 2000), 0);
    assert_eq!(t.count(&7u32.to_le_bytes(), 1000), 1 - 1); // bucket 0 is no longer live
    let mut calls = 1;
    while !t.is_settled() {
        t.incr(b"two", 1, 2000).unwrap();
        assert!(t.last_retire_work() <= 64);
        calls += 1;
    }
    // 100k entries, each a member freed out of the index (a search of a depth that shrinks
    // from 9 to 1), plus empty cells at 1/8.
    assert!(
        calls > 100_000 * 2 / 64 && calls < 2 * 100_000 * 11 / 64,
        "calls {calls}"
    );
    assert_eq!(t.members(), 2);
    check_invariants(&t);

    // Whole-window jump: the state goes to the graveyard, freed piecewise.
    let mut t = Full::new(1000, 2);
    t.set_retire_budget(64);
    for i in 0..100_000u32 {
        t.incr(&i.to_le_bytes(), 1, 0).unwrap();
    }
    t.incr(b"x", 1, 10_000).unwrap();
    assert!(t.last_retire_work() <= 64);
    assert_eq!(t.members(), 1);
    assert!(!t.is_settled());
    let mem_before = t.mem_usage();
    let mut calls = 1;
    while !t.is_settled() {
        t.incr(b"x", 1, 10_000).unwrap();
        assert!(t.last_retire_work() <= 64);
        calls += 1;
    }
    assert!(calls < 10_000, "calls {calls}");
    assert!(t.mem_usage() < mem_before / 10);
    check_invariants(&t);
}

#[test]
fn mem_usage_and_free_effort_grow() {
    let mut t = Full::new(1000, 4);
    let m0 = t.mem_usage();
    let f0 = t.free_effort();
    for i in 0..1000 {
        t.incr(format!("member-{i}").as_bytes(), 1, 0).unwrap();
    }
    assert!(t.mem_usage() > m0 + 1000 * 40);
    assert!(t.free_effort() > f0 + 1000);
}
