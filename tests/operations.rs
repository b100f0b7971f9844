//! What an operator meets beside the commands: the guard on clients' times,
//! ACL for write-only users, load arguments, event classes, `DEBUG DIGEST`,
//! write pauses with background work due, and schedules that follow the keys
//! through every way a key goes away. (Failovers, churn at scale, diskless
//! loads and eviction are in the fault suite, `tests/faults/operations.rs`.)

mod common;

use common::families::run_workloads;
use common::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use redis::{Connection, Value};
use std::time::Duration;

const DAY_MS: i64 = 86_400_000;

/// Every client write that takes `AT`, with `{at}` where the time goes.
const TIMED_WRITES: [&str; 5] = [
    "RV.ADD rv m AT {at}",
    "TOPN.INCR topn m AT {at}",
    "HCOUNTER.INCR hc AT {at} day d1",
    "HCOUNTER.INCRBY hc 2 AT {at} day d1",
    "ULIST.ADD ul AT {at} EXPIRE 60 user u1",
];

fn declare(c: &mut Connection) {
    q_ok(
        c,
        &["HCOUNTER.CREATE", "hc", "PARTITION", "day", "TTL", "600"],
    );
    q_ok(c, &["ULIST.CREATE", "ul", "VALUE", "user"]);
}

fn timed(line: &str, at: i64) -> String {
    line.replace("{at}", &at.to_string())
}

#[test]
fn client_times_in_seconds_or_far_ahead_are_refused_and_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    declare(c);
    let now = now_ms();
    let mut rows = Vec::new();
    for line in TIMED_WRITES {
        rows.push((
            timed(line, now / 1000),
            "ERR AT is Unix time in milliseconds; * looks like seconds (did you mean *000?)",
        ));
        rows.push((
            timed(line, now + 2 * DAY_MS),
            "ERR AT * is further ahead of the server's clock than recipes.max-future-ms (86400000) allows",
        ));
        rows.push((
            timed(line, 9_007_199_254_740_000),
            "ERR AT 9007199254740000 is further ahead*",
        ));
    }
    for read in ["TOPN.TOP topn 10 AT {at}", "TOPN.COUNT topn m AT {at}"] {
        rows.push((
            timed(read, now / 1000),
            "ERR AT is Unix time in milliseconds*",
        ));
    }
    assert_refusals(c, &rows);
    // Within the limit, and a read of any time ahead, are accepted.
    for line in TIMED_WRITES {
        let words = words(&timed(line, now + 60_000));
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let _: Value = q(c, &args);
    }
    let _: Value = q(
        c,
        &[
            "TOPN.TOP",
            "topn",
            "10",
            "AT",
            &(now + 30 * DAY_MS).to_string(),
        ],
    );
    // 0 lifts the limit on the future; seconds stay refused.
    let _: () = q(c, &["CONFIG", "SET", "recipes.max-future-ms", "0"]);
    let far = (now + 300 * DAY_MS).to_string();
    assert_eq!(q::<i64>(c, &["RV.ADD", "rv2", "m", "AT", &far]), 1);
    let seconds = (now / 1000).to_string();
    let err = expect_err(c, &cmd(&["RV.ADD", "rv2", "n", "AT", &seconds]));
    assert!(err.contains("looks like seconds"), "{err}");
}

/// Replicated and AOF-loaded calls replay as written, whatever the replica's
/// or the restarted server's limit.
#[test]
fn replicated_and_aof_loaded_times_are_never_refused() {
    let mut master = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .module_args(&["max-future-ms", "0"])
        .start();
    let replica = Server::start_replica_of(&master);
    let m = &mut master.conn();
    declare(m);
    let far = now_ms() + 30 * DAY_MS;
    for line in TIMED_WRITES {
        let words = words(&timed(line, far));
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let _: Value = q(m, &args);
    }
    wait_for_sync(&master, &replica);
    let before = dump_all(m);
    assert_eq!(
        dump_all(&mut replica.conn()),
        before,
        "the replica refused some"
    );
    master
        .try_restart_with(&[("recipes.max-future-ms", "86400000")])
        .unwrap_or_else(|f| panic!("{}", f.log));
    let m = &mut master.conn();
    let limit: Vec<String> = q(m, &["CONFIG", "GET", "recipes.max-future-ms"]);
    assert_eq!(limit[1], "86400000");
    assert_eq!(dump_all(m), before, "the AOF replay refused some");
}

