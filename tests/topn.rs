//! Acceptance tests of the TOPN family (exact top-N over a sliding window of
//! time buckets) against a real redis-server.
//!
//! Model tests take their seed from `TOPN_SEED` (printed at the start of each run).
mod common;
use common::families::topn::*;
use common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- helpers

type Conn = redis::Connection;

/// If the current `bucket_ms` bucket ends within `margin` ms, wait for the next one
/// (tests that rely on the server clock staying in one bucket).
fn avoid_boundary(bucket_ms: i64, margin: i64) {
    let left = bucket_ms - now_ms().rem_euclid(bucket_ms);
    if left < margin {
        std::thread::sleep(Duration::from_millis(left as u64 + 20));
    }
}

// ---------------------------------------------------------------- the model

/// Naive reference: every accepted event per (bucket, member), same rules as the contract.
#[derive(Clone, Debug)]
struct Model {
    bucket_ms: i64,
    window: i64,
    clock: Option<i64>,
    buckets: BTreeMap<i64, BTreeMap<String, i64>>,
}

impl Model {
    fn new(bucket_s: i64, window: i64) -> Model {
        Model {
            bucket_ms: bucket_s * 1000,
            window,
            clock: None,
            buckets: BTreeMap::new(),
        }
    }

    fn bucket(&self, at: i64) -> i64 {
        at.div_euclid(self.bucket_ms)
    }

    fn sum(&self, m: &str, lo: i64, hi: i64) -> i128 {
        if lo > hi {
            return 0;
        }
        self.buckets
            .range(lo..=hi)
            .map(|(_, b)| *b.get(m).unwrap_or(&0) as i128)
            .sum()
    }

    /// The INCR reply, or None when the call must fail with an overflow.
    fn incr(&mut self, m: &str, by: i64, at: i64) -> Option<i64> {
        let b = self.bucket(at);
        if let Some(c) = self.clock {
            if b < c - self.window + 1 {
                return Some(self.sum(m, c - self.window + 1, c) as i64);
            }
        }
        let nc = self.clock.map_or(b, |c| c.max(b));
        let live = self.sum(m, nc - self.window + 1, nc) + by as i128;
        let entry = self
            .buckets
            .get(&b)
            .and_then(|x| x.get(m))
            .copied()
            .unwrap_or(0);
        if live > i64::MAX as i128 || live < i64::MIN as i128 || entry.checked_add(by).is_none() {
            return None;
        }
        self.clock = Some(nc);
        if by != 0 {
            *self
                .buckets
                .entry(b)
                .or_default()
                .entry(m.to_string())
                .or_insert(0) += by;
        }
        let lo = nc - self.window + 1;
        self.buckets = self.buckets.split_off(&lo);
        Some(live as i64)
    }

    fn range(&self, at: i64, w: i64) -> Option<(i64, i64)> {
        let c = self.clock?;
        let tb = self.bucket(at);
        let lo = (tb - w + 1).max(c - self.window + 1);
        (lo <= tb).then_some((lo, tb))
    }

    fn count(&self, m: &str, at: i64) -> i64 {
        self.count_in(m, at, self.window)
    }

    /// The count over the `w` newest buckets of the window at `at` (LAST w), clamped as replies.
    fn count_in(&self, m: &str, at: i64, w: i64) -> i64 {
        self.range(at, w).map_or(0, |(lo, hi)| {
            self.sum(m, lo, hi)
                .clamp(i64::MIN as i128, i64::MAX as i128) as i64
        })
    }

    fn top_in(&self, n: usize, at: i64, w: i64) -> Rows {
        let Some((lo, hi)) = self.range(at, w) else {
            return vec![];
        };
        let mut acc: BTreeMap<&str, i128> = BTreeMap::new();
        for (_, b) in self.buckets.range(lo..=hi) {
            for (m, v) in b {
                *acc.entry(m.as_str()).or_insert(0) += *v as i128;
            }
        }
        let mut out: Rows = acc
            .into_iter()
            .filter(|(_, v)| *v != 0)
            .map(|(m, v)| (m.to_string(), v as i64))
            .collect();
        out.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| a.0.as_bytes().cmp(b.0.as_bytes()))
        });
        out.truncate(n);
        out
    }

    fn top(&self, n: usize, at: i64) -> Rows {
        self.top_in(n, at, self.window)
    }

    /// Buckets covering 24 h, when TOP24 is allowed.
    fn w24(&self) -> Option<i64> {
        let day = 86_400_000;
        (day % self.bucket_ms == 0 && day / self.bucket_ms <= self.window)
            .then_some(day / self.bucket_ms)
    }

    fn expire_at(&self) -> i64 {
        (self.clock.unwrap() + self.window) * self.bucket_ms
    }
}

// ---------------------------------------------------------------- 1. basics

#[test]
fn basics_ties_zero_negative_late_and_reads_at() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    let i = info(c, "k");
    assert_eq!(i["bucket"], 60);
    assert_eq!(i["window"], 3);
    assert_eq!(i["members"], 0);
    assert_eq!(i["buckets"], 0);
    assert!(i["memory"] > 0, "{i:?}");
    assert_eq!(
        pexpiretime(c, "k"),
        -1,
        "a created key without writes has no expiry"
    );
    assert_eq!(q::<String>(c, &["TYPE", "k"]), "recipesTN");
    assert_eq!(top_ws(c, "TOPN.TOP", "k", 10, None), rows(&[]));

    let bm = 60_000;
    let b = now_ms() / bm; // current bucket
    let base = b * bm;
    assert_eq!(incr(c, "k", "a", 1, base), 1);
    assert_eq!(incr(c, "k", "a", 1, base + 1), 2);
    assert_eq!(incr(c, "k", "b", 2, base + 59_999), 2);
    assert_eq!(incr(c, "k", "c", 2, base), 2);
    assert_eq!(pexpiretime(c, "k"), (b + 3) * bm);
    assert_eq!(incr(c, "k", "d", 5, base + bm), 5);
    assert_eq!(pexpiretime(c, "k"), (b + 1 + 3) * bm);
    assert_eq!(incr(c, "k", "a", 1, base + bm), 3);
    assert_eq!(incr(c, "k", "n", -4, base + bm), -4);
    let clock_t = base + bm + 30_000;
    // highest first, ties by member ascending, negatives after positives
    assert_eq!(
        top(c, "k", 10, clock_t),
        rows(&[("d", 5), ("a", 3), ("b", 2), ("c", 2), ("n", -4)])
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "k", "2", "AT", &clock_t.to_string()]),
        ["d", "a"]
    );
    assert_eq!(
        top(c, "k", 4, clock_t),
        rows(&[("d", 5), ("a", 3), ("b", 2), ("c", 2)])
    );
    assert_eq!(
        top(c, "k", 3, clock_t),
        rows(&[("d", 5), ("a", 3), ("b", 2)])
    );
    assert_eq!(top(c, "k", 0, clock_t), rows(&[]));
    // options in any order, lower case
    let v: Vec<Value> = q(
        c,
        &[
            "topn.top",
            "k",
            "3",
            "withcounts",
            "at",
            &clock_t.to_string(),
        ],
    );
    assert_eq!(pairs(v), rows(&[("d", 5), ("a", 3), ("b", 2)]));
    assert_eq!(
        count(c, "k", &["a", "b", "d", "n", "nobody"], Some(clock_t)),
        [3, 2, 5, -4, 0]
    );

    // Reads at AT before the clock: window [b-2, b] cut to the live window [b-1, b+1].
    assert_eq!(
        top(c, "k", 10, base + 5),
        rows(&[("a", 2), ("b", 2), ("c", 2)])
    );
    assert_eq!(count(c, "k", &["a", "d"], Some(base)), [2, 0]);
    // Window ending before the live window: nothing.
    assert_eq!(top(c, "k", 10, base - 2 * bm), rows(&[]));
    // Later reads with no writes: AT b+2 still covers [b, b+2].
    assert_eq!(
        top(c, "k", 10, base + 2 * bm),
        top(c, "k", 10, clock_t),
        "window ending at b+2 holds b..b+2 = everything"
    );
    // AT b+3: [b+1, b+3] -> bucket b+1 only.
    assert_eq!(
        top(c, "k", 10, base + 3 * bm),
        rows(&[("d", 5), ("a", 1), ("n", -4)])
    );
    assert_eq!(count(c, "k", &["a", "b"], Some(base + 3 * bm + 1)), [1, 0]);
    // Far future: empty.
    assert_eq!(top(c, "k", 10, base + 4 * bm), rows(&[]));
    assert_eq!(top(c, "k", 10, base + 1000 * bm), rows(&[]));
    assert_eq!(count(c, "k", &["a", "d"], Some(base + 4 * bm)), [0, 0]);

    // Late events: clock b+1, live [b-1, b+1]. b-2 is ignored, reply = current count.
    let before = top(c, "k", 10, clock_t);
    let exp_before = pexpiretime(c, "k");
    assert_eq!(incr(c, "k", "a", 100, base - 2 * bm), 3);
    assert_eq!(incr(c, "k", "zz", 100, base - 2 * bm + 59_999), 0);
    assert_eq!(top(c, "k", 10, clock_t), before);
    assert_eq!(pexpiretime(c, "k"), exp_before);
    // b-1 is still live: accepted, and the reply is the count at the clock.
    assert_eq!(incr(c, "k", "a", 10, base - bm), 13);
    assert_eq!(incr(c, "k", "b", 1, base), 3);
    assert_eq!(
        pexpiretime(c, "k"),
        exp_before,
        "older writes keep the expiry"
    );
    assert_eq!(count(c, "k", &["a", "b"], Some(clock_t)), [13, 3]);
    assert_eq!(count(c, "k", &["a", "b"], Some(base - bm)), [10, 0]);
    assert_eq!(count(c, "k", &["a"], Some(base + 3 * bm)), [1]);
    let i = info(c, "k");
    assert_eq!(i["buckets"], 3);
    assert_eq!(i["members"], 5, "a b c d n: {i:?}");

    // Zero counts are hidden; BY 0 stores nothing.
    q_ok(c, &["TOPN.CREATE", "z", "BUCKET", "60", "WINDOW", "3"]);
    assert_eq!(incr(c, "z", "e", 1, base), 1);
    assert_eq!(incr(c, "z", "e", -1, base), 0);
    assert_eq!(incr(c, "z", "f", 0, base), 0);
    assert_eq!(incr(c, "z", "g", 2, base), 2);
    assert_eq!(incr(c, "z", "h", 3, base + bm), 3);
    assert_eq!(
        incr(c, "z", "h", -3, base),
        0,
        "bucket b: h -3; window b..b+1: 0"
    );
    assert_eq!(top(c, "z", 10, base + bm), rows(&[("g", 2)]));
    assert_eq!(top(c, "z", 10, base), rows(&[("g", 2), ("h", -3)]));
    assert_eq!(
        count(c, "z", &["e", "f", "g", "h"], Some(base + bm)),
        [0, 0, 2, 0]
    );
    assert_eq!(
        count(c, "z", &["e", "f", "g", "h"], Some(base)),
        [0, 0, 2, -3]
    );
    assert_eq!(top(c, "z", 10, base + 2 * bm), rows(&[("g", 2)]));
    assert_eq!(top(c, "z", 10, base + 3 * bm), rows(&[("h", 3)]));

    // Overflow is rejected and changes nothing.
    q_ok(c, &["TOPN.CREATE", "o", "BUCKET", "60", "WINDOW", "3"]);
    let max = i64::MAX.to_string();
    assert_eq!(
        q::<i64>(
            c,
            &["TOPN.INCR", "o", "m", "BY", &max, "AT", &base.to_string()]
        ),
        i64::MAX
    );
    let exp_o = pexpiretime(c, "o");
    for (by, at) in [(1, base), (1, base + bm), (5, base + 30)] {
        let e = expect_err(
            c,
            &cmd(&[
                "TOPN.INCR",
                "o",
                "m",
                "BY",
                &by.to_string(),
                "AT",
                &at.to_string(),
            ]),
        );
        assert!(
            e.starts_with("ERR") && e.contains("BY") && e.contains("overflow"),
            "{e}"
        );
    }
    assert_eq!(
        pexpiretime(c, "o"),
        exp_o,
        "failed INCR in a later bucket moved the clock"
    );
    assert_eq!(top(c, "o", 10, base), rows(&[("m", i64::MAX)]));
    assert_eq!(count(c, "o", &["m"], Some(base + bm)), [i64::MAX]);
    // Another member is independent; a negative in a later bucket then a positive is fine.
    assert_eq!(incr(c, "o", "m", -1, base + bm), i64::MAX - 1);
    assert_eq!(incr(c, "o", "m", 1, base + bm), i64::MAX);
    let e = expect_err(
        c,
        &cmd(&["TOPN.INCR", "o", "m", "AT", &(base + bm).to_string()]),
    );
    assert!(e.contains("BY"), "{e}");
    let min = i64::MIN.to_string();
    assert_eq!(
        q::<i64>(
            c,
            &["TOPN.INCR", "o", "low", "BY", &min, "AT", &base.to_string()]
        ),
        i64::MIN
    );
    let e = expect_err(
        c,
        &cmd(&["TOPN.INCR", "o", "low", "BY", "-1", "AT", &base.to_string()]),
    );
    assert!(e.contains("BY") && e.contains("overflow"), "{e}");
    assert_eq!(
        top(c, "o", 10, base + bm),
        rows(&[("m", i64::MAX), ("low", i64::MIN)])
    );
}

