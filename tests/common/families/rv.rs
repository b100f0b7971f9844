//! RV in the family table: a plain sorted set, score = time.

use super::super::{cmd, q};
use super::{read_line, Family, Step, Tally};
use rand::rngs::StdRng;
use rand::Rng;
use redis::Connection;

pub const FAMILY: Family = Family {
    name: "RV",
    commands: &["RV.ADD", "RV.GET", "RV.REM", "RV.LEN"],
    keywords: &[
        "AT",
        "MAXLEN",
        "TTL",
        "PXAT",
        "LIMIT",
        "SINCE",
        "WITHSCORES",
    ],
    configs: &[("recipes.rv-default-maxlen", "5")],
    workload,
    read,
    sample,
    tally: Tally {
        setup: |_| vec![],
        write: |key, i| cmd(&["RV.ADD", key, &format!("m{i}"), "MAXLEN", "0"]),
        count: |c, key| q(c, &["RV.LEN", key]),
    },
    reclaim: None,
    upkeep: None,
    replica_dump_equal: true,
};

/// Times this far after `base` keep expiries counted from them alive for the
/// whole test.
const AHEAD_MS: i64 = 3_600_000;

/// Every RV write path: explicit AT with MAXLEN and TTL (trims), the server
/// clock with and without TTL and with the default cap, a removal that
/// empties a key, TTLs already past (deleted at once), an older event on an
/// existing key, PXAT, and RV.ADD on data the plain recipe wrote.
fn workload(c: &mut Connection, p: &str, base: i64, rng: &mut StdRng) {
    let k = |s: &str| format!("{p}{s}");
    let fb = base + AHEAD_MS;
    for i in 0..20i64 {
        let m = format!("m{}", rng.gen_range(0..7));
        let at = (fb + i * 10 + rng.gen_range(0..5)).to_string();
        q::<i64>(
            c,
            &[
                "RV.ADD",
                &k("a"),
                &m,
                "AT",
                &at,
                "MAXLEN",
                "5",
                "TTL",
                "3600",
            ],
        );
        q::<i64>(c, &["RV.ADD", &k("b"), &m]);
    }
    q::<i64>(c, &["RV.ADD", &k("b"), "ttl", "TTL", "1000"]);
    q::<i64>(c, &["RV.ADD", &k("c"), "x", "AT", "5"]);
    assert_eq!(q::<i64>(c, &["RV.REM", &k("c"), "x"]), 1);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", &k("d"), "x", "AT", "5", "TTL", "1"]),
        0,
        "a TTL already past deletes the key"
    );
    // On a new key an expiry already past; on an existing one it counts
    // from the newest entry.
    let e = k("e");
    q::<i64>(
        c,
        &[
            "RV.ADD", &e, "old", "AT", "1000", "TTL", "100", "MAXLEN", "3",
        ],
    );
    q::<i64>(c, &["RV.ADD", &e, "new", "AT", &fb.to_string()]);
    q::<i64>(c, &["RV.ADD", &e, "older", "AT", "999"]);
    let pxat = (fb + 2 * AHEAD_MS).to_string();
    for i in 0..4 {
        let at = (fb + rng.gen_range(0..100)).to_string();
        let m = format!("f{i}");
        q::<i64>(
            c,
            &[
                "RV.ADD",
                &k("f"),
                &m,
                "AT",
                &at,
                "MAXLEN",
                "2",
                "PXAT",
                &pxat,
            ],
        );
    }
    q::<i64>(c, &["ZADD", &k("z"), "1", "recipe"]);
    q::<i64>(
        c,
        &["RV.ADD", &k("z"), &format!("r{}", rng.gen_range(0..3))],
    );
    q::<i64>(
        c,
        &[
            "RV.REM",
            &k("a"),
            "m3",
            &format!("m{}", rng.gen_range(0..7)),
        ],
    );
}

fn read(c: &mut Connection, key: &str, base: i64) -> Vec<String> {
    let since = (base + AHEAD_MS).to_string();
    vec![
        read_line(c, &["RV.GET", key, "WITHSCORES", "LIMIT", "1000000"]),
        read_line(c, &["RV.LEN", key]),
        read_line(c, &["RV.GET", key, "SINCE", &since, "LIMIT", "3"]),
    ]
}

fn sample(key: &str, at: i64) -> Vec<Step> {
    let at = at.to_string();
    vec![
        Step::new(&["RV.ADD", key, "item", "AT", &at, "MAXLEN", "5"], "1"),
        Step::new(&["RV.GET", key], "[item]"),
    ]
}
