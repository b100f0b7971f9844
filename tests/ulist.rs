//! Acceptance tests of the ULIST family (unique-value lists with scopes,
//! partitions and per-value expiry) against a real redis-server.
//!
//! The model test takes its seed from `ULIST_SEED` (printed).
mod common;
use common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

type Conn = redis::Connection;
/// A row of DATA or PARTITIONS: (name, value) pairs in reply order.
type Row = Vec<(Vec<u8>, Vec<u8>)>;

const DAY_MS: i64 = 86_400_000;

/// Rows of a RESP2 DATA/PARTITIONS reply (flat name/value arrays).
fn rows_of(v: Value) -> Vec<Row> {
    let Value::Array(rows) = v else {
        panic!("rows: {v:?}")
    };
    rows.into_iter()
        .map(|row| {
            let flat: Vec<Vec<u8>> = redis::from_redis_value(&row).unwrap();
            assert!(flat.len().is_multiple_of(2), "odd row {flat:?}");
            flat.chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect()
        })
        .collect()
}

fn rows(c: &mut Conn, args: &[&str]) -> Vec<Row> {
    rows_of(q(c, args))
}

/// Rows written as `&[&[("name", "value"), ...]]`.
fn want(rows: &[&[(&str, &str)]]) -> Vec<Row> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect()
        })
        .collect()
}

fn memory(c: &mut Conn, key: &str) -> i64 {
    q(c, &["MEMORY", "USAGE", key, "SAMPLES", "0"])
}

// ---------------------------------------------------------------- the gem's examples

/// The gem's simple list of unique users: `increment(user_id: 1)` x {1, 2, 1}.
#[test]
fn gem_simple_list_of_users() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["ULIST.CREATE", "users", "VALUE", "user_id"]);
    let added: Vec<i64> = ["1", "2", "1"]
        .iter()
        .map(|u| q(c, &["ULIST.ADD", "users", "user_id", u]))
        .collect();
    assert_eq!(added, [1, 1, 0]);
    assert_eq!(
        rows(c, &["ULIST.DATA", "users"]),
        want(&[&[("user_id", "1")], &[("user_id", "2")]])
    );
    // One partition, with no names: the gem's `partitions => [{}]`.
    assert_eq!(rows(c, &["ULIST.PARTITIONS", "users"]), want(&[&[]]));
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "users", "user_id", "2"]), 1);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "users", "user_id", "3"]), 0);
    assert_eq!(q::<String>(c, &["TYPE", "users"]), "recipesUL");
}

fn add_company_user(
    c: &mut Conn,
    key: &str,
    company: &str,
    user: &str,
    date: &str,
    month: &str,
) -> i64 {
    q(
        c,
        &[
            "ULIST.ADD",
            key,
            "company_id",
            company,
            "user_id",
            user,
            "date",
            date,
            "start_month_date",
            month,
        ],
    )
}

