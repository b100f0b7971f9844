//! Acceptance tests of the HCOUNTER family (partitioned, grouped counters
//! with TTL, FLOAT counts and unique-event counting) against a real
//! redis-server, as `/work/hcounter-contract.md` pins it.
//!
//! The model test takes its seed from `HCOUNTER_SEED`, the FLOAT test from
//! `HCOUNTER_FLOAT_SEED` (both printed).
mod common;
use common::*;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use redis::Value;
use std::collections::BTreeMap;
use std::time::Duration;

type Conn = redis::Connection;

const HOUR_MS: i64 = 3_600_000;

/// One entry of a row: a name's value, or an integer count.
#[derive(Clone, Debug, PartialEq)]
enum V {
    B(Vec<u8>),
    I(i64),
}

/// A row of DATA or PARTITIONS: (name, value) pairs in reply order.
type Row = Vec<(Vec<u8>, V)>;

fn bytes_of(v: &Value) -> Vec<u8> {
    match v {
        Value::BulkString(b) => b.clone(),
        Value::SimpleString(s) => s.as_bytes().to_vec(),
        other => panic!("not a string: {other:?}"),
    }
}

fn entry_of(v: &Value) -> V {
    match v {
        Value::Int(n) => V::I(*n),
        Value::BulkString(b) => V::B(b.clone()),
        other => panic!("a row value must be an integer or a bulk string: {other:?}"),
    }
}

/// Rows of a DATA/PARTITIONS reply: flat name/value arrays (RESP2) or maps
/// (RESP3).
fn rows_of(v: Value) -> Vec<Row> {
    let Value::Array(rows) = v else {
        panic!("rows: {v:?}")
    };
    rows.iter()
        .map(|row| match row {
            Value::Array(flat) => {
                assert!(flat.len().is_multiple_of(2), "odd row {flat:?}");
                flat.chunks(2)
                    .map(|p| (bytes_of(&p[0]), entry_of(&p[1])))
                    .collect()
            }
            Value::Map(pairs) => pairs
                .iter()
                .map(|(k, v)| (bytes_of(k), entry_of(v)))
                .collect(),
            other => panic!("a row must be an array or a map: {other:?}"),
        })
        .collect()
}

fn rows(c: &mut Conn, args: &[&str]) -> Vec<Row> {
    rows_of(q(c, args))
}

fn rows_bin(c: &mut Conn, args: &[&[u8]]) -> Vec<Row> {
    rows_of(q_bin(c, args))
}

fn pairs_of(pairs: &[(&str, &str)]) -> Row {
    pairs
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), V::B(v.as_bytes().to_vec())))
        .collect()
}

/// A DATA row of an integer counter: the pairs, then `value n`.
fn row(pairs: &[(&str, &str)], n: i64) -> Row {
    let mut r = pairs_of(pairs);
    r.push((b"value".to_vec(), V::I(n)));
    r
}

/// A DATA row of a FLOAT counter: the pairs, then `value "text"`.
fn frow(pairs: &[(&str, &str)], text: &str) -> Row {
    let mut r = pairs_of(pairs);
    r.push((b"value".to_vec(), V::B(text.as_bytes().to_vec())));
    r
}

/// A PARTITIONS row.
fn prow(pairs: &[(&str, &str)]) -> Row {
    pairs_of(pairs)
}

fn no_rows() -> Vec<Row> {
    Vec::new()
}

/// A FLOAT count reply: must be a bulk string.
fn float_reply(c: &mut Conn, args: &[&str]) -> String {
    match q::<Value>(c, args) {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("{args:?}: a FLOAT count is a bulk string, got {other:?}"),
    }
}

/// An integer count reply: must be an integer.
fn int_reply(c: &mut Conn, args: &[&str]) -> i64 {
    match q::<Value>(c, args) {
        Value::Int(n) => n,
        other => panic!("{args:?}: a count is an integer, got {other:?}"),
    }
}

/// Waits until this server's background reclaim has removed `total`
/// partitions (INFO `hcounter_expired_partitions`).
fn wait_reclaimed(c: &mut Conn, total: i64, ctx: &str) {
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(c, "hcounter_expired_partitions") >= total
    });
    assert!(
        done,
        "{ctx}: reclaimed {} of {total} partitions",
        recipes_info(c, "hcounter_expired_partitions")
    );
}

/// A master with an AOF (fsync always) whose rewrites write commands, not
/// an RDB preamble: BGREWRITEAOF then goes through the module's AOF rewrite.
fn aof_master() -> Server {
    Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", "no")
        .start()
}

/// BGREWRITEAOF, its base as commands (the module's AOF rewrite) or as an
/// RDB preamble (the module's RDB save, loaded at the next start).
fn rewrite_aof(srv: &Server, rdb_preamble: bool) {
    let c = &mut srv.conn();
    let preamble = if rdb_preamble { "yes" } else { "no" };
    q_ok(c, &["CONFIG", "SET", "aof-use-rdb-preamble", preamble]);
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(srv);
}

/// The commands of the AOF base file a rewrite without preamble made.
fn aof_base(srv: &Server) -> String {
    let dir = srv.dir.join("appendonlydir");
    let base = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".base.aof"))
        .unwrap_or_else(|| panic!("no command-form base file in {}", dir.display()));
    String::from_utf8_lossy(&std::fs::read(base).unwrap()).into_owned()
}

/// How many times the command `name` (any case) appears in an AOF text.
fn aof_count(aof: &str, name: &str) -> usize {
    let bulk = format!("${}\r\n{}\r\n", name.len(), name.to_uppercase());
    aof.to_uppercase().matches(&bulk).count()
}

// ---------------------------------------------------------------- the gem's examples

/// The gem's simple counter: `5.times { counter.increment }`, then
/// `partitions => [{}]` and `data => [{:value=>5}]`.
#[test]
fn gem_simple_counter() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["HCOUNTER.CREATE", "simple_counter"]);
    assert_eq!(rows(c, &["HCOUNTER.DATA", "simple_counter"]), no_rows());
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "simple_counter"]),
        no_rows()
    );
    let counts: Vec<i64> = (0..5)
        .map(|_| int_reply(c, &["HCOUNTER.INCR", "simple_counter"]))
        .collect();
    assert_eq!(counts, [1, 2, 3, 4, 5]);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "simple_counter"]),
        vec![prow(&[])]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "simple_counter"]),
        vec![row(&[], 5)]
    );
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "simple_counter"]), 5);
    assert_eq!(q::<String>(c, &["TYPE", "simple_counter"]), "recipesHC");
}

/// The gem's pages by day: GROUP company_id, PARTITION date.
#[test]
fn gem_pages_by_day() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "pages_by_day";
    // Options in any order: GROUP before PARTITION.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "GROUP",
            "company_id",
            "PARTITION",
            "date",
        ],
    );
    let mut replies = Vec::new();
    for (times, company, date) in [
        (2, "1", "2013-08-01"),
        (3, "2", "2013-08-01"),
        (1, "3", "2013-08-02"),
    ] {
        for _ in 0..times {
            replies.push(int_reply(
                c,
                &["HCOUNTER.INCR", k, "company_id", company, "date", date],
            ));
        }
    }
    assert_eq!(replies, [1, 2, 1, 2, 3, 1]);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![
            prow(&[("date", "2013-08-01")]),
            prow(&[("date", "2013-08-02")])
        ]
    );
    // The gem's rows lack the partition names; ours carry them first.
    let r = |date: &str, company: &str, n: i64| row(&[("date", date), ("company_id", company)], n);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            r("2013-08-01", "1", 2),
            r("2013-08-01", "2", 3),
            r("2013-08-02", "3", 1)
        ]
    );
    // delete_partitions!(:date => '2013-08-01') => [1]
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k, "date", "2013-08-01"]), 1);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![prow(&[("date", "2013-08-02")])]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![r("2013-08-02", "3", 1)]
    );
    // delete_all! => [1]
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k]), 1);
    assert_eq!(rows(c, &["HCOUNTER.DATA", k]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", k]), no_rows());
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k]), 0);
    // The key and its schema stay.
    assert!(exists(c, k));
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.INCR", k, "date", "2013-08-01", "company_id", "1"]
        ),
        1
    );
}

/// The gem's pages by day and city: two-level partitions (date, company_id),
/// company_id also a group name; filters; deleting a partition.
#[test]
fn gem_pages_by_day_city() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "pages_by_day_city";
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "PARTITION",
            "date",
            "company_id",
            "GROUP",
            "company_id",
            "city_id",
        ],
    );
    let mut replies = Vec::new();
    for (times, date, company, city) in [
        (2, "2013-08-01", "1", "11"),
        (1, "2013-08-01", "1", "12"),
        (4, "2013-08-01", "2", "10"),
        (3, "2013-08-02", "1", "15"),
    ] {
        for _ in 0..times {
            replies.push(int_reply(
                c,
                &[
                    "HCOUNTER.INCR",
                    k,
                    "date",
                    date,
                    "company_id",
                    company,
                    "city_id",
                    city,
                ],
            ));
        }
    }
    assert_eq!(replies, [1, 2, 1, 1, 2, 3, 4, 1, 2, 3]);
    let p = |date: &str, company: &str| prow(&[("date", date), ("company_id", company)]);
    // The gem lists 2013-08-02 first (KEYS order); ours are bytewise.
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![
            p("2013-08-01", "1"),
            p("2013-08-01", "2"),
            p("2013-08-02", "1")
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k, "date", "2013-08-01"]),
        vec![p("2013-08-01", "1"), p("2013-08-01", "2")]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k, "company_id", "1"]),
        vec![p("2013-08-01", "1"), p("2013-08-02", "1")]
    );
    // Rows carry date (a partition name the gem leaves out), company_id once
    // (partition and group name), city_id, value; the gem lists the
    // 2013-08-02 row first.
    let r = |date: &str, company: &str, city: &str, n: i64| {
        row(
            &[("date", date), ("company_id", company), ("city_id", city)],
            n,
        )
    };
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            r("2013-08-01", "1", "11", 2),
            r("2013-08-01", "1", "12", 1),
            r("2013-08-01", "2", "10", 4),
            r("2013-08-02", "1", "15", 3),
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k, "date", "2013-08-01"]),
        vec![
            r("2013-08-01", "1", "11", 2),
            r("2013-08-01", "1", "12", 1),
            r("2013-08-01", "2", "10", 4),
        ]
    );
    assert_eq!(
        rows(
            c,
            &["HCOUNTER.DATA", k, "company_id", "2", "date", "2013-08-01"]
        ),
        vec![r("2013-08-01", "2", "10", 4)]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k, "date", "2013-08-03"]),
        no_rows()
    );
    let get = |c: &mut Conn, date: &str, company: &str, city: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.GET",
                k,
                "city_id",
                city,
                "date",
                date,
                "company_id",
                company,
            ],
        )
    };
    assert_eq!(get(c, "2013-08-01", "1", "12"), 1);
    assert_eq!(get(c, "2013-08-02", "1", "15"), 3);
    assert_eq!(get(c, "2013-08-02", "1", "11"), 0);
    // Deleting one partition of the two-level scheme.
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.DEL", k, "date", "2013-08-01", "company_id", "1"]
        ),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![p("2013-08-01", "2"), p("2013-08-02", "1")]
    );
    assert_eq!(get(c, "2013-08-01", "1", "11"), 0);
    assert_eq!(
        int_reply(c, &["HCOUNTER.DEL", k, "company_id", "1"]),
        1,
        "only 2013-08-02/1 is left with company 1"
    );
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k, "company_id", "1"]), 0);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![r("2013-08-01", "2", "10", 4)]
    );
}

