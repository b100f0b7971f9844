//! A value whose encoding panics (a bug of ours) cannot be saved. What that
//! leaves behind, so that no save fails for it and nothing goes silent:
//!
//! - Saving it, in the server (`SAVE`, `SHUTDOWN`, `DEBUG RELOAD`, `DUMP`) or
//!   in a fork (`BGSAVE`, a full sync, the RDB part of an AOF rewrite),
//!   writes a marker in its place and logs its key: every other key is
//!   saved, and the save succeeds (a failed `BGSAVE` would stop the
//!   master's writes under `stop-writes-on-bgsave-error`, and no replica
//!   could ever full-sync). An AOF rewrite without its RDB part, which has
//!   no place for a marker, fails (the old AOF stays; writes go on).
//! - Loading a marker (a file, a full sync, diskless too) holds a
//!   placeholder in the key, logs it, and drops it once the load ends,
//!   counted in `INFO recipes` `panics_unsaved_keys_dropped` (a master
//!   replicates the `DEL`); every other key loads. `RESTORE` of such a
//!   `DUMP` payload is refused, naming why.
//! - A replica that drops such a key lacks a key its master may still hold:
//!   it says so in its log, naming the key, and counts it in
//!   `panics_replica_keys_lacking`. When the marker came from its own file
//!   (a restart, `DEBUG RELOAD`), its master's copy is likely sound, so it
//!   asks for a full resync (`REPLICAOF NO ONE`, then its master again, at
//!   the next turn of the event loop): it then holds the master's data, the
//!   key included. When it came from its master's sync, another full sync
//!   would only bring the marker again: the master's own log names the key,
//!   and deleting or rewriting the key there is the way back.

use super::api::{api, copy_of, free_string, new_string, RStr};
use super::ctx::{Arg, Ctx};
use super::identity::{self, Id};
use super::key::Key;
use crate::args::printable;
use crate::stats::Stat;
use redis_module::raw;
use std::ffi::{c_void, CStr, CString};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// What a save writes for a value whose encoding panicked: no encoding of
/// ours starts with a zero byte followed by this text.
pub const SAVE_PANICKED: &[u8] = b"\0recipes: this value's save panicked";

/// `INFO recipes`: keys dropped at load because their save had panicked.
pub static DROPPED: Stat = Stat::new("panics_unsaved_keys_dropped");
/// `INFO recipes`: of those, keys a replica dropped (its master may hold them).
pub static REPLICA_LACKING: Stat = Stat::new("panics_replica_keys_lacking");

static SERVER_PID: OnceLock<u32> = OnceLock::new();

/// A key a load filled with a placeholder for a marker: its db as the load
/// said (Redis 7.0 says 0 for every key of a diskless load), its name and
/// the placeholder's identity.
struct Placeholder {
    db: c_int,
    name: Vec<u8>,
    id: Id,
}

/// The placeholders of the load in progress: dropped when it ends.
static PLACEHOLDERS: Mutex<Vec<Placeholder>> = Mutex::new(Vec::new());
/// Whether the load that holds placeholders is a replica's sync from its
/// master (not its own file).
static LOADING_FROM_MASTER: AtomicBool = AtomicBool::new(false);
/// Whether loads are followed (from the first placeholder on).
static FOLLOWING_LOADS: AtomicBool = AtomicBool::new(false);

/// At module load: the server's pid (a save in another process is a
/// fork's).
pub fn enable() {
    let _ = SERVER_PID.set(std::process::id());
}

/// Follows the ends of loads from the first placeholder on, for good. Not
/// from module load: since Redis 7.2 the server walks every module's
/// subscriptions for each key it deletes, so each one costs plain keys,
/// and only a server that met a marker needs this one.
fn follow_loads(ctx: *mut raw::RedisModuleCtx) {
    if FOLLOWING_LOADS.swap(true, Ordering::Relaxed) {
        return;
    }
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_LOADING,
        dataver: 1,
    };
    api!(RedisModule_SubscribeToServerEvent(
        ctx,
        event,
        Some(on_loading)
    ));
}

/// A save's encoding of the key `name` (when the save names it) panicked
/// (the panic hook logged it): the marker to write instead, logged by name.
pub fn save_panicked(name: Option<&[u8]>) -> &'static [u8] {
    redis_module::logging::log_warning(format!(
        "recipes: key \"{}\" could not be saved (its encoding panicked, logged above): \
         written as a marker, so this save holds every other key, and a load of it \
         drops this one",
        name.map(printable).unwrap_or_default()
    ));
    SAVE_PANICKED
}

