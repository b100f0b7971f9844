//! Test harness: real `redis-server` processes with the module loaded.
//!
//! Every test starts its own server(s) on a free loopback port with a fresh
//! temp dir, so tests run in parallel without `--test-threads=1`.
//!
//! ```ignore
//! mod common;
//! use common::*;
//! let srv = Server::start();                       // defaults
//! let srv = Server::builder()
//!     .config("appendonly", "yes")                 // --appendonly yes
//!     .config("appendfsync", "always")
//!     .config("recipes.rv-default-maxlen", "5")    // module config
//!     .module_args(&["rv-default-maxlen", "3"])    // loadmodule <so> rv-default-maxlen 3
//!     .start();
//! let mut c = srv.conn();
//! ```
//!
//! Persistence: AOF tests use `appendonly yes` + `appendfsync always` and
//! `restart()` (SIGTERM flushes the AOF; with AOF on, a start loads the AOF).
//! RDB tests use `restart_with_save()` (SAVE, then a start that loads the
//! RDB, with AOF on too). Both reuse the same dir and the same config.
//!
//! Faults: `crash()` kills a server with SIGKILL (nothing flushed), and
//! `try_restart()` starts it again on its dir, answering the log and how the
//! process ended when it refuses to start (a bad RDB or AOF).
//!
//! The starter itself (free port, startup deadline, stop by pid, module path)
//! is `server.rs`, shared with the bench and re-exported here; so is its env:
//! `RECIPES_MODULE`, `REDIS_SERVER`, `REDIS_CLI`, `REDIS_CHECK_AOF`, `KEEP_TMP`.
// Each test file compiles this module and uses a part of it.
#![allow(dead_code)]

pub mod cluster;
pub mod families;
mod query;
mod server;
mod tables;
pub mod writers;
pub use query::*;
pub use server::*;
#[allow(unused_imports)] // not every test binary has tables
pub use tables::*;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const SYNC_DEADLINE: Duration = Duration::from_secs(15);

/// Module args for tests that write whole windows ahead of the server's
/// clock (so the clock cannot move their data while they run): the guard on
/// clients' times (`recipes.max-future-ms`) is lifted.
pub const AHEAD_OF_THE_CLOCK: &[&str] = &["max-future-ms", "0"];

/// Current Unix time in ms (the test machine's clock = the server's clock).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Poll `f` every 10 ms until it returns true or `timeout` passes. Returns the last result.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Test conveniences on a started server ([`Server`] is in `server.rs`).
impl Server {
    /// `SAVE`, then a restart that loads that RDB, with AOF on too: a plain
    /// restart would load the AOF then. So with AOF on, the new process
    /// starts with `appendonly no` (it loads `dump.rdb`), and turning the AOF
    /// on again rewrites it from the loaded data: later restarts load that.
    pub fn restart_with_save(&mut self) {
        let c = &mut self.conn();
        let aof: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("appendonly")
            .query(c)
            .expect("CONFIG GET appendonly");
        // A replica's full sync may still be saving in the background.
        wait_for_bg_done(self);
        let _: () = redis::cmd("SAVE").query(c).expect("SAVE");
        if aof.get(1).map(String::as_str) != Some("yes") {
            self.restart();
            return;
        }
        if let Err(e) = self.try_restart_once_with(&[("appendonly", "no")]) {
            panic!("{e}");
        }
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendonly")
            .arg("yes")
            .query(&mut self.conn())
            .expect("CONFIG SET appendonly yes");
        wait_for_bg_done(self);
        let p = self.info("persistence");
        assert_eq!(
            (
                info_field(&p, "aof_enabled").as_deref(),
                info_field(&p, "aof_last_bgrewrite_status").as_deref()
            ),
            (Some("1"), Some("ok")),
            "AOF not back on after the RDB restart\n{p}"
        );
    }

    /// `INFO <section>` as text.
    pub fn info(&self, section: &str) -> String {
        redis::cmd("INFO")
            .arg(section)
            .query(&mut self.conn())
            .expect("INFO")
    }
}

/// Wait until `replica` is linked to `master` and has applied everything the
/// master has produced so far (offsets equal). Panics after SYNC_DEADLINE.
pub fn wait_for_sync(master: &Server, replica: &Server) {
    let ok = wait_until(SYNC_DEADLINE, || {
        let r = replica.info("replication");
        if info_field(&r, "master_link_status").as_deref() != Some("up") {
            return false;
        }
        let m = master.info("replication");
        let mo = info_field(&m, "master_repl_offset");
        mo.is_some() && mo == info_field(&r, "slave_repl_offset")
    });
    assert!(
        ok,
        "replica on port {} did not sync with master on port {}\n--- master info ---\n{}\n--- replica info ---\n{}\n--- replica log ---\n{}",
        replica.port,
        master.port,
        master.info("replication"),
        replica.info("replication"),
        replica.log()
    );
}

