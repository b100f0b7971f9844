//! Background reclaim follows keys that move, reclaims 200k values on a
//! master and its replica, and runs on a promoted replica.
use super::*;
use std::time::Duration;

/// Values that expire after the key moved (RENAME, MOVE, SWAPDB, COPY,
/// RESTORE, a restart) are still reclaimed in the background.
#[test]
fn reclaim_follows_the_key() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    let soon = || (now_ms() + 1_500).to_string();
    let fill = |c: &mut Conn, key: &str, at: &str| {
        create(c, key);
        for i in 0..50 {
            let v = i.to_string();
            let _: i64 = q(
                c,
                &["ULIST.ADD", key, "PXAT", at, "v", &v, "s", "x", "p", "y"],
            );
        }
        let _: i64 = q(
            c,
            &["ULIST.ADD", key, "NEVER", "v", "keep", "s", "x", "p", "y"],
        );
    };
    let at = soon();
    for k in ["r", "m", "w", "cp", "rs"] {
        fill(c, k, &at);
    }
    let moved = move_keys_every_way(c);
    wait_reclaimed(c, 50 * moved.len() as i64);
    for (db, key) in moved {
        q_ok(c, &["SELECT", db]);
        assert_eq!(rows(c, &["ULIST.DATA", key]).len(), 1, "{db}/{key}");
        // Only the NEVER value is left stored: DEL finds one partition.
    }
    // After a restart the loaded keys are scheduled again.
    q_ok(c, &["SELECT", "0"]);
    let at = soon();
    fill(c, "after", &at);
    srv.restart_with_save();
    let c = &mut srv.conn();
    wait_reclaimed(c, 50);
    // FLUSHALL leaves nothing behind; new lists work as before.
    q_ok(c, &["FLUSHALL"]);
    fill(c, "fresh", &soon());
    wait_reclaimed(c, 100);
}

/// 200,000 values with `EXPIRE 1` in a list nobody touches afterwards: its
/// memory comes back on the master and the replica, and the replica answers
/// exactly as the master.
#[test]
fn reclaims_200k_values_on_master_and_replica() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "big",
            "VALUE",
            "user",
            "PARTITION",
            "day",
            "EXPIRE",
            "1",
        ],
    );
    let _: i64 = q(
        c,
        &["ULIST.ADD", "big", "NEVER", "user", "stays", "day", "d0"],
    );
    // All 200,000 land before the first expires (the adds take a while on
    // a loaded machine), then expire within the same millisecond.
    let at = (now_ms() + 8_000).to_string();
    for chunk in 0..20 {
        let mut pipe = redis::pipe();
        for i in 0..10_000 {
            let user = format!("user:{}", chunk * 10_000 + i);
            let day = format!("d{}", i % 30);
            pipe.cmd("ULIST.ADD")
                .arg("big")
                .arg("AT")
                .arg(&at)
                .arg("user")
                .arg(user)
                .arg("day")
                .arg(day)
                .ignore();
        }
        let _: () = pipe.query(c).unwrap();
    }
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    let (full_m, full_r) = (memory(c, "big"), memory(r, "big"));
    assert!(full_m > 5_000_000, "{full_m}");
    let done = wait_until(Duration::from_secs(60), || {
        recipes_info(c, "ulist_expired_values") == 200_000
    });
    assert!(
        done,
        "reclaimed {}",
        recipes_info(c, "ulist_expired_values")
    );
    wait_for_sync(&master, &replica);
    let (after_m, after_r) = (memory(c, "big"), memory(r, "big"));
    assert!(after_m < full_m / 50, "master {full_m} -> {after_m}");
    assert!(after_r < full_r / 50, "replica {full_r} -> {after_r}");
    assert_eq!(recipes_info(r, "ulist_expired_values"), 200_000);
    assert_eq!(
        rows(r, &["ULIST.DATA", "big"]),
        rows(c, &["ULIST.DATA", "big"])
    );
    assert_eq!(
        rows(r, &["ULIST.PARTITIONS", "big"]),
        want(&[&[("day", "d0")]])
    );
    assert_same_data(c, r);
    assert!(!master.log().contains("panic") && !replica.log().contains("panic"));
}

/// A promoted replica takes over background reclaim.
#[test]
fn promoted_replica_reclaims() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    create(c, "l");
    let at = (now_ms() + 2_000).to_string();
    for i in 0..20 {
        let v = i.to_string();
        let _: i64 = q(
            c,
            &["ULIST.ADD", "l", "PXAT", &at, "v", &v, "s", "x", "p", "y"],
        );
    }
    wait_for_sync(&master, &replica);
    drop(master);
    let r = &mut replica.conn();
    q_ok(r, &["REPLICAOF", "NO", "ONE"]);
    assert!(wait_until(Duration::from_secs(10), || recipes_info(
        r,
        "ulist_expired_values"
    ) == 20));
    assert_eq!(rows(r, &["ULIST.PARTITIONS", "l"]), Vec::<Row>::new());
}
