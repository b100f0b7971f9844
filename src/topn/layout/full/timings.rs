//! Timings, not asserted: `cargo test --release --lib topn -- --ignored --nocapture`.

use super::bucket::Bucket;
use super::key::*;
use super::paths::PATHS;
use super::read::Base;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const H: i64 = 3_600_000;

fn fill(buckets: i64, per: u32, overlap: bool) -> Full {
    let mut t = Full::new(H, 24);
    let mut rng = StdRng::seed_from_u64(1);
    let mut worst = std::time::Duration::ZERO;
    for b in 0..buckets {
        for i in 0..per {
            let id = if overlap { i } else { b as u32 * per + i };
            let name = format!("user:{:08}", id);
            let by = 1 + (rng.gen::<u32>() % 50) as i64 * (i.is_multiple_of(7)) as i64;
            let s = std::time::Instant::now();
            t.incr(name.as_bytes(), by, b * H + 1).unwrap();
            worst = worst.max(s.elapsed());
        }
    }
    eprintln!("fill: worst incr {worst:?}");
    t
}

fn time<F: FnMut() -> R, R>(label: &str, iters: u32, mut f: F) {
    let start = std::time::Instant::now();
    for _ in 0..iters {
        std::hint::black_box(f());
    }
    let per = start.elapsed() / iters;
    eprintln!("{label}: {per:?} per call");
}

#[test]
#[ignore]
fn bench() {
    for overlap in [true, false] {
        eprintln!(
            "--- 24 buckets x 50k entries, members {}",
            if overlap {
                "shared (50k)"
            } else {
                "disjoint (1.2M)"
            }
        );
        let t0 = std::time::Instant::now();
        let mut t = fill(24, 50_000, overlap);
        let entries = 24 * 50_000;
        eprintln!(
            "fill: {:?} ({:?}/incr); members {}; mem_usage {} MB = {} bytes/entry; free_effort {}",
            t0.elapsed(),
            t0.elapsed() / entries,
            t.members(),
            t.mem_usage() >> 20,
            t.mem_usage() / entries as usize,
            t.free_effort()
        );
        let at = 23 * H + 5;
        time("top(10) plain", 200, || t.top(10, at).len());
        time("top(100) plain", 200, || t.top(100, at).len());
        time("top(10) at clock-6h", 50, || t.top(10, at - 6 * H).len());
        time("top(10) at clock+6h", 50, || t.top(10, at + 6 * H).len());
        time("count", 100_000, || t.count(b"user:00000042", at));
        let mut i = 0u32;
        time("incr existing member, same bucket", 200_000, || {
            i = (i + 7919) % 50_000;
            t.incr(format!("user:{:08}", i).as_bytes(), 1, at).unwrap()
        });
        // Cross a bucket boundary: bucket 0 becomes stale.
        let at2 = 24 * H + 5;
        let s = std::time::Instant::now();
        t.incr(b"user:00000001", 1, at2).unwrap();
        eprintln!(
            "first incr after boundary: {:?} (retire work {})",
            s.elapsed(),
            t.last_retire_work()
        );
        time("top(10) with a pending stale bucket", 200, || {
            t.top(10, at2).len()
        });
        let mut worst = std::time::Duration::ZERO;
        let mut calls = 0;
        let s = std::time::Instant::now();
        while !t.is_settled() {
            i = (i + 7919) % 50_000;
            let name = format!("user:{:08}", i);
            let c0 = std::time::Instant::now();
            t.incr(name.as_bytes(), 1, at2).unwrap();
            worst = worst.max(c0.elapsed());
            calls += 1;
        }
        eprintln!(
            "retirement: {calls} incr calls, {:?} total, worst call {:?}",
            s.elapsed(),
            worst
        );
        time("top(10) settled", 200, || t.top(10, at2).len());
        time("top(10) at clock+12h, no writes since", 20, || {
            t.top(10, at2 + 12 * H).len()
        });
        let c = std::time::Instant::now();
        let cl = t.clone();
        eprintln!("clone: {:?}", c.elapsed());
        let e = std::time::Instant::now();
        let enc = t.encode();
        eprintln!("encode: {:?}, {} bytes", e.elapsed(), enc.len());
        let d = std::time::Instant::now();
        let dec = Full::decode(&enc).unwrap();
        eprintln!("decode: {:?}", d.elapsed());
        let f = std::time::Instant::now();
        drop(dec);
        drop(cl);
        eprintln!("drop x2: {:?}", f.elapsed());
        // Whole window passes: a single write far ahead.
        let s = std::time::Instant::now();
        t.incr(b"x", 1, 100 * H).unwrap();
        eprintln!("incr after whole-window jump: {:?}", s.elapsed());
        let mut worst = std::time::Duration::ZERO;
        let mut calls = 0;
        while !t.is_settled() {
            let c0 = std::time::Instant::now();
            t.incr(b"x", 1, 100 * H).unwrap();
            worst = worst.max(c0.elapsed());
            calls += 1;
        }
        eprintln!("graveyard freed in {calls} calls, worst {:?}", worst);
    }
}