/// The gem's unique company users per month, partitioned by day.
#[test]
fn gem_company_users_by_month() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "company_users_by_month";
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            k,
            "VALUE",
            "company_id",
            "user_id",
            "SCOPE",
            "start_month_date",
            "PARTITION",
            "date",
        ],
    );
    let mut added = 0;
    for (times, company, user, date, month) in [
        (2, "1", "11", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-09-05", "2013-09-01"),
        (3, "2", "11", "2013-08-10", "2013-08-01"),
        (1, "2", "22", "2013-08-11", "2013-08-01"),
    ] {
        for _ in 0..times {
            added += add_company_user(c, k, company, user, date, month);
        }
    }
    assert_eq!(added, 5);
    // The gem's keys, as rows: partitions per month, values per partition.
    let p = |m: &'static str, d: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![("start_month_date", m), ("date", d)]
    };
    assert_eq!(
        rows(c, &["ULIST.PARTITIONS", k]),
        want(&[
            &p("2013-08-01", "2013-08-10"),
            &p("2013-08-01", "2013-08-11"),
            &p("2013-09-01", "2013-09-05"),
        ])
    );
    assert_eq!(
        rows(
            c,
            &["ULIST.PARTITIONS", k, "start_month_date", "2013-08-01"]
        ),
        want(&[
            &p("2013-08-01", "2013-08-10"),
            &p("2013-08-01", "2013-08-11")
        ])
    );
    assert_eq!(
        rows(c, &["ULIST.PARTITIONS", k, "date", "2013-09-05"]),
        want(&[&p("2013-09-01", "2013-09-05")])
    );
    let v = |co: &'static str, u: &'static str, m: &'static str, d: &'static str| {
        vec![
            ("company_id", co),
            ("user_id", u),
            ("start_month_date", m),
            ("date", d),
        ]
    };
    assert_eq!(
        rows(
            c,
            &[
                "ULIST.DATA",
                k,
                "start_month_date",
                "2013-08-01",
                "date",
                "2013-08-10"
            ]
        ),
        want(&[
            &v("1", "11", "2013-08-01", "2013-08-10"),
            &v("1", "22", "2013-08-01", "2013-08-10"),
            &v("2", "11", "2013-08-01", "2013-08-10"),
        ])
    );
    assert_eq!(
        rows(c, &["ULIST.DATA", k, "date", "2013-08-11"]),
        want(&[&v("2", "22", "2013-08-01", "2013-08-11")])
    );
    assert_eq!(rows(c, &["ULIST.DATA", k]).len(), 5);
    let has = |c: &mut Conn, co: &str, u: &str, m: &str| -> i64 {
        q(
            c,
            &[
                "ULIST.HAS",
                k,
                "user_id",
                u,
                "company_id",
                co,
                "start_month_date",
                m,
            ],
        )
    };
    assert_eq!(has(c, "1", "22", "2013-09-01"), 1);
    assert_eq!(has(c, "2", "22", "2013-09-01"), 0);
    // An ADD's arguments serve HAS; the partition does not narrow the answer
    // (a value is unique in its scope wherever it was added).
    let has_in = |c: &mut Conn, co: &str, u: &str, m: &str, d: &str| -> i64 {
        q(
            c,
            &[
                "ULIST.HAS",
                k,
                "company_id",
                co,
                "user_id",
                u,
                "start_month_date",
                m,
                "date",
                d,
            ],
        )
    };
    assert_eq!(has_in(c, "1", "22", "2013-09-01", "2013-08-11"), 1);
    assert_eq!(has_in(c, "1", "22", "2013-09-01", "2099-01-01"), 1);
    assert_eq!(has_in(c, "2", "22", "2013-09-01", "2013-08-11"), 0);
    // Deleting a day forgets its values in their month: they are new again.
    assert_eq!(q::<i64>(c, &["ULIST.DEL", k, "date", "2013-08-10"]), 1);
    assert_eq!(has(c, "1", "11", "2013-08-01"), 0);
    assert_eq!(
        add_company_user(c, k, "1", "11", "2013-08-12", "2013-08-01"),
        1
    );
    assert_eq!(
        rows(
            c,
            &["ULIST.PARTITIONS", k, "start_month_date", "2013-08-01"]
        ),
        want(&[
            &p("2013-08-01", "2013-08-11"),
            &p("2013-08-01", "2013-08-12")
        ])
    );
    // Deleting everything keeps the list and its schema.
    assert_eq!(q::<i64>(c, &["ULIST.DEL", k]), 3);
    assert_eq!(rows(c, &["ULIST.DATA", k]), Vec::<Row>::new());
    assert_eq!(q::<i64>(c, &["EXISTS", k]), 1);
    assert_eq!(q::<i64>(c, &["ULIST.DEL", k]), 0);
    assert_eq!(
        add_company_user(c, k, "1", "11", "2013-08-12", "2013-08-01"),
        1
    );
}

/// The gem's Expirable: sessions expire after 10 minutes unless NEVER.
#[test]
fn gem_expirable_sessions() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "sessions",
            "VALUE",
            "session_id",
            "EXPIRE",
            "600",
        ],
    );
    let now = now_ms();
    let eleven_min_ago = (now - 660_000).to_string();
    // Added now: all three are there.
    for s in ["1", "2"] {
        assert_eq!(q::<i64>(c, &["ULIST.ADD", "sessions", "session_id", s]), 1);
    }
    assert_eq!(
        q::<i64>(c, &["ULIST.ADD", "sessions", "session_id", "3", "NEVER"]),
        1
    );
    assert_eq!(rows(c, &["ULIST.DATA", "sessions"]).len(), 3);
    // The same, as if added 11 minutes ago: only the NEVER one is left.
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "old",
            "VALUE",
            "session_id",
            "EXPIRE",
            "600",
        ],
    );
    for s in ["1", "2"] {
        let r: i64 = q(
            c,
            &["ULIST.ADD", "old", "session_id", s, "AT", &eleven_min_ago],
        );
        assert_eq!(r, 1);
    }
    let r: i64 = q(
        c,
        &[
            "ULIST.ADD",
            "old",
            "NEVER",
            "AT",
            &eleven_min_ago,
            "session_id",
            "3",
        ],
    );
    assert_eq!(r, 1);
    assert_eq!(
        rows(c, &["ULIST.DATA", "old"]),
        want(&[&[("session_id", "3")]])
    );
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "old", "session_id", "1"]), 0);
    // An expired value is new again; a live one is not, and keeps its expiry.
    assert_eq!(q::<i64>(c, &["ULIST.ADD", "old", "session_id", "1"]), 1);
    assert_eq!(
        q::<i64>(c, &["ULIST.ADD", "old", "session_id", "1", "NEVER"]),
        0
    );
    // EXPIRE on the add overrides the default; the value goes at AT + s.
    let at = (now - 5_000).to_string();
    let r: i64 = q(
        c,
        &[
            "ULIST.ADD",
            "old",
            "session_id",
            "9",
            "EXPIRE",
            "4",
            "AT",
            &at,
        ],
    );
    assert_eq!(r, 1);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "old", "session_id", "9"]), 0);
    let pxat = (now + 3_600_000).to_string();
    let r: i64 = q(c, &["ULIST.ADD", "old", "session_id", "8", "PXAT", &pxat]);
    assert_eq!(r, 1);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "old", "session_id", "8"]), 1);
}

// ---------------------------------------------------------------- values and names

