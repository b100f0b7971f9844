//! Where a value of ours went when it left its name with work owed there.
//! The type's own callbacks tell us, and they run only for our values, so
//! keys of other types pay nothing (no keyspace-event subscription); a
//! value is known by its tag's identity (`tag`), never by its address.
//!
//! - `unlink2` (DEL, UNLINK, expiry, eviction, an overwrite, the source of
//!   RENAME and MOVE) names the place the value leaves; its entries there
//!   leave the schedules ([`unlinked`]), and if it had any, it is *followed*:
//!   marked lost (its tag), with the places the command filter saw its name
//!   sent to as candidates (`sent`: RENAME's new name, MOVE's db), then the
//!   name it left (renamed back).
//! - `free` follows for a value that was deleted, at once or on the lazyfree
//!   thread ([`freed`]): it is followed no more.
//! - A value a load scheduled and then freed before it was stored (`RESTORE`
//!   with a past expiry, an expired key in an RDB) takes its own entries out
//!   again ([`loaded`], [`freed`]); entries of another value under that name
//!   (one written since) stay.
//!
//! The next timer step checks each followed value's candidates (one open
//! each): found, it is scheduled under its new name, O(1) for a rename or
//! a move. What no filter saw (an AOF load replays commands without
//! filters; a MULTI of more sends than `sent` keeps) is found, in order:
//! by any of our commands touching the value under its new name (the tag
//! says it is lost: `module_type`), by the same name in the other dbs (a
//! MOVE), a few opens a step, and at last by a search of every db for lost
//! values, a bounded slice a step within a budget of CPU time a second,
//! unbounded only once, in the first step after a load. What each costs and
//! how long a value may wait: docs/design.md.
//!
//! The schedules are `reclaim`'s, which uses this file: its caller passes how
//! to take entries out and how to schedule a value found (`forget`,
//! [`Follow`]), so nothing here uses `reclaim` back.

use super::api::{api, copy_of, RStr};
use super::ctx::Ctx;
use super::sent;
use super::tag::{self, Tag};
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A value of ours that left its name with work owed, not found since.
#[derive(Clone)]
struct Followed {
    id: u64,
    /// Where it was last known to be.
    db: i32,
    name: Vec<u8>,
    /// Places to check first, in order.
    candidates: Vec<(i32, Vec<u8>)>,
    /// The next db to probe for its name (a MOVE no filter saw); `None`
    /// before its candidates are checked.
    probe: Option<i32>,
    /// The search pass it joined, once its probe is done.
    joined: Option<u64>,
}

/// The value a load scheduled last, until it is stored or freed unstored.
pub struct Loaded {
    pub id: u64,
    pub db: i32,
    pub name: Vec<u8>,
    /// Loaded into a diskless load's temporary db (its entries are the
    /// load's, not the served dbs').
    pub into_loading: bool,
}

/// A search of every db, from db 0, for lost values.
struct Search {
    db: i32,
    cursor: Cursor,
    /// Passes started; values given up after a whole pass missed them.
    pass: u64,
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
    loaded: Option<Loaded>,
    followed: Vec<Followed>,
    search: Option<Search>,
    /// Searched passes so far (a search that ends keeps the count).
    passes: u64,
    /// The second the search budget is counted in, and what it used of it.
    second: i64,
    spent: Duration,
    /// A load ended since the last step: the next search may take a whole
    /// pass at once.
    after_load: bool,
    /// Values given up after a whole pass (`INFO recipes`).
    given_up: i64,
}

static STATE: Mutex<State> = Mutex::new(State {
    loaded: None,
    followed: Vec::new(),
    search: None,
    passes: 0,
    second: 0,
    spent: Duration::ZERO,
    after_load: false,
    given_up: 0,
});

/// The identity of [`State::loaded`] (0: none), so `free` takes no lock for
/// other values.
static LOADED_ID: AtomicU64 = AtomicU64::new(0);
/// Whether anything is followed: `free` of a lost value takes the lock only then.
static FOLLOWING: AtomicBool = AtomicBool::new(false);

