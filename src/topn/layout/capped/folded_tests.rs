//! The folded sums against the direct sum (one lookup a bucket, as writes
//! answered before them): random INCR / INCRBY / late events / clock jumps /
//! rewrites' counters, with upkeep at random budgets, never, or always done.

use super::folded::SEGMENT;
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The direct sums: the member's count and the bound over the window.
fn direct(key: &Capped, member: &[u8]) -> (i64, i64) {
    let bound = match key.shape.clock {
        Some(c) => clamp_i64(
            key.read(key.shape.live_lo(c), c)
                .map(|s| i128::from(s.floor()))
                .sum(),
        ),
        None => 0,
    };
    (key.count_at_clock(member).count, bound)
}

/// Three copies of a key, folded at different paces: upkeep at random
/// budgets, never (writes' shares only), and always to the end.
struct Copies([Capped; 3]);

impl Copies {
    fn each<R: PartialEq + std::fmt::Debug>(&mut self, mut f: impl FnMut(&mut Capped) -> R) -> R {
        let [a, b, c] = &mut self.0;
        let (ra, rb, rc) = (f(a), f(b), f(c));
        assert_eq!(ra, rb, "folded at random vs by writes only");
        assert_eq!(ra, rc, "folded at random vs always");
        ra
    }

    fn upkeep(&mut self, budget: usize) {
        self.0[0].upkeep(budget);
        while self.0[2].upkeep(64).0 == 64 {}
        assert_eq!(self.0[2].upkeep_due_ms(), None, "upkeep done owes nothing");
    }

    fn check(&self, members: &[String]) {
        let bytes = self.0[0].encode();
        for key in &self.0 {
            key.folded.check(&key.buckets);
            assert_eq!(key.encode(), bytes);
            assert_eq!(key, &self.0[0]);
            let counters: usize = key.buckets.iter().map(|x| x.summary.len()).sum();
            assert_eq!(key.counters(), counters);
            for m in members {
                let (count, bound) = direct(key, m.as_bytes());
                assert_eq!(key.window_count(m.as_bytes()), count, "{m}");
                assert_eq!(key.bound(), bound);
            }
        }
    }
}

#[test]
fn folded_counts_answer_as_the_direct_sum() {
    let (mut refused, mut resets, mut jumps) = (0, 0, 0);
    for seed in 0..80u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let window = rng.gen_range(1..10);
        let capacity = rng.gen_range(1..7);
        let distinct = rng.gen_range(2..20);
        let members: Vec<String> = (0..distinct).map(|i| format!("m{i}")).collect();
        let new = || Capped::new(Shape::of_seconds(window), capacity);
        let mut keys = Copies([new(), new(), new()]);
        let mut t = 100_000i64;
        for step in 0..600 {
            let x: f64 = rng.gen();
            let m = members[(x * x * distinct as f64) as usize].as_bytes();
            let by = match rng.gen_range(0..100) {
                0..=4 => i64::MAX / 3,
                5..=20 => rng.gen_range(1..20),
                _ => 1,
            };
            t += match rng.gen_range(0..60) {
                0 => {
                    jumps += 1;
                    rng.gen_range(1..=2 * window as i64) * 1000
                }
                1..=6 => 1000,
                _ => rng.gen_range(0..150),
            };
            let summed = keys.0[2].folded.progress().1;
            let at = t - rng
                .gen_range(0..(window as i64 + 1) * 1000)
                .min(rng.gen_range(0..4000));
            match rng.gen_range(0..20) {
                0 => {
                    // A rewrite's counter (TOPN.SETCOUNTER), into any bucket.
                    let Some(clock) = keys.0[0].shape.clock else {
                        continue;
                    };
                    let bucket = clock - rng.gen_range(0..window as i64);
                    let count = rng.gen_range(1..30);
                    let counter = (count, rng.gen_range(0..=count));
                    let evicted = rng.gen_bool(0.3);
                    let before = keys.0[0].clone();
                    let done = keys.each(|k| k.set_counter(clock, bucket, m, counter, evicted));
                    if done.is_err() {
                        assert_eq!(keys.0[0], before);
                    }
                }
                1 => {
                    // INCRBY: pairs all at one time, all or nothing.
                    // Calls of a few pairs, or of more than replies scan
                    // for repeats (a table finds them); some near overflow.
                    let (len, huge) = match rng.gen_range(0..4) {
                        0 => (rng.gen_range(25..60), false),
                        _ => (rng.gen_range(1..6), true),
                    };
                    let pairs: Vec<Pair> = (0..len)
                        .map(|_| {
                            let i = rng.gen_range(0..distinct as usize);
                            let by = match rng.gen_range(0..10) {
                                0 if huge => i64::MAX / 4,
                                _ => rng.gen_range(1..5),
                            };
                            (by, members[i].as_bytes())
                        })
                        .collect();
                    let before = keys.0[0].clone();
                    let done = keys.each(|k| k.incr_all(&pairs, at));
                    match done {
                        Ok((counts, _)) => {
                            for ((_, m), count) in pairs.iter().zip(counts) {
                                let want = keys.each(|k| k.window_count(m));
                                assert_eq!(count, want, "seed {seed} step {step}");
                                assert_eq!(count, direct(&keys.0[0], m).0);
                            }
                        }
                        Err(_) => {
                            assert_eq!(keys.0[0], before);
                            refused += 1;
                        }
                    }
                }
                _ => {
                    let before = keys.0[0].clone();
                    let reply = keys.each(|k| k.incr(m, by, at));
                    match reply {
                        Ok((count, _)) => {
                            assert_eq!(count, direct(&keys.0[0], m).0, "seed {seed} step {step}")
                        }
                        Err(Overflow) => {
                            assert_eq!(keys.0[0], before, "a refusal changed the key");
                            refused += 1;
                        }
                    }
                }
            }
            let (_, now_summed, leaving) = keys.0[2].folded.progress();
            resets += usize::from(summed > 0 && now_summed == 0 && leaving == 0);
            keys.upkeep(rng.gen_range(0..40));
            keys.check(&members);
        }
    }
    assert!(refused > 20, "{refused} refusals");
    assert!(jumps > 100 && resets > 0, "{jumps} jumps, {resets} resets");
}

