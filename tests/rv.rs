//! RV (recency list) integration tests against a real redis-server.
//! Model tests take their seed from `RV_SEED` (printed on failure).
mod common;
use common::*;

use rand::prelude::*;
use redis::Connection;
use std::collections::BTreeMap;

type Entries = Vec<(Vec<u8>, f64)>;

fn add(c: &mut Connection, key: &str, member: &str, at: i64) -> i64 {
    q(c, &["RV.ADD", key, member, "AT", &at.to_string()])
}

fn get(c: &mut Connection, args: &[&str]) -> Vec<String> {
    let mut a = vec!["RV.GET"];
    a.extend_from_slice(args);
    q(c, &a)
}

fn pairs(flat: Vec<Vec<u8>>) -> Entries {
    assert!(flat.len().is_multiple_of(2), "odd WITHSCORES reply");
    flat.chunks(2)
        .map(|p| {
            let s = String::from_utf8(p[1].clone()).unwrap();
            (
                p[0].clone(),
                s.parse::<f64>()
                    .unwrap_or_else(|_| panic!("score {s:?} not a number")),
            )
        })
        .collect()
}

fn get_ws(c: &mut Connection, key: &str) -> Entries {
    pairs(q(c, &["RV.GET", key, "WITHSCORES"]))
}

fn zrev_ws(c: &mut Connection, key: &str) -> Entries {
    pairs(q(c, &["ZREVRANGE", key, "0", "-1", "WITHSCORES"]))
}

fn e(list: &[(&str, i64)]) -> Entries {
    list.iter()
        .map(|(m, t)| (m.as_bytes().to_vec(), *t as f64))
        .collect()
}

/// Far enough in the future that TTLs computed from it never lapse during a test.
fn future_base() -> i64 {
    now_ms() + 3_600_000
}

// ---------------------------------------------------------------- basics

#[test]
fn add_get_len_basic() {
    let srv = Server::start();
    let c = &mut srv.conn();
    assert_eq!(add(c, "k", "a", 1000), 1);
    assert_eq!(add(c, "k", "b", 3000), 2);
    assert_eq!(add(c, "k", "c", 2000), 3);
    assert_eq!(get(c, &["k"]), ["b", "c", "a"]);
    assert_eq!(get_ws(c, "k"), e(&[("b", 3000), ("c", 2000), ("a", 1000)]));
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 3);
    assert_eq!(q::<String>(c, &["TYPE", "k"]), "zset");
    assert_eq!(q::<f64>(c, &["ZSCORE", "k", "c"]), 2000.0);
    // missing key
    assert_eq!(get(c, &["nokey"]), Vec::<String>::new());
    assert_eq!(q::<i64>(c, &["RV.LEN", "nokey"]), 0);
    assert_eq!(q::<i64>(c, &["EXISTS", "nokey"]), 0);
    // command names are case-insensitive
    assert_eq!(q::<i64>(c, &["rv.add", "k", "d", "AT", "500"]), 4);
    assert_eq!(q::<i64>(c, &["Rv.Len", "k"]), 4);
}

#[test]
fn newest_wins() {
    let srv = Server::start();
    let c = &mut srv.conn();
    assert_eq!(add(c, "k", "a", 2000), 1);
    assert_eq!(add(c, "k", "b", 1500), 2);
    // older event does not move it back
    assert_eq!(add(c, "k", "a", 1000), 2);
    assert_eq!(get_ws(c, "k"), e(&[("a", 2000), ("b", 1500)]));
    // same time: no change
    assert_eq!(add(c, "k", "a", 2000), 2);
    assert_eq!(get_ws(c, "k"), e(&[("a", 2000), ("b", 1500)]));
    // newer event moves it
    assert_eq!(add(c, "k", "b", 2500), 2);
    assert_eq!(get_ws(c, "k"), e(&[("b", 2500), ("a", 2000)]));
}

#[test]
fn add_without_at_uses_server_clock() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let t0 = now_ms();
    assert_eq!(q::<i64>(c, &["RV.ADD", "k", "a"]), 1);
    let t1 = now_ms();
    let s: f64 = q(c, &["ZSCORE", "k", "a"]);
    assert_eq!(s.fract(), 0.0, "score must be whole ms: {s}");
    let s = s as i64;
    assert!(
        t0 - 50 <= s && s <= t1 + 50,
        "score {s} not within [{t0}, {t1}]"
    );
    // an explicit older AT does not override it, a later one does
    add(c, "k", "a", 1000);
    assert_eq!(q::<f64>(c, &["ZSCORE", "k", "a"]) as i64, s);
}

