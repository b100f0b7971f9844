//! Golden payloads: a `DUMP` of a key of each module type, one file per type
//! and encoding version under `tests/golden/` (see its README), made once
//! from a known sequence of commands. Every later build must `RESTORE` each
//! file and answer exactly as the build that made it, so no change can
//! silently stop loading data written before it.
//!
//! Adding a type or a version = one entry in [`GOLDEN`] plus its file:
//! `cargo test --test golden -- --ignored write_missing_golden_files`
//! writes the files that are missing (it never rewrites one). A release's
//! own payload of an entry's sequence is one more file of that entry, made
//! by the release's build (`RECIPES_MODULE`).
//!
//! Also here: `redis.conf.example` shows every config at its default.
mod common;
use common::families::topn::{count, incr, info, pairs, rows, top, top_last, top_ws, HOUR_MS};
use common::*;

use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

struct Golden {
    /// The module type's name, as `TYPE` shows it.
    type_name: &'static str,
    /// Its encoding version in the payload.
    version: u64,
    /// Files under `tests/golden/`: the payload in hex, one per build that
    /// made one (tests/golden/README.md says which), the first the entry's
    /// own.
    files: &'static [&'static str],
    /// The key's absolute expiry (ms) when it was dumped, -1 for none;
    /// restored with it.
    expire_at: i64,
    /// The known sequence that made the key.
    make: fn(&mut Connection, &str),
    /// Exact answers of the key (as made or as restored); may write to it last.
    check: fn(&mut Connection, &str),
}

const GOLDEN: &[Golden] = &[
    Golden {
        type_name: "recipesTN",
        version: 1,
        files: &["topn-v1.hex", "0.2.0-topn.hex", "0.3.0-topn.hex"],
        expire_at: TOPN_B + 26 * HOUR_MS,
        make: topn_make,
        check: topn_check,
    },
    // A key with ALIGN: module encver 1, TopN's own version byte 2.
    Golden {
        type_name: "recipesTN",
        version: 1,
        files: &[
            "topn-align.hex",
            "0.2.0-topn-align.hex",
            "0.3.0-topn-align.hex",
        ],
        expire_at: TOPN_ALIGNED_START + 7 * DAY_MS,
        make: topn_align_make,
        check: topn_align_check,
    },
    Golden {
        type_name: "recipesTN",
        version: 1,
        files: &[
            "topn-capacity.hex",
            "0.2.0-topn-capacity.hex",
            "0.3.0-topn-capacity.hex",
        ],
        expire_at: TOPN_B + HOUR_MS + DAY_MS,
        make: topn_capacity_make,
        check: topn_capacity_check,
    },
    // A key with VIEWS: module encver 1, TopN's own version byte 4.
    Golden {
        type_name: "recipesTN",
        version: 1,
        files: &[
            "topn-views.hex",
            "0.2.0-topn-views.hex",
            "0.3.0-topn-views.hex",
        ],
        expire_at: TOPN_B + 31 * HOUR_MS,
        make: topn_views_make,
        check: topn_views_check,
    },
    Golden {
        type_name: "recipesUL",
        version: 1,
        files: &["ulist-v1.hex"],
        expire_at: -1,
        make: ulist_make,
        check: ulist_check,
    },
    Golden {
        type_name: "recipesUL",
        version: 2,
        files: &["ulist-v2.hex", "0.2.0-ulist.hex", "0.3.0-ulist.hex"],
        expire_at: -1,
        make: ulist_make,
        check: ulist_check,
    },
    Golden {
        type_name: "recipesHC",
        version: 1,
        files: &["hcounter-v1.hex"],
        expire_at: -1,
        make: hcounter_make,
        check: hcounter_check,
    },
    Golden {
        type_name: "recipesHC",
        version: 2,
        files: &[
            "hcounter-v2.hex",
            "0.2.0-hcounter.hex",
            "0.3.0-hcounter.hex",
        ],
        expire_at: -1,
        make: hcounter_make,
        check: hcounter_check,
    },
];

// ---------------------------------------------------------------- TOPN

/// 2100-01-01T00:00:00Z: the key's expiry (a window after its newest bucket)
/// never lapses.
const TOPN_B: i64 = 4_102_444_800_000;

