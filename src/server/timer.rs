//! Timers whose callbacks run behind the same panic guard as commands (the
//! crate's own timer callback does not catch panics).

use super::{api, Ctx};
use redis_module::raw;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `callback` once on Redis' main thread after `delay_ms`, with a
/// context that may open keys, replicate and notify. A panic inside it is
/// logged (by the panic hook) and swallowed.
pub fn after(ctx: Ctx, delay_ms: i64, callback: fn(Ctx)) {
    api!(RedisModule_CreateTimer(
        ctx.0,
        delay_ms.max(0),
        Some(fire),
        callback as *mut c_void
    ));
}

extern "C" fn fire(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    // Sound: `data` is the `fn(Ctx)` that `after` passed (function and data
    // pointers have the same size on every platform Redis runs on).
    let callback: fn(Ctx) = unsafe { std::mem::transmute::<*mut c_void, fn(Ctx)>(data) };
    let _ = catch_unwind(AssertUnwindSafe(|| callback(Ctx(ctx))));
}
