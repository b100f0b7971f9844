//! Redis Cluster: a real 3-node cluster made with `redis-cli --cluster create`
//! (the cli of the server under test: `REDIS_CLI`).
//! Every command declares its key, so a node refuses a key it does not own
//! with MOVED, and a cluster client following the redirect lands every key on
//! its owner.
mod common;
use common::*;

use redis::{Connection, Value};
use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

struct Cluster {
    nodes: Vec<Server>,
    conns: HashMap<u16, Connection>,
}

impl Cluster {
    fn start() -> Cluster {
        let nodes: Vec<Server> = (0..3)
            .map(|_| {
                Server::builder()
                    .config("cluster-enabled", "yes")
                    .config("cluster-config-file", "nodes.conf")
                    .config("cluster-node-timeout", "5000")
                    .start()
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new(redis_cli())
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .arg("--cluster-yes")
            .output()
            .unwrap_or_else(|e| panic!("run {} --cluster create: {e}", redis_cli()));
        assert!(
            out.status.success(),
            "cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let ready = wait_until(Duration::from_secs(20), || {
            nodes.iter().all(|n| {
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut n.conn())
                    .unwrap_or_default();
                info.contains("cluster_state:ok")
            })
        });
        assert!(ready, "cluster did not reach cluster_state:ok");
        let conns = nodes.iter().map(|n| (n.port, n.conn())).collect();
        Cluster { nodes, conns }
    }

    /// Sends `args` to the first node and follows one MOVED redirect, as a
    /// cluster client does. Returns the reply and whether it was redirected.
    fn call(&mut self, args: &[&str]) -> (Value, bool) {
        let first = self.nodes[0].port;
        match cmd(args).query::<Value>(self.conns.get_mut(&first).unwrap()) {
            Ok(v) => (v, false),
            Err(e) => {
                let text = err_text(&e);
                let target = text
                    .strip_prefix("MOVED ")
                    .and_then(|rest| rest.split(':').nth(1))
                    .and_then(|port| port.parse::<u16>().ok())
                    .unwrap_or_else(|| panic!("{args:?}: {text}"));
                let conn = self.conns.get_mut(&target).expect("known node");
                let v = cmd(args)
                    .query::<Value>(conn)
                    .unwrap_or_else(|e| panic!("{args:?} on {target}: {}", err_text(&e)));
                (v, true)
            }
        }
    }
}

/// Port of the node owning each of the 16384 slots, from `CLUSTER SLOTS`.
fn slot_owners(c: &mut Connection) -> Vec<u16> {
    let ranges: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(c).unwrap();
    let mut owners = vec![0u16; 16384];
    for range in ranges {
        let Value::Array(parts) = range else {
            panic!("CLUSTER SLOTS: {range:?}")
        };
        let start: usize = redis::from_redis_value(&parts[0]).unwrap();
        let end: usize = redis::from_redis_value(&parts[1]).unwrap();
        let Value::Array(master) = &parts[2] else {
            panic!("CLUSTER SLOTS master")
        };
        let port: u16 = redis::from_redis_value(&master[1]).unwrap();
        owners[start..=end].fill(port);
    }
    owners
}

#[test]
fn every_family_routes_by_its_declared_key() {
    let mut cluster = Cluster::start();
    let at = now_ms() / 3_600_000 * 3_600_000;
    let (mut redirected, mut calls) = (0, 0);
    const KEYS: usize = 24;
    for i in 0..KEYS {
        for fam in families::FAMILIES {
            let key = format!("{}{i}", fam.prefix());
            for step in (fam.sample)(&key, at) {
                let args: Vec<&str> = step.args.iter().map(|a| a.as_str()).collect();
                let (reply, moved) = cluster.call(&args);
                assert_eq!(reply_text(&reply), step.reply, "{args:?}");
                redirected += moved as usize;
                calls += 1;
            }
        }
    }
    // Two thirds of the slots live elsewhere: redirects must have happened,
    // which only works because Redis finds the key in our commands.
    assert!(
        redirected > calls / 3,
        "only {redirected} redirects of {calls} calls"
    );
    // Every key landed on exactly one node: the one owning its slot.
    let owners = slot_owners(&mut cluster.nodes[0].conn());
    let mut total = 0;
    for node in &cluster.nodes {
        let c = &mut node.conn();
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
        total += keys.len() as i64;
        for key in keys {
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(&key)
                .query(c)
                .unwrap();
            assert_eq!(
                owners[slot as usize], node.port,
                "{key} (slot {slot}) on the wrong node"
            );
        }
    }
    assert_eq!(total, (families::FAMILIES.len() * KEYS) as i64);
}

#[test]
fn redis_cli_cluster_mode_follows_redirects() {
    let cluster = Cluster::start();
    let port = cluster.nodes[1].port.to_string();
    let run = |args: &[&str]| {
        let out = Command::new(redis_cli())
            .args(["-c", "-p", &port])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run {} -c: {e}", redis_cli()));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for i in 0..10 {
        let key = format!("viewed:{i}");
        assert_eq!(run(&["RV.ADD", &key, "a", "MAXLEN", "3"]), "1");
        assert_eq!(run(&["RV.ADD", &key, "b", "MAXLEN", "3"]), "2");
        assert_eq!(run(&["RV.LEN", &key]), "2");
    }
}