/// As INCRBY: a `%W~` user may write but not read counts back.
#[test]
fn write_only_users_get_noperm_where_a_reply_shows_data() {
    let srv = Server::start();
    let c = &mut srv.conn();
    declare(c);
    q_ok(c, &["ACL", "SETUSER", "w", "on", "nopass", "%W~*", "+@all"]);
    let w = &mut srv.conn();
    q_ok(w, &["AUTH", "w", "x"]);
    let before = dump_all(c);
    for line in [
        "INCRBY counter 0",
        "TOPN.INCR topn m BY 0",
        "TOPN.INCRBY topn 0 m",
        "HCOUNTER.INCR hc day d1",
        "HCOUNTER.INCRBY hc 0 day d1",
        "TOPN.TOP topn",
        "HCOUNTER.GET hc day d1",
        "ULIST.HAS ul user u1",
        "RV.GET rv",
    ] {
        let words = words(line);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let got = expect_err(w, &cmd(&args));
        assert!(got.starts_with("NOPERM"), "{line}: {got}");
    }
    assert_eq!(dump_all(c), before);
    // Writes whose replies show no stored data stay allowed (as SADD, ZADD, LPUSH).
    assert_eq!(q::<i64>(w, &["ULIST.ADD", "ul", "user", "u1"]), 1);
    assert_eq!(q::<i64>(w, &["RV.ADD", "rv", "m"]), 1);
    assert_eq!(q::<i64>(w, &["TL.PUSH", "tl", "m"]), 1);
}

#[test]
fn load_arguments_are_checked_and_named_in_the_log() {
    for (args, logged) in [
        (&["nosuch", "3"][..], "unknown load argument 'nosuch'"),
        (
            &["rv-default-maxlen"][..],
            "load argument 'rv-default-maxlen' needs a value",
        ),
        (
            &["recipes.rv-default-maxlen", "x"][..],
            "load argument 'recipes.rv-default-maxlen' needs an integer",
        ),
    ] {
        let Err(failure) = Server::builder().module_args(args).try_start() else {
            panic!("loaded with {args:?}");
        };
        assert!(failure.log.contains(logged), "{args:?}: {}", failure.log);
    }
    let srv = Server::builder()
        .module_args(&["recipes.rv-default-maxlen", "5", "tl-default-maxlen", "7"])
        .start();
    let c = &mut srv.conn();
    let got: Vec<String> = q(c, &["CONFIG", "GET", "recipes.rv-default-maxlen"]);
    assert_eq!(got[1], "5");
    let got: Vec<String> = q(c, &["CONFIG", "GET", "recipes.tl-default-maxlen"]);
    assert_eq!(got[1], "7");
}

/// `expired` comes in class `x` (not `g`), and a write that sets a TTL fires
/// `expire`, as the core's commands do.
#[test]
fn events_come_in_the_core_classes() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let _: () = q(c, &["CONFIG", "SET", "notify-keyspace-events", "Egx"]);
    let long_ago = (now_ms() - 10 * DAY_MS).to_string();
    assert_eq!(q::<i64>(c, &["RV.ADD", "rv", "m", "TTL", "100"]), 1);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "topn", "m"]), 1);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "topn", "m"]), 2);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "gone", "m", "AT", &long_ago, "TTL", "1"]),
        0
    );
    let _: () = q(c, &["DEL", "sentinel"]);
    let _: () = q(c, &["SET", "sentinel", "1"]);
    let _: () = q(c, &["DEL", "sentinel"]);
    let events = events_until_sentinel(&mut ps);
    let want: Vec<(String, String)> = [("expire", "rv"), ("expire", "topn"), ("expired", "gone")]
        .iter()
        .map(|(e, k)| (e.to_string(), k.to_string()))
        .collect();
    assert_eq!(events, want, "TOPN's second write keeps the TTL: no event");
    // Without class x, no `expired`.
    let _: () = q(c, &["CONFIG", "SET", "notify-keyspace-events", "Eg"]);
    assert_eq!(
        q::<i64>(c, &["RV.ADD", "gone", "m", "AT", &long_ago, "TTL", "1"]),
        0
    );
    let _: () = q(c, &["SET", "sentinel", "1"]);
    let _: () = q(c, &["DEL", "sentinel"]);
    assert_eq!(events_until_sentinel(&mut ps), []);
}

