//! TOPN in the family table (module type `recipesTN`), and the TOPN query
//! helpers the TOPN tests share.

use super::super::{cmd, exists, now_ms, pexpiretime, q, q_ok, run};
use super::{Family, Step, Tally};
use rand::rngs::StdRng;
use rand::Rng;
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};

pub const FAMILY: Family = Family {
    name: "TOPN",
    commands: &[
        "TOPN.CREATE",
        "TOPN.INCR",
        "TOPN.INCRBY",
        "TOPN.TOP",
        "TOPN.TOP24",
        "TOPN.COUNT",
        "TOPN.INFO",
        "TOPN.SETCOUNTER",
    ],
    keywords: &[
        "AT",
        "BUCKET",
        "WINDOW",
        "ALIGN",
        "CAPACITY",
        "BY",
        "WITHCOUNTS",
        "WITHERRORS",
        "LAST",
    ],
    configs: &[
        ("recipes.topn-default-bucket", "60"),
        ("recipes.topn-default-window", "12"),
        ("recipes.topn-compact-max", "64"),
    ],
    workload,
    read,
    sample,
    tally: Tally {
        setup: |_| vec![],
        write: |key, i| cmd(&["TOPN.INCR", key, TALLY_MEMBERS[i as usize % 4]]),
        count: |c, key| count(c, key, &TALLY_MEMBERS, None).iter().sum(),
    },
    reclaim: None,
    // A bucket of this second that leaves a two-second window.
    upkeep: Some(|key| {
        vec![
            cmd(&["TOPN.CREATE", key, "BUCKET", "1", "WINDOW", "2"]),
            cmd(&["TOPN.INCR", key, "m"]),
        ]
    }),
};

/// The members counted writes spread over (a window of a day at the
/// server's time: what one test writes stays in it).
const TALLY_MEMBERS: [&str; 4] = ["t0", "t1", "t2", "t3"];

pub const HOUR_MS: i64 = 3_600_000;

/// `(member, count)` rows of a WITHCOUNTS reply.
pub type Rows = Vec<(String, i64)>;

/// Flat `member, count, ...` (counts must be integer replies).
pub fn pairs(v: Vec<Value>) -> Rows {
    assert!(v.len().is_multiple_of(2), "odd WITHCOUNTS reply: {v:?}");
    v.chunks(2)
        .map(|p| {
            let m = match &p[0] {
                Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                other => panic!("member not a bulk string: {other:?}"),
            };
            let n = match &p[1] {
                Value::Int(n) => *n,
                other => panic!("count of {m:?} not an integer reply: {other:?}"),
            };
            (m, n)
        })
        .collect()
}

pub fn rows(list: &[(&str, i64)]) -> Rows {
    list.iter().map(|(m, n)| (m.to_string(), *n)).collect()
}

/// `TOPN.INCR key member BY by AT at`.
pub fn incr(c: &mut Connection, key: &str, member: &str, by: i64, at: i64) -> i64 {
    run(c, &incr_cmd(key, member, by, at))
}

/// The command [`incr`] sends, for pipelines.
pub fn incr_cmd(key: &str, member: &str, by: i64, at: i64) -> redis::Cmd {
    let mut k = redis::cmd("TOPN.INCR");
    k.arg(key).arg(member).arg("BY").arg(by).arg("AT").arg(at);
    k
}

/// `TOPN.TOP|TOP24 key n [AT at] WITHCOUNTS`.
pub fn top_ws(c: &mut Connection, name: &str, key: &str, n: usize, at: Option<i64>) -> Rows {
    let mut k = redis::cmd(name);
    k.arg(key).arg(n);
    if let Some(at) = at {
        k.arg("AT").arg(at);
    }
    k.arg("WITHCOUNTS");
    pairs(run(c, &k))
}

/// `TOPN.TOP key n AT at WITHCOUNTS`.
pub fn top(c: &mut Connection, key: &str, n: usize, at: i64) -> Rows {
    top_ws(c, "TOPN.TOP", key, n, Some(at))
}