fn incr_company_user(
    c: &mut Conn,
    k: &str,
    company: &str,
    user: &str,
    date: &str,
    month: &str,
) -> i64 {
    int_reply(
        c,
        &[
            "HCOUNTER.INCR",
            k,
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

/// The gem's UniqueHashCounter: unique (company_id, user_id) per
/// start_month_date, counted per company into daily partitions.
#[test]
fn gem_unique_company_users_by_month() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "company_users_by_month";
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "PARTITION",
            "date",
            "GROUP",
            "company_id",
            "UNIQUE",
            "company_id",
            "user_id",
            "SCOPE",
            "start_month_date",
        ],
    );
    let mut replies = Vec::new();
    for (times, company, user, date, month) in [
        (2, "1", "11", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-09-05", "2013-09-01"),
        (3, "2", "11", "2013-08-10", "2013-08-01"),
        (1, "2", "22", "2013-08-11", "2013-08-01"),
    ] {
        for _ in 0..times {
            replies.push(incr_company_user(c, k, company, user, date, month));
        }
    }
    // A repeat does not count and replies the cell's current count.
    assert_eq!(replies, [1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]);
    // The gem's hashes, as rows (with the partition name first).
    let r = |date: &str, company: &str, n: i64| row(&[("date", date), ("company_id", company)], n);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            r("2013-08-10", "1", 2),
            r("2013-08-10", "2", 1),
            r("2013-08-11", "2", 1),
            r("2013-09-05", "1", 1),
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![
            prow(&[("date", "2013-08-10")]),
            prow(&[("date", "2013-08-11")]),
            prow(&[("date", "2013-09-05")]),
        ]
    );
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.GET", k, "date", "2013-08-10", "company_id", "1"]
        ),
        2
    );
}

// ---------------------------------------------------------------- rows, counts and names

/// RESP2 rows are flat name/value arrays, RESP3 rows maps with the same
/// pairs in the same order; a counter without names has one row `value N`
/// and one empty partition row once counted, none before.
#[test]
fn row_shapes_under_resp2_and_resp3() {
    let srv = Server::start();
    let c2 = &mut srv.conn();
    let c3 = &mut srv.conn_resp3();
    q_ok(
        c2,
        &["HCOUNTER.CREATE", "k", "PARTITION", "p", "GROUP", "g", "p"],
    );
    q_ok(c2, &["HCOUNTER.CREATE", "f", "GROUP", "g", "FLOAT"]);
    q_ok(c2, &["HCOUNTER.CREATE", "none"]);
    for c in [&mut *c2, &mut *c3] {
        assert_eq!(rows(c, &["HCOUNTER.DATA", "none"]), no_rows());
        assert_eq!(
            q::<Value>(c, &["HCOUNTER.PARTITIONS", "none"]),
            Value::Array(vec![])
        );
    }
    assert_eq!(
        int_reply(c3, &["HCOUNTER.INCRBY", "k", "3", "p", "a", "g", "x"]),
        3
    );
    assert_eq!(
        float_reply(c3, &["HCOUNTER.INCRBY", "f", "2.5", "g", "x"]),
        "2.5"
    );
    assert_eq!(int_reply(c3, &["HCOUNTER.INCR", "none"]), 1);

    // RESP2: flat arrays, the count an integer (a bulk string for FLOAT).
    let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.DATA", "k"]),
        Value::Array(vec![Value::Array(vec![
            b("p"),
            b("a"),
            b("g"),
            b("x"),
            b("value"),
            Value::Int(3)
        ])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.PARTITIONS", "k"]),
        Value::Array(vec![Value::Array(vec![b("p"), b("a")])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.DATA", "f"]),
        Value::Array(vec![Value::Array(vec![
            b("g"),
            b("x"),
            b("value"),
            b("2.5")
        ])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.DATA", "none"]),
        Value::Array(vec![Value::Array(vec![b("value"), Value::Int(1)])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.PARTITIONS", "none"]),
        Value::Array(vec![Value::Array(vec![])])
    );
    // RESP3: maps.
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.DATA", "k"]),
        Value::Array(vec![Value::Map(vec![
            (b("p"), b("a")),
            (b("g"), b("x")),
            (b("value"), Value::Int(3))
        ])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.PARTITIONS", "k"]),
        Value::Array(vec![Value::Map(vec![(b("p"), b("a"))])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.DATA", "f"]),
        Value::Array(vec![Value::Map(vec![
            (b("g"), b("x")),
            (b("value"), b("2.5"))
        ])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.DATA", "none"]),
        Value::Array(vec![Value::Map(vec![(b("value"), Value::Int(1))])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.PARTITIONS", "none"]),
        Value::Array(vec![Value::Map(vec![])])
    );
    assert_eq!(float_reply(c3, &["HCOUNTER.GET", "f", "g", "x"]), "2.5");
    assert_eq!(float_reply(c3, &["HCOUNTER.GET", "f", "g", "y"]), "0");
    assert_eq!(int_reply(c3, &["HCOUNTER.GET", "k", "g", "y", "p", "a"]), 0);
    // Both protocols read the same rows.
    for k in ["k", "f", "none"] {
        assert_eq!(
            rows(c2, &["HCOUNTER.DATA", k]),
            rows(c3, &["HCOUNTER.DATA", k])
        );
    }
}

/// Names are case-sensitive bytes, keywords case-insensitive; `name value`
/// pairs and AT come in any order.
#[test]
fn names_are_exact_keywords_any_case() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "hcounter.create",
            "k",
            "group",
            "a",
            "A",
            "ttl",
            "3600",
            "partition",
            "day",
            "unique",
            "u",
            "scope",
            "s",
        ],
    );
    let at = now_ms().to_string();
    let incr = |c: &mut Conn, args: &[&str]| {
        let mut full = vec!["HCOUNTER.INCR", "k"];
        full.extend_from_slice(args);
        int_reply(c, &full)
    };
    assert_eq!(
        incr(c, &["a", "1", "A", "2", "day", "d", "u", "x", "s", "s1"]),
        1
    );
    assert_eq!(
        incr(
            c,
            &["A", "1", "a", "2", "At", &at, "s", "s1", "u", "y", "day", "d"]
        ),
        1
    );
    assert_eq!(
        incr(
            c,
            &["u", "z", "s", "s1", "day", "d", "a", "1", "at", &at, "A", "2"]
        ),
        2
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "k"]),
        vec![
            row(&[("day", "d"), ("a", "1"), ("A", "2")], 2),
            row(&[("day", "d"), ("a", "2"), ("A", "1")], 1),
        ]
    );
    // Values are any bytes, keywords included.
    assert_eq!(
        incr(
            c,
            &["day", "AT", "a", "value", "A", "ttl", "u", "at", "s", "UNIQUE"]
        ),
        1
    );
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.GET", "k", "A", "ttl", "day", "AT", "a", "value"]
        ),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "k", "day", "AT"]),
        vec![prow(&[("day", "AT")])]
    );
    assert_eq!(
        expect_err(c, &cmd(&["HCOUNTER.GET", "k", "A", "1", "day", "d", "a"])),
        "ERR name 'a' needs a value"
    );
    let e = expect_err(
        c,
        &cmd(&["HCOUNTER.GET", "k", "day", "d", "a", "1", "a", "2"]),
    );
    assert_eq!(e, "ERR name 'a' given more than once");
    let e = expect_err(
        c,
        &cmd(&["HCOUNTER.GET", "k", "DAY", "d", "a", "1", "A", "2"]),
    );
    assert_eq!(e, "ERR unknown name 'DAY'");
}

/// Integer counts: INCRBY 0 creates the cell, negatives, the 64-bit limits;
/// an overflow is refused and changes nothing.
#[test]
fn integer_counts_and_overflow() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["HCOUNTER.CREATE", "k", "GROUP", "g"]);
    let incrby =
        |c: &mut Conn, by: &str, g: &str| int_reply(c, &["HCOUNTER.INCRBY", "k", by, "g", g]);
    assert_eq!(incrby(c, "0", "zero"), 0);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "k"]),
        vec![row(&[("g", "zero")], 0)]
    );
    assert_eq!(incrby(c, "-5", "neg"), -5);
    assert_eq!(int_reply(c, &["HCOUNTER.INCR", "k", "g", "neg"]), -4);
    assert_eq!(incrby(c, "9223372036854775807", "max"), i64::MAX);
    assert_eq!(incrby(c, "-9223372036854775808", "min"), i64::MIN);
    assert_eq!(incrby(c, "9223372036854775807", "neg"), i64::MAX - 4);
    let before = dump_all(c);
    let data = rows(c, &["HCOUNTER.DATA", "k"]);
    for args in [
        &["HCOUNTER.INCR", "k", "g", "max"][..],
        &["HCOUNTER.INCRBY", "k", "1", "g", "max"],
        &["HCOUNTER.INCRBY", "k", "9223372036854775807", "g", "max"],
        &["HCOUNTER.INCRBY", "k", "-1", "g", "min"],
        &["HCOUNTER.INCRBY", "k", "-9223372036854775808", "g", "min"],
        &["HCOUNTER.INCRBY", "k", "5", "g", "neg"],
    ] {
        assert_eq!(
            expect_err(c, &cmd(args)),
            "ERR increment would overflow the count",
            "{args:?}"
        );
    }
    assert_eq!(dump_all(c), before);
    assert_eq!(rows(c, &["HCOUNTER.DATA", "k"]), data);
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "k", "g", "max"]), i64::MAX);
    assert_eq!(incrby(c, "-1", "max"), i64::MAX - 1);
    assert_eq!(incrby(c, "1", "min"), i64::MIN + 1);
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "k", "g", "none"]), 0);
    // No PARTITION names: one partition, an empty row.
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", "k"]), vec![prow(&[])]);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "k"]),
        vec![
            row(&[("g", "max")], i64::MAX - 1),
            row(&[("g", "min")], i64::MIN + 1),
            row(&[("g", "neg")], i64::MAX - 4),
            row(&[("g", "zero")], 0),
        ]
    );
}

// ---------------------------------------------------------------- errors