/// The bench's bucket-boundary scenario: the bucket leaving the window and the newest one
/// hold 100k members each (half shared), 22 buckets of 1000 in between, every count 1.
#[test]
#[ignore]
fn bench_boundary() {
    let mut t = Full::new(H, 24);
    let name = |i: u64| format!("{}", 100_000_000 + i);
    for i in 0..100_000 {
        t.incr(name(i).as_bytes(), 1, 1000).unwrap();
    }
    for b in 1..23 {
        for i in 0..1000 {
            t.incr(name(i).as_bytes(), 1, b * H + 1000).unwrap();
        }
    }
    for i in 50_000..150_000 {
        t.incr(name(i).as_bytes(), 1, 23 * H + 1000).unwrap();
    }
    t.incr(name(7).as_bytes(), 1, 24 * H).unwrap();
    assert!(!t.is_settled());
    time(
        "boundary: top24(10) right after, stale bucket pending",
        50,
        || t.top_in(10, 24 * H + 5, 24).len(),
    );
    let sp = t.span(24 * H + 5, 24).unwrap();
    let fixes = t.fixes(&sp, Base::Agg);
    time("boundary:   direct", 20, || {
        t.top_direct(10, sp.i0, sp.i1).len()
    });
    time("boundary:   through totals", 20, || {
        t.top_through_totals(10, Base::Agg, &fixes).map(|r| r.len())
    });
    let mut k = 0;
    while !t.is_settled() {
        t.incr(name(k % 1000).as_bytes(), 1, 24 * H + 7).unwrap();
        k += 1;
    }
    time("boundary: top24(10) settled", 200, || {
        t.top_in(10, 24 * H + 5, 24).len()
    });
}

