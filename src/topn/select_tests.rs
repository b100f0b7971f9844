//! Tests of `select.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn model<'a>(n: usize, counts: &[i64], names: &'a [Vec<u8>]) -> Rows<'a> {
    let mut all: Vec<(&[u8], i64)> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 0)
        .map(|(i, c)| (&names[i][..], *c))
        .collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    all.truncate(n);
    all
}

/// Both selections against sorting everything, on flat counts (huge ties), spread
/// counts, few positive ones and negative ones.
#[test]
fn selections_match_a_full_sort() {
    let mut rng = StdRng::seed_from_u64(3);
    for round in 0..300 {
        let len = rng.gen_range(0..3000);
        let spread = [2, 5, 1000][round % 3];
        let counts: Vec<i64> = (0..len)
            .map(|_| match rng.gen_range(0..10) {
                0..=3 => 0,
                4 if round % 2 == 0 => -rng.gen_range(1..spread),
                _ => rng.gen_range(1..=spread),
            })
            .collect();
        let names: Vec<Vec<u8>> = (0..len)
            .map(|_| format!("m{}", rng.gen_range(0..100_000)).into_bytes())
            .collect();
        let names: Vec<Vec<u8>> = names
            .into_iter()
            .enumerate()
            .map(|(i, mut nm)| {
                nm.extend_from_slice(format!(":{i}").as_bytes());
                nm
            })
            .collect();
        let name = |id: u32| &names[id as usize][..];
        for n in [1, 2, 10, 100, 5000] {
            let want = model(n, &counts, &names);
            let generic = top_rows(
                n,
                || {
                    counts
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c != 0)
                        .map(|(i, c)| (*c as i128, i as u32))
                },
                name,
            );
            assert_eq!(generic, want, "top_rows n={n} round={round}");
            let positives = counts.iter().filter(|c| **c > 0).count();
            let dense = top_dense(n, &[&counts], name);
            let narrow: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
            let dense_32 = top_dense(n, &[&narrow], name);
            // In parts, as a sum's totals are kept.
            let parts: Vec<&[i64]> = counts.chunks(CHUNK * 3).collect();
            assert_eq!(top_dense(n, &parts, name), dense, "in parts n={n}");
            if positives >= n {
                assert_eq!(dense, Some(want.clone()), "top_dense n={n} round={round}");
                assert_eq!(dense_32, Some(want), "top_dense i32 n={n} round={round}");
            } else {
                assert_eq!(dense, None);
                assert_eq!(dense_32, None);
            }
        }
    }
}