/// Every error of the contract, each naming its argument; none changes
/// anything.
#[test]
fn errors_name_the_argument_and_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "c",
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "UNIQUE",
            "user",
            "SCOPE",
            "month",
            "TTL",
            "3600",
        ],
    );
    let counted = ["day", "d", "page", "p", "user", "u", "month", "m"];
    let mut args = vec!["HCOUNTER.INCR", "c"];
    args.extend(counted);
    assert_eq!(int_reply(c, &args), 1);
    q_ok(c, &["HCOUNTER.CREATE", "i", "GROUP", "g"]);
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.INCRBY", "i", "9223372036854775807", "g", "max"]
        ),
        i64::MAX
    );
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.INCRBY", "i", "-9223372036854775808", "g", "min"]
        ),
        i64::MIN
    );
    q_ok(c, &["HCOUNTER.CREATE", "f", "GROUP", "g", "FLOAT"]);
    let big = float_reply(c, &["HCOUNTER.INCRBY", "f", "1e308", "g", "big"]);
    assert_eq!(big, format!("{}", 1e308_f64));
    q_ok(c, &["SET", "str", "x"]);
    let before = dump_all(c);
    let data: Vec<Vec<Row>> = ["c", "i", "f"]
        .iter()
        .map(|k| rows(c, &["HCOUNTER.DATA", k]))
        .collect();
    let errors_before = recipes_info(c, "hcounter_errors");
    let no_counter = "ERR no such counter; create it with HCOUNTER.CREATE";
    // (args, the exact error or a part of it)
    let cases: &[(&[&str], &str)] = &[
        // CREATE
        (&["HCOUNTER.CREATE", "c"], "ERR key already exists"),
        (
            &["HCOUNTER.CREATE", "c", "GROUP", "x"],
            "ERR key already exists",
        ),
        (
            &["HCOUNTER.CREATE", "str", "GROUP", "x"],
            "ERR key already exists",
        ),
        (&["HCOUNTER.CREATE", "n", "SCOPE", "s"], "~SCOPE"),
        (
            &["HCOUNTER.CREATE", "n", "GROUP", "g", "SCOPE", "s"],
            "~SCOPE",
        ),
        (
            &["HCOUNTER.CREATE", "n", "UNIQUE", "u", "SCOPE", "u"],
            "~'u'",
        ),
        (&["HCOUNTER.CREATE", "n", "GROUP", "value"], "~'value'"),
        (&["HCOUNTER.CREATE", "n", "PARTITION", "Value"], "~'Value'"),
        (
            &["HCOUNTER.CREATE", "n", "GROUP", "g", "UNIQUE", "VALUE"],
            "~'VALUE'",
        ),
        (&["HCOUNTER.CREATE", "n", "PARTITION", "at"], "~'at'"),
        (&["HCOUNTER.CREATE", "n", "UNIQUE", "At"], "~'At'"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "g", "g"], "~'g'"),
        (&["HCOUNTER.CREATE", "n", "PARTITION", "p", "p"], "~'p'"),
        (&["HCOUNTER.CREATE", "n", "UNIQUE", "u", "u"], "~'u'"),
        (&["HCOUNTER.CREATE", "n", "junk"], "~'junk'"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "g", "TTL", "0"], "~TTL"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "g", "TTL", "-1"], "~TTL"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "g", "TTL", "x"], "~TTL"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "g", "TTL"], "~TTL"),
        (&["HCOUNTER.CREATE", "n", "PARTITION"], "~ERR"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "TTL", "5"], "~ERR"),
        (&["HCOUNTER.CREATE", "n", "GROUP", "FLOAT"], "~ERR"),
        (&["HCOUNTER.CREATE", "n", "UNIQUE", "SCOPE", "s"], "~ERR"),
        // a counter that was never created
        (&["HCOUNTER.INCR", "n"], no_counter),
        (&["HCOUNTER.INCR", "n", "g", "1"], no_counter),
        (&["HCOUNTER.INCRBY", "n", "5", "g", "1"], no_counter),
        (&["HCOUNTER.GET", "n", "g", "1"], no_counter),
        // names
        (
            &["HCOUNTER.INCR", "c", "day", "d", "page", "p", "user", "u"],
            "ERR missing name 'month'",
        ),
        (
            &["HCOUNTER.INCR", "c", "page", "p", "user", "u", "month", "m"],
            "ERR missing name 'day'",
        ),
        (
            &[
                "HCOUNTER.INCR",
                "c",
                "day",
                "d",
                "page",
                "p",
                "user",
                "u",
                "month",
                "m",
                "x",
                "1",
            ],
            "ERR unknown name 'x'",
        ),
        (
            &[
                "HCOUNTER.INCR",
                "c",
                "day",
                "d",
                "page",
                "p",
                "user",
                "u",
                "month",
                "m",
                "day",
                "e",
            ],
            "ERR name 'day' given more than once",
        ),
        (
            &[
                "HCOUNTER.INCR",
                "c",
                "day",
                "d",
                "page",
                "p",
                "user",
                "u",
                "month",
            ],
            "ERR name 'month' needs a value",
        ),
        (
            &[
                "HCOUNTER.INCRBY",
                "c",
                "2",
                "day",
                "d",
                "page",
                "p",
                "user",
                "u",
                "mon",
                "m",
            ],
            "ERR unknown name 'mon'",
        ),
        (
            &["HCOUNTER.GET", "c", "day", "d", "page", "p", "user", "u"],
            "ERR name 'user' does not belong here",
        ),
        (
            &["HCOUNTER.GET", "c", "day", "d", "page", "p", "month", "m"],
            "ERR name 'month' does not belong here",
        ),
        (
            &["HCOUNTER.GET", "c", "day", "d"],
            "ERR missing name 'page'",
        ),
        (
            &["HCOUNTER.GET", "c", "page", "p", "day"],
            "ERR name 'day' needs a value",
        ),
        (
            &["HCOUNTER.DATA", "c", "page", "p"],
            "ERR name 'page' does not belong here",
        ),
        (
            &["HCOUNTER.DATA", "c", "day", "d", "day", "d"],
            "ERR name 'day' given more than once",
        ),
        (
            &["HCOUNTER.DATA", "c", "zzz", "1"],
            "ERR unknown name 'zzz'",
        ),
        (
            &["HCOUNTER.PARTITIONS", "c", "month", "m"],
            "ERR name 'month' does not belong here",
        ),
        (
            &["HCOUNTER.PARTITIONS", "c", "day"],
            "ERR name 'day' needs a value",
        ),
        (
            &["HCOUNTER.DEL", "c", "user", "u"],
            "ERR name 'user' does not belong here",
        ),
        (&["HCOUNTER.DEL", "c", "Day", "d"], "ERR unknown name 'Day'"),
        (
            &["HCOUNTER.DEL", "i", "g", "max"],
            "ERR name 'g' does not belong here",
        ),
        // increments
        (&["HCOUNTER.INCRBY", "i", "x", "g", "a"], "~ERR increment"),
        (&["HCOUNTER.INCRBY", "i", "1.5", "g", "a"], "~ERR increment"),
        (&["HCOUNTER.INCRBY", "i", "", "g", "a"], "~ERR increment"),
        (&["HCOUNTER.INCRBY", "i", "1e3", "g", "a"], "~ERR increment"),
        (
            &["HCOUNTER.INCRBY", "i", "9223372036854775808", "g", "a"],
            "~ERR increment",
        ),
        (
            &["HCOUNTER.INCRBY", "i", "-9223372036854775809", "g", "a"],
            "~ERR increment",
        ),
        (
            &["HCOUNTER.INCR", "i", "g", "max"],
            "ERR increment would overflow the count",
        ),
        (
            &["HCOUNTER.INCRBY", "i", "-1", "g", "min"],
            "ERR increment would overflow the count",
        ),
        (&["HCOUNTER.INCRBY", "f", "inf", "g", "a"], "~ERR increment"),
        (
            &["HCOUNTER.INCRBY", "f", "-inf", "g", "a"],
            "~ERR increment",
        ),
        (&["HCOUNTER.INCRBY", "f", "nan", "g", "a"], "~ERR increment"),
        (&["HCOUNTER.INCRBY", "f", "abc", "g", "a"], "~ERR increment"),
        (
            &["HCOUNTER.INCRBY", "f", "1.5x", "g", "a"],
            "~ERR increment",
        ),
        (&["HCOUNTER.INCRBY", "f", "", "g", "a"], "~ERR increment"),
        (
            &["HCOUNTER.INCRBY", "f", "1e308", "g", "big"],
            "ERR increment would produce NaN or Infinity",
        ),
        // AT
        (
            &[
                "HCOUNTER.INCR",
                "c",
                "AT",
                "nan",
                "day",
                "d",
                "page",
                "p",
                "user",
                "v",
                "month",
                "m",
            ],
            "~AT",
        ),
        (
            &[
                "HCOUNTER.INCR",
                "c",
                "AT",
                "1.5",
                "day",
                "d",
                "page",
                "p",
                "user",
                "v",
                "month",
                "m",
            ],
            "~AT",
        ),
        (
            &[
                "HCOUNTER.INCR",
                "c",
                "AT",
                "1",
                "AT",
                "2",
                "day",
                "d",
                "page",
                "p",
                "user",
                "v",
                "month",
                "m",
            ],
            "~AT",
        ),
        (&["HCOUNTER.INCR", "i", "g", "a", "AT"], "~ERR"),
        // internal commands, refused from a client
        (&["HCOUNTER.SET", "i", "5", "AT", "1", "g", "max"], "~ERR"),
        (&["HCOUNTER.SET", "i", "5", "AT", "1", "g", "new"], "~ERR"),
        (
            &[
                "HCOUNTER.SEEN",
                "c",
                "AT",
                "1",
                "month",
                "m",
                "user",
                "w",
                "day",
                "d",
            ],
            "~ERR",
        ),
        (&["HCOUNTER.RECLAIM", "c", "x"], "~ERR"),
        // WRONGTYPE
        (&["HCOUNTER.INCR", "str", "g", "1"], "~WRONGTYPE"),
        (&["HCOUNTER.INCRBY", "str", "1", "g", "1"], "~WRONGTYPE"),
        (&["HCOUNTER.GET", "str", "g", "1"], "~WRONGTYPE"),
        (&["HCOUNTER.DATA", "str"], "~WRONGTYPE"),
        (&["HCOUNTER.PARTITIONS", "str"], "~WRONGTYPE"),
        (&["HCOUNTER.DEL", "str"], "~WRONGTYPE"),
        (&["GET", "c"], "~WRONGTYPE"),
        // arity
        (&["HCOUNTER.CREATE"], "~wrong number of arguments"),
        (&["HCOUNTER.INCR"], "~wrong number of arguments"),
        (&["HCOUNTER.INCRBY", "i"], "~wrong number of arguments"),
        (&["HCOUNTER.GET"], "~wrong number of arguments"),
        (&["HCOUNTER.DATA"], "~wrong number of arguments"),
        (&["HCOUNTER.PARTITIONS"], "~wrong number of arguments"),
        (&["HCOUNTER.DEL"], "~wrong number of arguments"),
    ];
    let mut module_errors = 0;
    for (args, want) in cases {
        let e = expect_err(c, &cmd(args));
        assert!(
            e.starts_with("ERR ") || e.starts_with("WRONGTYPE "),
            "{args:?}: {e:?}"
        );
        match want.strip_prefix('~') {
            Some(part) => assert!(e.contains(part), "{args:?}: {e:?} lacks {part:?}"),
            None => assert_eq!(&e, want, "{args:?}"),
        }
        if args[0].starts_with("HCOUNTER.") && !e.contains("wrong number of arguments") {
            module_errors += 1;
        }
    }
    assert_eq!(dump_all(c), before, "a refused command changed data");
    for (k, want) in ["c", "i", "f"].iter().zip(&data) {
        assert_eq!(&rows(c, &["HCOUNTER.DATA", k]), want, "{k}");
    }
    assert!(!exists(c, "n"), "a refused command created a key");
    // (Arity errors may be refused by Redis itself, before the module.)
    let errors = recipes_info(c, "hcounter_errors") - errors_before;
    assert!(
        errors >= module_errors,
        "hcounter_errors counts every refused HCOUNTER call: {errors} < {module_errors}"
    );
    // A finite result after a refused one is fine.
    assert_eq!(
        float_reply(c, &["HCOUNTER.INCRBY", "f", "-1e308", "g", "big"]),
        "0"
    );
    // Reads of a missing key answer as an empty counter would, and create nothing.
    assert_eq!(rows(c, &["HCOUNTER.DATA", "n"]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.DATA", "n", "day", "d"]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", "n"]), no_rows());
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n"]), 0);
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n", "day", "d"]), 0);
    assert!(!exists(c, "n"));
    assert!(!srv.log().contains("panic"), "{}", srv.log());
}

