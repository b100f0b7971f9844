//! Keys that come and go, as in production: a million keys with expiring
//! values created and removed in every way a key goes (DEL, UNLINK, key
//! expiry, eviction, FLUSHDB, SWAPDB, RENAME, MOVE) on a master with a
//! replica leave no memory behind; a diskless `swapdb` full sync under
//! writes gives a replica equal to its master; eviction of big TOPN keys
//! frees what it needs, as for sorted sets.

use super::*;
use common::families::run_workloads;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Rounds of churn, keys a round (a third of each family with background
/// work: ULIST with an expiring value, HCOUNTER with a TTL, TOPN).
const ROUNDS: usize = 10;
const PER_ROUND: usize = 100_000;

fn used_memory(srv: &Server) -> i64 {
    let c = &mut srv.conn();
    let _: Value = q(c, &["MEMORY", "PURGE"]);
    info_field(&srv.info("memory"), "used_memory")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn scheduled(srv: &Server) -> (i64, i64) {
    let c = &mut srv.conn();
    (
        recipes_info(c, "reclaim_scheduled_keys"),
        recipes_info(c, "reclaim_upkeep_keys"),
    )
}

/// `n` keys `{prefix}{i}` with background work, through one pipeline.
fn create(c: &mut Connection, prefix: &str, n: usize) {
    let mut p = redis::pipe();
    for i in 0..n {
        let key = format!("{prefix}{i}");
        match i % 3 {
            0 => {
                p.cmd("ULIST.CREATE")
                    .arg(&key)
                    .arg("VALUE")
                    .arg("v")
                    .ignore();
                p.cmd("ULIST.ADD")
                    .arg(&key)
                    .arg("EXPIRE")
                    .arg(86_400)
                    .arg("v")
                    .arg(i)
                    .ignore();
            }
            1 => {
                p.cmd("HCOUNTER.CREATE")
                    .arg(&key)
                    .arg("PARTITION")
                    .arg("d")
                    .arg("TTL")
                    .arg(86_400)
                    .ignore();
                p.cmd("HCOUNTER.INCR").arg(&key).arg("d").arg(i).ignore();
            }
            _ => {
                p.cmd("TOPN.INCR").arg(&key).arg(i).ignore();
            }
        }
    }
    let _: () = p.query(c).expect("create");
}

/// Runs one command per key `{prefix}{i}`, `make(key)` building it.
fn each(c: &mut Connection, prefix: &str, n: usize, make: impl Fn(&str) -> redis::Cmd) {
    let mut p = redis::pipe();
    for i in 0..n {
        p.add_command(make(&format!("{prefix}{i}"))).ignore();
    }
    let _: () = p.query(c).expect("churn");
}

fn dbsize(c: &mut Connection) -> i64 {
    q(c, &["DBSIZE"])
}

/// Every way a key goes away.
const WAYS: [&str; 8] = [
    "DEL", "UNLINK", "expiry", "eviction", "FLUSHDB", "SWAPDB", "RENAME", "MOVE",
];

/// Creates `n` keys with background work under `prefix` on `srv` (db 0),
/// then removes them all `way`.
fn churn(srv: &Server, prefix: &str, n: usize, way: &str) {
    let m = &mut srv.conn();
    create(m, prefix, n);
    match way {
        "DEL" | "UNLINK" => each(m, prefix, n, |k| cmd(&[way, k])),
        "expiry" => {
            each(m, prefix, n, |k| cmd(&["PEXPIRE", k, "1"]));
            let gone = wait_until(Duration::from_secs(60), || dbsize(m) == 0);
            assert!(gone, "expired keys were not removed");
        }
        "eviction" => {
            let _: () = q(m, &["CONFIG", "SET", "maxmemory", "1"]);
            let _: redis::RedisResult<Value> = cmd(&["SET", "trigger", "x"]).query(m);
            let _: () = q(m, &["CONFIG", "SET", "maxmemory", "0"]);
            let evicted: i64 = info_field(&srv.info("stats"), "evicted_keys")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            assert!(evicted > 0, "nothing evicted");
            let _: Value = q(m, &["FLUSHDB"]);
        }
        "FLUSHDB" => {
            let _: Value = q(m, &["FLUSHDB"]);
        }
        "SWAPDB" => {
            let _: Value = q(m, &["SWAPDB", "0", "1"]);
            let _: Value = q(m, &["SELECT", "1"]);
            let _: Value = q(m, &["FLUSHDB"]);
            let _: Value = q(m, &["SELECT", "0"]);
        }
        "RENAME" => {
            each(m, prefix, n, |k| cmd(&["RENAME", k, &format!("r:{k}")]));
            each(m, &format!("r:{prefix}"), n, |k| cmd(&["DEL", k]));
        }
        _ => {
            each(m, prefix, n, |k| cmd(&["MOVE", k, "2"]));
            let _: Value = q(m, &["SELECT", "2"]);
            each(m, prefix, n, |k| cmd(&["UNLINK", k]));
            let _: Value = q(m, &["SELECT", "0"]);
        }
    }
    assert_eq!(dbsize(m), 0, "{prefix} ({way}) left keys");
}

#[test]
fn a_million_keys_churned_every_way_leave_no_memory_behind() {
    let master = Server::builder()
        .config("maxmemory-policy", "allkeys-random")
        .start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    // A first, smaller round of every way warms what is allocated once and
    // kept (the replication backlog, the server's and the module's small
    // caches, the other dbs); the baseline comes after it.
    for way in WAYS {
        churn(&master, &format!("warm:{way}:"), PER_ROUND / 10, way);
    }
    wait_for_sync(&master, &replica);
    std::thread::sleep(Duration::from_millis(500));
    let (base_m, base_r) = (used_memory(&master), used_memory(&replica));
    for round in 0..ROUNDS {
        let way = WAYS[round % WAYS.len()];
        churn(&master, &format!("churn{round}:"), PER_ROUND, way);
    }
    wait_for_sync(&master, &replica);
    for (srv, base, what) in [(&master, base_m, "master"), (&replica, base_r, "replica")] {
        let settled = wait_until(Duration::from_secs(30), || {
            scheduled(srv) == (0, 0) && used_memory(srv) <= base + base * 8 / 100
        });
        let now = used_memory(srv);
        assert!(
            settled,
            "{what}: schedules {:?}, used_memory {now} against a baseline of {base}\n{:?}",
            scheduled(srv),
            q::<Value>(&mut srv.conn(), &["MEMORY", "STATS"])
        );
        eprintln!(
            "churn: {what}: {} keys created and removed ({}), used_memory {base} -> {now} \
             ({:+.1}%), schedules empty",
            ROUNDS * PER_ROUND,
            WAYS.join(", "),
            (now - base) as f64 * 100.0 / base as f64
        );
    }
    assert_no_crash(&master.log(), "master");
    assert_no_crash(&replica.log(), "replica");
}

#[test]
fn a_diskless_swapdb_sync_under_writes_gives_an_equal_replica() {
    let master = Server::builder()
        .config("repl-diskless-sync", "yes")
        .start();
    let m = &mut master.conn();
    run_workloads(m, now_ms(), &mut StdRng::seed_from_u64(26));
    create(m, "dl:", 30_000);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let mut c = master.conn();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) && n < 1_000_000 {
                let _: i64 = q(&mut c, &["TOPN.INCR", "dl:writes", &(n % 100).to_string()]);
                n += 1;
            }
            n
        })
    };
    let replica = Server::builder()
        .config("repl-diskless-load", "swapdb")
        .start();
    q_ok(
        &mut replica.conn(),
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    let linked = wait_until(SYNC_DEADLINE, || {
        info_field(&replica.info("replication"), "master_link_status").as_deref() == Some("up")
    });
    assert!(linked, "the replica never synced:\n{}", replica.log());
    stop.store(true, Ordering::SeqCst);
    let writes = writer.join().expect("writer");
    wait_for_sync(&master, &replica);
    let log = replica.log();
    assert!(!log.contains("Skipping diskless-load"), "{log}");
    assert!(
        log.contains("Loading DB in memory"),
        "not a diskless load:\n{log}"
    );
    let r = &mut replica.conn();
    assert_same_content(
        &content(m),
        &content(r),
        "master and replica after a diskless load",
    );
    let digest = |c: &mut Connection| q::<String>(c, &["DEBUG", "DIGEST"]);
    assert_eq!(digest(m), digest(r));
    assert_eq!(scheduled(&master), scheduled(&replica), "schedules");
    eprintln!(
        "diskless swapdb: {} keys loaded diskless under {writes} writes, equal to the master \
         (DUMP and DEBUG DIGEST), schedules {:?} on both",
        dbsize(r),
        scheduled(&replica)
    );
}

