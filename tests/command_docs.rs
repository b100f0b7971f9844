//! What tools see of the module: `commands.json` is what a running server
//! reports (COMMAND DOCS and COMMAND INFO), COMMAND DOCS lists every
//! command's arguments, and ACL categories let `+@read` run reads and refuse
//! writes.
//!
//! ACL categories of module commands need `RedisModule_SetCommandACLCategories`
//! (Redis 7.2, Valkey 8); `@recipes` needs `RedisModule_AddACLCategory`
//! (Valkey 8, Redis 7.4+). On Debian's Redis 7.0 the module loads without
//! categories: the category assertions are skipped there (with a message),
//! and what is checked instead is the one log line saying so and that
//! `+@read` indeed does not reach module commands. `make test-compat` runs
//! this file on Redis 7.2 and Valkey 8 too.
mod common;
use common::*;

use redis::Value;
use serde_json::{json, Map, Value as Json};
use std::path::Path;

/// A call of each internal command (ULIST's and HCOUNTER's replication of
/// a master's decisions).
const INTERNAL_CALLS: &[&[&str]] = &[
    &["ULIST.RECLAIM", "l", "x"],
    &["HCOUNTER.SET", "f", "1", "AT", "1"],
    &["HCOUNTER.SEEN", "f", "AT", "1", "u", "1"],
    &["HCOUNTER.RECLAIM", "f", "x"],
];

/// What the server under test lets a module do with ACL categories.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Acl {
    /// Redis 7.0: no categories for module commands.
    Unsupported,
    /// Redis 7.2: the server's own categories.
    Core,
    /// Valkey 8, Redis 7.4+: also categories a module adds (`@recipes`).
    WithModuleCategory,
}

fn version(text: &str) -> (u32, u32) {
    let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn acl_support(srv: &Server) -> Acl {
    let info = srv.info("server");
    if let Some(valkey) = info_field(&info, "valkey_version") {
        // Valkey 7.2 is Redis 7.2.4; Valkey 8.0 added module categories.
        return if version(&valkey) >= (8, 0) {
            Acl::WithModuleCategory
        } else {
            Acl::Core
        };
    }
    match version(&info_field(&info, "redis_version").expect("redis_version")) {
        v if v < (7, 2) => Acl::Unsupported,
        v if v < (7, 4) => Acl::Core,
        _ => Acl::WithModuleCategory,
    }
}

/// A RESP3 reply as JSON: maps become objects, sets and arrays arrays.
fn to_json(v: &Value) -> Json {
    match v {
        Value::Map(m) => Json::Object(
            m.iter()
                .map(|(k, v)| (to_json(k).as_str().unwrap().to_string(), to_json(v)))
                .collect(),
        ),
        Value::Array(a) | Value::Set(a) => Json::Array(a.iter().map(to_json).collect()),
        Value::BulkString(b) => json!(String::from_utf8_lossy(b)),
        Value::SimpleString(s) => json!(s),
        Value::VerbatimString { text, .. } => json!(text),
        Value::Okay => json!("OK"),
        Value::Int(n) => json!(n),
        Value::Boolean(b) => json!(b),
        Value::Nil => Json::Null,
        other => panic!("unexpected reply {other:?}"),
    }
}

/// `"flags": [...]` turned into `flag: true` entries, as redis-doc files
/// write them.
fn flags_to_booleans(mut object: Map<String, Json>) -> Map<String, Json> {
    if let Some(Json::Array(flags)) = object.remove("flags") {
        for flag in flags {
            object.insert(flag.as_str().unwrap().to_string(), json!(true));
        }
    }
    object
}

/// An argument of COMMAND DOCS in the file's form. Redis 7.2+ and Valkey
/// add `display_text`, the name unless a module sets another (we don't;
/// Redis 7.0 has no such field): dropped when it is the name.
fn argument(arg: &Json) -> Json {
    let mut arg = flags_to_booleans(arg.as_object().unwrap().clone());
    if arg.get("display_text") == arg.get("name") {
        arg.remove("display_text");
    }
    if let Some(Json::Array(sub)) = arg.remove("arguments") {
        arg.insert(
            "arguments".into(),
            Json::Array(sub.iter().map(argument).collect()),
        );
    }
    Json::Object(arg)
}

/// One command as the server reports it, in the shape Redis'
/// `utils/generate-commands-json.py` gives it (empty lists left out).
fn live_entry(info: &[Json], docs: &Json) -> Map<String, Json> {
    let mut docs = docs.as_object().unwrap().clone();
    let mut e = Map::new();
    for field in ["summary", "since", "group", "complexity", "history"] {
        if let Some(v) = docs.remove(field) {
            e.insert(field.into(), v);
        }
    }
    let non_empty = |v: &Json| v.as_array().is_some_and(|a| !a.is_empty());
    if non_empty(&info[6]) {
        e.insert("acl_categories".into(), info[6].clone());
    }
    e.insert("arity".into(), info[1].clone());
    let specs: Vec<Json> = info[8]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Json::Object(flags_to_booleans(s.as_object().unwrap().clone())))
        .collect();
    e.insert("key_specs".into(), json!(specs));
    if let Some(Json::Array(args)) = docs.remove("arguments") {
        e.insert(
            "arguments".into(),
            Json::Array(args.iter().map(argument).collect()),
        );
    }
    e.insert("command_flags".into(), info[2].clone());
    if non_empty(&info[7]) {
        e.insert("hints".into(), info[7].clone());
    }
    e.extend(docs);
    e
}