fn at(offset_ms: i64) -> String {
    (TOPN_B + offset_ms).to_string()
}

fn topn_make(c: &mut Connection, key: &str) {
    q_ok(c, &["TOPN.CREATE", key, "BUCKET", "3600", "WINDOW", "24"]);
    let incrs: &[(&str, &str, i64, i64)] = &[
        ("alice", "5", 0, 5),
        ("bob", "3", 1_000, 3),
        ("nul\0byte", "2", 2_000, 2),
        ("carol", "7", HOUR_MS, 7),
        ("alice", "2", 2 * HOUR_MS + 300_000, 7),
        ("dave", "-4", 2 * HOUR_MS, -4),
        ("bob", "4", 2 * HOUR_MS, 7),
        // older than the window (24 buckets before the newest): ignored
        ("eve", "1", -30 * HOUR_MS, 0),
    ];
    for (member, by, offset, reply) in incrs {
        let args = ["TOPN.INCR", key, member, "BY", by, "AT", &at(*offset)];
        assert_eq!(q::<i64>(c, &args), *reply, "{args:?}");
    }
}

const DAY_MS: i64 = 24 * HOUR_MS;
/// The start of the ALIGN 79200 (22:00 UTC) daily bucket holding TOPN_B.
const TOPN_ALIGNED_START: i64 = TOPN_B - 2 * HOUR_MS;

fn topn_align_make(c: &mut Connection, key: &str) {
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            "86400",
            "WINDOW",
            "7",
            "ALIGN",
            "79200",
        ],
    );
    let start = TOPN_ALIGNED_START;
    for (member, by, at) in [
        ("a", 2, start - 1),
        ("b", 3, start),
        ("c", 5, start + DAY_MS - 1),
    ] {
        incr(c, key, member, by, at);
    }
}

/// A key with CAPACITY 2: `b` evicted by `c` in the first bucket.
fn topn_capacity_make(c: &mut Connection, key: &str) {
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            "3600",
            "WINDOW",
            "24",
            "CAPACITY",
            "2",
        ],
    );
    for (member, by, at) in [
        ("a", 5, TOPN_B),
        ("b", 3, TOPN_B + 1),
        ("c", 1, TOPN_B + 2),
        ("a", 2, TOPN_B + HOUR_MS),
    ] {
        incr(c, key, member, by, at);
    }
}

fn topn_capacity_check(c: &mut Connection, key: &str) {
    assert_eq!(pexpiretime(c, key), TOPN_B + HOUR_MS + DAY_MS);
    let at = (TOPN_B + HOUR_MS).to_string();
    let rows: Vec<redis::Value> = q(c, &["TOPN.TOP", key, "10", "AT", &at, "WITHERRORS"]);
    let text: Vec<String> = rows.iter().map(|v| format!("{v:?}")).collect();
    assert_eq!(
        text.join(" "),
        "bulk-string('\"a\"') int(7) int(0) bulk-string('\"c\"') int(4) int(3)",
    );
    let i = info(c, key);
    assert_eq!(
        (i["capacity"], i["counters"], i["bound"], i["exact"]),
        (2, 3, 4, 0)
    );
    // "b" (3, evicted) counts at most the first bucket's smallest counter.
    assert_eq!(count(c, key, &["b"], Some(TOPN_B + HOUR_MS)), [4]);
}

/// A key with VIEWS 6 2, five hourly buckets written over eight hours.
fn topn_views_make(c: &mut Connection, key: &str) {
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            "3600",
            "WINDOW",
            "24",
            "VIEWS",
            "6",
            "2",
        ],
    );
    for (member, by, hour) in [
        ("a", 5, 0),
        ("b", 3, 1),
        ("c", 4, 2),
        ("a", 1, 2),
        ("b", 2, 7),
    ] {
        incr(c, key, member, by, TOPN_B + hour * HOUR_MS);
    }
}

