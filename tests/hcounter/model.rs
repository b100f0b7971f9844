//! The model test: random operations checked against a model on a master,
//! its replica, and after AOF rewrites, restarts and reloads.
use super::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// Values of the model test's names: small pools so that tuples collide,
/// with ':', NUL and 0xFF bytes.
const MONTHS: [&[u8]; 2] = [b"m:1", b"m\x00"];
const DAYS: [&[u8]; 3] = [b"d", b"d:\x00", b"\xffd"];
const COMPANIES: [&[u8]; 3] = [b"c", b"c:", b"\x00"];
const USERS: [&[u8]; 6] = [b"u0", b"u1", b"u:2", b"u3", b"\xff", b"u\x005"];

type Bytes = Vec<u8>;

/// What the model test's counter `m` must hold:
/// `PARTITION month day GROUP company TTL 3600 UNIQUE company user SCOPE month`.
/// Only partitions that stay live for the whole test are kept: a write that
/// lands already expired is waited for until it is reclaimed, so the server
/// holds no expired partition when the next step runs.
#[derive(Default)]
struct Model {
    /// (month, day) -> company -> count.
    parts: BTreeMap<(Bytes, Bytes), BTreeMap<Bytes, i64>>,
    /// Unique tuples: (month, company, user) -> the partition (month, day)
    /// they were counted in.
    seen: BTreeMap<(Bytes, Bytes, Bytes), (Bytes, Bytes)>,
}

impl Model {
    fn get(&self, month: &[u8], day: &[u8], company: &[u8]) -> i64 {
        self.parts
            .get(&(month.to_vec(), day.to_vec()))
            .and_then(|cells| cells.get(company))
            .copied()
            .unwrap_or(0)
    }

    fn matches(key: &(Bytes, Bytes), month: Option<&[u8]>, day: Option<&[u8]>) -> bool {
        month.is_none_or(|m| m == key.0) && day.is_none_or(|d| d == key.1)
    }

    fn data(&self, month: Option<&[u8]>, day: Option<&[u8]>) -> Vec<Row> {
        let mut out = Vec::new();
        for (key, cells) in &self.parts {
            if !Self::matches(key, month, day) {
                continue;
            }
            for (company, n) in cells {
                out.push(vec![
                    (b"month".to_vec(), V::B(key.0.clone())),
                    (b"day".to_vec(), V::B(key.1.clone())),
                    (b"company".to_vec(), V::B(company.clone())),
                    (b"value".to_vec(), V::I(*n)),
                ]);
            }
        }
        out
    }

    fn partitions(&self, month: Option<&[u8]>, day: Option<&[u8]>) -> Vec<Row> {
        self.parts
            .keys()
            .filter(|key| Self::matches(key, month, day))
            .map(|key| {
                vec![
                    (b"month".to_vec(), V::B(key.0.clone())),
                    (b"day".to_vec(), V::B(key.1.clone())),
                ]
            })
            .collect()
    }

    /// Deletes the matching partitions and the tuples counted in them;
    /// returns how many partitions it deleted.
    fn delete(&mut self, month: Option<&[u8]>, day: Option<&[u8]>) -> i64 {
        let before = self.parts.len();
        self.parts.retain(|key, _| !Self::matches(key, month, day));
        self.seen.retain(|_, key| !Self::matches(key, month, day));
        (before - self.parts.len()) as i64
    }
}

fn filter_args<'a>(month: Option<&'a [u8]>, day: Option<&'a [u8]>) -> Vec<&'a [u8]> {
    let mut a: Vec<&[u8]> = Vec::new();
    if let Some(m) = month {
        a.extend([b"month".as_slice(), m]);
    }
    if let Some(d) = day {
        a.extend([b"day".as_slice(), d]);
    }
    a
}

/// The model test's run: the counter, the model, the rng, and how many
/// partitions the server must have reclaimed so far.
struct ModelRun {
    model: Model,
    rng: StdRng,
    seed: u64,
    /// Unix ms at the start: "recent" writes land in the 10 minutes before
    /// it (live for 50 minutes at least), "old" ones 4 hours before (expired
    /// on arrival).
    base: i64,
    reclaimed: i64,
    steps: usize,
}

