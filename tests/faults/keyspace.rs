//! The keyspace model: thousands of random steps over several dbs, mixing
//! writes of every family that owes background work (ULIST values expiring
//! in an hour or in a few seconds, HCOUNTER partitions with a TTL of an hour
//! or of two seconds, TOPN keys with upkeep) with every way Redis moves or
//! drops a key: DEL, UNLINK, expiry, eviction, lazy frees, RENAME (also over
//! a key of ours, from a script, and in a MULTI of more renames than the
//! module remembers), RENAMENX, MOVE, COPY, RESTORE (REPLACE), SWAPDB,
//! FLUSHDB and FLUSHALL (SYNC and ASYNC), DEBUG RELOAD, DEBUG LOADAOF (an AOF
//! replay, whose renames no command filter sees) and timer ticks.
//!
//! A replica loads diskless (`repl-diskless-load swapdb`): some steps make
//! it full-sync again, and some abort that load half-way.
//!
//! After every step, once the module follows nothing in flight, the keys it
//! has work scheduled for (the test-only view `CONFIG GET
//! recipes.test-schedules`) are the model's: each key that surely owes work
//! is there, and none is there that owes none (a key whose only work is
//! already due may be either); after a replica's load, and at the end, each
//! key that surely owes work is scheduled on the replica too. At the end,
//! past every short expiry, every expired value is gone from memory
//! (`ULIST.INFO`, `HCOUNTER.INFO`) and the schedules hold exactly the keys
//! with work left.
//!
//! Seeded by `FAULTS_SEED` (printed; set it to replay), `KEYSPACE_STEPS`
//! steps (3,000), of the kinds `KEYSPACE_KINDS` lists (comma-separated
//! names of `Run::random_step`'s table; all by default), to narrow a
//! failure down. Runs on the default server, and again with active defrag
//! on (moving values under the steps) on `RECIPES_DEFRAG_SERVER` when set
//! (`make test-faults` passes Redis 8.2.3, built with its jemalloc).

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

const DBS: i32 = 4;
/// Names per db the steps pick from (`k0`..): few, so steps meet.
const NAMES: usize = 10;
/// How long the module may take to find what it follows (a check waits).
const SETTLE: Duration = Duration::from_secs(30);
/// Plain keys added for a load to abort (3 ms each to load, then).
const FILLERS: usize = 200;
/// A due time within this of now may already be reclaimed, or not yet.
const MARGIN_MS: i64 = 300;

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
}

