//! `commands.json` at the repository root: the command table in the redis-doc
//! schema that redis.io, RedisInsight and client generators read (the shape
//! Redis' `utils/generate-commands-json.py` gives a live server's COMMAND and
//! COMMAND DOCS; `group` is the family, as RedisBloom's `bf` and `cf`).
//!
//! Written from `FAMILIES` by the test below: `make docs` rewrites the file
//! (`RECIPES_WRITE_COMMANDS_JSON=1`); otherwise the test fails when the file
//! is out of date. `tests/command_docs.rs` checks the file against what a
//! running server reports.

use crate::docs::{acl_categories, Arg, ArgType, SINCE};
use crate::server::command::{Command, ACL_CATEGORY};
use crate::FAMILIES;
use redis_module::raw;
use serde_json::{json, Map, Value};

/// Every command, by upper-case name, sorted.
pub fn commands_json() -> Value {
    let mut commands: Vec<(String, Value)> = FAMILIES
        .iter()
        .flat_map(|f| f.commands)
        .map(|cmd| (name(cmd).to_uppercase(), entry(cmd)))
        .collect();
    commands.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Object(commands.into_iter().collect())
}

fn name(cmd: &Command) -> &str {
    cmd.name.to_str().expect("command names are ASCII")
}

fn entry(cmd: &Command) -> Value {
    let docs = &cmd.docs;
    let flags = cmd.flags.to_str().expect("flags are ASCII");
    let module_category = ACL_CATEGORY.to_str().ok();
    let categories: Vec<String> = acl_categories(flags, docs.acl, module_category)
        .iter()
        .map(|c| format!("@{c}"))
        .collect();
    let mut e = Map::new();
    e.insert("summary".into(), json!(docs.summary));
    e.insert("since".into(), json!(SINCE));
    let group = name(cmd).split('.').next();
    e.insert("group".into(), json!(group));
    e.insert("complexity".into(), json!(docs.complexity));
    e.insert("acl_categories".into(), json!(categories));
    e.insert("arity".into(), json!(cmd.arity));
    e.insert("key_specs".into(), json!([key_spec(cmd.key_flags)]));
    e.insert("arguments".into(), arguments(docs.args));
    e.insert("command_flags".into(), json!(command_flags(flags)));
    if !docs.tips.is_empty() {
        e.insert("hints".into(), json!(docs.tips));
    }
    e.insert("module".into(), json!("recipes"));
    Value::Object(e)
}

/// The one key spec every command has: the key at argument 1.
fn key_spec(key_flags: u32) -> Value {
    let mut spec = Map::new();
    spec.insert(
        "begin_search".into(),
        json!({"type": "index", "spec": {"index": 1}}),
    );
    spec.insert(
        "find_keys".into(),
        json!({"type": "range", "spec": {"lastkey": 0, "keystep": 1, "limit": 0}}),
    );
    let names = [
        (raw::REDISMODULE_CMD_KEY_RO, "RO"),
        (raw::REDISMODULE_CMD_KEY_RW, "RW"),
        (raw::REDISMODULE_CMD_KEY_OW, "OW"),
        (raw::REDISMODULE_CMD_KEY_RM, "RM"),
        (raw::REDISMODULE_CMD_KEY_ACCESS, "access"),
        (raw::REDISMODULE_CMD_KEY_UPDATE, "update"),
        (raw::REDISMODULE_CMD_KEY_INSERT, "insert"),
        (raw::REDISMODULE_CMD_KEY_DELETE, "delete"),
    ];
    for (bit, name) in names {
        if key_flags & bit != 0 {
            spec.insert(name.into(), json!(true));
        }
    }
    Value::Object(spec)
}

fn arguments(args: &[Arg]) -> Value {
    Value::Array(args.iter().map(argument).collect())
}

fn argument(a: &Arg) -> Value {
    let mut e = Map::new();
    e.insert("name".into(), json!(a.name));
    e.insert("type".into(), json!(a.kind.name()));
    if a.kind == ArgType::Key {
        e.insert("key_spec_index".into(), json!(0));
    }
    if let Some(token) = a.token {
        e.insert("token".into(), json!(token));
    }
    if let Some(summary) = a.summary {
        e.insert("summary".into(), json!(summary));
    }
    if a.optional {
        e.insert("optional".into(), json!(true));
    }
    if a.multiple {
        e.insert("multiple".into(), json!(true));
    }
    if !a.kind.subargs().is_empty() {
        e.insert("arguments".into(), arguments(a.kind.subargs()));
    }
    Value::Object(e)
}

/// The flags as COMMAND INFO names them, in its order (`module` for every
/// module command).
fn command_flags(flags: &str) -> Vec<&'static str> {
    let words: Vec<&str> = flags.split_whitespace().collect();
    let known = ["write", "readonly", "deny-oom", "fast"];
    if let Some(other) = words.iter().find(|w| !known.contains(w)) {
        panic!("command flag {other}: add how COMMAND INFO names it");
    }
    let has = |w| words.contains(&w);
    let mut out = Vec::new();
    for (ours, theirs) in [
        ("write", "write"),
        ("readonly", "readonly"),
        ("deny-oom", "denyoom"),
    ] {
        if has(ours) {
            out.push(theirs);
        }
    }
    out.push("module");
    if has("fast") {
        out.push("fast");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// `commands.json` is what the command table says; with
    /// `RECIPES_WRITE_COMMANDS_JSON=1` (`make docs`) this writes it.
    #[test]
    fn commands_json_is_up_to_date() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("commands.json");
        let text = serde_json::to_string_pretty(&commands_json()).unwrap() + "\n";
        if std::env::var_os("RECIPES_WRITE_COMMANDS_JSON").is_some() {
            std::fs::write(&path, &text).unwrap();
            return;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == text,
            "{} is not what the command table says: run `make docs`",
            path.display()
        );
    }

    #[test]
    fn one_entry_per_command() {
        let all = commands_json();
        let map = all.as_object().unwrap();
        let count: usize = FAMILIES.iter().map(|f| f.commands.len()).sum();
        assert_eq!(map.len(), count);
        let top = &map["TOPN.TOP"];
        assert_eq!(top["group"], "topn");
        assert_eq!(top["acl_categories"], json!(["@read", "@slow", "@recipes"]));
        assert_eq!(top["hints"], json!(["nondeterministic_output"]));
        assert_eq!(
            top["arguments"][0],
            json!({"name": "key", "type": "key", "key_spec_index": 0})
        );
        let with_counts = json!({"name": "withcounts", "type": "pure-token", "token": "WITHCOUNTS", "optional": true});
        assert_eq!(top["arguments"][4], with_counts);
    }
}