impl ModelRun {
    fn pick<'a>(&mut self, pool: &[&'a [u8]]) -> &'a [u8] {
        pool[self.rng.gen_range(0..pool.len())]
    }

    fn filter(&mut self) -> (Option<&'static [u8]>, Option<&'static [u8]>) {
        let month = self.rng.gen_bool(0.5).then(|| self.pick(&MONTHS));
        let day = self.rng.gen_bool(0.5).then(|| self.pick(&DAYS));
        (month, day)
    }

    fn step(&mut self, c: &mut Conn) {
        let step = self.steps;
        self.steps += 1;
        let ctx = format!("step {step} (seed {})", self.seed);
        let month = self.pick(&MONTHS);
        let day = self.pick(&DAYS);
        let company = self.pick(&COMPANIES);
        let user = self.pick(&USERS);
        match self.rng.gen_range(0..30) {
            0..=16 => {
                let incr = self.rng.gen_bool(0.4);
                let by = if incr {
                    1
                } else {
                    *[-3, -1, 1, 2, 5, 1000].choose(&mut self.rng).unwrap()
                };
                let by_s = by.to_string();
                let (at, old) = match self.rng.gen_range(0..10) {
                    0..=3 => (None, false),
                    4..=8 => (Some(self.base - self.rng.gen_range(0..600_000)), false),
                    _ => (
                        Some(self.base - 4 * HOUR_MS - self.rng.gen_range(0..600_000)),
                        true,
                    ),
                };
                let at_s = at.map(|a| a.to_string());
                let mut pairs: Vec<[&[u8]; 2]> = vec![
                    [b"month", month],
                    [b"day", day],
                    [b"company", company],
                    [b"user", user],
                ];
                if let Some(at) = &at_s {
                    pairs.push([b"AT", at.as_bytes()]);
                }
                pairs.shuffle(&mut self.rng);
                let mut args: Vec<&[u8]> = if incr {
                    vec![b"HCOUNTER.INCR", b"m"]
                } else {
                    vec![b"HCOUNTER.INCRBY", b"m", by_s.as_bytes()]
                };
                args.extend(pairs.iter().flatten());
                let got: i64 = q_bin(c, &args);
                let part = (month.to_vec(), day.to_vec());
                let tuple = (month.to_vec(), company.to_vec(), user.to_vec());
                let live = self.model.parts.contains_key(&part);
                let counts = !self.model.seen.contains_key(&tuple);
                let want = match (counts, live) {
                    (false, _) => self.model.get(month, day, company),
                    (true, true) => self.model.get(month, day, company) + by,
                    (true, false) => by,
                };
                assert_eq!(got, want, "{ctx}: {}", cmd_text_bin(&args));
                if counts && old && !live {
                    // A new partition, expired on arrival: it goes, with the tuple.
                    self.reclaimed += 1;
                    wait_reclaimed(c, self.reclaimed, &ctx);
                } else if counts {
                    *self
                        .model
                        .parts
                        .entry(part.clone())
                        .or_default()
                        .entry(company.to_vec())
                        .or_insert(0) += by;
                    self.model.seen.insert(tuple, part);
                }
            }
            17 => {
                let (fm, fd) = self.filter();
                let mut args: Vec<&[u8]> = vec![b"HCOUNTER.DEL", b"m"];
                args.extend(filter_args(fm, fd));
                let got: i64 = q_bin(c, &args);
                let want = self.model.delete(fm, fd);
                assert_eq!(got, want, "{ctx}: {}", cmd_text_bin(&args));
            }
            18..=21 => {
                let mut args: Vec<&[u8]> = vec![b"HCOUNTER.GET", b"m"];
                let mut pairs: Vec<[&[u8]; 2]> =
                    vec![[b"month", month], [b"day", day], [b"company", company]];
                pairs.shuffle(&mut self.rng);
                args.extend(pairs.iter().flatten());
                let got: i64 = q_bin(c, &args);
                assert_eq!(
                    got,
                    self.model.get(month, day, company),
                    "{ctx}: {}",
                    cmd_text_bin(&args)
                );
            }
            _ => {
                let (fm, fd) = self.filter();
                check_reads(c, &self.model, fm, fd, &ctx);
            }
        }
    }

    /// Every read against the model: all rows, each filter, every cell.
    fn check_all(&self, c: &mut Conn, when: &str) {
        let when = format!("{when} (seed {})", self.seed);
        check_reads(c, &self.model, None, None, &when);
        for m in MONTHS {
            check_reads(c, &self.model, Some(m), None, &when);
            for d in DAYS {
                check_reads(c, &self.model, Some(m), Some(d), &when);
                for co in COMPANIES {
                    let got: i64 = q_bin(
                        c,
                        &[
                            b"HCOUNTER.GET",
                            b"m",
                            b"company",
                            co,
                            b"day",
                            d,
                            b"month",
                            m,
                        ],
                    );
                    assert_eq!(
                        got,
                        self.model.get(m, d, co),
                        "{when}: GET {m:?} {d:?} {co:?}"
                    );
                }
            }
        }
        for d in DAYS {
            check_reads(c, &self.model, None, Some(d), &when);
        }
    }

    /// Every tuple the model remembers is still seen: an INCR of it counts
    /// nothing and replies the cell's count.
    fn check_seen(&self, c: &mut Conn, when: &str) {
        let at = (self.base - 60_000).to_string();
        for ((month, company, user), _) in self.model.seen.iter() {
            for day in DAYS {
                let got: i64 = q_bin(
                    c,
                    &[
                        b"HCOUNTER.INCR",
                        b"m",
                        b"AT",
                        at.as_bytes(),
                        b"month",
                        month,
                        b"day",
                        day,
                        b"company",
                        company,
                        b"user",
                        user,
                    ],
                );
                assert_eq!(
                    got,
                    self.model.get(month, day, company),
                    "{when} (seed {}): ({month:?}, {company:?}, {user:?}) into {day:?}",
                    self.seed
                );
            }
        }
    }
}

