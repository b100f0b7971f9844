//! Where a value of ours went when it left its name with work owed there.
//! The type's own callbacks tell us what they can, and they run only for
//! our values, so keys of other types pay nothing: no command filter, no
//! keyspace-event subscription. A value is known by its identity
//! (`identity`).
//!
//! - `unlink2` (DEL, UNLINK, expiry, eviction, an overwrite, the source of
//!   RENAME and MOVE) names the place a value leaves, never where it goes;
//!   its entries there leave the schedules ([`unlinked`]), and if it had
//!   any, or was followed already, it is *followed*: kept by identity with
//!   the db and name it left.
//! - `free` follows for a value that was deleted, at once or on the lazyfree
//!   thread ([`freed`]): following ends there, and only there.
//! - A value a load scheduled and then freed before it was stored (`RESTORE`
//!   with a past expiry, an expired key in an RDB) takes its own entries out
//!   again ([`loaded`], [`freed`]); entries of another value under that name
//!   (one written since) stay.
//!
//! A followed value is found, in order: by any of our commands that meets
//! it under its new name (`module_type` asks [`is_followed`] on every
//! access while anything is followed); by its name in every other db (a
//! MOVE; one open a db), a step after it left; else it is in the db it left
//! under a name nothing told (a RENAME): a search of that db alone finds
//! it. Every later move of the value is another `unlink2`, which starts
//! this again from the new place, so the search looks where the value is.
//!
//! The dbs are followed as *slots*, each one db's keys wherever `SWAPDB`
//! puts them (O(1) a swap, a search's cursor included); a flush starts a
//! new epoch of its slot, so values searched for there are known to be gone
//! (their `free` comes, maybe on the lazyfree thread), and a search of it
//! ends. A search that goes through a slot without finding a value that
//! was there all along counts it as missed and searches again: nothing is
//! ever given up while the value lives.
//!
//! The search is bounded in each step and in CPU time a second, and runs
//! only while a value is searched for. What each costs and how long a value
//! may wait: docs/design.md "Keys that move".
//!
//! The schedules are `reclaim`'s, which uses this file: its caller passes how
//! to take entries out and how to schedule a value found (`forget`,
//! [`Follow`]), so nothing here uses `reclaim` back.

use super::api::{api, copy_of, RStr};
use super::ctx::Ctx;
use super::identity::{self, Id};
use super::timer;
use redis_module::raw;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Where a followed value is looked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Its name in the other dbs (a MOVE), from this slot on.
    Probe { next: usize },
    /// In its slot under a name nothing told (a RENAME), searched for since
    /// `since` searches had started.
    Search { since: u64 },
    /// Gone with a flush of its slot (no probe found it elsewhere): its
    /// `free` is awaited.
    Flushed,
}

/// A value of ours that left its name with work owed, not found since.
struct Followed {
    /// The slot it left its name in, and that slot's epoch then.
    slot: usize,
    epoch: u64,
    /// The name it left.
    name: Vec<u8>,
    stage: Stage,
    /// Matches its entry in the probe queue (a value that moves again is
    /// queued again; the older entry is then stale).
    ticket: u64,
}

/// The value a load scheduled last, until it is stored or freed unstored.
pub struct Loaded {
    pub id: Id,
    pub db: i32,
    pub name: Vec<u8>,
    /// Loaded into a diskless load's temporary db (its entries are the
    /// load's, not the served dbs').
    pub into_loading: bool,
}

/// The dbs' keys by slot: slot `s` starts as db `s`, and SWAPDB trades two
/// dbs' slots.
#[derive(Default)]
struct Slots {
    db_of: Vec<i32>,
    of_db: Vec<usize>,
    /// Flushes of each slot so far.
    epoch: Vec<u64>,
    /// Values searched for in each slot (stage `Search`, of its epoch).
    waiting: Vec<usize>,
}

impl Slots {
    /// Room for dbs `0..dbs`.
    fn grow(&mut self, dbs: usize) {
        while self.db_of.len() < dbs {
            let n = self.db_of.len();
            self.db_of.push(n as i32);
            self.of_db.push(n);
            self.epoch.push(0);
            self.waiting.push(0);
        }
    }