/// Every command declares its key (COMMAND GETKEYS), so cluster clients and
/// ACL key patterns find it.
#[test]
fn keys_are_declared() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for args in [
        &["HCOUNTER.CREATE", "k1", "GROUP", "g"][..],
        &["HCOUNTER.INCR", "k1", "g", "1"],
        &["HCOUNTER.INCRBY", "k1", "2", "g", "1"],
        &["HCOUNTER.GET", "k1", "g", "1"],
        &["HCOUNTER.DATA", "k1"],
        &["HCOUNTER.PARTITIONS", "k1"],
        &["HCOUNTER.DEL", "k1"],
        &["HCOUNTER.SET", "k1", "1", "AT", "1", "g", "1"],
        &["HCOUNTER.SEEN", "k1", "AT", "1", "u", "1"],
        &["HCOUNTER.RECLAIM", "k1", "x"],
    ] {
        let mut getkeys = vec!["COMMAND", "GETKEYS"];
        getkeys.extend_from_slice(args);
        let keys: Vec<String> = q(c, &getkeys);
        assert_eq!(keys, ["k1"], "{args:?}");
    }
}

// ---------------------------------------------------------------- FLOAT

/// FLOAT counts: INCR adds 1, INCRBY takes a finite float; replies, GET and
/// DATA are bulk strings, the shortest decimal that reads back as the same
/// double, never with an exponent.
#[test]
fn float_formatting() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["HCOUNTER.CREATE", "f", "GROUP", "g", "FLOAT"]);
    let by =
        |c: &mut Conn, inc: &str, g: &str| float_reply(c, &["HCOUNTER.INCRBY", "f", inc, "g", g]);
    // The contract's examples.
    assert_eq!(by(c, "10.5", "a"), "10.5");
    assert_eq!(by(c, "0.1", "a"), "10.6");
    assert_eq!(by(c, "5.0e3", "b"), "5000");
    assert_eq!(by(c, "2.0e2", "b"), "5200");
    assert_eq!(by(c, "0.1", "c"), "0.1");
    assert_eq!(by(c, "0.2", "c"), "0.30000000000000004");
    // Negative, INCR, integral values, no exponent either way.
    assert_eq!(by(c, "-1.5", "d"), "-1.5");
    assert_eq!(float_reply(c, &["HCOUNTER.INCR", "f", "g", "d"]), "-0.5");
    assert_eq!(float_reply(c, &["HCOUNTER.INCR", "f", "g", "e"]), "1");
    assert_eq!(by(c, "1e-7", "tiny"), "0.0000001");
    assert_eq!(by(c, "1E21", "huge"), "1000000000000000000000");
    assert_eq!(by(c, "3", "int"), "3");
    assert_eq!(by(c, "0", "zero"), "0");
    assert_eq!(by(c, "0.5", "z"), "0.5");
    assert_eq!(by(c, "-0.5", "z"), "0");
    assert_eq!(by(c, "1e308", "max"), format!("{}", 1e308_f64));
    assert_eq!(
        expect_err(c, &cmd(&["HCOUNTER.INCRBY", "f", "1e308", "g", "max"])),
        "ERR increment would produce NaN or Infinity"
    );
    assert_eq!(
        float_reply(c, &["HCOUNTER.GET", "f", "g", "max"]),
        format!("{}", 1e308_f64)
    );
    assert_eq!(float_reply(c, &["HCOUNTER.GET", "f", "g", "a"]), "10.6");
    assert_eq!(float_reply(c, &["HCOUNTER.GET", "f", "g", "none"]), "0");
    // A FLOAT unique counter: a repeat replies the cell's count, "0" when
    // the cell does not exist.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "fu",
            "GROUP",
            "g",
            "FLOAT",
            "UNIQUE",
            "u",
        ],
    );
    let by_u = |c: &mut Conn, inc: &str, g: &str, u: &str| {
        float_reply(c, &["HCOUNTER.INCRBY", "fu", inc, "g", g, "u", u])
    };
    assert_eq!(by_u(c, "1.5", "a", "1"), "1.5");
    assert_eq!(by_u(c, "1.5", "a", "1"), "1.5");
    assert_eq!(by_u(c, "1.5", "b", "1"), "0");
    assert_eq!(
        float_reply(c, &["HCOUNTER.INCR", "fu", "g", "a", "u", "2"]),
        "2.5"
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "fu"]),
        vec![frow(&[("g", "a")], "2.5")]
    );
    let max = format!("{}", 1e308_f64);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "f"]),
        vec![
            frow(&[("g", "a")], "10.6"),
            frow(&[("g", "b")], "5200"),
            frow(&[("g", "c")], "0.30000000000000004"),
            frow(&[("g", "d")], "-0.5"),
            frow(&[("g", "e")], "1"),
            frow(&[("g", "huge")], "1000000000000000000000"),
            frow(&[("g", "int")], "3"),
            frow(&[("g", "max")], &max),
            frow(&[("g", "tiny")], "0.0000001"),
            frow(&[("g", "z")], "0"),
            frow(&[("g", "zero")], "0"),
        ]
    );
}

/// The FLOAT counter's DATA, as exact strings.
fn float_cells(c: &mut Conn, key: &str) -> Vec<(String, String, String)> {
    rows(c, &["HCOUNTER.DATA", key])
        .into_iter()
        .map(|r| {
            let text = |i: usize| match &r[i].1 {
                V::B(b) => String::from_utf8(b.clone()).unwrap(),
                V::I(n) => panic!("a FLOAT count is a bulk string, got {n} in {r:?}"),
            };
            (text(0), text(1), text(2))
        })
        .collect()
}

/// 2,000 random fractional increments, each reply the exact sum so far;
/// then the same strings from a real replica, after BGREWRITEAOF + restart
/// and after an RDB restart. The TTL counter is written without AT.
#[test]
fn float_sums_are_exact_on_replica_aof_and_rdb() {
    let seed = seed_from_env("HCOUNTER_FLOAT_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut master = aof_master();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    for (key, ttl) in [("f", None), ("ft", Some("86400"))] {
        let mut args = vec![
            "HCOUNTER.CREATE",
            key,
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "FLOAT",
        ];
        if let Some(ttl) = ttl {
            args.extend(["TTL", ttl]);
        }
        q_ok(c, &args);
    }
    let mut model = FloatModel {
        sums: BTreeMap::new(),
        base: now_ms(),
        seed,
    };
    for i in 0..2000 {
        model.step(c, &mut rng, i);
    }
    model.check(c, "master");
    wait_for_sync(&master, &replica);
    model.check(&mut replica.conn(), "replica");
    assert!(
        replica.recipes_info("hcounter_set_calls") > 0,
        "FLOAT increments replicate as HCOUNTER.SET"
    );
    // A rewrite as commands (HCOUNTER.SET per cell), then more increments
    // in the AOF after it.
    rewrite_aof(&master, false);
    assert_eq!(aof_count(&aof_base(&master), "HCOUNTER.SET"), 12);
    for i in 2000..2200 {
        model.step(c, &mut rng, i);
    }
    master.restart();
    model.check(&mut master.conn(), "after AOF rewrite and restart");
    // A rewrite with an RDB preamble: the RDB encoding, loaded at restart.
    let c = &mut master.conn();
    rewrite_aof(&master, true);
    for i in 2200..2300 {
        model.step(c, &mut rng, i);
    }
    master.restart();
    model.check(&mut master.conn(), "after RDB-preamble rewrite and restart");
    // DEBUG RELOAD: RDB save and load in place.
    q_ok(&mut master.conn(), &["DEBUG", "RELOAD"]);
    model.check(&mut master.conn(), "after DEBUG RELOAD");
}

/// The exact sums the FLOAT counters `f` (written with AT) and `ft` (TTL,
/// written without AT) must hold: (key, day, page) -> sum.
struct FloatModel {
    sums: BTreeMap<(&'static str, String, String), f64>,
    base: i64,
    seed: u64,
}

impl FloatModel {
    const INCS: [&'static str; 12] = [
        "0.1", "1e-3", "12.345", "-0.7", "2.5e-2", "1e-9", "7", "-3.25", "0.3", "5.0e3", "-1.5",
        "1",
    ];

    fn step(&mut self, c: &mut Conn, rng: &mut StdRng, i: usize) {
        let key = if rng.gen_bool(0.5) { "f" } else { "ft" };
        let day = format!("d:{}", rng.gen_range(0..2));
        let page = format!("/p\x00{}", rng.gen_range(0..3));
        let inc = Self::INCS[rng.gen_range(0..Self::INCS.len())];
        let at = (self.base - rng.gen_range(0..HOUR_MS)).to_string();
        let mut args = if inc == "1" && rng.gen_bool(0.5) {
            vec!["HCOUNTER.INCR", key]
        } else {
            vec!["HCOUNTER.INCRBY", key, inc]
        };
        if key == "f" {
            args.extend(["AT", &at]);
        }
        args.extend(["day", &day, "page", &page]);
        let sum = self
            .sums
            .entry((key, day.clone(), page.clone()))
            .or_insert(0.0);
        *sum += inc.parse::<f64>().unwrap();
        let got = float_reply(c, &args);
        assert_eq!(
            got,
            format!("{sum}"),
            "step {i} (seed {}): {args:?}",
            self.seed
        );
    }

