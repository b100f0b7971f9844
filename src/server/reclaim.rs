//! Background work inside module keys, a bounded amount at a time, from one
//! timer on every server. Two kinds:
//!
//! - Reclaim of expired items (ULIST values, HCOUNTER partitions): acts on
//!   the master only, and never while writes are paused (`CLIENT PAUSE
//!   WRITE`, FAILOVER, CLUSTER FAILOVER, Sentinel): the server must not
//!   propagate anything then, so the work waits for the pause to end. What it
//!   removes the family replicates as explicit commands, so replicas and the
//!   AOF follow and never delete anything by their own clock. A replica keeps
//!   its schedule, so a promoted replica goes on.
//! - Upkeep (`Reclaimer::everywhere`, TOPN's aging of buckets, HCOUNTER's
//!   teardown of removed partitions): internal state only, no content
//!   changes, nothing replicated. It runs on every server that is not
//!   loading, replicas included, and opens keys read-only, so a replica never
//!   deletes an expired key by its own clock.
//!
//! Which keys to visit: per db and kind, a schedule of key names by due time,
//! fed by the writes that give a key due work, by RDB/RESTORE loading (the key
//! name comes with the payload) and by COPY (the type's `copy2` names the
//! copy). The schedules hold only keys that exist: the type's `unlink2` takes
//! a key out when its value leaves it (deleted, expired, evicted, overwritten,
//! renamed or moved away), and `moved` finds a value that lives on under
//! another name or db; a flush (FLUSHDB/FLUSHALL, a full sync's emptying)
//! drops its dbs' schedules and SWAPDB swaps two dbs' (server events). These
//! callbacks run only for our values: keys of other types pay nothing. A key
//! whose value turned into another type's keeps no entry either (its old
//! value was unlinked). An entry belongs to a value (its identity,
//! `identity`; 0 from a command: the value under the name): a value loaded
//! or copied under a name before the one it replaces is unlinked keeps its
//! entries, and one freed unstored takes out only its own.
//!
//! A diskless `swapdb` load fills a temporary database beside the served one:
//! what its keys owe is kept apart and replaces the served schedules when the
//! load completes (dropped if it is aborted).

use super::api::{api, copy_of, free_string, new_string, RStr};
use super::ctx::Ctx;
use super::identity::{self, Id};
use super::key::{Key, KeyKind};
use super::slot_migration::{self, Change, SlotSet};
use super::{background_free, moved, timer};
use crate::args::printable;
use crate::tuples::expiry::Schedule;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// What the keys of one db owe.
#[derive(Default)]
struct Owed {
    /// Reclaim (run on the master only).
    reclaim: Schedule<Vec<u8>>,
    /// Upkeep (run on every server).
    upkeep: Schedule<Vec<u8>>,
}

impl Owed {
    fn kind(&mut self, everywhere: bool) -> &mut Schedule<Vec<u8>> {
        if everywhere {
            &mut self.upkeep
        } else {
            &mut self.reclaim
        }
    }

    fn is_empty(&self) -> bool {
        self.reclaim.is_empty() && self.upkeep.is_empty()
    }

    /// The key `name` holding the value `owner` owes what is given.
    fn schedule(&mut self, name: &[u8], owner: u64, reclaim: Option<i64>, upkeep: Option<i64>) {
        if let Some(due) = reclaim {
            self.reclaim.schedule(name.to_vec(), due, owner);
        }
        if let Some(due) = upkeep {
            self.upkeep.schedule(name.to_vec(), due, owner);
        }
    }

    /// Takes the entries of `name` out where `owned` says they are the
    /// leaving value's; true if any were.
    fn remove_if(&mut self, name: &Vec<u8>, owned: impl Fn(u64) -> bool) -> bool {
        let reclaim = self.reclaim.remove_if(name, &owned);
        let upkeep = self.upkeep.remove_if(name, &owned);
        reclaim || upkeep
    }
}

/// Every db's schedules, indexed by db number, and the db whose turn is
/// next: dbs are served in turn, one key each, so no db waits for another
/// db's work to be done.
#[derive(Default)]
struct Dbs(Vec<Owed>, usize);

