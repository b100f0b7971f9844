use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn retirement_takes_exactly_the_stale_front() {
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..2_000 {
        let mut shape = Shape::new(1000, rng.gen_range(1..=12), 0);
        let mut idxs: Vec<i64> = (0..rng.gen_range(0..30))
            .map(|_| rng.gen_range(-20..40))
            .collect();
        idxs.sort_unstable();
        assert_eq!(shape.stale_front(idxs.len(), |i| idxs[i]), 0, "no clock");
        shape.clock = Some(rng.gen_range(-10..50));
        let stale = shape.stale_front(idxs.len(), |i| idxs[i]);
        assert!(
            idxs[..stale].iter().all(|&b| shape.is_stale(b)),
            "{shape:?} {idxs:?}"
        );
        assert!(
            idxs[stale..].iter().all(|&b| !shape.is_stale(b)),
            "{shape:?} {idxs:?}"
        );
    }
}

#[test]
fn the_newest_bucket_seals_a_second_past_its_end_and_its_last_write() {
    let mut shape = Shape::new(1000, 4, 0);
    shape.clock = Some(10);
    assert_eq!(
        shape.seals_at(9, 10_999),
        i64::MIN,
        "a newer bucket seals at once"
    );
    assert_eq!(shape.seals_at(10, i64::MIN), 11_000 + SEAL_DELAY_MS);
    assert_eq!(shape.seals_at(10, 10_500), 11_000 + SEAL_DELAY_MS);
    assert_eq!(
        shape.seals_at(10, 11_400),
        11_400 + SEAL_DELAY_MS,
        "a backfill keeps it open"
    );
    assert_eq!(shape.seals_at(i64::MAX, i64::MAX), i64::MAX, "saturates");
}