    fn check(&self, c: &mut Conn, when: &str) {
        for key in ["f", "ft"] {
            let want: Vec<(String, String, String)> = self
                .sums
                .iter()
                .filter(|((k, _, _), _)| *k == key)
                .map(|((_, d, p), v)| (d.clone(), p.clone(), format!("{v}")))
                .collect();
            assert_eq!(want.len(), 6, "every cell was written");
            assert_eq!(float_cells(c, key), want, "{when} (seed {})", self.seed);
            for (d, p, v) in &want {
                assert_eq!(
                    &float_reply(c, &["HCOUNTER.GET", key, "page", p, "day", d]),
                    v,
                    "{when} (seed {})",
                    self.seed
                );
            }
        }
    }
}

// ---------------------------------------------------------------- binary values

/// Values with ':', NUL and 0xFF (and empty ones) in partition, group and
/// unique values are kept as they are: no two ever mix up.
#[test]
fn binary_values_never_mix_up() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "b",
            "PARTITION",
            "p",
            "q",
            "GROUP",
            "g",
            "UNIQUE",
            "u",
            "v",
        ],
    );
    // Pairs that a ':'-joined key would confuse, or NUL-terminated C strings.
    let pairs: [(&[u8], &[u8]); 7] = [
        (b"a:b", b"c"),
        (b"a", b"b:c"),
        (b"a\x00", b"b"),
        (b"a", b"\x00b"),
        (b"\xff", b""),
        (b"", b"\xff\x00"),
        (b"a", b"b"),
    ];
    // Each (p, q) is its own partition, each g its own cell, each (u, v) its
    // own unique tuple: all count.
    for (i, (x, y)) in pairs.iter().enumerate() {
        let n: i64 = q_bin(
            c,
            &[
                b"HCOUNTER.INCR",
                b"b",
                b"p",
                x,
                b"q",
                y,
                b"g",
                y,
                b"u",
                x,
                b"v",
                y,
            ],
        );
        assert_eq!(n, 1, "{i}: {x:?} {y:?}");
    }
    // Unique tuples: all seen now, wherever they go.
    for (x, y) in pairs {
        let n: i64 = q_bin(
            c,
            &[
                b"HCOUNTER.INCR",
                b"b",
                b"p",
                b"other",
                b"q",
                b"",
                b"g",
                b":",
                b"u",
                x,
                b"v",
                y,
            ],
        );
        assert_eq!(n, 0, "{x:?} {y:?} was counted already");
    }
    // A new tuple made of the same bytes split elsewhere counts.
    let n: i64 = q_bin(
        c,
        &[
            b"HCOUNTER.INCR",
            b"b",
            b"p",
            b"other",
            b"q",
            b"",
            b"g",
            b":",
            b"u",
            b"a:b:c",
            b"v",
            b"",
        ],
    );
    assert_eq!(n, 1);
    for (x, y) in pairs {
        let n: i64 = q_bin(c, &[b"HCOUNTER.GET", b"b", b"q", y, b"g", y, b"p", x]);
        assert_eq!(n, 1, "{x:?} {y:?}");
        let n: i64 = q_bin(c, &[b"HCOUNTER.GET", b"b", b"q", y, b"g", x, b"p", x]);
        assert_eq!(n, (x == y) as i64, "{x:?} {y:?}: cell g={x:?}");
    }
    // Rows in bytewise order of (p, q), then g.
    let mut want: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = pairs
        .iter()
        .map(|(x, y)| (x.to_vec(), y.to_vec(), y.to_vec()))
        .collect();
    want.push((b"other".to_vec(), b"".to_vec(), b":".to_vec()));
    want.sort();
    let to_row = |(x, y, g): &(Vec<u8>, Vec<u8>, Vec<u8>)| -> Row {
        vec![
            (b"p".to_vec(), V::B(x.clone())),
            (b"q".to_vec(), V::B(y.clone())),
            (b"g".to_vec(), V::B(g.clone())),
            (b"value".to_vec(), V::I(1)),
        ]
    };
    let want_rows: Vec<Row> = want.iter().map(to_row).collect();
    assert_eq!(rows(c, &["HCOUNTER.DATA", "b"]), want_rows);
    let want_parts: Vec<Row> = want.iter().map(|r| to_row(r)[..2].to_vec()).collect();
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", "b"]), want_parts);
    // Filters match whole values: a prefix of a value is another value.
    assert_eq!(rows_bin(c, &[b"HCOUNTER.DATA", b"b", b"p", b"a"]).len(), 3);
    assert_eq!(
        rows_bin(c, &[b"HCOUNTER.DATA", b"b", b"p", b"a\x00"]).len(),
        1
    );
    assert_eq!(rows_bin(c, &[b"HCOUNTER.DATA", b"b", b"p", b"a:"]).len(), 0);
    assert_eq!(
        rows_bin(c, &[b"HCOUNTER.PARTITIONS", b"b", b"q", b"\xff\x00"]),
        vec![want_parts[0].clone()]
    );
    let n: i64 = q_bin(c, &[b"HCOUNTER.DEL", b"b", b"p", b"a", b"q", b"b:c"]);
    assert_eq!(n, 1);
    let n: i64 = q_bin(
        c,
        &[b"HCOUNTER.GET", b"b", b"p", b"a:b", b"q", b"c", b"g", b"c"],
    );
    assert_eq!(n, 1, "deleting (a, b:c) left (a:b, c)");
    // Its tuple (a, b:c) is forgotten, (a:b, c) is not.
    let n: i64 = q_bin(
        c,
        &[
            b"HCOUNTER.INCR",
            b"b",
            b"p",
            b"x",
            b"q",
            b"",
            b"g",
            b"",
            b"u",
            b"a",
            b"v",
            b"b:c",
        ],
    );
    assert_eq!(n, 1);
    let n: i64 = q_bin(
        c,
        &[
            b"HCOUNTER.INCR",
            b"b",
            b"p",
            b"x",
            b"q",
            b"",
            b"g",
            b"",
            b"u",
            b"a:b",
            b"v",
            b"c",
        ],
    );
    assert_eq!(n, 1, "not counted: the cell stays at 1");
    assert_eq!(rows(c, &["HCOUNTER.DATA", "b"]).len(), want_rows.len());
}

// ---------------------------------------------------------------- TTL

/// Runs `cmds` in one MULTI/EXEC (so background reclaim cannot run between
/// them) and returns EXEC's replies.
fn multi(c: &mut Conn, cmds: &[Vec<String>]) -> Vec<Value> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for args in cmds {
        let mut k = redis::cmd(&args[0]);
        for a in &args[1..] {
            k.arg(a);
        }
        pipe.add_command(k);
    }
    pipe.query(c)
        .unwrap_or_else(|e| panic!("MULTI {cmds:?}: {}", err_text(&e)))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// TTL expiry driven by AT in the past, without sleeping: a write older than
/// the TTL replies its count but is never seen; a later write refreshes a
/// partition, an older one does not shorten it; a write at a time its
/// partition had expired starts it afresh; a unique INCR that does not count
/// refreshes nothing.
#[test]
fn ttl_expiry_driven_by_at() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "t";
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "TTL",
            "600",
        ],
    );
    let now = now_ms();
    let ago = |s: i64| (now - s * 1000).to_string();
    let incr = |at: &str, day: &str, page: &str| {
        strings(&["HCOUNTER.INCR", k, "AT", at, "day", day, "page", page])
    };
    // An hour ago: counted (the reply), but expired at once.
    let old = ago(3600);
    assert_eq!(int_reply(c, &strs(&incr(&old, "d1", "p"))), 1);
    assert_eq!(
        int_reply(
            c,
            &[
                "HCOUNTER.INCRBY",
                k,
                "5",
                "AT",
                &old,
                "day",
                "d1",
                "page",
                "q"
            ]
        ),
        5
    );
    assert_eq!(rows(c, &["HCOUNTER.DATA", k]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.DATA", k, "day", "d1"]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", k]), no_rows());
    assert_eq!(
        int_reply(c, &["HCOUNTER.GET", k, "day", "d1", "page", "p"]),
        0
    );
    assert_eq!(
        int_reply(c, &["HCOUNTER.GET", k, "day", "d1", "page", "q"]),
        0
    );
    assert_eq!(
        int_reply(c, &["HCOUNTER.DEL", k, "day", "d1"]),
        0,
        "nothing live to delete"
    );
    // Now: the partition starts afresh.
    assert_eq!(
        int_reply(c, &["HCOUNTER.INCR", k, "day", "d1", "page", "p"]),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![row(&[("day", "d1"), ("page", "p")], 1)]
    );

    // In one transaction, so no reclaim runs in between:
    let got = multi(
        c,
        &[
            // d2 expires at -400 s, but is written again at -500 s, while
            // still live: it then lives until +100 s.
            incr(&ago(1000), "d2", "p"),
            incr(&ago(500), "d2", "p"),
            // d3 expired at -400 s; written at -300 s it starts afresh.
            incr(&ago(1000), "d3", "p"),
            incr(&ago(300), "d3", "p"),
            strings(&["HCOUNTER.GET", k, "day", "d3", "page", "p"]),
        ],
    );
    assert_eq!(
        got,
        [1, 2, 1, 1, 1].map(Value::Int).to_vec(),
        "d2 counted twice, d3 started afresh"
    );
    // d4 lives until +100 s; a write at -700 s (while it lives) adds to it
    // and does not shorten it to -100 s.
    assert_eq!(int_reply(c, &strs(&incr(&ago(500), "d4", "p"))), 1);
    assert_eq!(int_reply(c, &strs(&incr(&ago(700), "d4", "p"))), 2);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            row(&[("day", "d1"), ("page", "p")], 1),
            row(&[("day", "d2"), ("page", "p")], 2),
            row(&[("day", "d3"), ("page", "p")], 1),
            row(&[("day", "d4"), ("page", "p")], 2),
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        ["d1", "d2", "d3", "d4"]
            .iter()
            .map(|d| prow(&[("day", d)]))
            .collect::<Vec<_>>()
    );

    // A unique INCR that does not count refreshes nothing: u's partition
    // expired at -400 s stays expired.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "u",
            "PARTITION",
            "day",
            "TTL",
            "600",
            "UNIQUE",
            "user",
        ],
    );
    let got = multi(
        c,
        &[
            strings(&[
                "HCOUNTER.INCR",
                "u",
                "AT",
                &ago(1000),
                "day",
                "d",
                "user",
                "a",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "u",
                "AT",
                &ago(500),
                "day",
                "d",
                "user",
                "a",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "u",
                "AT",
                &ago(450),
                "day",
                "e",
                "user",
                "a",
            ]),
        ],
    );
    assert_eq!(got, [1, 1, 0].map(Value::Int).to_vec());
    assert_eq!(rows(c, &["HCOUNTER.DATA", "u"]), no_rows());
    // Expired: the tuple is forgotten and counts again.
    assert_eq!(
        int_reply(c, &["HCOUNTER.INCR", "u", "day", "e", "user", "a"]),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "u"]),
        vec![row(&[("day", "e")], 1)]
    );

    // Before any reclaim can run: a tuple whose partition expired counts
    // again and moves to its new partition, which the reclaim of the old
    // one leaves alone; a write at a time its partition had expired starts
    // it afresh, tuples included; DEL counts live partitions only.
    let reclaimed = recipes_info(c, "hcounter_expired_partitions");
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "v",
            "PARTITION",
            "day",
            "TTL",
            "600",
            "UNIQUE",
            "user",
        ],
    );
    let got = multi(
        c,
        &[
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(3600),
                "day",
                "old",
                "user",
                "a",
            ]),
            strings(&["HCOUNTER.INCR", "v", "day", "new", "user", "a"]),
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(1000),
                "day",
                "f",
                "user",
                "b",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(300),
                "day",
                "f",
                "user",
                "b",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(3600),
                "day",
                "gone",
                "user",
                "c",
            ]),
            strings(&["HCOUNTER.DEL", "v", "day", "gone"]),
        ],
    );
    assert_eq!(got, [1, 1, 1, 1, 1, 0].map(Value::Int).to_vec());
    // "old" expired on arrival: reclaimed in the background ("gone" too,
    // unless DEL removed it).
    wait_reclaimed(c, reclaimed + 1, "master");
    let incr_v = |c: &mut Conn, day: &str, user: &str| {
        int_reply(c, &["HCOUNTER.INCR", "v", "day", day, "user", user])
    };
    assert_eq!(incr_v(c, "x", "a"), 0, "a is seen in 'new'");
    assert_eq!(incr_v(c, "x", "b"), 0, "b is seen in 'f'");
    assert_eq!(incr_v(c, "x", "c"), 1, "c went with 'gone'");
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "v"]),
        vec![
            row(&[("day", "f")], 1),
            row(&[("day", "new")], 1),
            row(&[("day", "x")], 1)
        ]
    );
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "v"]), 3);
}