#[test]
fn ties_order_as_sorted_set() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for m in ["b", "a", "c"] {
        add(c, "k", m, 1000);
    }
    add(c, "k", "z", 999);
    // newest first = reverse zset order: ties by member descending
    assert_eq!(get(c, &["k"]), ["c", "b", "a", "z"]);
    assert_eq!(get_ws(c, "k"), zrev_ws(c, "k"));
    // trimming removes from the low end: lowest time, then lowest member
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k", "d", "AT", "1000", "MAXLEN", "2"]),
        2
    );
    assert_eq!(get(c, &["k"]), ["d", "c"]);
}

// ---------------------------------------------------------------- MAXLEN

#[test]
fn maxlen_keeps_newest() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut replies = vec![];
    for (i, m) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let at = (1000 + i * 100).to_string();
        replies.push(q::<i64>(c, &["RV.ADD", "k", m, "MAXLEN", "3", "AT", &at]));
    }
    assert_eq!(replies, [1, 2, 3, 3, 3]);
    assert_eq!(get_ws(c, "k"), e(&[("e", 1400), ("d", 1300), ("c", 1200)]));
    // an event older than everything kept is added and trimmed at once
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k", "old", "AT", "1", "MAXLEN", "3"]),
        3
    );
    assert_eq!(get(c, &["k"]), ["e", "d", "c"]);
    // a smaller MAXLEN trims several at once
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k", "f", "AT", "1500", "MAXLEN", "1"]),
        1
    );
    assert_eq!(get_ws(c, "k"), e(&[("f", 1500)]));
    // MAXLEN 0 = no limit
    for i in 0..10 {
        q::<i64>(
            c,
            &["RV.ADD", "k", &format!("m{i}"), "AT", "2000", "MAXLEN", "0"],
        );
    }
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 11);
    // MAXLEN at the top of its range
    assert_eq!(
        q::<i64>(
            c,
            &["RV.ADD", "k", "x", "MAXLEN", "1000000000", "AT", "3000"]
        ),
        12
    );
}

#[test]
fn default_maxlen_config_set() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let cfg: Vec<String> = q(c, &["CONFIG", "GET", "recipes.rv-default-maxlen"]);
    assert_eq!(cfg, ["recipes.rv-default-maxlen", "0"]);
    for i in 0..5 {
        add(c, "unlimited", &format!("m{i}"), 1000 + i);
    }
    assert_eq!(q::<i64>(c, &["RV.LEN", "unlimited"]), 5);

    let _: () = q(c, &["CONFIG", "SET", "recipes.rv-default-maxlen", "3"]);
    let cfg: Vec<String> = q(c, &["CONFIG", "GET", "recipes.rv-default-maxlen"]);
    assert_eq!(cfg, ["recipes.rv-default-maxlen", "3"]);
    let replies: Vec<i64> = (0..5)
        .map(|i| add(c, "k", &format!("m{i}"), 1000 + i))
        .collect();
    assert_eq!(replies, [1, 2, 3, 3, 3]);
    assert_eq!(get(c, &["k"]), ["m4", "m3", "m2"]);
    // the default also trims existing longer lists on their next add
    assert_eq!(add(c, "unlimited", "new", 5000), 3);
    // explicit MAXLEN overrides the default (0 = no limit)
    for i in 0..5 {
        q::<i64>(
            c,
            &["RV.ADD", "k2", &format!("m{i}"), "AT", "1", "MAXLEN", "0"],
        );
    }
    assert_eq!(q::<i64>(c, &["RV.LEN", "k2"]), 5);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k2", "x", "AT", "2", "MAXLEN", "4"]),
        4
    );
    // invalid config values are refused
    expect_err(
        c,
        &cmd(&["CONFIG", "SET", "recipes.rv-default-maxlen", "-1"]),
    );
    expect_err(
        c,
        &cmd(&["CONFIG", "SET", "recipes.rv-default-maxlen", "abc"]),
    );
    let cfg: Vec<String> = q(c, &["CONFIG", "GET", "recipes.rv-default-maxlen"]);
    assert_eq!(cfg[1], "3");
}

#[test]
fn default_maxlen_from_load_args() {
    let srv = Server::builder()
        .module_args(&["rv-default-maxlen", "2"])
        .start();
    let c = &mut srv.conn();
    let cfg: Vec<String> = q(c, &["CONFIG", "GET", "recipes.rv-default-maxlen"]);
    assert_eq!(cfg, ["recipes.rv-default-maxlen", "2"]);
    for i in 0..4 {
        add(c, "k", &format!("m{i}"), 1000 + i);
    }
    assert_eq!(get(c, &["k"]), ["m3", "m2"]);
}

#[test]
fn default_maxlen_from_config_line() {
    let srv = Server::builder()
        .config("recipes.rv-default-maxlen", "4")
        .start();
    let c = &mut srv.conn();
    for i in 0..6 {
        add(c, "k", &format!("m{i}"), 1000 + i);
    }
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 4);
}

