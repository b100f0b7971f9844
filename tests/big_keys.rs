//! Big keys on real servers: tables that grow and shrink across many shards,
//! big HCOUNTER partitions torn down in slices while master and replica keep
//! answering the same, big values freed off the server's thread, and MEMORY
//! USAGE sized from samples. Behaviour only: how long anything takes is
//! `make bench`'s (its `latency` group).
mod common;
use common::*;

use redis::Value;
use std::time::Duration;

type Conn = redis::Connection;

/// Sends `cmds` in one pipeline, ignoring replies that are not errors.
fn pipeline(c: &mut Conn, cmds: impl IntoIterator<Item = Vec<String>>) {
    let mut p = redis::pipe();
    for args in cmds {
        let mut cmd = redis::cmd(&args[0]);
        for a in &args[1..] {
            cmd.arg(a);
        }
        p.add_command(cmd).ignore();
    }
    let () = p.query(c).expect("pipeline");
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// A master and a replica in sync with it.
fn master_and_replica() -> (Server, Server) {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    (master, replica)
}

fn memory_exact(c: &mut Conn, key: &str) -> i64 {
    q(c, &["MEMORY", "USAGE", key, "SAMPLES", "0"])
}

/// A partition with thousands of unique tuples and cells leaves every read
/// at once when deleted or expired, on the master and the replica; a tuple
/// it held counts again at once; the memory goes a slice at a time, and the
/// two servers hold the same bytes all along.
#[test]
fn a_big_partition_goes_at_once_and_is_freed_in_slices() {
    let (master, replica) = master_and_replica();
    let c = &mut master.conn();
    let r = &mut replica.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "u",
            "PARTITION",
            "day",
            "GROUP",
            "day",
            "page",
            "UNIQUE",
            "user",
        ],
    );
    let writes = |day: &'static str, users: &'static str, n: usize| {
        (0..n).map(move |i| {
            args(&[
                "HCOUNTER.INCR",
                "u",
                "day",
                day,
                "page",
                &format!("p{}", i % 700),
                "user",
                &format!("{users}{i}"),
            ])
        })
    };
    pipeline(c, writes("d1", "user", 6_000));
    pipeline(c, writes("d2", "other", 10));
    wait_for_sync(&master, &replica);
    let small = memory_exact(c, "u");

    let deleted: i64 = q(c, &["HCOUNTER.DEL", "u", "day", "d1"]);
    assert_eq!(deleted, 1);
    // user50 was counted in d1 (gone), other5 in d2 (still there). INCR
    // replies the cell's count.
    let again: i64 = q(
        c,
        &[
            "HCOUNTER.INCR",
            "u",
            "day",
            "d3",
            "page",
            "x",
            "user",
            "user50",
        ],
    );
    assert_eq!(again, 1, "a tuple of the deleted partition counts again");
    let repeat: i64 = q(
        c,
        &[
            "HCOUNTER.INCR",
            "u",
            "day",
            "d3",
            "page",
            "x",
            "user",
            "other5",
        ],
    );
    assert_eq!(
        repeat, 1,
        "a tuple of a live partition still does not count"
    );
    wait_for_sync(&master, &replica);
    for conn in [&mut *c, &mut *r] {
        let parts: Vec<Value> = q(conn, &["HCOUNTER.PARTITIONS", "u"]);
        assert_eq!(parts.len(), 2, "d2 and d3 only: {parts:?}");
        let d1: i64 = q(conn, &["HCOUNTER.GET", "u", "day", "d1", "page", "p1"]);
        assert_eq!(d1, 0);
    }
    let on_master: Vec<u8> = q(c, &["DUMP", "u"]);
    let on_replica: Vec<u8> = q(r, &["DUMP", "u"]);
    assert_eq!(on_master, on_replica, "DUMP while tearing down");

    // Both give the memory back by themselves.
    for conn in [&mut *c, &mut *r] {
        let freed = wait_until(Duration::from_secs(10), || memory_exact(conn, "u") < small);
        assert!(freed, "MEMORY USAGE stays at {}", memory_exact(conn, "u"));
    }
    let repeat: i64 = q(
        c,
        &[
            "HCOUNTER.INCR",
            "u",
            "day",
            "d4",
            "page",
            "x",
            "user",
            "user50",
        ],
    );
    assert_eq!(repeat, 0, "torn down: counted once in d3");
    wait_for_sync(&master, &replica);
    assert_same_data(c, r);
}