/// Wait for a running BGREWRITEAOF / BGSAVE to finish.
pub fn wait_for_bg_done(srv: &Server) {
    let ok = wait_until(SYNC_DEADLINE, || {
        let p = srv.info("persistence");
        info_field(&p, "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&p, "aof_rewrite_scheduled").as_deref() == Some("0")
            && info_field(&p, "rdb_bgsave_in_progress").as_deref() == Some("0")
    });
    assert!(ok, "background save/rewrite did not finish\n{}", srv.log());
}

/// Logical content of one key, comparable across servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDump {
    pub kind: String,
    /// string: [value]; list: items; zset: member, score, ...; hash/set: sorted;
    /// other types (module types, streams): the DUMP payload.
    pub value: Vec<Vec<u8>>,
    /// Absolute expiry in ms (`PEXPIRETIME`), -1 when none.
    pub expire_at_ms: i64,
}

/// Every key of db 0 with its logical value and absolute expiry.
pub fn dump_all(c: &mut redis::Connection) -> BTreeMap<Vec<u8>, KeyDump> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(c).expect("KEYS");
    let mut out = BTreeMap::new();
    for k in keys {
        let kind: String = redis::cmd("TYPE").arg(&k).query(c).expect("TYPE");
        let value: Vec<Vec<u8>> = match kind.as_str() {
            "none" => continue, // expired meanwhile
            "string" => vec![redis::cmd("GET").arg(&k).query(c).unwrap()],
            "list" => redis::cmd("LRANGE")
                .arg(&k)
                .arg(0)
                .arg(-1)
                .query(c)
                .unwrap(),
            "zset" => redis::cmd("ZRANGE")
                .arg(&k)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(c)
                .unwrap(),
            "hash" => {
                let mut v: Vec<(Vec<u8>, Vec<u8>)> =
                    redis::cmd("HGETALL").arg(&k).query(c).unwrap();
                v.sort();
                v.into_iter().flat_map(|(a, b)| [a, b]).collect()
            }
            "set" => {
                let mut v: Vec<Vec<u8>> = redis::cmd("SMEMBERS").arg(&k).query(c).unwrap();
                v.sort();
                v
            }
            _ => vec![redis::cmd("DUMP").arg(&k).query(c).unwrap()],
        };
        let expire_at_ms: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
        out.insert(
            k,
            KeyDump {
                kind,
                value,
                expire_at_ms,
            },
        );
    }
    out
}

/// Assert two servers hold exactly the same data (values and absolute expiries).
pub fn assert_same_data(a: &mut redis::Connection, b: &mut redis::Connection) {
    let da = dump_all(a);
    let db = dump_all(b);
    if da != db {
        let keys: std::collections::BTreeSet<_> = da.keys().chain(db.keys()).collect();
        let mut diff = String::new();
        for k in keys {
            if da.get(k) != db.get(k) {
                diff += &format!(
                    "key {:?}:\n  left:  {:?}\n  right: {:?}\n",
                    String::from_utf8_lossy(k),
                    da.get(k),
                    db.get(k)
                );
            }
        }
        panic!("data differs:\n{diff}");
    }
}

/// Server error text as the server sent it, e.g. `"ERR invalid AT"`, `"WRONGTYPE ..."`.
pub fn err_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c.to_string(),
        _ => e.to_string(),
    }
}

/// Run `cmd` expecting an error reply; returns its text. Panics on success.
pub fn expect_err(c: &mut redis::Connection, cmd: &redis::Cmd) -> String {
    match cmd.query::<redis::Value>(c) {
        Ok(v) => panic!("expected an error from {:?}, got {:?}", cmd_text(cmd), v),
        Err(e) => err_text(&e),
    }
}

/// Printable form of a command (for messages).
pub fn cmd_text(cmd: &redis::Cmd) -> String {
    cmd.args_iter()
        .map(|a| match a {
            redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            redis::Arg::Cursor => "<cursor>".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Build a command from string args: `cmd(&["RV.ADD", "k", "m"])`.
pub fn cmd(args: &[&str]) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// Whether the file exists under the server dir (e.g. "appendonlydir", "dump.rdb").
pub fn exists_in(dir: &Path, name: &str) -> bool {
    dir.join(name).exists()
}

/// Keyspace events `(event, key)` received on `ps` until one for the key
/// `sentinel` (which the test fires last, so a missing event times out instead
/// of hanging).
pub fn events_until_sentinel(ps: &mut redis::PubSub<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        let msg = ps.get_message().expect("notification (timed out?)");
        let chan = msg.get_channel_name().to_string();
        let ev = chan.rsplit(':').next().unwrap().to_string();
        let key: Vec<u8> = msg.get_payload().unwrap();
        let key = String::from_utf8_lossy(&key).into_owned();
        if key == "sentinel" {
            return out;
        }
        out.push((ev, key));
    }
}

/// Turns every keyspace notification on (through `c`) and subscribes `sub`, a
/// connection of its own, to every key event of db 0, with a read timeout so
/// a missing event fails instead of hanging. Read with [`events_until_sentinel`].
pub fn subscribe_keyevents<'a>(
    c: &mut redis::Connection,
    sub: &'a mut redis::Connection,
) -> redis::PubSub<'a> {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("KEA")
        .query(c)
        .expect("CONFIG SET notify-keyspace-events");
    let mut ps = sub.as_pubsub();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ps.psubscribe("__keyevent@0__:*").unwrap();
    ps
}
