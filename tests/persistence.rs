//! Replication, AOF, RDB, DUMP/RESTORE, COPY and RENAME, written once and run
//! for every family of the table in `tests/common/families.rs`: all families'
//! workloads run on the same server (each on its own key prefix), then the
//! data must be equal key by key (values and absolute expiries) and read the
//! same through each family's own read commands.
//!
//! Family-specific subtleties stay in the family's own test file. The seed of
//! the workloads comes from `PERSIST_SEED` (printed).
mod common;
use common::families::*;
use common::*;

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

fn workload_rng(offset: u64) -> StdRng {
    StdRng::seed_from_u64(seed_from_env("PERSIST_SEED", offset))
}

/// `DEBUG SLEEP` on `srv` from another thread, so the writes sent meanwhile are
/// applied later than the master ran them: a replica that read its own clock
/// would get other times and expiries.
fn stall(srv: &Server, seconds: &str) -> JoinHandle<()> {
    let mut c = srv.conn();
    let seconds = seconds.to_string();
    let t = std::thread::spawn(move || q_ok(&mut c, &["DEBUG", "SLEEP", &seconds]));
    std::thread::sleep(Duration::from_millis(50));
    t
}

/// Configs of the module as a whole rather than of one family (the guard on
/// clients' times, which replicated calls never meet).
const MODULE_CONFIGS: [&str; 1] = ["recipes.max-future-ms"];

#[test]
fn family_table_lists_every_command_and_config() {
    let srv = Server::start();
    let commands = module_commands(&srv);
    assert!(!commands.is_empty(), "the module registers no command");
    for (name, _, _) in &commands {
        let owners: Vec<&str> = FAMILIES
            .iter()
            .filter(|f| f.has_command(name))
            .map(|f| f.name)
            .collect();
        assert_eq!(
            owners.len(),
            1,
            "{name} must belong to exactly one family of tests/common/families.rs, not {owners:?}"
        );
    }
    for fam in FAMILIES {
        for name in fam.commands {
            assert!(
                commands
                    .iter()
                    .any(|(n, _, _)| n.eq_ignore_ascii_case(name)),
                "family {} lists {name}, which the server does not have",
                fam.name
            );
        }
    }
    let c = &mut srv.conn();
    let configs: BTreeMap<String, String> = q(c, &["CONFIG", "GET", "recipes.*"]);
    for (name, default) in &configs {
        if MODULE_CONFIGS.contains(&name.as_str()) {
            continue;
        }
        let listed: Vec<_> = FAMILIES
            .iter()
            .flat_map(|f| f.configs)
            .filter(|(n, _)| n == name)
            .collect();
        assert_eq!(
            listed.len(),
            1,
            "{name} must be in exactly one family's configs"
        );
        assert_ne!(
            listed[0].1, default,
            "{name}: the table's value must differ from the default"
        );
    }
    for (name, _) in FAMILIES.iter().flat_map(|f| f.configs) {
        assert!(configs.contains_key(*name), "the server has no {name}");
    }
}

/// Master and a real replica: the workloads before the replica attaches (full
/// sync) and after (the command stream, with the master's configs changed and
/// the replica stalled), then equal data; the replica refuses every write
/// command, and reads on the master replicate nothing.
#[test]
fn replica_matches_master() {
    let master = Server::start();
    let m = &mut master.conn();
    let mut rng = workload_rng(0);
    let base = now_ms();
    run_workloads(m, base, &mut rng);
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    for fam in FAMILIES {
        fam.set_configs(m);
    }
    let sleeper = stall(&replica, "0.3");
    run_workloads(m, base, &mut rng);
    sleeper.join().unwrap();
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    assert_same_state(&state(m, base), &state(r, base), "master vs replica");

    for (name, arity, write) in module_commands(&replica) {
        if !write {
            continue;
        }
        let mut args = vec![name.as_str(), "rv:any"];
        while (args.len() as i64) < arity.abs() {
            args.push("1");
        }
        let e = expect_err(r, &cmd(&args));
        assert!(e.starts_with("READONLY"), "{args:?} on a replica: {e}");
    }

    // Retried: the master's periodic PING to its replica moves the offset too.
    let offset = || info_field(&master.info("replication"), "master_repl_offset");
    let unchanged = (0..3).any(|_| {
        let before = offset();
        all_reads(m, base);
        before == offset()
    });
    assert!(unchanged, "family reads were replicated");
}