    fn of(&mut self, db: i32) -> usize {
        let db = usize::try_from(db).unwrap_or(0);
        self.grow(db + 1);
        self.of_db[db]
    }

    fn swap(&mut self, a: i32, b: i32) {
        let (a, b) = (
            usize::try_from(a).unwrap_or(0),
            usize::try_from(b).unwrap_or(0),
        );
        self.grow(a.max(b) + 1);
        let (sa, sb) = (self.of_db[a], self.of_db[b]);
        self.of_db.swap(a, b);
        self.db_of[sa] = b as i32;
        self.db_of[sb] = a as i32;
    }

    fn flush(&mut self, slot: usize) {
        self.epoch[slot] += 1;
        self.waiting[slot] = 0;
    }
}

/// A search of one slot's keys for the values searched for there.
struct Search {
    slot: usize,
    cursor: Cursor,
    /// Its number (searches started so far, itself included): values that
    /// joined before it were in its slot all through it.
    number: u64,
    /// Of those, how many are not found yet (missed if it ends with some).
    covered: usize,
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
    followed: HashMap<Id, Followed>,
    /// Values whose name waits to be probed in the other dbs, with tickets.
    probes: VecDeque<(Id, u64)>,
    next_ticket: u64,
    slots: Slots,
    /// The number of dbs, once a step counted them.
    dbs: Option<usize>,
    search: Option<Search>,
    /// Searches started so far.
    searches: u64,
    /// The slot whose turn to be searched is next.
    turn: usize,
    /// The second the budget is counted in, and the main thread's CPU time
    /// steps used of it.
    second: i64,
    spent: Duration,
    /// The most CPU time one step of following took, and the most keys a
    /// search looked at or opened between two reads of the clock (the
    /// test-only view).
    slowest: Duration,
    busiest_slice: u64,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| {
    Mutex::new(State {
        loaded: None,
        followed: HashMap::new(),
        probes: VecDeque::new(),
        next_ticket: 0,
        slots: Slots::default(),
        dbs: None,
        search: None,
        searches: 0,
        turn: 0,
        second: 0,
        spent: Duration::ZERO,
        slowest: Duration::ZERO,
        busiest_slice: 0,
    })
});

/// The identity of [`State::loaded`] (0: none), so `free` takes no lock for
/// other values.
static LOADED_ID: AtomicU64 = AtomicU64::new(0);
/// Whether anything is followed: commands and `free` take the lock only then.
static FOLLOWING: AtomicBool = AtomicBool::new(false);
/// `INFO recipes` figures, read without the lock (the lazyfree thread may
/// hold it a moment; a crash report may be taken while it is held): values
/// followed, kept as the state changes, and what the searches did.
static FOLLOWED_KEYS: AtomicU64 = AtomicU64::new(0);
static SEARCHED_KEYS: AtomicU64 = AtomicU64::new(0);
static SEARCH_PASSES: AtomicU64 = AtomicU64::new(0);
static SEARCH_MISSED: AtomicU64 = AtomicU64::new(0);

/// Never held across a call into Redis (which may call back).
fn state() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    /// After a change: the flags others read without the lock, and no room
    /// held once nothing is followed (a burst of lazy frees or an AOF of
    /// renames can follow many values at once).
    fn update_flags(&mut self) {
        if self.followed.is_empty() {
            if self.followed.capacity() > 0 {
                self.followed = HashMap::new();
            }
            if self.probes.capacity() > 0 {
                self.probes = VecDeque::new();
            }
        }
        FOLLOWING.store(!self.followed.is_empty(), Ordering::Release);
        FOLLOWED_KEYS.store(self.followed.len() as u64, Ordering::Relaxed);
        LOADED_ID.store(self.loaded.as_ref().map_or(0, |l| l.id), Ordering::Release);
    }

    /// Takes the value `id` out of following; its stage's counts with it.
    fn unfollow(&mut self, id: Id) -> Option<Followed> {
        let f = self.followed.remove(&id)?;
        if let Stage::Search { since } = f.stage {
            if self.slots.epoch[f.slot] == f.epoch {
                self.slots.waiting[f.slot] -= 1;
                if let Some(s) = self.search.as_mut() {
                    if s.slot == f.slot && since < s.number {
                        s.covered -= 1;
                    }
                }
            }
        }
        Some(f)
    }

    /// The search, once its slot has nothing left to find: ended.
    fn end_idle_search(&mut self) -> Option<Search> {
        let slots = &self.slots;
        self.search.take_if(|s| slots.waiting[s.slot] == 0)
    }
}