/// Partitions written already expired are reclaimed in the background on the
/// master (INFO `hcounter_expired_partitions`, `hcounter.expire`), replicated
/// as HCOUNTER.RECLAIM; the replica never shows them and converges, and the
/// unique tuples they held count again, on the master and on the replica
/// once promoted.
#[test]
fn reclaim_on_master_replica_converges() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    let mut sub = master.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "t",
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "TTL",
            "60",
            "UNIQUE",
            "user",
        ],
    );
    let old = (now_ms() - HOUR_MS).to_string();
    let incr = |c: &mut Conn, at: Option<&str>, day: &str, user: &str| {
        let mut args = vec!["HCOUNTER.INCR", "t"];
        if let Some(at) = at {
            args.extend(["AT", at]);
        }
        args.extend(["day", day, "page", "/", "user", user]);
        int_reply(c, &args)
    };
    assert_eq!(incr(c, Some(&old), "d1", "u1"), 1);
    assert_eq!(incr(c, Some(&old), "d2", "u2"), 1);
    assert_eq!(incr(c, None, "d3", "u3"), 1);
    let live = vec![row(&[("day", "d3"), ("page", "/")], 1)];
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    // Reclaimed yet or not, the replica never shows them.
    assert_eq!(rows(r, &["HCOUNTER.DATA", "t"]), live);
    assert_eq!(
        int_reply(r, &["HCOUNTER.GET", "t", "day", "d1", "page", "/"]),
        0
    );
    wait_reclaimed(c, 2, "master");
    q_ok(c, &["SET", "sentinel", "1"]);
    let events = events_until_sentinel(&mut ps);
    let ev = |e: &str| (e.to_string(), "t".to_string());
    let expires = events
        .iter()
        .filter(|e| **e == ev("hcounter.expire"))
        .count();
    assert!((1..=2).contains(&expires), "{events:?}");
    assert_eq!(
        events[..4],
        [
            ev("hcounter.create"),
            ev("hcounter.incr"),
            ev("hcounter.incr"),
            ev("hcounter.incr")
        ],
        "{events:?}"
    );
    assert_eq!(events.len(), 4 + expires, "{events:?}");
    // Their tuples are forgotten: u1 counts again, u3 (live in d3) does not.
    assert_eq!(incr(c, None, "d4", "u1"), 1);
    assert_eq!(
        incr(c, None, "d4", "u3"),
        1,
        "u3 not counted: d4 stays at 1"
    );
    let live = vec![
        row(&[("day", "d3"), ("page", "/")], 1),
        row(&[("day", "d4"), ("page", "/")], 1),
    ];
    assert_eq!(rows(c, &["HCOUNTER.DATA", "t"]), live);
    assert_eq!(recipes_info(c, "hcounter_expired_partitions"), 2);
    wait_for_sync(&master, &replica);
    assert_eq!(rows(r, &["HCOUNTER.DATA", "t"]), live);
    assert_eq!(
        rows(r, &["HCOUNTER.PARTITIONS", "t"]),
        rows(c, &["HCOUNTER.PARTITIONS", "t"])
    );
    assert_eq!(
        recipes_info(r, "hcounter_expired_partitions"),
        2,
        "the replica applied the master's reclaim"
    );
    assert!(recipes_info(r, "hcounter_reclaim_calls") >= 1);
    // Promoted, the replica holds the same unique tuples.
    drop(master);
    q_ok(r, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(incr(r, None, "d4", "u1"), 1, "u1 is seen in d4");
    assert_eq!(incr(r, None, "d4", "u3"), 1, "u3 is seen in d3");
    assert_eq!(incr(r, None, "d4", "u2"), 2, "u2 was forgotten with d2");
}

/// Partitions that expire after their key moved (RENAME, MOVE, SWAPDB,
/// COPY, RESTORE, a restart) are still reclaimed in the background.
#[test]
fn reclaim_follows_the_key() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    // TTL 1 from an AT 0.5 s ahead: 10 partitions expire 1.5 s from now,
    // "keep" (written an hour ahead) stays.
    let fill = |c: &mut Conn, key: &str| {
        q_ok(
            c,
            &[
                "HCOUNTER.CREATE",
                key,
                "PARTITION",
                "p",
                "GROUP",
                "g",
                "TTL",
                "1",
            ],
        );
        let soon = (now_ms() + 500).to_string();
        for i in 0..10 {
            let p = i.to_string();
            int_reply(c, &["HCOUNTER.INCR", key, "AT", &soon, "p", &p, "g", "x"]);
        }
        let later = (now_ms() + HOUR_MS).to_string();
        int_reply(
            c,
            &["HCOUNTER.INCR", key, "AT", &later, "p", "keep", "g", "x"],
        );
    };
    for k in ["r", "m", "w", "cp", "rs"] {
        fill(c, k);
    }
    q_ok(c, &["RENAME", "r", "r2"]);
    let _: i64 = q(c, &["MOVE", "m", "3"]);
    q_ok(c, &["SWAPDB", "0", "5"]);
    q_ok(c, &["SELECT", "5"]);
    let _: i64 = q(c, &["COPY", "cp", "cp2"]);
    let payload: Vec<u8> = q(c, &["DUMP", "rs"]);
    let _: Value = run(c, redis::cmd("RESTORE").arg("rs2").arg(0).arg(&payload));
    // r2, m, w, cp, cp2, rs, rs2
    let expected = 10 * 7;
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(c, "hcounter_expired_partitions") == expected
    });
    assert!(
        done,
        "reclaimed {} of {expected}",
        recipes_info(c, "hcounter_expired_partitions")
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
        assert_eq!(
            rows(c, &["HCOUNTER.PARTITIONS", key]),
            vec![prow(&[("p", "keep")])],
            "{db}/{key}"
        );
    }
    // After a restart the loaded keys are scheduled again.
    q_ok(c, &["SELECT", "0"]);
    fill(c, "after");
    srv.restart_with_save();
    let c = &mut srv.conn();
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(c, "hcounter_expired_partitions") == 10
    });
    assert!(
        done,
        "after restart: {}",
        recipes_info(c, "hcounter_expired_partitions")
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "after"]),
        vec![prow(&[("p", "keep")])]
    );
    // FLUSHALL leaves nothing behind; new counters work as before.
    q_ok(c, &["FLUSHALL"]);
    fill(c, "fresh");
    assert!(wait_until(Duration::from_secs(10), || recipes_info(
        c,
        "hcounter_expired_partitions"
    ) == 20));
    assert!(!srv.log().contains("panic"));
}

/// Only writes that change something are replicated: an INCR of a unique
/// tuple already seen, and reads, move no replication offset.
#[test]
fn repeats_replicate_nothing() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "u",
            "PARTITION",
            "day",
            "TTL",
            "60",
            "UNIQUE",
            "user",
        ],
    );
    assert_eq!(
        int_reply(c, &["HCOUNTER.INCR", "u", "day", "d", "user", "a"]),
        1
    );
    wait_for_sync(&master, &replica);
    // Retried: the master's periodic PING to its replica moves the offset too.
    let offset = || info_field(&master.info("replication"), "master_repl_offset");
    let unchanged = (0..3).any(|_| {
        let before = offset();
        assert_eq!(
            int_reply(c, &["HCOUNTER.INCR", "u", "day", "d", "user", "a"]),
            1
        );
        assert_eq!(
            int_reply(c, &["HCOUNTER.INCR", "u", "day", "e", "user", "a"]),
            0
        );
        assert_eq!(int_reply(c, &["HCOUNTER.GET", "u", "day", "d"]), 1);
        rows(c, &["HCOUNTER.DATA", "u"]);
        rows(c, &["HCOUNTER.PARTITIONS", "u"]);
        before == offset()
    });
    assert!(unchanged, "a repeat or a read was replicated");
    wait_for_sync(&master, &replica);
    assert_eq!(
        rows(&mut replica.conn(), &["HCOUNTER.DATA", "u"]),
        vec![row(&[("day", "d")], 1)]
    );
}

/// Writes without AT replicate with the master's time: a replica holds the
/// very same bytes (`DUMP`), the partitions' latest ATs included, with or
/// without a TTL, whatever its own clock.
#[test]
fn replica_holds_the_same_bytes() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    let counters: [&[&str]; 4] = [
        &["plain", "PARTITION", "day", "GROUP", "page"],
        &["ttl", "PARTITION", "day", "GROUP", "page", "TTL", "600"],
        &["float", "PARTITION", "day", "GROUP", "page", "FLOAT"],
        &[
            "unique",
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "UNIQUE",
            "user",
        ],
    ];
    for schema in counters {
        let mut args = vec!["HCOUNTER.CREATE"];
        args.extend(schema);
        q_ok(c, &args);
    }
    // The replica applies the writes late, by its own clock.
    let mut late = replica.conn();
    let sleeper = std::thread::spawn(move || {
        let _: Value = q(&mut late, &["DEBUG", "SLEEP", "0.3"]);
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    for i in 0..20 {
        let (day, page, user) = (
            format!("d{}", i % 3),
            format!("p{}", i % 4),
            format!("u{i}"),
        );
        for key in ["plain", "ttl", "float"] {
            let _: Value = q(
                c,
                &["HCOUNTER.INCRBY", key, "2", "day", &day, "page", &page],
            );
        }
        let args = [
            "HCOUNTER.INCR",
            "unique",
            "day",
            &day,
            "page",
            &page,
            "user",
            &user,
        ];
        let _: Value = q(c, &args);
    }
    sleeper.join().unwrap();
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    for key in ["plain", "ttl", "float", "unique"] {
        let on_master: Vec<u8> = q(c, &["DUMP", key]);
        let on_replica: Vec<u8> = q(r, &["DUMP", key]);
        assert_eq!(on_master, on_replica, "DUMP {key}");
    }
}

// ---------------------------------------------------------------- unique counting

/// A unique counter counts a UNIQUE tuple only the first time within its
/// SCOPE tuple; a repeat replies the cell's count (0 for a missing cell) and
/// creates nothing; the tuple belongs to the partition it was first counted
/// in, and deleting that partition forgets it.
#[test]
fn unique_counting_within_scopes() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "u",
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "UNIQUE",
            "user",
            "SCOPE",
            "month",
        ],
    );
    let incrby = |c: &mut Conn, by: &str, day: &str, page: &str, user: &str, month: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCRBY",
                "u",
                by,
                "day",
                day,
                "page",
                page,
                "user",
                user,
                "month",
                month,
            ],
        )
    };
    let incr = |c: &mut Conn, day: &str, page: &str, user: &str, month: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCR",
                "u",
                "month",
                month,
                "user",
                user,
                "page",
                page,
                "day",
                day,
            ],
        )
    };
    assert_eq!(incr(c, "d1", "p", "a", "m1"), 1);
    assert_eq!(incr(c, "d1", "p", "a", "m1"), 1, "seen in m1");
    assert_eq!(incr(c, "d1", "p", "a", "m2"), 2, "another scope");
    assert_eq!(
        incr(c, "d2", "p", "a", "m1"),
        0,
        "seen; the cell does not exist"
    );
    assert_eq!(incrby(c, "10", "d2", "p", "a", "m1"), 0);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "u"]),
        vec![prow(&[("day", "d1")])],
        "a repeat creates nothing"
    );
    assert_eq!(incr(c, "d2", "q", "b", "m1"), 1);
    assert_eq!(incrby(c, "10", "d2", "q", "c", "m1"), 11);
    assert_eq!(incrby(c, "10", "d2", "q", "c", "m1"), 11);
    assert_eq!(incrby(c, "-3", "d2", "q", "c", "m2"), 8);
    // Deleting d1 forgets (m1, a) and (m2, a), counted there.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "u", "day", "d1"]), 1);
    assert_eq!(incr(c, "d2", "p", "a", "m1"), 1, "(m1, a) counts again");
    assert_eq!(incr(c, "d1", "p", "a", "m2"), 1, "(m2, a) counts again");
    // (m1, a) now belongs to d2: deleting d1 again leaves it.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "u", "day", "d1"]), 1);
    assert_eq!(incr(c, "d3", "p", "a", "m1"), 0);
    assert_eq!(incr(c, "d3", "p", "a", "m2"), 1);
    // (m1, b) and (m1, c) are still seen (in d2).
    assert_eq!(incr(c, "d3", "p", "b", "m1"), 1);
    assert_eq!(incr(c, "d3", "p", "c", "m1"), 1);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "u"]),
        vec![
            row(&[("day", "d2"), ("page", "p")], 1),
            row(&[("day", "d2"), ("page", "q")], 8),
            row(&[("day", "d3"), ("page", "p")], 1),
        ]
    );
    // Deleting everything forgets every tuple.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "u"]), 2);
    assert_eq!(incr(c, "d1", "p", "a", "m1"), 1);
    assert_eq!(incr(c, "d1", "p", "c", "m1"), 2);

    // Scope and unique tuples of several names: bytes never mix.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "s",
            "GROUP",
            "g",
            "UNIQUE",
            "u1",
            "u2",
            "SCOPE",
            "s1",
            "s2",
        ],
    );
    let incr_s = |c: &mut Conn, u: (&str, &str), s: (&str, &str)| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCR",
                "s",
                "g",
                "x",
                "u1",
                u.0,
                "u2",
                u.1,
                "s1",
                s.0,
                "s2",
                s.1,
            ],
        )
    };
    assert_eq!(incr_s(c, ("1", "2"), ("a:b", "c")), 1);
    assert_eq!(incr_s(c, ("1", "2"), ("a", "b:c")), 2);
    assert_eq!(incr_s(c, ("1", "2"), ("a", "b\0c")), 3);
    assert_eq!(incr_s(c, ("1:2", ""), ("a", "b:c")), 4);
    assert_eq!(incr_s(c, ("1", ":2"), ("a", "b:c")), 5);
    for (u, s) in [
        (("1", "2"), ("a:b", "c")),
        (("1", "2"), ("a", "b:c")),
        (("1", "2"), ("a", "b\0c")),
        (("1:2", ""), ("a", "b:c")),
        (("1", ":2"), ("a", "b:c")),
    ] {
        assert_eq!(incr_s(c, u, s), 5, "{u:?} {s:?} seen");
    }

    // Without SCOPE the whole counter is the scope; a UNIQUE name may also
    // be a GROUP and a PARTITION name.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "w",
            "PARTITION",
            "company",
            "GROUP",
            "company",
            "UNIQUE",
            "company",
            "user",
        ],
    );
    let incr_w = |c: &mut Conn, company: &str, user: &str| {
        int_reply(c, &["HCOUNTER.INCR", "w", "company", company, "user", user])
    };
    assert_eq!(
        [
            incr_w(c, "1", "a"),
            incr_w(c, "1", "b"),
            incr_w(c, "1", "a"),
            incr_w(c, "2", "a"),
            incr_w(c, "2", "a"),
        ],
        [1, 2, 2, 1, 1]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "w"]),
        vec![row(&[("company", "1")], 2), row(&[("company", "2")], 1)]
    );
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "w", "company", "1"]), 2);

    // A SCOPE name that is also a GROUP name: users are unique per company.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "x",
            "PARTITION",
            "day",
            "GROUP",
            "company",
            "UNIQUE",
            "user",
            "SCOPE",
            "company",
        ],
    );
    let incr_x = |c: &mut Conn, day: &str, company: &str, user: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCR",
                "x",
                "day",
                day,
                "company",
                company,
                "user",
                user,
            ],
        )
    };
    assert_eq!(
        [
            incr_x(c, "d1", "1", "a"),
            incr_x(c, "d2", "1", "a"),
            incr_x(c, "d2", "2", "a"),
            incr_x(c, "d2", "2", "b"),
        ],
        [1, 0, 1, 2]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "x"]),
        vec![
            row(&[("day", "d1"), ("company", "1")], 1),
            row(&[("day", "d2"), ("company", "2")], 2),
        ]
    );
}