/// Worst case for corrected reads: popularity reverses half-way through the window, so the
/// aggregate's order says nothing about the read window's. The scenario: reads of
/// LAST k, and the read at the server's time 18 buckets after the last write.
#[test]
#[ignore]
fn bench_adverse() {
    let mut t = Full::new(H, 24);
    let n = 50_000u32;
    for b in 0..24i64 {
        for i in 0..n {
            let rank = if b < 12 { i } else { n - 1 - i };
            t.incr(
                format!("user:{:08}", i).as_bytes(),
                1 + (n - rank) as i64 / 1000,
                b * H + 1,
            )
            .unwrap();
        }
    }
    let c = 23 * H + 1;
    time("adverse: top(10) plain", 100, || t.top(10, c).len());
    for k in [1u32, 6, 12, 18] {
        time(&format!("adverse: top(10) LAST {k}"), 20, || {
            t.top_in(10, c, k).len()
        });
    }
    time("adverse: top(100) LAST 1", 20, || t.top_in(100, c, 1).len());
    for k in [1u32, 6, 12] {
        let sp = t.span(c, k).unwrap();
        time(&format!("adverse: top_direct LAST {k}"), 20, || {
            t.top_direct(10, sp.i0, sp.i1).len()
        });
        time(&format!("adverse: scan only LAST {k}"), 20, || {
            let mut acc = vec![0i64; t.m.nslots + 1];
            Bucket::sum_into(
                t.buckets.range(sp.i0..sp.i1).map(|b| (b, false, true)),
                &mut acc,
            );
            acc.len()
        });
    }
    time("adverse: count LAST 6", 10_000, || {
        t.count_in(b"user:00000042", c, 6)
    });
    time("adverse: top(10) at clock+1h (1 excluded)", 20, || {
        t.top(10, c + H).len()
    });
    time("adverse: top(10) at clock+12h (12 excluded)", 5, || {
        t.top(10, c + 12 * H).len()
    });
    time("adverse: top(10) at clock-12h (12 excluded)", 5, || {
        t.top(10, c - 12 * H).len()
    });
    time("adverse: top(10) at clock-20h (20 excluded)", 5, || {
        t.top(10, c - 20 * H).len()
    });
    // Idle: the server's time is 18 buckets past the newest bucket; upkeep (the timer's
    // calls, 128 units each) ages 18 buckets out of the aggregate.
    let idle = c + 18 * H;
    time("adverse: top(10) idle, before upkeep", 5, || {
        t.top(10, idle).len()
    });
    t.observe_time(idle);
    let mut worst = std::time::Duration::ZERO;
    let mut calls = 0;
    let s = std::time::Instant::now();
    while t.upkeep(128) == 128 {
        calls += 1;
        let c0 = std::time::Instant::now();
        t.upkeep(128);
        worst = worst.max(c0.elapsed());
    }
    eprintln!(
        "adverse: upkeep of 18 buckets: {:?} in {} calls of 128 units, slowest call {:?}",
        s.elapsed(),
        calls * 2,
        worst
    );
    assert!(t.is_settled());
    time("adverse: top(10) idle, after upkeep", 200, || {
        t.top(10, idle).len()
    });
    // The next data bucket leaves the window: reads while it is being aged.
    t.observe_time(idle + H);
    let mut done = 0;
    for pct in [0usize, 10, 50, 90] {
        let goal = n as usize * pct / 100;
        done += t.upkeep((goal - done).max(1));
        time(
            &format!("adverse: top(10) idle, a bucket {pct}% aged"),
            50,
            || t.top(10, idle + H).len(),
        );
        let sp = t.span(idle + H, 24).unwrap();
        let fixes = t.fixes(&sp, Base::Agg);
        time(
            &format!("adverse:   through totals ({} fixes)", fixes.len()),
            50,
            || t.top_through_totals(10, Base::Agg, &fixes).map(|r| r.len()),
        );
    }
    while t.upkeep(128) == 128 {}
    time("adverse: top(10) LAST 18 idle", 50, || {
        t.top_in(10, idle + H, 18).len()
    });
    time("adverse: top(10) LAST 1 idle", 200, || {
        t.top_in(10, idle, 1).len()
    });
    time(
        "adverse: top(10) at the last write, after aging (18 added)",
        5,
        || t.top(10, c).len(),
    );
    time(
        "adverse: top(10) LAST 6 at the last write, after aging",
        20,
        || t.top_in(10, c, 6).len(),
    );
    time(
        "adverse: top(10) LAST 12 at the last write, after aging",
        20,
        || t.top_in(10, c, 12).len(),
    );
}