/// An AOF rewrite's commands for the key `name` panicked: no marker fits
/// an AOF, so a rewrite in a fork fails (the old AOF stays); in the server
/// (none rewrites there) nothing is written for it.
pub fn rewrite_panicked(name: &[u8]) {
    redis_module::logging::log_warning(format!(
        "recipes: key \"{}\" could not be rewritten to the AOF (its encoding panicked, \
         logged above): failing this rewrite, the old AOF stays",
        printable(name)
    ));
    if SERVER_PID
        .get()
        .is_some_and(|&pid| pid != std::process::id())
    {
        // Sound: signalling our own process. SIGKILL cannot be caught: the
        // child ends here, and its parent sees a rewrite ended by a signal.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}

/// A marker is being loaded through `io` into a placeholder of identity
/// `id`: while a file or a sync loads, the key is remembered for dropping
/// (true); otherwise (`RESTORE`) the caller refuses the payload (false).
pub fn marker_loaded(io: *mut raw::RedisModuleIO, id: Id) -> bool {
    let ctx = api!(RedisModule_GetContextFromIO(io));
    let flags = api!(RedisModule_GetContextFlags(ctx)) as u32;
    let loading = raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING;
    let name = api!(RedisModule_GetKeyNameFromIO(io));
    if flags & loading == 0 || name.is_null() {
        return false;
    }
    let name = copy_of(name.cast_mut());
    let db = api!(RedisModule_GetDbIdFromIO(io));
    let from_master = flags & raw::REDISMODULE_CTX_FLAGS_REPLICA_IS_TRANSFERRING != 0;
    LOADING_FROM_MASTER.store(from_master, Ordering::Relaxed);
    follow_loads(ctx);
    redis_module::logging::log_warning(format!(
        "recipes: key \"{}\" could not be saved (its encoding panicked, logged then); the \
         other keys load, and this one is dropped when the load ends",
        printable(&name)
    ));
    PLACEHOLDERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(Placeholder { db, name, id });
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
        let placeholders = std::mem::take(
            &mut *PLACEHOLDERS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        if subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED && !placeholders.is_empty() {
            drop_placeholders(Ctx(ctx), placeholders);
        }
    });
}

/// Deletes the placeholders (each in the db that holds it); a master
/// replicates each `DEL`, a replica says what it now lacks.
fn drop_placeholders(ctx: Ctx, placeholders: Vec<Placeholder>) {
    let flags = api!(RedisModule_GetContextFlags(ctx.0)) as u32;
    let master = flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0;
    let from_master = LOADING_FROM_MASTER.load(Ordering::Relaxed);
    for p in placeholders {
        let name = new_string(&p.name);
        let dbs = std::iter::once(p.db).chain((0..).filter(|&db| db != p.db));
        for db in dbs {
            if api!(RedisModule_SelectDb(ctx.0, db)) != raw::REDISMODULE_OK as c_int {
                break;
            }
            let mut key = Key::open(ctx, name, true);
            if identity::value_in(key.raw()) != Some(p.id) {
                continue;
            }
            key.delete();
            drop(key);
            DROPPED.add(1);
            if master {
                ctx.propagate(c"DEL", &[Arg::Str(name)]);
            } else {
                lacking(&p.name, db, from_master);
            }
            break;
        }
        free_string(name);
    }
    if !master && !from_master && flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER == 0 {
        api!(RedisModule_CreateTimer(
            ctx.0,
            1,
            Some(resync_with_master),
            std::ptr::null_mut()
        ));
    }
}

/// A replica dropped the key `name` of db `db`, which its master may hold.
fn lacking(name: &[u8], db: c_int, from_master: bool) {
    REPLICA_LACKING.add(1);
    let way_back = if from_master {
        "its master could not save it (the master's log names the key): delete or \
         rewrite it there"
    } else {
        "it came from this replica's own file: a full resync with the master follows \
         (in cluster mode, run CLUSTER REPLICATE <master-id> after REPLICAOF NO ONE, or \
         restart from an empty file)"
    };
    redis_module::logging::log_warning(format!(
        "recipes: this replica lacks key \"{}\" (db {db}), which its master may hold: its \
         value could not be saved; {way_back}",
        printable(name)
    ));
}

/// After a replica loaded its own file without keys it could not save: a
/// full resync brings its master's data, those keys included.
extern "C" fn resync_with_master(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        let ctx = Ctx(ctx);
        let flags = api!(RedisModule_GetContextFlags(ctx.0)) as u32;
        if flags & raw::REDISMODULE_CTX_FLAGS_SLAVE == 0 {
            return;
        }
        let Some((host, port)) = master_address(ctx) else {
            return;
        };
        // A new replication id, which its master does not know: the next
        // sync is a full one.
        call(ctx, &[c"NO", c"ONE"]);
        call(ctx, &[&host, &port]);
        redis_module::logging::log_warning(format!(
            "recipes: full resync with the master {}:{} requested (REPLICAOF NO ONE, then \
             REPLICAOF again), for keys this replica could not load",
            host.to_string_lossy(),
            port.to_string_lossy()
        ));
    });
}

/// `REPLICAOF <args>` through `RM_Call`.
fn call(ctx: Ctx, args: &[&CStr]) {
    let strings: Vec<RStr> = args.iter().map(|a| new_string(a.to_bytes())).collect();
    // Sound: the format "v" takes an array of Redis strings and its length.
    let reply = unsafe {
        raw::RedisModule_Call.unwrap()(
            ctx.0,
            c"REPLICAOF".as_ptr(),
            c"v".as_ptr(),
            strings.as_ptr(),
            strings.len(),
        )
    };
    if !reply.is_null() {
        api!(RedisModule_FreeCallReply(reply));
    }
    strings.into_iter().for_each(free_string);
}

/// The master's host and port (`INFO replication`).
fn master_address(ctx: Ctx) -> Option<(CString, CString)> {
    let info = api!(RedisModule_GetServerInfo(ctx.0, c"replication".as_ptr()));
    if info.is_null() {
        return None;
    }
    let field = |name: &CStr| {
        let value = api!(RedisModule_ServerInfoGetFieldC(info, name.as_ptr()));
        // Sound: a NUL-terminated string owned by `info`, copied before it is freed.
        (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) }.to_owned())
    };
    let address = field(c"master_host").zip(field(c"master_port"));
    api!(RedisModule_FreeServerInfo(ctx.0, info));
    address
}
