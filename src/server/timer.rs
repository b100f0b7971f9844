//! A repeating timer whose callback runs behind the same panic guard as
//! commands (the crate's own timer callback does not catch panics), and is
//! armed again after a panic, so one bad step never stops background work
//! until a restart; and a hook on forks, whose pages the timer's work may
//! have to touch again.
//!
//! For the test-only view (`test_view`), the steps' main-thread CPU time:
//! the slowest step since the module loaded ([`slowest_step_us`]), measured
//! only when that view is on ([`measure_steps`]).

use super::api::api;
use super::ctx::Ctx;
use redis_module::raw;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// After a panic (logged by the panic hook), the next run comes this much later.
const AFTER_PANIC_MS: i64 = 1000;

/// Runs `step` on Redis' main thread after `delay_ms`, with a context that
/// may open keys, replicate and notify, then again after the delay each run
/// returns, for as long as the module is loaded.
pub fn repeat(ctx: Ctx, delay_ms: i64, step: fn(Ctx) -> i64) {
    api!(RedisModule_CreateTimer(
        ctx.0,
        delay_ms.max(0),
        Some(fire),
        step as *mut c_void
    ));
}

extern "C" fn fire(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // Sound: `data` is the `fn(Ctx) -> i64` that `repeat` passed (function and
    // data pointers have the same size on every platform Redis runs on).
    let step: fn(Ctx) -> i64 = unsafe { std::mem::transmute::<*mut c_void, fn(Ctx) -> i64>(data) };
    let ctx = Ctx(ctx);
    let measuring = MEASURING.load(Ordering::Relaxed);
    let started = measuring.then(thread_cpu_us);
    let next = catch_unwind(AssertUnwindSafe(|| step(ctx))).unwrap_or(AFTER_PANIC_MS);
    if let Some(started) = started {
        SLOWEST_STEP_US.fetch_max(thread_cpu_us().saturating_sub(started), Ordering::Relaxed);
    }
    repeat(ctx, next, step);
}

/// Whether steps are timed, and the slowest so far (CPU microseconds).
static MEASURING: AtomicBool = AtomicBool::new(false);
static SLOWEST_STEP_US: AtomicU64 = AtomicU64::new(0);

/// Times every step from now on (the test-only view).
pub fn measure_steps() {
    MEASURING.store(true, Ordering::Relaxed);
}

/// The most CPU time one step took on the main thread, in microseconds:
/// what a step held the server for, whatever else ran on the machine.
pub fn slowest_step_us() -> u64 {
    SLOWEST_STEP_US.load(Ordering::Relaxed)
}

/// The calling thread's CPU time so far, in microseconds (a system call:
/// once a step, not in loops).
pub fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Sound: `ts` is a valid timespec to write; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

/// What runs when the server forks, and how many forks it ran after (the
/// test-only view shows it: nothing else would tell a lost hook).
static ON_FORK: OnceLock<fn()> = OnceLock::new();
static FORKS_SEEN: AtomicU64 = AtomicU64::new(0);

/// Runs `f` each time the server forks a child (a save, a replica's sync,
/// an AOF rewrite), in the parent, on the thread that forked: Redis' main
/// thread. A `pthread_atfork` handler, not a server-event subscription:
/// since Redis 7.2 the server walks every module's subscriptions for each
/// key it deletes, so each one costs plain keys. One hook a module.
pub fn on_fork(f: fn()) {
    if ON_FORK.set(f).is_err() {
        return;
    }
    // Sound: `forked` is a plain function of this library, which stays
    // mapped for the life of the process (Redis refuses to unload a module
    // that registered data types, and every build of ours registers them);
    // it takes no lock a forking thread may hold (see `forked`).
    unsafe { libc::pthread_atfork(None, Some(forked), None) };
}

/// After a fork, in the parent. `f` touches only the forking thread's own
/// state (a thread-local), so it is safe whichever thread forked.
extern "C" fn forked() {
    if let Some(f) = ON_FORK.get() {
        FORKS_SEEN.fetch_add(1, Ordering::Relaxed);
        let _ = catch_unwind(f);
    }
}

/// Forks the hook has run after since the module loaded.
pub fn forks_seen() -> u64 {
    FORKS_SEEN.load(Ordering::Relaxed)
}