fn topn_views_check(c: &mut Connection, key: &str) {
    assert_eq!(pexpiretime(c, key), TOPN_B + 31 * HOUR_MS);
    let i = info(c, key);
    assert_eq!((i["members"], i["buckets"], i["views"]), (3, 4, 2));
    assert!(i.contains_key("view-2-memory") && i.contains_key("view-6-memory"));
    let at = Some(TOPN_B + 7 * HOUR_MS);
    assert_eq!(top_last(c, key, 10, at, 2), rows(&[("b", 2)]));
    assert_eq!(
        top_last(c, key, 10, at, 6),
        rows(&[("c", 4), ("b", 2), ("a", 1)])
    );
    assert_eq!(
        top_last(c, key, 10, at, 7),
        rows(&[("b", 5), ("c", 4), ("a", 1)])
    );
    assert_eq!(
        top(c, key, 10, TOPN_B + 7 * HOUR_MS),
        rows(&[("a", 6), ("b", 5), ("c", 4)])
    );
    // The declaration came with the payload.
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            "3600",
            "WINDOW",
            "24",
            "VIEWS",
            "2",
            "6",
        ],
    );
}

fn topn_align_check(c: &mut Connection, key: &str) {
    let start = TOPN_ALIGNED_START;
    assert_eq!(pexpiretime(c, key), start + 7 * DAY_MS);
    let i = info(c, key);
    assert_eq!(
        (
            i["bucket"],
            i["window"],
            i["align"],
            i["members"],
            i["buckets"]
        ),
        (86400, 7, 79200, 3, 2)
    );
    assert_eq!(
        top_last(c, key, 10, Some(start), 1),
        rows(&[("c", 5), ("b", 3)])
    );
    assert_eq!(top_last(c, key, 10, Some(start - 1), 1), rows(&[("a", 2)]));
    assert_eq!(
        top(c, key, 10, TOPN_B),
        rows(&[("c", 5), ("b", 3), ("a", 2)])
    );
}

fn topn_check(c: &mut Connection, key: &str) {
    assert_eq!(q::<String>(c, &["TYPE", key]), "recipesTN");
    // A whole window after the newest bucket (B + 2 h).
    assert_eq!(pexpiretime(c, key), TOPN_B + 26 * HOUR_MS);
    let i = info(c, key);
    assert!(i["memory"] > 0, "{i:?}");
    let i: BTreeMap<&str, i64> = i
        .iter()
        .filter(|(k, _)| *k != "memory")
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        i,
        BTreeMap::from([
            ("bucket", 3600),
            ("window", 24),
            ("align", 0),
            ("members", 5),
            ("buckets", 3)
        ])
    );
    let clock = TOPN_B + 2 * HOUR_MS + 1_800_000;
    let all = rows(&[
        ("alice", 7),
        ("bob", 7),
        ("carol", 7),
        ("nul\0byte", 2),
        ("dave", -4),
    ]);
    assert_eq!(top(c, key, 10, clock), all);
    assert_eq!(top_ws(c, "TOPN.TOP24", key, 10, Some(clock)), all);
    assert_eq!(top(c, key, 2, clock), all[..2].to_vec());
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", key, "2", "AT", &clock.to_string()]),
        ["alice", "bob"]
    );
    // Bucket B only (the window ending there).
    assert_eq!(
        top(c, key, 10, TOPN_B + 1_800_000),
        rows(&[("alice", 5), ("bob", 3), ("nul\0byte", 2)])
    );
    // B+1 .. B+2, then B+2 alone, then nothing.
    assert_eq!(
        top(c, key, 10, TOPN_B + 24 * HOUR_MS + 1),
        rows(&[("carol", 7), ("bob", 4), ("alice", 2), ("dave", -4)])
    );
    assert_eq!(
        top(c, key, 10, TOPN_B + 25 * HOUR_MS),
        rows(&[("bob", 4), ("alice", 2), ("dave", -4)])
    );
    assert_eq!(top(c, key, 10, TOPN_B + 26 * HOUR_MS), rows(&[]));
    let members = ["alice", "bob", "carol", "dave", "eve", "nul\0byte"];
    assert_eq!(count(c, key, &members, Some(clock)), [7, 7, 7, -4, 0, 2]);
    assert_eq!(
        count(c, key, &members, Some(TOPN_B + 25 * HOUR_MS)),
        [2, 4, 0, -4, 0, 0]
    );
    let v: Vec<Value> = q(c, &["TOPN.INFO", key]);
    assert_eq!(pairs(v).len(), 6, "TOPN.INFO fields");
    // The clock came along: B-22 h is out of the window, B-21 h is in.
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", key, "eve", "AT", &at(-22 * HOUR_MS)]),
        0
    );
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", key, "eve", "AT", &at(-21 * HOUR_MS)]),
        1
    );
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", key, "alice", "AT", &at(2 * HOUR_MS)]),
        8
    );
    assert_eq!(pexpiretime(c, key), TOPN_B + 26 * HOUR_MS);
}