impl Dbs {
    /// Db `db`'s schedules, about to take an entry.
    fn db(&mut self, db: i32) -> &mut Owed {
        let i = usize::try_from(db).unwrap_or(0);
        if self.0.len() <= i {
            self.0.resize_with(i + 1, Owed::default);
        }
        &mut self.0[i]
    }

    fn next_due(&self, everywhere: bool) -> Option<i64> {
        let due = |o: &Owed| {
            if everywhere {
                o.upkeep.next_due()
            } else {
                o.reclaim.next_due()
            }
        };
        self.0.iter().filter_map(due).min()
    }

    /// Pops one key due at `now` of the given kind, with its db, from the
    /// first db from the one whose turn it is; the turn passes to the next.
    fn pop_due(&mut self, everywhere: bool, now: i64) -> Option<(i32, Vec<u8>)> {
        let (n, turn) = (self.0.len(), self.1);
        (0..n).map(|i| (turn + i) % n).find_map(|db| {
            let name = self.0[db].kind(everywhere).pop_due(now, 1).pop()?;
            self.1 = db + 1;
            Some((db as i32, name))
        })
    }
}

/// Dropping the entries of keys in slots that left this node (an export
/// completed, an import aborted: `slot_migration`), a bounded step a tick.
/// Each report of slots gone is a trim of its own, walked once from db 0;
/// slots arriving again (an import started) leave every trim's set.
struct Trim {
    slots: SlotSet,
    /// Where the walk is: db, kind (false: reclaim, then true: upkeep), and
    /// the key to go on from.
    db: usize,
    upkeep: bool,
    from: Option<Vec<u8>>,
}

impl Trim {
    /// Walks up to `budget` entries; true once every db is done.
    fn step(&mut self, dbs: &mut Dbs, budget: usize) -> bool {
        let Some(owed) = dbs.0.get_mut(self.db) else {
            return true;
        };
        let slots = &self.slots;
        let from = self.from.take();
        self.from = owed
            .kind(self.upkeep)
            .retain_from(from.as_ref(), budget, |name| {
                !slots.contains(slot_migration::key_slot(name))
            });
        if self.from.is_none() {
            self.db += usize::from(self.upkeep);
            self.upkeep = !self.upkeep;
        }
        false
    }
}

struct State {
    /// The served databases.
    served: Dbs,
    /// A diskless `swapdb` load in progress: what its temporary db owes.
    loading: Option<Dbs>,
    /// What keys of that load owe when the server does not tell their db
    /// ([`LOAD_DB_UNKNOWN`]): placed when the load completes.
    placeless: Vec<Placeless>,
    /// Trims in the order their slots left; the first one walks.
    trims: Vec<Trim>,
}

/// A key loaded into a diskless load's temporary dbs, db not known.
struct Placeless {
    name: Vec<u8>,
    id: u64,
    reclaim: Option<i64>,
    upkeep: Option<i64>,
}

/// Redis 7.0 names db 0 for every key a diskless `swapdb` load reads into
/// its temporary dbs (`RedisModule_GetDbIdFromIO`; 7.2+ and Valkey give the
/// key's own db): there, such keys are found in their dbs when the load
/// completes, one open each for a key of db 0.
static LOAD_DB_UNKNOWN: AtomicBool = AtomicBool::new(false);

static STATE: Mutex<State> = Mutex::new(State {
    served: Dbs(Vec::new(), 0),
    loading: None,
    placeless: Vec::new(),
    trims: Vec::new(),
});

static RECLAIMERS: Mutex<Vec<&'static Reclaimer>> = Mutex::new(Vec::new());

/// The state, never held across a call into Redis (which may call back).
fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `INFO recipes` gauges: keys scheduled for reclaim and for upkeep, and
/// about the bytes the schedules hold, over every db (none when the state
/// is busy, e.g. in a crash report taken while it was held), then
/// following's figures (always there).
pub fn gauges() -> Vec<(&'static str, i64)> {
    let mut gauges = Vec::new();
    if let Ok(st) = STATE.try_lock() {
        let count = |f: fn(&Owed) -> usize| st.served.0.iter().map(f).sum::<usize>() as i64;
        gauges = vec![
            ("reclaim_scheduled_keys", count(|o| o.reclaim.len())),
            ("reclaim_upkeep_keys", count(|o| o.upkeep.len())),
            (
                "reclaim_schedule_bytes",
                count(|o| o.reclaim.heap_bytes() + o.upkeep.heap_bytes()),
            ),
        ];
    }
    gauges.extend(moved::gauges());
    gauges
}