#[test]
fn defaults_configs_and_top24() {
    let srv = Server::start();
    let c = &mut srv.conn();
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-bucket"]),
        ["recipes.topn-default-bucket", "3600"]
    );
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-window"]),
        ["recipes.topn-default-window", "24"]
    );
    avoid_boundary(HOUR_MS, 5_000);
    // Default key, server time.
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "x"]), 1);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "x"]), 2);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "y", "BY", "7"]), 7);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "w", "BY", "2"]), 2);
    let i = info(c, "d");
    assert_eq!(
        (i["bucket"], i["window"], i["members"], i["buckets"]),
        (3600, 24, 3, 1)
    );
    let h = now_ms() / HOUR_MS;
    assert_eq!(pexpiretime(c, "d"), (h + 24) * HOUR_MS);
    assert_eq!(q::<Vec<String>>(c, &["TOPN.TOP", "d"]), ["y", "w", "x"]);
    assert_eq!(
        top_ws(c, "TOPN.TOP", "d", 10, None),
        rows(&[("y", 7), ("w", 2), ("x", 2)])
    );
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "d", 10, None),
        rows(&[("y", 7), ("w", 2), ("x", 2)])
    );
    assert_eq!(q::<Vec<String>>(c, &["TOPN.TOP24", "d", "1"]), ["y"]);
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "d", "x", "y", "none"]),
        [2, 7, 0]
    );
    // TOP24 on a default key equals TOP at several times.
    let base = h * HOUR_MS;
    for k in 1..30 {
        incr(c, "d", &format!("m{}", k % 7), k, base + k * HOUR_MS);
    }
    for t in [
        base,
        base + 5 * HOUR_MS,
        base + 23 * HOUR_MS,
        base + 29 * HOUR_MS + 1,
        base + 40 * HOUR_MS,
    ] {
        let a = top_ws(c, "TOPN.TOP", "d", 100, Some(t));
        assert_eq!(a, top_ws(c, "TOPN.TOP24", "d", 100, Some(t)), "t={t}");
    }

    // Runtime config changes apply to keys created afterwards.
    q_ok(c, &["CONFIG", "SET", "recipes.topn-default-bucket", "60"]);
    q_ok(c, &["CONFIG", "SET", "recipes.topn-default-window", "7"]);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d2", "x"]), 1);
    q_ok(c, &["TOPN.CREATE", "d3"]);
    q_ok(c, &["TOPN.CREATE", "d4", "WINDOW", "2"]);
    for (k, b, w) in [("d2", 60, 7), ("d3", 60, 7), ("d4", 60, 2), ("d", 3600, 24)] {
        let i = info(c, k);
        assert_eq!((i["bucket"], i["window"]), (b, w), "{k}");
    }
    for bad in [
        ["recipes.topn-default-bucket", "0"],
        ["recipes.topn-default-bucket", "31536001"],
        ["recipes.topn-default-window", "0"],
        ["recipes.topn-default-window", "100001"],
        ["recipes.topn-default-window", "x"],
    ] {
        expect_err(c, &cmd(&["CONFIG", "SET", bad[0], bad[1]]));
    }
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-window"]),
        ["recipes.topn-default-window", "7"]
    );

    // TOP24 needs 24 h in whole buckets within the window.
    let now = now_ms();
    q_ok(c, &["TOPN.CREATE", "b7", "BUCKET", "7", "WINDOW", "100000"]);
    incr(c, "b7", "m", 1, now);
    let e = expect_err(c, &cmd(&["TOPN.TOP24", "b7"]));
    assert!(e.starts_with("ERR") && e.contains("24"), "{e}");
    q_ok(c, &["TOPN.CREATE", "w23", "BUCKET", "3600", "WINDOW", "23"]);
    incr(c, "w23", "m", 1, now);
    let e = expect_err(c, &cmd(&["TOPN.TOP24", "w23", "5", "WITHCOUNTS"]));
    assert!(e.starts_with("ERR") && e.contains("24"), "{e}");
    // TOP still works on them.
    assert_eq!(q::<Vec<String>>(c, &["TOPN.TOP", "w23"]), ["m"]);
    // A longer window: TOP24 covers only the last 24 h of it.
    q_ok(
        c,
        &["TOPN.CREATE", "long", "BUCKET", "60", "WINDOW", "2000"],
    );
    let b = now / 60_000 * 60_000;
    incr(c, "long", "old", 10, b);
    incr(c, "long", "new", 1, b + 1500 * 60_000);
    let t = b + 1500 * 60_000;
    assert_eq!(top(c, "long", 10, t), rows(&[("old", 10), ("new", 1)]));
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "long", 10, Some(t)),
        rows(&[("new", 1)])
    );
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "long", 10, Some(b + 1439 * 60_000)),
        rows(&[("old", 10)])
    );
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "long", 10, Some(b + 1440 * 60_000)),
        rows(&[])
    );
    // TOP24 on a missing key: empty.
    assert_eq!(top_ws(c, "TOPN.TOP24", "missing", 10, None), rows(&[]));
}

#[test]
fn module_args_set_defaults() {
    let srv = Server::builder()
        .module_args(&["topn-default-bucket", "60", "topn-default-window", "5"])
        .start();
    let c = &mut srv.conn();
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-bucket"]),
        ["recipes.topn-default-bucket", "60"]
    );
    let b = now_ms() / 60_000;
    assert_eq!(incr(c, "k", "m", 3, b * 60_000), 3);
    let i = info(c, "k");
    assert_eq!((i["bucket"], i["window"]), (60, 5));
    assert_eq!(pexpiretime(c, "k"), (b + 5) * 60_000);
    // The trailing 24 h are not whole buckets of a 5-bucket window.
    let e = expect_err(c, &cmd(&["TOPN.TOP24", "k"]));
    assert!(e.contains("24"), "{e}");
}

// ---------------------------------------------------------------- 2. model-based exactness

struct Shape {
    bucket_s: i64,
    window: i64,
    members: usize,
    events: usize,
    span_buckets: i64,
    chunk: usize,
}

fn gen_by(rng: &mut StdRng) -> i64 {
    let r: f64 = rng.gen();
    if r < 0.80 {
        1
    } else if r < 0.88 {
        rng.gen_range(2..=50)
    } else if r < 0.95 {
        -rng.gen_range(1..=20)
    } else if r < 0.98 {
        0
    } else {
        rng.gen_range(1_000_000_000_000i64..10_000_000_000_000)
    }
}