#[test]
fn binary_values_never_mix_up() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &["ULIST.CREATE", "b", "VALUE", "x", "y", "PARTITION", "p"],
    );
    let cases: [(&[u8], &[u8]); 6] = [
        (b"a:b", b"c"),
        (b"a", b"b:c"),
        (b"a\x00", b"b"),
        (b"a", b"\x00b"),
        (b"\xff", b""),
        (b"", b"\xff\x00"),
    ];
    for (x, y) in cases {
        let r: i64 = q_bin(c, &[b"ULIST.ADD", b"b", b"x", x, b"y", y, b"p", b"d:1\x00"]);
        assert_eq!(r, 1, "{x:?} {y:?}");
    }
    for (x, y) in cases {
        let r: i64 = q_bin(c, &[b"ULIST.ADD", b"b", b"y", y, b"x", x, b"p", b"other"]);
        assert_eq!(r, 0, "{x:?} {y:?} is already there");
        let has: i64 = q_bin(c, &[b"ULIST.HAS", b"b", b"x", x, b"y", y]);
        assert_eq!(has, 1);
    }
    let data = rows(c, &["ULIST.DATA", "b"]);
    let mut got: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = data
        .iter()
        .map(|r| (r[0].1.clone(), r[1].1.clone(), r[2].1.clone()))
        .collect();
    got.sort();
    let mut expected: Vec<_> = cases
        .iter()
        .map(|(x, y)| (x.to_vec(), y.to_vec(), b"d:1\x00".to_vec()))
        .collect();
    expected.sort();
    assert_eq!(got, expected);
    let filtered: Value = q_bin(c, &[b"ULIST.DATA", b"b", b"p", b"d:1"]);
    assert_eq!(
        rows_of(filtered).len(),
        0,
        "a prefix of a value is another value"
    );
}

#[test]
fn rows_are_maps_under_resp3() {
    let srv = Server::start();
    let c = &mut srv.conn_resp3();
    q_ok(c, &["ULIST.CREATE", "l", "VALUE", "v", "SCOPE", "s"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "s", "a"]);
    let data: Value = q(c, &["ULIST.DATA", "l"]);
    let Value::Array(rows) = data else {
        panic!("{data:?}")
    };
    assert!(
        matches!(&rows[0], Value::Map(m) if m.len() == 2),
        "{rows:?}"
    );
    let parts: Value = q(c, &["ULIST.PARTITIONS", "l"]);
    assert!(
        matches!(&parts, Value::Array(p) if matches!(p[0], Value::Map(_))),
        "{parts:?}"
    );
}

