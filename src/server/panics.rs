//! What a caught panic leaves behind. A panic is a bug of ours, caught so
//! that it never unwinds into Redis; this module makes sure that catching it
//! never leaves a broken file or a replica that differs from its master
//! without a word:
//!
//! - While saving: see `unsaved` (a marker in the value's place, named in
//!   the log, and what loading one does on a master and on a replica).
//! - In a write command, after it may have changed its key: a value of ours
//!   may be half-changed, so nothing reads it again: the key is deleted (the
//!   value marked poisoned (`identity`), and leaked by `free`, not freed
//!   through its invariants; its bytes counted in `INFO recipes`
//!   `panics_leaked_bytes`) and the master replicates the `DEL`, counted in
//!   `panics_write_keys_dropped`. A sorted set or list (RV, TL), sound after
//!   each Redis call, is replicated as the master holds it (`RESTORE ...
//!   REPLACE ABSTTL` from its `DUMP`, or `DEL` if it is gone). A key holding
//!   another module's value is left as it is: only our values are touched.
//!
//! Test-only fault injection: with `RECIPES_FAULT_PANIC_KEY=save:<name>` in
//! the server's environment, saving the value of key `<name>` panics; with
//! `write:<name>`, replicating an effect of a write to it does; with
//! `command:<name>`, a write command of ours on it does before it reads the
//! key, so the fault suite can show the above. Unset (as in production) each check is one load
//! of a static.

use super::api::{api, copy_of, free_string, new_string, RStr};
use super::ctx::{Arg, Ctx, Word};
use super::fault;
use super::key::{Key, KeyKind};
use super::{identity, unsaved};
use crate::stats::Stat;
use redis_module::raw;
use std::os::raw::c_int;

/// At module load: the test-only fault key.
pub fn init() {
    fault::init();
}

/// `INFO recipes`: keys of ours dropped after a write to them panicked.
static WRITE_DROPPED: Stat = Stat::new("panics_write_keys_dropped");
pub static STATS: &[&Stat] = &[
    &unsaved::DROPPED,
    &unsaved::REPLICA_LACKING,
    &WRITE_DROPPED,
    &LEAKED_BYTES,
];

/// At load: what a value that cannot be saved leaves behind is followed
/// (`unsaved`).
pub fn enable() {
    unsaved::enable();
}

/// `INFO recipes`: bytes of values left mid-change by a panic and leaked
/// (about: estimated as `MEMORY USAGE` does, from a few items).
static LEAKED_BYTES: Stat = Stat::new("panics_leaked_bytes");

/// `free` of a value a panic left mid-change (marked so): it is
/// leaked, one value a bug, not dropped through its possibly broken
/// invariants. `estimate` reads its size (and takes it out of the gauges
/// that count it); `at_least` is what is counted if that panics too.
pub fn leaked(at_least: usize, estimate: impl FnOnce() -> usize) {
    let bytes = std::panic::catch_unwind(std::panic::AssertUnwindSafe(estimate))
        .map_or(at_least, |b| b.max(at_least));
    LEAKED_BYTES.add(bytes as i64);
}

/// After a write command on `name` panicked. A value of ours may be
/// half-changed: it is never read again (no DUMP, no free through its
/// invariants): the key is deleted, on a replica or an AOF load too, and a
/// master replicates the `DEL`. A sorted set or list (RV, TL) is Redis' own,
/// sound after each call: replicas and the AOF get its state as the master
/// has it (`RESTORE ... REPLACE ABSTTL`, or `DEL` if it is gone).
pub fn resync_after_panic(ctx: Ctx, name: RStr) {
    let replaying = ctx.is_replicated_or_loading();
    let shown = String::from_utf8_lossy(&copy_of(name)).into_owned();
    let mut key = Key::open(ctx, name, true);
    let (kind, expire_at) = (key.kind(), key.expire_at());
    if kind == KeyKind::Module {
        let Some(id) = identity::value_in(key.raw()) else {
            // Another module's value: our command changed nothing in it.
            redis_module::logging::log_warning(format!(
                "recipes: a write to key \"{shown}\" panicked; the key holds another module's \
                 value, left as it is"
            ));
            return;
        };
        identity::poison(id);
        key.delete();
        drop(key);
        if !replaying {
            ctx.propagate(c"DEL", &[Arg::Str(name)]);
        }
        WRITE_DROPPED.add(1);
        redis_module::logging::log_warning(format!(
            "recipes: a write to key \"{shown}\" panicked; its value may be half-changed, so \
             the key was deleted (and DEL replicated) without reading the value"
        ));
        return;
    }
    drop(key);
    if replaying {
        return;
    }
    if kind != KeyKind::Empty {
        if let Some(payload) = dump(ctx, name) {
            let payload = new_string(&payload);
            ctx.propagate(
                c"RESTORE",
                &[
                    Arg::Str(name),
                    Arg::Int(expire_at.unwrap_or(0)),
                    Arg::Str(payload),
                    REPLACE.arg(),
                    ABSTTL.arg(),
                ],
            );
            free_string(payload);
            redis_module::logging::log_warning(format!(
                "recipes: a write to key \"{shown}\" panicked; its state was replicated as RESTORE"
            ));
            return;
        }
        Key::open(ctx, name, true).delete();
    }
    ctx.propagate(c"DEL", &[Arg::Str(name)]);
    redis_module::logging::log_warning(format!(
        "recipes: a write to key \"{shown}\" panicked and its value could not be dumped; \
         the key was deleted on the master and its replicas"
    ));
}

static REPLACE: Word = Word::new(c"REPLACE");
static ABSTTL: Word = Word::new(c"ABSTTL");

/// `DUMP name` through `RM_Call` (only on this rare path), unless the value
/// cannot be encoded.
fn dump(ctx: Ctx, name: RStr) -> Option<Vec<u8>> {
    // Sound: the format "s" takes one Redis string, which we pass.
    let reply =
        unsafe { raw::RedisModule_Call.unwrap()(ctx.0, c"DUMP".as_ptr(), c"s".as_ptr(), name) };
    if reply.is_null() {
        return None;
    }
    let payload = (api!(RedisModule_CallReplyType(reply))
        == raw::REDISMODULE_REPLY_STRING as c_int)
        .then(|| {
            let mut len = 0usize;
            let p = api!(RedisModule_CallReplyStringPtr(reply, &mut len));
            // Sound: the reply owns `len` bytes at `p` until it is freed below.
            unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }.to_vec()
        });
    api!(RedisModule_FreeCallReply(reply));
    payload
}