/// The same through expiry: the master's reclaim removes a big expired
/// partition, replicas follow, and both free it.
#[test]
fn a_big_expired_partition_is_reclaimed_on_master_and_replica() {
    let (master, replica) = master_and_replica();
    let c = &mut master.conn();
    let r = &mut replica.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "h",
            "PARTITION",
            "day",
            "GROUP",
            "day",
            "page",
            "TTL",
            "60",
        ],
    );
    // The old partition's TTL runs out half a second from now; the new one's
    // in a minute.
    let expired_at = (now_ms() - 59_500).to_string();
    pipeline(
        c,
        (0..5_000).map(|i| {
            args(&[
                "HCOUNTER.INCR",
                "h",
                "AT",
                &expired_at,
                "day",
                "old",
                "page",
                &i.to_string(),
            ])
        }),
    );
    let _: i64 = q(c, &["HCOUNTER.INCR", "h", "day", "new", "page", "p"]);
    for conn in [&mut *c, &mut *r] {
        let gone = wait_until(Duration::from_secs(10), || {
            let parts: Vec<Value> = q(conn, &["HCOUNTER.PARTITIONS", "h"]);
            parts.len() == 1 && memory_exact(conn, "h") < 20_000
        });
        assert!(gone, "MEMORY USAGE stays at {}", memory_exact(conn, "h"));
    }
    assert!(master.recipes_info("hcounter_expired_partitions") >= 1);
    wait_for_sync(&master, &replica);
    assert_same_data(c, r);
}

/// One ULIST scope through growth to many table shards and back to one, by
/// adds, expiry and deletes, with reads, a replica and a reload in between.
#[test]
fn a_scope_grows_and_shrinks_through_many_shards() {
    let (mut master, replica) = master_and_replica();
    let c = &mut master.conn();
    q_ok(c, &["ULIST.CREATE", "l", "VALUE", "v", "PARTITION", "p"]);
    let n = 20_000;
    // Even values expire within a second, odd ones never.
    let soon = (now_ms() + 800).to_string();
    pipeline(
        c,
        (0..n).map(|i| {
            let v = i.to_string();
            let part = format!("p{}", i % 3);
            if i % 2 == 0 {
                args(&["ULIST.ADD", "l", "v", &v, "p", &part, "PXAT", &soon])
            } else {
                args(&["ULIST.ADD", "l", "v", &v, "p", &part, "NEVER"])
            }
        }),
    );
    let has = |c: &mut Conn, v: usize| -> i64 { q(c, &["ULIST.HAS", "l", "v", &v.to_string()]) };
    assert_eq!((has(c, 10), has(c, 11)), (1, 1));
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    let reclaimed = wait_until(Duration::from_secs(15), || {
        master.recipes_info("ulist_expired_values") >= (n / 2) as i64
    });
    assert!(reclaimed);
    wait_for_sync(&master, &replica);
    for conn in [&mut *c, &mut *r] {
        assert_eq!((has(conn, 10), has(conn, 11)), (0, 1));
        let rows: Vec<Value> = q(conn, &["ULIST.DATA", "l"]);
        assert_eq!(rows.len(), n / 2);
    }
    assert_same_data(c, r);
    // Shrink to nothing by partitions, then grow again after a reload.
    for p in ["p0", "p1"] {
        let _: i64 = q(c, &["ULIST.DEL", "l", "p", p]);
    }
    let _: Value = q(c, &["DEBUG", "RELOAD"]);
    let rows: Vec<Value> = q(c, &["ULIST.DATA", "l"]);
    assert_eq!(
        rows.len(),
        (0..n).filter(|i| i % 2 == 1 && i % 3 == 2).count()
    );
    pipeline(
        c,
        (0..n).map(|i| args(&["ULIST.ADD", "l", "v", &format!("again{i}"), "p", "p9"])),
    );
    // 13 was in p1 (deleted), 5 in p2 (kept).
    assert_eq!((has(c, 13), has(c, 5)), (0, 1));
    master.restart_with_save();
    let c = &mut master.conn();
    let rows: Vec<Value> = q(c, &["ULIST.DATA", "l", "p", "p9"]);
    assert_eq!(rows.len(), n);
}

