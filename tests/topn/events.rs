//! RESP3 replies, keyspace notifications and INFO counters.
use super::*;

#[test]
fn resp3_replies() {
    let srv = Server::start();
    let c = &mut srv.conn_resp3();
    let base = now_ms() / 60_000 * 60_000;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    incr(c, "k", "a", 2, base);
    incr(c, "k", "b", 1, base);
    let v: Value = q(c, &["TOPN.INFO", "k"]);
    let Value::Map(m) = v else {
        panic!("TOPN.INFO under RESP3 is not a map: {v:?}")
    };
    let names: Vec<String> = m
        .iter()
        .map(|(k, _)| match k {
            Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
            Value::SimpleString(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        ["bucket", "window", "align", "members", "buckets", "memory"]
    );
    assert_eq!(m[0].1, Value::Int(60));
    assert_eq!(m[2].1, Value::Int(0));
    assert_eq!(m[3].1, Value::Int(2));
    let v: Vec<Value> = q(c, &["TOPN.TOP", "k", "AT", &base.to_string(), "WITHCOUNTS"]);
    assert_eq!(pairs(v), rows(&[("a", 2), ("b", 1)]));
    let v: Vec<i64> = q(c, &["TOPN.COUNT", "k", "a", "zz", "AT", &base.to_string()]);
    assert_eq!(v, [2, 0]);
}

#[test]
fn notifications_and_info_counters() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let ev = |e: &str, k: &str| (e.to_string(), k.to_string());
    let bm = 60_000;
    let base = now_ms() / bm * bm;

    q_ok(c, &["TOPN.CREATE", "a", "BUCKET", "60", "WINDOW", "3"]);
    incr(c, "a", "m1", 1, base);
    incr(c, "a", "m2", 1, base);
    incr(c, "b", "m1", 1, base); // created by INCR
                                 // reads and errors: no events
    let _ = top(c, "a", 10, base);
    let _ = top_ws(c, "TOPN.TOP24", "b", 10, None);
    let _ = count(c, "a", &["m1"], None);
    let _ = info(c, "a");
    let _ = expect_err(c, &cmd(&["TOPN.INCR", "a", "m", "BY", "x"]));
    let _ = expect_err(c, &cmd(&["TOPN.CREATE", "a"]));
    let _ = expect_err(c, &cmd(&["TOPN.TOP24", "a"]));
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("topn.create", "a"),
            ev("topn.incr", "a"),
            ev("expire", "a"),
            ev("topn.incr", "a"),
            ev("topn.incr", "b"),
            ev("expire", "b"),
        ],
        "a write that moves the key's TTL fires expire, one that keeps it does not"
    );
    // An event outside the window changes nothing: no key, no event at all (also on a key
    // that exists).
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "gone", "m", "AT", "5"]), 0);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "a", "m1", "AT", "5"]), 1);
    q_ok(c, &["SET", "sentinel", "1"]);
    let got = events_until_sentinel(&mut ps);
    assert!(
        got.is_empty(),
        "an event outside the window fired keyspace events: {got:?}"
    );
    assert!(!exists(c, "gone"));
    drop(ps);
    // Module class alone: only `d` (module events) + E (keyevent).
    q_ok(c, &["CONFIG", "SET", "notify-keyspace-events", "Ed"]);
    let mut sub = srv.conn();
    let mut ps = sub.as_pubsub();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ps.subscribe("__keyevent@0__:topn.incr").unwrap();
    incr(c, "a", "m3", 1, base);
    let msg = ps.get_message().expect("topn.incr under class d");
    let key: String = msg.get_payload().unwrap();
    assert_eq!(key, "a");
    drop(ps);

    // INFO counters on this fresh server (exact).
    assert_eq!(recipes_info(c, "topn_create_calls"), 2); // CREATE a, failed CREATE a
    assert_eq!(recipes_info(c, "topn_incr_calls"), 7); // 3 + failed + 2 late + m3
    assert_eq!(recipes_info(c, "topn_top_calls"), 1);
    assert_eq!(recipes_info(c, "topn_top24_calls"), 2); // ok, err
    assert_eq!(recipes_info(c, "topn_late_events"), 2);
    assert_eq!(recipes_info(c, "topn_count_calls"), 1);
    assert_eq!(recipes_info(c, "topn_info_calls"), 1);
    assert_eq!(recipes_info(c, "topn_errors"), 3);
    // members gauge: a {m1,m2,m3}, b {m1}
    assert_eq!(recipes_info(c, "topn_members"), 4);
    let mut p = redis::pipe();
    for i in 0..100 {
        p.cmd("TOPN.INCR")
            .arg("c")
            .arg(format!("x{i}"))
            .arg("AT")
            .arg(base);
    }
    let _: Vec<i64> = p.query(c).unwrap();
    assert_eq!(recipes_info(c, "topn_members"), 104);
    assert_eq!(q::<i64>(c, &["COPY", "c", "c2"]), 1);
    assert_eq!(recipes_info(c, "topn_members"), 204);
    assert_eq!(q::<i64>(c, &["DEL", "c"]), 1);
    // Valkey 8 has lazyfree-lazy-user-del on by default, so DEL frees a value
    // this big on a background thread and the gauge follows a moment later
    // (Redis 7.0/7.2 free it at once; tests/compat.rs pins the difference).
    assert!(
        wait_until(Duration::from_secs(5), || recipes_info(
            &mut srv.conn(),
            "topn_members"
        ) == 104),
        "members gauge after DEL: {}",
        recipes_info(c, "topn_members")
    );
    q_ok(c, &["RENAME", "c2", "c3"]);
    assert_eq!(recipes_info(c, "topn_members"), 104);
    let _: Value = q(c, &["UNLINK", "c3"]);
    assert!(
        wait_until(Duration::from_secs(5), || recipes_info(
            &mut srv.conn(),
            "topn_members"
        ) == 4),
        "members gauge after UNLINK: {}",
        recipes_info(c, "topn_members")
    );
    q_ok(c, &["FLUSHALL"]);
    assert!(
        wait_until(Duration::from_secs(5), || recipes_info(
            &mut srv.conn(),
            "topn_members"
        ) == 0),
        "members gauge after FLUSHALL: {}",
        recipes_info(c, "topn_members")
    );
    // expired buckets: a bucket leaving the window is counted.
    let e0 = recipes_info(c, "topn_expired_buckets");
    q_ok(c, &["TOPN.CREATE", "e", "BUCKET", "60", "WINDOW", "2"]);
    incr(c, "e", "m", 1, base);
    incr(c, "e", "m", 1, base + bm);
    assert_eq!(recipes_info(c, "topn_expired_buckets"), e0);
    incr(c, "e", "m", 1, base + 2 * bm);
    for _ in 0..3 {
        incr(c, "e", "m", 1, base + 2 * bm);
    }
    assert_eq!(recipes_info(c, "topn_expired_buckets"), e0 + 1);
    assert_eq!(count(c, "e", &["m"], Some(base + 2 * bm)), [5]);
}