/// Never held across a call into Redis (which may call back).
fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// After a change of the state: the flags `free` reads, and no room held
/// once nothing is followed (a burst of lazy frees can follow many values
/// at once).
fn update_flags(st: &mut State) {
    if st.followed.is_empty() && st.followed.capacity() > 0 {
        st.followed = Vec::new();
    }
    FOLLOWING.store(!st.followed.is_empty(), Ordering::Release);
    LOADED_ID.store(st.loaded.as_ref().map_or(0, |l| l.id), Ordering::Release);
}

/// Schedules what the value with identity `id` owes under the key `name`
/// of db `db`, if the key holds it; clears its lost mark. True if found
/// (`reclaim::follow_at`).
pub type Follow = fn(Ctx, c_int, &[u8], u64) -> bool;

/// A load scheduled the value with identity `id` for the key `name` of `db`.
pub fn loaded(id: u64, db: c_int, name: Vec<u8>, into_loading: bool) {
    let mut st = state();
    st.loaded = Some(Loaded {
        id,
        db,
        name,
        into_loading,
    });
    update_flags(&mut st);
}

/// `unlink2`: the value tagged `tag` left the key `name` of `db`. Its
/// entries there leave the schedules (`forget` takes those of the value's
/// identity out, true if there were any); if it had any, or was followed
/// already, it is followed from here.
pub fn unlinked(name: RStr, db: c_int, tag: &Tag, forget: impl FnOnce(c_int, RStr, u64) -> bool) {
    let id = tag.id();
    if LOADED_ID.load(Ordering::Acquire) == id {
        let mut st = state();
        st.loaded.take_if(|l| l.id == id);
        update_flags(&mut st);
    }
    if !forget(db, name, id) && !tag.is_lost() {
        return;
    }
    tag.set_lost(true);
    let name = copy_of(name);
    let mut candidates = sent::destinations(&name, db);
    candidates.push((db, name.clone()));
    let mut st = state();
    match st.followed.iter_mut().find(|f| f.id == id) {
        Some(f) => {
            f.db = db;
            f.name = name;
            f.candidates = candidates;
            f.probe = None;
            f.joined = None;
        }
        None => st.followed.push(Followed {
            id,
            db,
            name,
            candidates,
            probe: None,
            joined: None,
        }),
    }
    update_flags(&mut st);
}

/// `free` (on the main or the lazyfree thread): the value tagged `tag` was
/// deleted; it is followed no more. A value a load scheduled and that was
/// never stored takes its own entries out again (`forget_loaded`).
pub fn freed(tag: &Tag, forget_loaded: impl FnOnce(&Loaded)) {
    let id = tag.id();
    let was_loaded = LOADED_ID.load(Ordering::Acquire) == id;
    let lost = tag.is_lost() && FOLLOWING.load(Ordering::Acquire);
    if !was_loaded && !lost {
        return;
    }
    let loaded = {
        let mut st = state();
        let loaded = st.loaded.take_if(|l| l.id == id);
        st.followed.retain(|f| f.id != id);
        update_flags(&mut st);
        loaded
    };
    if let Some(loaded) = loaded {
        forget_loaded(&loaded);
    }
}

/// The value with identity `id` was found (scheduled where it is).
pub fn found(id: u64) {
    if !FOLLOWING.load(Ordering::Acquire) {
        return;
    }
    let mut st = state();
    st.followed.retain(|f| f.id != id);
    update_flags(&mut st);
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
    for f in &mut st.followed {
        swap(&mut f.db);
        f.candidates.iter_mut().for_each(|(db, _)| swap(db));
    }
    if let Some(loaded) = &mut st.loaded {
        swap(&mut loaded.db);
    }
}

