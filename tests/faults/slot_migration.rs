//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`) under load: a
//! real 3-node Valkey 9 cluster moves a range of slots holding every
//! family's keys to another node and back while two cluster clients write
//! counted writes, with items of every reclaiming family falling due during
//! the moves; then a third migration of a range filled with plain keys is
//! cancelled (`CLUSTER CANCELSLOTMIGRATIONS`). Afterwards every key lives on
//! its slot's owner only and holds exactly its acknowledged writes, the owner
//! reclaimed the expired items, and no node keeps schedule entries for keys
//! it no longer holds.
//!
//! The Valkey 9 binary comes from `RECIPES_VALKEY9_SERVER` (`make
//! test-faults` fetches it once: `scripts/compat-servers.sh path
//! valkey-9.1.2`); without it the test says so and passes.

use super::reshard::{counted_writers, names, write_until, Counted};
use super::*;
use common::cluster::{key_slot, node_id, slot_owners, Cluster, ClusterClient};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The slots that move back and forth, and those of the cancelled move.
const MOVING: (usize, usize) = (0, 300);
const CANCELLED: (usize, usize) = (301, 1000);
/// Counted keys per family and writer in the moving slots.
const KEYS: usize = 3;
/// Keys with expiring items per reclaiming family, and items per key.
const RECLAIM_KEYS: usize = 2;
const ITEMS: usize = 300;
/// Plain keys in the cancelled range (enough that the snapshot takes a while).
const FILLER: usize = 100_000;

/// The first `n` names `{prefix}{i}` whose slot lies in `range`.
fn names_in(prefix: &str, range: (usize, usize), n: usize) -> Vec<String> {
    names(prefix, |slot| (range.0..=range.1).contains(&slot), n, 0)
}

/// `CLUSTER MIGRATESLOTS` of `range` from the node on `from` to the one on
/// `to`; waits until every node sees `to` own the range.
fn migrate(cluster: &Cluster, range: (usize, usize), from: u16, to: u16) {
    let target = node_id(cluster.node(to));
    let (first, last) = (range.0.to_string(), range.1.to_string());
    q_ok(
        &mut cluster.node(from).conn(),
        &[
            "CLUSTER",
            "MIGRATESLOTS",
            "SLOTSRANGE",
            &first,
            &last,
            "NODE",
            &target,
        ],
    );
    let moved = wait_until(Duration::from_secs(60), || {
        cluster.nodes.iter().all(|n| {
            let owners = slot_owners(&mut n.conn());
            owners[range.0] == to && owners[range.1] == to
        })
    });
    assert!(moved, "slots {range:?} never reached port {to}");
}

fn scheduled(srv: &Server) -> i64 {
    recipes_info(&mut srv.conn(), "reclaim_scheduled_keys")
}

