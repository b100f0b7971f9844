//! A rolling upgrade under writers: a master on the previous release with a
//! replica on this build, `FAILOVER` to the replica, then the old master
//! restarted on this build as the new master's replica.

use super::golden::add_keyword_named_keys;
use super::*;
use common::families::run_workloads;
use common::writers::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn rolling_upgrade_under_writers_keeps_every_acknowledged_write() {
    let mut old = previous_build().config("appendonly", "yes").start();
    add_keyword_named_keys(&mut old);
    let new = Server::builder().config("appendonly", "yes").start();
    q_ok(
        &mut new.conn(),
        &["REPLICAOF", "127.0.0.1", &old.port.to_string()],
    );
    wait_for_sync(&old, &new);
    let base = now_ms();
    let mut rng = StdRng::seed_from_u64(seed_from_env("UPGRADE_SEED", 1));
    let keys = counted_keys("up:", 2);
    {
        // Every family and option through the previous build's replication
        // stream into this build.
        let m = &mut old.conn();
        run_workloads(m, base, &mut rng);
        option_writes(m, "opt:", base);
        run_commands(m, keys.iter().flat_map(|k| (k.fam.tally.setup)(&k.key)));
    }
    wait_for_sync(&old, &new);
    let release = previous_release();
    assert_no_critical(&new, &format!("this build's replica of {release}"));
    assert_same_key_reads(
        &all_key_reads(&mut old.conn(), base),
        &all_key_reads(&mut new.conn(), base),
        &format!("{release}'s master and this build's replica"),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&stop, old.conn(), keys, 1);
    std::thread::sleep(Duration::from_millis(500));
    q_ok(&mut old.conn(), &["FAILOVER", "TIMEOUT", "10000"]);
    let switched = wait_until(Duration::from_secs(20), || {
        role(&old) == "slave" && role(&new) == "master"
    });
    assert!(switched, "roles did not switch:\n{}", old.log());
    stop.store(true, Ordering::SeqCst);
    let keys = writer.join().expect("writer");
    let acknowledged = assert_kept(&new, &keys, "this build, promoted");

    // The old master, restarted on this build, follows the new one.
    let new_port = new.port.to_string();
    restart_on_this_build_with(&mut old, |b| {
        b.args(&["--replicaof", "127.0.0.1", &new_port])
    });
    wait_for_sync(&new, &old);
    assert_kept(&old, &keys, "the old master on this build, a replica");
    assert_same_key_reads(
        &all_key_reads(&mut new.conn(), base),
        &all_key_reads(&mut old.conn(), base),
        "both servers on this build",
    );
    assert_same_digest(&new, &old);
    assert_no_critical(&new, "the new master");
    assert_no_critical(&old, "the old master on this build");
    eprintln!(
        "rolling upgrade from {release}: {acknowledged} acknowledged writes held on both \
         servers, reads and DEBUG DIGEST equal"
    );
}
