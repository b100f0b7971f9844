//! Background reclaim on a master, its replica and keys that moved; only
//! writes that change something replicate; a replica holds the same bytes.
use super::*;

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
    let moved = move_keys_every_way(c);
    wait_reclaimed(c, 10 * moved.len() as i64, "moved keys");
    for (db, key) in moved {
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
    wait_reclaimed(c, 10, "after a restart");
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "after"]),
        vec![prow(&[("p", "keep")])]
    );
    // FLUSHALL leaves nothing behind; new counters work as before.
    q_ok(c, &["FLUSHALL"]);
    fill(c, "fresh");
    wait_reclaimed(c, 20, "after FLUSHALL");
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
