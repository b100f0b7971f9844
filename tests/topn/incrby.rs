//! TOPN.INCRBY: many events at one time in one call, all or nothing.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn incrby(c: &mut Conn, key: &str, at: Option<i64>, pairs: &[(i64, &str)]) -> Vec<i64> {
    run(c, &incrby_cmd(key, at, pairs))
}

fn incrby_cmd(key: &str, at: Option<i64>, pairs: &[(i64, &str)]) -> redis::Cmd {
    let mut k = redis::cmd("TOPN.INCRBY");
    k.arg(key);
    if let Some(at) = at {
        k.arg("AT").arg(at);
    }
    for (by, member) in pairs {
        k.arg(*by).arg(*member);
    }
    k
}

fn dump(c: &mut Conn, key: &str) -> Option<Vec<u8>> {
    q(c, &["DUMP", key])
}

#[test]
fn replies_are_each_members_count_after_the_call() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    incr(c, "k", "a", 5, base - bm);
    // A member given twice shows its final count in both places.
    let got = incrby(
        c,
        "k",
        Some(base),
        &[(2, "a"), (3, "b"), (1, "a"), (-4, "c")],
    );
    assert_eq!(got, [8, 3, 8, -4]);
    assert_eq!(count(c, "k", &["a", "b", "c"], Some(base)), [8, 3, -4]);
    // Lower case AT; a member may be a keyword.
    let got: Vec<i64> = q(c, &["TOPN.INCRBY", "k", "at", &base.to_string(), "1", "AT"]);
    assert_eq!(got, [1]);
    // Zero increments count nothing but move the clock, as INCR BY 0 does.
    assert_eq!(incrby(c, "k", Some(base + 2 * bm), &[(0, "b")]), [3]);
    assert_eq!(count(c, "k", &["a"], Some(base + 2 * bm)), [3]);
    // At the server's time, creating the key with the defaults.
    avoid_boundary(HOUR_MS, 2_000);
    assert_eq!(
        incrby(c, "new", None, &[(1, "x"), (2, "y"), (3, "x")]),
        [4, 2, 4]
    );
    let i = info(c, "new");
    assert_eq!((i["bucket"], i["window"]), (3600, 24));
    assert!(pexpiretime(c, "new") > now_ms());
    // RESP3: an array of integers.
    let c3 = &mut srv.conn_resp3();
    let v: Value = q(c3, &["TOPN.INCRBY", "k", "AT", &base.to_string(), "1", "b"]);
    assert_eq!(v, Value::Array(vec![Value::Int(4)]));
}

#[test]
fn errors_name_the_argument_and_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    let at = base.to_string();
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    incr(c, "k", "a", i64::MAX - 1, base);
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "cap",
            "BUCKET",
            "60",
            "WINDOW",
            "3",
            "CAPACITY",
            "2",
        ],
    );
    incrby(c, "cap", Some(base), &[(1, "a")]);
    q_ok(c, &["SET", "str", "x"]);
    let before = dump_all(c);
    let max = i64::MAX.to_string();
    for (args, want) in [
        (&["TOPN.INCRBY", "k"][..], "ERR wrong number of arguments"),
        (&["TOPN.INCRBY", "k", "1"], "ERR wrong number of arguments"),
        (&["TOPN.INCRBY", "k", "1", "a", "2"], "ERR wrong number"),
        (&["TOPN.INCRBY", "k", "AT", &at], "ERR wrong number"),
        (&["TOPN.INCRBY", "k", "AT", &at, "1"], "ERR wrong number"),
        (
            &["TOPN.INCRBY", "k", "1", "a", "x", "b"],
            "ERR increment (argument 4) must be an integer",
        ),
        (
            &["TOPN.INCRBY", "k", "AT", &at, "1.5", "b"],
            "ERR increment (argument 4) must be an integer",
        ),
        (&["TOPN.INCRBY", "k", "AT", "x", "1", "b"], "ERR AT"),
        (&["TOPN.INCRBY", "k", "AT", "1700000000", "1", "b"], "AT"),
        (&["TOPN.INCRBY", "k", "1", "a", "AT", &at], "argument 4"),
        // All or nothing: the pair that would overflow is named, the others count nothing.
        (
            &["TOPN.INCRBY", "k", "AT", &at, "1", "b", "1", "a", "1", "a"],
            "ERR increment (argument 8) would overflow its member's count",
        ),
        (
            &["TOPN.INCRBY", "new", "AT", &at, "1", "b", &max, "b"],
            "ERR increment (argument 6) would overflow",
        ),
        (
            &["TOPN.INCRBY", "cap", "AT", &at, "1", "b", "0", "c"],
            "ERR increment (argument 6) must be a positive integer on a key with CAPACITY",
        ),
        (
            &["TOPN.INCRBY", "cap", "-1", "c"],
            "ERR increment (argument 2) must be a positive",
        ),
        (
            &["TOPN.INCRBY", "cap", "AT", &at, &max, "a"],
            "would overflow",
        ),
        (&["TOPN.INCRBY", "str", "1", "a"], "WRONGTYPE"),
    ] {
        let got = expect_err(c, &cmd(args));
        assert!(
            got.starts_with(want) || got.contains(want),
            "{args:?}: {got}"
        );
        assert_eq!(dump_all(c), before, "{args:?} changed data");
    }
    assert!(!exists(c, "new"), "a refused call left a key it created");
}

