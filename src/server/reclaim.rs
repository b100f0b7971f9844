//! Background work inside module keys, a bounded amount at a time, from one
//! timer on every server. Two kinds:
//!
//! - Reclaim of expired items (ULIST values, HCOUNTER partitions): acts on
//!   the master only. What it removes the family replicates as explicit
//!   commands, so replicas and the AOF follow and never delete anything by
//!   their own clock. A replica keeps its schedule, so a promoted replica goes
//!   on.
//! - Upkeep (`Reclaimer::everywhere`, TOPN's aging of buckets out of its
//!   running aggregate): internal state only, no content changes, nothing
//!   replicated. It runs on every server that is not loading, replicas
//!   included (each keeps its own reads cheap), and opens keys read-only, so a
//!   replica never deletes an expired key by its own clock.
//!
//! Which keys to visit: per kind, a schedule of (db, key name) by due time,
//! fed by the writes that give a key due work, by RDB/RESTORE loading (the key
//! name comes with the payload), and by the keyspace events that move a value
//! to another name or db (`rename_to`, `move_to`, `copy_to`, `restore`,
//! SWAPDB). An entry whose key is gone or changed is dropped when visited.

use super::{api, bytes_of, new_string, timer, Ctx, Key, KeyKind, RStr};
use crate::tuples::expiry::Schedule;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a family gives for its module type's background reclaim.
pub struct Reclaimer {
    pub ty: &'static RedisType,
    /// When the next item of the key's value (of type `ty`) is due.
    pub next_due: fn(&Key) -> Option<i64>,
    /// Removes up to `budget` items of the write-opened key due at `now`,
    /// replicates the removal and fires the family's event; returns how many
    /// it removed. For upkeep (`everywhere`): does up to `budget` units of
    /// internal work on the read-opened key at server time `now`, changing no
    /// content; returns the work done (`budget` when more may be left).
    pub reclaim: fn(Ctx, &mut Key, RStr, i64, usize) -> usize,
    /// `false`: reclaim, on the master only (see the module doc). `true`:
    /// upkeep, on every server; its keys are scheduled with
    /// [`schedule_upkeep`] / [`schedule_loaded_upkeep`].
    pub everywhere: bool,
}

/// A key of a db.
type DbKey = (i32, Vec<u8>);

struct State {
    /// Reclaim (master only).
    schedule: Schedule<DbKey>,
    /// Upkeep (every server).
    upkeep: Schedule<DbKey>,
    reclaimers: Vec<&'static Reclaimer>,
}

static STATE: Mutex<State> = Mutex::new(State {
    schedule: Schedule::new(),
    upkeep: Schedule::new(),
    reclaimers: Vec::new(),
});

/// The state, never held across a call into Redis (which may call back).
fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Timer period with nothing due (and on replicas).
const IDLE_MS: i64 = 100;
/// Work per timer tick: the server stays responsive between ticks.
const TICK_BUDGET: Duration = Duration::from_micros(500);
/// Items per reclaim call (one replicated command each).
const CHUNK: usize = 128;
/// Upkeep still gets this much of a tick whose reclaim used the whole budget.
const UPKEEP_MIN: Duration = Duration::from_micros(100);

/// Turns background reclaim on for `reclaimer`'s type (at module load).
pub fn enable(ctx: Ctx, reclaimer: &'static Reclaimer) {
    let first = {
        let mut st = state();
        st.reclaimers.push(reclaimer);
        st.reclaimers.len() == 1
    };
    if first {
        api!(RedisModule_SubscribeToKeyspaceEvents(
            ctx.0,
            raw::REDISMODULE_NOTIFY_GENERIC as c_int,
            Some(on_keyspace_event)
        ));
        let swapdb = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_SWAPDB,
            dataver: 1,
        };
        api!(RedisModule_SubscribeToServerEvent(
            ctx.0,
            swapdb,
            Some(on_swapdb)
        ));
        timer::after(ctx, IDLE_MS, tick);
    }
}

/// The key `name` of the calling command's db has an item due at `due`.
pub fn schedule(ctx: Ctx, name: RStr, due: i64) {
    let db = api!(RedisModule_GetSelectedDb(ctx.0));
    state()
        .schedule
        .schedule((db, bytes_of(name).to_vec()), due);
}

/// The key `name` of the calling command's db has upkeep due at `due`.
pub fn schedule_upkeep(ctx: Ctx, name: RStr, due: i64) {
    let db = api!(RedisModule_GetSelectedDb(ctx.0));
    state().upkeep.schedule((db, bytes_of(name).to_vec()), due);
}

/// The key being loaded through `io` (RDB, RESTORE) has an item due at `due`.
pub fn schedule_loaded(io: *mut raw::RedisModuleIO, due: i64) {
    if let Some(key) = loaded_key(io) {
        state().schedule.schedule(key, due);
    }
}

/// The key being loaded through `io` (RDB, RESTORE) has upkeep due at `due`.
pub fn schedule_loaded_upkeep(io: *mut raw::RedisModuleIO, due: i64) {
    if let Some(key) = loaded_key(io) {
        state().upkeep.schedule(key, due);
    }
}

fn loaded_key(io: *mut raw::RedisModuleIO) -> Option<DbKey> {
    let name = api!(RedisModule_GetKeyNameFromIO(io));
    if name.is_null() {
        return None;
    }
    let db = api!(RedisModule_GetDbIdFromIO(io));
    Some((db, bytes_of(name.cast_mut()).to_vec()))
}

