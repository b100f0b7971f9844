//! Replication: a replica answers the same and holds the same bytes, also
//! with other defaults and for wide sealed buckets.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn replica_answers_equal() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let rc = &mut replica.conn();
    let seed = seed_from_env("TOPN_SEED", 31);
    let mut rng = StdRng::seed_from_u64(seed);

    // k1: explicit AT, the clock moves past the window (retirement on both sides).
    q_ok(mc, &["TOPN.CREATE", "k1", "BUCKET", "60", "WINDOW", "5"]);
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    let mut m1 = BTreeSet::new();
    rolling_workload(mc, &mut rng, "k1", base, bm, 6000, 400, &mut m1);
    // k2: server time, default shape, created by INCR.
    avoid_boundary(HOUR_MS, 5_000);
    let mut m2 = BTreeSet::new();
    for i in 0..500 {
        let m = format!("s{}", i % 37);
        let by = (i % 5) as i64 - 1;
        m2.insert(m.clone());
        let _: i64 = run(
            mc,
            redis::cmd("TOPN.INCR").arg("k2").arg(&m).arg("BY").arg(by),
        );
    }
    // k3: created by INCR with an AT a whole window ago -> deleted on both.
    assert_eq!(q::<i64>(mc, &["TOPN.INCR", "k3", "m", "AT", "1000"]), 0);
    // k4: created, never written.
    q_ok(mc, &["TOPN.CREATE", "k4"]);
    // k5: a late event on an existing key, and BY 0 that only moves the clock.
    incr(mc, "k5", "a", 3, base);
    incr(mc, "k5", "a", 3, base - 30 * HOUR_MS);
    incr(mc, "k5", "b", 0, base + 3 * HOUR_MS);
    wait_for_sync(&master, &replica);

    let now = now_ms();
    let mut m1v: Vec<String> = m1.into_iter().collect();
    m1v.push("absent".into());
    let m2v: Vec<String> = m2.into_iter().collect();
    let cases: Vec<(&str, Vec<i64>, Vec<String>)> = vec![
        ("k1", times_around(base, bm, 16), m1v),
        (
            "k2",
            vec![now, now + HOUR_MS, now + 23 * HOUR_MS, now + 30 * HOUR_MS],
            m2v,
        ),
        ("k3", vec![now], vec!["m".into()]),
        ("k4", vec![now], vec!["m".into()]),
        (
            "k5",
            times_around(base, HOUR_MS, 6),
            vec!["a".into(), "b".into()],
        ),
    ];
    for (key, ts, members) in &cases {
        let a = snap(mc, key, ts, members, true);
        let b = snap(rc, key, ts, members, true);
        assert_eq!(a, b, "master vs replica: {key}");
    }
    assert!(!exists(mc, "k3"));
    assert!(exists(rc, "k4"));
    assert_eq!(pexpiretime(rc, "k4"), -1);
    let i = info(rc, "k2");
    assert_eq!((i["bucket"], i["window"]), (3600, 24));
    assert_eq!(count(rc, "k5", &["a"], Some(base + 3 * HOUR_MS)), [3]);
    assert_eq!(pexpiretime(rc, "k5"), (base / HOUR_MS + 3 + 24) * HOUR_MS);
    // Reading never writes: the replication offset does not move for reads (retried, as
    // the master's periodic PING to its replica moves it too).
    let unchanged = (0..3).any(|_| {
        let off = info_field(&master.info("replication"), "master_repl_offset");
        let _ = top(mc, "k1", 10, now);
        let _ = top_ws(mc, "TOPN.TOP", "k2", 10, None);
        let _ = count(mc, "k1", &["m1"], None);
        let _: Value = q(mc, &["TOPN.INFO", "k1"]);
        off == info_field(&master.info("replication"), "master_repl_offset")
    });
    assert!(unchanged, "TOPN reads were replicated");
}

/// A replica holds the very same bytes (`DUMP`) as its master, though its
/// tables were built otherwise: it loaded part of the data from the master's
/// RDB, applies the rest late, and ages buckets by its own clock.
#[test]
fn replica_holds_the_same_bytes() {
    let master = Server::start();
    let mc = &mut master.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("TOPN_SEED", 41));
    let mut seen = BTreeSet::new();
    // Before the replica: a key whose clock moves past its window (stale buckets freed,
    // member slots reused), and one of 1 s buckets at the server's time.
    q_ok(mc, &["TOPN.CREATE", "a", "BUCKET", "60", "WINDOW", "5"]);
    let base = now_ms() / 60_000 * 60_000;
    rolling_workload(mc, &mut rng, "a", base, 60_000, 3000, 300, &mut seen);
    q_ok(mc, &["TOPN.CREATE", "b", "BUCKET", "1", "WINDOW", "3"]);
    let write_b = |c: &mut Conn, rng: &mut StdRng| {
        for _ in 0..200 {
            let m = format!("b{}", rng.gen_range(0..150));
            let _: i64 = run(c, redis::cmd("TOPN.INCR").arg("b").arg(&m));
        }
    };
    write_b(mc, &mut rng);
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    // After: the replica applies these late, by its own clock.
    let mut late = replica.conn();
    let sleeper = std::thread::spawn(move || {
        let _: Value = q(&mut late, &["DEBUG", "SLEEP", "1.2"]);
    });
    std::thread::sleep(Duration::from_millis(50));
    rolling_workload(
        mc,
        &mut rng,
        "a",
        base + 60_000,
        60_000,
        2000,
        400,
        &mut seen,
    );
    write_b(mc, &mut rng);
    std::thread::sleep(Duration::from_millis(1100));
    write_b(mc, &mut rng);
    sleeper.join().unwrap();
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    for key in ["a", "b"] {
        let on_master: Vec<u8> = q(mc, &["DUMP", key]);
        let on_replica: Vec<u8> = q(rc, &["DUMP", key]);
        assert!(!on_master.is_empty());
        assert!(
            on_master == on_replica,
            "DUMP {key}: {} bytes on the master, {} on the replica, not the same",
            on_master.len(),
            on_replica.len()
        );
    }
}