/// `TOPN.TOP key n [AT at] LAST k WITHCOUNTS`.
pub fn top_last(c: &mut Connection, key: &str, n: usize, at: Option<i64>, last: i64) -> Rows {
    let mut k = redis::cmd("TOPN.TOP");
    k.arg(key).arg(n);
    if let Some(at) = at {
        k.arg("AT").arg(at);
    }
    k.arg("LAST").arg(last).arg("WITHCOUNTS");
    pairs(run(c, &k))
}

/// `TOPN.COUNT key member... [AT at]`.
pub fn count(c: &mut Connection, key: &str, members: &[&str], at: Option<i64>) -> Vec<i64> {
    count_last(c, key, members, at, None)
}

/// `TOPN.COUNT key member... [AT at] [LAST k]` (LAST first when both, to cover either order).
pub fn count_last(
    c: &mut Connection,
    key: &str,
    members: &[&str],
    at: Option<i64>,
    last: Option<i64>,
) -> Vec<i64> {
    let mut k = redis::cmd("TOPN.COUNT");
    k.arg(key);
    for m in members {
        k.arg(*m);
    }
    if let Some(last) = last {
        k.arg("LAST").arg(last);
    }
    if let Some(at) = at {
        k.arg("AT").arg(at);
    }
    run(c, &k)
}

/// `TOPN.INFO key` as name -> integer (RESP2 flat array).
pub fn info(c: &mut Connection, key: &str) -> BTreeMap<String, i64> {
    let v: Vec<Value> = q(c, &["TOPN.INFO", key]);
    pairs(v).into_iter().collect()
}

/// Events in buckets [base_b, base_b + span) of a key of `window` >= span buckets (nothing
/// retires), positive members only ever up, "neg*" only down, so no entry is ever 0: the
/// member count is the same after a reload. Also some late events older than the window.
#[allow(clippy::too_many_arguments)] // a test workload with every knob spelled out
pub fn steady_workload(
    c: &mut Connection,
    rng: &mut StdRng,
    key: &str,
    base: i64,
    bm: i64,
    span: i64,
    window: i64,
    n: usize,
    members: &mut BTreeSet<String>,
) {
    let mut p = redis::pipe();
    for i in 0..n {
        let (m, by) = if rng.gen_bool(0.1) {
            (format!("neg{}", rng.gen_range(0..10)), -rng.gen_range(1..4))
        } else {
            let x: f64 = rng.gen();
            (
                format!("p{}", (x * x * 300.0) as usize),
                rng.gen_range(1..6),
            )
        };
        let at = if i > 0 && rng.gen_bool(0.05) {
            base - (window + 1) * bm // ignored: older than the window
        } else if i == 0 {
            base
        } else {
            base + rng.gen_range(0..span * bm)
        };
        members.insert(m.clone());
        p.add_command(incr_cmd(key, &m, by, at));
    }
    let _: Vec<i64> = p.query(c).unwrap();
}

/// `n` events on `key` over 12 buckets of `bm` ms from `base`, so the clock
/// runs past a shorter window and buckets retire; members `m0` .. below
/// `members` (collected in `seen`), 10% negative, 10% late by up to 7 buckets.
#[allow(clippy::too_many_arguments)] // a test workload with every knob spelled out
pub fn rolling_workload(
    c: &mut Connection,
    rng: &mut StdRng,
    key: &str,
    base: i64,
    bm: i64,
    n: i64,
    members: usize,
    seen: &mut BTreeSet<String>,
) {
    let mut p = redis::pipe();
    for i in 0..n {
        let m = format!("m{}", rng.gen_range(0..members));
        let by = if rng.gen_bool(0.1) {
            -rng.gen_range(1..5)
        } else {
            rng.gen_range(1..4)
        };
        let mut at = base + i * 12 * bm / n + rng.gen_range(0..bm / 2);
        if i > 0 && rng.gen_bool(0.1) {
            at -= rng.gen_range(0..7 * bm);
        }
        seen.insert(m.clone());
        p.add_command(incr_cmd(key, &m, by, at));
    }
    let _: Vec<i64> = p.query(c).unwrap();
}