/// Every schedule entry, `db kind name` a line in order (kind `reclaim` or
/// `upkeep`, the name printable), then `followed <n>`, `searched-for <n>`,
/// `slowest-follow-us <n>` and `busiest-search-slice-keys <n>`: the
/// test-only view (`test_view`).
pub fn listing() -> String {
    let mut out = String::new();
    {
        let st = state();
        for (db, owed) in st.served.0.iter().enumerate() {
            for (kind, schedule) in [("reclaim", &owed.reclaim), ("upkeep", &owed.upkeep)] {
                for (name, _) in schedule.entries() {
                    out += &format!("{db} {kind} {}\n", printable(name));
                }
            }
        }
    }
    let (followed, searched) = moved::followed();
    out += &format!("followed {followed}\n");
    out += &format!("searched-for {searched}\n");
    out += &format!("slowest-follow-us {}\n", moved::slowest_step_us());
    out += &format!(
        "busiest-search-slice-keys {}\n",
        moved::busiest_slice_keys()
    );
    out
}

/// Timer period with nothing due, on replicas, and while writes are paused.
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
        let mut all = RECLAIMERS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        all.push(reclaimer);
        all.len() == 1
    };
    if !first {
        return;
    }
    let events: [(u64, raw::RedisModuleEventCallback); 3] = [
        (raw::REDISMODULE_EVENT_SWAPDB, Some(on_swapdb)),
        (raw::REDISMODULE_EVENT_FLUSHDB, Some(on_flush)),
        (raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD, Some(on_async_load)),
    ];
    for (id, callback) in events {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        api!(RedisModule_SubscribeToServerEvent(ctx.0, event, callback));
    }
    let version = api!(RedisModule_GetServerVersion());
    LOAD_DB_UNKNOWN.store(version < 0x00_07_02_00, Ordering::Relaxed);
    timer::repeat(ctx, IDLE_MS, tick);
}

/// The key `name` of the calling command's db has an item due at `due`.
pub fn schedule(ctx: Ctx, name: RStr, due: i64) {
    schedule_kind(ctx, name, due, false);
}

/// The key `name` of the calling command's db has upkeep due at `due`.
pub fn schedule_upkeep(ctx: Ctx, name: RStr, due: i64) {
    schedule_kind(ctx, name, due, true);
}

fn schedule_kind(ctx: Ctx, name: RStr, due: i64, everywhere: bool) {
    let db = api!(RedisModule_GetSelectedDb(ctx.0));
    state()
        .served
        .db(db)
        .kind(everywhere)
        .schedule(copy_of(name), due, 0);
}

/// The key being loaded through `io` (RDB, RESTORE) with the value `id`
/// has items due at `reclaim_due` and upkeep at `upkeep_due`. If the load
/// then drops the value unstored (`RESTORE` with a past expiry, an expired
/// key in an RDB), `moved` takes its entries out again.
pub fn schedule_loaded(
    io: *mut raw::RedisModuleIO,
    id: Id,
    reclaim_due: Option<i64>,
    upkeep_due: Option<i64>,
) {
    if reclaim_due.is_none() && upkeep_due.is_none() {
        return;
    }
    let name = api!(RedisModule_GetKeyNameFromIO(io));
    if name.is_null() {
        return;
    }
    let db = api!(RedisModule_GetDbIdFromIO(io));
    let name = copy_of(name.cast_mut());
    let into_loading = {
        let mut st = state();
        let st = &mut *st;
        let into_loading = st.loading.is_some();
        if into_loading && LOAD_DB_UNKNOWN.load(Ordering::Relaxed) {
            st.placeless.push(Placeless {
                name: name.clone(),
                id,
                reclaim: reclaim_due,
                upkeep: upkeep_due,
            });
        } else {
            let owed = st.loading.as_mut().unwrap_or(&mut st.served).db(db);
            owed.schedule(&name, id, reclaim_due, upkeep_due);
        }
        into_loading
    };
    moved::loaded(id, db, name, into_loading);
}