#[test]
fn errors_name_the_argument_and_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "l",
            "VALUE",
            "v",
            "SCOPE",
            "s",
            "PARTITION",
            "p",
            "EXPIRE",
            "60",
        ],
    );
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "s", "a", "p", "x"]);
    q_ok(c, &["SET", "str", "x"]);
    let before = dump_all(c);
    let cases: &[(&[&str], &str)] = &[
        (
            &["ULIST.CREATE", "l", "VALUE", "x"],
            "ERR key already exists",
        ),
        (
            &["ULIST.CREATE", "str", "VALUE", "x"],
            "ERR key already exists",
        ),
        (
            &["ULIST.CREATE", "n", "VALUE", "at"],
            "ERR 'at' is a keyword (AT) and cannot be a name",
        ),
        (
            &["ULIST.CREATE", "n", "VALUE", "v", "SCOPE", "Never"],
            "keyword (NEVER)",
        ),
        (
            &["ULIST.CREATE", "n", "VALUE", "v", "v"],
            "ERR name 'v' declared more than once",
        ),
        (
            &["ULIST.CREATE", "n", "VALUE", "v", "PARTITION", "v"],
            "declared more than once",
        ),
        (
            &["ULIST.CREATE", "n", "SCOPE", "s"],
            "ERR VALUE needs at least one name",
        ),
        (
            &["ULIST.CREATE", "n", "VALUE", "v", "EXPIRE", "0"],
            "EXPIRE must be an integer",
        ),
        (
            &["ULIST.CREATE", "n", "VALUE", "v", "EXPIRE", "x"],
            "EXPIRE must be an integer",
        ),
        (
            &["ULIST.CREATE", "n", "junk", "VALUE", "v"],
            "ERR unexpected argument 'junk'",
        ),
        (
            &["ULIST.ADD", "n", "v", "1"],
            "ERR no such list; create it with ULIST.CREATE",
        ),
        (
            &["ULIST.ADD", "l", "v", "1", "s", "a"],
            "ERR missing name 'p'",
        ),
        (
            &["ULIST.ADD", "l", "v", "1", "s", "a", "p", "x", "q", "1"],
            "ERR unknown name 'q'",
        ),
        (
            &["ULIST.ADD", "l", "v", "1", "s", "a", "p", "x", "v", "2"],
            "ERR name 'v' given more than once",
        ),
        (
            &["ULIST.ADD", "l", "v", "1", "s", "a", "p"],
            "ERR name 'p' needs a value",
        ),
        (
            &[
                "ULIST.ADD",
                "l",
                "v",
                "1",
                "s",
                "a",
                "p",
                "x",
                "EXPIRE",
                "5",
                "NEVER",
            ],
            "cannot be used together",
        ),
        (
            &[
                "ULIST.ADD",
                "l",
                "v",
                "1",
                "s",
                "a",
                "p",
                "x",
                "EXPIRE",
                "-5",
            ],
            "EXPIRE must be",
        ),
        (
            &["ULIST.ADD", "l", "v", "1", "s", "a", "p", "x", "AT", "nan"],
            "AT must be",
        ),
        (
            &[
                "ULIST.ADD",
                "l",
                "v",
                "1",
                "s",
                "a",
                "p",
                "x",
                "AT",
                "1",
                "AT",
                "2",
            ],
            "AT given more than once",
        ),
        (
            &["ULIST.ADD", "l", "v", "1", "s", "a", "p", "x", "PXAT", "0"],
            "PXAT must be",
        ),
        (&["ULIST.HAS", "l", "v", "1"], "ERR missing name 's'"),
        (
            &["ULIST.HAS", "l", "v", "1", "s", "a", "p", "x", "AT", "1"],
            "ERR unknown name 'AT'",
        ),
        (
            &["ULIST.HAS", "l", "v", "1", "s", "a", "q", "x"],
            "ERR unknown name 'q'",
        ),
        (
            &["ULIST.DATA", "l", "v", "1"],
            "ERR name 'v' does not belong here",
        ),
        (&["ULIST.DATA", "l", "zzz", "1"], "ERR unknown name 'zzz'"),
        (
            &["ULIST.PARTITIONS", "l", "s"],
            "ERR name 's' needs a value",
        ),
        (
            &["ULIST.DEL", "l", "v", "1"],
            "ERR name 'v' does not belong here",
        ),
        (&["ULIST.RECLAIM", "l", "x"], "ULIST.RECLAIM is internal"),
        (&["ULIST.ADD", "str", "v", "1"], "WRONGTYPE"),
        (&["ULIST.HAS", "str", "v", "1"], "WRONGTYPE"),
        (&["ULIST.DATA", "str"], "WRONGTYPE"),
        (&["ULIST.PARTITIONS", "str"], "WRONGTYPE"),
        (&["ULIST.DEL", "str"], "WRONGTYPE"),
        (&["ULIST.CREATE", "n"], "wrong number of arguments"),
        (&["ULIST.CREATE", "n", "VALUE"], "wrong number of arguments"),
        (&["ULIST.ADD"], "wrong number of arguments"),
        (&["ULIST.DATA"], "wrong number of arguments"),
    ];
    for (args, needle) in cases {
        let e = expect_err(c, &cmd(args));
        assert!(e.contains(needle), "{args:?}: {e:?} lacks {needle:?}");
    }
    assert_eq!(dump_all(c), before, "a refused command changed data");
    // Reads of a missing key answer as an empty list would.
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "none", "v", "1"]), 0);
    assert_eq!(rows(c, &["ULIST.DATA", "none"]), Vec::<Row>::new());
    assert_eq!(
        rows(c, &["ULIST.PARTITIONS", "none", "x", "1"]),
        Vec::<Row>::new()
    );
    assert_eq!(q::<i64>(c, &["ULIST.DEL", "none"]), 0);
    assert_eq!(q::<i64>(c, &["EXISTS", "none", "n"]), 0);
    assert!(!srv.log().contains("panic"), "{}", srv.log());
}

#[test]
fn keys_are_declared() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for args in [
        &["ULIST.CREATE", "k1", "VALUE", "v"][..],
        &["ULIST.ADD", "k1", "v", "1"],
        &["ULIST.HAS", "k1", "v", "1"],
        &["ULIST.DATA", "k1"],
        &["ULIST.PARTITIONS", "k1"],
        &["ULIST.DEL", "k1"],
    ] {
        let mut getkeys = vec!["COMMAND", "GETKEYS"];
        getkeys.extend_from_slice(args);
        let keys: Vec<String> = q(c, &getkeys);
        assert_eq!(keys, ["k1"], "{args:?}");
    }
}

// ---------------------------------------------------------------- events and INFO

#[test]
fn notifications_and_info() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let ev = |e: &str| (e.to_string(), "l".to_string());
    q_ok(c, &["ULIST.CREATE", "l", "VALUE", "v", "PARTITION", "p"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "p", "a"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "p", "a"]); // not new: no event
    let _: i64 = q(c, &["ULIST.HAS", "l", "v", "1"]);
    let _ = rows(c, &["ULIST.DATA", "l"]);
    let _ = expect_err(c, &cmd(&["ULIST.ADD", "l", "v", "2"]));
    let _: i64 = q(c, &["ULIST.DEL", "l", "p", "zz"]); // nothing deleted: no event
    let _: i64 = q(c, &["ULIST.DEL", "l", "p", "a"]);
    // Expired at once: reclaimed in the background, with its own event.
    let past = (now_ms() - 10_000).to_string();
    let _: i64 = q(
        c,
        &[
            "ULIST.ADD",
            "l",
            "v",
            "2",
            "p",
            "b",
            "EXPIRE",
            "1",
            "AT",
            &past,
        ],
    );
    assert!(wait_until(Duration::from_secs(5), || recipes_info(
        c,
        "ulist_expired_values"
    ) == 1));
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("ulist.create"),
            ev("ulist.add"),
            ev("ulist.del"),
            ev("ulist.add"),
            ev("ulist.expire")
        ]
    );
    assert_eq!(recipes_info(c, "ulist_create_calls"), 1);
    assert_eq!(recipes_info(c, "ulist_add_calls"), 4);
    assert_eq!(recipes_info(c, "ulist_has_calls"), 1);
    assert_eq!(recipes_info(c, "ulist_data_calls"), 1);
    assert_eq!(recipes_info(c, "ulist_del_calls"), 2);
    assert_eq!(recipes_info(c, "ulist_errors"), 1);
}