/// A server of the test; `replica`: one that loads diskless (swapdb).
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
        .config("maxmemory-policy", "allkeys-random");
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
        .unwrap_or(3_000);
    let c = &mut srv.conn();
    let port = srv.port.to_string();
    q_ok(&mut replica.conn(), &["REPLICAOF", "127.0.0.1", &port]);
    wait_for_sync(srv, replica);
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
    };
    // Steps by kind (the first word of what each did): how many, how long.
    let mut kinds: BTreeMap<String, (usize, Duration)> = BTreeMap::new();
    for step in 0..steps {
        run.step = step;
        let started = std::time::Instant::now();
        let what = run.random_step();
        let kind = what.split(' ').next().unwrap_or_default().to_string();
        run.log.pop();
        run.log.push(format!("{step}: {what}"));
        if run.log.len() > 40 {
            run.log.remove(0);
        }
        run.check();
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
    steps
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

    /// One random step of the kinds `KEYSPACE_KINDS` names (all by
    /// default); answers what it did.
    fn random_step(&mut self) -> String {
        type Step = fn(&mut Run<'_>) -> String;
        const STEPS: &[(u32, &str, Step)] = &[
            (180, "ulist", |r| r.write_ulist()),
            (120, "hcounter", |r| r.write_hcounter()),
            (100, "topn", |r| r.write_topn()),
            (30, "set", |r| r.set_plain()),
            (50, "delete", |r| r.delete()),
            (120, "rename", |r| r.rename()),
            (60, "move", |r| r.move_db()),
            (60, "copy", |r| r.copy()),
            (50, "restore", |r| r.restore()),
            (30, "expire", |r| r.expire()),
            (20, "swapdb", |r| r.swapdb()),
            (30, "script", |r| r.rename_in_script()),
            (40, "multi", |r| r.multi()),
            (15, "flush", |r| r.flush()),
            (10, "reload", |r| r.reload()),
            (10, "loadaof", |r| r.load_aof()),
            (10, "evict", |r| r.evict()),
            (20, "lazyfree", |r| r.lazyfree()),
            (8, "resync", |r| r.resync(false)),
            (6, "abort", |r| r.resync(true)),
            (31, "tick", |r| r.tick()),
        ];
        let kinds = std::env::var("KEYSPACE_KINDS").unwrap_or_default();
        let allowed = |name: &str| kinds.is_empty() || kinds.split(',').any(|k| k == name);
        let total: u32 = STEPS.iter().filter(|s| allowed(s.1)).map(|s| s.0).sum();
        assert!(total > 0, "KEYSPACE_KINDS={kinds} names no step kind");
        let mut roll = self.rng.gen_range(0..total);
        for &(weight, name, step) in STEPS.iter().filter(|s| allowed(s.1)) {
            if roll < weight {
                self.log.push(format!("{}: ({name})", self.step));
                return step(self);
            }
            roll -= weight;
        }
        unreachable!("the roll is below the total")
    }

    fn write_ulist(&mut self) -> String {
        let p = self.place();
        match self.m.keys.get(&p) {
            None => {
                self.select(p.0);
                q_ok(self.c, &["ULIST.CREATE", &p.1, "VALUE", "v"]);
                self.m.keys.insert(
                    p.clone(),
                    Val::Ulist {
                        late: 0,
                        soon: Vec::new(),
                        never: 0,
                    },
                );
            }
            Some(Val::Ulist { .. }) => {}
            Some(_) => return format!("ulist write skipped at {p:?}"),
        }
        // Sometimes many values at once: a list past its compact layout,
        // whose free is big enough for a lazy free.
        let n = if self.rng.gen_bool(0.1) { 80 } else { 1 };
        let kind = self.rng.gen_range(0..3);
        let (expire, secs): (&[&str], i64) = match kind {
            0 => (&["EXPIRE", "3600"], 3600),
            1 => {
                let s = self.rng.gen_range(1..=3);
                (
                    if s == 1 {
                        &["EXPIRE", "1"]
                    } else if s == 2 {
                        &["EXPIRE", "2"]
                    } else {
                        &["EXPIRE", "3"]
                    },
                    s,
                )
            }
            _ => (&["NEVER"], 0),
        };
        self.select(p.0);
        let before = now_ms();
        let mut pipe = redis::pipe();
        for _ in 0..n {
            let value = format!("x{}", self.serial());
            let mut args = vec!["ULIST.ADD", p.1.as_str()];
            args.extend_from_slice(expire);
            args.extend(["v", value.as_str()]);
            pipe.add_command(cmd(&args)).ignore();
        }
        let _: () = pipe.query(self.c).expect("ULIST.ADD");
        if let Some(Val::Ulist { late, soon, never }) = self.m.keys.get_mut(&p) {
            match kind {
                0 => *late += n,
                1 => soon.extend(std::iter::repeat_n(before + secs * 1000, n)),
                _ => *never += n,
            }
        }
        format!("ULIST.ADD {p:?} x{n} {expire:?}")
    }

    fn write_hcounter(&mut self) -> String {
        let p = self.place();
        match self.m.keys.get(&p) {
            None => {
                let short = self.rng.gen_bool(0.4);
                self.select(p.0);
                let ttl = if short { "2" } else { "3600" };
                q_ok(
                    self.c,
                    &["HCOUNTER.CREATE", &p.1, "PARTITION", "day", "TTL", ttl],
                );
                self.m.keys.insert(
                    p.clone(),
                    Val::Hcounter {
                        short,
                        partitions: BTreeSet::new(),
                        alive_until: 0,
                    },
                );
            }
            Some(Val::Hcounter { .. }) => {}
            Some(_) => return format!("hcounter write skipped at {p:?}"),
        }
        let day = format!("d{}", self.rng.gen_range(0..4));
        self.select(p.0);
        let before = now_ms();
        let _: i64 = q(self.c, &["HCOUNTER.INCR", &p.1, "day", &day]);
        if let Some(Val::Hcounter {
            short,
            partitions,
            alive_until,
        }) = self.m.keys.get_mut(&p)
        {
            let ttl_ms = if *short { 2_000 } else { 3_600_000 };
            partitions.insert(day.clone());
            *alive_until = (*alive_until).max(before + ttl_ms);
        }
        format!("HCOUNTER.INCR {p:?} {day}")
    }

    fn write_topn(&mut self) -> String {
        let p = self.place();
        match self.m.keys.get(&p) {
            None | Some(Val::Topn) => {}
            Some(_) => return format!("topn write skipped at {p:?}"),
        }
        let member = format!("m{}", self.serial() % 50);
        self.select(p.0);
        let _: i64 = q(self.c, &["TOPN.INCR", &p.1, &member]);
        self.m.keys.insert(p.clone(), Val::Topn);
        format!("TOPN.INCR {p:?} {member}")
    }

    fn set_plain(&mut self) -> String {
        let p = self.place();
        self.select(p.0);
        q_ok(self.c, &["SET", &p.1, "plain"]);
        self.m.keys.insert(p.clone(), Val::Plain);
        format!("SET {p:?}")
    }

    fn delete(&mut self) -> String {
        let p = self.occupied();
        let how = if self.rng.gen_bool(0.5) {
            "DEL"
        } else {
            "UNLINK"
        };
        self.select(p.0);
        let _: i64 = q(self.c, &[how, &p.1]);
        self.m.take(&p);
        format!("{how} {p:?}")
    }

    /// RENAME or RENAMENX, to a name that may hold a key (ours or not).
    fn rename(&mut self) -> String {
        let from = self.occupied();
        let to = (from.0, format!("k{}", self.rng.gen_range(0..NAMES)));
        let nx = self.rng.gen_bool(0.3);
        let how = if nx { "RENAMENX" } else { "RENAME" };
        self.select(from.0);
        let done = self.query(&[how, &from.1, &to.1]);
        self.renamed(&from, &to, nx, done.is_ok());
        format!("{how} {from:?} -> {to:?}: {done:?}")
    }

    /// The model after a RENAME (`nx`: RENAMENX) that answered `ok`.
    fn renamed(&mut self, from: &Place, to: &Place, nx: bool, ok: bool) {
        if !ok || from == to || !self.m.keys.contains_key(from) {
            return;
        }
        if nx && self.m.keys.contains_key(to) {
            return;
        }
        let v = self.m.take(from).expect("checked");
        self.m.keys.insert(to.clone(), v);
    }

    fn move_db(&mut self) -> String {
        let from = self.occupied();
        let db = (from.0 + self.rng.gen_range(1..DBS)) % DBS;
        self.select(from.0);
        let moved: i64 = q(self.c, &["MOVE", &from.1, &db.to_string()]);
        if moved == 1 {
            let v = self.m.take(&from).expect("moved a key the model has");
            self.m.keys.insert((db, from.1.clone()), v);
        }
        format!("MOVE {from:?} {db}: {moved}")
    }

    fn copy(&mut self) -> String {
        let from = self.occupied();
        let to = self.place();
        let replace = self.rng.gen_bool(0.5);
        let mut args = vec!["COPY", from.1.as_str(), to.1.as_str()];
        let db = to.0.to_string();
        args.extend(["DB", db.as_str()]);
        if replace {
            args.push("REPLACE");
        }
        self.select(from.0);
        // An error when `to` is `from`.
        let copied = self.query(&args);
        if matches!(copied, Ok(Value::Int(1))) {
            let v = self.m.keys[&from].clone();
            self.m.keys.insert(to.clone(), v);
        }
        format!("COPY {from:?} {to:?} replace {replace}: {copied:?}")
    }

    fn restore(&mut self) -> String {
        let from = self.occupied();
        let to = self.place();
        self.select(from.0);
        let payload: Option<Vec<u8>> = q(self.c, &["DUMP", &from.1]);
        let Some(payload) = payload else {
            return format!("DUMP {from:?}: none");
        };
        let replace = self.rng.gen_bool(0.6);
        self.select(to.0);
        let mut restore = redis::cmd("RESTORE");
        restore.arg(&to.1).arg(0).arg(&payload);
        if replace {
            restore.arg("REPLACE");
        }
        let done: Result<Value, _> = restore.query(self.c);
        if done.is_ok() {
            let v = self.m.keys[&from].clone();
            self.m.keys.insert(to.clone(), v);
        }
        format!(
            "RESTORE {from:?} -> {to:?} replace {replace}: {}",
            done.is_ok()
        )
    }

    /// A key expires: PEXPIRE 1, then a read deletes it (as the expiry
    /// cycle would).
    fn expire(&mut self) -> String {
        let p = self.occupied();
        self.select(p.0);
        let set: i64 = q(self.c, &["PEXPIRE", &p.1, "1"]);
        std::thread::sleep(Duration::from_millis(3));
        let _: i64 = q(self.c, &["EXISTS", &p.1]);
        if set == 1 {
            self.m.take(&p);
        }
        format!("expire {p:?}")
    }

    fn swapdb(&mut self) -> String {
        let (a, b) = (self.rng.gen_range(0..DBS), self.rng.gen_range(0..DBS));
        q_ok(self.c, &["SWAPDB", &a.to_string(), &b.to_string()]);
        let keys = std::mem::take(&mut self.m.keys);
        self.m.keys = keys
            .into_iter()
            .map(|((db, name), v)| {
                let db = if db == a {
                    b
                } else if db == b {
                    a
                } else {
                    db
                };
                ((db, name), v)
            })
            .collect();
        format!("SWAPDB {a} {b}")
    }

    fn rename_in_script(&mut self) -> String {
        let from = self.occupied();
        let to = (from.0, format!("k{}", self.rng.gen_range(0..NAMES)));
        self.select(from.0);
        let script = "return redis.call('RENAME', KEYS[1], KEYS[2])";
        let done = self.query(&["EVAL", script, "2", &from.1, &to.1]);
        self.renamed(&from, &to, false, done.is_ok());
        format!("EVAL RENAME {from:?} -> {to:?}: {done:?}")
    }

    /// Renames and moves in one MULTI, queued before any runs (each planned
    /// on the model so none fails); sometimes followed by more renames of
    /// other keys than the module remembers, which push them out.
    fn multi(&mut self) -> String {
        let db = self.rng.gen_range(0..DBS);
        self.select(db);
        let flood = self.rng.gen_bool(0.3);
        let mut planned = self.m.keys.clone();
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut done = Vec::new();
        for _ in 0..self.rng.gen_range(1..5) {
            let names: Vec<String> = (planned.keys())
                .filter(|(d, _)| *d == db)
                .map(|(_, n)| n.clone())
                .collect();
            if names.is_empty() {
                break;
            }
            let from = names[self.rng.gen_range(0..names.len())].clone();
            if self.rng.gen_bool(0.7) {
                let to = format!("k{}", self.rng.gen_range(0..NAMES));
                pipe.cmd("RENAME").arg(&from).arg(&to).ignore();
                let v = planned.remove(&(db, from.clone())).expect("listed");
                planned.insert((db, to.clone()), v);
                done.push(format!("RENAME {from} {to}"));
            } else {
                let target = (db + self.rng.gen_range(1..DBS)) % DBS;
                pipe.cmd("MOVE").arg(&from).arg(target).ignore();
                if !planned.contains_key(&(target, from.clone())) {
                    let v = planned.remove(&(db, from.clone())).expect("listed");
                    planned.insert((target, from.clone()), v);
                }
                done.push(format!("MOVE {from} {target}"));
            }
        }
        if flood {
            for i in 0..70 {
                pipe.cmd("SET").arg(format!("flood{i}")).arg("x").ignore();
                pipe.cmd("RENAME")
                    .arg(format!("flood{i}"))
                    .arg(format!("flooded{i}"))
                    .ignore();
                pipe.cmd("DEL").arg(format!("flooded{i}")).ignore();
            }
        }
        let _: () = pipe.query(self.c).expect("MULTI ... EXEC");
        self.m.keys = planned;
        format!("MULTI in db {db}: {done:?}, flood {flood}")
    }

    fn flush(&mut self) -> String {
        let mode = ["SYNC", "ASYNC"][self.rng.gen_range(0..2)];
        if self.rng.gen_bool(0.2) {
            q_ok(self.c, &["FLUSHALL", mode]);
            self.m.keys.clear();
            return format!("FLUSHALL {mode}");
        }
        let db = self.rng.gen_range(0..DBS);
        self.select(db);
        q_ok(self.c, &["FLUSHDB", mode]);
        self.m.keys.retain(|(d, _), _| *d != db);
        format!("FLUSHDB {db} {mode}")
    }

    fn reload(&mut self) -> String {
        q_ok(self.c, &["DEBUG", "RELOAD"]);
        "DEBUG RELOAD".into()
    }

    /// The AOF replayed: its renames pass no command filter.
    fn load_aof(&mut self) -> String {
        q_ok(self.c, &["DEBUG", "LOADAOF"]);
        "DEBUG LOADAOF".into()
    }

    /// Evicts some keys at random, then learns which went.
    fn evict(&mut self) -> String {
        let info: String = q(self.c, &["INFO", "memory"]);
        let used: i64 = info_field(&info, "used_memory")
            .and_then(|v| v.parse().ok())
            .expect("used_memory");
        q_ok(
            self.c,
            &["CONFIG", "SET", "maxmemory", &(used - 20_000).to_string()],
        );
        let _ = self.query(&["SET", "evict-trigger", "x"]);
        q_ok(self.c, &["CONFIG", "SET", "maxmemory", "0"]);
        let _ = self.query(&["DEL", "evict-trigger"]);
        let places: Vec<Place> = self.m.keys.keys().cloned().collect();
        let mut gone = 0;
        for p in places {
            self.select(p.0);
            if !exists(self.c, &p.1) {
                self.m.take(&p);
                gone += 1;
            }
        }
        format!("eviction: {gone} keys gone")
    }

    fn lazyfree(&mut self) -> String {
        let name = [
            "lazyfree-lazy-user-del",
            "lazyfree-lazy-server-del",
            "lazyfree-lazy-expire",
        ][self.rng.gen_range(0..3)];
        let on = ["no", "yes"][self.rng.gen_range(0..2)];
        q_ok(self.c, &["CONFIG", "SET", name, on]);
        format!("CONFIG SET {name} {on}")
    }

    /// The replica syncs in full again (a diskless swapdb load); `abort`:
    /// the first load is cut half-way (the master saves slowly, then drops
    /// the link), and the replica, detached, is checked before it loads again.
    fn resync(&mut self, abort: bool) -> String {
        let r = &mut self.replica.conn();
        let port = self.master.port.to_string();
        let mut aborted = false;
        // Slow loading that still serves clients, so the test sees it and
        // the master can drop the link half-way.
        let slow = [
            ("key-load-delay", "3000", "0"),
            ("loading-process-events-interval-bytes", "1024", "2097152"),
        ];
        if abort {
            for (name, value, _) in slow {
                q_ok(r, &["CONFIG", "SET", name, value]);
            }
            // Keys of no model, so the load takes a while whatever it holds.
            self.select(0);
            let mut fill = redis::pipe();
            for i in 0..FILLERS {
                fill.cmd("SET").arg(format!("filler{i}")).arg("x").ignore();
            }
            let _: () = fill.query(self.c).expect("fillers");
        }
        q_ok(r, &["REPLICAOF", "NO", "ONE"]);
        q_ok(r, &["REPLICAOF", "127.0.0.1", &port]);
        if abort {
            // Redis 7.0 shows `loading:1` for it, later servers `async_loading:1`.
            let loading = wait_until(Duration::from_secs(5), || {
                let p = self.replica.info("persistence");
                ["loading", "async_loading"]
                    .iter()
                    .any(|f| info_field(&p, f).as_deref() == Some("1"))
            });
            let _: i64 = q(self.c, &["CLIENT", "KILL", "TYPE", "replica"]);
            // Refused (LOADING) until the replica has dropped the load.
            let detached = wait_until(SETTLE, || {
                cmd(&["REPLICAOF", "NO", "ONE"]).query::<()>(r).is_ok()
            });
            assert!(
                detached,
                "the replica stays loading:\n{}",
                self.replica.log()
            );
            for (name, _, default) in slow {
                q_ok(r, &["CONFIG", "SET", name, default]);
            }
            self.select(0);
            let mut unfill = redis::pipe();
            for i in 0..FILLERS {
                unfill.cmd("DEL").arg(format!("filler{i}")).ignore();
            }
            let _: () = unfill.query(self.c).expect("fillers");
            aborted = loading;
            // The temporary db is freed in the background.
            std::thread::sleep(Duration::from_millis(300));
            self.check_replica(r);
            q_ok(r, &["REPLICAOF", "127.0.0.1", &port]);
        }
        wait_for_sync(self.master, self.replica);
        self.check_replica(r);
        match (abort, aborted) {
            (false, _) => "resync: the replica loaded in full".into(),
            (true, true) => "aborted-load: a load aborted, the replica checked, then loaded".into(),
            (true, false) => "unaborted-load: the load ended before it could be cut".into(),
        }
    }

    /// Every key that surely owes work is scheduled on the replica too.
    fn check_replica(&mut self, r: &mut Connection) {
        let got = settled_schedules(r);
        let entries = self.settled(got, "replica: ");
        let wrong = self.missing(&entries, "replica missing", now_ms());
        if !wrong.is_empty() {
            self.fail(&wrong);
        }
    }

    /// A server's schedule entries once it followed nothing in flight
    /// ([`settled_schedules`]'s answer), or the failure.
    fn settled(
        &self,
        got: Result<BTreeSet<(i32, String, String)>, i64>,
        whose: &str,
    ) -> BTreeSet<(i32, String, String)> {
        got.unwrap_or_else(|followed| {
            self.fail(&format!(
                "{whose}{followed} values still followed after {SETTLE:?}\n"
            ))
        })
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

    fn tick(&mut self) -> String {
        let ms = self.rng.gen_range(1..120);
        std::thread::sleep(Duration::from_millis(ms));
        format!("sleep {ms} ms")
    }

    /// Compares the master's schedules with the model (see the module doc).
    fn check(&mut self) {
        let got = settled_schedules(self.c);
        let entries = self.settled(got, "");
        let now = now_ms();
        let mut wrong = self.missing(&entries, "missing", now);
        for (db, kind, name) in &entries {
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
        panic!(
            "keyspace model, seed {} (FAULTS_SEED={} replays it), after step {}:\n{what}\
             last steps:\n{}",
            self.seed,
            self.seed,
            self.step,
            self.log.join("\n")
        );
    }

    /// Past every short expiry: every expired value is gone from memory,
    /// and the schedules hold exactly the keys with work left.
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
        self.check();
        wait_for_sync(self.master, self.replica);
        self.check_replica(&mut self.replica.conn());
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

/// A server's schedule entries as (db, kind, name) (the test-only view),
/// once it follows no value in flight; how many it still follows after
/// [`SETTLE`] otherwise.
fn settled_schedules(c: &mut Connection) -> Result<BTreeSet<(i32, String, String)>, i64> {
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let reply: Vec<String> = q(c, &["CONFIG", "GET", "recipes.test-schedules"]);
        let text = reply.get(1).cloned().unwrap_or_default();
        let mut entries = BTreeSet::new();
        let mut followed = -1;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("followed ") {
                followed = n.parse().expect("followed count");
                continue;
            }
            let mut parts = line.splitn(3, ' ');
            if let (Some(db), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next()) {
                entries.insert((db.parse().expect("db"), kind.into(), name.into()));
            }
        }
        if followed == 0 {
            return Ok(entries);
        }
        if std::time::Instant::now() > deadline {
            return Err(followed);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
