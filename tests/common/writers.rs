//! Counted writers for switches of roles (planned failovers, rolling
//! upgrades): writes of every family, each acknowledged with `WAIT`, and the
//! checks that follow a switch (every acknowledged write held, none beyond
//! those sent, master and replica at one digest). Used by the fault suite's
//! `planned_failover` and by `tests/upgrade/`.

use super::cluster::ClusterClient;
use super::families::{Family, FAMILIES};
use super::{cmd, info_field, q, Server};
use redis::{Connection, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A counted key: writes sent, and those a replica acknowledged (`WAIT`).
pub struct Counted {
    pub fam: &'static Family,
    pub key: String,
    pub sent: u64,
    pub acknowledged: u64,
}

/// `per_family` counted keys of every family, named `<prefix><family prefix><i>`.
pub fn counted_keys(prefix: &str, per_family: usize) -> Vec<Counted> {
    FAMILIES
        .iter()
        .flat_map(|fam| {
            (0..per_family).map(move |i| Counted {
                fam,
                key: format!("{prefix}{}{i}", fam.prefix()),
                sent: 0,
                acknowledged: 0,
            })
        })
        .collect()
}

/// Where a writer sends: one server's connection, or a cluster client.
pub trait Sink {
    fn call(&mut self, k: &redis::Cmd, key: &str) -> redis::RedisResult<Value>;
}

impl Sink for Connection {
    fn call(&mut self, k: &redis::Cmd, _key: &str) -> redis::RedisResult<Value> {
        k.query(self)
    }
}

impl Sink for ClusterClient {
    fn call(&mut self, k: &redis::Cmd, key: &str) -> redis::RedisResult<Value> {
        ClusterClient::call(self, k, key)
    }
}

/// Counted writes round-robin, each followed by `WAIT <replicas> 200` on the
/// same node (acknowledged once every replica has it, so whichever replica is
/// promoted holds it), until `stop` or `max` writes; a refused or failed
/// write stops the writer (a failover is under way): it was sent, maybe
/// applied.
pub fn write_until(
    stop: &AtomicBool,
    sink: &mut dyn Sink,
    keys: &mut [Counted],
    replicas: i64,
    max: u64,
) {
    let mut total = 0;
    while !stop.load(Ordering::SeqCst) && total < max {
        for k in keys.iter_mut() {
            let write = (k.fam.tally.write)(&k.key, k.sent);
            k.sent += 1;
            total += 1;
            if sink.call(&write, &k.key).is_err() {
                return;
            }
            match sink.call(&cmd(&["WAIT", &replicas.to_string(), "200"]), &k.key) {
                Ok(Value::Int(n)) if n >= replicas => k.acknowledged += 1,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
}

/// Runs a writer thread on `sink` over `keys` until `stop`, its writes
/// acknowledged by `replicas` replicas.
pub fn spawn_writer<S: Sink + Send + 'static>(
    stop: &Arc<AtomicBool>,
    mut sink: S,
    mut keys: Vec<Counted>,
    replicas: i64,
) -> std::thread::JoinHandle<Vec<Counted>> {
    let stop = stop.clone();
    std::thread::spawn(move || {
        write_until(&stop, &mut sink, &mut keys, replicas, 2_000_000);
        keys
    })
}

/// On a server after a switch: every key holds at least its acknowledged
/// writes and at most those sent. Returns the writes acknowledged.
pub fn assert_kept(srv: &Server, keys: &[Counted], what: &str) -> u64 {
    let c = &mut srv.conn();
    let mut acknowledged = 0;
    for k in keys {
        let held = (k.fam.tally.count)(c, &k.key);
        assert!(
            (k.acknowledged as i64..=k.sent as i64).contains(&held),
            "{what}: {} holds {held}, acknowledged {}, sent {}",
            k.key,
            k.acknowledged,
            k.sent
        );
        acknowledged += k.acknowledged;
    }
    acknowledged
}

/// `master` or `slave`, from `INFO replication`.
pub fn role(srv: &Server) -> String {
    info_field(&srv.info("replication"), "role").unwrap_or_default()
}

/// `DEBUG DIGEST` of two servers at one replication offset.
pub fn assert_same_digest(master: &Server, replica: &Server) {
    let offset = |srv: &Server, field: &str| info_field(&srv.info("replication"), field);
    for _ in 0..200 {
        let at = offset(master, "master_repl_offset");
        let d: Vec<String> = [master, replica]
            .iter()
            .map(|s| q(&mut s.conn(), &["DEBUG", "DIGEST"]))
            .collect();
        if at == offset(master, "master_repl_offset") && at == offset(replica, "slave_repl_offset")
        {
            assert_eq!(d[0], d[1], "DEBUG DIGEST at offset {at:?}");
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("master and replica never held still at one offset");
}
