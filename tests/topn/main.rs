//! Acceptance tests of the TOPN family (exact top-N over a sliding window of
//! time buckets) against a real redis-server.
//!
//! Model tests take their seed from `TOPN_SEED` (printed at the start of each run).
#[path = "../common/mod.rs"]
mod common;

mod align;
mod basics;
mod boundary;
mod capacity;
mod errors;
mod events;
mod incrby;
mod keys;
mod late;
mod model;
mod replication;
mod views;

use common::families::topn::*;
use common::*;

use redis::Value;
use std::collections::BTreeMap;
use std::time::Duration;

type Conn = redis::Connection;

/// If the current `bucket_ms` bucket ends within `margin` ms, wait for the next one
/// (tests that rely on the server clock staying in one bucket).
fn avoid_boundary(bucket_ms: i64, margin: i64) {
    let left = bucket_ms - now_ms().rem_euclid(bucket_ms);
    if left < margin {
        std::thread::sleep(Duration::from_millis(left as u64 + 20));
    }
}

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

/// The `SLOWLOG` entries of the commands whose name starts with `prefix`
/// (any case): how many, and the slowest one's server-side duration in us
/// and its arguments. For information only: tests assert no time.
fn slowlog_slowest(c: &mut Conn, prefix: &str) -> (usize, i64, String) {
    let entries: Vec<Value> = q(c, &["SLOWLOG", "GET", "100000"]);
    let mut n = 0;
    let mut max = (0, String::new());
    for e in entries {
        let Value::Array(f) = e else { continue };
        let (Some(Value::Int(d)), Some(Value::Array(args))) = (f.get(2), f.get(3)) else {
            continue;
        };
        let Some(Value::BulkString(name)) = args.first() else {
            continue;
        };
        if !name
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix.as_bytes()))
        {
            continue;
        }
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
    (n, max.0, max.1)
}