// ---------------------------------------------------------------- ULIST

/// A schema with every role and a default expiry; values that never expire,
/// expire in 2100 (by default and by PXAT), and expired in 2000 (kept until
/// reclaimed, which the check does not wait for), with binary bytes.
fn ulist_make(c: &mut Connection, key: &str) {
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            key,
            "VALUE",
            "company",
            "user",
            "SCOPE",
            "month",
            "PARTITION",
            "day",
            "EXPIRE",
            "3600",
        ],
    );
    let add =
        |c: &mut Connection, extra: &[&str], co: &str, u: &str, m: &str, d: &str, new: i64| {
            let mut args = vec![
                "ULIST.ADD",
                key,
                "company",
                co,
                "user",
                u,
                "month",
                m,
                "day",
                d,
            ];
            args.extend_from_slice(extra);
            assert_eq!(q::<i64>(c, &args), new, "{args:?}");
        };
    let at_2100 = TOPN_B.to_string();
    add(c, &["NEVER"], "1", "11", "2013-08", "2013-08-10", 1);
    add(c, &["NEVER"], "1", "11", "2013-08", "2013-08-11", 0);
    add(c, &["AT", &at_2100], "1", "22", "2013-08", "2013-08-10", 1);
    add(
        c,
        &["PXAT", &at_2100],
        "2",
        "a:b\0\u{ff}",
        "2013-08",
        "2013-08-11",
        1,
    );
    add(c, &["NEVER"], "1", "22", "2013-09", "2013-09-05", 1);
    add(
        c,
        &["AT", "946684800000"],
        "3",
        "old",
        "2013-09",
        "2013-09-05",
        1,
    );
}

fn ulist_check(c: &mut Connection, key: &str) {
    assert_eq!(q::<String>(c, &["TYPE", key]), "recipesUL");
    let data: Value = q(c, &["ULIST.DATA", key]);
    assert_eq!(
        reply_text(&data),
        "[[company, 1, user, 11, month, 2013-08, day, 2013-08-10], \
         [company, 1, user, 22, month, 2013-08, day, 2013-08-10], \
         [company, 2, user, a:b\\x00\\xc3\\xbf, month, 2013-08, day, 2013-08-11], \
         [company, 1, user, 22, month, 2013-09, day, 2013-09-05]]"
    );
    let parts: Value = q(c, &["ULIST.PARTITIONS", key, "month", "2013-08"]);
    assert_eq!(
        reply_text(&parts),
        "[[month, 2013-08, day, 2013-08-10], [month, 2013-08, day, 2013-08-11]]"
    );
    let has = |c: &mut Connection, co: &str, u: &str, m: &str| -> i64 {
        q(c, &["ULIST.HAS", key, "company", co, "user", u, "month", m])
    };
    assert_eq!(has(c, "1", "11", "2013-08"), 1);
    assert_eq!(has(c, "3", "old", "2013-09"), 0);
    // The schema and its default expiry came along.
    let args = [
        "ULIST.ADD",
        key,
        "company",
        "9",
        "user",
        "9",
        "month",
        "m",
        "day",
        "d",
        "AT",
        "0",
    ];
    assert_eq!(q::<i64>(c, &args), 1);
    assert_eq!(has(c, "9", "9", "m"), 0, "default EXPIRE 3600 from AT 0");
    let e = expect_err(c, &cmd(&["ULIST.ADD", key, "company", "1"]));
    assert!(e.contains("missing name 'user'"), "{e}");
}

// ---------------------------------------------------------------- HCOUNTER

/// A FLOAT unique counter with a TTL and a name that is both PARTITION and
/// GROUP; every write at an AT in 2100 (so nothing has expired).
const HC_T: i64 = TOPN_B;

