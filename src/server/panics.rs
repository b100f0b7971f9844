//! What a caught panic leaves behind. A panic is a bug of ours, caught so
//! that it never unwinds into Redis; this module makes sure that catching it
//! never leaves a broken file or a replica that differs from its master:
//!
//! - While saving (RDB, AOF rewrite, a replica's sync) in a child process:
//!   the child ends itself by SIGKILL, so Redis reports the save failed,
//!   removes its temp file and keeps the old one (`BGSAVE` then shows
//!   `rdb_last_bgsave_status:err`).
//! - While saving in the server itself (`SAVE`, `SHUTDOWN`, `DEBUG RELOAD`,
//!   `DUMP`), which a module cannot fail: the key is written as a marker and
//!   the panic is logged. A load never fails for a marker: loading a file
//!   (startup, `DEBUG RELOAD`, a full sync) holds a placeholder in the key,
//!   logs the key, and drops it once the load ends, counted in `INFO
//!   recipes` `panics_unsaved_keys_dropped` (and `DEL` replicated from a master);
//!   every other key of the file loads. `RESTORE` of such a `DUMP` payload is
//!   refused, naming why.
//! - In a write command, after it may have changed its key: a value of ours
//!   may be half-changed, so nothing reads it again: the key is deleted (the
//!   value leaked, not freed through its invariants) and the master
//!   replicates the `DEL`, counted in `INFO recipes` `panics_write_keys_dropped`.
//!   A sorted set or list (RV, TL), sound after each Redis call, is replicated
//!   as the master holds it (`RESTORE ... REPLACE ABSTTL` from its `DUMP`, or
//!   `DEL` if it is gone).
//!
//! Test-only fault injection: with `RECIPES_FAULT_PANIC_KEY=save:<name>` in
//! the server's environment, saving the value of key `<name>` panics; with
//! `write:<name>`, replicating an effect of a write to it does, so the fault
//! suite can show the above. Unset (as in production) each check is one load
//! of a static.

use super::api::{api, copy_of, free_string, new_string, RStr};
use super::ctx::{Arg, Ctx, Word};
use super::fault;
use super::key::{Key, KeyKind};
use super::tag;
use crate::args::printable;
use crate::stats::Stat;
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::{Mutex, OnceLock};

/// What a save that panicked in the server writes for the key instead of its
/// value: no encoding of ours starts with a zero byte followed by this text.
pub const SAVE_PANICKED: &[u8] = b"\0recipes: this value's save panicked";

static SERVER_PID: OnceLock<u32> = OnceLock::new();

/// At module load: remembers the server's pid (a save in another process is
/// a fork's) and the test-only fault key.
pub fn init() {
    let _ = SERVER_PID.set(std::process::id());
    fault::init();
}

/// Keys (db, name) a load filled with a placeholder for a marker: dropped
/// when the load ends.
static UNSAVED: Mutex<Vec<(c_int, Vec<u8>)>> = Mutex::new(Vec::new());

/// `INFO recipes`: keys dropped at load because their save had panicked.
static UNSAVED_DROPPED: Stat = Stat::new("panics_unsaved_keys_dropped");
/// `INFO recipes`: keys of ours dropped after a write to them panicked.
static WRITE_DROPPED: Stat = Stat::new("panics_write_keys_dropped");
pub static STATS: &[&Stat] = &[&UNSAVED_DROPPED, &WRITE_DROPPED, &LEAKED_BYTES];

/// At load: drops the placeholders of unsaved keys when a load ends.
pub fn enable(ctx: Ctx) {
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_LOADING,
        dataver: 1,
    };
    api!(RedisModule_SubscribeToServerEvent(
        ctx.0,
        event,
        Some(on_loading)
    ));
}

/// A marker is being loaded through `io`: while a file loads, the key is
/// remembered for dropping and the caller holds a placeholder in it (true);
/// otherwise (`RESTORE`) the caller refuses the payload (false).
pub fn marker_loaded(io: *mut raw::RedisModuleIO) -> bool {
    let ctx = api!(RedisModule_GetContextFromIO(io));
    let flags = api!(RedisModule_GetContextFlags(ctx)) as u32;
    let name = api!(RedisModule_GetKeyNameFromIO(io));
    if flags & raw::REDISMODULE_CTX_FLAGS_LOADING == 0 || name.is_null() {
        return false;
    }
    let name = copy_of(name.cast_mut());
    let db = api!(RedisModule_GetDbIdFromIO(io));
    redis_module::logging::log_warning(format!(
        "recipes: key \"{}\" (db {db}) could not be saved (its encoding panicked, logged \
         then); the other keys load, and this one is dropped when the load ends",
        printable(&name)
    ));
    UNSAVED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push((db, name));
    true
}

extern "C" fn on_loading(
    ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        if subevent != raw::REDISMODULE_SUBEVENT_LOADING_ENDED
            && subevent != raw::REDISMODULE_SUBEVENT_LOADING_FAILED
        {
            return;
        }
        super::moved::load_ended();
        let unsaved = std::mem::take(
            &mut *UNSAVED
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        if subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED {
            drop_unsaved(Ctx(ctx), unsaved);
        }
    });
}

/// Deletes the placeholders; a master replicates each `DEL`.
fn drop_unsaved(ctx: Ctx, unsaved: Vec<(c_int, Vec<u8>)>) {
    let flags = api!(RedisModule_GetContextFlags(ctx.0)) as u32;
    let master = flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0;
    for (db, name) in unsaved {
        if api!(RedisModule_SelectDb(ctx.0, db)) != raw::REDISMODULE_OK as c_int {
            continue;
        }
        let name = new_string(&name);
        let mut key = Key::open(ctx, name, true);
        if key.kind() == KeyKind::Module {
            key.delete();
            drop(key);
            if master {
                ctx.propagate(c"DEL", &[Arg::Str(name)]);
            }
            UNSAVED_DROPPED.add(1);
        }
        free_string(name);
    }
}

/// A save's encoding panicked: in a forked child, fail the whole save; in the
/// server, answer the marker to write instead.
pub fn save_panicked() -> &'static [u8] {
    if SERVER_PID
        .get()
        .is_some_and(|&pid| pid != std::process::id())
    {
        redis_module::logging::log_warning(
            "recipes: a value could not be encoded (panic above); failing this save, the old file stays",
        );
        // Sound: signalling our own process. SIGKILL cannot be caught: the
        // child ends here, and its parent sees a save ended by a signal.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    SAVE_PANICKED
}

/// `INFO recipes`: bytes of values left mid-change by a panic and leaked
/// (about: estimated as `MEMORY USAGE` does, from a few items).
static LEAKED_BYTES: Stat = Stat::new("panics_leaked_bytes");

/// `free` of a value a panic left mid-change (its tag says so): it is
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
        // Another module's value: our command changed nothing in it.
        let Some(tag) = tag::tag_in(key.raw()) else {
            return;
        };
        tag.poison();
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
