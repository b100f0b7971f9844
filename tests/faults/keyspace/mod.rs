//! The keyspace model at the scale users run: thousands of random steps
//! over several dbs, each holding 100,000 plain keys (so the search for a
//! value renamed away spans many timer steps), mixing writes of every family
//! that owes background work (ULIST values expiring in an hour or in a few
//! seconds, HCOUNTER partitions with a TTL of an hour or of two seconds,
//! TOPN keys with upkeep) with every way Redis moves or drops a key: DEL,
//! UNLINK, expiry, eviction, lazy frees, RENAME (also over a key of ours,
//! from a script, chained on one name in a MULTI, and in a MULTI with many
//! renames of other keys), RENAMENX (both renamed by `rename-command`), MOVE,
//! COPY, RESTORE (REPLACE), SWAPDB, FLUSHDB and FLUSHALL (SYNC and ASYNC;
//! also one db flushed again and again), DEBUG RELOAD and DEBUG LOADAOF
//! (each sometimes followed by a MULTI of renames), and timer ticks; these
//! land while searches run. Before the steps, 40,000 keys of ours are
//! renamed and the AOF holding those renames is replayed (`DEBUG LOADAOF`).
//!
//! A replica loads diskless (`repl-diskless-load swapdb`): some steps make
//! it full-sync again, and some abort that load half-way.
//!
//! After every step the keys the module has work scheduled for (the
//! test-only view `CONFIG GET recipes.test-schedules`) are all the model's:
//! none is there that owes none (a key whose only work is already due may be
//! either). When the module follows nothing, and every hundred steps after
//! waiting for that (at most [`SETTLE`]), each key that surely owes work is
//! there too; after a replica's load, and at the end, on the replica as
//! well. At the end, past every short expiry, every expired value is gone
//! from memory (`ULIST.INFO`, `HCOUNTER.INFO`), the schedules hold exactly
//! the keys with work left, no search looked at or opened more than a few
//! buckets' keys between two reads of its clock (counted work, which no
//! stall of the machine changes), no timer step took more than 20 ms of the
//! main thread's CPU (the view's step timings; the slowest, whose 1 ms bound
//! the machine's CPU clock can pass on its own, is printed), and
//! no value was given up nor missed by a whole search of its db (`INFO
//! recipes`). A thread PINGs the master while the test waits, and the
//! slowest answer is printed.
//!
//! Seeded by `FAULTS_SEED` (printed; set it to replay), `KEYSPACE_STEPS`
//! steps (1,500), of the kinds `KEYSPACE_KINDS` lists (comma-separated
//! names of `Run::random_step`'s table; all by default), without the
//! 40,000 renames when `KEYSPACE_BULK=0`, to narrow a failure down. Runs on the default server, and again with active defrag
//! on (moving values under the steps) on `RECIPES_DEFRAG_SERVER` when set
//! (`make test-faults` passes Redis 8.2.3, built with its jemalloc).

mod scale;
mod steps;

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

const DBS: i32 = 4;
/// Names per db the steps pick from (`k0`..): few, so steps meet.
const NAMES: usize = 10;
/// How long the module may take to find what it follows (a settling check
/// waits): the searches of every db in turn, each about 15 s at this size.
const SETTLE: Duration = Duration::from_secs(120);
/// Steps between checks that wait until nothing is followed.
const SETTLE_EVERY: usize = 100;
/// Plain keys added for a load to abort (3 ms each to load, then).
const FILLERS: usize = 200;
/// A due time within this of now may already be reclaimed, or not yet.
const MARGIN_MS: i64 = 300;
/// What `RENAME` and `RENAMENX` are called on these servers
/// (`rename-command`): the module must not depend on a command's name.
const RENAME: &str = "XRENAME";
const RENAMENX: &str = "XRENAMENX";
/// The most CPU time a timer step of the module takes (its budget is 0.5
/// ms): printed, not asserted. This machine's thread-CPU clock charges a
/// thread for interrupts and the host's work (a loop that only reads the
/// clock sees it jump by up to 7 ms), so a step's time is its work plus
/// whatever jump lands in it: the bound on work is [`SLICE_BOUND_KEYS`],
/// counted.
const STEP_BOUND_US: u64 = 1_000;
/// A step's CPU time that no jump of the clock reaches: a stall of the
/// module's own (an unbounded search of a db of 100,000 keys takes about 60
/// ms), which fails the test.
const STALL_BOUND_US: u64 = 20_000;
/// The most keys a search may look at or open between two reads of its
/// clock: 8 scan calls, each a bucket of the db (a few more while the db
/// rehashes, or may not resize during a fork), and the values of ours they
/// found. Counted work, which no stall of the machine changes.
const SLICE_BOUND_KEYS: u64 = 256;

