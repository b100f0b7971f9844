//! Replication and persistence: a replica, the AOF and the RDB reproduce the
//! master; DUMP/RESTORE, RENAME, COPY and MEMORY USAGE.
use super::*;

/// A mixed workload: adds with and without AT, expiring and not, values that
/// expire at once, deletes.
fn workload(c: &mut Conn, key: &str, round: u32) {
    let now = now_ms();
    let past = (now - DAY_MS).to_string();
    for i in 0..40 {
        let (v, d) = (
            format!("u{}:{round}", i % 17),
            format!("2024-01-{:02}", i % 5),
        );
        let _: i64 = q(c, &["ULIST.ADD", key, "v", &v, "s", "2024-01", "p", &d]);
        if i % 3 == 0 {
            let _: i64 = q(
                c,
                &[
                    "ULIST.ADD",
                    key,
                    "v",
                    &v,
                    "s",
                    "2024-02",
                    "p",
                    &d,
                    "EXPIRE",
                    "3600",
                ],
            );
        }
        if i % 4 == 0 {
            // Expired on arrival: reclaimed in the background.
            let _: i64 = q(
                c,
                &[
                    "ULIST.ADD",
                    key,
                    "AT",
                    &past,
                    "EXPIRE",
                    "5",
                    "v",
                    &v,
                    "s",
                    "old",
                    "p",
                    &d,
                ],
            );
        }
        if i % 5 == 0 {
            let _: i64 = q(
                c,
                &["ULIST.ADD", key, "NEVER", "v", &v, "s", "2024-03", "p", &d],
            );
        }
    }
    let _: i64 = q(c, &["ULIST.DEL", key, "s", "2024-01", "p", "2024-01-03"]);
}

/// Values each round of `workload` adds already expired.
const EXPIRED_PER_ROUND: i64 = 10;

#[test]
fn replica_aof_and_rdb_reproduce_the_master() {
    let mut master = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let c = &mut master.conn();
    create(c, "a");
    workload(c, "a", 0);
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    workload(c, "a", 1);
    // A write with many names and no AT: its effect is replicated with every
    // argument (this once lost all past the 8th).
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "wide",
            "VALUE",
            "a",
            "b",
            "c",
            "d",
            "e",
            "SCOPE",
            "f",
            "g",
            "PARTITION",
            "h",
            "i",
        ],
    );
    let wide = [
        "ULIST.ADD",
        "wide",
        "a",
        "1",
        "b",
        "2",
        "c",
        "3",
        "d",
        "4",
        "e",
        "5",
        "f",
        "6",
        "g",
        "7",
        "h",
        "8",
        "i",
        "9",
    ];
    assert_eq!(q::<i64>(c, &wide), 1);
    wait_reclaimed(c, 2 * EXPIRED_PER_ROUND);
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    assert_same_data(c, r);
    assert_eq!(
        rows(r, &["ULIST.DATA", "wide"]),
        rows(c, &["ULIST.DATA", "wide"])
    );
    assert_eq!(rows(r, &["ULIST.DATA", "wide"]).len(), 1);
    assert_eq!(rows(r, &["ULIST.DATA", "a"]), rows(c, &["ULIST.DATA", "a"]));
    assert!(
        recipes_info(r, "ulist_expired_values") > 0,
        "the replica applied the reclaim"
    );
    // AOF: rewrite mid-way, then more writes, then restart.
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    workload(c, "a", 2);
    wait_reclaimed(c, 3 * EXPIRED_PER_ROUND);
    let before = dump_all(c);
    let data = rows(c, &["ULIST.DATA", "a"]);
    master.restart();
    let c = &mut master.conn();
    assert_eq!(dump_all(c), before);
    assert_eq!(rows(c, &["ULIST.DATA", "a"]), data);
    // RDB.
    master.restart_with_save();
    let c = &mut master.conn();
    assert_eq!(dump_all(c), before);
    assert_eq!(rows(c, &["ULIST.DATA", "a"]), data);
}

#[test]
fn dump_restore_rename_copy_and_memory() {
    let srv = Server::start();
    let c = &mut srv.conn();
    create(c, "a");
    workload(c, "a", 0);
    wait_reclaimed(c, EXPIRED_PER_ROUND);
    let data = rows(c, &["ULIST.DATA", "a"]);
    assert!(!data.is_empty());
    let mem = memory(c, "a");
    assert!(mem > 1000, "MEMORY USAGE {mem}");
    let payload: Vec<u8> = q(c, &["DUMP", "a"]);
    let _: String = redis::cmd("RESTORE")
        .arg("b")
        .arg(0)
        .arg(&payload)
        .query(c)
        .unwrap();
    assert_eq!(rows(c, &["ULIST.DATA", "b"]), data);
    let _: i64 = q(c, &["COPY", "a", "c"]);
    assert_eq!(rows(c, &["ULIST.DATA", "c"]), data);
    // Copies are independent.
    assert_eq!(
        q::<i64>(c, &["ULIST.DEL", "c"]),
        q::<i64>(c, &["ULIST.DEL", "b"])
    );
    assert_eq!(rows(c, &["ULIST.DATA", "a"]), data);
    q_ok(c, &["RENAME", "a", "d"]);
    assert_eq!(rows(c, &["ULIST.DATA", "d"]), data);
    assert_eq!(memory(c, "d"), mem);
    let _: i64 = q(c, &["EXPIRE", "d", "1000"]);
    assert!(q::<i64>(c, &["TTL", "d"]) > 0);
    let _: i64 = q(c, &["UNLINK", "d"]);
    assert_eq!(q::<i64>(c, &["EXISTS", "d"]), 0);
}