/// The reclaimer of the key's type of the given kind (a type may have one
/// of each: reclaim on the master, upkeep everywhere).
fn reclaimer_of(key: &Key, everywhere: bool) -> Option<&'static Reclaimer> {
    if key.kind() != KeyKind::Module {
        return None;
    }
    RECLAIMERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .copied()
        .find(|r| r.everywhere == everywhere && key.holds(r.ty))
}

/// `unlink2`: the key `name` of db `db` lost its value of ours, `id`.
/// Takes the name's entries out unless another value owns them (one loaded
/// or copied under the name just before, by `RESTORE` or `COPY ...
/// REPLACE`); true if there were any of this one's.
pub fn forget(db: c_int, name: RStr, id: Id) -> bool {
    let mut st = state();
    let Some(owed) = usize::try_from(db)
        .ok()
        .and_then(|db| st.served.0.get_mut(db))
    else {
        return false;
    };
    if owed.is_empty() {
        return false;
    }
    owed.remove_if(&copy_of(name), |owner| owner == 0 || owner == id)
}

/// Active defrag moved the value of ours in the key `name` of db `db` from
/// `old` to `new`: the entries it owns (a load's or a copy's), and what
/// `moved` keeps about it, follow it.
pub fn value_moved(db: c_int, name: RStr, old: Id, new: Id) {
    {
        let mut st = state();
        let owed = usize::try_from(db)
            .ok()
            .and_then(|db| st.served.0.get_mut(db))
            .filter(|owed| !owed.is_empty());
        if let Some(owed) = owed {
            let name = copy_of(name);
            owed.reclaim.reown(&name, old, new);
            owed.upkeep.reown(&name, old, new);
        }
    }
    moved::value_moved(old, new);
}

/// A value a load scheduled was dropped unstored: its own entries go.
pub fn forget_loaded(loaded: &moved::Loaded) {
    let mut st = state();
    let st = &mut *st;
    st.placeless.retain(|p| p.id != loaded.id);
    let dbs = if loaded.into_loading {
        st.loading.as_mut()
    } else {
        Some(&mut st.served)
    };
    let owed = dbs.and_then(|dbs| dbs.0.get_mut(usize::try_from(loaded.db).ok()?));
    if let Some(owed) = owed {
        owed.remove_if(&loaded.name, |owner| owner == loaded.id);
    }
}

/// `copy2`: a copy of one of ours, `id`, with work due at `reclaim_due` /
/// `upkeep_due`, is being stored under `name` of db `db` (before the value
/// it replaces, if any, is unlinked: the entries are the copy's).
pub fn schedule_copy(
    db: c_int,
    name: RStr,
    id: Id,
    reclaim_due: Option<i64>,
    upkeep_due: Option<i64>,
) {
    if reclaim_due.is_none() && upkeep_due.is_none() {
        return;
    }
    let name = copy_of(name);
    state()
        .served
        .db(db)
        .schedule(&name, id, reclaim_due, upkeep_due);
}

/// Schedules what the key `name` of db `db` owes, if it holds our value
/// `id`. True if it holds it (`moved`).
pub fn follow_at(ctx: Ctx, db: c_int, name: &[u8], id: Id) -> bool {
    if api!(RedisModule_SelectDb(ctx.0, db)) != raw::REDISMODULE_OK as c_int {
        return false;
    }
    let name = new_string(name);
    let key = Key::open_quiet(ctx, name);
    let held = identity::value_in(key.raw()) == Some(id);
    if held {
        schedule_found(&key, db, id);
    }
    drop(key);
    api!(RedisModule_FreeString(std::ptr::null_mut(), name));
    held
}

/// A command met the value of ours `id`, followed, in `key`: where it is
/// now is known; it is scheduled there (`module_type`).
pub fn relearn(key: &Key, id: Id) {
    let (ctx, _) = key.opened_as();
    let db = api!(RedisModule_GetSelectedDb(ctx.0));
    schedule_found(key, db, id);
}

/// Schedules what the value of ours `id`, in `key` (of db `db`), owes there,
/// for that value, which is followed no more (first: reading what it owes
/// is a command's access, which asks whether it is followed).
fn schedule_found(key: &Key, db: c_int, id: Id) {
    moved::found(id);
    let due = |everywhere| reclaimer_of(key, everywhere).and_then(|r| (r.next_due)(key));
    let (reclaim_due, upkeep_due) = (due(false), due(true));
    if reclaim_due.is_some() || upkeep_due.is_some() {
        let (_, name) = key.opened_as();
        state()
            .served
            .db(db)
            .schedule(&copy_of(name), id, reclaim_due, upkeep_due);
    }
}