/// AOF with a rewrite in the middle: the server comes back with the default
/// configs (the workloads ran with others), later than the writes ran, and
/// holds the same data; so does a second rewrite of the reloaded state.
/// Without the RDB preamble, so a rewrite goes through every module type's
/// own AOF rewrite (the commands it emits are replayed).
#[test]
fn aof_rewrite_and_reload_match() {
    let mut srv = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", "no")
        .start();
    let c = &mut srv.conn();
    let mut rng = workload_rng(1);
    let base = now_ms();
    let defaults = config_values(c);
    for fam in FAMILIES {
        fam.set_configs(c);
    }
    run_workloads(c, base, &mut rng);
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&srv);
    run_workloads(c, base, &mut rng);
    let before = state(c, base);
    std::thread::sleep(Duration::from_millis(30));
    srv.restart();
    let c = &mut srv.conn();
    assert_eq!(config_values(c), defaults);
    assert_same_state(&before, &state(c, base), "AOF reload");
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&srv);
    srv.restart();
    let c = &mut srv.conn();
    assert_same_state(&before, &state(c, base), "AOF rewrite of a reloaded state");
}

/// RDB: SAVE, restart, same data; the workloads then go on on the loaded data.
#[test]
fn rdb_reload_matches() {
    let mut srv = Server::start();
    let c = &mut srv.conn();
    let mut rng = workload_rng(2);
    let base = now_ms();
    run_workloads(c, base, &mut rng);
    run_workloads(c, base, &mut rng);
    let before = state(c, base);
    srv.restart_with_save();
    let c = &mut srv.conn();
    assert_same_state(&before, &state(c, base), "RDB reload");
    run_workloads(c, base, &mut rng);
    all_reads(c, base);
}

/// DUMP/RESTORE (with the same absolute expiry), COPY and RENAME of every
/// workload key keep its type, expiry and reads.
#[test]
fn dump_restore_copy_rename_keep_content() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut rng = workload_rng(3);
    let base = now_ms();
    run_workloads(c, base, &mut rng);
    for fam in FAMILIES {
        for key in fam.keys(c) {
            let want = (type_and_expiry(c, &key), (fam.read)(c, &key, base));
            let got = |c: &mut redis::Connection, k: &str| {
                (type_and_expiry(c, k), (fam.read)(c, k, base))
            };
            let payload: Vec<u8> = q(c, &["DUMP", &key]);
            let restored = format!("{key}:restored");
            let mut restore = redis::cmd("RESTORE");
            restore.arg(&restored);
            match want.0 .1 {
                exp if exp > 0 => restore.arg(exp).arg(&payload).arg("ABSTTL"),
                _ => restore.arg(0).arg(&payload),
            };
            let _: redis::Value = run(c, &restore);
            assert_eq!(got(c, &restored), want, "{}: RESTORE of {key}", fam.name);

            let copy = format!("{key}:copy");
            assert_eq!(q::<i64>(c, &["COPY", &key, &copy]), 1);
            assert_eq!(got(c, &copy), want, "{}: COPY of {key}", fam.name);
            let renamed = format!("{key}:renamed");
            q_ok(c, &["RENAME", &copy, &renamed]);
            assert!(!exists(c, &copy));
            assert_eq!(got(c, &renamed), want, "{}: RENAME of {key}", fam.name);
            assert_eq!(got(c, &key), want, "{}: {key} itself", fam.name);
        }
    }
}

