//! Late events change nothing; idle keys' reads stay exact on a master, its
//! replica and after a reload.
use super::*;

/// `master_repl_offset` stays put while `f` runs (retried: the master's periodic PING to its
/// replicas moves it too).
fn replicates_nothing(master: &Server, mut f: impl FnMut()) -> bool {
    (0..3).any(|_| {
        let off = info_field(&master.info("replication"), "master_repl_offset");
        f();
        off == info_field(&master.info("replication"), "master_repl_offset")
    })
}

#[test]
fn a_late_event_changes_nothing() {
    // The sequence (one-minute buckets) on a master with an AOF and a replica.
    let mut master = Server::builder().config("appendonly", "yes").start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let mut sub = master.conn();
    let mut ps = subscribe_keyevents(mc, &mut sub);
    let min = 60_000;
    avoid_boundary(min, 5_000);
    let now = now_ms();

    q_ok(mc, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "24"]);
    let late = |c: &mut Conn, key: &str, by: i64, at: i64| incr(c, key, "m", by, at);
    assert!(replicates_nothing(&master, || {
        assert_eq!(late(mc, "k", 1, now - 41 * min), 0);
    }));
    assert!(exists(mc, "k"), "a late event deleted the key");
    assert_eq!(
        pexpiretime(mc, "k"),
        -1,
        "a late event gave the key an expiry"
    );
    // Also on a missing key (default shape, 3600 x 24): nothing is created.
    assert!(replicates_nothing(&master, || {
        assert_eq!(late(mc, "nokey", 1, now - 25 * HOUR_MS), 0);
    }));
    assert!(!exists(mc, "nokey"));
    // The next event inside the window counts in the key as created.
    assert_eq!(late(mc, "k", 1, now - 20 * min), 1);
    let i = info(mc, "k");
    assert_eq!((i["bucket"], i["window"], i["members"]), (60, 24, 1));
    let exp = ((now - 20 * min) / min + 24) * min;
    assert_eq!(pexpiretime(mc, "k"), exp);
    // A written key: a late event replies the current count and changes nothing.
    assert!(replicates_nothing(&master, || {
        assert_eq!(late(mc, "k", 5, now - 30 * min), 1);
        assert_eq!(late(mc, "k", 5, now - 25 * HOUR_MS), 1);
    }));
    assert_eq!(pexpiretime(mc, "k"), exp);
    assert_eq!(count(mc, "k", &["m"], None), [1]);
    q_ok(mc, &["SET", "sentinel", "1"]);
    let ev = |e: &str| (e.to_string(), "k".to_string());
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![ev("topn.create"), ev("topn.incr"), ev("expire")],
        "late events fired keyspace events"
    );
    drop(ps);

    // The replica and an AOF replay hold the same.
    let ts: Vec<i64> = (-26..3).map(|k| now + k * min).collect();
    let ms = vec!["m".to_string(), "x".to_string()];
    let want = snap(mc, "k", &ts, &ms, true);
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    assert_eq!(snap(rc, "k", &ts, &ms, true), want, "replica");
    assert!(!exists(rc, "nokey"));
    master.restart();
    let mc = &mut master.conn();
    assert_eq!(snap(mc, "k", &ts, &ms, true), want, "AOF replay");
    assert!(!exists(mc, "nokey"));
}

#[test]
fn idle_key_reads_stay_exact_on_master_replica_and_reload() {
    // BUCKET 1 WINDOW 8: eight buckets of 3000 members whose popularity reverses half-way, then
    // no writes for a few buckets. The timer of each server ages the buckets that leave the
    // window (internal state: nothing replicated); every read stays exact.
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let (bm, w, n) = (1000, 8, 3000);
    q_ok(mc, &["TOPN.CREATE", "idle", "BUCKET", "1", "WINDOW", "8"]);
    let mut model = Model::new(1, w);
    let b0 = now_ms() / bm + 1;
    for b in 0..w {
        let mut p = redis::pipe();
        for i in 0..n {
            let rank = if b < w / 2 { i } else { n - 1 - i };
            let by = 1 + (n - rank) / 100;
            let (m, at) = (format!("u{i:05}"), (b0 + b) * bm + 1);
            p.add_command(incr_cmd("idle", &m, by, at)).ignore();
            model.incr(&m, by, at).unwrap();
        }
        let _: () = p.query(mc).unwrap();
    }
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    let aged = |c: &mut Conn| recipes_info(c, "topn_aged_buckets");
    let (m0, r0) = (aged(mc), aged(rc));
    // Idle until three buckets past the newest one.
    let newest = b0 + w - 1;
    let idle_until = (newest + 3) * bm + 200;
    std::thread::sleep(Duration::from_millis((idle_until - now_ms()).max(0) as u64));
    // Buckets b0..b0+2 left the window: each server aged them by itself.
    for (c, before, who) in [(&mut *mc, m0, "master"), (&mut *rc, r0, "replica")] {
        assert!(
            wait_until(Duration::from_secs(5), || aged(c) >= before + 3),
            "{who}: topn_aged_buckets {} (was {before})",
            aged(c)
        );
    }
    let members: Vec<String> = (0..n).step_by(97).map(|i| format!("u{i:05}")).collect();
    let refs: Vec<&str> = members.iter().map(|m| m.as_str()).collect();
    let check = |c: &mut Conn, who: &str| {
        let now = now_ms();
        let mut times: Vec<i64> = (b0 - 1..=newest + 4).map(|b| b * bm + 500).collect();
        times.push(now);
        for &t in &times {
            assert_eq!(top(c, "idle", 20, t), model.top(20, t), "{who}: TOP AT {t}");
            let want: Vec<i64> = refs.iter().map(|m| model.count(m, t)).collect();
            assert_eq!(
                count(c, "idle", &refs, Some(t)),
                want,
                "{who}: COUNT AT {t}"
            );
            for k in [1, 2, 4] {
                assert_eq!(
                    top_last(c, "idle", 10, Some(t), k),
                    model.top_in(10, t, k),
                    "{who}: TOP AT {t} LAST {k}"
                );
            }
        }
        // At the server's time (no AT), when the read stays in one bucket.
        let t0 = now_ms();
        let got = top_ws(c, "TOPN.TOP", "idle", 20, None);
        if now_ms() / bm == t0 / bm {
            assert_eq!(got, model.top(20, t0), "{who}: TOP without AT");
        }
    };
    q_ok(mc, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    q_ok(mc, &["SLOWLOG", "RESET"]);
    for _ in 0..20 {
        let _ = top_ws(mc, "TOPN.TOP", "idle", 10, None);
    }
    let (calls, max_us, _) = slowlog_slowest(mc, "TOPN.");
    eprintln!("idle TOPN.TOP 10 at the server's time: {calls} calls, slowest {max_us} us");
    check(mc, "master");
    check(rc, "replica");
    assert_eq!(pexpiretime(mc, "idle"), model.expire_at());
    assert_eq!(pexpiretime(rc, "idle"), model.expire_at());
    // After a reload, buckets already out of the window load aged.
    master.restart_with_save();
    let mc = &mut master.conn();
    if exists(mc, "idle") {
        check(mc, "reloaded master");
    }
}