/// Buckets big enough to be packed for sums (4,096 entries and more) answer exactly at every
/// `LAST k` on the master and a replica, while the timer packs them, after a late write drops a
/// packed copy, and after a restart from RDB.
#[test]
fn wide_sealed_buckets_answer_exactly() {
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    q_ok(mc, &["TOPN.CREATE", "w", "BUCKET", "3600", "WINDOW", "6"]);
    let h = now_ms() / HOUR_MS;
    let mut rng = StdRng::seed_from_u64(seed_from_env("TOPN_SEED", 43));
    // model[b][member] for buckets h-3 ..= h.
    let mut model: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); 4];
    let write = |c: &mut Conn,
                 rng: &mut StdRng,
                 model: &mut Vec<BTreeMap<String, i64>>,
                 b: usize,
                 n: usize| {
        let mut p = redis::pipe();
        for _ in 0..n {
            let m = format!("m{}", rng.gen_range(0..20_000));
            let by = if b == 1 && rng.gen_ratio(1, 10) {
                -rng.gen_range(1..4)
            } else {
                rng.gen_range(1..4)
            };
            *model[b].entry(m.clone()).or_default() += by;
            p.add_command(incr_cmd("w", &m, by, (h - 3 + b as i64) * HOUR_MS + 7));
        }
        let _: Vec<i64> = p.query(c).unwrap();
    };
    for b in 0..4 {
        write(mc, &mut rng, &mut model, b, 9000);
    }
    let expected = |model: &[BTreeMap<String, i64>], k: usize| -> Rows {
        let mut sum: BTreeMap<&str, i64> = BTreeMap::new();
        for bucket in &model[4usize.saturating_sub(k)..] {
            for (m, c) in bucket {
                *sum.entry(m).or_default() += c;
            }
        }
        let mut rows: Rows = sum
            .into_iter()
            .filter(|(_, c)| *c != 0)
            .map(|(m, c)| (m.to_string(), c))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        rows.truncate(10);
        rows
    };
    let at = h * HOUR_MS + 1000;
    let check = |c: &mut Conn, model: &[BTreeMap<String, i64>], when: &str| {
        for k in 1..=6 {
            assert_eq!(
                top_last(c, "w", 10, Some(at), k as i64),
                expected(model, k),
                "{when}: LAST {k}"
            );
        }
    };
    // Right away (packing may be under way), then once the timer is surely done.
    check(mc, &model, "at once");
    std::thread::sleep(Duration::from_millis(500));
    check(mc, &model, "packed");
    // A late write into a sealed bucket drops its copy; reads stay exact.
    write(mc, &mut rng, &mut model, 1, 500);
    check(mc, &model, "after a late write");
    std::thread::sleep(Duration::from_millis(1500));
    check(mc, &model, "repacked");
    wait_for_sync(&master, &replica);
    check(&mut replica.conn(), &model, "replica");
    master.restart_with_save();
    check(&mut master.conn(), &model, "after a restart");
}

#[test]
fn replica_with_other_defaults_ends_equal() {
    // Master loads with 60/5, replica with 7/3: creation is replicated explicitly.
    let master = Server::builder()
        .module_args(&["topn-default-bucket", "60", "topn-default-window", "5"])
        .start();
    let mc = &mut master.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    // Before the replica attaches (full sync through RDB).
    incr(mc, "before", "a", 2, base);
    incr(mc, "before", "b", 1, base + bm);
    let port = master.port.to_string();
    let replica = Server::builder()
        .module_args(&["topn-default-bucket", "7", "topn-default-window", "3"])
        .args(&["--replicaof", "127.0.0.1", &port])
        .start();
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    // After (command stream): created by INCR, by CREATE without options.
    incr(mc, "after", "a", 2, base);
    incr(mc, "after", "b", 5, base + 3 * bm);
    incr(mc, "after", "a", 1, base + 4 * bm);
    q_ok(mc, &["TOPN.CREATE", "created"]);
    incr(mc, "created", "x", 1, base + 2 * bm);
    // Runtime change on the master only.
    q_ok(mc, &["CONFIG", "SET", "recipes.topn-default-window", "9"]);
    incr(mc, "later", "y", 4, base + 9 * bm);
    wait_for_sync(&master, &replica);
    let ts = times_around(base, bm, 15);
    let ms: Vec<String> = ["a", "b", "x", "y", "z"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (key, b, w) in [
        ("before", 60, 5),
        ("after", 60, 5),
        ("created", 60, 5),
        ("later", 60, 9),
    ] {
        let i = info(rc, key);
        assert_eq!((i["bucket"], i["window"]), (b, w), "replica shape of {key}");
        assert_eq!(
            snap(mc, key, &ts, &ms, true),
            snap(rc, key, &ts, &ms, true),
            "master vs replica: {key}"
        );
    }
    // A key created on the replica's own defaults would expire differently; check the math.
    assert_eq!(pexpiretime(rc, "after"), (base / bm + 4 + 5) * bm);
    assert_eq!(pexpiretime(rc, "later"), (base / bm + 9 + 9) * bm);
}