#[derive(Clone, Debug)]
enum Val {
    /// Values expiring in an hour, due times of values expiring soon, and
    /// values that never expire.
    Ulist {
        late: usize,
        soon: Vec<i64>,
        never: usize,
    },
    /// Partitions (by name), and when the last of them runs out (`short`: a
    /// TTL of 2 s, else an hour).
    Hcounter {
        short: bool,
        partitions: BTreeSet<String>,
        alive_until: i64,
    },
    /// Upkeep always owed (the module is loaded with no compact layout).
    Topn,
    /// A string: a key of another type.
    Plain,
}

/// What a key owes the schedules at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owes {
    Surely(&'static str),
    Maybe(&'static str),
    Nothing,
}

impl Val {
    fn owes(&self, now: i64) -> Owes {
        let later = |due: i64| due > now + MARGIN_MS;
        match self {
            Val::Ulist { late, soon, .. } => {
                if *late > 0 || soon.iter().any(|&d| later(d)) {
                    Owes::Surely("reclaim")
                } else if soon.is_empty() {
                    Owes::Nothing
                } else {
                    Owes::Maybe("reclaim")
                }
            }
            Val::Hcounter {
                partitions,
                alive_until,
                ..
            } => {
                if partitions.is_empty() {
                    Owes::Nothing
                } else if later(*alive_until) {
                    Owes::Surely("reclaim")
                } else {
                    Owes::Maybe("reclaim")
                }
            }
            Val::Topn => Owes::Surely("upkeep"),
            Val::Plain => Owes::Nothing,
        }
    }
}

type Place = (i32, String);

struct Model {
    keys: BTreeMap<Place, Val>,
    /// A counter for values and members, so every add is new.
    serial: u64,
}

impl Model {
    fn take(&mut self, p: &Place) -> Option<Val> {
        self.keys.remove(p)
    }
}

/// One run of the model test: its servers, connections, model and log.
struct Run<'a> {
    master: &'a Server,
    replica: &'a Server,
    c: &'a mut Connection,
    m: Model,
    rng: StdRng,
    /// The db the connection has selected.
    db: i32,
    /// The last steps, for a failure's message.
    log: Vec<String>,
    step: usize,
    seed: u64,
    /// The longest wait for nothing to be followed.
    slowest_settle: Duration,
    /// While set, the PING thread times the master's answers.
    quiet: &'a scale::Quiet,
}

/// A server of the test; `replica`: one that loads diskless (swapdb). The
/// AOF is rewritten only when the test asks, so `DEBUG LOADAOF` replays the
/// commands themselves.
fn keyspace_server(binary: Option<&str>, replica: bool) -> Server {
    let mut b = Server::builder()
        .env("RECIPES_TEST_SCHEDULES", "1")
        .module_args(&[
            "topn-compact-max",
            "0",
            "topn-default-bucket",
            "1",
            "topn-default-window",
            "3600",
            "ulist-compact-max",
            "4",
        ])
        .config("databases", &DBS.to_string())
        .config("appendonly", "yes")
        .config("auto-aof-rewrite-percentage", "0")
        .config("maxmemory-policy", "allkeys-random")
        .args(&["--rename-command", "RENAME", RENAME])
        .args(&["--rename-command", "RENAMENX", RENAMENX]);
    if let Some(binary) = binary {
        b = b.binary(binary);
    }
    if replica {
        b = b.config("repl-diskless-load", "swapdb");
    }
    b.start()
}

#[test]
fn the_schedules_follow_every_key_through_random_moves() {
    let seed = seed_from_env("FAULTS_SEED", 11);
    let srv = keyspace_server(None, false);
    let replica = keyspace_server(None, true);
    let steps = run_model(&srv, &replica, seed);
    eprintln!("keyspace model: {steps} steps, seed {seed}");
    assert_no_crash(&srv.log(), "keyspace model");
    assert_no_crash(&replica.log(), "keyspace model, replica");
}