/// At many buckets, a write's reply looks up a bounded number of them once
/// upkeep keeps up (here: none owed after each write's share).
#[test]
fn a_write_looks_up_few_buckets_at_many() {
    let mut key = Capped::new(Shape::of_seconds(86_400), 100);
    for b in 0..20_000i64 {
        for i in 0..3 {
            key.incr(format!("m{}", (b + i) % 500).as_bytes(), 1, b * 1000)
                .unwrap();
        }
    }
    assert_eq!(key.buckets_in_use(), 20_000);
    assert_eq!(key.upkeep_due_ms(), None, "the writes' shares kept up");
    let whole = key.folded.progress().0;
    assert!(whole >= 19_999, "{whole} whole");
    let reply = key.incr(b"m7", 1, 19_999_000).unwrap().0;
    assert_eq!(reply, key.count_at_clock(b"m7").count);
    key.folded.check(&key.buckets);
    // A load rebuilds the sums (upkeep folds them again); they are counted
    // in the key's memory.
    let mut loaded = Capped::decode(&key.encode()).unwrap();
    assert_eq!(loaded.upkeep_due_ms(), Some(0));
    let unfolded = loaded.mem_usage();
    while loaded.upkeep(128).0 == 128 {}
    loaded.folded.check(&loaded.buckets);
    assert_eq!(loaded.window_count(b"m7"), reply);
    // 40 to 75 bytes a member summed (the docs' figure: 32 an entry, the
    // table between half and 7/8 full), and its name.
    let per = (loaded.mem_usage() - unfolded) as f64 / loaded.folded_entries() as f64;
    assert!((32.0..80.0).contains(&per), "{per:.1} B a member summed");
}

/// A clock moved past most of a long window: the buckets that stay stay
/// folded, so the write that moves it and every write after look up at most
/// a segment's buckets besides the clock's, however many stay (the sums
/// were dropped when more left than stayed, and every staying bucket looked
/// up on each write until they were folded again).
#[test]
fn a_clock_moved_past_most_of_a_long_window_keeps_writes_bounded() {
    let mut key = Capped::new(Shape::of_seconds(2_000), 20);
    for b in 0..1_000i64 {
        for i in 0..5 {
            let m = format!("m{}", (b * 3 + i) % 60);
            key.incr(m.as_bytes(), 1, b * 1000).unwrap();
        }
    }
    while key.upkeep(1_000).0 == 1_000 {}
    assert_eq!(key.folded.progress().0, 999, "every sealed bucket folded");
    // Buckets 0..750 leave; 250 stay.
    let at = (999 + 1_750) * 1000;
    let looked_up = |k: &Capped| {
        let (whole, _, leaving) = k.folded.progress();
        k.buckets.len() - whole + leaving
    };
    let (mut most, mut writes) = (0, 0);
    for i in 0..300 {
        let m = format!("n{}", i % 40);
        let reply = key.incr(m.as_bytes(), 1, at).unwrap().0;
        assert_eq!(reply, key.count_at_clock(m.as_bytes()).count, "write {i}");
        most = most.max(looked_up(&key));
        writes += 1;
    }
    assert_eq!(key.buckets_in_use(), 251);
    assert!(
        most <= SEGMENT as usize + 1,
        "{most} buckets looked up by a write of {writes}"
    );
    key.folded.check(&key.buckets);
}