fn check_against_model(
    c: &mut Conn,
    key: &str,
    model: &Model,
    universe: &[String],
    rng: &mut StdRng,
    ctx: &str,
) {
    let bm = model.bucket_ms;
    let w = model.window;
    let cl = model.clock.unwrap() * bm;
    let ts = [
        cl + rng.gen_range(0..bm),
        cl - bm,
        cl - 3 * bm + 1,
        cl - (w - 1) * bm,
        cl - w * bm,
        cl + 2 * bm + bm / 2,
        cl + (w - 1) * bm,
        cl + (w + 3) * bm,
        now_ms(),
    ];
    for &t in &ts {
        let got = top(c, key, 50, t);
        let want = model.top(50, t);
        assert_eq!(
            got, want,
            "{ctx}: TOPN.TOP {key} 50 AT {t} (clock bucket {:?})",
            model.clock
        );
        let mut sample: Vec<&str> = (0..60)
            .map(|_| universe[rng.gen_range(0..universe.len())].as_str())
            .collect();
        sample.push("never-seen");
        // the top members too (their counts are the most interesting)
        for (m, _) in want.iter().take(10) {
            sample.push(m.as_str());
        }
        let got = count(c, key, &sample, Some(t));
        let want: Vec<i64> = sample.iter().map(|m| model.count(m, t)).collect();
        assert_eq!(got, want, "{ctx}: TOPN.COUNT {key} {sample:?} AT {t}");
        // For LAST: never-seen, the top members and some others.
        let sample: Vec<&str> = sample[sample.len().saturating_sub(20)..].to_vec();
        if let Some(w24) = model.w24() {
            let got = top_ws(c, "TOPN.TOP24", key, 20, Some(t));
            assert_eq!(
                got,
                model.top_in(20, t, w24),
                "{ctx}: TOPN.TOP24 {key} 20 AT {t}"
            );
        }
        // LAST k: a random k, and the extremes.
        for k in [1, rng.gen_range(1..=w), w] {
            let n = [1, 10, 50][rng.gen_range(0..3)];
            assert_eq!(
                top_last(c, key, n, Some(t), k),
                model.top_in(n, t, k),
                "{ctx}: TOPN.TOP {key} {n} AT {t} LAST {k}"
            );
            let got = count_last(c, key, &sample, Some(t), Some(k));
            let want: Vec<i64> = sample.iter().map(|m| model.count_in(m, t, k)).collect();
            assert_eq!(got, want, "{ctx}: TOPN.COUNT {key} ... AT {t} LAST {k}");
        }
    }
    // LAST k at random times around the clock.
    for _ in 0..4 {
        let t = cl + rng.gen_range(-(w + 2) * bm..(w + 2) * bm);
        let k = rng.gen_range(1..=w);
        assert_eq!(
            top_last(c, key, 20, Some(t), k),
            model.top_in(20, t, k),
            "{ctx}: TOPN.TOP {key} 20 AT {t} LAST {k}"
        );
    }
    // The whole ranking at the clock.
    let t = cl + bm - 1;
    let got = top(c, key, 1_000_000, t);
    assert_eq!(
        got,
        model.top(usize::MAX, t),
        "{ctx}: full TOPN.TOP at the clock"
    );
    // A read without AT uses the server clock.
    let t0 = now_ms();
    let got = top_ws(c, "TOPN.TOP", key, 50, None);
    let t1 = now_ms();
    if t0 / bm == t1 / bm {
        assert_eq!(got, model.top(50, t0), "{ctx}: TOPN.TOP without AT");
    }
    let i = info(c, key);
    assert_eq!((i["bucket"] * 1000, i["window"]), (bm, w));
    assert_eq!(pexpiretime(c, key), model.expire_at(), "{ctx}: PEXPIRETIME");
}

fn run_model(c: &mut Conn, seed: u64, shape: &Shape, key: &str) {
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = shape.bucket_s * 1000;
    let w = shape.window;
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            &shape.bucket_s.to_string(),
            "WINDOW",
            &w.to_string(),
        ],
    );
    let mut model = Model::new(shape.bucket_s, w);
    // Member names of varied lengths, so bytewise order differs from numeric order.
    let universe: Vec<String> = (0..shape.members)
        .map(|i| match i % 4 {
            0 => format!("u{i}"),
            1 => format!("user:{i}"),
            2 => format!("U{}", i * 7919 % 100_003),
            _ => format!("u{i}-x"),
        })
        .collect();
    // The events start two buckets ahead of the server's time and run ahead of it, so the
    // server-time rule for late events never rejects what the model's clock rule accepts.
    let base = (now_ms() / bm + 2) * bm;
    let mut cur = base;
    let step_max = (shape.span_buckets * bm * 2 / shape.events as i64).max(1);
    let mut i = 0;
    let mut checks = 0;
    while i < shape.events {
        let end = (i + shape.chunk).min(shape.events);
        let mut p = redis::pipe();
        let mut want = Vec::with_capacity(end - i);
        for j in i..end {
            if j == shape.events / 2 {
                cur += (w + 2) * bm; // the whole window passes at once
            }
            if j == shape.events * 3 / 4 {
                cur += 3 * bm;
            }
            cur += rng.gen_range(0..=step_max);
            let at = if j > 0 && rng.gen_bool(0.1) {
                (cur - rng.gen_range(0..(w + 3) * bm)).max(0)
            } else {
                cur
            };
            // skewed popularity
            let x: f64 = rng.gen();
            let m = &universe[((x * x * x) * shape.members as f64) as usize];
            let by = gen_by(&mut rng);
            p.cmd("TOPN.INCR")
                .arg(key)
                .arg(m)
                .arg("BY")
                .arg(by)
                .arg("AT")
                .arg(at);
            let clock_before = model.clock;
            want.push((
                model.incr(m, by, at).expect("model overflow"),
                m.clone(),
                by,
                at,
            ));
            // Sometimes check right after the clock entered a new bucket, while the bucket
            // that just left the window may not be retired yet.
            if clock_before.is_some() && model.clock != clock_before && rng.gen_bool(0.3) {
                break;
            }
        }
        let n = want.len();
        let got: Vec<i64> = p
            .query(c)
            .unwrap_or_else(|e| panic!("seed {seed}: pipeline failed: {}", err_text(&e)));
        for (k, (g, (wv, m, by, at))) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g,
                wv,
                "seed {seed}: reply of event {} TOPN.INCR {key} {m} BY {by} AT {at}",
                i + k
            );
        }
        i += n;
        checks += 1;
        check_against_model(
            c,
            key,
            &model,
            &universe,
            &mut rng,
            &format!("seed {seed}, after {i} events (check {checks})"),
        );
    }
}

#[test]
fn model_based_exactness() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 0);
    let shapes = [
        Shape {
            bucket_s: 60,
            window: 6,
            members: 2000,
            events: 20_000,
            span_buckets: 30,
            chunk: 1000,
        },
        Shape {
            bucket_s: 1,
            window: 50,
            members: 40,
            events: 5000,
            span_buckets: 150,
            chunk: 250,
        },
        Shape {
            bucket_s: 3600,
            window: 30,
            members: 300,
            events: 6000,
            span_buckets: 60,
            chunk: 500,
        },
        Shape {
            bucket_s: 600,
            window: 1,
            members: 100,
            events: 3000,
            span_buckets: 20,
            chunk: 300,
        },
    ];
    for (k, shape) in shapes.iter().enumerate() {
        run_model(c, seed.wrapping_add(k as u64), shape, &format!("model{k}"));
    }
}

// ---------------------------------------------------------------- 3. blog scenario

#[test]
fn blog_scenario_phone_lookups() {
    // "Most looked-up phone numbers of the last 24 hours", hourly buckets.
    let srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 17);
    let mut rng = StdRng::seed_from_u64(seed);
    q_ok(
        c,
        &["TOPN.CREATE", "lookups", "BUCKET", "3600", "WINDOW", "24"],
    );
    let mut model = Model::new(3600, 24);
    let numbers: Vec<String> = (0..200).map(|i| format!("+1-555-01{i:03}")).collect();
    let h0 = now_ms() / HOUR_MS;
    for h in 0..30 {
        let mut p = redis::pipe();
        let mut want = vec![];
        for _ in 0..300 {
            let x: f64 = rng.gen();
            let num = if h < 6 && rng.gen_bool(0.5) {
                // very popular during the first 6 hours only
                "+1-555-0999".to_string()
            } else {
                numbers[(x * x * 200.0) as usize].clone()
            };
            let at = (h0 + h) * HOUR_MS + rng.gen_range(0..HOUR_MS);
            p.cmd("TOPN.INCR")
                .arg("lookups")
                .arg(&num)
                .arg("AT")
                .arg(at);
            want.push(model.incr(&num, 1, at).unwrap());
        }
        let got: Vec<i64> = p.query(c).unwrap();
        assert_eq!(got, want, "hour {h}");
    }
    let t = (h0 + 29) * HOUR_MS + 1_800_000;
    let want = model.top(10, t);
    assert_eq!(want.len(), 10);
    assert_eq!(top_ws(c, "TOPN.TOP24", "lookups", 10, Some(t)), want);
    assert_eq!(top_ws(c, "TOPN.TOP", "lookups", 10, Some(t)), want);
    let names: Vec<String> = q(c, &["TOPN.TOP24", "lookups", "AT", &t.to_string()]);
    assert_eq!(names, want.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
    assert!(
        !names.contains(&"+1-555-0999".to_string()),
        "a number popular only 24+ hours ago is out"
    );
    assert_eq!(count(c, "lookups", &["+1-555-0999"], Some(t)), [0]);
    // The early hours were all in the window at hour 23.
    let t23 = (h0 + 23) * HOUR_MS;
    assert_eq!(
        count(c, "lookups", &["+1-555-0999"], Some(t23)),
        [0],
        "hour 0..5 left the live window"
    );
    let i = info(c, "lookups");
    assert_eq!(i["buckets"], 24);
}

// ---------------------------------------------------------------- snapshots (replica / persistence)

/// Everything observable about a TOPN key, comparable across servers.
#[derive(Debug, PartialEq, Eq)]
struct Snap {
    exists: bool,
    pexpiretime: i64,
    /// bucket, window, buckets, (members when asked)
    info: Option<Vec<(String, i64)>>,
    tops: Vec<(i64, Rows)>,
    counts: Vec<(i64, Vec<i64>)>,
}

fn snap(c: &mut Conn, key: &str, ts: &[i64], members: &[String], with_members: bool) -> Snap {
    let exists = exists(c, key);
    let info = exists.then(|| {
        info(c, key)
            .into_iter()
            .filter(|(k, _)| k != "memory" && (with_members || k != "members"))
            .collect()
    });
    let refs: Vec<&str> = members.iter().map(|s| s.as_str()).collect();
    Snap {
        exists,
        pexpiretime: pexpiretime(c, key),
        info,
        tops: ts.iter().map(|&t| (t, top(c, key, 1_000_000, t))).collect(),
        counts: ts
            .iter()
            .map(|&t| (t, count(c, key, &refs, Some(t))))
            .collect(),
    }
}

fn times_around(base: i64, bm: i64, n: i64) -> Vec<i64> {
    (-2..n).map(|k| base + k * bm + bm / 3).collect()
}

// ---------------------------------------------------------------- 4. replication