/// A command of binary arguments as text, for messages.
fn cmd_text_bin(args: &[&[u8]]) -> String {
    args.iter()
        .map(|a| a.escape_ascii().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_reads(c: &mut Conn, model: &Model, month: Option<&[u8]>, day: Option<&[u8]>, when: &str) {
    let mut args: Vec<&[u8]> = vec![b"HCOUNTER.DATA", b"m"];
    args.extend(filter_args(month, day));
    assert_eq!(
        rows_bin(c, &args),
        model.data(month, day),
        "{when}: {}",
        cmd_text_bin(&args)
    );
    args[0] = b"HCOUNTER.PARTITIONS";
    assert_eq!(
        rows_bin(c, &args),
        model.partitions(month, day),
        "{when}: {}",
        cmd_text_bin(&args)
    );
}

/// ~1,500 random INCR/INCRBY (with AT now, recent, or expired on arrival),
/// DEL with filters, GET, DATA and PARTITIONS on a unique counter whose
/// SCOPE name is also a PARTITION name and whose UNIQUE names include its
/// GROUP name, against the model; then the same answers (and the same
/// unique tuples) from a replica, after a BGREWRITEAOF as commands +
/// restart, after one with an RDB preamble + restart and after DEBUG
/// RELOAD, with more random steps after each.
#[test]
fn model_based_random_operations() {
    let seed = seed_from_env("HCOUNTER_SEED", 0);
    let mut master = aof_master();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "m",
            "PARTITION",
            "month",
            "day",
            "GROUP",
            "company",
            "TTL",
            "3600",
            "UNIQUE",
            "company",
            "user",
            "SCOPE",
            "month",
        ],
    );
    let mut run = ModelRun {
        model: Model::default(),
        rng: StdRng::seed_from_u64(seed),
        seed,
        base: now_ms(),
        reclaimed: 0,
        steps: 0,
    };
    for _ in 0..1500 {
        run.step(c);
    }
    assert!(run.reclaimed > 0, "seed {seed}: no write landed expired");
    run.check_all(c, "end");
    run.check_seen(c, "end");
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    run.check_all(r, "replica");
    // The replica's unique tuples: after its promotion, at the end.
    // A rewrite as commands: CREATE, then SEEN per tuple and SET per cell.
    rewrite_aof(&master, false);
    let aof = aof_base(&master);
    let cells: usize = run.model.parts.values().map(|cells| cells.len()).sum();
    assert_eq!(aof_count(&aof, "HCOUNTER.CREATE"), 1);
    assert_eq!(aof_count(&aof, "HCOUNTER.SET"), cells, "seed {seed}");
    assert_eq!(
        aof_count(&aof, "HCOUNTER.SEEN"),
        run.model.seen.len(),
        "seed {seed}"
    );
    for _ in 0..100 {
        run.step(c);
    }
    master.restart();
    let c = &mut master.conn();
    run.reclaimed = recipes_info(c, "hcounter_expired_partitions");
    run.check_all(c, "after AOF rewrite and restart");
    run.check_seen(c, "after AOF rewrite and restart");
    for _ in 0..100 {
        run.step(c);
    }
    // A rewrite with an RDB preamble: the RDB encoding, loaded at restart.
    rewrite_aof(&master, true);
    for _ in 0..100 {
        run.step(c);
    }
    master.restart();
    let c = &mut master.conn();
    run.reclaimed = recipes_info(c, "hcounter_expired_partitions");
    run.check_all(c, "after RDB-preamble rewrite and restart");
    run.check_seen(c, "after RDB-preamble rewrite and restart");
    for _ in 0..100 {
        run.step(c);
    }
    q_ok(c, &["DEBUG", "RELOAD"]);
    run.check_all(c, "after DEBUG RELOAD");
    run.check_seen(c, "after DEBUG RELOAD");
    for _ in 0..100 {
        run.step(c);
    }
    run.check_all(c, "after more steps");
    // The replica followed the restarted master too (it reconnects); once
    // promoted it holds the same counts and unique tuples.
    wait_for_sync(&master, &replica);
    drop(master);
    q_ok(r, &["REPLICAOF", "NO", "ONE"]);
    run.check_all(r, "promoted replica");
    run.check_seen(r, "promoted replica");
}
