//! Keyspace notifications and INFO counters.
use super::*;
use std::time::Duration;

#[test]
fn notifications_and_info() {
    let srv = Server::start();
    let mut c = srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(&mut c, &mut sub);

    let ev = |e: &str, k: &str| (e.to_string(), k.to_string());
    // push, no trim
    q::<i64>(&mut c, &["TL.PUSH", "n", "a", "MAXLEN", "2"]);
    q::<i64>(&mut c, &["TL.PUSH", "n", "b", "MAXLEN", "2"]);
    // push with trim
    q::<i64>(&mut c, &["TL.PUSH", "n", "c", "MAXLEN", "2"]);
    // push with TTL (no trim)
    q::<i64>(&mut c, &["TL.PUSH", "n", "d", "MAXLEN", "5", "TTL", "100"]);
    // push with trim and TTL
    q::<i64>(&mut c, &["TL.PUSH", "n", "e", "MAXLEN", "1", "TTL", "100"]);
    // rem that removes nothing: no event
    q::<i64>(&mut c, &["TL.REM", "n", "zz"]);
    // read-only commands: no event
    q::<Vec<String>>(&mut c, &["TL.RANGE", "n"]);
    q::<i64>(&mut c, &["TL.LEN", "n"]);
    // errors: no event
    let _ = expect_err(&mut c, &cmd(&["TL.PUSH", "n", "x", "MAXLEN", "-1"]));
    let _ = expect_err(&mut c, &cmd(&["TL.PUSH", "n", "x", "TTL", "0"]));
    // rem that removes (not emptying)
    q::<i64>(&mut c, &["TL.PUSH", "n", "f"]);
    q::<i64>(&mut c, &["TL.REM", "n", "e"]);
    // rem that empties: tl.rem then del
    q::<i64>(&mut c, &["TL.REM", "n", "f", "COUNT", "0"]);
    q_ok(&mut c, &["SET", "sentinel", "1"]);
    let got = events_until_sentinel(&mut ps);
    assert_eq!(
        got,
        vec![
            ev("tl.push", "n"),
            ev("tl.push", "n"),
            ev("tl.push", "n"),
            ev("tl.trim", "n"),
            ev("tl.push", "n"),
            ev("expire", "n"),
            ev("tl.push", "n"),
            ev("tl.trim", "n"),
            ev("expire", "n"),
            ev("tl.push", "n"),
            ev("tl.rem", "n"),
            ev("tl.rem", "n"),
            ev("del", "n"),
        ]
    );
    // Keyspace channel too.
    drop(ps);
    let mut sub2 = srv.conn();
    let mut ps2 = sub2.as_pubsub();
    ps2.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ps2.subscribe("__keyspace@0__:ks").unwrap();
    q::<i64>(&mut c, &["TL.PUSH", "ks", "a"]);
    let m = ps2.get_message().unwrap();
    assert_eq!(m.get_payload::<String>().unwrap(), "tl.push");
    drop(ps2);

    // INFO counters on a fresh server.
    let srv = Server::start();
    let mut c = srv.conn();
    for f in [
        "tl_push_calls",
        "tl_range_calls",
        "tl_rem_calls",
        "tl_len_calls",
        "tl_trims",
        "tl_errors",
    ] {
        assert_eq!(recipes_info(&mut c, f), 0, "{f}");
    }
    for i in 0..7 {
        q::<i64>(
            &mut c,
            &["TL.PUSH", "k", &i.to_string(), "MAXLEN", "3", "SLACK", "2"],
        );
    } // lens 1 2 3 4 3(trim 2) 4 3(trim 2) -> 4 trimmed
    q::<Vec<String>>(&mut c, &["TL.RANGE", "k"]);
    q::<Vec<String>>(&mut c, &["TL.RANGE", "missing"]);
    q::<i64>(&mut c, &["TL.REM", "k", "6"]);
    q::<i64>(&mut c, &["TL.LEN", "k"]);
    q::<i64>(&mut c, &["TL.LEN", "k"]);
    q::<i64>(&mut c, &["TL.LEN", "k"]);
    let _ = expect_err(&mut c, &cmd(&["TL.PUSH", "k", "x", "SLACK", "-1"]));
    let _ = expect_err(&mut c, &cmd(&["TL.RANGE", "k", "COUNT", "-1"]));
    q_ok(&mut c, &["SET", "s", "1"]);
    let _ = expect_err(&mut c, &cmd(&["TL.LEN", "s"]));
    let _ = expect_err(&mut c, &cmd(&["TL.REM", "s", "x"]));
    assert_eq!(recipes_info(&mut c, "tl_push_calls"), 8);
    assert_eq!(recipes_info(&mut c, "tl_range_calls"), 3);
    assert_eq!(recipes_info(&mut c, "tl_rem_calls"), 2);
    assert_eq!(recipes_info(&mut c, "tl_len_calls"), 4);
    assert_eq!(recipes_info(&mut c, "tl_trims"), 4);
    assert_eq!(recipes_info(&mut c, "tl_errors"), 4);
    // INFO recipes section header present.
    let info: String = redis::cmd("INFO").arg("recipes").query(&mut c).unwrap();
    assert!(
        info.contains("# recipes") || info.contains("# Recipes"),
        "{info}"
    );
}