/// An `extern "C"` server-event callback whose body (given the subevent and
/// the event's data) runs behind a panic guard.
macro_rules! server_event {
    ($name:ident, |$ctx:ident, $subevent:ident, $data:ident| $body:block) => {
        extern "C" fn $name(
            $ctx: *mut raw::RedisModuleCtx,
            _eid: raw::RedisModuleEvent,
            $subevent: u64,
            $data: *mut c_void,
        ) {
            let _ = std::panic::catch_unwind(|| $body);
        }
    };
}

// SWAPDB: the two dbs trade their schedules.
server_event!(on_swapdb, |_ctx, _subevent, data| {
    // Sound: for SWAPDB Redis passes a `RedisModuleSwapDbInfo`.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    let mut st = state();
    let dbs = &mut st.served;
    dbs.db(info.dbnum_first.max(info.dbnum_second));
    dbs.0
        .swap(info.dbnum_first as usize, info.dbnum_second as usize);
    drop(st);
    moved::swap_dbs(info.dbnum_first, info.dbnum_second);
});

// FLUSHDB, FLUSHALL, a replica's emptying before a full sync: the flushed
// dbs owe nothing any more. Their schedules are dropped where the flush frees
// the keys: here for a synchronous flush, on the background thread for an
// asynchronous one.
server_event!(on_flush, |_ctx, subevent, data| {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_START {
        return;
    }
    // Sound: for FLUSHDB Redis passes a `RedisModuleFlushInfo`.
    let info = unsafe { &*data.cast::<raw::RedisModuleFlushInfo>() };
    let flushed: Vec<Owed> = {
        let mut st = state();
        let dbs = &mut st.served.0;
        match usize::try_from(info.dbnum) {
            Ok(db) if db < dbs.len() => vec![std::mem::take(&mut dbs[db])],
            Ok(_) => Vec::new(),
            Err(_) => std::mem::take(dbs),
        }
    };
    drop_where_flushed(flushed, info.sync != 0);
    moved::flushed((info.dbnum >= 0).then_some(info.dbnum));
});

fn drop_where_flushed<T: Send + 'static>(garbage: T, sync: bool) {
    if sync {
        drop(garbage);
    } else {
        background_free::drop_later(Box::new(garbage));
    }
}

// A diskless `swapdb` load: started, aborted (the served dbs stay), or
// completed (the loaded dbs are served from now on).
server_event!(on_async_load, |ctx, subevent, _data| {
    let (replaced, placeless) = {
        let mut st = state();
        let placeless = std::mem::take(&mut st.placeless);
        let replaced = match subevent {
            raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_STARTED => st.loading.replace(Dbs::default()),
            raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_ABORTED => st.loading.take(),
            raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_COMPLETED => {
                let loaded = st.loading.take().unwrap_or_default();
                Some(std::mem::replace(&mut st.served, loaded))
            }
            _ => None,
        };
        (replaced, placeless)
    };
    if let Some(dbs) = replaced {
        background_free::drop_later(Box::new(dbs.0));
    }
    if subevent == raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_COMPLETED {
        place(Ctx(ctx), placeless);
    }
    if subevent != raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_STARTED {
        moved::async_load_ended(subevent == raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_COMPLETED);
    }
});

/// Schedules each key a completed diskless load read with no db known, in
/// the db that holds its value (tried from db 0).
fn place(ctx: Ctx, placeless: Vec<Placeless>) {
    for p in placeless {
        let name = new_string(&p.name);
        let mut db = 0;
        while api!(RedisModule_SelectDb(ctx.0, db)) == raw::REDISMODULE_OK as c_int {
            let key = Key::open_quiet(ctx, name);
            let held = identity::value_in(key.raw()) == Some(p.id);
            drop(key);
            if held {
                (state().served.db(db)).schedule(&p.name, p.id, p.reclaim, p.upkeep);
                break;
            }
            db += 1;
        }
        free_string(name);
    }
}

/// Entries a tick checks while dropping those of slots that left.
const TRIM_STEP: usize = 2048;