fn commands_json() -> Map<String, Json> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("commands.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    match serde_json::from_str(&text) {
        Ok(Json::Object(commands)) => commands,
        other => panic!("{path:?} is not a JSON object: {other:?}"),
    }
}

fn query(c: &mut redis::Connection, args: &[&str]) -> Json {
    to_json(&q::<Value>(c, args))
}

/// `commands.json` (written from the command table by `make docs`) is what
/// the server reports for every command, but for what a server cannot
/// carry: `group` is `module` on the server (the family in the file, as
/// RedisBloom's files have it), and the ACL categories the server can set.
#[test]
fn commands_json_is_what_the_server_reports() {
    let srv = Server::start();
    let acl = acl_support(&srv);
    let c = &mut srv.conn_resp3();
    let file = commands_json();
    let mut live: Vec<String> = serde_json::from_value(query(
        c,
        &["COMMAND", "LIST", "FILTERBY", "MODULE", "recipes"],
    ))
    .unwrap();
    live.iter_mut().for_each(|n| *n = n.to_uppercase());
    live.sort();
    let listed: Vec<&String> = file.keys().collect();
    assert_eq!(listed, live.iter().collect::<Vec<_>>(), "commands");
    for (name, want) in &file {
        let info = query(c, &["COMMAND", "INFO", name]);
        let info = info[0]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {info}"));
        let docs = query(c, &["COMMAND", "DOCS", name]);
        let docs = &docs[name.to_lowercase().as_str()];
        let mut got = live_entry(info, docs);
        let mut want = want.as_object().unwrap().clone();
        assert_eq!(got.remove("group"), Some(json!("module")), "{name}");
        let family = name.split('.').next().unwrap().to_lowercase();
        assert_eq!(want.remove("group"), Some(json!(family)), "{name}");
        let categories = want.remove("acl_categories").unwrap();
        let categories: Vec<&str> = categories
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .filter(|&c| c != "@recipes" || acl == Acl::WithModuleCategory)
            .collect();
        if acl != Acl::Unsupported {
            want.insert("acl_categories".into(), json!(categories));
        }
        for (field, value) in &want {
            assert_eq!(got.get(field), Some(value), "{name}: {field}");
        }
        assert_eq!(got.len(), want.len(), "{name}: {got:?}");
    }
}