fn digest(c: &mut Connection) -> String {
    q(c, &["DEBUG", "DIGEST"])
}

fn digest_value(c: &mut Connection, key: &str) -> String {
    let v: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", key]);
    v[0].clone()
}

/// `DEBUG DIGEST` of master and replica taken at one replication offset (the
/// master's background reclaim may write between two reads): equal.
fn assert_same_digest(master: &Server, replica: &Server) {
    let offset = |srv: &Server, field: &str| info_field(&srv.info("replication"), field);
    for _ in 0..100 {
        wait_for_sync(master, replica);
        let at = offset(master, "master_repl_offset");
        let (on_master, on_replica) = (digest(&mut master.conn()), digest(&mut replica.conn()));
        if at == offset(master, "master_repl_offset") && at == offset(replica, "slave_repl_offset")
        {
            assert_eq!(on_master, on_replica, "DEBUG DIGEST at offset {at:?}");
            return;
        }
    }
    panic!("master and replica never held still at one offset");
}

#[test]
fn debug_digest_covers_module_values_equal_on_a_replica() {
    let master = Server::start();
    let m = &mut master.conn();
    let replica = Server::start_replica_of(&master);
    run_workloads(m, now_ms(), &mut StdRng::seed_from_u64(25));
    assert_same_digest(&master, &replica);
    // Every write changes the value's digest; two values of a type differ.
    declare(m);
    q_ok(m, &["ULIST.CREATE", "ul2", "VALUE", "user"]);
    let empty = digest_value(m, "ul");
    assert_eq!(digest_value(m, "ul2"), empty);
    for (key, write) in [
        ("ul", &["ULIST.ADD", "ul", "user", "u1"][..]),
        ("hc", &["HCOUNTER.INCR", "hc", "day", "d1"][..]),
        ("hc", &["HCOUNTER.INCR", "hc", "day", "d1"][..]),
        ("topn", &["TOPN.INCR", "topn", "a"][..]),
        ("topn", &["TOPN.INCR", "topn", "a"][..]),
    ] {
        let before = digest_value(m, key);
        let _: Value = q(m, write);
        assert_ne!(digest_value(m, key), before, "{write:?}");
    }
    assert_ne!(digest_value(m, "ul"), empty);
    assert_same_digest(&master, &replica);
}