// ---------------------------------------------------------------- events and INFO

#[test]
fn notifications_and_info() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let ev = |e: &str| (e.to_string(), "n".to_string());
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "n",
            "PARTITION",
            "p",
            "GROUP",
            "g",
            "UNIQUE",
            "u",
            "TTL",
            "60",
        ],
    );
    let _ = int_reply(c, &["HCOUNTER.INCR", "n", "p", "a", "g", "x", "u", "1"]);
    // Not counted: no event.
    let _ = int_reply(c, &["HCOUNTER.INCR", "n", "p", "a", "g", "x", "u", "1"]);
    let _ = int_reply(
        c,
        &["HCOUNTER.INCRBY", "n", "2", "p", "a", "g", "x", "u", "2"],
    );
    let _ = int_reply(c, &["HCOUNTER.GET", "n", "p", "a", "g", "x"]);
    let _ = rows(c, &["HCOUNTER.DATA", "n"]);
    let _ = rows(c, &["HCOUNTER.PARTITIONS", "n", "p", "a"]);
    let _ = expect_err(c, &cmd(&["HCOUNTER.INCR", "n", "p", "a"]));
    // Nothing deleted: no event.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n", "p", "zz"]), 0);
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n", "p", "a"]), 1);
    // Expired at once: reclaimed in the background, with its own event.
    let old = (now_ms() - HOUR_MS).to_string();
    let _ = int_reply(
        c,
        &[
            "HCOUNTER.INCR",
            "n",
            "AT",
            &old,
            "p",
            "b",
            "g",
            "x",
            "u",
            "3",
        ],
    );
    wait_reclaimed(c, 1, "master");
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("hcounter.create"),
            ev("hcounter.incr"),
            ev("hcounter.incr"),
            ev("hcounter.del"),
            ev("hcounter.incr"),
            ev("hcounter.expire"),
        ]
    );
    for (field, n) in [
        ("hcounter_create_calls", 1),
        ("hcounter_incr_calls", 4),
        ("hcounter_incrby_calls", 1),
        ("hcounter_get_calls", 1),
        ("hcounter_data_calls", 1),
        ("hcounter_partitions_calls", 1),
        ("hcounter_del_calls", 2),
        ("hcounter_set_calls", 0),
        ("hcounter_seen_calls", 0),
        ("hcounter_errors", 1),
        ("hcounter_expired_partitions", 1),
    ] {
        assert_eq!(recipes_info(c, field), n, "{field}");
    }
    // Present, whatever the master's own background reclaim counts.
    recipes_info(c, "hcounter_reclaim_calls");
}

// ---------------------------------------------------------------- the model

/// Values of the model test's names: small pools so that tuples collide,
/// with ':', NUL and 0xFF bytes.
const MONTHS: [&[u8]; 2] = [b"m:1", b"m\x00"];
const DAYS: [&[u8]; 3] = [b"d", b"d:\x00", b"\xffd"];
const COMPANIES: [&[u8]; 3] = [b"c", b"c:", b"\x00"];
const USERS: [&[u8]; 6] = [b"u0", b"u1", b"u:2", b"u3", b"\xff", b"u\x005"];

type Bytes = Vec<u8>;

/// What the model test's counter `m` must hold:
/// `PARTITION month day GROUP company TTL 3600 UNIQUE company user SCOPE month`.
/// Only partitions that stay live for the whole test are kept: a write that
/// lands already expired is waited for until it is reclaimed, so the server
/// holds no expired partition when the next step runs.
#[derive(Default)]
struct Model {
    /// (month, day) -> company -> count.
    parts: BTreeMap<(Bytes, Bytes), BTreeMap<Bytes, i64>>,
    /// Unique tuples: (month, company, user) -> the partition (month, day)
    /// they were counted in.
    seen: BTreeMap<(Bytes, Bytes, Bytes), (Bytes, Bytes)>,
}

impl Model {
    fn get(&self, month: &[u8], day: &[u8], company: &[u8]) -> i64 {
        self.parts
            .get(&(month.to_vec(), day.to_vec()))
            .and_then(|cells| cells.get(company))
            .copied()
            .unwrap_or(0)
    }

    fn matches(key: &(Bytes, Bytes), month: Option<&[u8]>, day: Option<&[u8]>) -> bool {
        month.is_none_or(|m| m == key.0) && day.is_none_or(|d| d == key.1)
    }

    fn data(&self, month: Option<&[u8]>, day: Option<&[u8]>) -> Vec<Row> {
        let mut out = Vec::new();
        for (key, cells) in &self.parts {
            if !Self::matches(key, month, day) {
                continue;
            }
            for (company, n) in cells {
                out.push(vec![
                    (b"month".to_vec(), V::B(key.0.clone())),
                    (b"day".to_vec(), V::B(key.1.clone())),
                    (b"company".to_vec(), V::B(company.clone())),
                    (b"value".to_vec(), V::I(*n)),
                ]);
            }
        }
        out
    }

    fn partitions(&self, month: Option<&[u8]>, day: Option<&[u8]>) -> Vec<Row> {
        self.parts
            .keys()
            .filter(|key| Self::matches(key, month, day))
            .map(|key| {
                vec![
                    (b"month".to_vec(), V::B(key.0.clone())),
                    (b"day".to_vec(), V::B(key.1.clone())),
                ]
            })
            .collect()
    }

    /// Deletes the matching partitions and the tuples counted in them;
    /// returns how many partitions it deleted.
    fn delete(&mut self, month: Option<&[u8]>, day: Option<&[u8]>) -> i64 {
        let before = self.parts.len();
        self.parts.retain(|key, _| !Self::matches(key, month, day));
        self.seen.retain(|_, key| !Self::matches(key, month, day));
        (before - self.parts.len()) as i64
    }
}

fn filter_args<'a>(month: Option<&'a [u8]>, day: Option<&'a [u8]>) -> Vec<&'a [u8]> {
    let mut a: Vec<&[u8]> = Vec::new();
    if let Some(m) = month {
        a.extend([b"month".as_slice(), m]);
    }
    if let Some(d) = day {
        a.extend([b"day".as_slice(), d]);
    }
    a
}

/// The model test's run: the counter, the model, the rng, and how many
/// partitions the server must have reclaimed so far.
struct ModelRun {
    model: Model,
    rng: StdRng,
    seed: u64,
    /// Unix ms at the start: "recent" writes land in the 10 minutes before
    /// it (live for 50 minutes at least), "old" ones 4 hours before (expired
    /// on arrival).
    base: i64,
    reclaimed: i64,
    steps: usize,
}