/// The bench's `topn-reads` key (latency group): 24 buckets of 50,000 events over 200,000
/// members, 5,000 of each bucket's events on a skewed head of 1,000, popularity reversing
/// half-way; reads at the newest bucket with 3, then 9 buckets aged, after upkeep settled.
#[test]
#[ignore]
fn bench_reads() {
    let (members, events, head) = (200_000u64, 50_000u64, 5_000u64);
    let mut rng = StdRng::seed_from_u64(24);
    let mut t = Full::new(1000, 24);
    for b in 0..24i64 {
        let mut counts: std::collections::HashMap<u64, i64> = Default::default();
        for e in 0..events {
            let rank = if e < head {
                let u: f64 = rng.gen();
                (1000.0 * u * u * u) as u64
            } else {
                rng.gen_range(0..members)
            };
            let m = if b < 12 { rank } else { members - 1 - rank };
            *counts.entry(m).or_insert(0) += 1;
        }
        let mut counts: Vec<(u64, i64)> = counts.into_iter().collect();
        counts.sort_unstable();
        for (m, n) in counts {
            t.incr(format!("{}", 100_000_000 + m).as_bytes(), n, b * 1000 + 1)
                .unwrap();
        }
    }
    let newest = 23 * 1000 + 500;
    t.observe_time(23 * 1000 + 1);
    while t.upkeep(128) == 128 {}
    eprintln!(
        "mem_usage {} KB, packed, no bucket aged",
        t.mem_usage() >> 10
    );
    for aged in [3i64, 9] {
        t.observe_time((23 + aged) * 1000 + 1);
        while t.upkeep(128) == 128 {}
        eprintln!(
            "mem_usage {} KB, {aged} aged, clock index {}",
            t.mem_usage() >> 10,
            t.m.names.clock_index_len()
        );
        // A replica's copy: loaded (members numbered in byte order), then its upkeep.
        let mut d = Full::decode_at(&t.encode(), Some((23 + aged) * 1000 + 1)).unwrap();
        while d.upkeep(128) == 128 {}
        let sp = t.span(newest, 2).unwrap();
        time(&format!("reads: {aged} aged, LAST 2 summed"), 20, || {
            t.top_direct(10, sp.i0, sp.i1).len()
        });
        time(
            &format!("reads: {aged} aged, LAST 2 summed, loaded copy"),
            20,
            || d.top_direct(10, sp.i0, sp.i1).len(),
        );
        time(
            &format!("reads: {aged} aged, LAST 2, loaded copy"),
            20,
            || d.top_in(10, newest, 2).len(),
        );
        PATHS.with(|p| p.set([0; 14]));
        for k in [1u32, 2, 6, 12, 24] {
            time(&format!("reads: {aged} aged, LAST {k}"), 20, || {
                t.top_in(10, newest, k).len()
            });
        }
        eprintln!("paths {:?}", PATHS.with(|p| p.get()));
    }
}