// ---------------------------------------------------------------- TTL

#[test]
fn ttl_sets_absolute_expiry() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let b = future_base();
    let at = |d: i64| (b + d).to_string();
    // no TTL: no expiry
    add(c, "k", "a", b);
    assert_eq!(pexpiretime(c, "k"), -1);
    // TTL from AT
    q::<i64>(c, &["RV.ADD", "k", "b", "AT", &at(1000), "TTL", "100"]);
    assert_eq!(pexpiretime(c, "k"), b + 1000 + 100_000);
    // an older event: expiry counts from the newest entry
    q::<i64>(c, &["RV.ADD", "k", "c", "TTL", "10", "AT", &at(-5000)]);
    assert_eq!(pexpiretime(c, "k"), b + 1000 + 10_000);
    // a newer event with a shorter TTL may shorten it (it is set, not extended)
    q::<i64>(c, &["RV.ADD", "k", "d", "AT", &at(2000), "TTL", "5"]);
    assert_eq!(pexpiretime(c, "k"), b + 2000 + 5_000);
    // without TTL the expiry is untouched
    q::<i64>(c, &["RV.ADD", "k", "e", "AT", &at(3000)]);
    assert_eq!(pexpiretime(c, "k"), b + 2000 + 5_000);
    // ... also an expiry set by someone else
    let _: () = q(c, &["PEXPIREAT", "k", &at(777_777)]);
    q::<i64>(c, &["RV.ADD", "k", "f", "AT", &at(4000)]);
    assert_eq!(pexpiretime(c, "k"), b + 777_777);
    // without AT: from the server clock
    let t0 = now_ms();
    q::<i64>(c, &["RV.ADD", "now", "a", "TTL", "60"]);
    let t1 = now_ms();
    let exp = pexpiretime(c, "now");
    let score: f64 = q(c, &["ZSCORE", "now", "a"]);
    assert_eq!(exp, score as i64 + 60_000);
    assert!(t0 + 60_000 - 50 <= exp && exp <= t1 + 60_000 + 50);
    // TTL at the top of its range
    q::<i64>(
        c,
        &["RV.ADD", "big", "a", "AT", &at(0), "TTL", "1000000000"],
    );
    assert_eq!(pexpiretime(c, "big"), b + 1_000_000_000_000);
}

#[test]
fn pxat_sets_exact_expiry_and_replicates() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    let b = future_base();
    // PXAT is absolute, whatever the entries' times.
    q::<i64>(
        c,
        &[
            "RV.ADD",
            "k",
            "a",
            "AT",
            &b.to_string(),
            "PXAT",
            &(b + 42).to_string(),
        ],
    );
    assert_eq!(pexpiretime(c, "k"), b + 42);
    // TTL and PXAT together are refused, and change nothing.
    let err = expect_err(c, &cmd(&["RV.ADD", "k", "z", "TTL", "5", "PXAT", "99"]));
    assert!(
        err.starts_with("ERR") && err.contains("TTL") && err.contains("PXAT"),
        "{err}"
    );
    let bad = expect_err(c, &cmd(&["RV.ADD", "k", "z", "PXAT", "0"]));
    assert!(bad.starts_with("ERR") && bad.contains("PXAT"), "{bad}");
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 1);
    // A PXAT already past deletes the key.
    assert_eq!(q::<i64>(c, &["RV.ADD", "gone", "a", "PXAT", "1000"]), 0);
    assert_eq!(q::<i64>(c, &["EXISTS", "gone"]), 0);
    // Deterministic calls (AT and MAXLEN named, no TTL) go out verbatim; the
    // others with explicit values: the replica ends equal either way.
    q::<i64>(
        c,
        &[
            "RV.ADD",
            "v",
            "a",
            "AT",
            &b.to_string(),
            "MAXLEN",
            "2",
            "PXAT",
            &(b + 7).to_string(),
        ],
    );
    q::<i64>(c, &["RV.ADD", "v", "b", "MAXLEN", "2", "TTL", "100"]);
    wait_for_sync(&master, &replica);
    assert_same_data(c, &mut replica.conn());
}

#[test]
fn ttl_already_past_deletes_key() {
    let srv = Server::start();
    let c = &mut srv.conn();
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k", "a", "AT", "1000", "TTL", "1"]),
        0
    );
    assert_eq!(q::<i64>(c, &["EXISTS", "k"]), 0);
    // existing list: an old event with TTL counts from the newest entry, so it stays
    let b = future_base();
    add(c, "k2", "new", b);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k2", "old", "AT", "1000", "TTL", "1"]),
        2
    );
    assert_eq!(pexpiretime(c, "k2"), b + 1000);
    // existing list whose newest entry is old: deleted
    add(c, "k3", "a", 5000);
    add(c, "k3", "b", 6000);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k3", "c", "AT", "7000", "TTL", "10"]),
        0
    );
    assert_eq!(q::<i64>(c, &["EXISTS", "k3"]), 0);
    assert_eq!(q::<i64>(c, &["RV.LEN", "k3"]), 0);
}