/// Schedules what the value with identity `id` owes under the key `name`
/// of db `db`, if the key holds it. True if found (`reclaim::follow_at`).
pub type Follow = fn(Ctx, c_int, &[u8], Id) -> bool;

/// A load scheduled the value with identity `id` for the key `name` of `db`.
pub fn loaded(id: Id, db: c_int, name: Vec<u8>, into_loading: bool) {
    let mut st = state();
    st.loaded = Some(Loaded {
        id,
        db,
        name,
        into_loading,
    });
    st.update_flags();
}

/// Whether the value `id` is followed: one atomic load while nothing is.
pub fn is_followed(id: Id) -> bool {
    FOLLOWING.load(Ordering::Acquire) && state().followed.contains_key(&id)
}

/// `unlink2`: the value `id` left the key `name` of `db`. Its entries there
/// leave the schedules (`forget` takes those of the value out, true if
/// there were any); if it had any, or was followed already, it is followed
/// from here: its name is probed in the other dbs at the next step.
pub fn unlinked(name: RStr, db: c_int, id: Id, forget: impl FnOnce(c_int, RStr, Id) -> bool) {
    if LOADED_ID.load(Ordering::Acquire) == id {
        let mut st = state();
        st.loaded.take_if(|l| l.id == id);
        st.update_flags();
    }
    if !forget(db, name, id) && !is_followed(id) {
        return;
    }
    let name = copy_of(name);
    let mut st = state();
    st.unfollow(id);
    let slot = st.slots.of(db);
    let ticket = st.next_ticket;
    st.next_ticket += 1;
    let followed = Followed {
        slot,
        epoch: st.slots.epoch[slot],
        name,
        stage: Stage::Probe { next: 0 },
        ticket,
    };
    st.followed.insert(id, followed);
    st.probes.push_back((id, ticket));
    st.update_flags();
}

/// `free` (on the main or the lazyfree thread), before the value's block
/// goes: the value `id` was deleted; it is followed no more. A value a
/// load scheduled and that was never stored takes its own entries out
/// again (`forget_loaded`).
pub fn freed(id: Id, forget_loaded: impl FnOnce(&Loaded)) {
    let was_loaded = LOADED_ID.load(Ordering::Acquire) == id;
    if !was_loaded && !FOLLOWING.load(Ordering::Acquire) {
        return;
    }
    let loaded = {
        let mut st = state();
        let loaded = st.loaded.take_if(|l| l.id == id);
        st.unfollow(id);
        st.update_flags();
        loaded
    };
    if let Some(loaded) = loaded {
        forget_loaded(&loaded);
    }
}

/// The value `id` was found (scheduled where it is).
pub fn found(id: Id) {
    if !FOLLOWING.load(Ordering::Acquire) {
        return;
    }
    let mut st = state();
    st.unfollow(id);
    st.update_flags();
}

/// Active defrag moved the value `old` to `new`: what is kept about it
/// follows.
pub fn value_moved(old: Id, new: Id) {
    let loaded = LOADED_ID.load(Ordering::Acquire) == old;
    if !loaded && !FOLLOWING.load(Ordering::Acquire) {
        return;
    }
    let mut st = state();
    if let Some(l) = st.loaded.as_mut().filter(|l| l.id == old) {
        l.id = new;
    }
    if let Some(f) = st.followed.remove(&old) {
        if matches!(f.stage, Stage::Probe { .. }) {
            st.probes.push_back((new, f.ticket));
        }
        st.followed.insert(new, f);
    }
    st.update_flags();
}

