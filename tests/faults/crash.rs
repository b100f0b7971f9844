//! Crashes with `appendonly yes`, `appendfsync always`: kill -9 in the middle
//! of a pipelined writer over every family, restart, and every acknowledged
//! write is there while none is there twice (each counted key holds between
//! its acknowledged writes and those plus the ones in flight); the AOF checks
//! valid. AOF rewrites one after another under such a writer, then kill -9:
//! the same. And an AOF whose tail is cut: refused with `aof-load-truncated
//! no`, loaded without the cut command with `yes`.

use super::*;
use common::families::{assert_same_state, run_workloads, state};
use common::writers::{assert_kept, counted_keys, spawn_writer};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Counted keys per family.
const KEYS_PER_FAMILY: usize = 3;
/// Commands per pipeline: at most this many writes are in flight at a kill.
const BATCH: usize = 60;
const KILLS: usize = 5;
/// Acknowledged batches before each kill.
const BATCHES_PER_KILL: u64 = 400;

/// A server that appends every write to its AOF and fsyncs before replying.
fn aof_always() -> Server {
    Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start()
}

/// A counted key and what the writer did to it.
#[derive(Clone)]
struct Counted {
    fam: &'static Family,
    key: String,
    /// The index of its next counted write (those before are all present).
    next: u64,
    acknowledged: i64,
    /// Sent in the batch that was cut off: applied or not.
    in_flight: i64,
}

/// Sends batches of counted writes, round-robin over `keys`, until the
/// connection breaks (the server was killed); returns the keys with what was
/// acknowledged and what was in flight then. An error reply fails the test.
fn write_until_killed(
    mut c: Connection,
    mut keys: Vec<Counted>,
    batches: Arc<AtomicU64>,
) -> Vec<Counted> {
    let mut turn = 0;
    loop {
        let mut pipe = redis::pipe();
        let mut sent = vec![0i64; keys.len()];
        for _ in 0..BATCH {
            let i = turn % keys.len();
            turn += 1;
            let k = &keys[i];
            pipe.add_command((k.fam.tally.write)(&k.key, k.next + sent[i] as u64));
            sent[i] += 1;
        }
        match pipe.query::<Vec<Value>>(&mut c) {
            Ok(_) => {
                for (k, n) in keys.iter_mut().zip(&sent) {
                    k.acknowledged += n;
                    k.next += *n as u64;
                }
                batches.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) if e.code().is_none() => {
                for (k, n) in keys.iter_mut().zip(&sent) {
                    k.in_flight = *n;
                }
                return keys;
            }
            Err(e) => panic!("a counted write failed: {}", err_text(&e)),
        }
    }
}

#[test]
fn kill_9_loses_no_acknowledged_write_and_applies_none_twice() {
    let mut srv = aof_always();
    let c = &mut srv.conn();
    let mut keys = Vec::new();
    for fam in FAMILIES {
        for j in 0..KEYS_PER_FAMILY {
            let key = format!("{}tally:{j}", fam.prefix());
            run_all(c, &(fam.tally.setup)(&key));
            keys.push(Counted {
                fam,
                key,
                next: 0,
                acknowledged: 0,
                in_flight: 0,
            });
        }
    }
    let (mut acknowledged, mut in_flight) = (0, 0);
    for kill in 1..=KILLS {
        let batches = Arc::new(AtomicU64::new(0));
        let writer = {
            let (c, keys, batches) = (srv.conn(), keys.clone(), batches.clone());
            std::thread::spawn(move || write_until_killed(c, keys, batches))
        };
        let reached = wait_until(Duration::from_secs(60), || {
            batches.load(Ordering::SeqCst) >= BATCHES_PER_KILL
        });
        srv.crash();
        let written = writer.join().expect("writer thread");
        assert!(
            reached,
            "kill {kill}: the writer did not get {BATCHES_PER_KILL} batches through"
        );
        acknowledged += batches.load(Ordering::SeqCst) * BATCH as u64;
        srv.restart();
        check_aof(&srv.dir);
        let c = &mut srv.conn();
        keys = written
            .into_iter()
            .map(|mut k| {
                let held = (k.fam.tally.count)(c, &k.key);
                assert!(
                    (k.acknowledged..=k.acknowledged + k.in_flight).contains(&held),
                    "kill {kill}: {} holds {held} counted writes; acknowledged {}, in flight {}",
                    k.key,
                    k.acknowledged,
                    k.in_flight
                );
                in_flight += k.in_flight;
                // What it holds is the new start: the writes 0..held.
                (k.next, k.acknowledged, k.in_flight) = (held as u64, held, 0);
                k
            })
            .collect();
    }
    eprintln!(
        "{KILLS} kills: {acknowledged} acknowledged writes, none lost or doubled; \
         {in_flight} in flight at the kills"
    );
    assert_no_crash(&srv.log(), "after the kills");
}