#[test]
fn replica_answers_equal() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let rc = &mut replica.conn();
    let seed = seed_from_env("TOPN_SEED", 31);
    let mut rng = StdRng::seed_from_u64(seed);

    // k1: explicit AT, the clock moves past the window (retirement on both sides).
    q_ok(mc, &["TOPN.CREATE", "k1", "BUCKET", "60", "WINDOW", "5"]);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    let mut m1 = BTreeSet::new();
    rolling_workload(mc, &mut rng, "k1", base, bm, 6000, 400, &mut m1);
    // k2: server time, default shape, created by INCR.
    avoid_boundary(HOUR_MS, 5_000);
    let mut m2 = BTreeSet::new();
    for i in 0..500 {
        let m = format!("s{}", i % 37);
        let by = (i % 5) as i64 - 1;
        m2.insert(m.clone());
        let _: i64 = run(
            mc,
            redis::cmd("TOPN.INCR").arg("k2").arg(&m).arg("BY").arg(by),
        );
    }
    // k3: created by INCR with an AT a whole window ago -> deleted on both.
    assert_eq!(q::<i64>(mc, &["TOPN.INCR", "k3", "m", "AT", "1000"]), 0);
    // k4: created, never written.
    q_ok(mc, &["TOPN.CREATE", "k4"]);
    // k5: a late event on an existing key, and BY 0 that only moves the clock.
    incr(mc, "k5", "a", 3, base);
    incr(mc, "k5", "a", 3, base - 30 * HOUR_MS);
    incr(mc, "k5", "b", 0, base + 3 * HOUR_MS);
    wait_for_sync(&master, &replica);

    let now = now_ms();
    let mut m1v: Vec<String> = m1.into_iter().collect();
    m1v.push("absent".into());
    let m2v: Vec<String> = m2.into_iter().collect();
    let cases: Vec<(&str, Vec<i64>, Vec<String>)> = vec![
        ("k1", times_around(base, bm, 16), m1v),
        (
            "k2",
            vec![now, now + HOUR_MS, now + 23 * HOUR_MS, now + 30 * HOUR_MS],
            m2v,
        ),
        ("k3", vec![now], vec!["m".into()]),
        ("k4", vec![now], vec!["m".into()]),
        (
            "k5",
            times_around(base, HOUR_MS, 6),
            vec!["a".into(), "b".into()],
        ),
    ];
    for (key, ts, members) in &cases {
        let a = snap(mc, key, ts, members, true);
        let b = snap(rc, key, ts, members, true);
        assert_eq!(a, b, "master vs replica: {key}");
    }
    assert!(!exists(mc, "k3"));
    assert!(exists(rc, "k4"));
    assert_eq!(pexpiretime(rc, "k4"), -1);
    let i = info(rc, "k2");
    assert_eq!((i["bucket"], i["window"]), (3600, 24));
    assert_eq!(count(rc, "k5", &["a"], Some(base + 3 * HOUR_MS)), [3]);
    assert_eq!(pexpiretime(rc, "k5"), (base / HOUR_MS + 3 + 24) * HOUR_MS);
    // Reading never writes: the replication offset does not move for reads (retried, as
    // the master's periodic PING to its replica moves it too).
    let unchanged = (0..3).any(|_| {
        let off = info_field(&master.info("replication"), "master_repl_offset");
        let _ = top(mc, "k1", 10, now);
        let _ = top_ws(mc, "TOPN.TOP", "k2", 10, None);
        let _ = count(mc, "k1", &["m1"], None);
        let _: Value = q(mc, &["TOPN.INFO", "k1"]);
        off == info_field(&master.info("replication"), "master_repl_offset")
    });
    assert!(unchanged, "TOPN reads were replicated");
}

/// A replica holds the very same bytes (`DUMP`) as its master, though its
/// tables were built otherwise: it loaded part of the data from the master's
/// RDB, applies the rest late, and ages buckets by its own clock.
#[test]
fn replica_holds_the_same_bytes() {
    let master = Server::start();
    let mc = &mut master.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("TOPN_SEED", 41));
    let mut seen = BTreeSet::new();
    // Before the replica: a key whose clock moves past its window (stale buckets freed,
    // member slots reused), and one of 1 s buckets at the server's time.
    q_ok(mc, &["TOPN.CREATE", "a", "BUCKET", "60", "WINDOW", "5"]);
    let base = now_ms() / 60_000 * 60_000;
    rolling_workload(mc, &mut rng, "a", base, 60_000, 3000, 300, &mut seen);
    q_ok(mc, &["TOPN.CREATE", "b", "BUCKET", "1", "WINDOW", "3"]);
    let write_b = |c: &mut Conn, rng: &mut StdRng| {
        for _ in 0..200 {
            let m = format!("b{}", rng.gen_range(0..150));
            let _: i64 = run(c, redis::cmd("TOPN.INCR").arg("b").arg(&m));
        }
    };
    write_b(mc, &mut rng);
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    // After: the replica applies these late, by its own clock.
    let mut late = replica.conn();
    let sleeper = std::thread::spawn(move || {
        let _: Value = q(&mut late, &["DEBUG", "SLEEP", "1.2"]);
    });
    std::thread::sleep(Duration::from_millis(50));
    rolling_workload(
        mc,
        &mut rng,
        "a",
        base + 60_000,
        60_000,
        2000,
        400,
        &mut seen,
    );
    write_b(mc, &mut rng);
    std::thread::sleep(Duration::from_millis(1100));
    write_b(mc, &mut rng);
    sleeper.join().unwrap();
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    for key in ["a", "b"] {
        let on_master: Vec<u8> = q(mc, &["DUMP", key]);
        let on_replica: Vec<u8> = q(rc, &["DUMP", key]);
        assert!(!on_master.is_empty());
        assert!(
            on_master == on_replica,
            "DUMP {key}: {} bytes on the master, {} on the replica, not the same",
            on_master.len(),
            on_replica.len()
        );
    }
}

/// Buckets big enough to be packed for sums (4,096 entries and more) answer exactly at every
/// `LAST k` on the master and a replica, while the timer packs them, after a late write drops a
/// packed copy, and after a restart from RDB.
#[test]
fn wide_sealed_buckets_answer_exactly() {
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    q_ok(mc, &["TOPN.CREATE", "w", "BUCKET", "3600", "WINDOW", "6"]);
    let h = now_ms() / HOUR_MS;
    let mut rng = StdRng::seed_from_u64(seed_from_env("TOPN_SEED", 43));
    // model[b][member] for buckets h-3 ..= h.
    let mut model: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); 4];
    let write = |c: &mut Conn,
                 rng: &mut StdRng,
                 model: &mut Vec<BTreeMap<String, i64>>,
                 b: usize,
                 n: usize| {
        let mut p = redis::pipe();
        for _ in 0..n {
            let m = format!("m{}", rng.gen_range(0..20_000));
            let by = if b == 1 && rng.gen_ratio(1, 10) {
                -rng.gen_range(1..4)
            } else {
                rng.gen_range(1..4)
            };
            *model[b].entry(m.clone()).or_default() += by;
            p.add_command(incr_cmd("w", &m, by, (h - 3 + b as i64) * HOUR_MS + 7));
        }
        let _: Vec<i64> = p.query(c).unwrap();
    };
    for b in 0..4 {
        write(mc, &mut rng, &mut model, b, 9000);
    }
    let expected = |model: &[BTreeMap<String, i64>], k: usize| -> Rows {
        let mut sum: BTreeMap<&str, i64> = BTreeMap::new();
        for bucket in &model[4usize.saturating_sub(k)..] {
            for (m, c) in bucket {
                *sum.entry(m).or_default() += c;
            }
        }
        let mut rows: Rows = sum
            .into_iter()
            .filter(|(_, c)| *c != 0)
            .map(|(m, c)| (m.to_string(), c))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        rows.truncate(10);
        rows
    };
    let at = h * HOUR_MS + 1000;
    let check = |c: &mut Conn, model: &[BTreeMap<String, i64>], when: &str| {
        for k in 1..=6 {
            assert_eq!(
                top_last(c, "w", 10, Some(at), k as i64),
                expected(model, k),
                "{when}: LAST {k}"
            );
        }
    };
    // Right away (packing may be under way), then once the timer is surely done.
    check(mc, &model, "at once");
    std::thread::sleep(Duration::from_millis(500));
    check(mc, &model, "packed");
    // A late write into a sealed bucket drops its copy; reads stay exact.
    write(mc, &mut rng, &mut model, 1, 500);
    check(mc, &model, "after a late write");
    std::thread::sleep(Duration::from_millis(1500));
    check(mc, &model, "repacked");
    wait_for_sync(&master, &replica);
    check(&mut replica.conn(), &model, "replica");
    master.restart_with_save();
    check(&mut master.conn(), &model, "after a restart");
}

#[test]
fn replica_with_other_defaults_ends_equal() {
    // Master loads with 60/5, replica with 7/3: creation is replicated explicitly.
    let master = Server::builder()
        .module_args(&["topn-default-bucket", "60", "topn-default-window", "5"])
        .start();
    let mc = &mut master.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    // Before the replica attaches (full sync through RDB).
    incr(mc, "before", "a", 2, base);
    incr(mc, "before", "b", 1, base + bm);
    let port = master.port.to_string();
    let replica = Server::builder()
        .module_args(&["topn-default-bucket", "7", "topn-default-window", "3"])
        .args(&["--replicaof", "127.0.0.1", &port])
        .start();
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    // After (command stream): created by INCR, by CREATE without options.
    incr(mc, "after", "a", 2, base);
    incr(mc, "after", "b", 5, base + 3 * bm);
    incr(mc, "after", "a", 1, base + 4 * bm);
    q_ok(mc, &["TOPN.CREATE", "created"]);
    incr(mc, "created", "x", 1, base + 2 * bm);
    // Runtime change on the master only.
    q_ok(mc, &["CONFIG", "SET", "recipes.topn-default-window", "9"]);
    incr(mc, "later", "y", 4, base + 9 * bm);
    wait_for_sync(&master, &replica);
    let ts = times_around(base, bm, 15);
    let ms: Vec<String> = ["a", "b", "x", "y", "z"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (key, b, w) in [
        ("before", 60, 5),
        ("after", 60, 5),
        ("created", 60, 5),
        ("later", 60, 9),
    ] {
        let i = info(rc, key);
        assert_eq!((i["bucket"], i["window"]), (b, w), "replica shape of {key}");
        assert_eq!(
            snap(mc, key, &ts, &ms, true),
            snap(rc, key, &ts, &ms, true),
            "master vs replica: {key}"
        );
    }
    // A key created on the replica's own defaults would expire differently; check the math.
    assert_eq!(pexpiretime(rc, "after"), (base / bm + 4 + 5) * bm);
    assert_eq!(pexpiretime(rc, "later"), (base / bm + 9 + 9) * bm);
}

// ---------------------------------------------------------------- 5. persistence & key ops

#[test]
fn rdb_save_and_restart() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 71);
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "a", "BUCKET", "60", "WINDOW", "10"]);
    let mut ma = BTreeSet::new();
    steady_workload(c, &mut rng, "a", base, bm, 8, 10, 4000, &mut ma);
    q_ok(c, &["TOPN.CREATE", "empty"]);
    incr(c, "clk", "m", 4, base);
    incr(c, "clk", "m", 0, base + 3 * HOUR_MS);
    let ma: Vec<String> = ma.into_iter().collect();
    let clk_m = vec!["m".to_string()];
    let cases: Vec<(&str, Vec<i64>, &Vec<String>)> = vec![
        ("a", times_around(base, bm, 20), &ma),
        ("empty", vec![base], &clk_m),
        ("clk", times_around(base, HOUR_MS, 30), &clk_m),
    ];
    let before: Vec<Snap> = cases
        .iter()
        .map(|(k, ts, ms)| snap(c, k, ts, ms, true))
        .collect();
    srv.restart_with_save();
    let c = &mut srv.conn();
    for ((k, ts, ms), b) in cases.iter().zip(&before) {
        assert_eq!(&snap(c, k, ts, ms, true), b, "RDB reload: {k}");
    }
    // Writes continue from the loaded clock (H+3): H-21 is out of the window, ignored.
    assert_eq!(
        incr(c, "clk", "m", 9, base - 21 * HOUR_MS),
        4,
        "the clock survived the reload"
    );
    assert_eq!(
        incr(c, "a", "p0", 1, base - 20 * bm),
        count(c, "a", &["p0"], Some(base + 9 * bm))[0]
    );
}