/// A late AT changes nothing, replicates nothing, fires nothing; the reply
/// is what INCR answers for a late event, member by member.
#[test]
fn late_events_change_nothing() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    incrby(c, "k", Some(base), &[(2, "a")]);
    wait_for_sync(&master, &replica);
    let mut sub = master.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let before = dump_all(c);
    let late = base - 10 * bm;
    assert_eq!(incrby(c, "k", Some(late), &[(1, "a"), (1, "b")]), [2, 0]);
    assert_eq!(
        incrby(c, "gone", Some(base - 25 * HOUR_MS), &[(1, "a")]),
        [0]
    );
    assert_eq!(incrby(c, "gone", Some(5), &[(1, "a")]), [0]);
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(events_until_sentinel(&mut ps), vec![]);
    assert_eq!(q::<i64>(c, &["DEL", "sentinel"]), 1);
    assert_eq!(dump_all(c), before);
    assert!(!exists(c, "gone"));
    assert_eq!(recipes_info(c, "topn_late_events"), 4);
    assert_eq!(recipes_info(c, "topn_incrby_calls"), 4);
    wait_for_sync(&master, &replica);
    assert_same_data(c, &mut replica.conn());
}

/// One `topn.incrby` event a call, plus `expire` when the TTL moves.
#[test]
fn one_event_a_call() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    incrby(c, "k", Some(base), &[(1, "a"), (2, "b"), (3, "c")]);
    incrby(c, "k", Some(base), &[(1, "a"), (2, "b")]);
    let _ = expect_err(c, &cmd(&["TOPN.INCRBY", "k", "x", "a"]));
    q_ok(c, &["SET", "sentinel", "1"]);
    let ev = |e: &str| (e.to_string(), "k".to_string());
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("topn.create"),
            ev("topn.incrby"),
            ev("expire"),
            ev("topn.incrby"),
        ]
    );
    assert_eq!(recipes_info(c, "topn_incrby_calls"), 3);
    assert_eq!(recipes_info(c, "topn_errors"), 1);
    assert_eq!(recipes_info(c, "topn_members"), 3);
}

/// Replicas and AOF reloads (also after a rewrite) hold what the master
/// holds: calls at the server's time (creating keys), at named times, in
/// MULTI, on exact and capped keys.
#[test]
fn replicas_and_aof_reloads_are_equal() {
    let mut master = Server::builder().config("appendonly", "yes").start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "5"]);
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "cap",
            "BUCKET",
            "60",
            "WINDOW",
            "5",
            "CAPACITY",
            "3",
        ],
    );
    let mut rng = StdRng::seed_from_u64(seed_from_env("TOPN_SEED", 71));
    for i in 0..200 {
        let at = base - rng.gen_range(0..4) * bm;
        let names: Vec<String> = (0..rng.gen_range(1..9))
            .map(|_| format!("m{}", rng.gen_range(0..12)))
            .collect();
        let exact: Vec<(i64, &str)> = names
            .iter()
            .map(|m| (rng.gen_range(-2..6), m.as_str()))
            .collect();
        let capped: Vec<(i64, &str)> = names
            .iter()
            .map(|m| (rng.gen_range(1..6), m.as_str()))
            .collect();
        let at = (i % 3 != 0).then_some(at);
        incrby(c, "k", at, &exact);
        incrby(c, "cap", at, &capped);
        incrby(c, &format!("srv{}", i % 4), None, &exact);
    }
    // In MULTI: replicated inside it, in order.
    let (a, b): (Vec<i64>, i64) = redis::pipe()
        .atomic()
        .add_command(incrby_cmd("multi", None, &[(2, "a"), (1, "b")]))
        .add_command(cmd(&["TOPN.INCR", "multi", "a"]))
        .query(c)
        .unwrap();
    assert_eq!((a, b), (vec![2, 1], 3));
    wait_for_sync(&master, &replica);
    assert_same_data(c, &mut replica.conn());
    let before = dump_all(c);
    master.restart();
    assert_eq!(dump_all(&mut master.conn()), before, "after an AOF reload");
    let c = &mut master.conn();
    wait_for_bg_done(&master);
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    master.restart();
    assert_eq!(dump_all(&mut master.conn()), before, "after an AOF rewrite");
}