// ---------------------------------------------------------------- the model

/// What the server should hold: scope -> value -> (partition, expire_at).
#[derive(Default)]
struct Model {
    scopes: BTreeMap<String, BTreeMap<String, (String, i64)>>,
}

const NEVER: i64 = i64::MAX;

impl Model {
    /// The value's expiry if it is live at `at`.
    fn live_at(&self, s: &str, v: &str, at: i64) -> Option<i64> {
        self.scopes
            .get(s)
            .and_then(|vs| vs.get(v))
            .map(|e| e.1)
            .filter(|&exp| exp > at)
    }

    fn rows(&self, s: Option<&str>, p: Option<&str>, now: i64) -> Vec<[String; 3]> {
        let mut out = Vec::new();
        for (scope, values) in &self.scopes {
            for (v, (part, exp)) in values {
                if *exp > now && s.is_none_or(|s| s == scope) && p.is_none_or(|p| p == part) {
                    out.push([v.clone(), scope.clone(), part.clone()]);
                }
            }
        }
        out
    }
}

fn filter_args<'a>(s: Option<&'a str>, p: Option<&'a str>) -> Vec<&'a str> {
    let mut a = Vec::new();
    if let Some(s) = s {
        a.extend(["s", s]);
    }
    if let Some(p) = p {
        a.extend(["p", p]);
    }
    a
}

/// Random adds (times and expiries drawn around two hours ago, so each value
/// is either long expired or live for days at the reads), deletes with
/// filters and reads, against the model, while `recipes.ulist-compact-max`
/// changes (the list crosses between its compact and hashed layouts both
/// ways) and DEBUG RELOADs load it anew; then the same answers from a replica
/// that keeps lists compact up to another size, with the same DUMP, after
/// BGREWRITEAOF + restart and after an RDB restart.
#[test]
fn model_based_random_operations() {
    let seed = seed_from_env("ULIST_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut master = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let replica = Server::builder()
        .config("recipes.ulist-compact-max", "10")
        .start();
    q_ok(
        &mut replica.conn(),
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "m",
            "VALUE",
            "v",
            "SCOPE",
            "s",
            "PARTITION",
            "p",
        ],
    );
    let mut model = Model::default();
    let base = now_ms() - 2 * 3_600_000;
    for step in 0..1500 {
        let s = format!("s{}", rng.gen_range(0..3));
        let p = format!("p:{}", rng.gen_range(0..4));
        // Numbers are packed as varints in the compact layout.
        let v = if rng.gen_bool(0.5) {
            format!("v\x00{}", rng.gen_range(0..40))
        } else {
            rng.gen_range(0..40).to_string()
        };
        match rng.gen_range(0..12) {
            10 => {
                let size = ["0", "4", "16", "128"][rng.gen_range(0..4)];
                q_ok(c, &["CONFIG", "SET", "recipes.ulist-compact-max", size]);
            }
            11 => q_ok(c, &["DEBUG", "RELOAD"]),
            0..=5 => {
                let at = base + rng.gen_range(0..3_600_000);
                let (expiry, exp): (Vec<String>, i64) = match rng.gen_range(0..3) {
                    0 => (vec!["NEVER".into()], NEVER),
                    1 => {
                        let secs = rng.gen_range(1..1800);
                        (vec!["EXPIRE".into(), secs.to_string()], at + secs * 1000)
                    }
                    _ => (vec!["EXPIRE".into(), "864000".into()], at + 864_000_000),
                };
                let at_s = at.to_string();
                let mut args = vec!["ULIST.ADD", "m", "v", &v, "p", &p, "s", &s, "AT", &at_s];
                args.extend(expiry.iter().map(String::as_str));
                let got: i64 = q(c, &args);
                let live = model.live_at(&s, &v, at);
                // A value live at `at` but expired by now may already be
                // reclaimed: then the server rightly finds it new.
                let ambiguous = live.is_some_and(|e| e <= now_ms());
                if !ambiguous {
                    assert_eq!(
                        got,
                        live.is_none() as i64,
                        "step {step} (seed {seed}): {args:?}"
                    );
                }
                if got == 1 {
                    model.scopes.entry(s).or_default().insert(v, (p, exp));
                }
            }
            6 => {
                let fs = rng.gen_bool(0.5).then_some(s.as_str());
                let fp = rng.gen_bool(0.5).then_some(p.as_str());
                let mut args = vec!["ULIST.DEL", "m"];
                args.extend(filter_args(fs, fp));
                let now = now_ms();
                let live: BTreeSet<(String, String)> = model
                    .rows(fs, fp, now)
                    .into_iter()
                    .map(|[_, s, p]| (s, p))
                    .collect();
                let got: i64 = q(c, &args);
                assert_eq!(
                    got,
                    live.len() as i64,
                    "step {step} (seed {seed}): {args:?}"
                );
                for (scope, values) in model.scopes.iter_mut() {
                    if fs.is_none_or(|f| f == scope) {
                        values.retain(|_, (part, _)| fp.is_some_and(|f| f != part));
                    }
                }
            }
            _ => {
                let fs = rng.gen_bool(0.5).then_some(s.as_str());
                let fp = rng.gen_bool(0.5).then_some(p.as_str());
                check_reads(c, &model, fs, fp, &format!("step {step} (seed {seed})"));
                // HAS takes an ADD's arguments; the partition does not matter.
                let mut has_args = vec!["ULIST.HAS", "m", "s", &s, "v", &v];
                if rng.gen_bool(0.5) {
                    has_args.extend(["p", &p]);
                }
                let has: i64 = q(c, &has_args);
                assert_eq!(has, model.live_at(&s, &v, now_ms()).is_some() as i64);
            }
        }
    }
    let check_all = |c: &mut Conn, when: &str| {
        check_reads(c, &model, None, None, when);
        for s in ["s0", "s1", "s2"] {
            check_reads(c, &model, Some(s), None, when);
        }
    };
    check_all(c, "end");
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    check_all(r, "replica");
    // Same bytes whatever the layouts, once the master reclaimed what
    // expired (its reclaim replicates).
    let same = wait_until(Duration::from_secs(10), || {
        wait_for_sync(&master, &replica);
        q::<Vec<u8>>(c, &["DUMP", "m"]) == q::<Vec<u8>>(r, &["DUMP", "m"])
    });
    assert!(same, "master and replica DUMPs differ");
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    master.restart();
    check_all(&mut master.conn(), "after AOF rewrite and restart");
    // With AOF on a restart loads the AOF: DEBUG RELOAD saves and loads the RDB.
    q_ok(&mut master.conn(), &["DEBUG", "RELOAD"]);
    check_all(&mut master.conn(), "after RDB reload");
}