fn create_once(c: &mut Connection, key: &str, bucket_s: &str, window: &str) {
    create_once_with(c, key, &["BUCKET", bucket_s, "WINDOW", window]);
}

/// `TOPN.CREATE key <shape>` unless the key exists (a workload may run twice).
pub fn create_once_with(c: &mut Connection, key: &str, shape: &[&str]) {
    if !exists(c, key) {
        let mut args = vec!["TOPN.CREATE", key];
        args.extend_from_slice(shape);
        q_ok(c, &args);
    }
}

/// Whether the server's build knows what 0.2.0 added (`TOPN.INCRBY` and
/// `VIEWS` came together): the upgrade tests also drive older releases.
pub fn knows_0_2_0(c: &mut Connection) -> bool {
    let known: Vec<Value> = q(c, &["COMMAND", "INFO", "TOPN.INCRBY"]);
    known.first().is_some_and(|v| *v != Value::Nil)
}

/// Every TOPN write path: keys created with a shape and written with AT
/// (late events older than the window are ignored), a key created and never
/// written, the clock moved by `BY 0` alone, a clock running past the window
/// (buckets retire), the server clock on a key INCR creates with the default
/// shape, an AT a whole window ago on a new key (nothing stays), a late event
/// on an existing key, and a late event (at the server's time) on a created
/// key that has no write yet: it keeps its shape and stays without expiry.
fn workload(c: &mut Connection, p: &str, base: i64, rng: &mut StdRng) {
    let k = |s: &str| format!("{p}{s}");
    let bm = 60_000;
    let b0 = base / bm * bm;
    let mut seen = BTreeSet::new();
    create_once(c, &k("a"), "60", "12");
    steady_workload(c, rng, &k("a"), b0, bm, 6, 12, 600, &mut seen);
    create_once(c, &k("b"), "30", "40");
    steady_workload(c, rng, &k("b"), b0, 30_000, 20, 40, 300, &mut seen);
    create_once(c, &k("empty"), "5", "2");
    incr(c, &k("clk"), "m", 4, b0);
    incr(c, &k("clk"), "m", 0, b0 + 5 * bm);
    create_once(c, &k("roll"), "60", "5");
    rolling_workload(c, rng, &k("roll"), b0, bm, 1500, 200, &mut seen);
    for i in 0..100 {
        let by = (i % 5 - 1).to_string();
        q::<i64>(
            c,
            &["TOPN.INCR", &k("srv"), &format!("s{}", i % 37), "BY", &by],
        );
    }
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", &k("gone"), "m", "AT", "1000"]),
        0,
        "an event a whole window ago leaves no key"
    );
    incr(c, &k("late"), "a", 3, b0);
    incr(c, &k("late"), "a", 3, b0 - 30 * HOUR_MS);
    incr(c, &k("late"), "b", 0, b0 + 3 * HOUR_MS);
    create_once(c, &k("made"), "60", "24");
    let now = now_ms();
    let before = count(c, &k("made"), &["m"], Some(now))[0];
    assert_eq!(
        incr(c, &k("made"), "m", 1, now - 41 * 60_000),
        before,
        "an event outside the window changes nothing"
    );
    assert!(exists(c, &k("made")));
    create_once(c, &k("made2"), "60", "24");
    incr(c, &k("made2"), "m", 1, now - 41 * 60_000);
    incr(c, &k("made2"), "m", 2, now - 20 * 60_000);
    // What came in 0.2.0: not on an older release (the upgrade tests' writer).
    if !knows_0_2_0(c) {
        return;
    }
    // Keys with VIEWS: past the compact layout with buckets retiring out of
    // the views and the window, and a compact one (the family's reads ask
    // for LAST 3 and LAST 6, the views).
    create_once_with(
        c,
        &k("views"),
        &["BUCKET", "60", "WINDOW", "5", "VIEWS", "3", "2"],
    );
    rolling_workload(c, rng, &k("views"), b0, bm, 600, 200, &mut seen);
    create_once_with(
        c,
        &k("views:small"),
        &["BUCKET", "60", "WINDOW", "12", "VIEWS", "6"],
    );
    rolling_workload(c, rng, &k("views:small"), b0, bm, 30, 8, &mut seen);
    // Many events a call: at named times (a member twice, negative
    // increments), at the server's time (creating the key), with CAPACITY.
    create_once(c, &k("many"), "60", "12");
    create_once_with(
        c,
        &k("capby"),
        &["BUCKET", "60", "WINDOW", "12", "CAPACITY", "3"],
    );
    for i in 0..40i64 {
        let at = (b0 + i * 7_000).to_string();
        let (a, b) = (format!("s{}", i % 7), format!("s{}", i % 5));
        let by = (i % 4 - 1).to_string();
        let many = [
            "TOPN.INCRBY",
            &k("many"),
            "AT",
            &at,
            "2",
            &a,
            &by,
            &b,
            "3",
            "s1",
        ];
        assert_eq!(q::<Vec<i64>>(c, &many).len(), 3);
        let capped = [
            "TOPN.INCRBY",
            &k("capby"),
            "AT",
            &at,
            "2",
            &a,
            "1",
            &b,
            "1",
            "s1",
        ];
        assert_eq!(q::<Vec<i64>>(c, &capped).len(), 3);
    }
    q::<Vec<i64>>(
        c,
        &["TOPN.INCRBY", &k("srvby"), "1", "a", "4", "b", "1", "a"],
    );
}

