//! TL in the family table: a plain list, newest at the head.

use super::super::{cmd, q};
use super::{read_line, Family, Step, Tally};
use rand::rngs::StdRng;
use rand::Rng;
use redis::Connection;

pub const FAMILY: Family = Family {
    name: "TL",
    commands: &["TL.PUSH", "TL.RANGE", "TL.REM", "TL.LEN"],
    keywords: &["MAXLEN", "SLACK", "TTL", "PXAT", "OFFSET", "COUNT"],
    configs: &[("recipes.tl-default-maxlen", "4")],
    workload,
    read,
    sample,
    tally: Tally {
        setup: |_| vec![],
        write: |key, i| cmd(&["TL.PUSH", key, &i.to_string(), "MAXLEN", "0"]),
        count: |c, key| q(c, &["TL.LEN", key]),
    },
    reclaim: None,
    upkeep: None,
};

/// `n` random TL calls on the keys `{prefix}k0` .. `{prefix}k5`: pushes with
/// the default cap, with MAXLEN/SLACK, with a relative TTL, removals with and
/// without COUNT, and reads.
pub fn mixed_workload(c: &mut Connection, prefix: &str, rng: &mut StdRng, n: usize) {
    let pool = ["a", "b", "c", "d", "bin\0\r\n"];
    for i in 0..n {
        let key = format!("{prefix}k{}", rng.gen_range(0..6));
        let item = pool[rng.gen_range(0..pool.len())];
        match rng.gen_range(0..10) {
            0..=3 => {
                // no MAXLEN: the server's config default applies
                let mut k = redis::cmd("TL.PUSH");
                k.arg(&key).arg(item);
                if rng.gen_bool(0.3) {
                    k.arg("SLACK").arg(rng.gen_range(0..4));
                }
                // Refused (changing nothing) where SLACK has no cap: the
                // server's default is 0.
                let _: redis::RedisResult<i64> = k.query(c);
            }
            4..=5 => {
                let _: i64 = redis::cmd("TL.PUSH")
                    .arg(&key)
                    .arg(item)
                    .arg("MAXLEN")
                    .arg(rng.gen_range(0..12))
                    .arg("SLACK")
                    .arg(rng.gen_range(0..5))
                    .query(c)
                    .unwrap();
            }
            6 => {
                let _: i64 = redis::cmd("TL.PUSH")
                    .arg(&key)
                    .arg(item)
                    .arg("TTL")
                    .arg(rng.gen_range(100..100_000))
                    .query(c)
                    .unwrap();
            }
            7..=8 => {
                let _: i64 = redis::cmd("TL.REM")
                    .arg(&key)
                    .arg(item)
                    .arg("COUNT")
                    .arg(rng.gen_range(0..3))
                    .query(c)
                    .unwrap();
            }
            _ => {
                if i % 3 == 0 {
                    let _: i64 = redis::cmd("TL.REM").arg(&key).arg(item).query(c).unwrap();
                } else {
                    let _: Vec<Vec<u8>> = redis::cmd("TL.RANGE").arg(&key).query(c).unwrap();
                }
            }
        }
    }
}

/// [`mixed_workload`], then pushes with the default cap only, a trim of many
/// items at once with a TTL, a removal that empties a key, and PXAT (one
/// already past, which deletes the list).
fn workload(c: &mut Connection, p: &str, base: i64, rng: &mut StdRng) {
    let k = |s: &str| format!("{p}{s}");
    mixed_workload(c, p, rng, 300);
    for i in 0..10 {
        q::<i64>(c, &["TL.PUSH", &k("dflt"), &i.to_string()]);
    }
    for i in 0..40 {
        q::<i64>(c, &["LPUSH", &k("many"), &i.to_string()]);
    }
    q::<i64>(
        c,
        &["TL.PUSH", &k("many"), "last", "MAXLEN", "5", "TTL", "5000"],
    );
    q::<i64>(c, &["TL.PUSH", &k("gone"), "z"]);
    assert_eq!(q::<i64>(c, &["TL.REM", &k("gone"), "z"]), 1);
    let pxat = (base + 7_200_000).to_string();
    q::<i64>(
        c,
        &["TL.PUSH", &k("px"), "a", "MAXLEN", "10", "PXAT", &pxat],
    );
    assert_eq!(
        q::<i64>(c, &["TL.PUSH", &k("past"), "a", "PXAT", "1000"]),
        0,
        "an expiry already past deletes the list"
    );
}

fn read(c: &mut Connection, key: &str, _base: i64) -> Vec<String> {
    vec![
        read_line(c, &["TL.RANGE", key, "COUNT", "1000000000"]),
        read_line(c, &["TL.LEN", key]),
        read_line(c, &["TL.RANGE", key, "OFFSET", "1", "COUNT", "2"]),
    ]
}

fn sample(key: &str, _at: i64) -> Vec<Step> {
    vec![
        Step::new(&["TL.PUSH", key, "post", "MAXLEN", "5"], "1"),
        Step::new(&["TL.RANGE", key], "[post]"),
    ]
}