#[test]
fn the_schedules_follow_every_key_while_defrag_moves_values() {
    let Ok(server) = std::env::var("RECIPES_DEFRAG_SERVER") else {
        eprintln!(
            "skipped: set RECIPES_DEFRAG_SERVER to a redis-server built with its jemalloc \
             (make test-faults passes Redis 8.2.3)"
        );
        return;
    };
    let seed = seed_from_env("FAULTS_SEED", 12);
    let srv = keyspace_server(Some(&server), false);
    let replica = keyspace_server(Some(&server), true);
    for s in [&srv, &replica] {
        let c = &mut s.conn();
        for (name, value) in [
            ("activedefrag", "yes"),
            ("active-defrag-ignore-bytes", "1"),
            ("active-defrag-threshold-lower", "0"),
            ("active-defrag-cycle-min", "10"),
            ("active-defrag-cycle-max", "50"),
        ] {
            q_ok(c, &["CONFIG", "SET", name, value]);
        }
    }
    let steps = run_model(&srv, &replica, seed);
    let (calls, moved) = (
        srv.recipes_info("defrag_calls"),
        srv.recipes_info("defrag_moved"),
    );
    eprintln!(
        "keyspace model with defrag: {steps} steps, seed {seed}: recipes_defrag_calls {calls}, \
         recipes_defrag_moved {moved}"
    );
    assert!(moved > 0, "defrag moved no value of ours ({calls} calls)");
    assert_no_crash(&srv.log(), "keyspace model with defrag");
}

/// Runs the steps and the final check; answers the number of steps.
fn run_model(srv: &Server, replica: &Server, seed: u64) -> usize {
    let steps: usize = std::env::var("KEYSPACE_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_500);
    let c = &mut srv.conn();
    let quiet = scale::Quiet::default();
    let _pings = scale::ping_probe(srv, &quiet);
    let mut run = Run {
        master: srv,
        replica,
        c,
        m: Model {
            keys: BTreeMap::new(),
            serial: 0,
        },
        rng: StdRng::seed_from_u64(seed),
        db: 0,
        log: Vec::new(),
        step: 0,
        seed,
        slowest_settle: Duration::ZERO,
        quiet: &quiet,
    };
    run.fill_plain_keys();
    let port = srv.port.to_string();
    q_ok(&mut replica.conn(), &["REPLICAOF", "127.0.0.1", &port]);
    wait_for_sync(srv, replica);
    if std::env::var("KEYSPACE_BULK").as_deref() != Ok("0") {
        run.bulk_renames_replayed();
    }
    // Steps by kind (the first word of what each did): how many, how long.
    let mut kinds: BTreeMap<String, (usize, Duration)> = BTreeMap::new();
    for step in 1..=steps {
        run.step = step;
        let started = Instant::now();
        let what = run.random_step();
        let kind = what.split(' ').next().unwrap_or_default().to_string();
        run.log.pop();
        run.log.push(format!("{step}: {what}"));
        if run.log.len() > 40 {
            run.log.remove(0);
        }
        run.check(step % SETTLE_EVERY == 0);
        let entry = kinds.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += started.elapsed();
    }
    run.finish();
    let summary: Vec<String> = kinds
        .iter()
        .map(|(k, (n, t))| format!("{k} {n} ({:.1} s)", t.as_secs_f64()))
        .collect();
    eprintln!("keyspace model, steps by kind: {}", summary.join(", "));
    eprintln!(
        "keyspace model: the slowest wait for nothing followed {:.1} s; the master's \
         slowest PING answer while the test waited {:.1} ms",
        run.slowest_settle.as_secs_f64(),
        quiet.take_slowest().as_secs_f64() * 1000.0
    );
    steps
}

/// What the test-only view shows: the schedule entries as (db, kind, name),
/// how many values are followed, the slowest timer step, the slowest step
/// of following in it and the most keys a search looked at or opened
/// between two reads of its clock (`None` from a build that does not show
/// them).
struct View {
    entries: BTreeSet<(i32, String, String)>,
    followed: i64,
    slowest_step_us: Option<u64>,
    slowest_follow_us: Option<u64>,
    busiest_slice_keys: Option<u64>,
}

fn view(c: &mut Connection) -> View {
    let reply: Vec<String> = q(c, &["CONFIG", "GET", "recipes.test-schedules"]);
    let text = reply.get(1).cloned().unwrap_or_default();
    let mut v = View {
        entries: BTreeSet::new(),
        followed: -1,
        slowest_step_us: None,
        slowest_follow_us: None,
        busiest_slice_keys: None,
    };
    for line in text.lines() {
        let mut words = line.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("followed"), Some(n), None) => v.followed = n.parse().expect("followed"),
            (Some("slowest-step-us"), Some(n), None) => {
                v.slowest_step_us = Some(n.parse().expect("step time"))
            }
            (Some("slowest-follow-us"), Some(n), None) => {
                v.slowest_follow_us = Some(n.parse().expect("following's step time"))
            }
            (Some("busiest-search-slice-keys"), Some(n), None) => {
                v.busiest_slice_keys = Some(n.parse().expect("a search's slice"))
            }
            (Some(db), Some(kind), Some(name)) => {
                v.entries
                    .insert((db.parse().expect("db"), kind.into(), name.into()));
            }
            _ => {}
        }
    }
    v
}