impl ModelRun {
    fn pick<'a>(&mut self, pool: &[&'a [u8]]) -> &'a [u8] {
        pool[self.rng.gen_range(0..pool.len())]
    }

    fn filter(&mut self) -> (Option<&'static [u8]>, Option<&'static [u8]>) {
        let month = self.rng.gen_bool(0.5).then(|| self.pick(&MONTHS));
        let day = self.rng.gen_bool(0.5).then(|| self.pick(&DAYS));
        (month, day)
    }

    fn step(&mut self, c: &mut Conn) {
        let step = self.steps;
        self.steps += 1;
        let ctx = format!("step {step} (seed {})", self.seed);
        let month = self.pick(&MONTHS);
        let day = self.pick(&DAYS);
        let company = self.pick(&COMPANIES);
        let user = self.pick(&USERS);
        match self.rng.gen_range(0..30) {
            0..=16 => {
                let incr = self.rng.gen_bool(0.4);
                let by = if incr {
                    1
                } else {
                    *[-3, -1, 1, 2, 5, 1000].choose(&mut self.rng).unwrap()
                };
                let by_s = by.to_string();
                let (at, old) = match self.rng.gen_range(0..10) {
                    0..=3 => (None, false),
                    4..=8 => (Some(self.base - self.rng.gen_range(0..600_000)), false),
                    _ => (
                        Some(self.base - 4 * HOUR_MS - self.rng.gen_range(0..600_000)),
                        true,
                    ),
                };
                let at_s = at.map(|a| a.to_string());
                let mut pairs: Vec<[&[u8]; 2]> = vec![
                    [b"month", month],
                    [b"day", day],
                    [b"company", company],
                    [b"user", user],
                ];
                if let Some(at) = &at_s {
                    pairs.push([b"AT", at.as_bytes()]);
                }
                pairs.shuffle(&mut self.rng);
                let mut args: Vec<&[u8]> = if incr {
                    vec![b"HCOUNTER.INCR", b"m"]
                } else {
                    vec![b"HCOUNTER.INCRBY", b"m", by_s.as_bytes()]
                };
                args.extend(pairs.iter().flatten());
                let got: i64 = q_bin(c, &args);
                let part = (month.to_vec(), day.to_vec());
                let tuple = (month.to_vec(), company.to_vec(), user.to_vec());
                let live = self.model.parts.contains_key(&part);
                let counts = !self.model.seen.contains_key(&tuple);
                let want = match (counts, live) {
                    (false, _) => self.model.get(month, day, company),
                    (true, true) => self.model.get(month, day, company) + by,
                    (true, false) => by,
                };
                assert_eq!(got, want, "{ctx}: {}", cmd_text_bin(&args));
                if counts && old && !live {
                    // A new partition, expired on arrival: it goes, with the tuple.
                    self.reclaimed += 1;
                    wait_reclaimed(c, self.reclaimed, &ctx);
                } else if counts {
                    *self
                        .model
                        .parts
                        .entry(part.clone())
                        .or_default()
                        .entry(company.to_vec())
                        .or_insert(0) += by;
                    self.model.seen.insert(tuple, part);
                }
            }
            17 => {
                let (fm, fd) = self.filter();
                let mut args: Vec<&[u8]> = vec![b"HCOUNTER.DEL", b"m"];
                args.extend(filter_args(fm, fd));
                let got: i64 = q_bin(c, &args);
                let want = self.model.delete(fm, fd);
                assert_eq!(got, want, "{ctx}: {}", cmd_text_bin(&args));
            }
            18..=21 => {
                let mut args: Vec<&[u8]> = vec![b"HCOUNTER.GET", b"m"];
                let mut pairs: Vec<[&[u8]; 2]> =
                    vec![[b"month", month], [b"day", day], [b"company", company]];
                pairs.shuffle(&mut self.rng);
                args.extend(pairs.iter().flatten());
                let got: i64 = q_bin(c, &args);
                assert_eq!(
                    got,
                    self.model.get(month, day, company),
                    "{ctx}: {}",
                    cmd_text_bin(&args)
                );
            }
            _ => {
                let (fm, fd) = self.filter();
                check_reads(c, &self.model, fm, fd, &ctx);
            }
        }
    }

    /// Every read against the model: all rows, each filter, every cell.
    fn check_all(&self, c: &mut Conn, when: &str) {
        let when = format!("{when} (seed {})", self.seed);
        check_reads(c, &self.model, None, None, &when);
        for m in MONTHS {
            check_reads(c, &self.model, Some(m), None, &when);
            for d in DAYS {
                check_reads(c, &self.model, Some(m), Some(d), &when);
                for co in COMPANIES {
                    let got: i64 = q_bin(
                        c,
                        &[
                            b"HCOUNTER.GET",
                            b"m",
                            b"company",
                            co,
                            b"day",
                            d,
                            b"month",
                            m,
                        ],
                    );
                    assert_eq!(
                        got,
                        self.model.get(m, d, co),
                        "{when}: GET {m:?} {d:?} {co:?}"
                    );
                }
            }
        }
        for d in DAYS {
            check_reads(c, &self.model, None, Some(d), &when);
        }
    }

    /// Every tuple the model remembers is still seen: an INCR of it counts
    /// nothing and replies the cell's count.
    fn check_seen(&self, c: &mut Conn, when: &str) {
        let at = (self.base - 60_000).to_string();
        for ((month, company, user), _) in self.model.seen.iter() {
            for day in DAYS {
                let got: i64 = q_bin(
                    c,
                    &[
                        b"HCOUNTER.INCR",
                        b"m",
                        b"AT",
                        at.as_bytes(),
                        b"month",
                        month,
                        b"day",
                        day,
                        b"company",
                        company,
                        b"user",
                        user,
                    ],
                );
                assert_eq!(
                    got,
                    self.model.get(month, day, company),
                    "{when} (seed {}): ({month:?}, {company:?}, {user:?}) into {day:?}",
                    self.seed
                );
            }
        }
    }
}

/// A command of binary arguments as text, for messages.
fn cmd_text_bin(args: &[&[u8]]) -> String {
    args.iter()
        .map(|a| a.escape_ascii().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_reads(c: &mut Conn, model: &Model, month: Option<&[u8]>, day: Option<&[u8]>, when: &str) {
    let mut args: Vec<&[u8]> = vec![b"HCOUNTER.DATA", b"m"];
    args.extend(filter_args(month, day));
    assert_eq!(
        rows_bin(c, &args),
        model.data(month, day),
        "{when}: {}",
        cmd_text_bin(&args)
    );
    args[0] = b"HCOUNTER.PARTITIONS";
    assert_eq!(
        rows_bin(c, &args),
        model.partitions(month, day),
        "{when}: {}",
        cmd_text_bin(&args)
    );
}

/// ~1,500 random INCR/INCRBY (with AT now, recent, or expired on arrival),
/// DEL with filters, GET, DATA and PARTITIONS on a unique counter whose
/// SCOPE name is also a PARTITION name and whose UNIQUE names include its
/// GROUP name, against the model; then the same answers (and the same
/// unique tuples) from a replica, after a BGREWRITEAOF as commands +
/// restart, after one with an RDB preamble + restart and after DEBUG
/// RELOAD, with more random steps after each.
#[test]
fn model_based_random_operations() {
    let seed = seed_from_env("HCOUNTER_SEED", 0);
    let mut master = aof_master();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "m",
            "PARTITION",
            "month",
            "day",
            "GROUP",
            "company",
            "TTL",
            "3600",
            "UNIQUE",
            "company",
            "user",
            "SCOPE",
            "month",
        ],
    );
    let mut run = ModelRun {
        model: Model::default(),
        rng: StdRng::seed_from_u64(seed),
        seed,
        base: now_ms(),
        reclaimed: 0,
        steps: 0,
    };
    for _ in 0..1500 {
        run.step(c);
    }
    assert!(run.reclaimed > 0, "seed {seed}: no write landed expired");
    run.check_all(c, "end");
    run.check_seen(c, "end");
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    run.check_all(r, "replica");
    // The replica's unique tuples: after its promotion, at the end.
    // A rewrite as commands: CREATE, then SEEN per tuple and SET per cell.
    rewrite_aof(&master, false);
    let aof = aof_base(&master);
    let cells: usize = run.model.parts.values().map(|cells| cells.len()).sum();
    assert_eq!(aof_count(&aof, "HCOUNTER.CREATE"), 1);
    assert_eq!(aof_count(&aof, "HCOUNTER.SET"), cells, "seed {seed}");
    assert_eq!(
        aof_count(&aof, "HCOUNTER.SEEN"),
        run.model.seen.len(),
        "seed {seed}"
    );
    for _ in 0..100 {
        run.step(c);
    }
    master.restart();
    let c = &mut master.conn();
    run.reclaimed = recipes_info(c, "hcounter_expired_partitions");
    run.check_all(c, "after AOF rewrite and restart");
    run.check_seen(c, "after AOF rewrite and restart");
    for _ in 0..100 {
        run.step(c);
    }
    // A rewrite with an RDB preamble: the RDB encoding, loaded at restart.
    rewrite_aof(&master, true);
    for _ in 0..100 {
        run.step(c);
    }
    master.restart();
    let c = &mut master.conn();
    run.reclaimed = recipes_info(c, "hcounter_expired_partitions");
    run.check_all(c, "after RDB-preamble rewrite and restart");
    run.check_seen(c, "after RDB-preamble rewrite and restart");
    for _ in 0..100 {
        run.step(c);
    }
    q_ok(c, &["DEBUG", "RELOAD"]);
    run.check_all(c, "after DEBUG RELOAD");
    run.check_seen(c, "after DEBUG RELOAD");
    for _ in 0..100 {
        run.step(c);
    }
    run.check_all(c, "after more steps");
    // The replica followed the restarted master too (it reconnects); once
    // promoted it holds the same counts and unique tuples.
    wait_for_sync(&master, &replica);
    drop(master);
    q_ok(r, &["REPLICAOF", "NO", "ONE"]);
    run.check_all(r, "promoted replica");
    run.check_seen(r, "promoted replica");
}

// ---------------------------------------------------------------- compact partitions

/// `recipes.hcounter-compact-max` changes only the layout: random
/// increments into partitions that grow past the compact size (and, after a
/// delete, start small again) agree with a model on the master and on a
/// replica whose compact size differs, across DEBUG RELOADs (which load with
/// the size in force), size changes and writes already expired on arrival
/// (reclaimed in the background); the DUMPs stay equal.
#[test]
fn compact_and_hashed_partitions_agree() {
    let seed = std::env::var("HCOUNTER_COMPACT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("HCOUNTER_COMPACT_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let master = Server::start();
    let replica = Server::builder()
        .config("recipes.hcounter-compact-max", "7")
        .start();
    let r = &mut replica.conn();
    q_ok(r, &["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    let create = [
        "HCOUNTER.CREATE",
        "cc",
        "PARTITION",
        "day",
        "GROUP",
        "company",
        "TTL",
        "86400",
    ];
    q_ok(c, &create);
    // day -> company -> count; bytewise order, as DATA lists them.
    let mut model: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    let two_days_ago = (now_ms() - 48 * HOUR_MS).to_string();
    let mut expired = 0;
    for step in 0..1_500 {
        let day = format!("d{}", rng.gen_range(0..4));
        // Company ids as numbers (packed as varints) and as text.
        let company = match rng.gen_range(0..3) {
            0 => format!("{}", rng.gen_range(0..40)),
            1 => format!("c{}", rng.gen_range(0..40)),
            _ => format!("{}", 10_000_000_000u64 + rng.gen_range(0..5)),
        };
        match rng.gen_range(0..100) {
            0..=74 => {
                let by: i64 = match rng.gen_range(0..10) {
                    0 => -300,
                    1 => 1 << 40,
                    _ => rng.gen_range(1..5),
                };
                let cell = model.entry(day.clone()).or_default();
                let count = cell.entry(company.clone()).or_insert(0);
                *count += by;
                let by = by.to_string();
                let args = [
                    "HCOUNTER.INCRBY",
                    "cc",
                    &by,
                    "day",
                    &day,
                    "company",
                    &company,
                ];
                assert_eq!(q::<i64>(c, &args), *count, "step {step}");
            }
            75..=79 => {
                // Expired on arrival: never read, reclaimed by the master.
                expired += 1;
                let old = format!("old{step}");
                let args = [
                    "HCOUNTER.INCR",
                    "cc",
                    "AT",
                    &two_days_ago,
                    "day",
                    &old,
                    "company",
                    &company,
                ];
                assert_eq!(q::<i64>(c, &args), 1, "step {step}");
            }
            80..=83 => {
                let _: i64 = q(c, &["HCOUNTER.DEL", "cc", "day", &day]);
                model.remove(&day);
            }
            84..=87 => {
                let size = ["0", "1", "3", "16", "128"][rng.gen_range(0..5)];
                q_ok(c, &["CONFIG", "SET", "recipes.hcounter-compact-max", size]);
            }
            88..=89 => q_ok(c, &["DEBUG", "RELOAD"]),
            _ => {
                let want: Vec<Row> = model
                    .iter()
                    .flat_map(|(d, cells)| {
                        cells
                            .iter()
                            .map(move |(co, n)| row(&[("day", d), ("company", co)], *n))
                    })
                    .collect();
                assert_eq!(rows(c, &["HCOUNTER.DATA", "cc"]), want, "step {step}");
                // Once the master reclaimed what expired (no reclaim runs
                // between the two DUMPs), the replica holds the same bytes.
                wait_reclaimed(c, expired, &format!("step {step}"));
                wait_for_sync(&master, &replica);
                assert_eq!(rows(r, &["HCOUNTER.DATA", "cc"]), want, "step {step}");
                let on_master: Vec<u8> = q(c, &["DUMP", "cc"]);
                let on_replica: Vec<u8> = q(r, &["DUMP", "cc"]);
                assert_eq!(on_master, on_replica, "step {step}: DUMP");
            }
        }
    }
    assert!(!master.log().contains("panic"), "{}", master.log());
}
