//! Tests of `layout/mod.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Random increments (late, negative, zero, overflowing, jumping the
/// clock) into a key that crosses the compact limit both ways, beside a
/// key that is always full: every reply, read and encoding agrees.
#[test]
fn both_layouts_answer_alike_across_conversions() {
    let mut conversions = 0;
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (bucket, window) = (1000, rng.gen_range(1..6u32));
        let align = rng.gen_range(0..2) * 300;
        let limit = rng.gen_range(1..12);
        // Views (declared; running on the full layout) change no answer and no layout.
        let ks: Vec<i64> = (2..window as i64).filter(|_| rng.gen_bool(0.5)).collect();
        let views = Views::new(&ks, window).unwrap();
        let mut full = Layout::new(bucket, window, align, 0).with_views(views);
        let mut both = Layout::new(bucket, window, align, limit).with_views(views);
        let (mut t, mut was_compact) = (50_000i64, true);
        for step in 0..400 {
            let member = format!("m{}", rng.gen_range(0..(limit * 2 + 2)));
            let by = match rng.gen_range(0..20) {
                0 => i64::MAX,
                1 => -rng.gen_range(0..5),
                2 => 0,
                _ => rng.gen_range(1..4),
            };
            t += match rng.gen_range(0..30) {
                0 => 7_000,
                1..=4 => 1_000,
                _ => rng.gen_range(0..50),
            };
            let at = t - rng.gen_range(0..(window as i64 + 1) * 1000);
            // Counts alike; what each frees, and when, is its own.
            let a = full.incr(member.as_bytes(), by, at, 0).map(|w| w.0);
            let b = both.incr(member.as_bytes(), by, at, limit).map(|w| w.0);
            assert_eq!(a, b, "seed {seed} step {step}: incr {member} {by} at {at}");
            if rng.gen_bool(0.2) {
                full.observe_time(t);
                full.upkeep(50, 0);
                both.observe_time(t);
                both.upkeep(50, limit);
            }
            conversions += (both.is_compact() != was_compact) as usize;
            was_compact = both.is_compact();
            for k in 1..=window {
                let at = t - rng.gen_range(0..2000);
                assert_eq!(full.top_in(9, at, k), both.top_in(9, at, k), "seed {seed}");
                let m = format!("m{}", rng.gen_range(0..limit));
                assert_eq!(
                    full.count_in(m.as_bytes(), at, k),
                    both.count_in(m.as_bytes(), at, k)
                );
            }
            assert_eq!(full.encode(), both.encode(), "seed {seed} step {step}");
            // Members and buckets stored are layout state (a full key
            // holds zero counts and stale buckets until upkeep; both
            // keys free theirs in slices, whose progress depends on
            // their tables' layout).
            let both_live = match &both {
                Layout::Full(f) => f.holds_only_live(),
                _ => true,
            };
            assert!(!both_live || both.members() <= full.members());
            assert_eq!(full.expire_at_ms(), both.expire_at_ms());
            let mut a = full.replay_events();
            let mut b = both.replay_events();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "seed {seed} step {step}");
        }
        // A load picks the layout the size calls for.
        let loaded = Layout::decode_at(&both.encode(), t, limit).unwrap();
        assert_eq!(loaded.encode(), full.encode());
        assert_eq!((loaded.views(), both.views()), (views, views));
    }
    assert!(conversions >= 80, "{conversions} conversions");
}

/// A loaded key whose buckets start past the range of times (a clock no
/// write can set, as a damaged file may hold) keeps its content compact:
/// its bytes come back unchanged.
#[test]
fn extreme_buckets_round_trip_compact() {
    for clock in [i64::MAX / 2, i64::MAX - 1, -(i64::MAX / 2)] {
        let shape = Shape {
            bucket_ms: 3_600_000,
            window: 24,
            align_ms: 0,
            clock: Some(clock),
        };
        let names: [&[u8]; 2] = [b"a", b"b"];
        let buckets = vec![(clock - 3, vec![(0, 5), (1, -2)]), (clock, vec![(1, 7)])];
        let bytes = crate::topn::encoding::write(&shape, &Views::NONE, &names, &buckets);
        let core = Layout::decode_at(&bytes, 0, DEFAULT_COMPACT_MAX).unwrap();
        assert!(core.is_compact());
        assert_eq!(core.encode(), bytes, "clock {clock}");
        let full = Layout::decode_at(&bytes, 0, 0).unwrap();
        assert_eq!(full.top_in(5, i64::MAX, 24), core.top_in(5, i64::MAX, 24));
    }
}

