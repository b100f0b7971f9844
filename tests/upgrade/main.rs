//! Upgrades from each previous release (`make test-upgrade`): what an older
//! build wrote or sent must load and answer the same on this one, on every
//! path data arrives by.
//!
//! - `persistence`: a multi-part AOF (rewritten in the middle) and an RDB
//!   written by the previous build under every family and option it knew,
//!   loaded by this build;
//! - `rolling`: a rolling upgrade under writers (previous-build master,
//!   this-build replica, `FAILOVER`, the old master back on this build);
//! - `restore`: `DUMP` of the previous build `RESTORE`d here, a key of every
//!   encoding;
//! - `downgrade`: what this build writes, an AOF and an RDB of every family
//!   and option, loaded by the previous release where docs/upgrading.md
//!   says going back needs no step;
//! - `golden`: the AOFs older builds wrote, committed under
//!   `tests/golden/aof/` (so the check holds where the old commit cannot be
//!   built), loaded here; and names that are keywords now, sent by an older
//!   master.
//!
//! One run tests one previous release: `$RECIPES_PREVIOUS_RELEASE` names it
//! (as CHANGELOG.md does) and `$RECIPES_PREVIOUS_MODULE` is its module
//! (`scripts/previous-release.sh <name>` builds it from the commit
//! CHANGELOG.md names); what it sends is what it knows ([`Knows`]). The
//! `golden` tests need no previous release but the build before 0.1.0 named
//! `keyword-names` in `scripts/previous-release.sh`
//! (`$RECIPES_KEYWORD_NAMES_MODULE`): `make test-upgrade` runs them once,
//! with the newest release. Not part of `cargo test --tests` (`test = false` in
//! Cargo.toml): `make test-upgrade` runs it for every release CHANGELOG.md
//! names, on Redis 7.0.15 and Valkey 9.1.2.
#[path = "../common/mod.rs"]
mod common;

mod downgrade;
mod golden;
mod options;
mod persistence;
mod restore;
mod rolling;

use common::families::{Family, FAMILIES};
use common::*;
use options::*;
use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The module .so named by `var`, panicking with how to get it when unset
/// (`build` is the command that builds it).
fn module_from_env(var: &str, build: &str) -> PathBuf {
    let path = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: `make test-upgrade` sets it (`{build}` builds it)")
    });
    let path = PathBuf::from(path);
    assert!(path.is_file(), "{var}={} does not exist", path.display());
    path
}

/// The previous release under test, as CHANGELOG.md names it
/// (`$RECIPES_PREVIOUS_RELEASE`).
fn previous_release() -> String {
    std::env::var("RECIPES_PREVIOUS_RELEASE").unwrap_or_else(|_| {
        panic!(
            "RECIPES_PREVIOUS_RELEASE is not set: `make test-upgrade` sets it to each release \
             CHANGELOG.md names (`scripts/previous-release.sh --list`)"
        )
    })
}

/// The previous release's module (`$RECIPES_PREVIOUS_MODULE`).
fn previous_module() -> PathBuf {
    module_from_env(
        "RECIPES_PREVIOUS_MODULE",
        "scripts/previous-release.sh $RECIPES_PREVIOUS_RELEASE",
    )
}

/// A server on the previous release's module.
fn previous_build() -> ServerBuilder {
    Server::builder().module(&previous_module())
}

/// This build's module: the one the test binary finds (`RECIPES_MODULE` or
/// next to it).
fn this_module() -> PathBuf {
    module_path()
}

/// The recipes module's `ver` and path in `MODULE LIST`: builds after a
/// release report its version until the next one is named, so the path
/// tells the builds apart.
fn module_build(srv: &Server) -> (i64, Vec<u8>) {
    let modules: Vec<BTreeMap<String, Value>> = q(&mut srv.conn(), &["MODULE", "LIST"]);
    let recipes = modules
        .iter()
        .find(|m| m.get("name") == Some(&Value::BulkString(b"recipes".to_vec())))
        .expect("the recipes module in MODULE LIST");
    let ver = redis::from_redis_value(&recipes["ver"]).expect("ver");
    let path = redis::from_redis_value(&recipes["path"]).expect("path");
    (ver, path)
}

/// Restarts `srv` on this build (same dir and config, so it loads what the
/// older build left there), with `change` to its config too; checks that
/// the module changed (an older build ran before).
fn restart_on_this_build_with(
    srv: &mut Server,
    change: impl FnOnce(ServerBuilder) -> ServerBuilder,
) {
    let before = module_build(srv);
    srv.reconfigure(|b| change(b.module(&this_module())));
    srv.restart();
    let after = module_build(srv);
    assert_ne!(before, after, "the older build is still loaded");
}

