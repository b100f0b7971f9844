//! Module configs: `CONFIG GET/SET recipes.<name>`, `recipes.<name> value` in
//! redis.conf, or `loadmodule <so> <name> <value> ...`. Each family declares
//! its own [`Config`] statics; `register` hands them to Redis at load.

use super::{api, bytes_of, RStr};
use redis_module::raw;
use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int, c_longlong};
use std::sync::atomic::{AtomicI64, Ordering};

/// A numeric module config and its current value.
pub struct Config {
    /// Without the `recipes.` prefix, e.g. `rv-default-maxlen`.
    pub name: &'static CStr,
    pub default: i64,
    pub min: i64,
    pub max: i64,
    value: AtomicI64,
}

impl Config {
    pub const fn new(name: &'static CStr, default: i64, min: i64, max: i64) -> Self {
        Config {
            name,
            default,
            min,
            max,
            value: AtomicI64::new(default),
        }
    }

    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    /// The value as a count (a config whose minimum is 0).
    pub fn count(&self) -> usize {
        self.get().max(0) as usize
    }
}

/// The value given for `config` among the module's load arguments
/// (`name value` pairs), if any; an error text for a non-integer.
fn load_arg(config: &Config, args: &[RStr]) -> Result<Option<i64>, String> {
    let name = config.name.to_bytes();
    let Some(pos) = args.iter().position(|&a| bytes_of(a) == name) else {
        return Ok(None);
    };
    let value = args.get(pos + 1).map(|&v| bytes_of(v)).unwrap_or_default();
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .map(Some)
        .ok_or_else(|| {
            format!(
                "recipes: load argument {} needs an integer value",
                config.name.to_string_lossy()
            )
        })
}

/// Registers `config` with Redis, its default taken from the load arguments
/// when they name it. Redis applies redis.conf and CONFIG SET through the
/// callbacks below.
pub fn register(
    ctx: *mut raw::RedisModuleCtx,
    config: &'static Config,
    args: &[RStr],
) -> Result<(), String> {
    let default = load_arg(config, args)?.unwrap_or(config.default);
    let registered = api!(RedisModule_RegisterNumericConfig(
        ctx,
        config.name.as_ptr(),
        default,
        0,
        config.min,
        config.max,
        Some(get_config),
        Some(set_config),
        None,
        (config as *const Config).cast_mut().cast(),
    ));
    if registered != raw::REDISMODULE_OK as c_int {
        return Err(format!(
            "recipes: could not register config {} (default {default} out of {}..{}?)",
            config.name.to_string_lossy(),
            config.min,
            config.max
        ));
    }
    Ok(())
}

/// Loads redis.conf's values for every registered config (once, at load).
pub fn load_all(ctx: *mut raw::RedisModuleCtx) -> bool {
    api!(RedisModule_LoadConfigs(ctx)) == raw::REDISMODULE_OK as c_int
}

// Sound: `privdata` is the `&'static Config` given to `register`.
extern "C" fn get_config(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    unsafe { &*privdata.cast::<Config>() }.get()
}

// Redis has checked `value` against min/max before calling.
extern "C" fn set_config(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut RStr,
) -> c_int {
    unsafe { &*privdata.cast::<Config>() }
        .value
        .store(value, Ordering::Relaxed);
    raw::REDISMODULE_OK as c_int
}
