//! Tests of `sealed.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Sealing in slices of any size gives the entries sorted by id, and finds each.
#[test]
fn seals_in_slices() {
    let mut rng = StdRng::seed_from_u64(5);
    for round in 0..60 {
        let limit = [10u32, 3000, 70_000, 5_000_000][round % 4];
        let mut entries = Entries::default();
        let mut want = std::collections::BTreeMap::new();
        for _ in 0..rng.gen_range(0..5000) {
            let id = rng.gen_range(0..limit);
            let delta = match rng.gen_range(0..10) {
                0 => i64::MAX / 4,
                1 => -rng.gen_range(1..5),
                _ => rng.gen_range(0..50),
            };
            let (_, count) = entries.add(id, delta);
            want.insert(id, count);
        }
        let narrow = want.values().all(|&c| i32::try_from(c).is_ok());
        let mut p = Packer::new(&entries, limit as usize, narrow && round % 3 != 0);
        let budget = rng.gen_range(1..3000);
        let sealed = loop {
            match p.step(budget, &entries) {
                Step::Working(w) => assert!(w <= budget + DIGITS / 64 + 2),
                Step::Done(sealed) => break sealed,
            }
        };
        let got: Vec<(u32, i64)> = (0..sealed.len()).map(|i| sealed.at(i)).collect();
        let want: Vec<(u32, i64)> = want.into_iter().collect();
        assert_eq!(got, want, "round {round}");
        for (pos, &(id, _)) in want.iter().enumerate() {
            assert_eq!(sealed.find(id), Some(pos));
        }
        for id in (0..limit).step_by(7).chain([limit, u32::MAX]) {
            let held = want.binary_search_by_key(&id, |e| e.0).ok();
            assert_eq!(sealed.find(id), held, "round {round}: id {id}");
        }
        let decoded = Sealed::from_sorted(
            want.iter().map(|e| e.0).collect(),
            want.iter().map(|e| e.1).collect(),
        );
        assert_eq!(decoded.blocks, sealed.blocks);
        // Summed whole and in two parts, alike.
        if limit <= 70_000 {
            let (mut acc, mut parts) = (vec![0i64; limit as usize], vec![0i64; limit as usize]);
            for (id, count) in &want {
                acc[*id as usize] += count;
            }
            let half = sealed.len() / 2;
            assert!(!sealed.scan(0, half, false, &mut parts));
            assert!(!sealed.scan(half, usize::MAX, false, &mut parts));
            assert_eq!(acc, parts, "round {round}");
        }
    }
}
