//! Self-tests of the test harness (tests/common).
mod common;
use common::*;

#[test]
fn start_stop_and_module_listed() {
    let srv = Server::start();
    let mut c = srv.conn();
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let list: redis::Value = redis::cmd("MODULE").arg("LIST").query(&mut c).unwrap();
    assert!(
        format!("{list:?}").contains("recipes"),
        "MODULE LIST: {list:?}"
    );
    let dir = srv.dir.clone();
    drop(srv);
    if std::env::var_os("KEEP_TMP").is_none() {
        assert!(!dir.exists(), "temp dir not removed");
    }
}

#[test]
fn two_servers_get_distinct_ports() {
    let a = Server::start();
    let b = Server::start();
    assert_ne!(a.port, b.port);
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("a")
        .query(&mut a.conn())
        .unwrap();
    let v: Option<String> = redis::cmd("GET").arg("k").query(&mut b.conn()).unwrap();
    assert_eq!(v, None);
}

#[test]
fn restart_keeps_data_with_aof() {
    let mut srv = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let mut c = srv.conn();
    let _: () = redis::cmd("SET").arg("s").arg("v").query(&mut c).unwrap();
    let _: () = redis::cmd("ZADD")
        .arg("z")
        .arg(1)
        .arg("a")
        .arg(2)
        .arg("b")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("PEXPIREAT")
        .arg("z")
        .arg(now_ms() + 100_000)
        .query(&mut c)
        .unwrap();
    let before = dump_all(&mut c);
    assert_eq!(before.len(), 2);
    srv.restart();
    let after = dump_all(&mut srv.conn());
    assert_eq!(before, after);
}

#[test]
fn restart_with_save_keeps_data_rdb() {
    let mut srv = Server::start();
    let mut c = srv.conn();
    let _: () = redis::cmd("RPUSH")
        .arg("l")
        .arg("x")
        .arg("y")
        .query(&mut c)
        .unwrap();
    let before = dump_all(&mut c);
    srv.restart_with_save();
    assert_eq!(before, dump_all(&mut srv.conn()));
    // a plain restart (no SAVE, no AOF) loses it: proves the restart is real
    srv.stop();
    std::fs::remove_file(srv.dir.join("dump.rdb")).unwrap();
    srv.restart();
    assert!(dump_all(&mut srv.conn()).is_empty());
}

/// With AOF on, `restart_with_save` still loads the RDB (a plain restart
/// loads the AOF), and leaves the AOF on and current: a later plain restart
/// loads the AOF with what was written after.
#[test]
fn restart_with_save_loads_the_rdb_with_aof_on() {
    let mut srv = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    q_ok(&mut srv.conn(), &["SET", "saved", "1"]);
    let before = dump_all(&mut srv.conn());
    srv.restart_with_save();
    let log = srv.log();
    assert!(
        log.contains("DB loaded from disk") && !log.contains("DB loaded from append only file"),
        "the RDB restart did not load the RDB:\n{log}"
    );
    assert_eq!(dump_all(&mut srv.conn()), before);
    assert_eq!(
        info_field(&srv.info("persistence"), "aof_enabled").as_deref(),
        Some("1")
    );
    q_ok(&mut srv.conn(), &["SET", "later", "2"]);
    let before = dump_all(&mut srv.conn());
    srv.restart();
    assert!(
        srv.log().contains("DB loaded from append only file"),
        "{}",
        srv.log()
    );
    assert_eq!(dump_all(&mut srv.conn()), before);
}

#[test]
fn replica_syncs() {
    let master = Server::start();
    let mut m = master.conn();
    let _: () = redis::cmd("SET")
        .arg("before")
        .arg("1")
        .query(&mut m)
        .unwrap();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let _: () = redis::cmd("HSET")
        .arg("after")
        .arg("f")
        .arg("v")
        .query(&mut m)
        .unwrap();
    let _: () = redis::cmd("EXPIRE")
        .arg("after")
        .arg(1000)
        .query(&mut m)
        .unwrap();
    wait_for_sync(&master, &replica);
    let mut r = replica.conn();
    assert_same_data(&mut m, &mut r);
    assert_eq!(dump_all(&mut r).len(), 2);
}

#[test]
fn dump_all_detects_expiry_difference() {
    let a = Server::start();
    let b = Server::start();
    let (mut ca, mut cb) = (a.conn(), b.conn());
    for c in [&mut ca, &mut cb] {
        let _: () = redis::cmd("SET").arg("k").arg("v").query(c).unwrap();
    }
    let _: () = redis::cmd("PEXPIREAT")
        .arg("k")
        .arg(now_ms() + 100_000)
        .query(&mut ca)
        .unwrap();
    assert_ne!(dump_all(&mut ca), dump_all(&mut cb));
}

#[test]
fn command_tables_split_words_and_match_patterns() {
    assert_eq!(words("A k  '' ' 5' x"), ["A", "k", "", " 5", "x"]);
    assert!(glob_match(
        "ERR key already exists",
        "ERR key already exists"
    ));
    assert!(!glob_match(
        "ERR key already exists",
        "ERR key already exists!"
    ));
    assert!(glob_match(
        "ERR *LAST*WINDOW (4)*",
        "ERR LAST must be at most WINDOW (4)"
    ));
    assert!(!glob_match(
        "ERR *LAST*WINDOW (4)*",
        "ERR WINDOW (4) is less than LAST"
    ));
    assert!(!glob_match("ERR *BUCKET*", "WRONGTYPE BUCKET"));
    assert!(!glob_match("a*b*b", "ab"));
}

/// A refused command that changes data anyway fails the table; one that is
/// not refused fails it too.
#[test]
fn command_tables_catch_changes_and_successes() {
    let srv = Server::start();
    let c = &mut srv.conn();
    assert_eq!(
        assert_refusals(c, &[("GET", "ERR wrong number of arguments*")]),
        0
    );
    let fails = |c: &mut redis::Connection, line: &str| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_refusals(c, &[(line, "ERR *")]);
        }))
        .is_err()
    };
    // A script that writes, then replies an error: refused, yet data changed.
    let script = "EVAL 'redis.call(\"SET\",\"k\",\"v\") return redis.error_reply(\"ERR boom\")' 0";
    assert!(fails(c, script), "a change went unnoticed");
    assert!(fails(c, "SET k2 v"), "a success went unnoticed");
}