// ---------------------------------------------------------------- GET / REM

#[test]
fn get_options() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for (m, t) in [("a", 100), ("b", 200), ("c", 300), ("d", 400), ("e", 500)] {
        add(c, "k", m, t);
    }
    assert_eq!(get(c, &["k", "LIMIT", "2"]), ["e", "d"]);
    assert_eq!(get(c, &["k", "LIMIT", "0"]), Vec::<String>::new());
    assert_eq!(get(c, &["k", "LIMIT", "100"]), ["e", "d", "c", "b", "a"]);
    assert_eq!(get(c, &["k", "SINCE", "300"]), ["e", "d", "c"]);
    assert_eq!(get(c, &["k", "SINCE", "301"]), ["e", "d"]);
    assert_eq!(get(c, &["k", "SINCE", "0"]).len(), 5);
    assert_eq!(get(c, &["k", "SINCE", "501"]), Vec::<String>::new());
    assert_eq!(get(c, &["k", "SINCE", "200", "LIMIT", "2"]), ["e", "d"]);
    assert_eq!(get(c, &["k", "LIMIT", "10", "SINCE", "400"]), ["e", "d"]);
    assert_eq!(
        pairs(q(c, &["RV.GET", "k", "WITHSCORES", "LIMIT", "2"])),
        e(&[("e", 500), ("d", 400)])
    );
    assert_eq!(
        pairs(q(
            c,
            &["RV.GET", "k", "since", "400", "withscores", "limit", "5"]
        )),
        e(&[("e", 500), ("d", 400)])
    );
    assert_eq!(
        get(c, &["missing", "LIMIT", "3", "SINCE", "1", "WITHSCORES"]),
        Vec::<String>::new()
    );
}

#[test]
fn rem_and_len() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for (m, t) in [("a", 1), ("b", 2), ("c", 3)] {
        add(c, "k", m, t);
    }
    assert_eq!(q::<i64>(c, &["RV.REM", "k", "a", "zz", "a"]), 1);
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 2);
    assert_eq!(q::<i64>(c, &["RV.REM", "k", "nope"]), 0);
    assert_eq!(q::<i64>(c, &["RV.REM", "missing", "a"]), 0);
    assert_eq!(q::<i64>(c, &["EXISTS", "missing"]), 0);
    assert_eq!(q::<i64>(c, &["RV.REM", "k", "b", "c"]), 2);
    assert_eq!(
        q::<i64>(c, &["EXISTS", "k"]),
        0,
        "empty list must be deleted"
    );
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 0);
}

#[test]
fn binary_members() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let m1: &[u8] = b"a\0b";
    let m2: &[u8] = b"a\0c\xff\r\n";
    let r: i64 = redis::cmd("RV.ADD")
        .arg("k")
        .arg(m1)
        .arg("AT")
        .arg(10)
        .query(c)
        .unwrap();
    assert_eq!(r, 1);
    let r: i64 = redis::cmd("RV.ADD")
        .arg("k")
        .arg(m2)
        .arg("AT")
        .arg(20)
        .query(c)
        .unwrap();
    assert_eq!(r, 2);
    let got: Vec<Vec<u8>> = redis::cmd("RV.GET").arg("k").query(c).unwrap();
    assert_eq!(got, vec![m2.to_vec(), m1.to_vec()]);
    let r: i64 = redis::cmd("RV.REM").arg("k").arg(m1).query(c).unwrap();
    assert_eq!(r, 1);
    let got: Vec<Vec<u8>> = redis::cmd("RV.GET").arg("k").query(c).unwrap();
    assert_eq!(got, vec![m2.to_vec()]);
    // a member that looks like an option keyword is a member
    assert_eq!(q::<i64>(c, &["RV.ADD", "k2", "AT", "AT", "5"]), 1);
    assert_eq!(get_ws(c, "k2"), e(&[("AT", 5)]));
}

#[test]
fn recipe_compatibility() {
    let srv = Server::start();
    let c = &mut srv.conn();
    // data written by the plain recipe
    let _: i64 = q(c, &["ZADD", "k", "1000", "a", "2000", "b"]);
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 2);
    assert_eq!(add(c, "k", "c", 1500), 3);
    assert_eq!(get(c, &["k"]), ["b", "c", "a"]);
    assert_eq!(add(c, "k", "a", 500), 3); // older: ignored
    assert_eq!(q::<i64>(c, &["RV.REM", "k", "b"]), 1);
    assert_eq!(get_ws(c, "k"), e(&[("c", 1500), ("a", 1000)]));
    // RV data read by the recipe
    for (m, t) in [("x", 30), ("y", 10), ("z", 20), ("w", 20)] {
        add(c, "rv", m, t);
    }
    assert_eq!(zrev_ws(c, "rv"), get_ws(c, "rv"));
    assert_eq!(
        zrev_ws(c, "rv"),
        e(&[("x", 30), ("z", 20), ("w", 20), ("y", 10)])
    );
}