/// SWAPDB: the two dbs trade their keys, so their slots.
pub fn swap_dbs(first: i32, second: i32) {
    let swap = |db: &mut i32| {
        if *db == first {
            *db = second;
        } else if *db == second {
            *db = first;
        }
    };
    let mut st = state();
    st.slots.swap(first, second);
    if let Some(loaded) = &mut st.loaded {
        swap(&mut loaded.db);
    }
}

/// FLUSHDB (`db`) or FLUSHALL (`None`), also the emptying before a load or a
/// full sync: the keys there are gone (their values freed, maybe later on
/// the lazyfree thread), so the values searched for there are no more, and
/// a search of them ends. Values still to be probed may have moved on
/// before the flush (a MOVE): their probe says.
pub fn flushed(db: Option<i32>) {
    let search = {
        let mut st = state();
        let st = &mut *st;
        st.loaded.take_if(|l| db.is_none_or(|db| db == l.db));
        let hit: Vec<usize> = match db {
            Some(db) => vec![st.slots.of(db)],
            None => (0..st.slots.epoch.len()).collect(),
        };
        for &slot in &hit {
            st.slots.flush(slot);
        }
        let search = st.search.take_if(|s| hit.contains(&s.slot));
        st.update_flags();
        search
    };
    // The cursor is destroyed outside the lock.
    drop(search);
}

/// A diskless load's temporary db was dropped (`completed`: it became the
/// served one, whose old keys go as with a FLUSHALL): a value loaded there
/// is no longer one to forget on its own.
pub fn async_load_ended(completed: bool) {
    if completed {
        flushed(None);
    }
    let mut st = state();
    st.loaded.take_if(|l| l.into_loading);
    st.update_flags();
}

/// `INFO recipes` fields: values followed (gauge), and what the search did
/// (counters), always there.
pub fn gauges() -> Vec<(&'static str, i64)> {
    let read = |n: &AtomicU64| n.load(Ordering::Relaxed) as i64;
    vec![
        ("reclaim_followed_keys", read(&FOLLOWED_KEYS)),
        ("reclaim_searched_keys", read(&SEARCHED_KEYS)),
        ("reclaim_search_passes", read(&SEARCH_PASSES)),
        ("reclaim_search_missed", read(&SEARCH_MISSED)),
    ]
}

/// The most CPU time one step of following took, in microseconds (the
/// test-only view).
pub fn slowest_step_us() -> u64 {
    state().slowest.as_micros() as u64
}

/// The most keys a search looked at or opened between two reads of its
/// clock (the test-only view): a step can pass its budget by that much
/// work and no more. CPU time past it is the machine's (docs/design.md).
pub fn busiest_slice_keys() -> u64 {
    state().busiest_slice
}

/// Values followed, and of them those waiting for the search (the
/// test-only view).
pub fn followed() -> (usize, usize) {
    let st = state();
    (st.followed.len(), st.slots.waiting.iter().sum())
}

/// When the timer should come back for following (`now_ms`: the server's
/// clock): at once while a value waits for its probe or the search and this
/// second's budget lasts (steps back to back, clients served between them:
/// a search's slices then find the keys they look at warm in the caches),
/// at the next second once it is spent, never while nothing waits.
pub fn delay(now_ms: i64) -> Option<i64> {
    let st = state();
    if st.probes.is_empty() && !st.slots.waiting.iter().any(|&w| w > 0) {
        return None;
    }
    let spent = st.second == now_ms.div_euclid(1000) && st.spent + STEP_BUDGET / 8 >= PER_SECOND;
    Some(if spent {
        1000 - now_ms.rem_euclid(1000)
    } else {
        0
    })
}

/// Time following may take in one step (wall clock: what the step holds
/// the server for), and the main thread's CPU time its steps may take in
/// one second. With the event loop's turns between the steps (about 20
/// a second), the main thread spends at most 1% of a CPU more than idle,
/// and only while a value waits for its probe or the search. What a search
/// then looks at a second: docs/design.md.
const STEP_BUDGET: Duration = Duration::from_micros(350);
const PER_SECOND: Duration = Duration::from_micros(7_500);