/// `CLIENT PAUSE WRITE` (as FAILOVER, CLUSTER FAILOVER and Sentinel pause)
/// longer than the reclaim period, with reclaim due in every family that has
/// it, a replica and AOF on: the master lives, reclaims nothing while paused,
/// then catches up; master and replica end equal.
#[test]
fn a_write_pause_holds_background_reclaim_until_it_ends() {
    let master = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let replica = Server::start_replica_of(&master);
    let m = &mut master.conn();
    declare(m);
    let at = (now_ms() - 599_000).to_string();
    for i in 0..5 {
        let user = format!("u{i}");
        let _: i64 = q(m, &["ULIST.ADD", "ul", "EXPIRE", "1", "user", &user]);
        let _: i64 = q(m, &["HCOUNTER.INCR", "hc", "AT", &at, "day", &user]);
    }
    q_ok(m, &["CLIENT", "PAUSE", "2500", "WRITE"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(q::<String>(m, &["PING"]), "PONG");
    assert_eq!(recipes_info(m, "ulist_expired_values"), 0);
    assert_eq!(recipes_info(m, "hcounter_expired_partitions"), 0);
    let done = wait_until(Duration::from_secs(10), || {
        recipes_info(m, "ulist_expired_values") == 5
            && recipes_info(m, "hcounter_expired_partitions") == 5
    });
    assert!(done, "reclaim did not resume after the pause");
    wait_for_sync(&master, &replica);
    assert_same_data(m, &mut replica.conn());
    assert_same_digest(&master, &replica);
    assert!(!master.log().contains("ASSERTION"), "{}", master.log());
}

fn scheduled(c: &mut Connection) -> (i64, i64) {
    (
        recipes_info(c, "reclaim_scheduled_keys"),
        recipes_info(c, "reclaim_upkeep_keys"),
    )
}

/// Keys with due work in db `db`: ULIST and HCOUNTER keys owe reclaim, TOPN
/// keys upkeep (past the compact layout, which owes none: 130 members).
fn keys_with_due_work(c: &mut Connection, prefix: &str, n: usize) {
    for i in 0..n {
        let (ul, hc, tn) = (
            format!("{prefix}ul{i}"),
            format!("{prefix}hc{i}"),
            format!("{prefix}tn{i}"),
        );
        q_ok(c, &["ULIST.CREATE", &ul, "VALUE", "user"]);
        let _: i64 = q(c, &["ULIST.ADD", &ul, "EXPIRE", "86400", "user", "u"]);
        q_ok(
            c,
            &["HCOUNTER.CREATE", &hc, "PARTITION", "day", "TTL", "86400"],
        );
        let _: i64 = q(c, &["HCOUNTER.INCR", &hc, "day", "d"]);
        let mut members = redis::pipe();
        for m in 0..130 {
            members.cmd("TOPN.INCR").arg(&tn).arg(m).ignore();
        }
        let _: () = members.query(c).unwrap();
    }
}

/// Every way a key goes away takes it out of the schedules, on the master
/// and on its replica; renamed, moved and copied keys are followed; SWAPDB
/// swaps.
#[test]
fn schedules_follow_keys_through_every_way_they_go() {
    let master = Server::builder()
        .config("maxmemory-policy", "allkeys-random")
        .start();
    let replica = Server::start_replica_of(&master);
    let m = &mut master.conn();
    keys_with_due_work(m, "a:", 10);
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    assert_eq!(scheduled(m), (20, 10));
    assert_eq!(scheduled(r), (20, 10));
    // DEL, UNLINK, an expiring key, RENAME (followed), MOVE (followed), eviction.
    let _: i64 = q(m, &["DEL", "a:ul0", "a:hc0", "a:tn0"]);
    let _: i64 = q(m, &["UNLINK", "a:ul1", "a:hc1", "a:tn1"]);
    let _: i64 = q(m, &["PEXPIRE", "a:ul2", "1"]);
    let _: () = q(m, &["RENAME", "a:hc2", "b:hc2"]);
    let _: i64 = q(m, &["MOVE", "a:tn2", "3"]);
    let _: i64 = q(m, &["COPY", "a:tn3", "c:tn3", "DB", "2"]);
    // Overwritten by a value of another type (SET, RESTORE ... REPLACE):
    // gone from the schedules at once, not when its entry comes due.
    // RESTORE ... REPLACE of one of ours over one of ours keeps it scheduled.
    let dump_over = |c: &mut Connection, from: &str, to: &str| {
        let payload: Vec<u8> = q(c, &["DUMP", from]);
        let restore = redis::cmd("RESTORE")
            .arg(to)
            .arg(0)
            .arg(&payload)
            .arg("REPLACE")
            .clone();
        let _: Value = run(c, &restore);
    };
    q_ok(m, &["SET", "a:ul3", "plain"]);
    dump_over(m, "a:ul3", "a:hc3");
    dump_over(m, "a:ul4", "a:ul5");
    // The client stays in its db (Valkey 8 would leave it in the other one).
    let client: String = q(m, &["CLIENT", "INFO"]);
    assert!(client.contains(" db=0 "), "{client}");
    std::thread::sleep(Duration::from_millis(20));
    let _: i64 = q(m, &["EXISTS", "a:ul2"]);
    wait_for_sync(&master, &replica);
    // Renamed and moved keys are found again by the next timer steps.
    let want = (13, 9);
    wait_until(Duration::from_secs(5), || scheduled(m) == want);
    assert_eq!(scheduled(m), want, "master");
    wait_until(Duration::from_secs(5), || scheduled(r) == want);
    assert_eq!(scheduled(r), want, "replica");
    // SWAPDB swaps, FLUSHDB empties one db, FLUSHALL every db.
    let _: () = q(m, &["SWAPDB", "0", "3"]);
    let _: () = q(m, &["SELECT", "3"]);
    let _: () = q(m, &["FLUSHDB"]);
    let _: () = q(m, &["SELECT", "0"]);
    assert_eq!(
        scheduled(m),
        (0, 2),
        "db 3 (was 0) flushed; db 0 (was 3) and db 2 have one TOPN each"
    );
    keys_with_due_work(m, "c:", 3);
    let _: () = q(m, &["FLUSHALL", "ASYNC"]);
    assert_eq!(scheduled(m), (0, 0));
    // Eviction: each key left keeps its one entry, the evicted ones none.
    keys_with_due_work(m, "d:", 20);
    let used: i64 = info_field(&master.info("memory"), "used_memory")
        .unwrap()
        .parse()
        .unwrap();
    let _: () = q(
        m,
        &["CONFIG", "SET", "maxmemory", &(used - 30_000).to_string()],
    );
    let _: redis::RedisResult<Value> = cmd(&["SET", "trigger", "x"]).query(m);
    let evicted: i64 = info_field(&master.info("stats"), "evicted_keys")
        .unwrap()
        .parse()
        .unwrap();
    assert!(evicted > 0, "nothing evicted");
    // No more evictions while the keys are counted (Valkey frees evicted
    // values lazily, so every command until then may evict more).
    let _: () = q(m, &["CONFIG", "SET", "maxmemory", "0"]);
    let left =
        |c: &mut Connection, pattern: &str| q::<Vec<String>>(c, &["KEYS", pattern]).len() as i64;
    let owing_reclaim = left(m, "d:ul*") + left(m, "d:hc*");
    assert_eq!(scheduled(m), (owing_reclaim, left(m, "d:tn*")));
    wait_for_sync(&master, &replica);
    assert_eq!(scheduled(r), scheduled(m), "replica");
}

/// Every fork (BGSAVE, BGREWRITEAOF) runs the module's fork hook, which sends
/// TOPN's read buffers to be written again: no event of the server tells a
/// module of a fork without costing every delete, and nothing a user sees
/// would tell a lost hook (only a slower first read after a save).
#[test]
fn every_fork_runs_the_fork_hook() {
    let srv = Server::builder().env("RECIPES_TEST_SCHEDULES", "1").start();
    let c = &mut srv.conn();
    let forks_seen = |c: &mut Connection| -> u64 {
        let reply: Vec<String> = q(c, &["CONFIG", "GET", "recipes.test-schedules"]);
        let text = reply.get(1).cloned().unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("forks-seen "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no forks-seen line in {text:?}"))
    };
    assert_eq!(forks_seen(c), 0);
    let _: Value = q(c, &["BGSAVE"]);
    wait_for_bg_done(&srv);
    assert_eq!(forks_seen(c), 1);
    let _: Value = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&srv);
    assert_eq!(forks_seen(c), 2);
}

/// A value whose encoding panics (the module's test-only fault hook): BGSAVE
/// and BGREWRITEAOF (its RDB part) succeed, the key written as a marker and
/// named in the log, so no failed save stops the master's writes; a restart
/// loads every other key and drops that one.
#[test]
fn a_save_that_panics_names_its_key_and_saves_the_rest() {
    let mut srv = Server::builder()
        .env("RECIPES_FAULT_PANIC_KEY", "save:bad")
        .config("appendonly", "yes")
        .start();
    let c = &mut srv.conn();
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "good", "m"]), 1);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "bad", "m"]), 1);
    let _: Value = q(c, &["BGSAVE"]);
    wait_for_bg_done(&srv);
    let _: Value = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&srv);
    let persistence = srv.info("persistence");
    for status in ["rdb_last_bgsave_status", "aof_last_bgrewrite_status"] {
        assert_eq!(
            info_field(&persistence, status).as_deref(),
            Some("ok"),
            "{status}"
        );
    }
    // Writes go on (stop-writes-on-bgsave-error is on by default).
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "good", "m"]), 2);
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "bad", "m"]), [1]);
    assert!(
        srv.log()
            .contains("key \"bad\" could not be saved (its encoding panicked"),
        "{}",
        srv.log()
    );
    // The restart loads the rewritten AOF: every key but the unsaveable one.
    srv.restart();
    let c = &mut srv.conn();
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "good", "m"]), [2]);
    assert_eq!(q::<i64>(c, &["EXISTS", "bad"]), 0);
    assert_eq!(recipes_info(c, "panics_unsaved_keys_dropped"), 1);
}