/// The reclaimer of the key's type of the given kind (a type may have one
/// of each: reclaim on the master, upkeep everywhere).
fn reclaimer_of(key: &Key, everywhere: bool) -> Option<&'static Reclaimer> {
    if key.kind() != KeyKind::Module {
        return None;
    }
    let reclaimers = state().reclaimers.clone();
    reclaimers
        .into_iter()
        .find(|r| r.everywhere == everywhere && key.holds(r.ty))
}

/// A value arrived under a new name or db: schedule it there.
extern "C" fn on_keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    name: RStr,
) -> c_int {
    let _ = std::panic::catch_unwind(|| {
        // Sound: Redis passes a NUL-terminated event name.
        let event = unsafe { CStr::from_ptr(event) }.to_bytes();
        if !matches!(event, b"rename_to" | b"move_to" | b"copy_to" | b"restore") {
            return;
        }
        let ctx = Ctx(ctx);
        let key = Key::open(ctx, name, false);
        let due = |everywhere| reclaimer_of(&key, everywhere).and_then(|r| (r.next_due)(&key));
        let (reclaim_due, upkeep_due) = (due(false), due(true));
        drop(key);
        if let Some(due) = reclaim_due {
            schedule(ctx, name, due);
        }
        if let Some(due) = upkeep_due {
            schedule_upkeep(ctx, name, due);
        }
    });
    raw::REDISMODULE_OK as c_int
}

extern "C" fn on_swapdb(
    _ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    let _ = std::panic::catch_unwind(|| {
        // Sound: for SWAPDB Redis passes a `RedisModuleSwapDbInfo`.
        let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
        let (a, b) = (info.dbnum_first, info.dbnum_second);
        let swap = |(db, name): &DbKey| {
            let db = if *db == a {
                b
            } else if *db == b {
                a
            } else {
                *db
            };
            (db, name.clone())
        };
        let mut st = state();
        st.schedule.rekey(swap);
        st.upkeep.rekey(swap);
    });
}

fn tick(ctx: Ctx) {
    let mut delay = IDLE_MS;
    let flags = api!(RedisModule_GetContextFlags(ctx.0)) as u32;
    if flags & raw::REDISMODULE_CTX_FLAGS_LOADING == 0 {
        let started = Instant::now();
        let now = ctx.now_ms();
        // Reclaim acts only on a master: replicas and AOF replays follow the
        // master's removals.
        let master = flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0;
        if master {
            run(ctx, now, started);
        }
        let deadline = (started + TICK_BUDGET).max(Instant::now() + UPKEEP_MIN);
        run_upkeep(ctx, now, deadline);
        let (reclaim_due, upkeep_due) = {
            let st = state();
            let reclaim = if master { st.schedule.next_due() } else { None };
            (reclaim, st.upkeep.next_due())
        };
        let now = ctx.now_ms();
        if let Some(due) = reclaim_due {
            delay = (due - now).clamp(1, IDLE_MS);
        }
        if let Some(due) = upkeep_due {
            // Upkeep owed now goes on at the next pass of the event loop (clients are served
            // in between; each pass does a bounded step).
            let upkeep_delay = if due <= now {
                0
            } else {
                (due - now).clamp(1, IDLE_MS)
            };
            delay = delay.min(upkeep_delay);
        }
    }
    timer::after(ctx, delay, tick);
}

/// Visits due keys until the tick's budget is spent.
fn run(ctx: Ctx, now: i64, started: Instant) {
    while started.elapsed() < TICK_BUDGET {
        let due = state().schedule.pop_due(now, 1);
        let Some((db, name)) = due.into_iter().next() else {
            return;
        };
        if let Some(next) = visit(ctx, db, &name, now, started) {
            state().schedule.schedule((db, name), next);
        }
    }
}

/// Reclaims what is due in one key, within the tick's budget; returns when
/// its next item is due.
fn visit(ctx: Ctx, db: i32, name: &[u8], now: i64, started: Instant) -> Option<i64> {
    if api!(RedisModule_SelectDb(ctx.0, db)) != raw::REDISMODULE_OK as c_int {
        return None;
    }
    let name = new_string(name);
    let mut key = Key::open(ctx, name, true);
    let next = reclaimer_of(&key, false).and_then(|r| {
        while (r.reclaim)(ctx, &mut key, name, now, CHUNK) == CHUNK
            && started.elapsed() < TICK_BUDGET
        {}
        (r.next_due)(&key)
    });
    drop(key);
    api!(RedisModule_FreeString(std::ptr::null_mut(), name));
    next
}

/// Visits keys with due upkeep until `deadline`.
fn run_upkeep(ctx: Ctx, now: i64, deadline: Instant) {
    while Instant::now() < deadline {
        let due = state().upkeep.pop_due(now, 1);
        let Some((db, name)) = due.into_iter().next() else {
            return;
        };
        if let Some(next) = visit_upkeep(ctx, db, &name, now, deadline) {
            state().upkeep.schedule((db, name), next);
        }
    }
}

/// Does the upkeep due in one key until `deadline`; returns when more is due.
/// The key is opened read-only: nothing is written, nothing replicated, and a
/// replica does not delete it if its own clock says it expired.
fn visit_upkeep(ctx: Ctx, db: i32, name: &[u8], now: i64, deadline: Instant) -> Option<i64> {
    if api!(RedisModule_SelectDb(ctx.0, db)) != raw::REDISMODULE_OK as c_int {
        return None;
    }
    let name = new_string(name);
    let mut key = Key::open_quiet(ctx, name);
    let next = reclaimer_of(&key, true).and_then(|r| {
        while (r.reclaim)(ctx, &mut key, name, now, CHUNK) == CHUNK && Instant::now() < deadline {}
        (r.next_due)(&key)
    });
    drop(key);
    api!(RedisModule_FreeString(std::ptr::null_mut(), name));
    next
}
