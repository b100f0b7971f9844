//! FLOAT counters: the shortest exact decimal, and exact sums on a replica
//! and after AOF and RDB reloads.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// FLOAT counts: INCR adds 1, INCRBY takes a finite float; replies, GET and
/// DATA are bulk strings, the shortest decimal that reads back as the same
/// double, never with an exponent.
#[test]
fn float_formatting() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["HCOUNTER.CREATE", "f", "GROUP", "g", "FLOAT"]);
    let by =
        |c: &mut Conn, inc: &str, g: &str| float_reply(c, &["HCOUNTER.INCRBY", "f", inc, "g", g]);
    // The contract's examples.
    assert_eq!(by(c, "10.5", "a"), "10.5");
    assert_eq!(by(c, "0.1", "a"), "10.6");
    assert_eq!(by(c, "5.0e3", "b"), "5000");
    assert_eq!(by(c, "2.0e2", "b"), "5200");
    assert_eq!(by(c, "0.1", "c"), "0.1");
    assert_eq!(by(c, "0.2", "c"), "0.30000000000000004");
    // Negative, INCR, integral values, no exponent either way.
    assert_eq!(by(c, "-1.5", "d"), "-1.5");
    assert_eq!(float_reply(c, &["HCOUNTER.INCR", "f", "g", "d"]), "-0.5");
    assert_eq!(float_reply(c, &["HCOUNTER.INCR", "f", "g", "e"]), "1");
    assert_eq!(by(c, "1e-7", "tiny"), "0.0000001");
    assert_eq!(by(c, "1E21", "huge"), "1000000000000000000000");
    assert_eq!(by(c, "3", "int"), "3");
    assert_eq!(by(c, "0", "zero"), "0");
    assert_eq!(by(c, "0.5", "z"), "0.5");
    assert_eq!(by(c, "-0.5", "z"), "0");
    assert_eq!(by(c, "1e308", "max"), format!("{}", 1e308_f64));
    assert_eq!(
        expect_err(c, &cmd(&["HCOUNTER.INCRBY", "f", "1e308", "g", "max"])),
        "ERR increment would produce NaN or Infinity"
    );
    assert_eq!(
        float_reply(c, &["HCOUNTER.GET", "f", "g", "max"]),
        format!("{}", 1e308_f64)
    );
    assert_eq!(float_reply(c, &["HCOUNTER.GET", "f", "g", "a"]), "10.6");
    assert_eq!(float_reply(c, &["HCOUNTER.GET", "f", "g", "none"]), "0");
    // A FLOAT unique counter: a repeat replies the cell's count, "0" when
    // the cell does not exist.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "fu",
            "GROUP",
            "g",
            "FLOAT",
            "UNIQUE",
            "u",
        ],
    );
    let by_u = |c: &mut Conn, inc: &str, g: &str, u: &str| {
        float_reply(c, &["HCOUNTER.INCRBY", "fu", inc, "g", g, "u", u])
    };
    assert_eq!(by_u(c, "1.5", "a", "1"), "1.5");
    assert_eq!(by_u(c, "1.5", "a", "1"), "1.5");
    assert_eq!(by_u(c, "1.5", "b", "1"), "0");
    assert_eq!(
        float_reply(c, &["HCOUNTER.INCR", "fu", "g", "a", "u", "2"]),
        "2.5"
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "fu"]),
        vec![frow(&[("g", "a")], "2.5")]
    );
    let max = format!("{}", 1e308_f64);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "f"]),
        vec![
            frow(&[("g", "a")], "10.6"),
            frow(&[("g", "b")], "5200"),
            frow(&[("g", "c")], "0.30000000000000004"),
            frow(&[("g", "d")], "-0.5"),
            frow(&[("g", "e")], "1"),
            frow(&[("g", "huge")], "1000000000000000000000"),
            frow(&[("g", "int")], "3"),
            frow(&[("g", "max")], &max),
            frow(&[("g", "tiny")], "0.0000001"),
            frow(&[("g", "z")], "0"),
            frow(&[("g", "zero")], "0"),
        ]
    );
}

/// The FLOAT counter's DATA, as exact strings.
fn float_cells(c: &mut Conn, key: &str) -> Vec<(String, String, String)> {
    rows(c, &["HCOUNTER.DATA", key])
        .into_iter()
        .map(|r| {
            let text = |i: usize| match &r[i].1 {
                V::B(b) => String::from_utf8(b.clone()).unwrap(),
                V::I(n) => panic!("a FLOAT count is a bulk string, got {n} in {r:?}"),
            };
            (text(0), text(1), text(2))
        })
        .collect()
}

