//! The model test: random operations checked against a model on a master,
//! its replica, and after AOF rewrites, restarts and an RDB restart.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What the server should hold: scope -> value -> (partition, expire_at).
#[derive(Default)]
struct Model {
    scopes: BTreeMap<String, BTreeMap<String, (String, i64)>>,
}

const NEVER: i64 = i64::MAX;

impl Model {
    /// The value's expiry if it is live at `at`.
    fn live_at(&self, s: &str, v: &str, at: i64) -> Option<i64> {
        self.scopes
            .get(s)
            .and_then(|vs| vs.get(v))
            .map(|e| e.1)
            .filter(|&exp| exp > at)
    }

    fn rows(&self, s: Option<&str>, p: Option<&str>, now: i64) -> Vec<[String; 3]> {
        let mut out = Vec::new();
        for (scope, values) in &self.scopes {
            for (v, (part, exp)) in values {
                if *exp > now && s.is_none_or(|s| s == scope) && p.is_none_or(|p| p == part) {
                    out.push([v.clone(), scope.clone(), part.clone()]);
                }
            }
        }
        out
    }
}

fn filter_args<'a>(s: Option<&'a str>, p: Option<&'a str>) -> Vec<&'a str> {
    let mut a = Vec::new();
    if let Some(s) = s {
        a.extend(["s", s]);
    }
    if let Some(p) = p {
        a.extend(["p", p]);
    }
    a
}

/// Random adds (times and expiries drawn around two hours ago, so each value
/// is either long expired or live for days at the reads), deletes with
/// filters and reads, against the model, while `recipes.ulist-compact-max`
/// changes (the list crosses between its compact and hashed layouts both
/// ways) and DEBUG RELOADs load it anew; then the same answers from a replica
/// that keeps lists compact up to another size, with the same DUMP, after
/// BGREWRITEAOF + restart and after an RDB restart.
#[test]
fn model_based_random_operations() {
    let seed = seed_from_env("ULIST_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut master = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let replica = Server::builder()
        .config("recipes.ulist-compact-max", "10")
        .start();
    q_ok(
        &mut replica.conn(),
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    let c = &mut master.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "m",
            "VALUE",
            "v",
            "SCOPE",
            "s",
            "PARTITION",
            "p",
        ],
    );
    let mut model = Model::default();
    let base = now_ms() - 2 * 3_600_000;
    for step in 0..1500 {
        let s = format!("s{}", rng.gen_range(0..3));
        let p = format!("p:{}", rng.gen_range(0..4));
        // Numbers are packed as varints in the compact layout.
        let v = if rng.gen_bool(0.5) {
            format!("v\x00{}", rng.gen_range(0..40))
        } else {
            rng.gen_range(0..40).to_string()
        };
        match rng.gen_range(0..12) {
            10 => {
                let size = ["0", "4", "16", "128"][rng.gen_range(0..4)];
                q_ok(c, &["CONFIG", "SET", "recipes.ulist-compact-max", size]);
            }
            11 => q_ok(c, &["DEBUG", "RELOAD"]),
            0..=5 => {
                let at = base + rng.gen_range(0..3_600_000);
                let (expiry, exp): (Vec<String>, i64) = match rng.gen_range(0..3) {
                    0 => (vec!["NEVER".into()], NEVER),
                    1 => {
                        let secs = rng.gen_range(1..1800);
                        (vec!["EXPIRE".into(), secs.to_string()], at + secs * 1000)
                    }
                    _ => (vec!["EXPIRE".into(), "864000".into()], at + 864_000_000),
                };
                let at_s = at.to_string();
                let mut args = vec!["ULIST.ADD", "m", "v", &v, "p", &p, "s", &s, "AT", &at_s];
                args.extend(expiry.iter().map(String::as_str));
                let got: i64 = q(c, &args);
                let live = model.live_at(&s, &v, at);
                // A value live at `at` but expired by now may already be
                // reclaimed: then the server rightly finds it new.
                let ambiguous = live.is_some_and(|e| e <= now_ms());
                if !ambiguous {
                    assert_eq!(
                        got,
                        live.is_none() as i64,
                        "step {step} (seed {seed}): {args:?}"
                    );
                }
                if got == 1 {
                    model.scopes.entry(s).or_default().insert(v, (p, exp));
                }
            }
            6 => {
                let fs = rng.gen_bool(0.5).then_some(s.as_str());
                let fp = rng.gen_bool(0.5).then_some(p.as_str());
                let mut args = vec!["ULIST.DEL", "m"];
                args.extend(filter_args(fs, fp));
                let now = now_ms();
                let live: BTreeSet<(String, String)> = model
                    .rows(fs, fp, now)
                    .into_iter()
                    .map(|[_, s, p]| (s, p))
                    .collect();
                let got: i64 = q(c, &args);
                assert_eq!(
                    got,
                    live.len() as i64,
                    "step {step} (seed {seed}): {args:?}"
                );
                for (scope, values) in model.scopes.iter_mut() {
                    if fs.is_none_or(|f| f == scope) {
                        values.retain(|_, (part, _)| fp.is_some_and(|f| f != part));
                    }
                }
            }
            _ => {
                let fs = rng.gen_bool(0.5).then_some(s.as_str());
                let fp = rng.gen_bool(0.5).then_some(p.as_str());
                check_reads(c, &model, fs, fp, &format!("step {step} (seed {seed})"));
                // HAS takes an ADD's arguments; the partition does not matter.
                let mut has_args = vec!["ULIST.HAS", "m", "s", &s, "v", &v];
                if rng.gen_bool(0.5) {
                    has_args.extend(["p", &p]);
                }
                let has: i64 = q(c, &has_args);
                assert_eq!(has, model.live_at(&s, &v, now_ms()).is_some() as i64);
            }
        }
    }
    let check_all = |c: &mut Conn, when: &str| {
        check_reads(c, &model, None, None, when);
        for s in ["s0", "s1", "s2"] {
            check_reads(c, &model, Some(s), None, when);
        }
    };
    check_all(c, "end");
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    check_all(r, "replica");
    // Same bytes whatever the layouts, once the master reclaimed what
    // expired (its reclaim replicates).
    let same = wait_until(Duration::from_secs(10), || {
        wait_for_sync(&master, &replica);
        q::<Vec<u8>>(c, &["DUMP", "m"]) == q::<Vec<u8>>(r, &["DUMP", "m"])
    });
    assert!(same, "master and replica DUMPs differ");
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    master.restart();
    check_all(&mut master.conn(), "after AOF rewrite and restart");
    master.restart_with_save();
    check_all(&mut master.conn(), "after RDB restart");
}