/// The shape from TOPN.INFO, and TOPN.TOP / TOPN.COUNT of every member at
/// each bucket from a window before to a window after the key's clock (taken
/// from its expiry) and a few around `base`.
pub fn read(c: &mut Connection, key: &str, base: i64) -> Vec<String> {
    if !exists(c, key) {
        return vec!["no key".into()];
    }
    let i = info(c, key);
    let (bm, w) = (i["bucket"] * 1000, i["window"]);
    // `members`, `buckets` and `memory` count what the key holds, which
    // includes zero counts and buckets not yet retired: a reload drops those.
    let mut lines = vec![format!("INFO bucket {} window {w}", i["bucket"])];
    let exp = pexpiretime(c, key);
    let mut buckets: BTreeSet<i64> = (-2..=2).map(|d| base / bm + d).collect();
    if exp > 0 {
        let clock = exp / bm - w;
        let step = (w / 20).max(1) as usize;
        buckets.extend((clock - w - 1..=clock + w + 1).step_by(step));
        buckets.extend(clock - 2..=clock + 2);
    }
    let times: Vec<i64> = buckets.iter().map(|b| b * bm + bm / 3).collect();
    let mut members: BTreeSet<String> = BTreeSet::new();
    let mut tops = Vec::new();
    for &t in &times {
        let r = top(c, key, 1_000_000, t);
        members.extend(r.iter().map(|(m, _)| m.clone()));
        tops.push(r);
    }
    let mut members: Vec<&str> = members.iter().map(|m| m.as_str()).collect();
    members.push("absent");
    let lasts: BTreeSet<i64> = [1, (w + 1) / 2].into_iter().collect();
    for (t, r) in times.iter().zip(tops) {
        lines.push(format!("TOP AT {t}: {r:?}"));
        let n = count(c, key, &members, Some(*t));
        lines.push(format!("COUNT {members:?} AT {t}: {n:?}"));
        for &k in &lasts {
            let r = top_last(c, key, 1_000_000, Some(*t), k);
            lines.push(format!("TOP AT {t} LAST {k}: {r:?}"));
            let n = count_last(c, key, &members, Some(*t), Some(k));
            lines.push(format!("COUNT AT {t} LAST {k}: {n:?}"));
        }
    }
    lines
}

fn sample(key: &str, at: i64) -> Vec<Step> {
    let at = at.to_string();
    vec![
        Step::new(&["TOPN.INCR", key, "member", "BY", "3", "AT", &at], "3"),
        Step::new(&["TOPN.TOP", key, "AT", &at], "[member]"),
    ]
}