/// MIGRATE moves every workload key of every family to another server with
/// its content; the absolute expiry may move by the transfer time (MIGRATE
/// carries the time left).
#[test]
fn migrate_moves_keys_with_their_content() {
    let (from, to) = (Server::start(), Server::start());
    let (a, b) = (&mut from.conn(), &mut to.conn());
    let mut rng = workload_rng(4);
    let base = now_ms();
    run_workloads(a, base, &mut rng);
    let port = to.port.to_string();
    for fam in FAMILIES {
        for key in fam.keys(a) {
            let ((kind, expire_at), reads) = (type_and_expiry(a, &key), (fam.read)(a, &key, base));
            let reply: String = q(a, &["MIGRATE", "127.0.0.1", &port, &key, "0", "5000"]);
            assert_eq!(reply, "OK", "{}: MIGRATE {key}", fam.name);
            assert!(!exists(a, &key));
            let (kind_b, expire_b) = type_and_expiry(b, &key);
            assert_eq!(kind_b, kind, "{}: {key}", fam.name);
            assert!(
                (expire_b - expire_at).abs() <= 1_000 && (expire_b > 0) == (expire_at > 0),
                "{}: {key} expiry {expire_b} vs {expire_at}",
                fam.name
            );
            assert_eq!(
                (fam.read)(b, &key, base),
                reads,
                "{}: MIGRATE of {key}",
                fam.name
            );
        }
    }
}

/// An AOF written by a release that let declarations use words that are
/// keywords now (`group`, `count`) loads whole: the CREATEs are not refused
/// (no CRITICAL line), and the names stay names in every command, also where
/// the command takes the word as an option (`count` in a paged read).
#[test]
fn an_aof_with_names_that_became_keywords_loads_and_reads() {
    let mut srv = Server::start();
    srv.stop();
    // What a build before 0.1.0 wrote for `ULIST.CREATE teams VALUE user
    // SCOPE group`, `ULIST.ADD teams user 1 group a`, `HCOUNTER.CREATE hits
    // PARTITION count GROUP page` and `HCOUNTER.INCR hits count x page p1`.
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/aof/pre-0.1.0-keyword-names/appendonlydir");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(&golden)
        .arg(&srv.dir)
        .status()
        .unwrap();
    assert!(copied.success());
    srv.try_restart_with(&[("appendonly", "yes")]).unwrap();
    assert!(!srv.log().contains("CRITICAL"), "{}", srv.log());
    let c = &mut srv.conn();
    let dbsize: i64 = q(c, &["DBSIZE"]);
    assert_eq!(dbsize, 2);
    let has: i64 = q(c, &["ULIST.HAS", "teams", "user", "1", "group", "a"]);
    assert_eq!(has, 1);
    let got: i64 = q(c, &["HCOUNTER.GET", "hits", "count", "x", "page", "p1"]);
    assert_eq!(got, 1);
    let rows: Vec<Vec<String>> = q(c, &["HCOUNTER.DATA", "hits", "count", "x"]);
    assert_eq!(rows, [["count", "x", "page", "p1", "value", "1"]]);
    let paged: (String, Vec<Vec<String>>) = q(
        c,
        &[
            "HCOUNTER.DATA",
            "hits",
            "count",
            "x",
            "CURSOR",
            "0",
            "COUNT",
            "5",
        ],
    );
    assert_eq!(paged.1, rows);
    let none: Vec<Vec<String>> = q(c, &["HCOUNTER.DATA", "hits", "count", "y"]);
    assert!(none.is_empty());
    let rows: Vec<Vec<String>> = q(c, &["ULIST.DATA", "teams", "group", "a"]);
    assert_eq!(rows, [["user", "1", "group", "a"]]);
    // A client's new declaration still refuses the keyword.
    let e = expect_err(
        c,
        &cmd(&["ULIST.CREATE", "other", "VALUE", "user", "SCOPE", "group"]),
    );
    assert!(e.contains("'group' is a keyword"), "{e}");
    // And the rewrite of such keys loads again.
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(&srv);
    srv.restart();
    assert!(!srv.log().contains("CRITICAL"));
    let c = &mut srv.conn();
    let got: i64 = q(c, &["HCOUNTER.GET", "hits", "count", "x", "page", "p1"]);
    assert_eq!(got, 1);
}
