//! `maxmemory`. With `noeviction` and the server over its limit, every
//! command flagged `deny-oom` answers the OOM error and changes nothing,
//! while reads, deletes and background reclaim go on. With `allkeys-lru`,
//! module keys of every family are evicted, also keys with background work
//! due, and those timers are harmless when they come due: the keys that stay
//! are reclaimed as usual.

use super::*;
use common::families::{assert_same_state, module_commands, run_steps, run_workloads, state};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Duration;

/// The flags of every command the module registers, by upper-case name.
fn command_flags(c: &mut Connection, srv: &Server) -> BTreeMap<String, Vec<String>> {
    module_commands(srv)
        .into_iter()
        .map(|(name, _, _)| {
            let info: Vec<Value> = q(c, &["COMMAND", "INFO", &name]);
            let Some(Value::Array(fields)) = info.first() else {
                panic!("COMMAND INFO {name}: {info:?}")
            };
            let flags: Vec<String> = redis::from_redis_value(&fields[2]).unwrap();
            (name, flags)
        })
        .collect()
}

/// `name key 1 1 ...`, as many arguments as its arity asks for.
fn call_with(name: &str, key: &str, arity: i64) -> redis::Cmd {
    let mut args = vec![name, key];
    while (args.len() as i64) < arity.abs() {
        args.push("1");
    }
    cmd(&args)
}

fn used_memory(srv: &Server) -> i64 {
    info_field(&srv.info("memory"), "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("used_memory")
}

#[test]
fn noeviction_refuses_every_write_and_keeps_reads_and_deletes() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("FAULTS_SEED", 3));
    let base = now_ms();
    run_workloads(c, base, &mut rng);
    // Items that expire while the server is over its limit.
    let due = now_ms() + 1_000;
    let mut reclaiming = Vec::new();
    for fam in FAMILIES {
        if let Some(reclaim) = &fam.reclaim {
            let (key, twin) = (
                format!("reclaim:{}", fam.name),
                format!("reclaim:{}:empty", fam.name),
            );
            run_all(c, &(reclaim.create)(&twin));
            run_all(c, &expiring_items(reclaim, &key, 100, &[due]));
            reclaiming.push((key, dump(c, &twin).unwrap()));
        }
    }
    let flags = command_flags(c, &srv);
    let arity: BTreeMap<String, i64> = module_commands(&srv)
        .into_iter()
        .map(|(name, arity, _)| (name, arity))
        .collect();
    let before = state(c, base);

    q_ok(c, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    q_ok(c, &["CONFIG", "SET", "maxmemory", "1"]);
    let oom = |e: &str| e.starts_with("OOM");
    let mut refused = 0;
    for (name, flags) in &flags {
        if !flags.iter().any(|f| f == "denyoom") {
            continue;
        }
        let e = expect_err(c, &call_with(name, "oom:any", arity[name]));
        assert!(oom(&e), "{name} over maxmemory: {e}");
        refused += 1;
    }
    // The samples' writes, with valid arguments, on new keys.
    for fam in FAMILIES {
        for step in (fam.sample)(&format!("oom:{}", fam.name), base) {
            if flags[&step.args[0].to_uppercase()]
                .iter()
                .any(|f| f == "denyoom")
            {
                let args: Vec<&str> = step.args.iter().map(String::as_str).collect();
                let e = expect_err(c, &cmd(&args));
                assert!(oom(&e), "{args:?} over maxmemory: {e}");
            }
        }
    }
    assert!(refused > 0, "no command is flagged deny-oom");
    assert_same_state(&before, &state(c, base), "after the refused writes");
    for (key, empty) in &reclaiming {
        let done = wait_until(Duration::from_secs(30), || {
            dump(c, key).as_ref() == Some(empty)
        });
        assert!(done, "{key} not reclaimed over maxmemory");
    }

    // Deletes work: each family's other write commands (removals) answer,
    // and DEL removes every key.
    for (name, flags) in &flags {
        if !flags.iter().any(|f| f == "write") || flags.iter().any(|f| f == "denyoom") {
            continue;
        }
        let fam = FAMILIES.iter().find(|f| f.has_command(name)).unwrap();
        let key = fam.keys(c).into_iter().next().expect("a workload key");
        match call_with(name, &key, arity[name]).query::<Value>(c) {
            Ok(_) => {}
            Err(e) => assert!(
                !oom(&err_text(&e)),
                "{name} over maxmemory: {}",
                err_text(&e)
            ),
        }
    }
    let keys: Vec<String> = q(c, &["KEYS", "*"]);
    for key in &keys {
        assert_eq!(q::<i64>(c, &["DEL", key]), 1, "DEL {key} over maxmemory");
    }
    assert_eq!(q::<i64>(c, &["DBSIZE"]), 0);

    // Back under the limit, writes work again.
    q_ok(c, &["CONFIG", "SET", "maxmemory", "0"]);
    for fam in FAMILIES {
        let steps = (fam.sample)(&format!("oom:{}", fam.name), base);
        run_steps(c, &steps, "after maxmemory 0");
    }
    assert_no_crash(&srv.log(), "noeviction");
}