/// 2,000 random fractional increments, each reply the exact sum so far;
/// then the same strings from a real replica, after BGREWRITEAOF + restart
/// and after an RDB restart. The TTL counter is written without AT.
#[test]
fn float_sums_are_exact_on_replica_aof_and_rdb() {
    let seed = seed_from_env("HCOUNTER_FLOAT_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut master = aof_master();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    for (key, ttl) in [("f", None), ("ft", Some("86400"))] {
        let mut args = vec![
            "HCOUNTER.CREATE",
            key,
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "FLOAT",
        ];
        if let Some(ttl) = ttl {
            args.extend(["TTL", ttl]);
        }
        q_ok(c, &args);
    }
    let mut model = FloatModel {
        sums: BTreeMap::new(),
        base: now_ms(),
        seed,
    };
    for i in 0..2000 {
        model.step(c, &mut rng, i);
    }
    model.check(c, "master");
    wait_for_sync(&master, &replica);
    model.check(&mut replica.conn(), "replica");
    assert!(
        replica.recipes_info("hcounter_set_calls") > 0,
        "FLOAT increments replicate as HCOUNTER.SET"
    );
    // A rewrite as commands (HCOUNTER.SET per cell), then more increments
    // in the AOF after it.
    rewrite_aof(&master, false);
    assert_eq!(aof_count(&aof_base(&master), "HCOUNTER.SET"), 12);
    for i in 2000..2200 {
        model.step(c, &mut rng, i);
    }
    master.restart();
    model.check(&mut master.conn(), "after AOF rewrite and restart");
    // A rewrite with an RDB preamble: the RDB encoding, loaded at restart.
    let c = &mut master.conn();
    rewrite_aof(&master, true);
    for i in 2200..2300 {
        model.step(c, &mut rng, i);
    }
    master.restart();
    model.check(&mut master.conn(), "after RDB-preamble rewrite and restart");
    // SAVE and a restart that loads the RDB (the AOF is on).
    master.restart_with_save();
    model.check(&mut master.conn(), "after an RDB restart");
}

/// The exact sums the FLOAT counters `f` (written with AT) and `ft` (TTL,
/// written without AT) must hold: (key, day, page) -> sum.
struct FloatModel {
    sums: BTreeMap<(&'static str, String, String), f64>,
    base: i64,
    seed: u64,
}

impl FloatModel {
    const INCS: [&'static str; 12] = [
        "0.1", "1e-3", "12.345", "-0.7", "2.5e-2", "1e-9", "7", "-3.25", "0.3", "5.0e3", "-1.5",
        "1",
    ];

    fn step(&mut self, c: &mut Conn, rng: &mut StdRng, i: usize) {
        let key = if rng.gen_bool(0.5) { "f" } else { "ft" };
        let day = format!("d:{}", rng.gen_range(0..2));
        let page = format!("/p\x00{}", rng.gen_range(0..3));
        let inc = Self::INCS[rng.gen_range(0..Self::INCS.len())];
        let at = (self.base - rng.gen_range(0..HOUR_MS)).to_string();
        let mut args = if inc == "1" && rng.gen_bool(0.5) {
            vec!["HCOUNTER.INCR", key]
        } else {
            vec!["HCOUNTER.INCRBY", key, inc]
        };
        if key == "f" {
            args.extend(["AT", &at]);
        }
        args.extend(["day", &day, "page", &page]);
        let sum = self
            .sums
            .entry((key, day.clone(), page.clone()))
            .or_insert(0.0);
        *sum += inc.parse::<f64>().unwrap();
        let got = float_reply(c, &args);
        assert_eq!(
            got,
            format!("{sum}"),
            "step {i} (seed {}): {args:?}",
            self.seed
        );
    }

    fn check(&self, c: &mut Conn, when: &str) {
        for key in ["f", "ft"] {
            let want: Vec<(String, String, String)> = self
                .sums
                .iter()
                .filter(|((k, _, _), _)| *k == key)
                .map(|((_, d, p), v)| (d.clone(), p.clone(), format!("{v}")))
                .collect();
            assert_eq!(want.len(), 6, "every cell was written");
            assert_eq!(float_cells(c, key), want, "{when} (seed {})", self.seed);
            for (d, p, v) in &want {
                assert_eq!(
                    &float_reply(c, &["HCOUNTER.GET", key, "page", p, "day", d]),
                    v,
                    "{when} (seed {})",
                    self.seed
                );
            }
        }
    }
}
