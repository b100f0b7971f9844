//! Unit tests of ALIGN: bucket boundaries shifted from the epoch, in reads, expiry, the
//! encoding (version 2 only for a non-zero ALIGN) and the AOF replay.

use super::key::*;
use super::tests::check_invariants;
use crate::topn::encoding::{ENCODING_VERSION, ENCODING_VERSION_ALIGNED};
use crate::topn::error::Error;
use crate::topn::shape::Shape;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// Daily buckets starting at 22:00 UTC (a midnight at UTC+2).
fn daily_at_22h(window: u32) -> Full {
    Full::new(DAY, window).with_align(22 * HOUR)
}

#[test]
fn boundaries_follow_align() {
    let t = daily_at_22h(7);
    assert_eq!(t.align_ms(), 22 * HOUR);
    // Day 10's bucket starts at 22:00 on day 9 (UTC) and ends just before 22:00 on day 10.
    assert_eq!(t.bucket_of(10 * DAY - 2 * HOUR), 9);
    assert_eq!(t.bucket_of(10 * DAY - 2 * HOUR - 1), 8);
    assert_eq!(t.bucket_of(11 * DAY - 2 * HOUR - 1), 9);
    assert_eq!(t.bucket_start(9), 10 * DAY - 2 * HOUR);
    // Before the first boundary after the epoch: bucket -1, which no AT (>= 0) reaches below.
    assert_eq!(t.bucket_of(0), -1);
    // ALIGN is brought into 0..BUCKET; 0 is the epoch-aligned layout.
    assert_eq!(Full::new(DAY, 1).with_align(DAY + 5).align_ms(), 5);
    assert_eq!(Full::new(DAY, 1).with_align(0).bucket_of(DAY - 1), 0);
}

#[test]
fn last_k_and_the_window_cut_at_the_shifted_boundaries() {
    let mut t = daily_at_22h(3);
    let day_start = 10 * DAY - 2 * HOUR; // bucket 9
    t.incr(b"before", 5, day_start - 1).unwrap(); // bucket 8
    t.incr(b"after", 3, day_start).unwrap(); // bucket 9
    check_invariants(&t);
    assert_eq!(t.count_in(b"before", day_start, 1), 0);
    assert_eq!(t.count_in(b"after", day_start, 1), 3);
    assert_eq!(t.count_in(b"before", day_start, 2), 5);
    assert_eq!(t.top_in(10, day_start + HOUR, 1), vec![(&b"after"[..], 3)]);
    // Bucket 8 leaves a 3-bucket window when bucket 11 starts, 22:00 two days on.
    assert_eq!(t.count_in(b"before", day_start + 2 * DAY - 1, 3), 5);
    assert_eq!(t.count_in(b"before", day_start + 2 * DAY, 3), 0);
    // The key expires when its whole window has passed after its clock (bucket 9).
    assert_eq!(t.expire_at_ms(), Some(day_start + 3 * DAY));
}

#[test]
fn outside_the_window_follows_align() {
    let (now, align) = (10 * DAY, 22 * HOUR); // now is 00:00, in the bucket from 22:00
    assert!(!Shape::new(DAY, 1, align).is_late_at(now - 2 * HOUR, now));
    assert!(Shape::new(DAY, 1, align).is_late_at(now - 2 * HOUR - 1, now));
    // Without ALIGN the same event is in today's bucket only from midnight.
    assert!(Shape::new(DAY, 1, 0).is_late_at(now - 1, now));
}

#[test]
fn encoding_is_version_2_only_with_align() {
    let mut plain = Full::new(DAY, 3);
    plain.incr(b"a", 1, 10 * DAY).unwrap();
    let enc = plain.encode();
    assert_eq!(enc[0], ENCODING_VERSION);
    assert_eq!(enc.len(), 1 + 8 + 4 + 1 + 8 + 4 + 5 + 4 + 8 + 4 + 12);

    let mut aligned = daily_at_22h(3);
    aligned.incr(b"a", 1, 10 * DAY).unwrap();
    aligned.incr(b"b", -2, 9 * DAY).unwrap();
    let enc = aligned.encode();
    assert_eq!(enc[0], ENCODING_VERSION_ALIGNED);
    assert_eq!(enc[13..21], (22 * HOUR).to_le_bytes());
    let d = Full::decode(&enc).unwrap();
    check_invariants(&d);
    assert_eq!(d.align_ms(), 22 * HOUR);
    assert_eq!(d.encode(), enc);
    assert_eq!(d.top(10, 10 * DAY), aligned.top(10, 10 * DAY));
    assert_eq!(d.expire_at_ms(), aligned.expire_at_ms());

    // Version 2 with ALIGN 0 or ALIGN >= BUCKET is malformed, as is a cut-off ALIGN.
    for bad in [0, DAY, -1] {
        let mut b = enc.clone();
        b[13..21].copy_from_slice(&bad.to_le_bytes());
        assert!(
            matches!(Full::decode(&b), Err(Error::Invalid("align_ms"))),
            "{bad}"
        );
    }
    assert!(matches!(Full::decode(&enc[..17]), Err(Error::Truncated)));
}

#[test]
fn replay_events_land_in_the_same_buckets() {
    let mut t = daily_at_22h(4);
    for (i, at) in [8 * DAY + 23 * HOUR, 9 * DAY + HOUR, 10 * DAY - 2 * HOUR]
        .into_iter()
        .enumerate()
    {
        t.incr(format!("m{i}").as_bytes(), i as i64 + 1, at)
            .unwrap();
    }
    let mut r = daily_at_22h(4);
    for (m, by, at) in t.replay_events() {
        r.incr(m, by, at).unwrap();
    }
    assert_eq!(r.encode(), t.encode());
}
