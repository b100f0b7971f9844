//! Resharding under load: a real 3-node cluster moves every slot of one
//! node to another with `redis-cli --cluster reshard` while two cluster clients write counted
//! writes of every family (following MOVED and ASK); before that, keys whose
//! items expire two seconds later move by hand (CLUSTER SETSLOT, MIGRATE).
//! Afterwards every key lives on its slot's owner only, holds exactly its
//! acknowledged writes, and the new owner reclaims the expired items.

use super::*;
use common::cluster::{key_slot, node_id, slot_owners, Cluster, ClusterClient, SLOTS};
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counted keys per family and writer in the slots that move, and elsewhere.
const MOVING_KEYS: usize = 3;
const STAYING_KEYS: usize = 1;
/// Keys with expiring items per family with reclaim, and items per key.
const RECLAIM_KEYS: usize = 3;
const ITEMS: usize = 500;
/// Counted writes per writer at most (a bound if the reshard hangs).
const MAX_WRITES: u64 = 2_000_000;

/// The first `moving` names `{prefix}{n}` whose slot `moves`, then the
/// first `staying` whose slot does not.
pub(super) fn names(
    prefix: &str,
    moves: impl Fn(usize) -> bool,
    moving: usize,
    staying: usize,
) -> Vec<String> {
    let candidates = (0..).map(|n| format!("{prefix}{n}"));
    let slot_moves = |k: &String| moves(key_slot(k.as_bytes()));
    let mut out: Vec<String> = candidates.clone().filter(slot_moves).take(moving).collect();
    out.extend(candidates.filter(|k| !slot_moves(k)).take(staying));
    out
}

/// Two writers' counted keys of every family, set up: the names `name_keys`
/// gives for each writer's prefix.
pub(super) fn counted_writers(
    client: &mut ClusterClient,
    name_keys: impl Fn(&str) -> Vec<String>,
) -> Vec<Vec<Counted>> {
    (0..2)
        .map(|w| {
            let mut keys = Vec::new();
            for fam in FAMILIES {
                for key in name_keys(&format!("{}w{w}:", fam.prefix())) {
                    for k in (fam.tally.setup)(&key) {
                        client.call(&k, &key).expect("setup");
                    }
                    keys.push(Counted {
                        fam,
                        key,
                        acknowledged: 0,
                    });
                }
            }
            keys
        })
        .collect()
}

/// A counted key and how many writes to it were acknowledged.
pub(super) struct Counted {
    pub fam: &'static Family,
    pub key: String,
    pub acknowledged: u64,
}

/// Counted writes round-robin over `keys` until `stop`, then one more pass
/// (so every key is written after its slot moved). A write refused while its
/// slot changes hands (`TRYAGAIN`) is retried; any other error reply than a
/// redirect fails the test.
pub(super) fn write_until(stop: &AtomicBool, client: &mut ClusterClient, keys: &mut [Counted]) {
    let mut total = 0;
    loop {
        let last_pass = stop.load(Ordering::SeqCst) || total >= MAX_WRITES;
        for k in keys.iter_mut() {
            let write = (k.fam.tally.write)(&k.key, k.acknowledged);
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                match client.call(&write, &k.key) {
                    Ok(_) => break,
                    Err(e) if err_text(&e).starts_with("TRYAGAIN") => {
                        assert!(std::time::Instant::now() < deadline, "TRYAGAIN for 20 s");
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("{}: {}", cmd_text(&write), err_text(&e)),
                }
            }
            k.acknowledged += 1;
            total += 1;
        }
        if last_pass {
            return;
        }
    }
}

