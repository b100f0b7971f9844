//! Panics (the module's test-only fault hook, `RECIPES_FAULT_PANIC_KEY`) on
//! a master with a replica: a value that cannot be saved fails no save and
//! leaves no replica silently short of a key; a write that panics touches
//! only values of ours and counts what it leaks.

use super::*;
use std::time::Duration;

/// The master's saves of a value whose encoding panics succeed (a marker in
/// its place, the key named in the log): the master's writes go on, a
/// replica full-syncs, and says by name, and in INFO, which key it lacks.
#[test]
fn a_key_the_master_cannot_save_fails_no_save_and_the_replica_names_it() {
    let master = Server::builder()
        .env("RECIPES_FAULT_PANIC_KEY", "save:bad")
        .start();
    let m = &mut master.conn();
    assert_eq!(q::<i64>(m, &["TOPN.INCR", "bad", "x"]), 1);
    assert_eq!(q::<i64>(m, &["TOPN.INCR", "good", "x"]), 1);
    let _: Value = q(m, &["BGSAVE"]);
    wait_for_bg_done(&master);
    let status = info_field(&master.info("persistence"), "rdb_last_bgsave_status");
    assert_eq!(status.as_deref(), Some("ok"));
    assert_eq!(q::<i64>(m, &["TOPN.INCR", "good", "x"]), 2, "writes go on");
    // A replica full-syncs from the master's fork: every key but that one.
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    assert_eq!(q::<Vec<i64>>(r, &["TOPN.COUNT", "good", "x"]), [2]);
    assert_eq!(q::<i64>(r, &["EXISTS", "bad"]), 0);
    assert_eq!(recipes_info(r, "panics_replica_keys_lacking"), 1);
    assert!(
        master.log().contains("key \"bad\" could not be saved"),
        "{}",
        master.log()
    );
    let log = replica.log();
    assert!(
        log.contains("this replica lacks key \"bad\" (db 0)")
            && log.contains("its master could not save it"),
        "{log}"
    );
    // Not a loop of full syncs: the replica stays linked.
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(
        info_field(&replica.info("replication"), "master_link_status").as_deref(),
        Some("up")
    );
    assert_eq!(master.log().matches("Starting BGSAVE for SYNC").count(), 1);
}

/// A replica whose own file holds a value it could not save (its `SAVE`,
/// then a restart) drops the key, names it, and full-syncs from its master,
/// whose copy is sound: it ends equal to the master, that key included.
#[test]
fn a_replica_short_of_a_key_of_its_own_file_resyncs_in_full() {
    let master = Server::start();
    let mut replica = Server::builder()
        .env("RECIPES_FAULT_PANIC_KEY", "save:bad")
        .args(&["--replicaof", "127.0.0.1", &master.port.to_string()])
        .start();
    let m = &mut master.conn();
    assert_eq!(q::<i64>(m, &["TOPN.INCR", "bad", "x"]), 1);
    q_ok(m, &["ULIST.CREATE", "ul", "VALUE", "v"]);
    let _: i64 = q(m, &["ULIST.ADD", "ul", "EXPIRE", "3600", "v", "a"]);
    wait_for_sync(&master, &replica);
    q_ok(&mut replica.conn(), &["SAVE"]);
    replica.restart();
    let r = &mut replica.conn();
    let back = wait_until(SYNC_DEADLINE, || {
        q::<i64>(r, &["EXISTS", "bad"]) == 1
            && info_field(&replica.info("replication"), "master_link_status").as_deref()
                == Some("up")
    });
    let log = replica.log();
    assert!(back, "the replica did not get the key back:\n{log}");
    assert!(
        log.contains("this replica lacks key \"bad\" (db 0)")
            && log.contains("full resync with the master"),
        "{log}"
    );
    assert_eq!(recipes_info(r, "panics_replica_keys_lacking"), 1);
    wait_for_sync(&master, &replica);
    // DEBUG DIGEST: the replica's DUMP of `bad` would panic (its fault hook).
    let digest = |c: &mut Connection| q::<String>(c, &["DEBUG", "DIGEST"]);
    assert_eq!(digest(m), digest(r), "master and replica after the resync");
    assert_eq!(q::<Vec<i64>>(r, &["TOPN.COUNT", "bad", "x"]), [1]);
}

/// A write that panics after changing a TOPN key drops it without reading
/// it: the bytes leaked are counted, the members gauge no longer counts it,
/// and the replica equals the master. One that panics before reading a key
/// holding another module's value leaves that value alone.
#[test]
fn a_write_that_panics_touches_only_our_values_and_counts_what_it_leaks() {
    let bloom = std::env::var("RECIPES_BLOOM_MODULE").ok();
    let mut builder = Server::builder().env("RECIPES_FAULT_PANIC_KEY", "write:bad");
    if let Some(bloom) = &bloom {
        builder = builder.args(&["--loadmodule", bloom]);
    }
    let master = builder.clone().start();
    let replica = Server::start_replica_of(&master);
    let m = &mut master.conn();
    let mut p = redis::pipe();
    for i in 0..200 {
        p.cmd("TOPN.INCR").arg("good").arg(format!("m{i}")).ignore();
    }
    let _: () = p.query(m).unwrap();
    let good = recipes_info(m, "topn_members");
    assert_eq!(recipes_info(m, "panics_leaked_bytes"), 0);
    let mut p = redis::pipe();
    for i in 0..199 {
        p.cmd("TOPN.INCR").arg("bad").arg(format!("m{i}")).ignore();
    }
    // The fault strikes at each write's replication: the first one panics.
    let _: redis::RedisResult<()> = p.query(m);
    assert_eq!(q::<i64>(m, &["EXISTS", "bad"]), 0);
    let leaked = recipes_info(m, "panics_leaked_bytes");
    assert!(leaked > 100, "{leaked} bytes leaked counted");
    assert_eq!(
        recipes_info(m, "topn_members"),
        good,
        "the leaked key still counted"
    );
    wait_for_sync(&master, &replica);
    assert_same_content(
        &content(m),
        &content(&mut replica.conn()),
        "after the panic",
    );
    drop(replica);
    drop(master);
    let Some(_) = bloom else {
        eprintln!("another module's value: skipped (set RECIPES_BLOOM_MODULE to RedisBloom's .so)");
        return;
    };
    let other = builder.env("RECIPES_FAULT_PANIC_KEY", "command:bf").start();
    let c = &mut other.conn();
    let _: i64 = q(c, &["BF.ADD", "bf", "x"]);
    let e = expect_err(c, &cmd(&["TOPN.INCR", "bf", "m"]));
    assert!(e.contains("internal error in recipes"), "{e}");
    assert_eq!(
        q::<i64>(c, &["BF.EXISTS", "bf", "x"]),
        1,
        "another module's value was touched"
    );
    assert_eq!(recipes_info(c, "panics_write_keys_dropped"), 0);
    assert!(
        other
            .log()
            .contains("the key holds another module's value, left as it is"),
        "{}",
        other.log()
    );
}
