//! A batch near the range of counts, tried without copying the key
//! (`trial.rs`), against the batch applied one `incr` at a time on a copy:
//! the same pair refused, or the same key after, over random keys with
//! evictions, counts near `i64::MAX`, late events and clock moves.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The batch as `incr`s one after the other on a copy: the first pair
/// refused, or the key after.
fn one_by_one(key: &Capped, pairs: &[Pair], at: i64) -> Result<Capped, usize> {
    let mut copy = key.clone();
    for (i, &(by, m)) in pairs.iter().enumerate() {
        copy.incr(m, by, at).map_err(|_| i)?;
    }
    Ok(copy)
}

#[test]
fn a_batch_near_the_range_is_refused_where_incrs_would_be() {
    let (mut refused, mut accepted, mut tried) = (0, 0, 0);
    for seed in 0..60u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let window = rng.gen_range(1..8);
        let capacity = rng.gen_range(1..6);
        let members: Vec<String> = (0..rng.gen_range(2..12)).map(|i| format!("m{i}")).collect();
        let mut key = Capped::new(Shape::of_seconds(window), capacity);
        let mut t = 100_000i64;
        let huge = [i64::MAX, i64::MAX / 2, i64::MAX / 3, i64::MAX - 1];
        for step in 0..300 {
            t += match rng.gen_range(0..20) {
                0 => rng.gen_range(1..=2 * window as i64) * 1000,
                1..=4 => 1000,
                _ => rng.gen_range(0..200),
            };
            let at = t - rng
                .gen_range(0..(window as i64 + 1) * 1000)
                .min(rng.gen_range(0..3000));
            let pairs: Vec<Pair> = (0..rng.gen_range(1..8))
                .map(|_| {
                    let m = members[rng.gen_range(0..members.len())].as_bytes();
                    let by = match rng.gen_range(0..12) {
                        0 => huge[rng.gen_range(0..huge.len())],
                        1..=3 => rng.gen_range(1..1_000_000),
                        _ => rng.gen_range(1..4),
                    };
                    (by, m)
                })
                .collect();
            let want = one_by_one(&key, &pairs, at);
            let before = key.clone();
            let got = key.incr_all(&pairs, at);
            tried += usize::from(!before.surely_fits(&pairs, at));
            match (got, want) {
                (Ok((counts, _)), Ok(after)) => {
                    assert_eq!(key, after, "seed {seed} step {step}: {pairs:?}");
                    for ((_, m), count) in pairs.iter().zip(counts) {
                        assert_eq!(count, key.window_count(m), "seed {seed} step {step}");
                    }
                    accepted += 1;
                }
                (Err(i), Err(j)) => {
                    assert_eq!(i, j, "seed {seed} step {step}: {pairs:?}");
                    assert_eq!(key, before, "seed {seed} step {step}: a refusal changed it");
                    refused += 1;
                }
                (got, want) => panic!(
                    "seed {seed} step {step}: {pairs:?}: the batch {:?}, incrs {:?}",
                    got.map(|_| ()),
                    want.map(|_| ())
                ),
            }
        }
    }
    eprintln!("{tried} batches tried near the range: {accepted} accepted, {refused} refused");
    assert!(
        refused > 100 && tried > 500,
        "{tried} tried, {refused} refused"
    );
}