#[test]
fn resharding_under_two_writers_loses_nothing_and_new_owners_reclaim() {
    let cluster = Cluster::start();
    let mut client = ClusterClient::connect(&cluster);
    let owners_before = slot_owners(&mut cluster.nodes[0].conn());
    // Every slot of the first node moves to the last; a few of the second
    // node's move by hand.
    let ports = cluster.ports();
    let (from, to) = (owners_before[0], owners_before[SLOTS - 1]);
    let by_hand = *ports.iter().find(|&&p| p != from && p != to).unwrap();
    let moved_slots = owners_before.iter().filter(|&&p| p == from).count();

    let moves = |slot: usize| owners_before[slot] == from;
    let writers = counted_writers(&mut client, |prefix| {
        names(prefix, moves, MOVING_KEYS, STAYING_KEYS)
    });
    // Keys whose items expire in two seconds, moved by hand to the last node
    // at once (CLUSTER SETSLOT and MIGRATE).
    let due = now_ms() + 2_000;
    let hand_moved = |slot: usize| owners_before[slot] == by_hand;
    let mut reclaiming: Vec<(&Family, String, Vec<u8>)> = Vec::new();
    for fam in FAMILIES {
        let Some(reclaim) = &fam.reclaim else {
            continue;
        };
        let twin = format!("reclaim:{}:empty", fam.name);
        for k in (reclaim.create)(&twin) {
            client.call(&k, &twin).expect("the twin key");
        }
        let empty = dump(client.owner_conn(&twin), &twin).expect("the twin key");
        let prefix = format!("reclaim:{}:", fam.name);
        for key in names(&prefix, hand_moved, RECLAIM_KEYS, 0) {
            for k in expiring_items(reclaim, &key, ITEMS, &[due]) {
                client.call(&k, &key).expect("expiring items");
            }
            reclaiming.push((fam, key, empty.clone()));
        }
    }
    let slots: BTreeSet<usize> = reclaiming
        .iter()
        .map(|(_, key, _)| key_slot(key.as_bytes()))
        .collect();
    for &slot in &slots {
        cluster.move_slot(slot, to);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = writers
        .into_iter()
        .map(|mut keys| {
            let mut client = ClusterClient::connect(&cluster);
            let stop = stop.clone();
            std::thread::spawn(move || {
                write_until(&stop, &mut client, &mut keys);
                (keys, client.redirects)
            })
        })
        .collect();
    let out = Command::new(redis_cli())
        .args(["--cluster", "reshard", &format!("127.0.0.1:{from}")])
        .args(["--cluster-from", &node_id(cluster.node(from))])
        .args(["--cluster-to", &node_id(cluster.node(to))])
        .args(["--cluster-slots", &moved_slots.to_string()])
        .arg("--cluster-yes")
        .output()
        .unwrap_or_else(|e| panic!("run {} --cluster reshard: {e}", redis_cli()));
    stop.store(true, Ordering::SeqCst);
    let written: Vec<(Vec<Counted>, usize)> = threads
        .into_iter()
        .map(|t| t.join().expect("writer"))
        .collect();
    assert!(
        out.status.success(),
        "reshard failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    cluster.wait_ok();
    let owners = slot_owners(&mut cluster.nodes[0].conn());
    let moved = (0..SLOTS)
        .filter(|&s| owners[s] != owners_before[s])
        .count();
    assert_eq!(moved, moved_slots + slots.len(), "slots that changed owner");

    // Each key on its owner only, among the masters: the node left without
    // slots may have turned into a replica of the one that took its last
    // slot (`cluster-allow-replica-migration`, Redis 7's default).
    let mut held_by: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for node in &cluster.nodes {
        let c = &mut node.conn();
        let role: Vec<Value> = q(c, &["ROLE"]);
        if role.first() != Some(&Value::BulkString(b"master".to_vec())) {
            continue;
        }
        let keys: Vec<String> = q(c, &["KEYS", "*"]);
        for key in keys {
            held_by.entry(key).or_default().push(node.port);
        }
    }
    for (key, ports) in &held_by {
        assert_eq!(
            ports,
            &vec![owners[key_slot(key.as_bytes())]],
            "{key} on the wrong node(s)"
        );
    }
    // Every acknowledged write there, once.
    let mut client = ClusterClient::connect(&cluster);
    let (mut acknowledged, mut redirects) = (0, 0);
    for (keys, followed) in &written {
        redirects += followed;
        for k in keys {
            let held = (k.fam.tally.count)(client.owner_conn(&k.key), &k.key);
            assert_eq!(
                held,
                k.acknowledged as i64,
                "{} on port {}: counted writes held vs acknowledged",
                k.key,
                owners[key_slot(k.key.as_bytes())]
            );
            acknowledged += k.acknowledged;
        }
    }
    let moving_keys = written.len() * FAMILIES.len() * MOVING_KEYS;
    assert!(
        redirects >= moving_keys,
        "the writers followed {redirects} redirects for {moving_keys} keys that moved"
    );
    // The new owners reclaim what expired.
    for (fam, key, empty) in &reclaiming {
        let c = &mut cluster.node(to).conn();
        let done = wait_until(Duration::from_secs(30), || {
            dump(c, key).as_ref() == Some(empty)
        });
        assert!(done, "{}: {key} not reclaimed on its new owner", fam.name);
    }
    eprintln!(
        "reshard: {moved_slots} slots moved under {acknowledged} acknowledged writes \
         ({redirects} redirects followed), none lost or doubled; {} keys moved with \
         {ITEMS} items due each, reclaimed on their new owner",
        reclaiming.len()
    );
    for node in &cluster.nodes {
        assert_no_crash(&node.log(), &format!("node {}", node.port));
    }
}
