//! Unit tests of the full layout's encoding: round trips, bytes that follow the content
//! alone, refusals of damaged input, replay and clones.

use super::key::*;
use super::tests::*;
use crate::topn::encoding::ENCODING_VERSION;
use crate::topn::error::Error;
use crate::topn::window::Upkept;
use crate::topn::window::Window;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn encode_decode_roundtrip() {
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    for seed in 0..5 {
        let t = sample(seed, 40, 400);
        let enc = t.encode();
        assert_eq!(enc[0], ENCODING_VERSION);
        let d = Full::decode(&enc).unwrap();
        check_invariants(&d);
        same_answers(&t, &d, &names);
        same_answers(&t, &Full::decode(&d.encode()).unwrap(), &names);
        assert_eq!(d.buckets_in_use(), t.buckets_in_use());
    }
    let empty = Full::new(5000, 7);
    let d = Full::decode(&empty.encode()).unwrap();
    assert_eq!((d.bucket_ms(), d.window(), d.clock()), (5000, 7, None));
    let mut bin = Full::new(1, 1);
    bin.incr(&[0, 255, 0], -3, 5).unwrap();
    bin.incr(b"", 2, 5).unwrap();
    let d = Full::decode(&bin.encode()).unwrap();
    assert_eq!(d.top(5, 5), vec![(&b""[..], 2), (&[0u8, 255, 0][..], -3)]);
}

/// The bytes follow the content alone: the same events in other orders, through other
/// table states (grown, aged, with writes into a bucket being aged), encode the same.
#[test]
fn encoding_is_a_function_of_the_content() {
    let mut rng = StdRng::seed_from_u64(21);
    let events: Vec<(Vec<u8>, i64, i64)> = (0..3000)
        .map(|_| {
            let m = format!("m{}", rng.gen_range(0..700)).into_bytes();
            (m, rng.gen_range(-2..6), rng.gen_range(0..6) * 1000 + 7)
        })
        .collect();
    let build = |order: &[usize], upkeep_at: Option<i64>| {
        let mut t = Full::new(1000, 8);
        t.set_retire_budget(3);
        // The newest bucket first, so every later event is inside the window.
        t.incr(b"m0", 1, 5007).unwrap();
        for (n, &i) in order.iter().enumerate() {
            if let (Some(now), 0) = (upkeep_at, n % 50) {
                t.observe_time(now);
                t.upkeep(7);
            }
            let (m, by, at) = &events[i];
            t.incr(m, *by, *at).unwrap();
        }
        t
    };
    let mut order: Vec<usize> = (0..events.len()).collect();
    let a = build(&order, None);
    order.reverse();
    let b = build(&order, Some(12_000));
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let c = build(&order, Some(10_500));
    assert_eq!(a.encode(), b.encode());
    assert_eq!(a.encode(), c.encode());
    assert_eq!(a.encode(), Full::decode(&c.encode()).unwrap().encode());
}

#[test]
fn decode_rejects_truncated_and_garbage() {
    let mut t = sample(7, 10, 60);
    t.incr(b"", 1, 1_000_000).unwrap();
    t.incr(b"x", 2, 999_999).unwrap();
    let enc = t.encode();
    for len in 0..enc.len() {
        assert!(
            Full::decode(&enc[..len]).is_err(),
            "truncation to {len} accepted"
        );
    }
    let mut long = enc.clone();
    long.push(0);
    assert!(Full::decode(&long).is_err());
    let mut v = enc.clone();
    v[0] = 5;
    assert_eq!(Full::decode(&v).unwrap_err(), Error::UnknownVersion(5));
    // Random garbage and single-byte corruptions never panic.
    let mut rng = StdRng::seed_from_u64(99);
    for _ in 0..20_000 {
        let len = rng.gen_range(0..80);
        let mut g: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if !g.is_empty() {
            g[0] = 1;
        }
        let _ = Full::decode(&g);
    }
    for i in 0..enc.len() {
        for x in [0u8, 1, 0x7f, 0x80, 0xff] {
            let mut c = enc.clone();
            c[i] ^= x;
            if let Ok(d) = Full::decode(&c) {
                check_invariants(&d);
                let _ = d.top(10, 1_000_000);
            }
        }
    }
    // Hand-made invalid inputs.
    let mut dup = Full::new(10, 2);
    dup.incr(b"a", 1, 0).unwrap();
    dup.incr(b"b", 1, 0).unwrap();
    let mut e = dup.encode();
    // Rename member 1 to member 0's name ("a"/"b" are the last byte of each name record).
    let pos = e.iter().rposition(|&c| c == b'b' || c == b'a').unwrap();
    let other = if e[pos] == b'a' { b'b' } else { b'a' };
    let _ = other;
    let first = e.iter().position(|&c| c == b'a' || c == b'b').unwrap();
    e[pos] = e[first];
    assert_eq!(
        Full::decode(&e).unwrap_err(),
        Error::Invalid("duplicate member")
    );
}

#[test]
fn replay_rebuilds_equal_structure() {
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    for seed in 0..5 {
        let t = sample(seed + 100, 40, 500);
        let mut r = Full::new(t.bucket_ms(), t.window());
        for (m, by, at) in t.replay_events() {
            r.incr(m, by, at).unwrap();
        }
        same_answers(&t, &r, &names);
        let dec = Full::decode(&t.encode()).unwrap();
        let mut a = dec.replay_events();
        let mut b = r.replay_events();
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}

#[test]
fn clone_is_independent() {
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    let mut t = sample(3, 40, 300);
    let c = t.clone();
    same_answers(&t, &c, &names);
    let before = top_owned(&c, 100, 0);
    let at = (t.clock().unwrap() + 1) * 1000;
    t.incr(b"m1", 1000, at).unwrap();
    assert_eq!(top_owned(&c, 100, 0), before);
    check_invariants(&c);
    check_invariants(&t);
}
