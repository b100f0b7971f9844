//! Where a value of ours went when it left its name. The type's own
//! callbacks tell us, and they run only for our values, so keys of other
//! types pay nothing (no keyspace-event subscription):
//!
//! - `unlink2` (DEL, UNLINK, expiry, eviction, an overwrite, the source of
//!   RENAME and MOVE) gives the name and db the value leaves; its schedule
//!   entries go with it ([`unlinked`]), and the value is remembered if it had
//!   any. When the value makes way for one just loaded or copied under the
//!   same name (RESTORE or COPY ... REPLACE), the entries are the new one's
//!   and stay.
//! - `free` follows for a value that was deleted, at once or on the lazyfree
//!   thread ([`freed`]): it is forgotten.
//! - `copy2` gives the copy's name and db (`reclaim::schedule_copy`).
//! - A value a load scheduled and then freed before it was stored (`RESTORE`
//!   with a past expiry, an expired key in an RDB) takes its entries out
//!   again ([`loaded`], [`freed`]).
//!
//! A value unlinked and not freed lives on elsewhere: the next timer steps
//! look for it, a bounded batch at a time: under the name it left (renamed
//! back), then the same name in the other dbs (MOVE), then, since no callback
//! names a RENAME's new name, a SCAN of its db, a bounded step at a time, that
//! ends when it finds the value or after a whole pass (the value was freed
//! meanwhile). What is found is scheduled again under its new name.
//! Only renames and moves of our keys cost a search.
//!
//! The schedules are `reclaim`'s, which uses this file: its caller passes how
//! to take a name's entries out and how to schedule a name again (`forget`,
//! `follow`), so nothing here uses `reclaim` back.

use super::api::{api, copy_of, RStr};
use super::ctx::Ctx;
use redis_module::raw;
use std::collections::HashSet;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// A value of ours that left `name` of `db` with work scheduled there.
struct Unlinked {
    db: i32,
    name: Vec<u8>,
    /// The value's address; the entry goes when the value is freed.
    value: usize,
}

/// A SCAN of one db for values renamed there.
struct Search {
    db: i32,
    cursor: Cursor,
    /// The values looked for, each with the pass it joined in: a value is
    /// given up once a whole pass that started after it joined ends.
    wanted: Vec<(usize, u32)>,
    pass: u32,
}

/// A Redis scan cursor, only ever used on Redis' main thread.
struct Cursor(*mut raw::RedisModuleScanCursor);
// Sound: the cursor is created, used and destroyed on the main thread; the
// lock only makes the static declarable.
unsafe impl Send for Cursor {}

impl Drop for Cursor {
    fn drop(&mut self) {
        api!(RedisModule_ScanCursorDestroy(self.0));
    }
}

struct State {
    /// The value a load or a copy scheduled last, until it is stored (it is
    /// unlinked later, or the next load or timer step comes) or dropped
    /// unstored (freed first: `RESTORE` with a past expiry, an expired key in
    /// an RDB).
    loaded: Option<(usize, i32, Vec<u8>)>,
    unlinked: Vec<Unlinked>,
    /// Values renamed in a db other than the searched one, with their db:
    /// they join the search of their db when the current one ends.
    waiting: Vec<(i32, usize)>,
    search: Option<Search>,
}

impl State {
    /// Whether `free` has anything to look at (kept in [`WATCHING`]).
    fn watching(&self) -> bool {
        self.search.is_some()
            || self.loaded.is_some()
            || !self.waiting.is_empty()
            || !self.unlinked.is_empty()
    }
}

static STATE: Mutex<State> = Mutex::new(State {
    loaded: None,
    unlinked: Vec::new(),
    waiting: Vec::new(),
    search: None,
});

/// False while no value is being followed: `free` then takes no lock.
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Never held across a call into Redis.
fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn update_watching(st: &State) {
    WATCHING.store(st.watching(), Ordering::Release);
}

/// Schedules what the key `name` of db `db` owes, if it holds a value of
/// ours with background work, answering that value's address
/// (`reclaim::follow_at`).
pub type Follow = fn(Ctx, c_int, &[u8]) -> Option<usize>;

/// A load or a copy scheduled the value at `value` for the key `name` of `db`.
pub fn loaded(value: *const c_void, db: c_int, name: Vec<u8>) {
    let mut st = state();
    st.loaded = Some((value as usize, db, name));
    update_watching(&st);
}