// ---------------------------------------------------------------- errors

/// Options RV.ADD refuses, each with the error it must reply (see
/// [`assert_refusals`]).
#[rustfmt::skip]
const BAD_ADD_OPTIONS: &[(&str, &str)] = &[
    ("AT abc", "ERR *AT*"),
    ("AT ''", "ERR *AT*"),
    ("AT -1", "ERR *AT*"),
    ("AT 1.5", "ERR *AT*"),
    ("AT 1e3", "ERR *AT*"),
    ("AT nan", "ERR *AT*"),
    ("AT inf", "ERR *AT*"),
    ("AT 9007199254740993", "ERR *AT*"),
    ("AT 99999999999999999999", "ERR *AT*"),
    ("AT ' 5'", "ERR *AT*"),
    ("AT '5 '", "ERR *AT*"),
    ("AT 0x10", "ERR *AT*"),
    ("MAXLEN -1", "ERR *MAXLEN*"),
    ("MAXLEN 1000000001", "ERR *MAXLEN*"),
    ("MAXLEN x", "ERR *MAXLEN*"),
    ("MAXLEN 99999999999999999999", "ERR *MAXLEN*"),
    ("TTL 0", "ERR *TTL*"),
    ("TTL -1", "ERR *TTL*"),
    ("TTL 1000000001", "ERR *TTL*"),
    ("TTL 1.5", "ERR *TTL*"),
    ("TTL ''", "ERR *TTL*"),
    ("TTL 99999999999999999999", "ERR *TTL*"),
    ("AT 5 AT 6", "ERR *AT*"),
    ("MAXLEN 5 MAXLEN 5", "ERR *MAXLEN*"),
    ("TTL 5 AT 5 TTL 5", "ERR *TTL*"),
    ("AT", "ERR *AT*"),
    ("AT 5 MAXLEN", "ERR *MAXLEN*"),
    ("TTL", "ERR *TTL*"),
    ("bogus 1", "ERR *bogus*"),
    ("AT 5 bogus", "ERR *bogus*"),
    ("LIMIT 5", "ERR *LIMIT*"),
];

/// Options RV.GET refuses, each with the error it must reply.
#[rustfmt::skip]
const BAD_GET_OPTIONS: &[(&str, &str)] = &[
    ("LIMIT -1", "ERR *LIMIT*"),
    ("LIMIT x", "ERR *LIMIT*"),
    ("LIMIT ''", "ERR *LIMIT*"),
    ("LIMIT 99999999999999999999", "ERR *LIMIT*"),
    ("LIMIT", "ERR *LIMIT*"),
    ("LIMIT 1 LIMIT 2", "ERR *LIMIT*"),
    ("SINCE x", "ERR *SINCE*"),
    ("SINCE nan", "ERR *SINCE*"),
    ("SINCE 99999999999999999999", "ERR *SINCE*"),
    ("SINCE", "ERR *SINCE*"),
    ("SINCE 1 SINCE 1", "ERR *SINCE*"),
    ("WITHSCORES WITHSCORES", "ERR *WITHSCORES*"),
    ("bogus", "ERR *bogus*"),
    ("AT 5", "ERR *AT*"),
];

/// The rows with `command` (the name and the first arguments) before their
/// options.
fn with_command<'a>(command: &str, rows: &[(&str, &'a str)]) -> Vec<(String, &'a str)> {
    rows.iter()
        .map(|(options, want)| (format!("{command} {options}"), *want))
        .collect()
}

#[test]
fn add_rejects_bad_options() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let b = future_base();
    add(c, "k", "a", 1000);
    q::<i64>(c, &["RV.ADD", "t", "a", "AT", &b.to_string(), "TTL", "100"]);
    for key in ["k", "t", "new"] {
        assert_refusals(
            c,
            &with_command(&format!("RV.ADD {key} m"), BAD_ADD_OPTIONS),
        );
    }
    assert_eq!(get_ws(c, "k"), e(&[("a", 1000)]));
    assert_eq!(q::<i64>(c, &["EXISTS", "new"]), 0);
    // boundaries are accepted (the latest once the guard on client times is lifted)
    let _: () = q(c, &["CONFIG", "SET", "recipes.max-future-ms", "0"]);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "k", "max", "AT", "9007199254740992"]),
        2
    );
    assert_eq!(q::<i64>(c, &["RV.ADD", "k", "zero", "AT", "0"]), 3);
    assert_eq!(
        get_ws(c, "k"),
        e(&[("max", 9007199254740992), ("a", 1000), ("zero", 0)])
    );
}

