//! Redis Cluster: a real 3-node cluster made with `redis-cli --cluster create`
//! (the cli of the server under test: `REDIS_CLI`; `tests/common/cluster.rs`).
//! Every command declares its key, so a node refuses a key it does not own
//! with MOVED, and a cluster client following the redirect lands every key on
//! its owner.
mod common;
use common::*;

use common::cluster::{key_slot, slot_owners, Cluster};
use std::process::Command;

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
            assert_eq!(key_slot(key.as_bytes()), slot as usize, "key_slot({key})");
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