/// FLUSHDB (`db`) or FLUSHALL (`None`): the value last loaded there is
/// gone, and a search of a flushed db starts that db again. Followed values
/// stay followed: one last seen there may have moved on since (a MOVE no
/// filter saw); those flushed are forgotten when freed.
pub fn flushed(db: Option<i32>) {
    let hit = |d: i32| db.is_none_or(|db| db == d);
    let search = {
        let mut st = state();
        st.loaded.take_if(|l| hit(l.db));
        let search = st.search.take_if(|s| hit(s.db));
        update_flags(&mut st);
        search
    };
    // The cursor is destroyed outside the lock.
    drop(search);
}

/// A diskless load's temporary db was dropped or became the served one:
/// a value loaded there is no longer one to forget on its own.
pub fn async_load_ended() {
    let mut st = state();
    st.loaded.take_if(|l| l.into_loading);
    update_flags(&mut st);
}

/// A load (RDB, AOF, a full sync) ended: lost values may be many (an AOF
/// replays renames without filters), so the next search takes a whole pass.
pub fn load_ended() {
    state().after_load = true;
}

/// `INFO recipes` gauges: values followed, and given up after a whole
/// search missed them (they keep their lost mark: a command finds them);
/// none when the state is busy (a crash report taken while it was held).
pub fn gauges() -> Vec<(&'static str, i64)> {
    let Ok(st) = STATE.try_lock() else {
        return Vec::new();
    };
    vec![
        ("reclaim_followed_keys", st.followed.len() as i64),
        ("reclaim_followed_given_up", st.given_up),
    ]
}

/// How many values are followed (the test-only view).
pub fn followed() -> usize {
    state().followed.len()
}

/// When the timer should come back for following: soon while candidates
/// wait to be checked, at its idle pace while only searching, never at 0 ms.
pub fn delay(idle_ms: i64) -> Option<i64> {
    let st = state();
    if st.followed.iter().any(|f| f.joined.is_none()) {
        Some(CHECK_MS)
    } else {
        (!st.followed.is_empty()).then_some(idle_ms)
    }
}

/// The timer's delay while candidates or probes wait.
const CHECK_MS: i64 = 10;
/// Values whose candidates or probe one step takes on.
const BATCH: usize = 32;
/// Time the search may take in one step, and in one second of steps: an
/// idle server's main thread stays within half a point of its own idle use
/// while a search runs (a pass over 2 million keys takes about 1.6 s of
/// it: about 5 minutes).
const SEARCH_STEP: Duration = Duration::from_micros(500);
const SEARCH_PER_SECOND: Duration = Duration::from_millis(5);

/// One timer step, on the main thread, not while loading: checks the
/// candidates of followed values and probes for moves until `deadline`,
/// then searches within its budget (see the module doc).
pub fn step(ctx: Ctx, deadline: Instant, follow: Follow) {
    // Copies: the lock is not held across the opens below.
    let work: Vec<Followed> = {
        let st = state();
        st.followed
            .iter()
            .filter(|f| f.joined.is_none())
            .take(BATCH)
            .cloned()
            .collect()
    };
    for Followed {
        id,
        name,
        candidates,
        probe,
        ..
    } in work
    {
        if Instant::now() >= deadline {
            break;
        }
        let outcome = match probe {
            None if candidates
                .iter()
                .any(|(db, name)| follow(ctx, *db, name, id)) =>
            {
                Probe::Found
            }
            None => Probe::From(0),
            Some(db) => probe_dbs(ctx, db, &name, id, deadline, follow),
        };
        let mut st = state();
        let Some(at) = st.followed.iter().position(|f| f.id == id) else {
            continue;
        };
        match outcome {
            Probe::Found => {
                st.followed.swap_remove(at);
            }
            Probe::From(db) => {
                st.followed[at].candidates.clear();
                st.followed[at].probe = Some(db);
            }
            Probe::Done => {
                // The first pass it is there for from the start.
                let pass = st.search.as_ref().map_or(st.passes, |s| s.pass) + 1;
                st.followed[at].joined = Some(pass);
            }
        }
        update_flags(&mut st);
    }
    search(ctx, follow);
}

/// Where a probe of a name in the other dbs stands.
enum Probe {
    Found,
    /// Go on from this db.
    From(i32),
    /// Every db probed: the value is searched for.
    Done,
}