fn hc_incrby(c: &mut Connection, key: &str, by: &str, at: i64, cell: [&str; 5]) -> String {
    let [day, company, city, user, month] = cell;
    let at = at.to_string();
    q(
        c,
        &[
            "HCOUNTER.INCRBY",
            key,
            by,
            "AT",
            &at,
            "day",
            day,
            "company",
            company,
            "city",
            city,
            "user",
            user,
            "month",
            month,
        ],
    )
}

fn hcounter_make(c: &mut Connection, key: &str) {
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            key,
            "PARTITION",
            "day",
            "company",
            "GROUP",
            "company",
            "city",
            "TTL",
            "3600",
            "FLOAT",
            "UNIQUE",
            "user",
            "SCOPE",
            "month",
        ],
    );
    let writes: &[(&str, i64, [&str; 5], &str)] = &[
        ("1.5", 0, ["2100-01-01", "1", "x", "u1", "2100-01"], "1.5"),
        (
            "0.1",
            1_000,
            ["2100-01-01", "1", "x", "u2", "2100-01"],
            "1.6",
        ),
        // u1 was counted in 2100-01 already.
        ("2", 2_000, ["2100-01-01", "1", "y", "u1", "2100-01"], "0"),
        (
            "1",
            0,
            ["2100-01-02", "a:b\0\u{ff}", "y", "u1", "2100-02"],
            "1",
        ),
        (
            "-0.25",
            5_000,
            ["2100-01-02", "2", "", "u3", "2100-01"],
            "-0.25",
        ),
    ];
    for (by, offset, cell, reply) in writes {
        assert_eq!(
            hc_incrby(c, key, by, HC_T + offset, *cell),
            *reply,
            "{cell:?}"
        );
    }
}

fn hcounter_check(c: &mut Connection, key: &str) {
    assert_eq!(q::<String>(c, &["TYPE", key]), "recipesHC");
    let data: Value = q(c, &["HCOUNTER.DATA", key]);
    assert_eq!(
        reply_text(&data),
        "[[day, 2100-01-01, company, 1, city, x, value, 1.6], \
         [day, 2100-01-02, company, 2, city, , value, -0.25], \
         [day, 2100-01-02, company, a:b\\x00\\xc3\\xbf, city, y, value, 1]]"
    );
    let parts: Value = q(c, &["HCOUNTER.PARTITIONS", key, "day", "2100-01-02"]);
    assert_eq!(
        reply_text(&parts),
        "[[day, 2100-01-02, company, 2], [day, 2100-01-02, company, a:b\\x00\\xc3\\xbf]]"
    );
    // The unique tuples came along: u2 counted in 2100-01, u2 new in 2100-02.
    let u2 = ["2100-01-02", "2", "", "u2", "2100-01"];
    assert_eq!(hc_incrby(c, key, "1", HC_T + 6_000, u2), "-0.25");
    let u2 = ["2100-01-02", "2", "", "u2", "2100-02"];
    assert_eq!(hc_incrby(c, key, "1", HC_T + 6_000, u2), "0.75");
    // So did the TTL: an hour after its last write, 2100-01-01 starts afresh.
    let late = ["2100-01-01", "1", "x", "u9", "2100-01"];
    assert_eq!(hc_incrby(c, key, "1", HC_T + 3_601_000, late), "1");
}

// ---------------------------------------------------------------- payloads

fn golden_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(file)
}

fn read_hex(file: &str) -> Vec<u8> {
    let path = golden_path(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (see tests/golden.rs)", path.display()));
    let hex: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(
        hex.len().is_multiple_of(2),
        "{file}: odd number of hex digits"
    );
    hex.chunks(2)
        .map(|p| {
            u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16)
                .unwrap_or_else(|e| panic!("{file}: {e}"))
        })
        .collect()
}

fn write_hex(file: &str, bytes: &[u8]) {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let lines: Vec<&str> = hex
        .as_bytes()
        .chunks(64)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    std::fs::write(golden_path(file), lines.join("\n") + "\n").unwrap();
}

/// The module type name and encoding version a DUMP payload names: a module
/// value starts with its RDB type (7, module) and the module type id as a
/// 64-bit length (0x81 + 8 bytes big endian): 9 characters of 6 bits, then
/// 10 bits of version.
fn payload_type(payload: &[u8]) -> (String, u64) {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert!(
        payload.len() > 10 && payload[0] == 7 && payload[1] == 0x81,
        "not a module value payload: {:?}",
        &payload[..payload.len().min(10)]
    );
    let id = u64::from_be_bytes(payload[2..10].try_into().unwrap());
    let name = (0..9)
        .map(|j| CHARSET[((id >> (10 + 6 * (8 - j))) & 63) as usize] as char)
        .collect();
    (name, id & 1023)
}