/// AOF rewrites under the writer, one after the other.
const REWRITES: usize = 4;

/// `BGREWRITEAOF` again and again while a writer's counted writes of every
/// family go on (each rewrite hands the writes made meanwhile over to the new
/// AOF), then kill -9 mid-writing: after the restart from the rewritten AOF
/// every acknowledged write is there, none twice.
#[test]
fn aof_rewrites_under_a_writer_lose_no_acknowledged_write() {
    let mut srv = aof_always();
    let c = &mut srv.conn();
    let keys = counted_keys("rewrite:", KEYS_PER_FAMILY);
    for k in &keys {
        run_all(c, &(k.fam.tally.setup)(&k.key));
    }
    let stop = Arc::new(AtomicBool::new(false));
    // No replica: `WAIT 0` acknowledges each write once the server replied.
    let writer = spawn_writer(&stop, srv.conn(), keys, 0);
    let rewrites_before = rewrites(&srv);
    for _ in 0..REWRITES {
        std::thread::sleep(Duration::from_millis(300));
        let _: String = q(c, &["BGREWRITEAOF"]);
        wait_for_bg_done(&srv);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rewrites(&srv) - rewrites_before, REWRITES as i64);
    srv.crash();
    stop.store(true, Ordering::SeqCst);
    let keys = writer.join().expect("writer thread");
    srv.restart();
    check_aof(&srv.dir);
    let acknowledged = assert_kept(&srv, &keys, "after rewrites and a kill");
    assert!(
        acknowledged > 1_000,
        "only {acknowledged} writes acknowledged"
    );
    eprintln!(
        "{REWRITES} AOF rewrites under a writer, then kill -9: {acknowledged} acknowledged \
         writes over {} keys, none lost or doubled",
        keys.len()
    );
    assert_no_crash(&srv.log(), "after the rewrites");
}

/// AOF rewrites the server has done.
fn rewrites(srv: &Server) -> i64 {
    info_field(&srv.info("persistence"), "aof_rewrites")
        .and_then(|n| n.parse().ok())
        .expect("aof_rewrites")
}

/// `redis-check-aof` finds the AOF (its manifest and every file) valid.
fn check_aof(dir: &Path) {
    let manifest = aof_files(dir).0;
    let out = Command::new(redis_check_aof())
        .arg(&manifest)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", redis_check_aof()));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !text.contains("not valid"),
        "{} {}:\n{text}",
        redis_check_aof(),
        manifest.display()
    );
}

/// The AOF manifest under `dir` and its last incremental file (where writes go).
fn aof_files(dir: &Path) -> (PathBuf, PathBuf) {
    let aof_dir = dir.join("appendonlydir");
    let manifest = std::fs::read_dir(&aof_dir)
        .expect("appendonlydir")
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "manifest"))
        .expect("an AOF manifest");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let last_incr = text
        .lines()
        .filter(|l| l.ends_with("type i"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .last()
        .expect("an incremental AOF file in the manifest");
    (manifest, aof_dir.join(last_incr))
}

#[test]
fn a_cut_aof_tail_is_refused_or_dropped_as_configured() {
    let mut srv = aof_always();
    let c = &mut srv.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("FAULTS_SEED", 1));
    let base = now_ms();
    run_workloads(c, base, &mut rng);
    let before = state(c, base);
    q_ok(c, &["SET", "fault:last", "x"]);
    srv.stop();

    // Cut the AOF in the middle of its last command.
    let incr = aof_files(&srv.dir).1;
    let mut aof = std::fs::read(&incr).unwrap();
    let at = aof
        .windows(10)
        .rposition(|w| w == b"fault:last")
        .expect("the last command in the AOF");
    aof.truncate(at + 3);
    std::fs::write(&incr, &aof).unwrap();

    let refused = srv
        .try_restart_with(&[("aof-load-truncated", "no")])
        .expect_err("a cut AOF must be refused with aof-load-truncated no");
    assert!(refused.exited_cleanly(), "{refused}");
    assert_no_crash(&refused.log, "refusing a cut AOF");

    srv.try_restart_with(&[("aof-load-truncated", "yes")])
        .unwrap_or_else(|e| panic!("aof-load-truncated yes: {e}"));
    assert!(
        srv.log().contains("aof-load-truncated is enabled"),
        "{}",
        srv.log()
    );
    let c = &mut srv.conn();
    assert!(!exists(c, "fault:last"), "the cut command was applied");
    assert_same_state(&before, &state(c, base), "AOF with its tail cut");
    // It goes on from there: later writes survive a restart.
    run_workloads(c, base, &mut rng);
    let later = state(c, base);
    srv.restart();
    assert_same_state(
        &later,
        &state(&mut srv.conn(), base),
        "writes after the cut",
    );
    check_aof(&srv.dir);
}