/// A value whose encoding panics, saved in the server itself (SAVE, DEBUG
/// RELOAD): the file still loads; every other key comes back, the one that
/// could not be saved is dropped, logged and counted, also on a replica.
#[test]
fn a_value_that_could_not_be_saved_never_blocks_a_load() {
    let mut srv = Server::builder()
        .env("RECIPES_FAULT_PANIC_KEY", "save:bad")
        .start();
    let replica = Server::start_replica_of(&srv);
    wait_for_sync(&srv, &replica);
    let c = &mut srv.conn();
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "good", "m"]), 1);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "bad", "m"]), 1);
    q_ok(c, &["ULIST.CREATE", "ul", "VALUE", "user"]);
    let _: i64 = q(c, &["ULIST.ADD", "ul", "user", "u"]);
    // DEBUG RELOAD saves and loads in the server; the replica follows the DEL.
    wait_for_sync(&srv, &replica);
    q_ok(c, &["DEBUG", "RELOAD"]);
    assert_eq!(q::<i64>(c, &["EXISTS", "bad"]), 0);
    assert_eq!(recipes_info(c, "panics_unsaved_keys_dropped"), 1);
    wait_for_sync(&srv, &replica);
    assert_eq!(q::<i64>(&mut replica.conn(), &["EXISTS", "bad"]), 0);
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "good", "m"]), [1]);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "bad", "m"]), 1);
    drop(replica);
    q_ok(c, &["SAVE"]);
    srv.restart();
    let c = &mut srv.conn();
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "good", "m"]), [1]);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "ul", "user", "u"]), 1);
    assert_eq!(q::<i64>(c, &["EXISTS", "bad"]), 0);
    assert_eq!(recipes_info(c, "panics_unsaved_keys_dropped"), 1);
    assert!(
        srv.log().contains("key \"bad\" could not be saved"),
        "{}",
        srv.log()
    );
    // A DUMP of it is refused by RESTORE, naming why.
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "bad", "m"]), 1);
    let payload: Vec<u8> = q(c, &["DUMP", "bad"]);
    let restored: redis::RedisResult<Value> = redis::cmd("RESTORE")
        .arg("copy")
        .arg(0)
        .arg(&payload)
        .query(c);
    assert!(restored.is_err());
    assert!(
        srv.log().contains("its value could not be saved"),
        "{}",
        srv.log()
    );
}

