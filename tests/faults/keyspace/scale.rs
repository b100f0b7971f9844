//! What puts the keyspace model at the scale users run: plain keys in every
//! db, 40,000 keys of ours renamed and replayed from the AOF, and a thread
//! that times the master's answers to PING while the test waits.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Plain keys in each db (`plain:<i>`): a search of a db spans many steps.
const PLAIN_PER_DB: usize = 100_000;
/// Keys of ours renamed once each, then replayed from the AOF.
const BULK: usize = 40_000;
/// How long the module may take to find them all: a probe of every db for
/// each, then a search of their db.
const BULK_SETTLE: Duration = Duration::from_secs(180);

impl Run<'_> {
    /// Every db gets its plain keys (written, so the AOF and the replica
    /// have them).
    pub(super) fn fill_plain_keys(&mut self) {
        for db in 0..DBS {
            self.refill_plain_keys(db);
        }
    }

    /// Db `db` gets back the plain keys it lacks (after a flush).
    pub(super) fn refill_plain_keys(&mut self, db: i32) {
        self.select(db);
        let mut pipe = redis::pipe();
        self.plain_keys_into(&mut pipe);
        let _: () = pipe.query(self.c).expect("plain keys");
    }

    /// The writes of a db's plain keys, into `pipe`.
    pub(super) fn plain_keys_into(&self, pipe: &mut redis::Pipeline) {
        for chunk in (0..PLAIN_PER_DB).collect::<Vec<_>>().chunks(1_000) {
            let mut mset = redis::cmd("MSET");
            for i in chunk {
                mset.arg(format!("plain:{i}")).arg("x");
            }
            pipe.add_command(mset).ignore();
        }
    }

    /// Before the steps: [`BULK`] ULIST keys with a value expiring in an
    /// hour, each renamed once, then `DEBUG LOADAOF`: the replay follows
    /// them all. Each is then scheduled under its new name (found by the
    /// search, within [`BULK_SETTLE`]), and they go again.
    pub(super) fn bulk_renames_replayed(&mut self) {
        let db = DBS - 1;
        self.select(db);
        let mut pipe = redis::pipe();
        for i in 0..BULK {
            let name = format!("bulk:{i}");
            pipe.cmd("ULIST.CREATE")
                .arg(&name)
                .arg("VALUE")
                .arg("v")
                .ignore();
            pipe.cmd("ULIST.ADD")
                .arg(&name)
                .arg(&["EXPIRE", "3600", "v", "x"])
                .ignore();
            pipe.cmd(RENAME)
                .arg(&name)
                .arg(format!("bulked:{i}"))
                .ignore();
        }
        let _: () = pipe.query(self.c).expect("bulk keys");
        let started = Instant::now();
        q_ok(self.c, &["DEBUG", "LOADAOF"]);
        let loaded = started.elapsed();
        let c = &mut self.master.conn();
        self.quiet.set(true);
        let settled = wait_until(BULK_SETTLE, || followed(c) == 0);
        self.quiet.set(false);
        let found = started.elapsed();
        let v = view(c);
        let renamed = v
            .entries
            .iter()
            .filter(|(d, kind, name)| *d == db && kind == "reclaim" && name.starts_with("bulked:"))
            .count();
        eprintln!(
            "keyspace model: {BULK} renames of keys of ours replayed by DEBUG LOADAOF in \
             {:.2} s, all found {:.1} s after it began; the master's slowest PING answer \
             meanwhile {:.1} ms",
            loaded.as_secs_f64(),
            found.as_secs_f64(),
            self.quiet.take_slowest().as_secs_f64() * 1000.0
        );
        if !settled || renamed != BULK || v.entries.len() != BULK {
            self.fail(&format!(
                "after {BULK} renames replayed: {} values still followed, {renamed} renamed \
                 keys scheduled, {} entries in all\n",
                v.followed,
                v.entries.len()
            ));
        }
        let mut pipe = redis::pipe();
        for i in 0..BULK {
            pipe.cmd("DEL").arg(format!("bulked:{i}")).ignore();
        }
        let _: () = pipe.query(self.c).expect("bulk keys gone");
        // Later loads replay a short AOF.
        let _: String = q(self.c, &["BGREWRITEAOF"]);
        wait_for_bg_done(self.master);
    }
}

/// Whether the test is waiting (only then are PING answers timed: other
/// steps hold the server on purpose, as a load does), and the slowest
/// answer timed so far.
#[derive(Default)]
pub(super) struct Quiet {
    on: Arc<AtomicBool>,
    slowest_us: Arc<AtomicU64>,
}

impl Quiet {
    pub(super) fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// The slowest answer timed since the last call.
    pub(super) fn take_slowest(&self) -> Duration {
        Duration::from_micros(self.slowest_us.swap(0, Ordering::Relaxed))
    }
}

/// The PING thread, stopped when dropped.
pub(super) struct Pings {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Pings {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// PINGs `server` every 2 ms on a connection of its own, timing the answers
/// while `quiet` is set.
pub(super) fn ping_probe(server: &Server, quiet: &Quiet) -> Pings {
    let mut c = server.conn();
    let stop = Arc::new(AtomicBool::new(false));
    let (stopped, on, slowest) = (stop.clone(), quiet.on.clone(), quiet.slowest_us.clone());
    let thread = std::thread::spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            let timed = on.load(Ordering::Relaxed);
            let started = Instant::now();
            let _: Result<String, _> = redis::cmd("PING").query(&mut c);
            if timed && on.load(Ordering::Relaxed) {
                slowest.fetch_max(started.elapsed().as_micros() as u64, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    Pings {
        stop,
        thread: Some(thread),
    }
}
