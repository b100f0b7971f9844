//! Persistence and key operations: RDB, DUMP/RESTORE, COPY, RENAME,
//! MIGRATE, MEMORY USAGE and expiry.
use super::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::BTreeSet;

#[test]
fn rdb_save_and_restart() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 71);
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "a", "BUCKET", "60", "WINDOW", "10"]);
    let mut ma = BTreeSet::new();
    steady_workload(c, &mut rng, "a", base, bm, 8, 10, 4000, &mut ma);
    q_ok(c, &["TOPN.CREATE", "empty"]);
    incr(c, "clk", "m", 4, base);
    incr(c, "clk", "m", 0, base + 3 * HOUR_MS);
    let ma: Vec<String> = ma.into_iter().collect();
    let clk_m = vec!["m".to_string()];
    let cases: Vec<(&str, Vec<i64>, &Vec<String>)> = vec![
        ("a", times_around(base, bm, 20), &ma),
        ("empty", vec![base], &clk_m),
        ("clk", times_around(base, HOUR_MS, 30), &clk_m),
    ];
    let before: Vec<Snap> = cases
        .iter()
        .map(|(k, ts, ms)| snap(c, k, ts, ms, true))
        .collect();
    srv.restart_with_save();
    let c = &mut srv.conn();
    for ((k, ts, ms), b) in cases.iter().zip(&before) {
        assert_eq!(&snap(c, k, ts, ms, true), b, "RDB reload: {k}");
    }
    // Writes continue from the loaded clock (H+3): H-21 is out of the window, ignored.
    assert_eq!(
        incr(c, "clk", "m", 9, base - 21 * HOUR_MS),
        4,
        "the clock survived the reload"
    );
    assert_eq!(
        incr(c, "a", "p0", 1, base - 20 * bm),
        count(c, "a", &["p0"], Some(base + 9 * bm))[0]
    );
}

#[test]
fn dump_restore_copy_rename_memory() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 97);
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "src", "BUCKET", "60", "WINDOW", "8"]);
    let mut ms = BTreeSet::new();
    steady_workload(c, &mut rng, "src", base, bm, 6, 8, 2000, &mut ms);
    let ms: Vec<String> = ms.into_iter().collect();
    let ts = times_around(base, bm, 16);
    let orig = snap(c, "src", &ts, &ms, true);

    // DUMP / RESTORE (with the same absolute expiry).
    let payload: Vec<u8> = q(c, &["DUMP", "src"]);
    let exp = pexpiretime(c, "src");
    assert!(exp > 0);
    let _: Value = run(
        c,
        redis::cmd("RESTORE")
            .arg("restored")
            .arg(exp)
            .arg(&payload)
            .arg("ABSTTL"),
    );
    assert_eq!(snap(c, "restored", &ts, &ms, true), orig, "RESTORE");
    let _: Value = run(c, redis::cmd("RESTORE").arg("r0").arg(0).arg(&payload));
    assert_eq!(pexpiretime(c, "r0"), -1);
    assert_eq!(top(c, "r0", 1_000_000, base + 5 * bm), orig.tops[7].1);
    let e = expect_err(c, redis::cmd("RESTORE").arg("r0").arg(0).arg(&payload));
    assert!(e.contains("BUSYKEY"), "{e}");
    let mut bad = payload.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    expect_err(c, redis::cmd("RESTORE").arg("bad").arg(0).arg(&bad));
    assert!(!exists(c, "bad"));

    // COPY: equal, then independent.
    assert_eq!(q::<i64>(c, &["COPY", "src", "cp"]), 1);
    assert_eq!(snap(c, "cp", &ts, &ms, true), orig, "COPY");
    let t = base + 5 * bm;
    let top_before = top(c, "src", 1_000_000, t);
    let m0 = ms[0].clone();
    let c0 = count(c, "cp", &[&m0], Some(t))[0];
    assert_eq!(incr(c, "cp", &m0, 1000, t), c0 + 1000);
    assert_eq!(incr(c, "cp", "only-in-copy", 1, t), 1);
    assert_eq!(
        top(c, "src", 1_000_000, t),
        top_before,
        "INCR on the copy changed the source"
    );
    assert_eq!(count(c, "src", &[&m0, "only-in-copy"], Some(t)), [c0, 0]);
    assert_eq!(snap(c, "src", &ts, &ms, true), orig);
    // and the other way round
    assert_eq!(incr(c, "src", "only-in-src", 1, t), 1);
    assert_eq!(count(c, "cp", &["only-in-src"], Some(t)), [0]);
    assert_eq!(
        q::<i64>(c, &["COPY", "src", "cp"]),
        0,
        "COPY without REPLACE onto a key"
    );

    // RENAME keeps it (and its expiry).
    let before = snap(c, "restored", &ts, &ms, true);
    q_ok(c, &["RENAME", "restored", "renamed"]);
    assert!(!exists(c, "restored"));
    assert_eq!(snap(c, "renamed", &ts, &ms, true), before);
    assert_eq!(incr(c, "renamed", "new", 2, t), 2);

    // MEMORY USAGE is positive and grows with members.
    q_ok(c, &["TOPN.CREATE", "mem", "BUCKET", "60", "WINDOW", "8"]);
    let m_empty: i64 = q(c, &["MEMORY", "USAGE", "mem"]);
    assert!(m_empty > 0, "{m_empty}");
    incr(c, "mem", "a", 1, base);
    let m1: i64 = q(c, &["MEMORY", "USAGE", "mem"]);
    let mut p = redis::pipe();
    for i in 0..5000 {
        p.cmd("TOPN.INCR")
            .arg("mem")
            .arg(format!("member-{i:05}"))
            .arg("AT")
            .arg(base + (i % 3) * bm);
    }
    let _: Vec<i64> = p.query(c).unwrap();
    let m2: i64 = q(c, &["MEMORY", "USAGE", "mem"]);
    assert!(
        m1 > 0 && m2 > m1 + 5000 * 8,
        "MEMORY USAGE {m_empty} -> {m1} -> {m2}"
    );
    assert!(info(c, "mem")["memory"] > 0);
}

