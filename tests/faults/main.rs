//! The fault suite (`make test-faults`): the failures a deployment meets,
//! each as a test against real servers on loopback ports, bounded in count
//! and time, and run for every family of `tests/common/families.rs` (a new
//! family joins by its line there).
//!
//! - `churn`: a million keys created and removed every way, a diskless
//!   swapdb sync under writes, eviction of big TOPN keys beside sorted sets;
//! - `crash`: kill -9 in the middle of a pipelined writer with `appendfsync
//!   always`, and AOF files whose tail is cut;
//! - `failover`: a replica promoted while background reclaim runs;
//! - `planned_failover`: FAILOVER, CLUSTER FAILOVER and Sentinel under
//!   writers acknowledged with WAIT, with reclaim due during the switch;
//! - `reshard`: slots of a 3-node cluster moved under two writers;
//! - `slot_migration`: Valkey 9's atomic slot migration under two writers,
//!   back and forth, and cancelled;
//! - `memory`: `maxmemory` with `noeviction` and with `allkeys-lru`;
//! - `corrupt`: truncated and bit-flipped RDB files, crafted RESTORE payloads
//!   (refused with a warning that says why);
//! - `fuzz`: random argument vectors for every command;
//! - `keyspace`: a model of which keys owe background work, against random
//!   moves, drops, reloads and defrag of keys of every family;
//! - `defrag_moves`: renamed keys of ours while active defrag moves them;
//! - `panics`: values that cannot be saved and writes that panic, on a
//!   master with a replica (and beside another module's value).
//!
//! Random choices come from `FAULTS_SEED` (`FUZZ_SEED` for the fuzzer),
//! printed so a failure can be replayed. Not part of `cargo test --tests`
//! (`test = false` in Cargo.toml): run with `cargo test --test faults`.
#[path = "../common/mod.rs"]
mod common;

mod churn;
mod corrupt;
mod crash;
mod defrag_moves;
mod failover;
mod fuzz;
mod keyspace;
mod memory;
mod panics;
mod planned_failover;
mod reshard;
mod slot_migration;

use common::families::{Family, Reclaim, FAMILIES};
use common::*;
use redis::{Connection, Value};
use std::collections::BTreeMap;

/// The family whose workload key prefix `key` has (`None` for other keys).
fn family_of(key: &[u8]) -> Option<&'static Family> {
    FAMILIES
        .iter()
        .find(|f| key.starts_with(f.prefix().as_bytes()))
}

/// Every key of db 0 with what must stay equal on another server holding
/// the same data: its type, absolute expiry and DUMP payload (every type's
/// encoding is a function of its content).
fn content(c: &mut Connection) -> BTreeMap<Vec<u8>, KeyDump> {
    dump_all(c)
}

fn is_module_type(kind: &str) -> bool {
    !["string", "list", "set", "zset", "hash", "stream"].contains(&kind)
}

/// Panics naming each key whose [`content`] differs.
fn assert_same_content(a: &BTreeMap<Vec<u8>, KeyDump>, b: &BTreeMap<Vec<u8>, KeyDump>, what: &str) {
    let mut diff = String::new();
    for key in a.keys().chain(b.keys()) {
        if a.get(key) != b.get(key) {
            diff += &format!(
                "key {:?}:\n  left:  {:?}\n  right: {:?}\n",
                String::from_utf8_lossy(key),
                a.get(key),
                b.get(key)
            );
        }
    }
    assert!(diff.is_empty(), "{what}: data differs:\n{diff}");
}

/// `DUMP key` (nil for a missing key).
fn dump(c: &mut Connection, key: &str) -> Option<Vec<u8>> {
    q(c, &["DUMP", key])
}

/// The commands that create `key` holding `per_due` items due at each of
/// `dues` (Unix ms).
fn expiring_items(reclaim: &Reclaim, key: &str, per_due: usize, dues: &[i64]) -> Vec<redis::Cmd> {
    let mut cmds = (reclaim.create)(key);
    for &due in dues {
        cmds.extend((reclaim.expiring)(key, per_due, due));
    }
    cmds
}

/// Runs every command, panicking on an error reply.
fn run_all(c: &mut Connection, cmds: &[redis::Cmd]) {
    let mut p = redis::pipe();
    for k in cmds {
        p.add_command(k.clone()).ignore();
    }
    let _: Value = p
        .query(c)
        .unwrap_or_else(|e| panic!("{} commands: {}", cmds.len(), err_text(&e)));
}

/// What proves the server did not crash or panic: none of the lines a Rust
/// panic or a Redis crash report writes to its log.
fn assert_no_crash(log: &str, what: &str) {
    for sign in ["panic", "crashed by signal", "BUG REPORT"] {
        assert!(
            !log.contains(sign),
            "{what}: the log shows {sign:?}:\n{log}"
        );
    }
}