/// What a full key counts before packing is what the packing writes,
/// so a key of few long members (over the byte limit) stays full
/// without packing a copy a write, and goes compact once it fits.
#[test]
fn a_key_goes_compact_exactly_when_its_packed_bytes_fit() {
    let mut core = Layout::new(1000, 4, 0, DEFAULT_COMPACT_MAX);
    let long = |i: usize| format!("{i:0>1000}");
    for i in 0..10 {
        core.incr(long(i).as_bytes(), 3, 10_000, DEFAULT_COMPACT_MAX)
            .unwrap();
    }
    assert!(
        !core.is_compact(),
        "10 members of 1,000 bytes are over 8 KiB"
    );
    let Layout::Full(full) = &core else {
        unreachable!()
    };
    let shape = *full.shape();
    let entries: Vec<_> = full.live_entries().collect();
    assert_eq!(
        packed_bytes(shape.clock.unwrap_or(0), full.live_entries()),
        Compact::from_entries(shape, &entries).bytes()
    );
    for _ in 0..3 {
        core.incr(long(0).as_bytes(), 1, 10_000, DEFAULT_COMPACT_MAX)
            .unwrap();
        assert!(!core.is_compact());
    }
    // Three members' counts cancelled: what is left fits.
    for i in 3..10 {
        core.incr(long(i).as_bytes(), -3, 10_000, DEFAULT_COMPACT_MAX)
            .unwrap();
    }
    core.incr(b"short", 1, 10_000, DEFAULT_COMPACT_MAX).unwrap();
    core.upkeep(1_000, DEFAULT_COMPACT_MAX);
    core.incr(b"short", 1, 10_000, DEFAULT_COMPACT_MAX).unwrap();
    assert!(core.is_compact());
    assert_eq!(core.count_in(long(0).as_bytes(), 10_000, 4), 6);
}

/// `incr_many` against one `incr` a pair, on exact keys (compact,
/// full, across the limit, with ALIGN) and capped ones: the same counts
/// after the call, the same encoding; a refused call changes nothing,
/// and a call is refused exactly when one of its INCRs would be.
#[test]
fn incr_many_is_repeated_incr_all_or_nothing() {
    let (mut refused, mut conversions) = (0, 0);
    for seed in 0..60u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (window, align) = (rng.gen_range(1..5u32), rng.gen_range(0..2) * 300);
        let limit = rng.gen_range(0..16);
        let capped = seed % 4 == 3;
        // Exact keys with views too: a call keeps them as its INCRs would.
        let ks: Vec<i64> = (2..window as i64).filter(|_| rng.gen_bool(0.5)).collect();
        let views = Views::new(&ks, window).unwrap();
        let new = |limit| match capped {
            true => Layout::capped(1000, window, align, 3),
            false => Layout::new(1000, window, align, limit).with_views(views),
        };
        let (mut many, mut one) = (new(limit), new(limit));
        let mut t = 50_000i64;
        for step in 0..150 {
            t += rng.gen_range(0..700);
            let at = t - rng.gen_range(0..(window as i64 + 1) * 1000);
            let names: Vec<String> = (0..rng.gen_range(1..12))
                .map(|_| format!("m{}", rng.gen_range(0..10)))
                .collect();
            let pairs: Vec<Pair> = names
                .iter()
                .map(|m| {
                    let by = match rng.gen_range(0..40) {
                        0 => i64::MAX / 2,
                        1 if !capped => i64::MIN / 2,
                        2 if !capped => 0,
                        3..=8 if !capped => -rng.gen_range(1..4),
                        _ => rng.gen_range(1..5),
                    };
                    (by, m.as_bytes())
                })
                .collect();
            let before = many.encode();
            let was_compact = many.is_compact();
            let mut trial = one.clone();
            let each: Result<Vec<i64>, Overflow> = pairs
                .iter()
                .map(|&(by, m)| trial.incr(m, by, at, limit).map(|(count, _)| count))
                .collect();
            match many.incr_many(&pairs, at, limit) {
                Ok((counts, _)) => {
                    assert!(each.is_ok(), "seed {seed} step {step}: INCRs refused");
                    one = trial;
                    for ((_, m), count) in pairs.iter().zip(counts) {
                        assert_eq!(count, one.count_at_clock(m), "seed {seed} step {step}");
                    }
                    assert_eq!(many.encode(), one.encode(), "seed {seed} step {step}");
                    for k in 1..=window {
                        let (a, b) = (many.top_in(10, t, k), one.top_in(10, t, k));
                        assert_eq!(a, b, "seed {seed} step {step}: LAST {k}");
                    }
                }
                Err(i) => {
                    assert!(each.is_err(), "seed {seed} step {step}: refused pair {i}");
                    assert_eq!(many.encode(), before, "a refusal changed the key");
                    refused += 1;
                }
            }
            conversions += (many.is_compact() != was_compact) as usize;
        }
    }
    assert!(refused > 20, "{refused} refusals");
    assert!(conversions > 10, "{conversions} conversions");
}

#[test]
fn a_new_key_is_compact_and_small() {
    let mut core = Layout::new(3_600_000, 24, 0, DEFAULT_COMPACT_MAX);
    core.incr(b"page:1", 1, 1_700_000_000_000, DEFAULT_COMPACT_MAX)
        .unwrap();
    assert!(core.is_compact());
    assert!(core.mem_usage() < 128, "{} bytes", core.mem_usage());
    assert!(!Layout::new(1000, 2, 0, 0).is_compact());
}