/// A defrag pass over a million members, one unit a call, with the model mover (which moves
/// every block: the worst case for the name units, each re-pointing its index keys; but it
/// also copies big arrays, which the server's allocator never moves).
#[test]
#[ignore]
fn bench_defrag() {
    use crate::tuples::defrag::model::MoveAll;
    use crate::tuples::defrag::{Pass, Resume};
    let mut t = fill(2, 500_000, false);
    let (mut calls, mut moved) = (0, 0);
    // Calls moving names (more than a few blocks), and the worst moving a few big ones.
    let (mut names, mut worst_other) = (Vec::new(), std::time::Duration::ZERO);
    let mut resume = Resume::new();
    let start = std::time::Instant::now();
    loop {
        let mut mover = MoveAll::stopping_after(0);
        let s = std::time::Instant::now();
        let mut pass = Pass::new(&mut mover, std::mem::take(&mut resume));
        t.defrag(&mut pass);
        let stopped = pass.finish();
        let took = s.elapsed();
        match mover.moved.len() > 16 {
            true => names.push(took),
            false => worst_other = worst_other.max(took),
        }
        calls += 1;
        moved += mover.moved.len();
        match stopped {
            Some(at) => resume = at,
            None => break,
        }
    }
    names.sort();
    let at = |q: f64| names[((names.len() - 1) as f64 * q) as usize];
    eprintln!(
        "defrag of {} members: {calls} calls, {moved} blocks moved, {:?} in all; a call moving \
         names {:?} median, {:?} p99, {:?} worst; moving a few (big) blocks {worst_other:?} worst",
        t.members(),
        start.elapsed(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// The weighted case of issue 28: 24 buckets of 50,000 events over 200,000 members, `BY`
/// 1-100, near-uniform, popularity reversing half-way; first reads and
/// repeated reads of each `LAST k` at the newest bucket.
#[test]
#[ignore]
fn bench_reads_weighted() {
    let (members, events) = (200_000u64, 50_000u64);
    let mut rng = StdRng::seed_from_u64(11);
    let mut t = Full::new(1000, 24);
    for b in 0..24i64 {
        for e in 0..events {
            let r = (members as f64 * rng.gen::<f64>()) as u64;
            let m = if b < 12 { r } else { members - 1 - r };
            let at = b * 1000 + e as i64 % 1000;
            t.incr(format!("n{m}").as_bytes(), rng.gen_range(1..=100), at)
                .unwrap();
        }
    }
    let newest = 23 * 1000 + 999;
    t.observe_time(23 * 1000 + 1);
    while t.upkeep(128) == 128 {}
    for k in [1u32, 2, 6, 12, 24] {
        let sp = t.span(newest, k).unwrap();
        PATHS.with(|p| p.set([0; 14]));
        let s = std::time::Instant::now();
        std::hint::black_box(t.top_in(10, newest, k));
        let first = s.elapsed();
        let paths = PATHS.with(|p| p.get());
        let s = std::time::Instant::now();
        std::hint::black_box(t.top_in(10, newest, k));
        let second = s.elapsed();
        let s = std::time::Instant::now();
        for _ in 0..20 {
            std::hint::black_box(t.top_direct(10, sp.i0, sp.i1));
        }
        let sums = s.elapsed() / 20;
        eprintln!("LAST {k}: first {first:?} (paths {paths:?}), second {second:?}, sum {sums:?}");
    }
}

/// VIEWS 6 12 on the flat weighted key of `bench_reads_weighted`: its writes against the same
/// writes without views, the reads of `LAST 6` / `LAST 12` at the server's time (the views)
/// against the same reads without them, and the longest upkeep slice when buckets leave the
/// views.
#[test]
#[ignore]
fn bench_views_weighted() {
    let (members, events) = (200_000u64, 50_000u64);
    let views = crate::topn::views::Views::new(&[6, 12], 24).unwrap();
    let mut keys = [Full::new(1000, 24), Full::new(1000, 24).with_views(&views)];
    for (i, t) in keys.iter_mut().enumerate() {
        let mut rng = StdRng::seed_from_u64(11);
        let s = std::time::Instant::now();
        for b in 0..24i64 {
            for e in 0..events {
                let r = (members as f64 * rng.gen::<f64>()) as u64;
                let m = if b < 12 { r } else { members - 1 - r };
                let at = b * 1000 + e as i64 % 1000;
                t.observe_time(at);
                t.incr(format!("n{m}").as_bytes(), rng.gen_range(1..=100), at)
                    .unwrap();
                if e % 1000 == 999 {
                    t.upkeep(128);
                }
            }
        }
        let per = s.elapsed() / (24 * events as u32);
        eprintln!(
            "{} views: fill {per:?} per incr, mem_usage {} MB",
            2 * i,
            t.mem_usage() >> 20
        );
    }
    let [plain, with] = &mut keys;
    for t in [&mut *plain, &mut *with] {
        t.observe_time(23 * 1000 + 1);
        while t.upkeep(128) == 128 {}
    }
    let newest = 23 * 1000 + 999;
    for k in [6u32, 12] {
        for (name, t) in [("no views", &*plain), ("VIEWS 6 12", &*with)] {
            let s = std::time::Instant::now();
            let rows = std::hint::black_box(t.top_in(10, newest, k));
            let first = s.elapsed();
            time(
                &format!("LAST {k}, {name}, first {first:?}; again"),
                20,
                || t.top_in(10, newest, k).len(),
            );
            assert_eq!(rows, plain.top_in(10, newest, k));
        }
        eprintln!(
            "view {k}: {} KB",
            with.view_memory(if k == 6 { 0 } else { 1 }) >> 10
        );
    }
    // A bucket leaves each view (and the window): the views' share, then the rest of upkeep,
    // in the timer's slices, beside the same upkeep without views.
    let slices = |t: &mut Full, f: fn(&mut Full) -> usize| {
        let (mut worst, mut n) = (std::time::Duration::ZERO, 0);
        loop {
            let s = std::time::Instant::now();
            let done = f(t);
            worst = worst.max(s.elapsed());
            n += 1;
            if done < 128 {
                return (n, worst);
            }
        }
    };
    with.observe_time(24 * 1000 + 1);
    plain.observe_time(24 * 1000 + 1);
    let views = slices(with, |t| t.age_views(128));
    let rest = slices(with, |t| t.upkeep(128));
    let without = slices(plain, |t| t.upkeep(128));
    eprintln!(
        "a bucket leaves: (slices of 128 units, longest) views {views:?}, then upkeep {rest:?}; \
         upkeep without views {without:?}"
    );
}

/// The bench's three `topn-reads` keys in-process (24 buckets of 50,000 events over 200,000
/// members, popularity reversing half-way, 3 buckets aged): unit events with a skewed head,
/// flat weighted counts (`BY` 1-100), heavy-tailed weights (`BY` Pareto 1.2, up to 10^6). Each
/// `LAST k` at the newest bucket: its first read (the kept accumulators released before), the
/// median and worst of 10 more, the plans tried; on the key and on a loaded copy (a replica).
#[test]
#[ignore]
fn bench_read_shapes() {
    let (members, events) = (200_000u64, 50_000u64);
    for shape in ["skewed", "flat", "heavy"] {
        let mut rng = StdRng::seed_from_u64(24);
        let mut t = Full::new(1000, 24);
        for b in 0..24i64 {
            let mut counts = vec![0i64; members as usize];
            for e in 0..events {
                let (rank, by) = match shape {
                    "skewed" if e < 5_000 => {
                        let u: f64 = rng.gen();
                        ((1000.0 * u * u * u) as u64, 1)
                    }
                    "skewed" => (rng.gen_range(0..members), 1),
                    "flat" => (rng.gen_range(0..members), rng.gen_range(1..=100)),
                    _ => {
                        let u: f64 = 1.0 - rng.gen::<f64>();
                        (
                            rng.gen_range(0..members),
                            (u.powf(-1.0 / 1.2) as i64).min(1_000_000),
                        )
                    }
                };
                let m = if b < 12 { rank } else { members - 1 - rank };
                counts[m as usize] += by;
            }
            for (m, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
                t.incr(format!("{}", 100_000_000 + m).as_bytes(), n, b * 1000 + 1)
                    .unwrap();
            }
        }
        t.observe_time(26 * 1000 + 1);
        while t.upkeep(128) == 128 {}
        let mut d = Full::decode_at(&t.encode(), Some(26 * 1000 + 1)).unwrap();
        while d.upkeep(128) == 128 {}
        let at = 23 * 1000 + 500;
        for (side, key) in [("master", &t), ("replica", &d)] {
            for k in [1u32, 2, 6, 12, 24] {
                super::accumulator::release_all();
                super::plan::TRIED.with(|c| c.set([0; 3]));
                let s = std::time::Instant::now();
                let rows = std::hint::black_box(key.top_in(10, at, k));
                let first = s.elapsed();
                let tried = super::plan::TRIED.with(|c| c.get());
                let mut later: Vec<_> = (0..10)
                    .map(|_| {
                        let s = std::time::Instant::now();
                        std::hint::black_box(key.top_in(10, at, k));
                        s.elapsed()
                    })
                    .collect();
                later.sort();
                let sp = key.span(at, k).unwrap();
                assert_eq!(rows, key.top_direct(10, sp.i0, sp.i1));
                eprintln!(
                    "{shape} {side} LAST {k}: first {first:?}, later median {:?} max {:?} \
                     (walks, merges, gave up: {tried:?})",
                    later[5], later[9]
                );
            }
        }
    }
}