#[test]
fn dump_restore_copy_rename_memory() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 97);
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "src", "BUCKET", "60", "WINDOW", "8"]);
    let mut ms = BTreeSet::new();
    steady_workload(c, &mut rng, "src", base, bm, 6, 8, 2000, &mut ms);
    let ms: Vec<String> = ms.into_iter().collect();
    let ts = times_around(base, bm, 16);
    let orig = snap(c, "src", &ts, &ms, true);

    // DUMP / RESTORE (with the same absolute expiry).
    let payload: Vec<u8> = q(c, &["DUMP", "src"]);
    let exp = pexpiretime(c, "src");
    assert!(exp > 0);
    let _: Value = run(
        c,
        redis::cmd("RESTORE")
            .arg("restored")
            .arg(exp)
            .arg(&payload)
            .arg("ABSTTL"),
    );
    assert_eq!(snap(c, "restored", &ts, &ms, true), orig, "RESTORE");
    let _: Value = run(c, redis::cmd("RESTORE").arg("r0").arg(0).arg(&payload));
    assert_eq!(pexpiretime(c, "r0"), -1);
    assert_eq!(top(c, "r0", 1_000_000, base + 5 * bm), orig.tops[7].1);
    let e = expect_err(c, redis::cmd("RESTORE").arg("r0").arg(0).arg(&payload));
    assert!(e.contains("BUSYKEY"), "{e}");
    let mut bad = payload.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    expect_err(c, redis::cmd("RESTORE").arg("bad").arg(0).arg(&bad));
    assert!(!exists(c, "bad"));

    // COPY: equal, then independent.
    assert_eq!(q::<i64>(c, &["COPY", "src", "cp"]), 1);
    assert_eq!(snap(c, "cp", &ts, &ms, true), orig, "COPY");
    let t = base + 5 * bm;
    let top_before = top(c, "src", 1_000_000, t);
    let m0 = ms[0].clone();
    let c0 = count(c, "cp", &[&m0], Some(t))[0];
    assert_eq!(incr(c, "cp", &m0, 1000, t), c0 + 1000);
    assert_eq!(incr(c, "cp", "only-in-copy", 1, t), 1);
    assert_eq!(
        top(c, "src", 1_000_000, t),
        top_before,
        "INCR on the copy changed the source"
    );
    assert_eq!(count(c, "src", &[&m0, "only-in-copy"], Some(t)), [c0, 0]);
    assert_eq!(snap(c, "src", &ts, &ms, true), orig);
    // and the other way round
    assert_eq!(incr(c, "src", "only-in-src", 1, t), 1);
    assert_eq!(count(c, "cp", &["only-in-src"], Some(t)), [0]);
    assert_eq!(
        q::<i64>(c, &["COPY", "src", "cp"]),
        0,
        "COPY without REPLACE onto a key"
    );

    // RENAME keeps it (and its expiry).
    let before = snap(c, "restored", &ts, &ms, true);
    q_ok(c, &["RENAME", "restored", "renamed"]);
    assert!(!exists(c, "restored"));
    assert_eq!(snap(c, "renamed", &ts, &ms, true), before);
    assert_eq!(incr(c, "renamed", "new", 2, t), 2);

    // MEMORY USAGE is positive and grows with members.
    q_ok(c, &["TOPN.CREATE", "mem", "BUCKET", "60", "WINDOW", "8"]);
    let m_empty: i64 = q(c, &["MEMORY", "USAGE", "mem"]);
    assert!(m_empty > 0, "{m_empty}");
    incr(c, "mem", "a", 1, base);
    let m1: i64 = q(c, &["MEMORY", "USAGE", "mem"]);
    let mut p = redis::pipe();
    for i in 0..5000 {
        p.cmd("TOPN.INCR")
            .arg("mem")
            .arg(format!("member-{i:05}"))
            .arg("AT")
            .arg(base + (i % 3) * bm);
    }
    let _: Vec<i64> = p.query(c).unwrap();
    let m2: i64 = q(c, &["MEMORY", "USAGE", "mem"]);
    assert!(
        m1 > 0 && m2 > m1 + 5000 * 8,
        "MEMORY USAGE {m_empty} -> {m1} -> {m2}"
    );
    assert!(info(c, "mem")["memory"] > 0);
}

// ---------------------------------------------------------------- 6. expiry

#[test]
fn migrate_moves_a_topn_key_between_servers() {
    let (from, to) = (Server::start(), Server::start());
    let (a, b) = (&mut from.conn(), &mut to.conn());
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(a, &["TOPN.CREATE", "moving", "BUCKET", "60", "WINDOW", "8"]);
    for (i, member) in ["x", "y", "z", "y", "z", "z"].iter().enumerate() {
        incr(
            a,
            "moving",
            member,
            1 + i as i64,
            base - (i as i64 % 3) * bm,
        );
    }
    let ts = [base, base - bm, base + 3 * bm];
    let members = ["x".to_string(), "y".to_string(), "z".to_string()];
    let before = snap(a, "moving", &ts, &members, true);
    let exp = pexpiretime(a, "moving");
    let port = to.port.to_string();
    let reply: String = q(a, &["MIGRATE", "127.0.0.1", &port, "moving", "0", "5000"]);
    assert_eq!(reply, "OK");
    assert!(!exists(a, "moving"));
    // MIGRATE carries the TTL relative (a RESTORE with the time left), so
    // the absolute expiry may move by the transfer time; all else is equal.
    let mut after = snap(b, "moving", &ts, &members, true);
    assert!(
        (after.pexpiretime - exp).abs() <= 1_000,
        "{} vs {exp}",
        after.pexpiretime
    );
    after.pexpiretime = before.pexpiretime;
    assert_eq!(after, before);
    // The migrated key keeps counting on its new server.
    let x_now = count(b, "moving", &["x"], Some(base))[0];
    assert_eq!(incr(b, "moving", "x", 10, base), x_now + 10);
}

#[test]
fn expiry() {
    let srv = Server::start();
    let c = &mut srv.conn();
    avoid_boundary(HOUR_MS, 3_000);
    let now = now_ms();
    // Far in the past on a new key: nothing stays.
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "old", "m", "AT", "0"]), 0);
    assert!(!exists(c, "old"));
    assert_eq!(incr(c, "old2", "m", 5, now - 25 * HOUR_MS), 0);
    assert!(!exists(c, "old2"));
    // Exactly a whole window ago (default 3600 x 24): gone as well.
    let b = now / HOUR_MS;
    assert_eq!(incr(c, "old3", "m", 5, (b - 24) * HOUR_MS + HOUR_MS - 1), 0);
    assert!(!exists(c, "old3"));
    // One bucket later it lives, and expires when its bucket leaves the window.
    assert_eq!(incr(c, "young", "m", 5, (b - 23) * HOUR_MS), 5);
    assert_eq!(pexpiretime(c, "young"), (b + 1) * HOUR_MS);
    // An explicitly created key that gets only an event outside the window stays as it was.
    q_ok(c, &["TOPN.CREATE", "made", "BUCKET", "60", "WINDOW", "2"]);
    assert_eq!(incr(c, "made", "m", 1, now - 10 * 60_000), 0);
    assert!(exists(c, "made"));
    assert_eq!(pexpiretime(c, "made"), -1);
    let i = info(c, "made");
    assert_eq!((i["bucket"], i["window"], i["members"]), (60, 2, 0));

    // PEXPIRETIME = (clock bucket + WINDOW) * bucket_ms, following the clock only.
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "5"]);
    let kb = now / 60_000;
    incr(c, "k", "a", 1, now);
    assert_eq!(pexpiretime(c, "k"), (kb + 5) * 60_000);
    incr(c, "k", "a", 1, now + 3 * 60_000);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);
    incr(c, "k", "a", 1, now + 60_000);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);
    // A user's PERSIST is overridden by the next write.
    assert_eq!(q::<i64>(c, &["PERSIST", "k"]), 1);
    assert_eq!(pexpiretime(c, "k"), -1);
    incr(c, "k", "a", 1, now);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);
    // Reads never change the expiry.
    let _ = top(c, "k", 10, now + 100 * 60_000);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);

    // The key goes away by itself once a whole window passed with no writes.
    q_ok(c, &["TOPN.CREATE", "short", "BUCKET", "1", "WINDOW", "2"]);
    let t = now_ms();
    assert_eq!(incr(c, "short", "m", 3, t), 3);
    assert_eq!(pexpiretime(c, "short"), (t / 1000 + 2) * 1000);
    assert!(
        wait_until(Duration::from_secs(5), || !exists(c, "short")),
        "short-window key did not expire"
    );
    assert_eq!(count(c, "short", &["m"], None), [0]);
    assert_eq!(top_ws(c, "TOPN.TOP", "short", 10, None), rows(&[]));
}

// ---------------------------------------------------------------- 7. errors, notifications, INFO