/// TOPN.INCRBY against one TOPN.INCR a pair on a twin key: the same counts
/// after each call and the same DUMP, on compact, full, ALIGN and CAPACITY
/// keys; a refused call changes nothing, and is refused exactly when one
/// of its INCRs would be.
#[test]
fn model_incrby_is_repeated_incr() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 72);
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    let shapes: [&[&str]; 4] = [
        &["BUCKET", "60", "WINDOW", "4"],
        &["BUCKET", "60", "WINDOW", "4", "ALIGN", "30"],
        &["BUCKET", "60", "WINDOW", "4", "CAPACITY", "4"],
        &["BUCKET", "60", "WINDOW", "3"],
    ];
    for (s, shape) in shapes.iter().enumerate() {
        let capped = shape.contains(&"CAPACITY");
        let window: i64 = shape[3].parse().unwrap();
        // The last shape is full from the start.
        let compact_max = if s == 3 { "0" } else { "16" };
        q_ok(
            c,
            &["CONFIG", "SET", "recipes.topn-compact-max", compact_max],
        );
        let (x, y) = (format!("x{s}"), format!("y{s}"));
        for key in [&x, &y] {
            let mut args = vec!["TOPN.CREATE", key.as_str()];
            args.extend_from_slice(shape);
            q_ok(c, &args);
        }
        let (mut refused, mut t) = (0, base - 6 * bm);
        for step in 0..300 {
            t += rng.gen_range(0..15_000);
            let at = t - rng.gen_range(0..5) * bm;
            let names: Vec<String> = (0..rng.gen_range(1..10))
                .map(|_| format!("m{}", rng.gen_range(0..12)))
                .collect();
            let pairs: Vec<(i64, &str)> = names
                .iter()
                .map(|m| {
                    let by = match rng.gen_range(0..60) {
                        0 | 1 => i64::MAX / 2 + 1,
                        2 if !capped => i64::MIN / 2 - 1,
                        3..=9 if !capped => rng.gen_range(-3..1),
                        _ => rng.gen_range(1..5),
                    };
                    (by, m.as_str())
                })
                .collect();
            let before = dump(c, &x);
            let many: redis::RedisResult<Vec<i64>> = incrby_cmd(&x, Some(at), &pairs).query(c);
            match many {
                Ok(got) => {
                    for &(by, m) in &pairs {
                        incr(c, &y, m, by, at);
                    }
                    // The twin's counts at its clock (its bucket: the
                    // expiry less a window).
                    let members: Vec<&str> = pairs.iter().map(|p| p.1).collect();
                    let expiry = pexpiretime(c, &y);
                    let after = match expiry > 0 {
                        true => count(c, &y, &members, Some(expiry - window * bm)),
                        false => vec![0; members.len()],
                    };
                    assert_eq!(got, after, "seed {seed} shape {s} step {step}");
                    assert_eq!(
                        dump(c, &x),
                        dump(c, &y),
                        "seed {seed} shape {s} step {step}"
                    );
                }
                Err(e) => {
                    assert!(err_text(&e).contains("overflow"), "{}", err_text(&e));
                    assert_eq!(dump(c, &x), before, "a refused call changed the key");
                    let each: Vec<redis::RedisResult<i64>> = pairs
                        .iter()
                        .map(|&(by, m)| incr_cmd(&y, m, by, at).query(&mut *c))
                        .collect();
                    assert!(
                        each.iter().any(|r| r.is_err()),
                        "seed {seed} shape {s} step {step}: INCRBY refused, INCRs did not"
                    );
                    // The twin took the INCRs before the failing one: start both again.
                    let payload = dump(c, &x).unwrap();
                    let _: () = redis::cmd("RESTORE")
                        .arg(&y)
                        .arg(pexpiretime(c, &x).max(0))
                        .arg(payload)
                        .arg("REPLACE")
                        .arg("ABSTTL")
                        .query(c)
                        .unwrap();
                    refused += 1;
                }
            }
        }
        // However the random calls fell (late ones change nothing), one
        // call that must be refused: two halves of i64::MAX on one member.
        let half = i64::MAX / 2 + 1;
        let before = dump(c, &x);
        let overflow: redis::RedisResult<Vec<i64>> =
            incrby_cmd(&x, Some(t), &[(half, "mz"), (half, "mz")]).query(c);
        let e = overflow.expect_err("an overflowing call was accepted");
        assert!(err_text(&e).contains("overflow"), "{}", err_text(&e));
        assert_eq!(dump(c, &x), before, "a refused call changed the key");
        eprintln!("shape {s}: {refused} random calls refused");
    }
}
