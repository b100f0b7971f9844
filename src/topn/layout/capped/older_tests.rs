//! Tests of `older.rs`.

use super::*;
use crate::topn::layout::capped::summary::Summary;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

/// The filter calls most members absent, but never one of an older
/// bucket, built at once or learning late members.
#[test]
fn no_older_member_is_called_absent() {
    for seed in 0..20u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut buckets = VecDeque::new();
        for idx in 0..rng.gen_range(1..8) {
            let mut s = Summary::default();
            for _ in 0..rng.gen_range(1..200) {
                let m = format!("m{}", rng.gen_range(0..5_000));
                s.set(m.as_bytes(), (1, 0), false, 1_000).unwrap();
            }
            buckets.push_back(Box::new(super::super::folded::Bucket::new(idx, s)));
        }
        let mut older = Older::default();
        let (mut absent, others) = (0, 1_000);
        for i in 0..others {
            let h = hash(format!("x{i}").as_bytes());
            absent += older.surely_absent(&buckets, h) as usize;
        }
        assert!(
            absent * 10 > others * 7,
            "seed {seed}: {absent} of {others}"
        );
        let late: Vec<String> = (0..50).map(|i| format!("late{i}")).collect();
        for m in &late {
            older.changing(false, Some(0), hash(m.as_bytes()));
        }
        for b in buckets.range(..buckets.len() - 1) {
            for (m, ..) in b.summary.iter() {
                assert!(!older.surely_absent(&buckets, hash(m)), "seed {seed}");
            }
        }
        for m in &late {
            assert!(!older.surely_absent(&buckets, hash(m.as_bytes())));
        }
        // A change to the newest bucket teaches the filter nothing.
        older.changing(true, Some(0), hash(b"new"));
        assert!(older.heap_bytes() > 0);
        older.forget();
        assert_eq!(older.heap_bytes(), 0);
    }
}