/// Deleting keys of every module type with many entries returns their
/// memory (freed off the server's thread), by DEL, UNLINK and FLUSHALL.
#[test]
fn big_values_are_freed_by_del_unlink_and_flushall() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let used = |c: &mut Conn| -> i64 {
        let info: String = q(c, &["INFO", "memory"]);
        info_field(&info, "used_memory")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fill = |c: &mut Conn, prefix: &str| {
        q_ok(c, &["ULIST.CREATE", &format!("{prefix}l"), "VALUE", "v"]);
        q_ok(
            c,
            &[
                "HCOUNTER.CREATE",
                &format!("{prefix}h"),
                "PARTITION",
                "d",
                "GROUP",
                "d",
                "c",
            ],
        );
        pipeline(
            c,
            (0..30_000).flat_map(|i| {
                let i = format!("a-rather-long-member-name-{i}");
                [
                    args(&["TOPN.INCR", &format!("{prefix}t"), &i]),
                    args(&["ULIST.ADD", &format!("{prefix}l"), "v", &i]),
                    args(&["HCOUNTER.INCR", &format!("{prefix}h"), "d", "1", "c", &i]),
                ]
            }),
        );
    };
    let empty = used(c);
    for how in ["DEL", "UNLINK", "FLUSHALL"] {
        fill(c, how);
        let full = used(c);
        assert!(full > empty + 5_000_000, "{how}: {full} vs {empty}");
        if how == "FLUSHALL" {
            q_ok(c, &["FLUSHALL"]);
        } else {
            for suffix in ["t", "l", "h"] {
                let n: i64 = q(c, &[how, &format!("{how}{suffix}")]);
                assert_eq!(n, 1);
            }
        }
        let freed = wait_until(Duration::from_secs(10), || used(c) < empty + 1_000_000);
        assert!(
            freed,
            "{how}: used_memory stays at {} (empty {empty})",
            used(c)
        );
    }
    let pong: String = q(c, &["PING"]);
    assert_eq!(pong, "PONG");
}

/// MEMORY USAGE sizes a big key from samples by default, and exactly with
/// SAMPLES 0; on uniform data the two agree closely.
#[test]
fn memory_usage_samples_like_core_types() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["ULIST.CREATE", "l", "VALUE", "v"]);
    q_ok(
        c,
        &["HCOUNTER.CREATE", "h", "PARTITION", "d", "GROUP", "d", "c"],
    );
    pipeline(
        c,
        (0..20_000).flat_map(|i| {
            let v = format!("value-longer-than-sixteen-bytes-{i:06}");
            [
                args(&["ULIST.ADD", "l", "v", &v]),
                args(&["HCOUNTER.INCR", "h", "d", &(i % 50).to_string(), "c", &v]),
            ]
        }),
    );
    for key in ["l", "h"] {
        let exact = memory_exact(c, key);
        let sampled: i64 = q(c, &["MEMORY", "USAGE", key]);
        assert!(exact > 20_000 * 16, "{key}: {exact}");
        let ratio = sampled as f64 / exact as f64;
        assert!(
            (0.9..1.1).contains(&ratio),
            "{key}: sampled {sampled} vs exact {exact}"
        );
    }
}