#[test]
fn errors_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "4"]);
    incr(c, "k", "a", 3, base);
    incr(c, "k", "b", 2, base + bm);
    q_ok(c, &["SET", "str", "v"]);
    let ts = times_around(base, bm, 6);
    let ms: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let before = snap(c, "k", &ts, &ms, true);
    let errors0 = recipes_info(c, "topn_errors");
    let b = base.to_string();

    let cases: Vec<(Vec<&str>, &[&str])> = vec![
        // CREATE
        (vec!["TOPN.CREATE"], &["wrong number of arguments"]),
        (vec!["TOPN.CREATE", "k"], &["ERR", "already exists"]),
        (
            vec!["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "4"],
            &["ERR", "already exists"],
        ),
        (vec!["TOPN.CREATE", "str"], &["WRONGTYPE"]),
        (vec!["TOPN.CREATE", "n", "BUCKET", "0"], &["ERR", "BUCKET"]),
        (vec!["TOPN.CREATE", "n", "BUCKET", "-1"], &["ERR", "BUCKET"]),
        (
            vec!["TOPN.CREATE", "n", "BUCKET", "31536001"],
            &["ERR", "BUCKET"],
        ),
        (
            vec!["TOPN.CREATE", "n", "BUCKET", "1.5"],
            &["ERR", "BUCKET"],
        ),
        (vec!["TOPN.CREATE", "n", "BUCKET", "x"], &["ERR", "BUCKET"]),
        (vec!["TOPN.CREATE", "n", "BUCKET", ""], &["ERR", "BUCKET"]),
        (vec!["TOPN.CREATE", "n", "BUCKET", " 5"], &["ERR", "BUCKET"]),
        (vec!["TOPN.CREATE", "n", "BUCKET"], &["ERR", "BUCKET"]),
        (vec!["TOPN.CREATE", "n", "WINDOW", "0"], &["ERR", "WINDOW"]),
        (
            vec!["TOPN.CREATE", "n", "WINDOW", "100001"],
            &["ERR", "WINDOW"],
        ),
        (
            vec!["TOPN.CREATE", "n", "WINDOW", "99999999999999999999"],
            &["ERR", "WINDOW"],
        ),
        (
            vec!["TOPN.CREATE", "n", "BUCKET", "60", "BUCKET", "60"],
            &["ERR", "BUCKET"],
        ),
        (vec!["TOPN.CREATE", "n", "FOO", "1"], &["ERR", "FOO"]),
        (
            vec!["TOPN.CREATE", "n", "WINDOW", "3", "BUCKET", "0"],
            &["ERR", "BUCKET"],
        ),
        // INCR
        (vec!["TOPN.INCR"], &["wrong number of arguments"]),
        (vec!["TOPN.INCR", "k"], &["wrong number of arguments"]),
        (vec!["TOPN.INCR", "str", "m"], &["WRONGTYPE"]),
        (vec!["TOPN.INCR", "str", "m", "AT", &b], &["WRONGTYPE"]),
        (vec!["TOPN.INCR", "k", "a", "BY", "1.5"], &["ERR", "BY"]),
        (vec!["TOPN.INCR", "k", "a", "BY", "x"], &["ERR", "BY"]),
        (
            vec!["TOPN.INCR", "k", "a", "BY", "9223372036854775808"],
            &["ERR", "BY"],
        ),
        (
            vec!["TOPN.INCR", "k", "a", "BY", "-9223372036854775809"],
            &["ERR", "BY"],
        ),
        (vec!["TOPN.INCR", "k", "a", "BY", "+1"], &["ERR", "BY"]),
        (vec!["TOPN.INCR", "k", "a", "BY"], &["ERR", "BY"]),
        (
            vec!["TOPN.INCR", "k", "a", "BY", "1", "BY", "1"],
            &["ERR", "BY"],
        ),
        (vec!["TOPN.INCR", "k", "a", "AT", "-1"], &["ERR", "AT"]),
        (
            vec!["TOPN.INCR", "k", "a", "AT", "9007199254740993"],
            &["ERR", "AT"],
        ),
        (vec!["TOPN.INCR", "k", "a", "AT", "1e3"], &["ERR", "AT"]),
        (vec!["TOPN.INCR", "k", "a", "AT"], &["ERR", "AT"]),
        (
            vec!["TOPN.INCR", "k", "a", "AT", &b, "AT", &b],
            &["ERR", "AT"],
        ),
        (
            vec!["TOPN.INCR", "k", "a", "WINDOW", "3"],
            &["ERR", "WINDOW"],
        ),
        (vec!["TOPN.INCR", "k", "a", "3"], &["ERR"]),
        (vec!["TOPN.INCR", "newkey", "a", "BY", "x"], &["ERR", "BY"]),
        (vec!["TOPN.INCR", "newkey", "a", "AT", "-5"], &["ERR", "AT"]),
        // TOP / TOP24
        (vec!["TOPN.TOP"], &["wrong number of arguments"]),
        (vec!["TOPN.TOP", "k", "-1"], &["ERR", "N"]),
        (vec!["TOPN.TOP", "k", "x"], &["ERR", "N"]),
        (vec!["TOPN.TOP", "k", "1.0"], &["ERR", "N"]),
        (vec!["TOPN.TOP", "k", "3", "4"], &["ERR", "4"]),
        (vec!["TOPN.TOP", "k", "AT"], &["ERR", "AT"]),
        (vec!["TOPN.TOP", "k", "AT", "-5"], &["ERR", "AT"]),
        (vec!["TOPN.TOP", "k", "AT", "x"], &["ERR", "AT"]),
        (
            vec!["TOPN.TOP", "k", "WITHCOUNTS", "WITHCOUNTS"],
            &["ERR", "WITHCOUNTS"],
        ),
        (
            vec!["TOPN.TOP", "k", "3", "AT", &b, "AT", &b],
            &["ERR", "AT"],
        ),
        (vec!["TOPN.TOP", "k", "BY", "3"], &["ERR"]),
        (vec!["TOPN.TOP", "str"], &["WRONGTYPE"]),
        (vec!["TOPN.TOP", "k", "LAST", "0"], &["ERR", "LAST"]),
        (vec!["TOPN.TOP", "k", "LAST", "-1"], &["ERR", "LAST"]),
        (vec!["TOPN.TOP", "k", "LAST", "x"], &["ERR", "LAST"]),
        (vec!["TOPN.TOP", "k", "LAST"], &["ERR", "LAST"]),
        (
            vec!["TOPN.TOP", "k", "LAST", "5"],
            &["ERR", "LAST", "WINDOW (4)"],
        ),
        (vec!["TOPN.TOP", "k", "LAST", "100001"], &["ERR", "LAST"]),
        (
            vec!["TOPN.TOP", "k", "LAST", "1", "LAST", "1"],
            &["ERR", "LAST"],
        ),
        (vec!["TOPN.TOP", "str", "LAST", "1"], &["WRONGTYPE"]),
        (vec!["TOPN.TOP24", "k"], &["ERR", "24"]),
        (vec!["TOPN.TOP24", "k", "LAST", "1"], &["ERR", "LAST"]),
        (vec!["TOPN.TOP24", "str"], &["WRONGTYPE"]),
        (vec!["TOPN.TOP24", "k", "x"], &["ERR", "N"]),
        // COUNT
        (vec!["TOPN.COUNT"], &["wrong number of arguments"]),
        (vec!["TOPN.COUNT", "k"], &["wrong number of arguments"]),
        (vec!["TOPN.COUNT", "k", "a", "AT", "x"], &["ERR", "AT"]),
        (vec!["TOPN.COUNT", "k", "a", "AT", "-1"], &["ERR", "AT"]),
        (vec!["TOPN.COUNT", "k", "a", "LAST", "0"], &["ERR", "LAST"]),
        (
            vec!["TOPN.COUNT", "k", "a", "LAST", "5"],
            &["ERR", "LAST", "WINDOW (4)"],
        ),
        (
            vec!["TOPN.COUNT", "k", "a", "LAST", "x", "AT", &b],
            &["ERR", "LAST"],
        ),
        (vec!["TOPN.COUNT", "str", "a"], &["WRONGTYPE"]),
        // INFO
        (vec!["TOPN.INFO"], &["wrong number of arguments"]),
        (vec!["TOPN.INFO", "k", "x"], &["wrong number of arguments"]),
        (vec!["TOPN.INFO", "missing"], &["ERR", "no such key"]),
        (vec!["TOPN.INFO", "str"], &["WRONGTYPE"]),
    ];
    let mut n_err = 0;
    for (args, needles) in &cases {
        let e = expect_err(c, &cmd(args));
        // Arity is checked by Redis itself (declared arity), before the module runs.
        if !e.contains("wrong number of arguments") {
            n_err += 1;
        }
        for n in *needles {
            assert!(
                e.contains(n),
                "{args:?}: error {e:?} does not mention {n:?}"
            );
        }
    }
    assert_eq!(
        snap(c, "k", &ts, &ms, true),
        before,
        "a rejected command changed the key"
    );
    assert_eq!(q::<String>(c, &["GET", "str"]), "v");
    for k in ["n", "newkey", "missing"] {
        assert!(!exists(c, k), "{k} was created by a failing command");
    }
    assert_eq!(
        recipes_info(c, "topn_errors") - errors0,
        n_err,
        "topn_errors counts each error the module replied"
    );

    // Limits that are accepted.
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "max",
            "BUCKET",
            "31536000",
            "WINDOW",
            "100000",
        ],
    );
    q_ok(c, &["TOPN.CREATE", "min", "BUCKET", "1", "WINDOW", "1"]);
    let i = info(c, "max");
    assert_eq!((i["bucket"], i["window"]), (31_536_000, 100_000));
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", "max", "m", "AT", "0"]),
        1,
        "bucket 0 lives for 100000 years"
    );
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", "max", "m", "AT", "9007199254740992"]),
        1
    );
    assert_eq!(count(c, "max", &["m"], Some(9007199254740992)), [1]);
    assert!(pexpiretime(c, "max") > 9007199254740992);
    // COUNT: only a final AT pair is the option; members may be called AT otherwise.
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "AT"]), [0]);
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "AT", "a"]), [0, 3]);
    assert_eq!(
        q::<Vec<i64>>(
            c,
            &["TOPN.COUNT", "k", "a", "b", "at", &(base + bm).to_string()]
        ),
        [3, 2]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "missing", "a", "b"]),
        [0, 0]
    );
    // LAST: final pairs in either order; a member may be called LAST otherwise.
    let b1 = (base + bm).to_string();
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "a", "b", "LAST", "1", "AT", &b1]),
        [0, 2]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "a", "b", "AT", &b1, "LAST", "2"]),
        [3, 2]
    );
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "LAST", "1"]), [0, 0]);
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "missing", "a", "LAST", "1000"]),
        [0]
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "k", "LAST", "1", "AT", &b1]),
        ["b"]
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "missing", "LAST", "1000"]),
        Vec::<String>::new()
    );
    // Reads of missing keys.
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "missing", "5", "WITHCOUNTS"]),
        Vec::<String>::new()
    );
    // Commands are case-insensitive and declare their key.
    let keys: Vec<String> = q(
        c,
        &["COMMAND", "GETKEYS", "topn.incr", "thekey", "m", "BY", "2"],
    );
    assert_eq!(keys, ["thekey"]);
    let keys: Vec<String> = q(c, &["COMMAND", "GETKEYS", "TOPN.COUNT", "thekey", "a", "b"]);
    assert_eq!(keys, ["thekey"]);
    // Readonly commands are allowed on replicas etc.: check the flags.
    let ci: Vec<Value> = q(c, &["COMMAND", "INFO", "topn.top"]);
    let flags = format!("{ci:?}");
    assert!(flags.contains("readonly"), "{flags}");
}