/// A write that panics after changing its key (the test-only fault hook, at
/// replication): a value of ours may be half-changed, so the key is dropped
/// without reading it (no DUMP, no free through it) and the DEL replicated;
/// the replica stays equal.
#[test]
fn a_write_that_panics_leaves_the_replica_equal() {
    let master = Server::builder()
        .env("RECIPES_FAULT_PANIC_KEY", "write:bad")
        .start();
    let replica = Server::start_replica_of(&master);
    let m = &mut master.conn();
    assert_eq!(q::<i64>(m, &["TOPN.INCR", "good", "m"]), 1);
    for _ in 0..2 {
        let err = expect_err(m, &cmd(&["TOPN.INCR", "bad", "m"]));
        assert!(err.contains("internal error in recipes"), "{err}");
    }
    assert_eq!(q::<i64>(m, &["EXISTS", "bad"]), 0);
    assert_eq!(recipes_info(m, "panics_write_keys_dropped"), 2);
    assert!(
        master
            .log()
            .contains("the key was deleted (and DEL replicated) without reading"),
        "{}",
        master.log()
    );
    // The log says where: the module's frames, innermost first.
    assert!(
        master
            .log()
            .contains("recipes: panic: in recipes::server::fault::inject at "),
        "{}",
        master.log()
    );
    wait_for_sync(&master, &replica);
    assert_same_data(m, &mut replica.conn());
    assert_same_digest(&master, &replica);
}

/// Background reclaim serves the dbs in turn: a key due in db 1 is not held
/// back until every key due at the same time in db 0 is done.
#[test]
fn dbs_are_served_in_turn() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let _: () = q(c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut ps = sub.as_pubsub();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    ps.psubscribe("__keyevent@*__:ulist.expire").unwrap();
    // Every value is due at the same millisecond: 3,000 keys in db 0, then
    // one in db 1.
    let at = (now_ms() + 300).to_string();
    let n = 3000;
    let mut fill = redis::pipe();
    for i in 0..n {
        let key = format!("ul{i}");
        fill.cmd("ULIST.CREATE")
            .arg(&key)
            .arg("VALUE")
            .arg("v")
            .ignore();
        fill.cmd("ULIST.ADD")
            .arg(&key)
            .arg("EXPIRE")
            .arg(1)
            .arg("AT")
            .arg(&at)
            .arg("v")
            .arg("x")
            .ignore();
    }
    let _: () = fill.query(c).unwrap();
    q_ok(c, &["SELECT", "1"]);
    q_ok(c, &["ULIST.CREATE", "other", "VALUE", "v"]);
    let _: i64 = q(
        c,
        &["ULIST.ADD", "other", "EXPIRE", "1", "AT", &at, "v", "x"],
    );
    let mut order = Vec::new();
    while order.len() <= n {
        let msg = ps.get_message().expect("a ulist.expire event");
        order.push(msg.get_channel_name().to_string());
    }
    let db1 = order
        .iter()
        .position(|ch| ch.starts_with("__keyevent@1__"))
        .expect("db 1's event");
    assert!(db1 < n / 2, "db 1's key was reclaimed {db1}th of {}", n + 1);
}

