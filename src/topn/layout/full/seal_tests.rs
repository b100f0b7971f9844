//! The newest bucket gets a packed copy once the server's time has been past its end for a
//! while (a key idle since is read from copies only), not while events may still land in it;
//! late events into it make its packing wait, never restart it at every step.

use super::*;

/// 4 buckets of 1 s, 300 members each, the server's time at `now`, upkeep settled.
fn key(now: i64) -> Full {
    let mut t = Full::new(1000, 24);
    t.set_pack_min(64);
    for b in 0..4i64 {
        for m in 0..300 {
            t.incr(
                format!("m{m}").as_bytes(),
                1 + (m * 7 + b) % 13,
                b * 1000 + 1,
            )
            .unwrap();
        }
    }
    t.observe_time(now);
    settle(&mut t);
    t
}

fn settle(t: &mut Full) {
    let mut steps = 0;
    while !t.is_settled() {
        t.upkeep(50);
        steps += 1;
        assert!(steps < 100_000, "upkeep never settles");
    }
}

fn packed(t: &Full) -> Vec<bool> {
    t.buckets.iter().map(|b| b.packed.is_some()).collect()
}

/// Reads at `at` of the newest buckets of the window there, as sums of its buckets.
fn reads_are_sums(t: &Full, at: i64) {
    for k in [1, 2, 4, 24] {
        let rows = t.top_in(10, at, k);
        match t.span(at, k) {
            Some(sp) => assert_eq!(rows, t.top_direct(10, sp.i0, sp.i1), "LAST {k} at {at}"),
            None => assert!(rows.is_empty(), "LAST {k} at {at}"),
        }
    }
}

#[test]
fn the_newest_bucket_is_packed_once_the_time_has_left_it_a_while() {
    // In the newest bucket, then just past its end: only the older buckets are packed, and
    // upkeep is due when the newest is sealed.
    for now in [3500, 4000, 4999] {
        let t = key(now);
        assert_eq!(packed(&t), [true, true, true, false], "at {now}");
        assert_eq!(t.upkeep_due_ms(), Some(5000), "at {now}");
        reads_are_sums(&t, now);
    }
    let mut t = key(4999);
    t.observe_time(5000);
    settle(&mut t);
    assert_eq!(packed(&t), [true; 4]);
    reads_are_sums(&t, 5000);
    reads_are_sums(&t, 7000);
}

#[test]
fn late_events_into_the_newest_bucket_delay_its_packing_without_stalling_upkeep() {
    let mut t = key(5000);
    let now = 5000;
    // Each late event drops the copy or restarts the packing under way.
    for i in 0..2000 {
        t.upkeep(1 + i % 40);
        t.incr(format!("m{}", i % 500).as_bytes(), 1, 3999).unwrap();
    }
    assert!(!packed(&t)[3]);
    reads_are_sums(&t, now);
    // Once the late events stop and the wait passed, it is packed again.
    t.observe_time(now + 1000);
    settle(&mut t);
    assert_eq!(packed(&t), [true; 4]);
    reads_are_sums(&t, now + 1000);
}

#[test]
fn the_upkeep_shape_changes_when_the_newest_bucket_becomes_packable() {
    // The write that makes the newest bucket big enough reschedules the key's upkeep (to when
    // the server's time seals it), also on a key whose window is not full (no aging due).
    let mut t = Full::new(1000, 24);
    t.set_pack_min(64);
    for m in 0..63 {
        t.incr(format!("m{m}").as_bytes(), 1, 1).unwrap();
    }
    let before = t.shape();
    t.incr(b"m0", 1, 1).unwrap();
    assert!(t.shape() == before, "a write that adds no entry");
    t.incr(b"m63", 1, 1).unwrap();
    assert!(t.shape() != before, "the 64th entry");
    assert_eq!(t.upkeep_due_ms(), Some(2000));
}