#[test]
fn resp3_replies() {
    let srv = Server::start();
    let c = &mut srv.conn_resp3();
    let base = now_ms() / 60_000 * 60_000;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    incr(c, "k", "a", 2, base);
    incr(c, "k", "b", 1, base);
    let v: Value = q(c, &["TOPN.INFO", "k"]);
    let Value::Map(m) = v else {
        panic!("TOPN.INFO under RESP3 is not a map: {v:?}")
    };
    let names: Vec<String> = m
        .iter()
        .map(|(k, _)| match k {
            Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
            Value::SimpleString(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(names, ["bucket", "window", "members", "buckets", "memory"]);
    assert_eq!(m[0].1, Value::Int(60));
    assert_eq!(m[2].1, Value::Int(2));
    let v: Vec<Value> = q(c, &["TOPN.TOP", "k", "AT", &base.to_string(), "WITHCOUNTS"]);
    assert_eq!(pairs(v), rows(&[("a", 2), ("b", 1)]));
    let v: Vec<i64> = q(c, &["TOPN.COUNT", "k", "a", "zz", "AT", &base.to_string()]);
    assert_eq!(v, [2, 0]);
}

#[test]
fn notifications_and_info_counters() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let ev = |e: &str, k: &str| (e.to_string(), k.to_string());
    let bm = 60_000;
    let base = now_ms() / bm * bm;

    q_ok(c, &["TOPN.CREATE", "a", "BUCKET", "60", "WINDOW", "3"]);
    incr(c, "a", "m1", 1, base);
    incr(c, "a", "m2", 1, base);
    incr(c, "b", "m1", 1, base); // created by INCR
                                 // reads and errors: no events
    let _ = top(c, "a", 10, base);
    let _ = top_ws(c, "TOPN.TOP24", "b", 10, None);
    let _ = count(c, "a", &["m1"], None);
    let _ = info(c, "a");
    let _ = expect_err(c, &cmd(&["TOPN.INCR", "a", "m", "BY", "x"]));
    let _ = expect_err(c, &cmd(&["TOPN.CREATE", "a"]));
    let _ = expect_err(c, &cmd(&["TOPN.TOP24", "a"]));
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("topn.create", "a"),
            ev("topn.incr", "a"),
            ev("topn.incr", "a"),
            ev("topn.incr", "b"),
        ]
    );
    // An event outside the window changes nothing: no key, no event at all (also on a key
    // that exists).
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "gone", "m", "AT", "5"]), 0);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "a", "m1", "AT", "5"]), 1);
    q_ok(c, &["SET", "sentinel", "1"]);
    let got = events_until_sentinel(&mut ps);
    assert!(
        got.is_empty(),
        "an event outside the window fired keyspace events: {got:?}"
    );
    assert!(!exists(c, "gone"));
    drop(ps);
    // Module class alone: only `d` (module events) + E (keyevent).
    q_ok(c, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]);
    let mut sub = srv.conn();
    let mut ps = sub.as_pubsub();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ps.subscribe("__keyevent@0__:topn.incr").unwrap();
    incr(c, "a", "m3", 1, base);
    let msg = ps.get_message().expect("topn.incr under class d");
    let key: String = msg.get_payload().unwrap();
    assert_eq!(key, "a");
    drop(ps);

    // INFO counters on this fresh server (exact).
    assert_eq!(recipes_info(c, "topn_create_calls"), 2); // CREATE a, failed CREATE a
    assert_eq!(recipes_info(c, "topn_incr_calls"), 7); // 3 + failed + 2 late + m3
    assert_eq!(recipes_info(c, "topn_top_calls"), 3); // TOP, TOP24 (ok), TOP24 (err)
    assert_eq!(recipes_info(c, "topn_count_calls"), 1);
    assert_eq!(recipes_info(c, "topn_info_calls"), 1);
    assert_eq!(recipes_info(c, "topn_errors"), 3);
    // members gauge: a {m1,m2,m3}, b {m1}
    assert_eq!(recipes_info(c, "topn_members"), 4);
    let mut p = redis::pipe();
    for i in 0..100 {
        p.cmd("TOPN.INCR")
            .arg("c")
            .arg(format!("x{i}"))
            .arg("AT")
            .arg(base);
    }
    let _: Vec<i64> = p.query(c).unwrap();
    assert_eq!(recipes_info(c, "topn_members"), 104);
    assert_eq!(q::<i64>(c, &["COPY", "c", "c2"]), 1);
    assert_eq!(recipes_info(c, "topn_members"), 204);
    assert_eq!(q::<i64>(c, &["DEL", "c"]), 1);
    // Valkey 8 has lazyfree-lazy-user-del on by default, so DEL frees a value
    // this big on a background thread and the gauge follows a moment later
    // (Redis 7.0/7.2 free it at once; tests/compat.rs pins the difference).
    assert!(
        wait_until(Duration::from_secs(5), || recipes_info(
            &mut srv.conn(),
            "topn_members"
        ) == 104),
        "members gauge after DEL: {}",
        recipes_info(c, "topn_members")
    );
    q_ok(c, &["RENAME", "c2", "c3"]);
    assert_eq!(recipes_info(c, "topn_members"), 104);
    let _: Value = q(c, &["UNLINK", "c3"]);
    assert!(
        wait_until(Duration::from_secs(5), || recipes_info(
            &mut srv.conn(),
            "topn_members"
        ) == 4),
        "members gauge after UNLINK: {}",
        recipes_info(c, "topn_members")
    );
    q_ok(c, &["FLUSHALL"]);
    assert!(
        wait_until(Duration::from_secs(5), || recipes_info(
            &mut srv.conn(),
            "topn_members"
        ) == 0),
        "members gauge after FLUSHALL: {}",
        recipes_info(c, "topn_members")
    );
    // expired buckets: a bucket leaving the window is counted.
    let e0 = recipes_info(c, "topn_expired_buckets");
    q_ok(c, &["TOPN.CREATE", "e", "BUCKET", "60", "WINDOW", "2"]);
    incr(c, "e", "m", 1, base);
    incr(c, "e", "m", 1, base + bm);
    assert_eq!(recipes_info(c, "topn_expired_buckets"), e0);
    incr(c, "e", "m", 1, base + 2 * bm);
    for _ in 0..3 {
        incr(c, "e", "m", 1, base + 2 * bm);
    }
    assert_eq!(recipes_info(c, "topn_expired_buckets"), e0 + 1);
    assert_eq!(count(c, "e", &["m"], Some(base + 2 * bm)), [5]);
}

// ---------------------------------------------------------------- 8. bucket boundary at scale

/// (number of TOPN.INCR entries in SLOWLOG, the slowest one's duration in us and arguments).
fn slowlog_max_incr_us(c: &mut Conn) -> (usize, i64, String) {
    let entries: Vec<Value> = q(c, &["SLOWLOG", "GET", "100000"]);
    let mut n = 0;
    let mut max = (0, String::new());
    for e in entries {
        let Value::Array(f) = e else { continue };
        let (Some(Value::Int(d)), Some(Value::Array(args))) = (f.get(2), f.get(3)) else {
            continue;
        };
        if let Some(Value::BulkString(name)) = args.first() {
            if name.eq_ignore_ascii_case(b"TOPN.INCR") {
                n += 1;
                if *d > max.0 {
                    let text: Vec<String> = args
                        .iter()
                        .map(|a| match a {
                            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                            other => format!("{other:?}"),
                        })
                        .collect();
                    max = (*d, text.join(" "));
                }
            }
        }
    }
    (n, max.0, max.1)
}

fn fill_bucket(c: &mut Conn, key: &str, prefix: &str, n: usize, by: i64, at: i64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("TOPN.INCR")
                .arg(key)
                .arg(format!("{prefix}{i}"))
                .arg("BY")
                .arg(by)
                .arg("AT")
                .arg(at + (*i as i64 % 60_000))
                .ignore();
        }
        let _: () = p.query(c).unwrap();
    }
}