/// One timer step, on the main thread, not while loading: probes names,
/// then searches, within the budget (see the module doc).
pub fn step(ctx: Ctx, follow: Follow) {
    let started = Instant::now();
    let budget = {
        let mut st = state();
        if st.probes.is_empty() && st.search.is_none() && !st.slots.waiting.iter().any(|&w| w > 0) {
            return;
        }
        if st.dbs.is_none() {
            let dbs = count_dbs(ctx);
            st.slots.grow(dbs);
            st.dbs = Some(dbs);
        }
        let second = ctx.now_ms().div_euclid(1000);
        if second != st.second {
            st.second = second;
            st.spent = Duration::ZERO;
        }
        STEP_BUDGET.min(PER_SECOND.saturating_sub(st.spent))
    };
    let cpu_started = timer::thread_cpu_us();
    if !budget.is_zero() {
        let deadline = started + budget;
        probe(ctx, deadline, follow);
        search(ctx, deadline, follow);
    }
    let used = Duration::from_micros(timer::thread_cpu_us().saturating_sub(cpu_started));
    let idle = {
        let mut st = state();
        st.spent += used;
        st.slowest = st.slowest.max(used);
        st.end_idle_search()
    };
    // The cursor is destroyed outside the lock.
    drop(idle);
}

/// How many dbs the server has (`databases`, fixed while it runs).
fn count_dbs(ctx: Ctx) -> usize {
    let mut n = 0;
    while select(ctx, n) {
        n += 1;
    }
    n as usize
}

fn select(ctx: Ctx, db: i32) -> bool {
    api!(RedisModule_SelectDb(ctx.0, db)) == raw::REDISMODULE_OK as c_int
}

/// Probes queued names in the other dbs until `deadline`: one open a db
/// with keys, resumed at the next step where the deadline stopped it.
fn probe(ctx: Ctx, deadline: Instant, follow: Follow) {
    while Instant::now() < deadline {
        // A copy: the lock is not held across the opens below.
        let (id, ticket, name, own, mut next, db_of) = {
            let mut st = state();
            let Some((id, ticket)) = st.probes.pop_front() else {
                return;
            };
            let Some(f) = st.followed.get(&id).filter(|f| f.ticket == ticket) else {
                continue;
            };
            let Stage::Probe { next } = f.stage else {
                continue;
            };
            let (name, slot) = (f.name.clone(), f.slot);
            (id, ticket, name, slot, next, st.slots.db_of.clone())
        };
        let mut found = false;
        while next < db_of.len() {
            if Instant::now() >= deadline {
                break;
            }
            // An empty db (most are, on most servers) costs no open.
            let db = db_of[next];
            if next != own
                && select(ctx, db)
                && api!(RedisModule_DbSize(ctx.0)) > 0
                && follow(ctx, db, &name, id)
            {
                found = true;
                break;
            }
            next += 1;
        }
        let mut st = state();
        let st = &mut *st;
        if found {
            st.unfollow(id);
        } else if let Some(f) = st.followed.get_mut(&id).filter(|f| f.ticket == ticket) {
            if next < db_of.len() {
                f.stage = Stage::Probe { next };
                st.probes.push_front((id, ticket));
            } else if st.slots.epoch[f.slot] == f.epoch {
                // Nowhere else: in its slot under another name.
                f.stage = Stage::Search { since: st.searches };
                st.slots.waiting[f.slot] += 1;
            } else {
                f.stage = Stage::Flushed;
            }
        }
        st.update_flags();
    }
}

/// Scan calls between two reads of the clock: a few microseconds of keys.
const SCANS_A_CLOCK_READ: usize = 8;

/// What a step's scan calls collect: values of ours followed, by name and
/// identity, and how many keys they looked at: in all, since the clock was
/// last read (a slice), and in the step's busiest slice.
struct ScanStep {
    found: Vec<(Vec<u8>, Id)>,
    looked: u64,
    slice: u64,
    busiest: u64,
}

