//! Failover while background reclaim runs: a master and a real replica hold
//! every family's workload and keys whose items expire in waves over a few
//! seconds. At one replication offset, while the waves are being reclaimed,
//! both hold the same bytes (DUMP, for every family whose DUMP is
//! byte-equal on a replica, else its reads). Then the master is killed and
//! the replica promoted (`REPLICAOF NO ONE`): it answers the same reads and
//! reclaims what is left by itself, down to the bytes of a key that never
//! held the items.

use super::*;
use common::families::{all_reads, assert_same_reads, run_workloads, Reclaim};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Duration;

/// Waves of expiring items, one every `WAVE_MS`, `PER_WAVE` items each.
const WAVES: i64 = 8;
const WAVE_MS: i64 = 500;
const PER_WAVE: usize = 1000;

type Content = BTreeMap<Vec<u8>, (KeyDump, Vec<String>)>;

/// The master's and the replica's [`content`] at one replication offset: each
/// read between two equal offsets of its own (so nothing was applied
/// meanwhile), retried until the two offsets agree.
fn content_at_one_offset(
    master: &Server,
    replica: &Server,
    base: i64,
) -> (String, Content, Content) {
    let still = |srv: &Server, field: &str| {
        let offset = || info_field(&srv.info("replication"), field);
        let before = offset();
        let content = content(&mut srv.conn(), base);
        (before == offset()).then_some((before, content))
    };
    for _ in 0..300 {
        let Some((at_replica, on_replica)) = still(replica, "slave_repl_offset") else {
            continue;
        };
        let Some((at_master, on_master)) = still(master, "master_repl_offset") else {
            continue;
        };
        if at_master == at_replica {
            return (at_master.unwrap_or_default(), on_master, on_replica);
        }
    }
    panic!("master and replica never showed the same replication offset");
}

/// Creates `key` with `PER_WAVE` items due at each of `dues`, and its twin
/// that never holds items (`{key}:empty`); returns the twin's DUMP: what
/// `key` dumps as once they are all reclaimed.
fn fill(c: &mut Connection, reclaim: &Reclaim, key: &str, dues: &[i64]) -> Vec<u8> {
    let twin = format!("{key}:empty");
    run_all(c, &(reclaim.create)(&twin));
    run_all(c, &expiring_items(reclaim, key, PER_WAVE, dues));
    dump(c, &twin).expect("the twin key")
}

#[test]
fn failover_during_reclaim_keeps_every_family_and_the_promoted_master_reclaims() {
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let m = &mut master.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("FAULTS_SEED", 2));
    let base = now_ms();
    run_workloads(m, base, &mut rng);
    let first_due = now_ms() + WAVE_MS;
    let waves: Vec<i64> = (0..WAVES).map(|w| first_due + w * WAVE_MS).collect();
    let reclaiming: Vec<(&Family, &Reclaim, String, Vec<u8>)> = FAMILIES
        .iter()
        .filter_map(|fam| {
            let reclaim = fam.reclaim.as_ref()?;
            let key = format!("reclaim:{}", fam.name);
            let empty = fill(m, reclaim, &key, &waves);
            Some((fam, reclaim, key, empty))
        })
        .collect();
    assert!(
        !reclaiming.is_empty(),
        "no family reclaims in the background"
    );

    // Two waves due: reclaim is under way, more is to come.
    std::thread::sleep(Duration::from_millis(
        (first_due + 2 * WAVE_MS - now_ms()).max(0) as u64,
    ));
    let (offset, on_master, on_replica) = content_at_one_offset(&master, &replica, base);
    assert_same_content(
        &on_master,
        &on_replica,
        &format!("master and replica at offset {offset}"),
    );
    let reads = all_reads(m, base);

    // One more wave, due after the failover, that the replica has received.
    let late = now_ms() + 3_000;
    for (_, reclaim, key, _) in &reclaiming {
        run_all(m, &(reclaim.expiring)(key, PER_WAVE, late));
    }
    let acked: i64 = q(m, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1, "the replica did not acknowledge the last wave");

    // The master dies; the replica takes over.
    master.crash();
    let p = &mut replica.conn();
    q_ok(p, &["REPLICAOF", "NO", "ONE"]);
    assert_same_reads(&reads, &all_reads(p, base), "the promoted replica");
    for (fam, _, key, empty) in &reclaiming {
        let done = wait_until(Duration::from_secs(30), || {
            dump(p, key).as_ref() == Some(empty)
        });
        assert!(
            done,
            "{}: the promoted master did not reclaim every item of {key}",
            fam.name
        );
    }
    // It takes writes, and serves what it had.
    run_workloads(p, base, &mut rng);
    assert_no_crash(&replica.log(), "the promoted replica");
}