#[test]
fn atomic_slot_migration_back_and_forth_and_cancelled_loses_nothing() {
    let Ok(valkey) = std::env::var("RECIPES_VALKEY9_SERVER") else {
        eprintln!(
            "skipped: RECIPES_VALKEY9_SERVER names no Valkey 9 server \
             (make test-faults sets it: scripts/compat-servers.sh path valkey-9.1.2)"
        );
        return;
    };
    let cluster = Cluster::start_with(|| Server::builder().binary(&valkey));
    let mut client = ClusterClient::connect(&cluster);
    let owners = slot_owners(&mut cluster.nodes[0].conn());
    let source = owners[MOVING.0];
    assert_eq!(owners[CANCELLED.1], source, "both ranges start on one node");
    let target = *cluster.ports().iter().find(|&&p| p != source).unwrap();

    let writers = counted_writers(&mut client, |prefix| names_in(prefix, MOVING, KEYS));
    // Items falling due during the first move, in keys of the moving slots.
    let due = now_ms() + 1_500;
    let mut reclaiming: Vec<(&Family, String, Vec<u8>)> = Vec::new();
    for fam in FAMILIES {
        let Some(reclaim) = &fam.reclaim else {
            continue;
        };
        let twin = names_in(&format!("twin:{}:", fam.name), MOVING, 1).remove(0);
        for k in (reclaim.create)(&twin) {
            client.call(&k, &twin).expect("the twin key");
        }
        let empty = dump(client.owner_conn(&twin), &twin).expect("the twin key");
        for key in names_in(&format!("reclaim:{}:", fam.name), MOVING, RECLAIM_KEYS) {
            for k in expiring_items(reclaim, &key, ITEMS, &[due]) {
                client.call(&k, &key).expect("expiring items");
            }
            reclaiming.push((fam, key, empty.clone()));
        }
    }
    assert!(!reclaiming.is_empty(), "no family reclaims");
    // Plain keys that make the cancelled migration's snapshot take a while.
    let mut filler = redis::pipe();
    for key in names_in("filler:", CANCELLED, FILLER) {
        filler.cmd("SET").arg(key).arg("x").ignore();
    }
    let _: () = filler
        .query(&mut cluster.node(source).conn())
        .expect("filler");

    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = writers
        .into_iter()
        .map(|mut keys| {
            let mut client = ClusterClient::connect(&cluster);
            let stop = stop.clone();
            std::thread::spawn(move || {
                write_until(&stop, &mut client, &mut keys);
                keys
            })
        })
        .collect();
    migrate(&cluster, MOVING, source, target);
    std::thread::sleep(Duration::from_millis(2_000));
    migrate(&cluster, MOVING, target, source);
    // The cancelled one: started, then cancelled on the source at once.
    let target_id = node_id(cluster.node(target));
    let (first, last) = (CANCELLED.0.to_string(), CANCELLED.1.to_string());
    let src = &mut cluster.node(source).conn();
    q_ok(
        src,
        &[
            "CLUSTER",
            "MIGRATESLOTS",
            "SLOTSRANGE",
            &first,
            &last,
            "NODE",
            &target_id,
        ],
    );
    q_ok(src, &["CLUSTER", "CANCELSLOTMIGRATIONS"]);
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let written: Vec<Vec<Counted>> = threads
        .into_iter()
        .map(|t| t.join().expect("writer"))
        .collect();
    cluster.wait_ok();
    let owners = slot_owners(&mut cluster.nodes[0].conn());
    assert_eq!(owners[MOVING.0], source, "the moving range came back");
    let cancelled = owners[CANCELLED.0] == source;

    // Every acknowledged write there, once, on the key's owner only.
    let mut client = ClusterClient::connect(&cluster);
    let mut acknowledged = 0;
    for k in written.iter().flatten() {
        let held = (k.fam.tally.count)(client.owner_conn(&k.key), &k.key);
        assert_eq!(
            held, k.acknowledged as i64,
            "{}: held vs acknowledged",
            k.key
        );
        acknowledged += k.acknowledged;
    }
    for node in &cluster.nodes {
        let keys: Vec<String> = q(&mut node.conn(), &["KEYS", "*"]);
        for key in keys {
            assert_eq!(
                owners[key_slot(key.as_bytes())],
                node.port,
                "{key} on port {} (trimmed keys must go)",
                node.port
            );
        }
    }
    // The owner reclaimed what expired; no node keeps entries for keys it
    // does not hold (only the owner of the reclaiming keys has any, and
    // those go as it reclaims).
    for (fam, key, empty) in &reclaiming {
        let c = &mut cluster.node(source).conn();
        let done = wait_until(Duration::from_secs(30), || {
            dump(c, key).as_ref() == Some(empty)
        });
        assert!(done, "{}: {key} not reclaimed on its owner", fam.name);
    }
    for node in &cluster.nodes {
        let empty = wait_until(Duration::from_secs(10), || scheduled(node) == 0);
        assert!(
            empty,
            "port {}: {} schedule entries left",
            node.port,
            scheduled(node)
        );
        assert_no_crash(&node.log(), &format!("node {}", node.port));
    }
    eprintln!(
        "slot migration: slots {MOVING:?} moved to port {target} and back under \
         {acknowledged} acknowledged writes, none lost or doubled; {} keys with {ITEMS} \
         items due during the move reclaimed by their owner; the migration of {CANCELLED:?} \
         ({FILLER} keys) {}",
        reclaiming.len(),
        if cancelled {
            "was cancelled: the slots stayed, the target kept nothing"
        } else {
            "completed before the cancel reached it"
        }
    );
}