#[test]
fn get_rejects_bad_options() {
    let srv = Server::start();
    let c = &mut srv.conn();
    add(c, "k", "a", 1000);
    for key in ["k", "missing"] {
        assert_refusals(c, &with_command(&format!("RV.GET {key}"), BAD_GET_OPTIONS));
    }
}

#[test]
fn arity_errors() {
    let srv = Server::start();
    let c = &mut srv.conn();
    add(c, "k", "a", 1000);
    let arity = "ERR wrong number of arguments*";
    assert_refusals(
        c,
        &[
            ("RV.ADD", arity),
            ("RV.ADD k", arity),
            ("RV.GET", arity),
            ("RV.REM", arity),
            ("RV.REM k", arity),
            ("RV.LEN", arity),
            ("RV.LEN k extra", arity),
        ],
    );
}

#[test]
fn wrongtype() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let _: () = q(c, &["SET", "s", "v"]);
    let _: i64 = q(c, &["RPUSH", "l", "x"]);
    for key in ["s", "l"] {
        let rows: Vec<(String, &str)> = [
            format!("RV.ADD {key} m"),
            format!("RV.ADD {key} m AT 5 TTL 5 MAXLEN 1"),
            format!("RV.GET {key}"),
            format!("RV.GET {key} WITHSCORES"),
            format!("RV.REM {key} m"),
            format!("RV.LEN {key}"),
        ]
        .into_iter()
        .map(|line| (line, "WRONGTYPE *"))
        .collect();
        assert_refusals(c, &rows);
    }
}

#[test]
fn bad_inputs_never_crash() {
    let srv = Server::start();
    let c = &mut srv.conn();
    add(c, "k", "a", 1);
    let weird = [
        "",
        "\0",
        "-0",
        "+1",
        "0",
        "-9223372036854775808",
        "9223372036854775807",
        "18446744073709551616",
        "99999999999999999999",
        "1e308",
        "-inf",
        "+inf",
        "inf",
        "nan",
        "NaN",
        "0.0",
        "1.",
        " ",
        "AT",
        "MAXLEN",
        "TTL",
        "LIMIT",
        "SINCE",
        "WITHSCORES",
    ];
    let mut rng = StdRng::seed_from_u64(7);
    for verb in ["RV.ADD", "RV.GET", "RV.REM", "RV.LEN"] {
        for _ in 0..300 {
            let n = rng.gen_range(0..7);
            let mut command = redis::cmd(verb);
            for _ in 0..n {
                command.arg(*weird.choose(&mut rng).unwrap());
            }
            let _ = command.query::<redis::Value>(c);
        }
    }
    // empty key and members with NUL bytes are fine
    let _: i64 = q(c, &["DEL", ""]);
    let r: redis::RedisResult<i64> = redis::cmd("RV.ADD").arg("").arg("\0").query(c);
    assert_eq!(r.unwrap(), 1);
    let pong: String = q(&mut srv.conn(), &["PING"]);
    assert_eq!(pong, "PONG");
}

#[test]
fn command_keys_declared() {
    let srv = Server::start();
    assert_keys_declared(
        &mut srv.conn(),
        &[
            "RV.ADD key1 m AT 5 TTL 5",
            "RV.GET key1 LIMIT 5",
            "RV.REM key1 a b",
            "RV.LEN key1",
        ],
    );
}

// ---------------------------------------------------------------- notifications & INFO