#[test]
fn bucket_boundary_with_many_members() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let bm = 60_000;
    let b = now_ms() / bm;
    let t = |k: i64| (b + k) * bm;
    const OLD: usize = 100_000;

    // "inc": the old bucket is retired piecewise (a newer bucket stays live).
    q_ok(c, &["TOPN.CREATE", "inc", "BUCKET", "60", "WINDOW", "2"]);
    fill_bucket(c, "inc", "o", OLD, 5, t(0));
    for i in 0..20 {
        incr(c, "inc", &format!("mid{i:02}"), 2, t(1));
    }
    assert_eq!(info(c, "inc")["members"], OLD as i64 + 20);
    // "grave": the clock jumps past the whole window.
    q_ok(c, &["TOPN.CREATE", "grave", "BUCKET", "60", "WINDOW", "2"]);
    fill_bucket(c, "grave", "o", OLD, 5, t(0));
    assert_eq!(info(c, "grave")["members"], OLD as i64);
    let e0 = recipes_info(c, "topn_expired_buckets");

    q_ok(c, &["CONFIG", "SET", "slowlog-max-len", "100000"]);
    q_ok(c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    q_ok(c, &["SLOWLOG", "RESET"]);
    let started = Instant::now();
    assert_eq!(incr(c, "inc", "new0", 1, t(2)), 1);
    assert_eq!(incr(c, "grave", "new0", 1, t(5)), 1);
    let boundary = started.elapsed();

    // Right after the boundary: only the live buckets count.
    let mut want_inc: Rows = (0..20).map(|i| (format!("mid{i:02}"), 2)).collect();
    want_inc.push(("new0".into(), 1));
    assert_eq!(top(c, "inc", 100, t(2)), want_inc);
    assert_eq!(top(c, "inc", 5, t(2) + 1), want_inc[..5].to_vec());
    assert_eq!(
        top(c, "inc", 10, t(1)),
        want_inc[..10].to_vec(),
        "window [b, b+1] cut to [b+1, b+2]"
    );
    assert_eq!(top(c, "inc", 10, t(0)), rows(&[]));
    assert_eq!(
        count(
            c,
            "inc",
            &["o0", "o99999", "o5", "mid03", "new0"],
            Some(t(2))
        ),
        [0, 0, 0, 2, 1]
    );
    assert_eq!(count(c, "inc", &["o0", "o77"], Some(t(1))), [0, 0]);
    assert_eq!(
        incr(c, "inc", "o1", 1, t(0)),
        0,
        "bucket b is out of the window: ignored"
    );
    assert_eq!(top(c, "grave", 100, t(5)), rows(&[("new0", 1)]));
    assert_eq!(top(c, "grave", 100, t(4)), rows(&[]));
    assert_eq!(
        count(c, "grave", &["o0", "o99999", "new0"], Some(t(5))),
        [0, 0, 1]
    );
    assert_eq!(info(c, "grave")["buckets"], 1);
    assert_eq!(info(c, "inc")["buckets"], 2);
    let ti = Instant::now();
    assert_eq!(top(c, "inc", 10, t(2)).len(), 10);
    let top_time = ti.elapsed();

    // Further writes retire the old data piecewise.
    let mut settled = (false, false);
    for round in 0..40 {
        let mut p = redis::pipe();
        for i in 0..500 {
            p.cmd("TOPN.INCR")
                .arg("inc")
                .arg(format!("new{}", i % 50))
                .arg("AT")
                .arg(t(2))
                .ignore();
            p.cmd("TOPN.INCR")
                .arg("grave")
                .arg(format!("new{}", i % 50))
                .arg("AT")
                .arg(t(5))
                .ignore();
        }
        let _: () = p.query(c).unwrap();
        settled = (
            info(c, "inc")["members"] == 70,
            info(c, "grave")["members"] == 50,
        );
        if settled == (true, true) {
            eprintln!(
                "old buckets retired after {} rounds of 500 writes",
                round + 1
            );
            break;
        }
    }
    // For information only (no timing assertions): the cost of the writes around the
    // boundary as the server measured them.
    let (n_incr, max_us, max_cmd) = slowlog_max_incr_us(c);
    eprintln!(
        "boundary INCRs took {boundary:?} (client side); TOP 10 {top_time:?}; \
         SLOWLOG: {n_incr} TOPN.INCR entries, slowest {max_us} us: {max_cmd}"
    );
    assert_eq!(
        settled,
        (true, true),
        "members after retirement: inc {:?}, grave {:?}",
        info(c, "inc"),
        info(c, "grave")
    );
    assert!(
        recipes_info(c, "topn_expired_buckets") >= e0 + 2,
        "topn_expired_buckets {} (was {e0})",
        recipes_info(c, "topn_expired_buckets")
    );
    assert_eq!(recipes_info(c, "topn_members"), 120);
    let mut want: Rows = (0..20).map(|i| (format!("mid{i:02}"), 2)).collect();
    let mut news: Rows = (0..50).map(|i| (format!("new{i}"), 0)).collect();
    // new0 got 1 at the boundary; each round adds 10 per new member
    let rounds = top(c, "grave", 1, t(5))[0].1;
    for (m, n) in news.iter_mut() {
        *n = if m == "new0" { rounds } else { rounds - 1 };
    }
    want.extend(news.clone());
    want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(top(c, "inc", 1000, t(2)), want);
    assert_eq!(top(c, "grave", 1000, t(5)), {
        let mut g = news;
        g.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        g
    });
}

// ---------------------------------------------------------------- 9. late events, idle keys

/// `master_repl_offset` stays put while `f` runs (retried: the master's periodic PING to its
/// replicas moves it too).
fn replicates_nothing(master: &Server, mut f: impl FnMut()) -> bool {
    (0..3).any(|_| {
        let off = info_field(&master.info("replication"), "master_repl_offset");
        f();
        off == info_field(&master.info("replication"), "master_repl_offset")
    })
}

#[test]
fn a_late_event_changes_nothing() {
    // The sequence (one-minute buckets) on a master with an AOF and a replica.
    let mut master = Server::builder().config("appendonly", "yes").start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let mut sub = master.conn();
    let mut ps = subscribe_keyevents(mc, &mut sub);
    let min = 60_000;
    avoid_boundary(min, 5_000);
    let now = now_ms();

    q_ok(mc, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "24"]);
    let late = |c: &mut Conn, key: &str, by: i64, at: i64| incr(c, key, "m", by, at);
    assert!(replicates_nothing(&master, || {
        assert_eq!(late(mc, "k", 1, now - 41 * min), 0);
    }));
    assert!(exists(mc, "k"), "a late event deleted the key");
    assert_eq!(
        pexpiretime(mc, "k"),
        -1,
        "a late event gave the key an expiry"
    );
    // Also on a missing key (default shape, 3600 x 24): nothing is created.
    assert!(replicates_nothing(&master, || {
        assert_eq!(late(mc, "nokey", 1, now - 25 * HOUR_MS), 0);
    }));
    assert!(!exists(mc, "nokey"));
    // The next event inside the window counts in the key as created.
    assert_eq!(late(mc, "k", 1, now - 20 * min), 1);
    let i = info(mc, "k");
    assert_eq!((i["bucket"], i["window"], i["members"]), (60, 24, 1));
    let exp = ((now - 20 * min) / min + 24) * min;
    assert_eq!(pexpiretime(mc, "k"), exp);
    // A written key: a late event replies the current count and changes nothing.
    assert!(replicates_nothing(&master, || {
        assert_eq!(late(mc, "k", 5, now - 30 * min), 1);
        assert_eq!(late(mc, "k", 5, now - 25 * HOUR_MS), 1);
    }));
    assert_eq!(pexpiretime(mc, "k"), exp);
    assert_eq!(count(mc, "k", &["m"], None), [1]);
    q_ok(mc, &["SET", "sentinel", "1"]);
    let ev = |e: &str| (e.to_string(), "k".to_string());
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![ev("topn.create"), ev("topn.incr")],
        "late events fired keyspace events"
    );
    drop(ps);

    // The replica and an AOF replay hold the same.
    let ts: Vec<i64> = (-26..3).map(|k| now + k * min).collect();
    let ms = vec!["m".to_string(), "x".to_string()];
    let want = snap(mc, "k", &ts, &ms, true);
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    assert_eq!(snap(rc, "k", &ts, &ms, true), want, "replica");
    assert!(!exists(rc, "nokey"));
    master.restart();
    let mc = &mut master.conn();
    assert_eq!(snap(mc, "k", &ts, &ms, true), want, "AOF replay");
    assert!(!exists(mc, "nokey"));
}

/// Server-side duration (us) of the slowest `TOPN.*` call in SLOWLOG, and how many there are.
fn slowlog_topn_max_us(c: &mut Conn) -> (usize, i64) {
    let entries: Vec<Value> = q(c, &["SLOWLOG", "GET", "100000"]);
    let mut n = 0;
    let mut max = 0;
    for e in entries {
        let Value::Array(f) = e else { continue };
        if let (Some(Value::Int(d)), Some(Value::Array(args))) = (f.get(2), f.get(3)) {
            if matches!(args.first(), Some(Value::BulkString(x)) if x.starts_with(b"TOPN.")) {
                n += 1;
                max = max.max(*d);
            }
        }
    }
    (n, max)
}

#[test]
fn idle_key_reads_stay_exact_on_master_replica_and_reload() {
    // BUCKET 1 WINDOW 8: eight buckets of 3000 members whose popularity reverses half-way, then
    // no writes for a few buckets. The timer of each server ages the buckets that leave the
    // window (internal state: nothing replicated); every read stays exact.
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let (bm, w, n) = (1000, 8, 3000);
    q_ok(mc, &["TOPN.CREATE", "idle", "BUCKET", "1", "WINDOW", "8"]);
    let mut model = Model::new(1, w);
    let b0 = now_ms() / bm + 1;
    for b in 0..w {
        let mut p = redis::pipe();
        for i in 0..n {
            let rank = if b < w / 2 { i } else { n - 1 - i };
            let by = 1 + (n - rank) / 100;
            let (m, at) = (format!("u{i:05}"), (b0 + b) * bm + 1);
            p.add_command(incr_cmd("idle", &m, by, at)).ignore();
            model.incr(&m, by, at).unwrap();
        }
        let _: () = p.query(mc).unwrap();
    }
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    let aged = |c: &mut Conn| recipes_info(c, "topn_aged_buckets");
    let (m0, r0) = (aged(mc), aged(rc));
    // Idle until three buckets past the newest one.
    let newest = b0 + w - 1;
    let idle_until = (newest + 3) * bm + 200;
    std::thread::sleep(Duration::from_millis((idle_until - now_ms()).max(0) as u64));
    // Buckets b0..b0+2 left the window: each server aged them by itself.
    for (c, before, who) in [(&mut *mc, m0, "master"), (&mut *rc, r0, "replica")] {
        assert!(
            wait_until(Duration::from_secs(5), || aged(c) >= before + 3),
            "{who}: topn_aged_buckets {} (was {before})",
            aged(c)
        );
    }
    let members: Vec<String> = (0..n).step_by(97).map(|i| format!("u{i:05}")).collect();
    let refs: Vec<&str> = members.iter().map(|m| m.as_str()).collect();
    let check = |c: &mut Conn, who: &str| {
        let now = now_ms();
        let mut times: Vec<i64> = (b0 - 1..=newest + 4).map(|b| b * bm + 500).collect();
        times.push(now);
        for &t in &times {
            assert_eq!(top(c, "idle", 20, t), model.top(20, t), "{who}: TOP AT {t}");
            let want: Vec<i64> = refs.iter().map(|m| model.count(m, t)).collect();
            assert_eq!(
                count(c, "idle", &refs, Some(t)),
                want,
                "{who}: COUNT AT {t}"
            );
            for k in [1, 2, 4] {
                assert_eq!(
                    top_last(c, "idle", 10, Some(t), k),
                    model.top_in(10, t, k),
                    "{who}: TOP AT {t} LAST {k}"
                );
            }
        }
        // At the server's time (no AT), when the read stays in one bucket.
        let t0 = now_ms();
        let got = top_ws(c, "TOPN.TOP", "idle", 20, None);
        if now_ms() / bm == t0 / bm {
            assert_eq!(got, model.top(20, t0), "{who}: TOP without AT");
        }
    };
    q_ok(mc, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    q_ok(mc, &["SLOWLOG", "RESET"]);
    for _ in 0..20 {
        let _ = top_ws(mc, "TOPN.TOP", "idle", 10, None);
    }
    let (calls, max_us) = slowlog_topn_max_us(mc);
    eprintln!("idle TOPN.TOP 10 at the server's time: {calls} calls, slowest {max_us} us");
    check(mc, "master");
    check(rc, "replica");
    assert_eq!(pexpiretime(mc, "idle"), model.expire_at());
    assert_eq!(pexpiretime(rc, "idle"), model.expire_at());
    // After a reload, buckets already out of the window load aged.
    master.restart_with_save();
    let mc = &mut master.conn();
    if exists(mc, "idle") {
        check(mc, "reloaded master");
    }
}