/// Opens `name` in db `from` on until `deadline` (the dbs are as many as
/// `SELECT` takes): a MOVE that no filter saw.
fn probe_dbs(
    ctx: Ctx,
    from: i32,
    name: &[u8],
    id: u64,
    deadline: Instant,
    follow: Follow,
) -> Probe {
    let mut db = from;
    while select(ctx, db) {
        if Instant::now() >= deadline {
            return Probe::From(db);
        }
        if follow(ctx, db, name, id) {
            return Probe::Found;
        }
        db += 1;
    }
    Probe::Done
}

fn select(ctx: Ctx, db: i32) -> bool {
    api!(RedisModule_SelectDb(ctx.0, db)) == raw::REDISMODULE_OK as c_int
}

/// What one scan step collects: lost values of ours, by name and identity.
struct ScanStep {
    found: Vec<(Vec<u8>, u64)>,
}

/// A slice of the search for lost values that joined it, within the
/// budget; a whole pass at once after a load.
fn search(ctx: Ctx, follow: Follow) {
    let started = Instant::now();
    let (db, cursor, budget) = {
        let mut st = state();
        if !st.followed.iter().any(|f| f.joined.is_some()) {
            return;
        }
        let second = ctx.now_ms().div_euclid(1000);
        if second != st.second {
            st.second = second;
            st.spent = Duration::ZERO;
        }
        let budget = if std::mem::take(&mut st.after_load) {
            Duration::MAX
        } else {
            SEARCH_STEP.min(SEARCH_PER_SECOND.saturating_sub(st.spent))
        };
        if st.search.is_none() {
            st.passes += 1;
            let pass = st.passes;
            st.search = Some(Search {
                db: 0,
                cursor: Cursor(api!(RedisModule_ScanCursorCreate())),
                pass,
            });
        }
        let s = st.search.as_ref().expect("set above");
        (s.db, s.cursor.0, budget)
    };
    if budget.is_zero() {
        return;
    }
    let deadline = started.checked_add(budget);
    let mut step = ScanStep { found: Vec::new() };
    let mut db_done = !select(ctx, db);
    while !db_done && deadline.is_none_or(|d| Instant::now() < d) {
        // Sound: the cursor lives in the state until the search ends, which
        // only this step (on the same thread) or a flush ends, and a flush
        // cannot run during this loop; `step` outlives the call.
        db_done = unsafe {
            raw::RedisModule_Scan.unwrap()(
                ctx.0,
                cursor,
                Some(on_scanned),
                (&mut step as *mut ScanStep).cast(),
            )
        } == 0;
    }
    let found: Vec<u64> = (step.found.iter())
        .filter(|(name, id)| follow(ctx, db, name, *id))
        .map(|&(_, id)| id)
        .collect();
    let next_db = db_done && select(ctx, db + 1);
    let finished = {
        let mut st = state();
        st.spent += started.elapsed();
        st.followed.retain(|f| !found.contains(&f.id));
        let mut finished = None;
        if let Some(s) = st.search.as_mut().filter(|s| s.cursor.0 == cursor) {
            if next_db {
                s.db = db + 1;
                api!(RedisModule_ScanCursorRestart(cursor));
            } else if db_done {
                // A pass ended: who was there all through it is nowhere.
                let pass = s.pass;
                let before = st.followed.len();
                st.followed.retain(|f| f.joined.is_none_or(|j| j > pass));
                st.given_up += (before - st.followed.len()) as i64;
                finished = st.search.take();
            }
        }
        if !st.followed.iter().any(|f| f.joined.is_some()) {
            finished = finished.or_else(|| st.search.take());
        }
        update_flags(&mut st);
        finished
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
        let Some(tag) = tag::tag_in(key) else {
            return;
        };
        if !tag.is_lost() {
            return;
        }
        // Sound: `privdata` is the `ScanStep` that `search` passed, alive
        // during the call that runs this callback.
        let step = unsafe { &mut *privdata.cast::<ScanStep>() };
        step.found.push((copy_of(name), tag.id()));
    }));
}
