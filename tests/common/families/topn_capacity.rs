//! TOPN keys with CAPACITY (Space-Saving buckets) in the family table: TOPN's
//! commands on another shape of key, so every generic and fault test (kill
//! -9 with AOF, AOF rewrites and slot migration under writers, failovers)
//! runs on bounded keys too, their counted writes evicting nearly every time.

use super::super::{cmd, exists, now_ms, q};
use super::topn::{create_once_with, incr_cmd, top_last, HOUR_MS};
use super::{read_line, topn, Family, Step, Tally};
use rand::rngs::StdRng;
use rand::Rng;
use redis::Connection;

pub const FAMILY: Family = Family {
    name: "TOPN-CAPACITY",
    // TOPN's line has the commands, keywords and configs.
    commands: &[],
    keywords: &[],
    configs: &[],
    workload,
    read,
    sample,
    tally: Tally {
        setup: |key| {
            vec![cmd(&[
                "TOPN.CREATE",
                key,
                "BUCKET",
                "86400",
                "WINDOW",
                "2",
                "CAPACITY",
                &TALLY_CAPACITY.to_string(),
            ])]
        },
        write: |key, i| {
            let member = format!("t{}", i % TALLY_MEMBERS);
            cmd(&["TOPN.INCR", key, &member])
        },
        count: tally_count,
    },
    reclaim: None,
    // A bucket of this second that leaves a two-second window.
    upkeep: Some(|key| {
        vec![
            cmd(&[
                "TOPN.CREATE",
                key,
                "BUCKET",
                "1",
                "WINDOW",
                "2",
                "CAPACITY",
                "4",
            ]),
            cmd(&["TOPN.INCR", key, "m"]),
        ]
    }),
};

/// Counted writes go round more members than a bucket keeps counters for,
/// so nearly every one evicts.
const TALLY_MEMBERS: u64 = 12;
const TALLY_CAPACITY: u64 = 8;

/// The counted writes a key holds. A full bucket's new member takes the
/// evicted counter's count plus its own, so a bucket's counters always add
/// up to what was written in it, evictions or not: the sum of every counter
/// of today's bucket and yesterday's (a test may run past midnight; the
/// window is the two).
fn tally_count(c: &mut Connection, key: &str) -> i64 {
    let now = now_ms();
    [now, now - 24 * HOUR_MS]
        .into_iter()
        .flat_map(|at| top_last(c, key, 1_000, Some(at), 1))
        .map(|(_, n)| n)
        .sum()
}

/// Minutes, the unit of [`events`]' times.
const MINUTE_MS: i64 = 60_000;

/// 100 events a minute on `key` from `base` to `span` minutes after,
/// members skewed over 300 (many more than a bucket keeps), BY 1 to 5 (a
/// key with CAPACITY takes positive increments only); some `late` minutes
/// before `base` (older than the window: ignored).
fn events(c: &mut Connection, rng: &mut StdRng, key: &str, base: i64, span: i64, late: i64) {
    let mut p = redis::pipe();
    for i in 0..span * 100 {
        let x: f64 = rng.gen();
        let member = format!("p{}", (x * x * 300.0) as usize);
        let at = if i > 0 && rng.gen_bool(0.05) {
            base - late * MINUTE_MS
        } else {
            base + rng.gen_range(0..span * MINUTE_MS)
        };
        p.add_command(incr_cmd(key, &member, rng.gen_range(1..6), at));
    }
    let _: Vec<i64> = p.query(c).unwrap();
}

/// Bounded keys written every way: at times inside a window (with late
/// events older than it), with the clock running past a shorter window
/// (buckets retire), with ALIGN, and at the server's time.
fn workload(c: &mut Connection, p: &str, base: i64, rng: &mut StdRng) {
    let k = |s: &str| format!("{p}{s}");
    let b0 = base / MINUTE_MS * MINUTE_MS;
    create_once_with(
        c,
        &k("a"),
        &["BUCKET", "60", "WINDOW", "12", "CAPACITY", "8"],
    );
    events(c, rng, &k("a"), b0, 6, 13);
    create_once_with(
        c,
        &k("roll"),
        &["BUCKET", "60", "WINDOW", "5", "CAPACITY", "16"],
    );
    events(c, rng, &k("roll"), b0, 12, 6);
    let aligned = [
        "BUCKET", "3600", "WINDOW", "24", "ALIGN", "900", "CAPACITY", "4",
    ];
    create_once_with(c, &k("aligned"), &aligned);
    events(c, rng, &k("aligned"), b0, 3, 25 * 60);
    create_once_with(
        c,
        &k("srv"),
        &["BUCKET", "60", "WINDOW", "24", "CAPACITY", "6"],
    );
    for i in 0..100 {
        let (member, by) = (format!("s{}", i % 37), (i % 5 + 1).to_string());
        q::<i64>(c, &["TOPN.INCR", &k("srv"), &member, "BY", &by]);
    }
}

/// TOPN's reads, then the shape's capacity and the counts with their
/// errors around `base`.
fn read(c: &mut Connection, key: &str, base: i64) -> Vec<String> {
    let mut lines = topn::read(c, key, base);
    if !exists(c, key) {
        return lines;
    }
    lines.push(format!("INFO capacity {}", topn::info(c, key)["capacity"]));
    for d in -1..=1 {
        let at = (base / HOUR_MS + d) * HOUR_MS + HOUR_MS / 3;
        let at = at.to_string();
        let top = ["TOPN.TOP", key, "1000", "AT", &at, "WITHERRORS"];
        lines.push(read_line(c, &top));
    }
    lines
}

fn sample(key: &str, at: i64) -> Vec<Step> {
    let at = at.to_string();
    vec![
        Step::new(
            &["TOPN.CREATE", key, "BUCKET", "3600", "CAPACITY", "2"],
            "OK",
        ),
        Step::new(&["TOPN.INCR", key, "a", "BY", "5", "AT", &at], "5"),
        Step::new(&["TOPN.INCR", key, "b", "BY", "3", "AT", &at], "3"),
        Step::new(&["TOPN.INCR", key, "c", "AT", &at], "4"),
        Step::new(
            &["TOPN.TOP", key, "10", "AT", &at, "WITHERRORS"],
            "[a, 5, 0, c, 4, 3]",
        ),
    ]
}