fn restart_on_this_build(srv: &mut Server) {
    restart_on_this_build_with(srv, |b| b);
}

/// What says an AOF or a replication stream was refused: the server logs a
/// `CRITICAL` line for each error its AOF-loading or master client gets.
fn assert_no_critical(srv: &Server, what: &str) {
    let log = srv.log();
    let critical: Vec<&str> = log.lines().filter(|l| l.contains("CRITICAL")).collect();
    assert!(
        critical.is_empty(),
        "{what}: the log (port {}) has CRITICAL lines:\n{}",
        srv.port,
        critical.join("\n")
    );
}

/// The family whose keys have the type `kind` (`TYPE`).
fn family_of_type(kind: &str) -> Option<&'static Family> {
    let name = match kind {
        "zset" => "RV",
        "list" => "TL",
        "recipesTN" => "TOPN",
        "recipesUL" => "ULIST",
        "recipesHC" => "HCOUNTER",
        _ => return None,
    };
    FAMILIES.iter().find(|f| f.name == name)
}

fn is_module_type(kind: &str) -> bool {
    kind.starts_with("recipes")
}

/// Every row of a paged read (`CURSOR 0 COUNT 3` until the cursor is 0),
/// sorted: pages come in an order of the key's own.
fn paged_rows(c: &mut Connection, command: &str, key: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let reply: (String, Vec<Value>) = q(c, &[command, key, "CURSOR", &cursor, "COUNT", "3"]);
        rows.extend(reply.1.iter().map(reply_text));
        cursor = reply.0;
        if cursor == "0" {
            break;
        }
    }
    rows.sort();
    rows
}

/// What a key answers: its type and absolute expiry, its family's reads,
/// its paged reads, and for Redis' own types its value.
fn key_reads(c: &mut Connection, key: &str, base: i64) -> Vec<String> {
    let (kind, expire_at) = common::families::type_and_expiry(c, key);
    let mut lines = vec![format!("TYPE {kind} PEXPIRETIME {expire_at}")];
    if let Some(fam) = family_of_type(&kind) {
        lines.extend((fam.read)(c, key, base));
    }
    if kind == "recipesTN" {
        // With errors (CAPACITY keys), which the family's reads leave out.
        for at in [base, base + 3_600_000] {
            let at = at.to_string();
            let args = [
                "TOPN.TOP",
                key,
                "1000",
                "AT",
                &at,
                "WITHCOUNTS",
                "WITHERRORS",
            ];
            lines.push(common::families::read_line(c, &args));
        }
    }
    if matches!(kind.as_str(), "recipesUL" | "recipesHC") {
        let family = if kind == "recipesUL" {
            "ULIST"
        } else {
            "HCOUNTER"
        };
        for read in ["DATA", "PARTITIONS"] {
            let command = format!("{family}.{read}");
            let rows = paged_rows(c, &command, key);
            lines.push(format!("{command} in pages: {}", rows.join(", ")));
        }
    }
    lines
}

/// [`key_reads`] of every key of db 0, by key.
fn all_key_reads(c: &mut Connection, base: i64) -> BTreeMap<String, Vec<String>> {
    let mut keys: Vec<String> = q(c, &["KEYS", "*"]);
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let lines = key_reads(c, &k, base);
            (k, lines)
        })
        .collect()
}

/// Panics naming each key whose reads differ (or that one side lacks).
fn assert_same_key_reads(
    before: &BTreeMap<String, Vec<String>>,
    after: &BTreeMap<String, Vec<String>>,
    what: &str,
) {
    assert!(!before.is_empty(), "{what}: no key to compare");
    let mut diff = String::new();
    for key in before.keys().chain(after.keys()) {
        if before.get(key) != after.get(key) {
            diff += &format!(
                "key {key:?}:\n  before: {:?}\n  after:  {:?}\n",
                before.get(key),
                after.get(key)
            );
        }
    }
    assert!(diff.is_empty(), "{what}: reads differ:\n{diff}");
}

/// Runs the commands in one pipeline, panicking on an error reply.
fn run_commands(c: &mut Connection, cmds: impl IntoIterator<Item = redis::Cmd>) {
    let mut p = redis::pipe();
    for k in cmds {
        p.add_command(k).ignore();
    }
    let _: () = p
        .query(c)
        .unwrap_or_else(|e| panic!("writes: {}", err_text(&e)));
}