fn check_reads(c: &mut Conn, model: &Model, fs: Option<&str>, fp: Option<&str>, when: &str) {
    let mut args = vec!["ULIST.DATA", "m"];
    args.extend(filter_args(fs, fp));
    let got: Vec<[String; 3]> = rows(c, &args)
        .into_iter()
        .map(|r| {
            let f = |i: usize| String::from_utf8(r[i].1.clone()).unwrap();
            [f(0), f(1), f(2)]
        })
        .collect();
    let mut want = model.rows(fs, fp, now_ms());
    // Rows come by scope, then value.
    want.sort_by(|a, b| (&a[1], &a[0]).cmp(&(&b[1], &b[0])));
    assert_eq!(got, want, "{when}: {args:?}");
    args[0] = "ULIST.PARTITIONS";
    let parts: Vec<(String, String)> = rows(c, &args)
        .into_iter()
        .map(|r| {
            let f = |i: usize| String::from_utf8(r[i].1.clone()).unwrap();
            (f(0), f(1))
        })
        .collect();
    let want: BTreeSet<(String, String)> = want.into_iter().map(|[_, s, p]| (s, p)).collect();
    assert_eq!(
        parts,
        want.into_iter().collect::<Vec<_>>(),
        "{when}: {args:?}"
    );
}

// ---------------------------------------------------------------- replication and persistence

/// A mixed workload: adds with and without AT, expiring and not, values that
/// expire at once, deletes.
fn workload(c: &mut Conn, key: &str, round: u32) {
    let now = now_ms();
    let past = (now - DAY_MS).to_string();
    for i in 0..40 {
        let (v, d) = (
            format!("u{}:{round}", i % 17),
            format!("2024-01-{:02}", i % 5),
        );
        let _: i64 = q(c, &["ULIST.ADD", key, "v", &v, "s", "2024-01", "p", &d]);
        if i % 3 == 0 {
            let _: i64 = q(
                c,
                &[
                    "ULIST.ADD",
                    key,
                    "v",
                    &v,
                    "s",
                    "2024-02",
                    "p",
                    &d,
                    "EXPIRE",
                    "3600",
                ],
            );
        }
        if i % 4 == 0 {
            // Expired on arrival: reclaimed in the background.
            let _: i64 = q(
                c,
                &[
                    "ULIST.ADD",
                    key,
                    "AT",
                    &past,
                    "EXPIRE",
                    "5",
                    "v",
                    &v,
                    "s",
                    "old",
                    "p",
                    &d,
                ],
            );
        }
        if i % 5 == 0 {
            let _: i64 = q(
                c,
                &["ULIST.ADD", key, "NEVER", "v", &v, "s", "2024-03", "p", &d],
            );
        }
    }
    let _: i64 = q(c, &["ULIST.DEL", key, "s", "2024-01", "p", "2024-01-03"]);
}

fn create(c: &mut Conn, key: &str) {
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            key,
            "VALUE",
            "v",
            "SCOPE",
            "s",
            "PARTITION",
            "p",
            "EXPIRE",
            "86400",
        ],
    );
}