#[test]
fn migrate_moves_a_topn_key_between_servers() {
    let (from, to) = (Server::start(), Server::start());
    let (a, b) = (&mut from.conn(), &mut to.conn());
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(a, &["TOPN.CREATE", "moving", "BUCKET", "60", "WINDOW", "8"]);
    for (i, member) in ["x", "y", "z", "y", "z", "z"].iter().enumerate() {
        incr(
            a,
            "moving",
            member,
            1 + i as i64,
            base - (i as i64 % 3) * bm,
        );
    }
    let ts = [base, base - bm, base + 3 * bm];
    let members = ["x".to_string(), "y".to_string(), "z".to_string()];
    let before = snap(a, "moving", &ts, &members, true);
    let exp = pexpiretime(a, "moving");
    let port = to.port.to_string();
    let reply: String = q(a, &["MIGRATE", "127.0.0.1", &port, "moving", "0", "5000"]);
    assert_eq!(reply, "OK");
    assert!(!exists(a, "moving"));
    // MIGRATE carries the TTL relative (a RESTORE with the time left), so
    // the absolute expiry may move by the transfer time; all else is equal.
    let mut after = snap(b, "moving", &ts, &members, true);
    assert!(
        (after.pexpiretime - exp).abs() <= 1_000,
        "{} vs {exp}",
        after.pexpiretime
    );
    after.pexpiretime = before.pexpiretime;
    assert_eq!(after, before);
    // The migrated key keeps counting on its new server.
    let x_now = count(b, "moving", &["x"], Some(base))[0];
    assert_eq!(incr(b, "moving", "x", 10, base), x_now + 10);
}

#[test]
fn expiry() {
    let srv = Server::start();
    let c = &mut srv.conn();
    avoid_boundary(HOUR_MS, 3_000);
    let now = now_ms();
    // Far in the past on a new key: nothing stays.
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "old", "m", "AT", "0"]), 0);
    assert!(!exists(c, "old"));
    assert_eq!(incr(c, "old2", "m", 5, now - 25 * HOUR_MS), 0);
    assert!(!exists(c, "old2"));
    // Exactly a whole window ago (default 3600 x 24): gone as well.
    let b = now / HOUR_MS;
    assert_eq!(incr(c, "old3", "m", 5, (b - 24) * HOUR_MS + HOUR_MS - 1), 0);
    assert!(!exists(c, "old3"));
    // One bucket later it lives, and expires when its bucket leaves the window.
    assert_eq!(incr(c, "young", "m", 5, (b - 23) * HOUR_MS), 5);
    assert_eq!(pexpiretime(c, "young"), (b + 1) * HOUR_MS);
    // An explicitly created key that gets only an event outside the window stays as it was.
    q_ok(c, &["TOPN.CREATE", "made", "BUCKET", "60", "WINDOW", "2"]);
    assert_eq!(incr(c, "made", "m", 1, now - 10 * 60_000), 0);
    assert!(exists(c, "made"));
    assert_eq!(pexpiretime(c, "made"), -1);
    let i = info(c, "made");
    assert_eq!((i["bucket"], i["window"], i["members"]), (60, 2, 0));

    // PEXPIRETIME = (clock bucket + WINDOW) * bucket_ms, following the clock only.
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "5"]);
    let kb = now / 60_000;
    incr(c, "k", "a", 1, now);
    assert_eq!(pexpiretime(c, "k"), (kb + 5) * 60_000);
    incr(c, "k", "a", 1, now + 3 * 60_000);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);
    incr(c, "k", "a", 1, now + 60_000);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);
    // A user's PERSIST is overridden by the next write.
    assert_eq!(q::<i64>(c, &["PERSIST", "k"]), 1);
    assert_eq!(pexpiretime(c, "k"), -1);
    incr(c, "k", "a", 1, now);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);
    // Reads never change the expiry.
    let _ = top(c, "k", 10, now + 100 * 60_000);
    assert_eq!(pexpiretime(c, "k"), (kb + 3 + 5) * 60_000);

    // The key goes away by itself once a whole window passed with no writes.
    q_ok(c, &["TOPN.CREATE", "short", "BUCKET", "1", "WINDOW", "2"]);
    let t = now_ms();
    assert_eq!(incr(c, "short", "m", 3, t), 3);
    assert_eq!(pexpiretime(c, "short"), (t / 1000 + 2) * 1000);
    assert!(
        wait_until(Duration::from_secs(5), || !exists(c, "short")),
        "short-window key did not expire"
    );
    assert_eq!(count(c, "short", &["m"], None), [0]);
    assert_eq!(top_ws(c, "TOPN.TOP", "short", 10, None), rows(&[]));
}