#[test]
fn keyspace_notifications() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);

    // run a command, then a sentinel SET; return the (event, key) list seen in between
    let mut round = |args: &[&str]| -> Vec<(String, String)> {
        let _: redis::Value = q(c, args);
        let _: () = q(c, &["SET", "sentinel", "1"]);
        let mut evs = vec![];
        loop {
            let msg = ps.get_message().expect("notification (timed out?)");
            let ev = msg
                .get_channel_name()
                .trim_start_matches("__keyevent@0__:")
                .to_string();
            let key: String = msg.get_payload().unwrap();
            if ev == "set" && key == "sentinel" {
                return evs;
            }
            evs.push((ev, key));
        }
    };
    let has = |evs: &[(String, String)], ev: &str| evs.iter().any(|(e, k)| e == ev && k == "k");
    let b = future_base().to_string();

    let evs = round(&["RV.ADD", "k", "a", "AT", "1000"]);
    assert!(has(&evs, "rv.add"), "{evs:?}");
    assert!(!has(&evs, "rv.trim") && !has(&evs, "expire"), "{evs:?}");

    let evs = round(&["RV.ADD", "k", "b", "AT", "2000"]);
    assert!(has(&evs, "rv.add") && !has(&evs, "rv.trim"), "{evs:?}");

    let evs = round(&["RV.ADD", "k", "c", "AT", "3000", "MAXLEN", "1"]);
    assert!(has(&evs, "rv.add") && has(&evs, "rv.trim"), "{evs:?}");

    let evs = round(&["RV.ADD", "k", "d", "AT", &b, "TTL", "100"]);
    assert!(has(&evs, "rv.add") && has(&evs, "expire"), "{evs:?}");

    // an older event changes nothing in place but is still an add
    let evs = round(&["RV.ADD", "k", "d", "AT", "1"]);
    assert!(has(&evs, "rv.add"), "{evs:?}");

    let evs = round(&["RV.REM", "k", "nope"]);
    assert!(!has(&evs, "rv.rem"), "{evs:?}");

    let evs = round(&["RV.REM", "k", "c"]);
    assert!(has(&evs, "rv.rem"), "{evs:?}");

    let evs = round(&["RV.GET", "k"]);
    assert!(evs.is_empty(), "reads must not notify: {evs:?}");
    let evs = round(&["RV.LEN", "k"]);
    assert!(evs.is_empty(), "reads must not notify: {evs:?}");
}

#[test]
fn info_counters() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let info = srv.info("recipes");
    assert!(
        info.to_lowercase().contains("# recipes"),
        "INFO recipes:\n{info}"
    );
    let names = [
        "rv_add_calls",
        "rv_get_calls",
        "rv_rem_calls",
        "rv_len_calls",
        "rv_trims",
        "rv_errors",
    ];
    let before: Vec<i64> = names.iter().map(|n| srv.recipes_info(n)).collect();
    add(c, "k", "a", 1);
    add(c, "k", "b", 2);
    q::<i64>(c, &["RV.ADD", "k", "c", "AT", "3", "MAXLEN", "1"]); // trims 2
    get(c, &["k"]);
    get(c, &["missing"]);
    q::<i64>(c, &["RV.REM", "k", "zz"]);
    q::<i64>(c, &["RV.LEN", "k"]);
    let after: Vec<i64> = names.iter().map(|n| srv.recipes_info(n)).collect();
    let delta: Vec<i64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(delta, [3, 2, 1, 1, 2, 0], "deltas of {names:?}");
    expect_err(c, &cmd(&["RV.ADD", "k", "m", "AT", "x"]));
    assert_eq!(srv.recipes_info("rv_errors") - after[5], 1);
    // INFO everything / all includes the section too
    let all: String = q(c, &["INFO", "everything"]);
    assert!(
        all.contains("rv_add_calls"),
        "INFO everything lacks recipes fields"
    );
}

// ---------------------------------------------------------------- model-based

/// Reference model of one RV list.
#[derive(Default, Clone, Debug)]
struct Model {
    times: BTreeMap<Vec<u8>, i64>,
}

impl Model {
    fn add(&mut self, member: &[u8], t: i64, maxlen: usize) -> i64 {
        let cur = self.times.entry(member.to_vec()).or_insert(t);
        if t > *cur {
            *cur = t;
        }
        if maxlen > 0 {
            while self.times.len() > maxlen {
                let lowest = self
                    .times
                    .iter()
                    .map(|(m, t)| (*t, m.clone()))
                    .min()
                    .unwrap();
                self.times.remove(&lowest.1);
            }
        }
        self.times.len() as i64
    }
    /// Newest first; ties by member descending (reverse sorted-set order).
    fn entries(&self) -> Entries {
        let mut v: Vec<(i64, Vec<u8>)> = self.times.iter().map(|(m, t)| (*t, m.clone())).collect();
        v.sort();
        v.reverse();
        v.into_iter().map(|(t, m)| (m, t as f64)).collect()
    }
}

fn random_events(rng: &mut StdRng, n: usize) -> Vec<(Vec<u8>, i64)> {
    let base = 1_700_000_000_000i64;
    let span = *[5i64, 50, 1000].choose(rng).unwrap();
    (0..n)
        .map(|_| {
            let m = format!("m{:02}", rng.gen_range(0..20)).into_bytes();
            (m, base + rng.gen_range(0..span))
        })
        .collect()
}

/// Apply events with one pipeline; returns the replies.
fn apply(
    c: &mut Connection,
    key: &str,
    events: &[(Vec<u8>, i64)],
    maxlen: Option<usize>,
) -> Vec<i64> {
    let mut p = redis::pipe();
    for (m, t) in events {
        let command = p.cmd("RV.ADD").arg(key).arg(m).arg("AT").arg(*t);
        if let Some(n) = maxlen {
            command.arg("MAXLEN").arg(n);
        }
    }
    p.query(c).expect("RV.ADD pipeline")
}