/// Module keys per family for the eviction test, and items per key.
const LRU_KEYS: usize = 300;
const LRU_ITEMS: usize = 20;

#[test]
fn allkeys_lru_evicts_module_keys_and_their_timers_stay_harmless() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let empty_server = used_memory(&srv);
    // Keys with background work due in a few seconds: items to reclaim,
    // upkeep; and every family's workload.
    let due = now_ms() + 2_000;
    let mut twins: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(seed_from_env("FAULTS_SEED", 4));
    for fam in FAMILIES {
        for i in 0..LRU_KEYS {
            let key = format!("lru:{}:{i}", fam.name);
            if let Some(reclaim) = &fam.reclaim {
                run_all(c, &expiring_items(reclaim, &key, LRU_ITEMS, &[due]));
                if i == 0 {
                    let twin = format!("lru:{}:empty", fam.name);
                    run_all(c, &(reclaim.create)(&twin));
                    twins.insert(fam.name, dump(c, &twin).unwrap());
                    q::<i64>(c, &["DEL", &twin]);
                }
            } else if let Some(upkeep) = fam.upkeep {
                run_all(c, &upkeep(&key));
            } else {
                run_all(c, &[(fam.tally.write)(&key, 0)]);
            }
        }
        fam.run_workload(c, now_ms(), &mut rng);
    }
    let count = |c: &mut Connection, fam: &Family| -> usize {
        q::<Vec<String>>(c, &["KEYS", &format!("lru:{}:*", fam.name)]).len() + fam.keys(c).len()
    };
    let before: Vec<usize> = FAMILIES.iter().map(|f| count(c, f)).collect();

    let full = used_memory(&srv);
    let limit = empty_server + (full - empty_server) / 2;
    q_ok(c, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    q_ok(c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    let under = wait_until(Duration::from_secs(10), || {
        let _: String = q(c, &["PING"]);
        used_memory(&srv) <= limit
    });
    assert!(
        under,
        "used memory {} stays above {limit}",
        used_memory(&srv)
    );
    let evicted: i64 = info_field(&srv.info("stats"), "evicted_keys")
        .and_then(|v| v.parse().ok())
        .unwrap();
    let after: Vec<usize> = FAMILIES.iter().map(|f| count(c, f)).collect();
    let module_evicted: usize = FAMILIES
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(f, _)| f.reclaim.is_some() || f.upkeep.is_some())
        .map(|(_, (b, a))| b - a)
        .sum();
    assert!(
        module_evicted > 0,
        "no module key evicted: {before:?} -> {after:?}"
    );

    // Past the due time, the timers of the evicted keys came and went; the
    // keys that stayed are reclaimed as usual.
    for fam in FAMILIES {
        let Some(empty) = twins.get(fam.name) else {
            continue;
        };
        let keys: Vec<String> = q(c, &["KEYS", &format!("lru:{}:*", fam.name)]);
        for key in keys {
            let done = wait_until(Duration::from_secs(30), || {
                dump(c, &key).as_ref() == Some(empty)
            });
            assert!(done, "{}: {key} not reclaimed after evictions", fam.name);
        }
    }
    // The upkeep of the evicted keys came due too (a bucket of 1 s leaves a
    // window of 2 s).
    std::thread::sleep(Duration::from_millis((due + 2_000 - now_ms()).max(0) as u64));
    let _: String = q(c, &["PING"]);
    eprintln!(
        "allkeys-lru: {evicted} keys evicted, {module_evicted} of them module keys with \
         background work due ({before:?} -> {after:?} keys per family)"
    );
    assert_no_crash(&srv.log(), "allkeys-lru");
}