/// COMMAND DOCS lists each command's arguments (what `redis-cli` 7.2+ shows
/// as hints), and the internal commands say they are internal.
#[test]
fn command_docs_lists_the_arguments() {
    let srv = Server::start();
    let c = &mut srv.conn_resp3();
    let docs = query(c, &["COMMAND", "DOCS", "TOPN.TOP", "ULIST.ADD"]);
    let names = |args: &Json| -> Vec<String> {
        args.as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let name = a["name"].as_str().unwrap();
                match a["token"].as_str() {
                    Some(token) => format!("{token} {name}"),
                    None => name.to_string(),
                }
            })
            .collect()
    };
    let top = &docs["topn.top"]["arguments"];
    assert_eq!(
        names(top),
        [
            "key",
            "count",
            "AT time",
            "LAST buckets",
            "WITHCOUNTS withcounts",
            "WITHERRORS witherrors"
        ]
    );
    assert_eq!(top[1]["flags"], json!(["optional"]));
    let add = &docs["ulist.add"]["arguments"];
    assert_eq!(
        names(add),
        ["list", "expiration", "REFRESH refresh", "AT time", "pair"]
    );
    assert_eq!(
        names(&add[1]["arguments"]),
        [
            "EXPIRE seconds",
            "NEVER never",
            "PXAT unix-time-milliseconds"
        ]
    );
    assert_eq!(add[4]["flags"], json!(["multiple"]));
    assert_eq!(names(&add[4]["arguments"]), ["name", "value"]);
    for internal in [
        "ULIST.RECLAIM",
        "HCOUNTER.SET",
        "HCOUNTER.SEEN",
        "HCOUNTER.RECLAIM",
        "TOPN.SETCOUNTER",
    ] {
        let docs = query(c, &["COMMAND", "DOCS", internal]);
        let summary = docs[internal.to_lowercase().as_str()]["summary"].clone();
        assert!(
            summary.as_str().unwrap().starts_with("Internal: "),
            "{internal}: {summary}"
        );
    }
}

/// What the load log says about ACL categories: one line where the server
/// lacks something, nothing where it has it all.
fn acl_log_lines(srv: &Server) -> Vec<String> {
    srv.log()
        .lines()
        .filter(|l| l.contains(" <recipes> ") && l.contains("ACL categor"))
        .map(|l| l.split(" <recipes> ").nth(1).unwrap().to_string())
        .collect()
}