/// `unlink2`: the value at `value` left the key `name` of `db`. Its entries
/// leave the schedules (`forget` takes them out, answering the name if it
/// had any); if it had any, it is followed.
pub fn unlinked(
    name: RStr,
    db: c_int,
    value: *const c_void,
    forget: impl FnOnce(c_int, RStr) -> Option<Vec<u8>>,
) {
    if WATCHING.load(Ordering::Acquire) {
        let mut st = state();
        st.loaded.take_if(|(v, _, _)| *v == value as usize);
        // The value making way for one just loaded or copied under its name
        // (RESTORE or COPY ... REPLACE): the entries are the new value's.
        let incoming = st
            .loaded
            .as_ref()
            .is_some_and(|(_, d, n)| *d == db && *n == copy_of(name));
        update_watching(&st);
        if incoming {
            return;
        }
    }
    let Some(name) = forget(db, name) else {
        return;
    };
    let mut st = state();
    st.unlinked.push(Unlinked {
        db,
        name,
        value: value as usize,
    });
    update_watching(&st);
}

/// `free` (on the main or the lazyfree thread): the value at `value` was
/// deleted; it is followed no more. A value a load scheduled and that was
/// never stored takes its entries out again (`forget_loaded`).
pub fn freed(value: *const c_void, forget_loaded: impl FnOnce(c_int, &Vec<u8>)) {
    if !WATCHING.load(Ordering::Acquire) {
        return;
    }
    let value = value as usize;
    let mut st = state();
    if let Some((_, db, name)) = st.loaded.take_if(|(v, _, _)| *v == value) {
        update_watching(&st);
        drop(st);
        forget_loaded(db, &name);
        st = state();
    }
    st.unlinked.retain(|u| u.value != value);
    st.waiting.retain(|&(_, v)| v != value);
    if let Some(search) = &mut st.search {
        search.wanted.retain(|&(v, _)| v != value);
    }
    update_watching(&st);
}

/// SWAPDB: what is followed in one db is followed in the other.
pub fn swap_dbs(first: i32, second: i32) {
    let swap = |db: &mut i32| {
        if *db == first {
            *db = second;
        } else if *db == second {
            *db = first;
        }
    };
    let mut st = state();
    st.unlinked.iter_mut().for_each(|u| swap(&mut u.db));
    st.waiting.iter_mut().for_each(|(db, _)| swap(db));
    if let Some(search) = &mut st.search {
        swap(&mut search.db);
    }
}

/// FLUSHDB (`db`) or FLUSHALL (`None`): nothing of the flushed dbs is followed.
pub fn flushed(db: Option<i32>) {
    let hit = |d: i32| db.is_none_or(|db| db == d);
    let search = {
        let mut st = state();
        st.unlinked.retain(|u| !hit(u.db));
        st.waiting.retain(|&(d, _)| !hit(d));
        let search = st.search.take_if(|s| hit(s.db));
        update_watching(&st);
        search
    };
    // The cursor is destroyed outside the lock.
    drop(search);
}

/// `INFO recipes` gauge: values being followed (unlinked, not yet found or
/// freed).
pub fn followed() -> i64 {
    let st = state();
    let searched = st.search.as_ref().map_or(0, |s| s.wanted.len());
    (st.unlinked.len() + st.waiting.len() + searched) as i64
}

/// Whether following needs the timer again soon.
pub fn busy() -> bool {
    let st = state();
    st.search.is_some() || !st.waiting.is_empty() || !st.unlinked.is_empty()
}

/// Unlinked keys looked at in one timer step (each one open of the name it
/// left, and for a value not freed the same name in each other db): the
/// step stays well under a millisecond; more waits for the next steps.
const BATCH: usize = 32;