/// RESTORE the golden payload `file` of `g` as `key`, with its expiry.
fn restore(c: &mut Connection, g: &Golden, file: &str, key: &str) {
    let payload = read_hex(file);
    assert_eq!(
        payload_type(&payload),
        (g.type_name.to_string(), g.version),
        "{file}: the payload is not of the type and version its entry says"
    );
    let mut k = redis::cmd("RESTORE");
    // RESTORE's 0 is "no expiry".
    k.arg(key)
        .arg(g.expire_at.max(0))
        .arg(&payload)
        .arg("ABSTTL");
    let _: Value = run(c, &k);
}

/// A server for the golden data, which lies in 2100 (so that it stays inside
/// its windows and expiries whenever the tests run): far ahead of the clock,
/// so `recipes.max-future-ms` is lifted.
fn golden_server() -> Server {
    Server::builder()
        .module_args(&["max-future-ms", "0"])
        .start()
}

#[test]
fn golden_payloads_restore_and_answer_exactly() {
    let srv = golden_server();
    let c = &mut srv.conn();
    for g in GOLDEN {
        for file in g.files {
            let key = format!("golden:{file}");
            restore(c, g, file, &key);
            (g.check)(c, &key);
        }
    }
    assert!(!srv.log().contains("panic"), "{}", srv.log());
}

/// The sequences still give the answers the checks expect on this build, and
/// every module type's current encoding version has a golden file.
#[test]
fn golden_sequences_answer_the_same_today() {
    let srv = golden_server();
    let c = &mut srv.conn();
    for g in GOLDEN {
        let file = g.files[0];
        let key = format!("made:{file}");
        (g.make)(c, &key);
        let payload: Vec<u8> = q(c, &["DUMP", &key]);
        let (name, version) = payload_type(&payload);
        assert_eq!(name, g.type_name, "{file}: make() wrote another type");
        assert!(
            GOLDEN
                .iter()
                .any(|o| o.type_name == name && o.version == version),
            "{name} now writes encoding version {version}: add a golden entry and file for it \
             (keep the old ones: data written by them must still load)"
        );
        (g.check)(c, &key);
    }
}

/// Writes the golden file of each entry that has none, from this build.
/// Run by hand: `cargo test --test golden -- --ignored write_missing_golden_files`.
#[test]
#[ignore]
fn write_missing_golden_files() {
    let srv = golden_server();
    let c = &mut srv.conn();
    for (g, file) in GOLDEN
        .iter()
        .flat_map(|g| g.files.iter().map(move |f| (g, *f)))
    {
        if golden_path(file).exists() {
            continue;
        }
        let key = format!("made:{file}");
        (g.make)(c, &key);
        assert_eq!(pexpiretime(c, &key), g.expire_at, "{file}: expiry");
        let payload: Vec<u8> = q(c, &["DUMP", &key]);
        assert_eq!(
            payload_type(&payload),
            (g.type_name.to_string(), g.version),
            "{file}: this build writes another type or version"
        );
        write_hex(file, &payload);
        eprintln!("wrote tests/golden/{file}");
    }
}

// ---------------------------------------------------------------- redis.conf.example

#[test]
fn redis_conf_example_lists_every_config_at_its_default() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let defaults: BTreeMap<String, String> = q(c, &["CONFIG", "GET", "recipes.*"]);
    assert!(!defaults.is_empty(), "the module has no config");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("redis.conf.example");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut listed: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        if let (Some(name), Some(value)) = (words.next(), words.next()) {
            if name.starts_with("recipes.") {
                let old = listed.insert(name.to_string(), value.to_string());
                assert!(old.is_none(), "redis.conf.example sets {name} twice");
            }
        }
    }
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("loadmodule ")),
        "redis.conf.example does not load the module"
    );
    assert_eq!(
        listed, defaults,
        "redis.conf.example must show every recipes.* config at its default"
    );
}