/// Fills `srv` with `keys` keys of `members` members each, one event a
/// member: TOPN keys, or the recipe's sorted sets.
fn fill(srv: &Server, topn: bool, keys: usize, members: usize) {
    let c = &mut srv.conn();
    for k in 0..keys {
        let mut p = redis::pipe();
        for i in 0..members {
            let (key, member) = (format!("big:{k}"), format!("member:{i}"));
            if topn {
                p.cmd("TOPN.INCR").arg(key).arg(member).ignore();
            } else {
                p.cmd("ZINCRBY").arg(key).arg(1).arg(member).ignore();
            }
        }
        let _: () = p.query(c).expect("fill");
    }
}

/// Sets `maxmemory` to what the server uses less a fifth of its data, makes
/// one write that evicts; returns (keys evicted, how far below the limit
/// used_memory ended, as a share of the data).
fn evict_a_fifth(srv: &Server) -> (i64, f64) {
    let c = &mut srv.conn();
    let used = used_memory(srv);
    let data = used - 1_000_000;
    let limit = used - data / 5;
    let _: () = q(c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    let _: () = q(c, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let _: redis::RedisResult<Value> = cmd(&["SET", "trigger", "x"]).query(c);
    let evicted: i64 = info_field(&srv.info("stats"), "evicted_keys")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let after = used_memory(srv);
    (evicted, (limit - after) as f64 / data as f64)
}

#[test]
fn eviction_frees_big_topn_keys_as_it_frees_sorted_sets() {
    let (keys, members) = (200, 2_000);
    let topn = Server::start();
    let zsets = Server::builder().without_module().start();
    fill(&topn, true, keys, members);
    fill(&zsets, false, keys, members);
    let (topn_evicted, topn_below) = evict_a_fifth(&topn);
    let (zset_evicted, zset_below) = evict_a_fifth(&zsets);
    eprintln!(
        "eviction of a fifth of the data: {keys} TOPN keys of {members} members: \
         {topn_evicted} evicted, used_memory ended {:.1}% of the data below the limit; \
         the same as sorted sets: {zset_evicted} evicted, {:.1}% below",
        topn_below * 100.0,
        zset_below * 100.0
    );
    assert!(topn_evicted > 0 && zset_evicted > 0);
    // Freed where eviction counts it: no overshoot beyond the core's own.
    assert!(
        topn_below <= zset_below + 0.05,
        "TOPN eviction overshot: {:.1}% below the limit against {:.1}% for sorted sets",
        topn_below * 100.0,
        zset_below * 100.0
    );
    assert_no_crash(&topn.log(), "the TOPN server");
}