/// One timer step: finds where unlinked values went (see the module doc),
/// then scans for renamed ones until `deadline`.
pub fn step(ctx: Ctx, deadline: Instant, follow: Follow) {
    let (pending, waiting) = {
        let mut st = state();
        st.loaded = None;
        let batch = st.unlinked.len().min(BATCH);
        let pending: Vec<Unlinked> = st.unlinked.drain(..batch).collect();
        if st.unlinked.is_empty() {
            // A burst of unlinks leaves no room held behind it.
            st.unlinked = Vec::new();
        }
        (pending, std::mem::take(&mut st.waiting))
    };
    // The names left: taken again by a value of ours, or by this one.
    let mut found = HashSet::new();
    for u in &pending {
        if let Some(value) = follow(ctx, u.db, &u.name) {
            found.insert(value);
        }
    }
    let mut lost = waiting;
    for u in pending {
        let value = u.value;
        if found.contains(&value) {
            continue;
        }
        // MOVE: the same name in another db.
        let moved = (0..)
            .filter(|&db| db != u.db)
            .map_while(|db| select(ctx, db).then_some(db))
            .any(|db| follow(ctx, db, &u.name) == Some(value));
        if !moved {
            lost.push((u.db, value));
        }
    }
    let mut st = state();
    search_for(&mut st, lost, &found);
    update_watching(&st);
    drop(st);
    scan(ctx, deadline, follow);
}

/// Adds renamed values to the search of their db; one db is searched at a
/// time, a value of another db waits for it to end.
fn search_for(st: &mut State, lost: Vec<(i32, usize)>, found: &HashSet<usize>) {
    if let Some(search) = &mut st.search {
        search.wanted.retain(|(v, _)| !found.contains(v));
    }
    for (db, value) in lost.into_iter().filter(|(_, v)| !found.contains(v)) {
        let search = st.search.get_or_insert_with(|| Search {
            db,
            cursor: Cursor(api!(RedisModule_ScanCursorCreate())),
            wanted: Vec::new(),
            pass: 0,
        });
        if search.db == db {
            let pass = search.pass;
            search.wanted.push((value, pass));
        } else {
            st.waiting.push((db, value));
        }
    }
}

fn select(ctx: Ctx, db: i32) -> bool {
    api!(RedisModule_SelectDb(ctx.0, db)) == raw::REDISMODULE_OK as c_int
}

/// What one SCAN step collects.
struct ScanStep {
    wanted: HashSet<usize>,
    found: Vec<Vec<u8>>,
}

/// Scans the searched db until `deadline`; schedules what it finds.
fn scan(ctx: Ctx, deadline: Instant, follow: Follow) {
    let (db, cursor, wanted) = {
        let st = state();
        let Some(search) = &st.search else {
            return;
        };
        let wanted = search.wanted.iter().map(|&(v, _)| v).collect();
        (search.db, search.cursor.0, wanted)
    };
    if !select(ctx, db) {
        state().search = None;
        return;
    }
    let mut found = ScanStep {
        wanted,
        found: Vec::new(),
    };
    let mut more = true;
    while more && !found.wanted.is_empty() && Instant::now() < deadline {
        // Sound: the cursor lives in the state until the search ends, which
        // only this step (on the same thread) or a flush ends; `found`
        // outlives the call.
        more = unsafe {
            raw::RedisModule_Scan.unwrap()(
                ctx.0,
                cursor,
                Some(on_scanned),
                (&mut found as *mut ScanStep).cast(),
            )
        } != 0;
    }
    let mut got = HashSet::new();
    for name in &found.found {
        got.extend(follow(ctx, db, name));
    }
    let finished = {
        let mut st = state();
        let Some(search) = &mut st.search else {
            return;
        };
        if search.db != db || search.cursor.0 != cursor {
            return;
        }
        search.wanted.retain(|(v, _)| !got.contains(v));
        if !more {
            // A pass ended: who was there all through it is not in this db.
            let pass = search.pass;
            search.wanted.retain(|&(_, joined)| joined == pass);
            search.pass += 1;
            api!(RedisModule_ScanCursorRestart(cursor));
        }
        let search = if search.wanted.is_empty() {
            st.search.take()
        } else {
            None
        };
        update_watching(&st);
        search
    };
    // The cursor is destroyed outside the lock.
    drop(finished);
}

extern "C" fn on_scanned(
    _ctx: *mut raw::RedisModuleCtx,
    name: RStr,
    key: *mut raw::RedisModuleKey,
    privdata: *mut c_void,
) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if key.is_null()
            || api!(RedisModule_KeyType(key)) != raw::REDISMODULE_KEYTYPE_MODULE as c_int
        {
            return;
        }
        let value = api!(RedisModule_ModuleTypeGetValue(key)) as usize;
        // Sound: `privdata` is the `ScanStep` that `scan` passed, alive
        // during the call that runs this callback.
        let step = unsafe { &mut *privdata.cast::<ScanStep>() };
        if step.wanted.contains(&value) {
            step.found.push(copy_of(name));
        }
    }));
}