/// How many values `c`'s server follows (`INFO recipes`, which costs the
/// server little, unlike the view, which lists every schedule entry).
fn followed(c: &mut Connection) -> i64 {
    recipes_info(c, "reclaim_followed_keys")
}

impl Run<'_> {
    fn select(&mut self, db: i32) {
        if self.db != db {
            q_ok(self.c, &["SELECT", &db.to_string()]);
            self.db = db;
        }
    }

    fn place(&mut self) -> Place {
        (
            self.rng.gen_range(0..DBS),
            format!("k{}", self.rng.gen_range(0..NAMES)),
        )
    }

    /// A place holding a key, or any place when none does.
    fn occupied(&mut self) -> Place {
        let n = self.m.keys.len();
        if n == 0 {
            return self.place();
        }
        let i = self.rng.gen_range(0..n);
        self.m.keys.keys().nth(i).cloned().expect("in range")
    }

    fn serial(&mut self) -> u64 {
        self.m.serial += 1;
        self.m.serial
    }

    fn query(&mut self, args: &[&str]) -> Result<Value, String> {
        cmd(args).query(self.c).map_err(|e| err_text(&e))
    }

    /// The view of `c` once nothing is followed there (waiting at most
    /// [`SETTLE`], the PING thread timing the master meanwhile), or the
    /// failure; `whose` names the server in it.
    fn settled_view(&mut self, server: &Server, whose: &str) -> View {
        let c = &mut server.conn();
        let started = Instant::now();
        self.quiet.set(true);
        let settled = wait_until(SETTLE, || followed(c) == 0);
        self.quiet.set(false);
        self.slowest_settle = self.slowest_settle.max(started.elapsed());
        let v = view(c);
        if !settled {
            self.fail(&format!(
                "{whose}{} values still followed after {SETTLE:?}\n",
                v.followed
            ));
        }
        v
    }

    /// Every key that surely owes work is scheduled on the replica too.
    fn check_replica(&mut self) {
        let v = self.settled_view(self.replica, "replica: ");
        let wrong = self.missing(&v.entries, "replica missing", now_ms());
        if !wrong.is_empty() {
            self.fail(&wrong);
        }
    }

    /// A line for each key the model says surely owes work at `now` and
    /// `entries` lack.
    fn missing(&self, entries: &BTreeSet<(i32, String, String)>, what: &str, now: i64) -> String {
        let mut wrong = String::new();
        for ((db, name), v) in &self.m.keys {
            if let Owes::Surely(kind) = v.owes(now) {
                if !entries.contains(&(*db, kind.into(), name.clone())) {
                    let _ = writeln!(wrong, "{what}: db {db} {kind} {name} ({v:?})");
                }
            }
        }
        wrong
    }

    /// Compares the master's schedules with the model (see the module doc);
    /// `settle`: after waiting until nothing is followed.
    fn check(&mut self, settle: bool) {
        let v = if settle {
            self.settled_view(self.master, "")
        } else {
            view(self.c)
        };
        let now = now_ms();
        let mut wrong = if v.followed == 0 {
            self.missing(&v.entries, "missing", now)
        } else {
            String::new()
        };
        for (db, kind, name) in &v.entries {
            if name.starts_with("plain:") {
                let _ = writeln!(wrong, "extra: db {db} {kind} {name} (a plain key)");
                continue;
            }
            let owes = self.m.keys.get(&(*db, name.clone())).map(|v| v.owes(now));
            let allowed = match owes {
                Some(Owes::Surely(k) | Owes::Maybe(k)) => k == kind,
                _ => false,
            };
            if !allowed {
                let _ = writeln!(
                    wrong,
                    "extra: db {db} {kind} {name} (model: {:?})",
                    self.m.keys.get(&(*db, name.clone()))
                );
            }
        }
        if !wrong.is_empty() {
            self.fail(&wrong);
        }
    }

    fn fail(&self, what: &str) -> ! {
        let following = |server: &Server| {
            let info = server.info("recipes");
            let fields: Vec<&str> = (info.lines())
                .filter(|l| l.starts_with("recipes_reclaim_"))
                .collect();
            fields.join(" ")
        };
        panic!(
            "keyspace model, seed {} (FAULTS_SEED={} replays it), after step {}:\n{what}\
             master: {}\nreplica: {}\nlast steps:\n{}",
            self.seed,
            self.seed,
            self.step,
            following(self.master),
            following(self.replica),
            self.log.join("\n")
        );
    }

    /// Past every short expiry: every expired value is gone from memory,
    /// the schedules hold exactly the keys with work left, no step went over
    /// its bounds and nothing was given up or missed.
    fn finish(&mut self) {
        let last_due = (self.m.keys.values())
            .filter_map(|v| match v {
                Val::Ulist { soon, .. } => soon.iter().max().copied(),
                Val::Hcounter {
                    short: true,
                    alive_until,
                    ..
                } => Some(*alive_until),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let places: Vec<(Place, Val)> = self.m.keys.clone().into_iter().collect();
        let reclaimed = wait_until(SETTLE, || {
            now_ms() > last_due + 1_000 && places.iter().all(|(p, v)| self.stored_is_live(p, v))
        });
        if !reclaimed {
            let left: Vec<String> = places
                .iter()
                .filter(|(p, v)| !self.stored_is_live(p, v))
                .map(|(p, v)| format!("{p:?}: {v:?}"))
                .collect();
            self.fail(&format!(
                "expired values left in memory:\n{}\n",
                left.join("\n")
            ));
        }
        for v in self.m.keys.values_mut() {
            match v {
                Val::Ulist { soon, .. } => soon.clear(),
                Val::Hcounter {
                    short: true,
                    partitions,
                    ..
                } => partitions.clear(),
                _ => {}
            }
        }
        self.step += 1;
        self.log.push("past every expiry".into());
        self.check(true);
        wait_for_sync(self.master, self.replica);
        self.check_replica();
        self.check_bounds();
    }

    /// On both servers: no timer step took over [`STALL_BOUND_US`] of CPU
    /// (over [`STEP_BOUND_US`] is printed),
    /// no search's slice over [`SLICE_BOUND_KEYS`], no value was given up (a field older builds have) or missed by a
    /// whole search of its db.
    fn check_bounds(&mut self) {
        let mut wrong = String::new();
        for (server, whose) in [(self.master, "master"), (self.replica, "replica")] {
            let v = view(&mut server.conn());
            let following = v.slowest_follow_us.map_or("?".into(), |us| us.to_string());
            match v.busiest_slice_keys {
                Some(keys) if keys <= SLICE_BOUND_KEYS => {
                    eprintln!(
                        "keyspace model: the {whose}'s busiest slice of a search between two \
                         reads of its clock {keys} keys"
                    );
                }
                Some(keys) => {
                    let _ = writeln!(
                        wrong,
                        "{whose}: a search looked at or opened {keys} keys between two reads \
                         of its clock"
                    );
                }
                None => {
                    let _ = writeln!(wrong, "{whose}: the view shows no search slices");
                }
            }
            match v.slowest_step_us {
                Some(us) if us <= STALL_BOUND_US => {
                    let over = match us > STEP_BOUND_US {
                        true => {
                            " (over 1 ms: a jump of the machine's CPU clock, the slices bounded)"
                        }
                        false => "",
                    };
                    eprintln!(
                        "keyspace model: the {whose}'s slowest timer step {us} us of CPU, \
                         following's part of a step at most {following} us{over}"
                    );
                }
                Some(us) => {
                    let _ = writeln!(
                        wrong,
                        "{whose}: a timer step took {us} us of CPU (following's part of a \
                         step at most {following} us)"
                    );
                }
                None => {
                    let _ = writeln!(wrong, "{whose}: the view shows no step timings");
                }
            }
            let info = server.info("recipes");
            for field in ["reclaim_followed_given_up", "reclaim_search_missed"] {
                let n = info_field(&info, &format!("recipes_{field}"))
                    .and_then(|n| n.parse::<i64>().ok())
                    .unwrap_or(0);
                if n != 0 {
                    let _ = writeln!(wrong, "{whose}: recipes_{field} is {n}");
                }
            }
        }
        if !wrong.is_empty() {
            self.fail(&wrong);
        }
    }

    /// Whether the key at `p` stores only what has not expired.
    fn stored_is_live(&mut self, p: &Place, v: &Val) -> bool {
        self.select(p.0);
        let field = |info: &[Value], name: &str| -> i64 {
            let at = info
                .iter()
                .position(|f| reply_text(f) == name)
                .unwrap_or_else(|| panic!("no {name} in {info:?}"));
            redis::from_redis_value(&info[at + 1]).expect("an integer")
        };
        match v {
            Val::Ulist { late, never, .. } => {
                let info: Vec<Value> = q(self.c, &["ULIST.INFO", &p.1]);
                field(&info, "values") == (late + never) as i64
            }
            Val::Hcounter { short: true, .. } => {
                let info: Vec<Value> = q(self.c, &["HCOUNTER.INFO", &p.1]);
                field(&info, "partitions") == 0
            }
            _ => true,
        }
    }
}