/// Keys that never exist get no schedule entries: `RESTORE` with an expiry
/// already past, and a key whose expiry passed before its RDB is loaded.
#[test]
fn keys_that_never_exist_are_not_scheduled() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["ULIST.CREATE", "ul", "VALUE", "v"]);
    let _: i64 = q(c, &["ULIST.ADD", "ul", "EXPIRE", "86400", "v", "x"]);
    assert_eq!(scheduled(c), (1, 0));
    let payload: Vec<u8> = q(c, &["DUMP", "ul"]);
    let past = (now_ms() - 1000).to_string();
    let restore = redis::cmd("RESTORE")
        .arg("gone")
        .arg(&past)
        .arg(&payload)
        .arg("ABSTTL")
        .clone();
    let _: Value = run(c, &restore);
    assert_eq!(q::<i64>(c, &["EXISTS", "gone"]), 0);
    assert_eq!(scheduled(c), (1, 0), "RESTORE with a past expiry");
    // Saved with an expiry that passes before the restart loads it.
    let _: i64 = q(c, &["PEXPIRE", "ul", "300"]);
    q_ok(c, &["SAVE"]);
    std::thread::sleep(Duration::from_millis(400));
    srv.restart();
    let c = &mut srv.conn();
    assert_eq!(q::<i64>(c, &["DBSIZE"]), 0);
    assert_eq!(scheduled(c), (0, 0), "an expired key in the RDB");
}

/// Memory the module holds beside the keys is in `INFO recipes`: the
/// schedules' bytes, and TOPN's read accumulators, which are freed once
/// reads stop using them.
#[test]
fn memory_held_beside_the_keys_is_shown_and_released() {
    let srv = Server::start();
    let c = &mut srv.conn();
    assert_eq!(recipes_info(c, "reclaim_schedule_bytes"), 0);
    keys_with_due_work(c, "a:", 10);
    assert!(recipes_info(c, "reclaim_schedule_bytes") > 30 * 10);
    q_ok(c, &["FLUSHALL"]);
    assert_eq!(recipes_info(c, "reclaim_schedule_bytes"), 0);
    // A key of 2,000 members in each of 24 one-second buckets: its top over
    // 12 buckets sums into dense accumulators. Its window is ten times what
    // the writes span: a key whose newest bucket leaves the window expires,
    // and a window of 24 would lose its first bucket at the next second,
    // the key with it if the writes are slow (a TOPN.INCR then makes a key
    // of the default hourly buckets, whose read needs no accumulator).
    q_ok(c, &["TOPN.CREATE", "big", "BUCKET", "1", "WINDOW", "240"]);
    let start = now_ms() / 1000 * 1000 - 23_000;
    for b in 0..24 {
        let at = (start + b * 1000).to_string();
        let mut writes = redis::pipe();
        for m in 0..2000 {
            writes
                .cmd("TOPN.INCR")
                .arg("big")
                .arg(m)
                .arg("AT")
                .arg(&at)
                .ignore();
        }
        let _: () = writes.query(c).unwrap();
    }
    let info: Vec<Value> = q(c, &["TOPN.INFO", "big"]);
    assert_eq!(
        (&info[1], &info[9]),
        (&Value::Int(1), &Value::Int(24)),
        "the key as written, one-second buckets: {info:?}"
    );
    let at = (start + 23_000).to_string();
    let _: Value = q(c, &["TOPN.TOP", "big", "10", "AT", &at, "LAST", "12"]);
    let held = recipes_info(c, "topn_read_buffer_bytes");
    assert!(
        held >= 2000 * 4,
        "{held} bytes held after a read {} ms after its AT; {:?}",
        now_ms() - start - 23_000,
        q::<Value>(c, &["TOPN.INFO", "big"])
    );
    let released = wait_until(Duration::from_secs(30), || {
        recipes_info(c, "topn_read_buffer_bytes") == 0
    });
    assert!(released, "the read accumulators were kept while idle");
}
