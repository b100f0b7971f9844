//! An HCOUNTER under an active-defrag pass (`tuples::defrag`), with a model
//! allocator that moves every block it is offered: the counter reads and
//! encodes the same afterwards, whether the pass ran in one call or was
//! stopped and resumed many times, and each slice offers each block once.

use super::counter::{Count, HCounter, Place, DECLARATION};
use crate::tuples::defrag::model::in_slices;
use crate::tuples::encoding;
use crate::tuples::schema::Schema;

/// A unique counter with a TTL: `partitions` small partitions and one of
/// `big` cells (hashed past the compact size), unique tuples in each.
fn counter(partitions: usize, big: usize) -> HCounter {
    let schema = Schema::declared(
        &["PARTITION", "date", "GROUP", "city", "UNIQUE", "user"],
        &DECLARATION,
    );
    let mut counter = HCounter::new(schema, Some(3_600), false);
    let mut incr = |date: &str, city: &str, user: &str| {
        let place = place(date, city, user);
        counter.incr(&place, Count::Int(1), 1_000).unwrap();
    };
    for p in 0..partitions {
        let date = format!("day {p}");
        for c in 0..3 {
            incr(
                &date,
                &format!("a city name that spills {c}"),
                &p.to_string(),
            );
        }
    }
    for c in 0..big {
        incr("the big day", &c.to_string(), &c.to_string());
    }
    counter
}

fn place(date: &str, city: &str, user: &str) -> Place {
    let mut place = Place {
        partition: Default::default(),
        cell: Default::default(),
        seen: Default::default(),
    };
    encoding::push_element(&mut place.partition, date.as_bytes());
    encoding::push_element(&mut place.cell, city.as_bytes());
    encoding::push_element(&mut place.seen, user.as_bytes());
    place
}

#[test]
fn a_pass_moves_every_block_once_and_the_counter_reads_the_same() {
    for (partitions, big) in [(2, 0), (300, 500), (2_000, 6_000)] {
        let what = format!("{partitions} partitions, {big} big");
        let mut whole = counter(partitions, big);
        let before = whole.encode();
        let (moved, calls) = in_slices(usize::MAX, |pass| whole.defrag(pass));
        assert_eq!((calls, whole.encode()), (1, before.clone()), "{what}");
        for checks in [0, 1, 7] {
            let mut sliced = counter(partitions, big);
            let (moved_sliced, calls) = in_slices(checks, |pass| sliced.defrag(pass));
            assert_eq!(moved_sliced.len(), moved.len(), "{what}, {checks} checks");
            assert!(partitions < 100 || calls > 1, "{what}: {calls} calls");
            assert_eq!(sliced.encode(), before, "{what}, {checks} checks");
            // Still a working counter: a counted tuple is not counted again.
            let again = place("day 1", "a city name that spills 0", "1");
            let outcome = sliced.incr(&again, Count::Int(1), 2_000).unwrap();
            assert!(!outcome.counted, "{what}");
            let new = place("day 1", "a city name that spills 0", "someone new");
            assert_eq!(
                sliced.incr(&new, Count::Int(1), 2_000).unwrap().count,
                Count::Int(2)
            );
        }
    }
}