/// Values each round of `workload` adds already expired.
const EXPIRED_PER_ROUND: i64 = 10;

/// Waits until background reclaim has removed `total` values on this server.
fn wait_reclaimed(c: &mut Conn, total: i64) {
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(c, "ulist_expired_values") >= total
    });
    assert!(
        done,
        "reclaimed {} of {total}",
        recipes_info(c, "ulist_expired_values")
    );
}

#[test]
fn replica_aof_and_rdb_reproduce_the_master() {
    let mut master = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let c = &mut master.conn();
    create(c, "a");
    workload(c, "a", 0);
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    workload(c, "a", 1);
    // A write with many names and no AT: its effect is replicated with every
    // argument (this once lost all past the 8th).
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "wide",
            "VALUE",
            "a",
            "b",
            "c",
            "d",
            "e",
            "SCOPE",
            "f",
            "g",
            "PARTITION",
            "h",
            "i",
        ],
    );
    let wide = [
        "ULIST.ADD",
        "wide",
        "a",
        "1",
        "b",
        "2",
        "c",
        "3",
        "d",
        "4",
        "e",
        "5",
        "f",
        "6",
        "g",
        "7",
        "h",
        "8",
        "i",
        "9",
    ];
    assert_eq!(q::<i64>(c, &wide), 1);
    wait_reclaimed(c, 2 * EXPIRED_PER_ROUND);
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    assert_same_data(c, r);
    assert_eq!(
        rows(r, &["ULIST.DATA", "wide"]),
        rows(c, &["ULIST.DATA", "wide"])
    );
    assert_eq!(rows(r, &["ULIST.DATA", "wide"]).len(), 1);
    assert_eq!(rows(r, &["ULIST.DATA", "a"]), rows(c, &["ULIST.DATA", "a"]));
    assert!(
        recipes_info(r, "ulist_expired_values") > 0,
        "the replica applied the reclaim"
    );
    // AOF: rewrite mid-way, then more writes, then restart.
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    workload(c, "a", 2);
    wait_reclaimed(c, 3 * EXPIRED_PER_ROUND);
    let before = dump_all(c);
    let data = rows(c, &["ULIST.DATA", "a"]);
    master.restart();
    let c = &mut master.conn();
    assert_eq!(dump_all(c), before);
    assert_eq!(rows(c, &["ULIST.DATA", "a"]), data);
    // RDB (with AOF on a restart loads the AOF: DEBUG RELOAD saves and
    // loads the RDB).
    q_ok(c, &["DEBUG", "RELOAD"]);
    assert_eq!(dump_all(c), before);
    assert_eq!(rows(c, &["ULIST.DATA", "a"]), data);
}

#[test]
fn dump_restore_rename_copy_and_memory() {
    let srv = Server::start();
    let c = &mut srv.conn();
    create(c, "a");
    workload(c, "a", 0);
    wait_reclaimed(c, EXPIRED_PER_ROUND);
    let data = rows(c, &["ULIST.DATA", "a"]);
    assert!(!data.is_empty());
    let mem = memory(c, "a");
    assert!(mem > 1000, "MEMORY USAGE {mem}");
    let payload: Vec<u8> = q(c, &["DUMP", "a"]);
    let _: String = redis::cmd("RESTORE")
        .arg("b")
        .arg(0)
        .arg(&payload)
        .query(c)
        .unwrap();
    assert_eq!(rows(c, &["ULIST.DATA", "b"]), data);
    let _: i64 = q(c, &["COPY", "a", "c"]);
    assert_eq!(rows(c, &["ULIST.DATA", "c"]), data);
    // Copies are independent.
    assert_eq!(
        q::<i64>(c, &["ULIST.DEL", "c"]),
        q::<i64>(c, &["ULIST.DEL", "b"])
    );
    assert_eq!(rows(c, &["ULIST.DATA", "a"]), data);
    q_ok(c, &["RENAME", "a", "d"]);
    assert_eq!(rows(c, &["ULIST.DATA", "d"]), data);
    assert_eq!(memory(c, "d"), mem);
    let _: i64 = q(c, &["EXPIRE", "d", "1000"]);
    assert!(q::<i64>(c, &["TTL", "d"]) > 0);
    let _: i64 = q(c, &["UNLINK", "d"]);
    assert_eq!(q::<i64>(c, &["EXISTS", "d"]), 0);
}