/// Searches slots where values wait, one at a time, each from its start to
/// its end, until `deadline`.
fn search(ctx: Ctx, deadline: Instant, follow: Follow) {
    while Instant::now() < deadline {
        let Some((db, cursor)) = next_scan() else {
            return;
        };
        if !select(ctx, db) {
            return;
        }
        let mut step = ScanStep {
            found: Vec::new(),
            looked: 0,
            slice: 0,
            busiest: 0,
        };
        let mut done = false;
        while !done && step.found.is_empty() && Instant::now() < deadline {
            step.busiest = step.busiest.max(step.slice);
            step.slice = 0;
            // A scan call looks at one bucket of the db, about one key: the
            // clock is read every few calls, not every key.
            for _ in 0..SCANS_A_CLOCK_READ {
                // Sound: the cursor lives in the state until the search
                // ends, which only a step (this one) or a flush ends, and
                // neither runs during this call; `step` outlives the call.
                done = unsafe {
                    raw::RedisModule_Scan.unwrap()(
                        ctx.0,
                        cursor,
                        Some(on_scanned),
                        (&mut step as *mut ScanStep).cast(),
                    )
                } == 0;
                if done || !step.found.is_empty() {
                    break;
                }
            }
        }
        // The values found are opened in the slice that found them.
        for (name, id) in &step.found {
            if follow(ctx, db, name, *id) {
                found(*id);
            }
        }
        step.slice += step.found.len() as u64;
        let ended = {
            let mut st = state();
            let st = &mut *st;
            SEARCHED_KEYS.fetch_add(step.looked, Ordering::Relaxed);
            st.busiest_slice = st.busiest_slice.max(step.busiest.max(step.slice));
            let ended = st.search.take_if(|s| done && s.cursor.0 == cursor);
            if let Some(s) = &ended {
                SEARCH_PASSES.fetch_add(1, Ordering::Relaxed);
                SEARCH_MISSED.fetch_add(s.covered as u64, Ordering::Relaxed);
                st.turn = s.slot + 1;
            }
            ended
        };
        // The cursor is destroyed outside the lock.
        drop(ended);
    }
}

/// The db and cursor of the search to go on with: the one under way, unless
/// all it looked for was found or freed since, else a new one of the next
/// slot in turn where values wait; `None` when none does.
fn next_scan() -> Option<(i32, *mut raw::RedisModuleScanCursor)> {
    let mut st = state();
    let st = &mut *st;
    if let Some(idle) = st.end_idle_search() {
        st.turn = idle.slot + 1;
    }
    if st.search.is_none() {
        let n = st.slots.waiting.len();
        let slot = (0..n)
            .map(|i| (st.turn + i) % n)
            .find(|&s| st.slots.waiting[s] > 0)?;
        st.searches += 1;
        st.search = Some(Search {
            slot,
            cursor: Cursor(api!(RedisModule_ScanCursorCreate())),
            number: st.searches,
            covered: st.slots.waiting[slot],
        });
    }
    let s = st.search.as_ref()?;
    Some((st.slots.db_of[s.slot], s.cursor.0))
}

extern "C" fn on_scanned(
    _ctx: *mut raw::RedisModuleCtx,
    name: RStr,
    key: *mut raw::RedisModuleKey,
    privdata: *mut c_void,
) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // Sound: `privdata` is the `ScanStep` that `search` passed, alive
        // during the call that runs this callback.
        let step = unsafe { &mut *privdata.cast::<ScanStep>() };
        step.looked += 1;
        step.slice += 1;
        let Some(id) = identity::value_in(key) else {
            return;
        };
        if is_followed(id) {
            step.found.push((copy_of(name), id));
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::Slots;

    /// A slot is one db's keys wherever SWAPDB puts them; a flush starts a
    /// new epoch of it and clears what waits there.
    #[test]
    fn slots_follow_swaps_and_flushes() {
        let mut s = Slots::default();
        assert_eq!(s.of(2), 2);
        s.swap(0, 2);
        s.swap(2, 5);
        assert_eq!((s.of(0), s.of(2), s.of(5)), (2, 5, 0));
        assert_eq!((s.db_of[0], s.db_of[2], s.db_of[5]), (5, 0, 2));
        s.swap(1, 1);
        assert_eq!(s.of(1), 1);
        s.waiting[2] = 3;
        let slot = s.of(0);
        s.flush(slot);
        assert_eq!((s.epoch[2], s.waiting[2], s.epoch[0]), (1, 0, 0));
    }
}
