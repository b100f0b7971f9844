//! Model-based tests: random increments, upkeep and reads against a model that keeps every
//! event, checking every read at many times and windows.

use super::key::*;
use super::seen::{get, CLOCK_SELECTIONS, GAVE_UP, SEALINGS, WALKS, WRITES_INTO_WALKS};
use super::tests::{check_invariants, top_owned};
use crate::topn::error::Overflow;
use crate::topn::select::clamp_i64;
use crate::topn::window::Query;
use crate::topn::window::Upkept;
use crate::topn::window::Window;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

struct Model {
    bucket_ms: i64,
    window: i64,
    clock: Option<i64>,
    events: Vec<(Vec<u8>, i64, i64)>, // member, by, bucket
}

impl Model {
    fn lo(&self, c: i64) -> i64 {
        c - self.window + 1
    }
    fn sum(&self, m: &[u8], lo: i64, hi: i64) -> i128 {
        self.events
            .iter()
            .filter(|e| e.0 == m && e.2 >= lo && e.2 <= hi)
            .map(|e| e.1 as i128)
            .sum()
    }
    fn incr(&mut self, m: &[u8], by: i64, at: i64) -> Result<i64, Overflow> {
        let b = at.div_euclid(self.bucket_ms);
        if let Some(c) = self.clock {
            if b < self.lo(c) {
                return Ok(self.sum(m, self.lo(c), c) as i64);
            }
        }
        let nc = self.clock.map_or(b, |c| c.max(b));
        let entry = self.sum(m, b, b) as i64;
        entry.checked_add(by).ok_or(Overflow)?;
        let live = self.sum(m, self.lo(nc), nc) + by as i128;
        if live > i64::MAX as i128 || live < i64::MIN as i128 {
            return Err(Overflow);
        }
        self.clock = Some(nc);
        self.events.push((m.to_vec(), by, b));
        Ok(live as i64)
    }
    fn counts(&self, at: i64) -> HashMap<Vec<u8>, i128> {
        self.counts_in(at, self.window)
    }
    fn counts_in(&self, at: i64, w: i64) -> HashMap<Vec<u8>, i128> {
        let mut out = HashMap::new();
        let Some(c) = self.clock else { return out };
        let tb = at.div_euclid(self.bucket_ms);
        let lo = (tb - w + 1).max(self.lo(c));
        for e in &self.events {
            if e.2 >= lo && e.2 <= tb {
                *out.entry(e.0.clone()).or_insert(0) += e.1 as i128;
            }
        }
        out
    }
    fn top(&self, n: usize, at: i64) -> Vec<(Vec<u8>, i64)> {
        self.top_in(n, at, self.window)
    }
    fn top_in(&self, n: usize, at: i64, w: i64) -> Vec<(Vec<u8>, i64)> {
        let mut v: Vec<(Vec<u8>, i64)> = self
            .counts_in(at, w)
            .into_iter()
            .filter(|(_, c)| *c != 0)
            .map(|(m, c)| (m, clamp_i64(c)))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

fn member_name(rng: &mut StdRng, pool: usize) -> Vec<u8> {
    // Skewed popularity, binary-ish names with shared prefixes.
    let x: f64 = rng.gen();
    let i = ((x * x * x) * pool as f64) as usize;
    let mut v = format!("user:{:05}", i).into_bytes();
    if i.is_multiple_of(7) {
        v.push(0);
        v.push((i % 251) as u8);
    }
    if i.is_multiple_of(11) {
        v.truncate(3);
        v.extend_from_slice(&(i as u32).to_be_bytes());
    }
    v
}

/// Random events against the model, with reads checked at many times. `lead`: how many
/// buckets the server's time may run ahead of the events (0: the server's time is never
/// told); with it, buckets age out of the aggregate (by writes and by `upkeep`, the timer's
/// call) while later events still land in them, as on a replica or a replayed AOF.
fn run_model(seed: u64, budget: usize, window: u32, nbuckets: i64, nevents: usize, pool: usize) {
    run_model_ahead(seed, budget, window, nbuckets, nevents, pool, 0)
}

fn run_model_ahead(
    seed: u64,
    budget: usize,
    window: u32,
    nbuckets: i64,
    nevents: usize,
    pool: usize,
    lead: i64,
) {
    let bucket_ms = 1000;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = Full::new(bucket_ms, window);
    t.set_retire_budget(budget);
    let mut m = Model {
        bucket_ms,
        window: window as i64,
        clock: None,
        events: Vec::new(),
    };
    let mut now: i64 = rng.gen_range(0..5000);
    let end = nbuckets * bucket_ms;
    let step = (end / nevents as i64).max(1) * 2;
    let mut since_check = 0;
    let mut checks = 0;
    for ev in 0..nevents {
        if rng.gen_ratio(1, 2) {
            now += rng.gen_range(0..step);
        }
        if rng.gen_ratio(1, 3000) {
            now += (window as i64 + rng.gen_range(0..3)) * bucket_ms; // big jump
        }
        let at = if rng.gen_ratio(1, 12) {
            (now - rng.gen_range(0..(window as i64 + 3) * bucket_ms)).max(0)
        } else {
            now
        };
        if lead > 0 {
            t.observe_time(now + rng.gen_range(0..=lead * bucket_ms));
        }
        // Upkeep (freeing, sealing, sums walking out of old buckets) interleaved with the
        // writes and reads, in slices of any size.
        if rng.gen_ratio(1, 8) {
            let work = rng.gen_range(1..4 * budget + 2);
            assert!(t.upkeep(work).0 <= work, "seed {seed}: upkeep over budget");
        }
        if rng.gen_ratio(1, 50) {
            check_invariants(&t);
        }
        let name = member_name(&mut rng, pool);
        let by = match rng.gen_range(0..20) {
            0..=2 => -rng.gen_range(1..4),
            3 => 0,
            _ => rng.gen_range(1..6),
        };
        let got = t.incr(&name, by, at).map(|(count, _)| count);
        let want = m.incr(&name, by, at);
        assert_eq!(
            got,
            want,
            "seed {seed} event {ev}: incr({:?}, {by}, {at})",
            String::from_utf8_lossy(&name)
        );
        assert!(
            t.last_retire_work() <= budget,
            "seed {seed}: retirement budget exceeded"
        );
        since_check += 1;
        if since_check >= nevents / 40 || ev + 1 == nevents {
            since_check = 0;
            checks += 1;
            let c = m.clock.unwrap();
            let mut times = vec![
                now,
                at,
                c * bucket_ms,
                c * bucket_ms + bucket_ms - 1,
                (c + 1) * bucket_ms,
                (c + window as i64 / 2) * bucket_ms + 17,
                (c + window as i64 - 1) * bucket_ms,
                (c + window as i64) * bucket_ms,
                i64::MAX / 2,
                0,
            ];
            for _ in 0..4 {
                times.push(
                    (c - rng.gen_range(0..window as i64 + 3)) * bucket_ms
                        + rng.gen_range(0..bucket_ms),
                );
            }
            for &tm in &times {
                for n in [1usize, 3, 10, 50, 100_000] {
                    let want = m.top(n, tm);
                    assert_eq!(
                        top_owned(&t, n, tm),
                        want,
                        "seed {seed} event {ev}: top({n}, {tm}) clock {c}"
                    );
                    if let Some(sp) = t.span(&Query {
                        at_ms: tm,
                        last: window,
                        n: 0,
                    }) {
                        let d: Vec<(Vec<u8>, i64)> = t
                            .top_direct(n, &sp)
                            .into_iter()
                            .map(|(m, c)| (m.to_vec(), c))
                            .collect();
                        assert_eq!(d, want, "seed {seed}: top_direct({n}, {tm})");
                        for rows in t.top_via_each(n, &sp).into_iter().flatten() {
                            let d: Vec<(Vec<u8>, i64)> =
                                rows.into_iter().map(|(m, c)| (m.to_vec(), c)).collect();
                            assert_eq!(d, want, "seed {seed}: top_via({n}, {tm})");
                        }
                    } else {
                        assert!(want.is_empty());
                    }
                }
                let w2 = rng.gen_range(1..window + 3);
                for n in [1usize, 10, 1000] {
                    let got: Vec<(Vec<u8>, i64)> = t
                        .top_in(n, tm, w2)
                        .into_iter()
                        .map(|(m, c)| (m.to_vec(), c))
                        .collect();
                    let want = m.top_in(n, tm, w2 as i64);
                    assert_eq!(got, want, "seed {seed}: top_in({n}, {tm}, {w2})");
                }
                let counts2 = m.counts_in(tm, w2 as i64);
                for _ in 0..10 {
                    let name = member_name(&mut rng, pool);
                    let want = clamp_i64(counts2.get(&name).copied().unwrap_or(0));
                    assert_eq!(
                        t.count_in(&name, tm, w2),
                        want,
                        "seed {seed}: count_in at {tm} w {w2}"
                    );
                }
                let counts = m.counts(tm);
                for _ in 0..20 {
                    let name = member_name(&mut rng, pool);
                    let want = clamp_i64(counts.get(&name).copied().unwrap_or(0));
                    assert_eq!(t.count(&name, tm), want, "seed {seed}: count at {tm}");
                }
            }
            if checks % 5 == 0 {
                check_invariants(&t);
                let d = Full::decode(&t.encode()).expect("decode");
                for &tm in &times {
                    assert_eq!(
                        top_owned(&d, 1000, tm),
                        m.top(1000, tm),
                        "seed {seed}: decoded"
                    );
                }
                // Loaded at this server's time (buckets that left the window there load out of
                // its sum), then upkeep in slices: LAST k reads exact at every step.
                let mut d = Full::decode_at(&t.encode(), Some(t.upkeep.now_ms)).expect("decode_at");
                let mut step = 0;
                loop {
                    if step % 3 == 0 {
                        let k = rng.gen_range(1..=window);
                        for &tm in &times[..4] {
                            assert_eq!(
                                top_owned_in(&d, 10, tm, k),
                                m.top_in(10, tm, k as i64),
                                "seed {seed}: decoded at the server's time, step {step}"
                            );
                        }
                    }
                    if d.is_settled() {
                        break;
                    }
                    d.upkeep(rng.gen_range(1..40));
                    step += 1;
                }
                check_invariants(&d);
                let mut r = Full::new(bucket_ms, window);
                for (mm, by, at) in t.replay_events() {
                    r.incr(mm, by, at).unwrap();
                }
                for &tm in &times {
                    assert_eq!(
                        top_owned(&r, 1000, tm),
                        m.top(1000, tm),
                        "seed {seed}: replayed"
                    );
                }
            }
        }
    }
    // Settle: upkeep completes with writes in the current bucket (the timer's upkeep).
    let c = m.clock.unwrap();
    let mut guard = 0;
    while !t.is_settled() {
        t.upkeep(64);
        t.incr(b"settle", 1, c * bucket_ms).unwrap();
        m.incr(b"settle", 1, c * bucket_ms).unwrap();
        guard += 1;
        assert!(guard < 10_000_000);
    }
    check_invariants(&t);
    let live: std::collections::HashSet<&Vec<u8>> = m
        .events
        .iter()
        .filter(|e| e.2 >= m.lo(c) && e.1 != 0)
        .map(|e| &e.0)
        .collect();
    // Members only in retired buckets are reclaimed (zero-count entries may keep a few).
    assert!(t.members() >= live.len());
    assert_eq!(
        top_owned(&t, usize::MAX, c * bucket_ms),
        m.top(usize::MAX, c * bucket_ms)
    );
}

fn top_owned_in(t: &Full, n: usize, at: i64, k: u32) -> Vec<(Vec<u8>, i64)> {
    t.top_in(n, at, k)
        .into_iter()
        .map(|(m, c)| (m.to_vec(), c))
        .collect()
}

#[test]
fn model_small_budget() {
    for seed in 0..4 {
        run_model(seed, 3, 6, 20, 4000, 3000);
    }
}

#[test]
fn model_default_budget() {
    for seed in 10..13 {
        run_model(seed, DEFAULT_RETIRE_BUDGET, 6, 20, 6000, 3000);
    }
}

#[test]
fn model_window_one_and_few_members() {
    for seed in 20..24 {
        run_model(seed, 2, 1, 30, 3000, 30);
        run_model(seed, 5, 3, 30, 3000, 8);
    }
}

#[test]
fn model_many_buckets() {
    run_model(30, 7, 50, 300, 4000, 300);
    run_model(31, 1, 40, 100, 3000, 2000);
}

#[test]
fn model_server_time_ahead() {
    // Buckets leave the window's sum (by writes and by timer upkeep) while events keep
    // landing in them, some in a bucket the sum is half way out of; reads at every time and
    // LAST k; the window at the clock read by a selection over the clock's sum.
    let counts = || {
        [
            get(&WRITES_INTO_WALKS),
            get(&SEALINGS),
            get(&WALKS),
            get(&GAVE_UP),
            get(&CLOCK_SELECTIONS),
        ]
    };
    let before = counts();
    for seed in 40..44 {
        run_model_ahead(seed, 3, 6, 25, 4000, 2000, 8);
    }
    run_model_ahead(44, DEFAULT_RETIRE_BUDGET, 12, 40, 5000, 300, 3);
    run_model_ahead(45, 1, 1, 20, 2000, 30, 2);
    run_model_ahead(46, 7, 30, 120, 4000, 500, 40);
    let diff: Vec<usize> = counts().iter().zip(before).map(|(a, b)| a - b).collect();
    assert!(
        diff[0] > 20,
        "writes into a bucket a sum is walking: {diff:?}"
    );
    assert!(diff[1] > 50, "buckets sealed: {diff:?}");
    // (Where the server's time runs past the whole window, the window's sum holds nothing and
    // reads at the clock sum: the walks come from the runs that lead by less.)
    assert!(diff[2] > 20, "walks with fixes: {diff:?}");
    assert!(diff[3] * 10 < diff[2], "walks that gave up: {diff:?}");
    assert!(diff[4] > 20, "selections over the clock's sum: {diff:?}");
}

#[test]
fn model_random_seed() {
    let seed: u64 = rand::random();
    eprintln!("model_random_seed: seed {seed}");
    let window = 2 + (seed % 7) as u32;
    run_model_ahead(
        seed,
        1 + (seed % 50) as usize,
        window,
        25,
        4000,
        2000,
        (seed >> 8) as i64 % (window as i64 + 3),
    );
}