/// Values that expire after the key moved (RENAME, MOVE, SWAPDB, COPY,
/// RESTORE, a restart) are still reclaimed in the background.
#[test]
fn reclaim_follows_the_key() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    let soon = || (now_ms() + 1_500).to_string();
    let fill = |c: &mut Conn, key: &str, at: &str| {
        create(c, key);
        for i in 0..50 {
            let v = i.to_string();
            let _: i64 = q(
                c,
                &["ULIST.ADD", key, "PXAT", at, "v", &v, "s", "x", "p", "y"],
            );
        }
        let _: i64 = q(
            c,
            &["ULIST.ADD", key, "NEVER", "v", "keep", "s", "x", "p", "y"],
        );
    };
    let at = soon();
    for k in ["r", "m", "w", "cp", "rs"] {
        fill(c, k, &at);
    }
    q_ok(c, &["RENAME", "r", "r2"]);
    let _: i64 = q(c, &["MOVE", "m", "3"]);
    q_ok(c, &["SWAPDB", "0", "5"]);
    q_ok(c, &["SELECT", "5"]);
    let _: i64 = q(c, &["COPY", "cp", "cp2"]);
    let payload: Vec<u8> = q(c, &["DUMP", "rs"]);
    let _: String = redis::cmd("RESTORE")
        .arg("rs2")
        .arg(0)
        .arg(&payload)
        .query(c)
        .unwrap();
    // r2, m, w, cp, cp2, rs, rs2.
    let expected = 50 * 7;
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(c, "ulist_expired_values") == expected
    });
    assert!(
        done,
        "reclaimed {} of {expected}",
        recipes_info(c, "ulist_expired_values")
    );
    for (db, key) in [
        ("5", "r2"),
        ("3", "m"),
        ("5", "w"),
        ("5", "cp"),
        ("5", "cp2"),
        ("5", "rs"),
        ("5", "rs2"),
    ] {
        q_ok(c, &["SELECT", db]);
        assert_eq!(rows(c, &["ULIST.DATA", key]).len(), 1, "{db}/{key}");
        // Only the NEVER value is left stored: DEL finds one partition.
    }
    // After a restart the loaded keys are scheduled again.
    q_ok(c, &["SELECT", "0"]);
    let at = soon();
    fill(c, "after", &at);
    srv.restart_with_save();
    let c = &mut srv.conn();
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(c, "ulist_expired_values") == 50
    });
    assert!(
        done,
        "after restart: {}",
        recipes_info(c, "ulist_expired_values")
    );
    // FLUSHALL leaves nothing behind; new lists work as before.
    q_ok(c, &["FLUSHALL"]);
    fill(c, "fresh", &soon());
    assert!(wait_until(Duration::from_secs(10), || recipes_info(
        c,
        "ulist_expired_values"
    ) == 100));
}

/// 200,000 values with `EXPIRE 1` in a list nobody touches afterwards: its
/// memory comes back on the master and the replica, and the replica answers
/// exactly as the master.
#[test]
fn reclaims_200k_values_on_master_and_replica() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "big",
            "VALUE",
            "user",
            "PARTITION",
            "day",
            "EXPIRE",
            "1",
        ],
    );
    let _: i64 = q(
        c,
        &["ULIST.ADD", "big", "NEVER", "user", "stays", "day", "d0"],
    );
    // All 200,000 land before the first expires (the adds take a while on
    // a loaded machine), then expire within the same millisecond.
    let at = (now_ms() + 8_000).to_string();
    for chunk in 0..20 {
        let mut pipe = redis::pipe();
        for i in 0..10_000 {
            let user = format!("user:{}", chunk * 10_000 + i);
            let day = format!("d{}", i % 30);
            pipe.cmd("ULIST.ADD")
                .arg("big")
                .arg("AT")
                .arg(&at)
                .arg("user")
                .arg(user)
                .arg("day")
                .arg(day)
                .ignore();
        }
        let _: () = pipe.query(c).unwrap();
    }
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    let (full_m, full_r) = (memory(c, "big"), memory(r, "big"));
    assert!(full_m > 5_000_000, "{full_m}");
    let done = wait_until(Duration::from_secs(60), || {
        recipes_info(c, "ulist_expired_values") == 200_000
    });
    assert!(
        done,
        "reclaimed {}",
        recipes_info(c, "ulist_expired_values")
    );
    wait_for_sync(&master, &replica);
    let (after_m, after_r) = (memory(c, "big"), memory(r, "big"));
    assert!(after_m < full_m / 50, "master {full_m} -> {after_m}");
    assert!(after_r < full_r / 50, "replica {full_r} -> {after_r}");
    assert_eq!(recipes_info(r, "ulist_expired_values"), 200_000);
    assert_eq!(
        rows(r, &["ULIST.DATA", "big"]),
        rows(c, &["ULIST.DATA", "big"])
    );
    assert_eq!(
        rows(r, &["ULIST.PARTITIONS", "big"]),
        want(&[&[("day", "d0")]])
    );
    assert_same_data(c, r);
    assert!(!master.log().contains("panic") && !replica.log().contains("panic"));
}

/// A promoted replica takes over background reclaim.
#[test]
fn promoted_replica_reclaims() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    create(c, "l");
    let at = (now_ms() + 2_000).to_string();
    for i in 0..20 {
        let v = i.to_string();
        let _: i64 = q(
            c,
            &["ULIST.ADD", "l", "PXAT", &at, "v", &v, "s", "x", "p", "y"],
        );
    }
    wait_for_sync(&master, &replica);
    drop(master);
    let r = &mut replica.conn();
    q_ok(r, &["REPLICAOF", "NO", "ONE"]);
    assert!(wait_until(Duration::from_secs(10), || recipes_info(
        r,
        "ulist_expired_values"
    ) == 20));
    assert_eq!(rows(r, &["ULIST.PARTITIONS", "l"]), Vec::<Row>::new());
}