/// A dashboard user (`+@read`) runs the reads and is refused the writes; a
/// `+@write` user the other way round; `+@sortedset` reaches RV, `+@list`
/// TL, `-@dangerous` keeps the internal commands away; on servers with
/// module categories `+@recipes` reaches the module's commands and no
/// others.
#[test]
fn acl_categories_let_read_users_read_and_refuse_writes() {
    let srv = Server::start();
    let acl = acl_support(&srv);
    let c = &mut srv.conn();
    q_ok(c, &["TOPN.CREATE", "lookups"]);
    q::<i64>(c, &["TOPN.INCR", "lookups", "+15551234567"]);
    let user = |name: &str, rules: &[&str]| -> redis::Connection {
        let mut setuser = vec!["ACL", "SETUSER", name, "on", ">pw", "~*"];
        setuser.extend(rules);
        q_ok(&mut srv.conn(), &setuser);
        let mut c = srv.conn();
        q_ok(&mut c, &["AUTH", name, "pw"]);
        c
    };
    let dash = &mut user("dash", &["+@read"]);
    let top = cmd(&["TOPN.TOP", "lookups", "10", "WITHCOUNTS"]);
    let incr = cmd(&["TOPN.INCR", "lookups", "+15551234567"]);
    let log = acl_log_lines(&srv);
    if acl == Acl::Unsupported {
        eprintln!(
            "skipped: this server cannot give module commands ACL categories \
             (RedisModule_SetCommandACLCategories is Redis 7.2+); checked the log line and \
             that +@read does not reach module commands"
        );
        assert_eq!(log.len(), 1, "{log:?}");
        assert!(log[0].starts_with("ACL categories not set"), "{log:?}");
        assert!(expect_err(dash, &top).starts_with("NOPERM"));
        return;
    }
    let top_reply: Vec<String> = run(dash, &top);
    assert_eq!(top_reply, ["+15551234567", "1"]);
    let refused = expect_err(dash, &incr);
    assert!(refused.starts_with("NOPERM"), "{refused}");
    for read in [
        &["RV.GET", "k"][..],
        &["TL.LEN", "k"],
        &["TOPN.COUNT", "lookups", "x"],
        &["ULIST.DATA", "k"],
        &["HCOUNTER.DATA", "k"],
    ] {
        let _: Value = q(dash, read);
    }
    let writer = &mut user("writer", &["+@write"]);
    assert_eq!(run::<i64>(writer, &incr), 2);
    assert!(expect_err(writer, &top).starts_with("NOPERM"));
    // (ACL CAT leaves module commands out: users show what categories reach.)
    let zsets = &mut user("zsets", &["+@sortedset"]);
    assert_eq!(q::<i64>(zsets, &["RV.ADD", "viewed", "item"]), 1);
    assert!(expect_err(zsets, &cmd(&["TL.LEN", "k"])).starts_with("NOPERM"));
    let lists = &mut user("lists", &["+@list"]);
    assert_eq!(q::<i64>(lists, &["TL.PUSH", "timeline", "post"]), 1);
    assert!(expect_err(lists, &cmd(&["RV.LEN", "k"])).starts_with("NOPERM"));
    let careful = &mut user("careful", &["+@all", "-@dangerous"]);
    for internal in INTERNAL_CALLS {
        let e = expect_err(careful, &cmd(internal));
        assert!(e.starts_with("NOPERM"), "{internal:?}: {e}");
    }
    assert_eq!(run::<i64>(careful, &incr), 3);
    if acl == Acl::Core {
        assert_eq!(log.len(), 1, "{log:?}");
        assert!(log[0].starts_with("no @recipes ACL category"), "{log:?}");
        return;
    }
    assert_eq!(log, Vec::<String>::new());
    let app = &mut user("app", &["+@recipes"]);
    assert_eq!(run::<i64>(app, &incr), 4);
    for call in [
        &["RV.LEN", "k"][..],
        &["TL.LEN", "k"],
        &["ULIST.DATA", "k"],
        &["HCOUNTER.DATA", "k"],
    ] {
        let _: Value = q(app, call);
    }
    let _: Vec<String> = run(app, &top);
    assert!(expect_err(app, &cmd(&["GET", "k"])).starts_with("NOPERM"));
}

/// docs/operations.md's ACL line for the internal commands: a client under it is
/// refused them (NOPERM, before the module's own refusal), while a replica
/// whose users all carry it still applies them from its master, as the
/// replication link is not subject to ACL. Plain command rules: this works
/// on every server, 7.0 included.
#[test]
fn the_documented_acl_line_hides_the_internal_commands() {
    let operations =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operations.md"))
            .expect("docs/operations.md");
    let line = operations
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ACL SETUSER default "))
        .expect("docs/operations.md gives an `ACL SETUSER default ...` line");
    let rules: Vec<&str> = line.split_whitespace().collect();
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    for srv in [&master, &replica] {
        q_ok(&mut srv.conn(), &rules);
    }
    let c = &mut master.conn();
    for internal in INTERNAL_CALLS {
        let e = expect_err(c, &cmd(internal));
        assert!(e.starts_with("NOPERM"), "{internal:?}: {e}");
    }
    // A FLOAT increment reaches the replica as HCOUNTER.SET.
    q_ok(c, &["HCOUNTER.CREATE", "f", "FLOAT"]);
    let n: String = q(c, &["HCOUNTER.INCRBY", "f", "2.5"]);
    assert_eq!(n, "2.5");
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    let n: String = q(r, &["HCOUNTER.GET", "f"]);
    assert_eq!(n, "2.5");
    assert_eq!(replica.recipes_info("hcounter_set_calls"), 1);
}
