//! Test-only view of what the module keeps beside the keys: with
//! `RECIPES_TEST_SCHEDULES` in the server's environment, `CONFIG GET
//! recipes.test-schedules` lists every schedule entry and how many values
//! are being followed (`reclaim::listing`), so a model test can compare the
//! set of keys with work scheduled to its own after every step, and the
//! most CPU time a timer step of the module took and the forks its fork
//! hook ran after (`timer`). Not
//! registered otherwise (as in production): no command, config or INFO field
//! of the public surface shows key names. A config rather than a command:
//! `CONFIG GET` of a hidden, immutable config is read-only and dispatches
//! no key, so the view cannot change what it shows.

use super::api::{api, new_string, RStr};
use super::{reclaim, timer};
use redis_module::raw;
use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::sync::Mutex;

/// The string last handed to Redis (it copies it), freed at the next call.
struct Shown(RStr);
// Sound: only touched on Redis' main thread (CONFIG GET).
unsafe impl Send for Shown {}

static SHOWN: Mutex<Option<Shown>> = Mutex::new(None);

/// At module load, when the test environment asks for it.
pub fn register(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    if std::env::var_os("RECIPES_TEST_SCHEDULES").is_none() {
        return Ok(());
    }
    let flags = raw::REDISMODULE_CONFIG_IMMUTABLE | raw::REDISMODULE_CONFIG_HIDDEN;
    let registered = api!(RedisModule_RegisterStringConfig(
        ctx,
        c"test-schedules".as_ptr(),
        c"".as_ptr(),
        flags as _,
        Some(get),
        Some(set),
        None,
        std::ptr::null_mut(),
    ));
    if registered != raw::REDISMODULE_OK as c_int {
        return Err("recipes: could not register test-schedules".into());
    }
    timer::measure_steps();
    Ok(())
}

extern "C" fn get(_name: *const c_char, _privdata: *mut c_void) -> RStr {
    let listing = std::panic::catch_unwind(|| {
        reclaim::listing()
            + &format!(
                "slowest-step-us {}\nforks-seen {}\n",
                timer::slowest_step_us(),
                timer::forks_seen()
            )
    })
    .unwrap_or_default();
    let s = new_string(listing.as_bytes());
    let old = SHOWN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .replace(Shown(s));
    if let Some(old) = old {
        api!(RedisModule_FreeString(std::ptr::null_mut(), old.0));
    }
    s
}

/// Only the default is ever set (at load; the config is immutable).
extern "C" fn set(
    _name: *const c_char,
    _value: RStr,
    _privdata: *mut c_void,
    _err: *mut RStr,
) -> c_int {
    raw::REDISMODULE_OK as c_int
}
