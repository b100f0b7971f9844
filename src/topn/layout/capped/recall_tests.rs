//! Recall at about TOPK's memory on a stream with a late leader: 24 hourly
//! buckets of 50,000 Zipf-like events (the bench's `zipf` draw) where a new
//! member takes a share of the last two hours only, enough to end just
//! below the tenth place of the day (or just at it). Counted as everywhere else in the
//! window at each bucket's floor, it would be listed above the true tenth
//! (counted nearly exactly) if the list took the highest counts; the list
//! takes the highest counts less errors.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const HOUR_MS: i64 = 3_600_000;
const HOURS: i64 = 24;

/// `(member, hour)` of the stream, oldest first: the new leader (`"new"`)
/// takes a draw of the last two hours with probability `share`.
fn stream(share: f64) -> Vec<(String, i64)> {
    let mut rng = StdRng::seed_from_u64(29);
    let mut out = Vec::new();
    for h in 0..HOURS {
        for _ in 0..50_000 {
            let u: f64 = rng.gen_range(f64::EPSILON..1.0);
            let m = (u.powf(-2.0) as u64 - 1) % 1_000_000;
            let leader = h >= HOURS - 2 && rng.gen_bool(share);
            out.push((
                if leader {
                    "new".into()
                } else {
                    format!("m{m}")
                },
                h,
            ));
        }
    }
    out
}

/// The ten highest of `counts`, ties by member.
fn top10(counts: &HashMap<&str, i64>) -> Vec<String> {
    let mut all: Vec<(&str, i64)> = counts.iter().map(|(m, c)| (*m, *c)).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    all.iter().take(10).map(|(m, _)| m.to_string()).collect()
}

#[test]
fn a_new_leader_near_the_tenth_place_takes_no_true_top_ten_place() {
    let shape = Shape {
        bucket_ms: HOUR_MS,
        window: HOURS as u32,
        align_ms: 0,
        clock: None,
    };
    for share in [0.17, 0.1725, 0.175] {
        let events = stream(share);
        let mut key = Capped::new(shape, 117);
        let (mut day, mut hour): (HashMap<&str, i64>, HashMap<&str, i64>) = Default::default();
        // In calls of 100 events of one hour, as a consumer batches.
        for run in events.chunks(100) {
            let mut start = 0;
            while start < run.len() {
                let h = run[start].1;
                let end = start + run[start..].iter().take_while(|e| e.1 == h).count();
                let pairs: Vec<Pair> = run[start..end]
                    .iter()
                    .map(|e| (1, e.0.as_bytes()))
                    .collect();
                key.incr_all(&pairs, h * HOUR_MS + 1).unwrap();
                start = end;
            }
        }
        for (m, h) in &events {
            *day.entry(m.as_str()).or_default() += 1;
            if *h == HOURS - 1 {
                *hour.entry(m.as_str()).or_default() += 1;
            }
        }
        let want = top10(&day);
        let at = (HOURS - 1) * HOUR_MS + 5;
        assert!(key.bound() > 0, "the key evicted: its counts have errors");
        let (leader, tenth) = (day["new"], day[want[9].as_str()]);
        assert!(
            (leader - tenth).abs() * 20 < tenth,
            "share {share}: the new leader ({leader}) near the tenth place ({tenth})"
        );
        for (k, truth, want) in [(24, &day, want), (1, &hour, top10(&hour))] {
            let got = key.top_in(10, at, k);
            for (m, b) in &got {
                let t = truth
                    .get(std::str::from_utf8(m).unwrap())
                    .copied()
                    .unwrap_or(0);
                assert!(b.count - b.error <= t && t <= b.count, "a bound failed");
            }
            let mut got: Vec<String> = got
                .iter()
                .map(|(m, _)| String::from_utf8_lossy(m).into_owned())
                .collect();
            got.sort();
            let mut want = want.clone();
            want.sort();
            assert_eq!(got, want, "share {share}, LAST {k}: recall@10 below 1");
        }
    }
}