#[test]
fn model_replay_with_maxlen() {
    let seed = seed_from_env("RV_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let srv = Server::start();
    let c = &mut srv.conn();
    for case in 0..40 {
        let key = format!("k{case}");
        let maxlen = *[0usize, 1, 2, 3, 5, 8, 13, 30].choose(&mut rng).unwrap();
        let n = rng.gen_range(1..80);
        let events = random_events(&mut rng, n);
        let mut model = Model::default();
        let expected: Vec<i64> = events
            .iter()
            .map(|(m, t)| model.add(m, *t, maxlen))
            .collect();
        let replies = apply(c, &key, &events, Some(maxlen));
        let ctx = format!("RV_SEED={seed} case {case} maxlen {maxlen} events {events:?}");
        assert_eq!(replies, expected, "replies differ; {ctx}");
        assert_eq!(get_ws(c, &key), model.entries(), "list differs; {ctx}");
        assert_eq!(
            q::<i64>(c, &["RV.LEN", &key]),
            model.times.len() as i64,
            "{ctx}"
        );
        // idempotence: replaying every event again changes nothing
        let len = model.times.len() as i64;
        let replies = apply(c, &key, &events, Some(maxlen));
        assert!(
            replies.iter().all(|r| *r == len),
            "replay replies {replies:?} != {len}; {ctx}"
        );
        assert_eq!(
            get_ws(c, &key),
            model.entries(),
            "replay changed the list; {ctx}"
        );
        // LIMIT / SINCE agree with the model
        let lim = rng.gen_range(0..10usize);
        let got = pairs(q(
            c,
            &["RV.GET", &key, "WITHSCORES", "LIMIT", &lim.to_string()],
        ));
        let want: Entries = model.entries().into_iter().take(lim).collect();
        assert_eq!(got, want, "LIMIT {lim}; {ctx}");
        let since = events[rng.gen_range(0..events.len())].1;
        let got = pairs(q(
            c,
            &["RV.GET", &key, "SINCE", &since.to_string(), "WITHSCORES"],
        ));
        let want: Entries = model
            .entries()
            .into_iter()
            .filter(|(_, t)| *t >= since as f64)
            .collect();
        assert_eq!(got, want, "SINCE {since}; {ctx}");
    }
}

#[test]
fn model_order_independent_without_maxlen() {
    let seed = seed_from_env("RV_SEED", 1);
    let mut rng = StdRng::seed_from_u64(seed);
    let srv = Server::start();
    let c = &mut srv.conn();
    for case in 0..30 {
        let n = rng.gen_range(1..100);
        let events = random_events(&mut rng, n);
        let mut model = Model::default();
        for (m, t) in &events {
            model.add(m, *t, 0);
        }
        let mut results = vec![];
        for shuffle in 0..3 {
            let mut ev = events.clone();
            ev.shuffle(&mut rng);
            let key = format!("k{case}-{shuffle}");
            apply(c, &key, &ev, None);
            // and duplicated: idempotence
            apply(c, &key, &ev, None);
            results.push(get_ws(c, &key));
        }
        let ctx = format!("RV_SEED={seed} case {case} events {events:?}");
        assert_eq!(results[0], model.entries(), "{ctx}");
        assert_eq!(results[1], results[0], "{ctx}");
        assert_eq!(results[2], results[0], "{ctx}");
    }
}

// ---------------------------------------------------------------- RESP3

fn flatten(v: redis::Value, out: &mut Vec<redis::Value>) {
    match v {
        redis::Value::Array(items) => items.into_iter().for_each(|i| flatten(i, out)),
        other => out.push(other),
    }
}

#[test]
fn resp3_replies() {
    let srv = Server::start();
    let c = &mut srv.conn_resp3();
    assert_eq!(q::<i64>(c, &["RV.ADD", "k", "a", "AT", "1000"]), 1);
    assert_eq!(q::<i64>(c, &["RV.ADD", "k", "b", "AT", "2000"]), 2);
    assert_eq!(q::<i64>(c, &["RV.LEN", "k"]), 2);
    assert_eq!(get(c, &["k"]), ["b", "a"]);
    let v: redis::Value = q(c, &["RV.GET", "k", "WITHSCORES"]);
    let mut flat = vec![];
    flatten(v, &mut flat);
    use redis::Value::{BulkString, Double};
    assert_eq!(
        flat,
        vec![
            BulkString(b"b".to_vec()),
            Double(2000.0),
            BulkString(b"a".to_vec()),
            Double(1000.0)
        ]
    );
    assert_eq!(get(c, &["missing"]), Vec::<String>::new());
}