fn check_reads(c: &mut Conn, model: &Model, fs: Option<&str>, fp: Option<&str>, when: &str) {
    let mut args = vec!["ULIST.DATA", "m"];
    args.extend(filter_args(fs, fp));
    let got: Vec<[String; 3]> = rows(c, &args)
        .into_iter()
        .map(|r| {
            let f = |i: usize| String::from_utf8(r[i].1.clone()).unwrap();
            [f(0), f(1), f(2)]
        })
        .collect();
    let mut want = model.rows(fs, fp, now_ms());
    // Rows come by scope, then value.
    want.sort_by(|a, b| (&a[1], &a[0]).cmp(&(&b[1], &b[0])));
    assert_eq!(got, want, "{when}: {args:?}");
    args[0] = "ULIST.COUNT";
    assert_eq!(q::<i64>(c, &args), want.len() as i64, "{when}: {args:?}");
    args[0] = "ULIST.PARTITIONS";
    let parts: Vec<(String, String)> = rows(c, &args)
        .into_iter()
        .map(|r| {
            let f = |i: usize| String::from_utf8(r[i].1.clone()).unwrap();
            (f(0), f(1))
        })
        .collect();
    let want: BTreeSet<(String, String)> = want.into_iter().map(|[_, s, p]| (s, p)).collect();
    assert_eq!(
        parts,
        want.into_iter().collect::<Vec<_>>(),
        "{when}: {args:?}"
    );
}