/// Drops a bounded share of the entries of keys whose slots left this node;
/// true while more is left.
fn trim_step() -> bool {
    let changes = slot_migration::take_changes();
    let mut st = state();
    let st = &mut *st;
    for change in changes {
        match change {
            Change::Gone(slots) => {
                if st
                    .trims
                    .last()
                    .is_none_or(|t| t.db > 0 || t.upkeep || t.from.is_some())
                {
                    st.trims.push(Trim {
                        slots: SlotSet::new(),
                        db: 0,
                        upkeep: false,
                        from: None,
                    });
                }
                if let Some(trim) = st.trims.last_mut() {
                    trim.slots.set(slots, true);
                }
            }
            Change::Arriving(slots) => {
                st.trims.iter_mut().for_each(|t| t.slots.set(slots, false));
                st.trims.retain(|t| !t.slots.is_empty());
            }
        }
    }
    let Some(trim) = st.trims.first_mut() else {
        return false;
    };
    if trim.step(&mut st.served, TRIM_STEP) {
        st.trims.remove(0);
    }
    !st.trims.is_empty()
}

/// One timer step; returns the delay to the next.
fn tick(ctx: Ctx) -> i64 {
    let flags = api!(RedisModule_GetContextFlags(ctx.0)) as u32;
    if flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0 {
        return IDLE_MS;
    }
    let started = Instant::now();
    moved::step(ctx, follow_at);
    // A trim step, then the usual work: trimming never holds reclaim back.
    let trimming = trim_step();
    let now = ctx.now_ms();
    // Reclaim acts only on a master (replicas and AOF replays follow the
    // master's removals), and not while writes are paused: nothing may be
    // propagated then, and a failover may be under way.
    let master = flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0;
    let reclaiming = master && api!(RedisModule_AvoidReplicaTraffic()) == 0;
    if reclaiming {
        run(ctx, now, false, started + TICK_BUDGET);
    }
    let deadline = (started + TICK_BUDGET).max(Instant::now() + UPKEEP_MIN);
    run(ctx, now, true, deadline);
    let (reclaim_due, upkeep_due) = {
        let st = state();
        let reclaim = if reclaiming {
            st.served.next_due(false)
        } else {
            None
        };
        (reclaim, st.served.next_due(true))
    };
    let now = ctx.now_ms();
    let mut delay = if trimming { 0 } else { IDLE_MS };
    if let Some(following) = moved::delay(now) {
        delay = delay.min(following);
    }
    if let Some(due) = reclaim_due {
        delay = delay.min((due - now).clamp(1, IDLE_MS));
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
    delay
}

/// Visits keys with due work of one kind until `deadline`.
fn run(ctx: Ctx, now: i64, everywhere: bool, deadline: Instant) {
    while Instant::now() < deadline {
        let Some((db, name)) = state().served.pop_due(everywhere, now) else {
            return;
        };
        // A key arriving with slots being imported is not ours yet.
        if !everywhere && slot_migration::importing(&name) {
            state()
                .served
                .db(db)
                .reclaim
                .schedule(name, now + IDLE_MS, 0);
            continue;
        }
        if let Some(next) = visit(ctx, db, &name, now, everywhere, deadline) {
            state()
                .served
                .db(db)
                .kind(everywhere)
                .schedule(name, next, 0);
        }
    }
}

/// Does what is due in one key until `deadline`; returns when more is due.
/// Reclaim opens the key for writing; upkeep opens it read-only: nothing is
/// written, nothing replicated, and a replica does not delete it if its own
/// clock says it expired.
fn visit(
    ctx: Ctx,
    db: i32,
    name: &[u8],
    now: i64,
    everywhere: bool,
    deadline: Instant,
) -> Option<i64> {
    if api!(RedisModule_SelectDb(ctx.0, db)) != raw::REDISMODULE_OK as c_int {
        return None;
    }
    let name = new_string(name);
    let mut key = if everywhere {
        Key::open_quiet(ctx, name)
    } else {
        Key::open(ctx, name, true)
    };
    let next = reclaimer_of(&key, everywhere).and_then(|r| {
        while (r.reclaim)(ctx, &mut key, name, now, CHUNK) == CHUNK && Instant::now() < deadline {}
        (r.next_due)(&key)
    });
    drop(key);
    api!(RedisModule_FreeString(std::ptr::null_mut(), name));
    next
}
