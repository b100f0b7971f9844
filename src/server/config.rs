//! Module configs: `CONFIG GET/SET recipes.<name>`, `recipes.<name> value` in
//! redis.conf, or `loadmodule <so> <name> <value> ...`. Each family declares
//! its own [`Config`] statics; `register` hands them to Redis at load.

use super::api::{api, RStr};
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

/// The module's load arguments (`loadmodule <so> name value ...`), checked
/// against the configs: each is `name value` or `recipes.name value`, the
/// value an integer in the config's range. Anything else fails the load.
pub struct LoadArgs(Vec<(&'static CStr, i64)>);

impl LoadArgs {
    pub fn parse(args: &[&[u8]], configs: &[&'static Config]) -> Result<LoadArgs, String> {
        let mut given = Vec::new();
        for pair in args.chunks(2) {
            let name = pair[0];
            let shown = String::from_utf8_lossy(name);
            let bare = name.strip_prefix(b"recipes.").unwrap_or(name);
            let config = configs
                .iter()
                .find(|c| c.name.to_bytes().eq_ignore_ascii_case(bare))
                .ok_or_else(|| format!("recipes: unknown load argument '{shown}'"))?;
            let Some(value) = pair.get(1) else {
                return Err(format!("recipes: load argument '{shown}' needs a value"));
            };
            let value = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<i64>().ok())
                .filter(|v| (config.min..=config.max).contains(v))
                .ok_or_else(|| {
                    format!(
                        "recipes: load argument '{shown}' needs an integer from {} to {}, got '{}'",
                        config.min,
                        config.max,
                        String::from_utf8_lossy(value)
                    )
                })?;
            if given.iter().any(|(n, _)| *n == config.name) {
                return Err(format!(
                    "recipes: load argument '{shown}' given more than once"
                ));
            }
            given.push((config.name, value));
        }
        Ok(LoadArgs(given))
    }

    fn value_of(&self, config: &Config) -> Option<i64> {
        self.0
            .iter()
            .find(|(name, _)| *name == config.name)
            .map(|&(_, v)| v)
    }
}

/// Registers `config` with Redis, its default taken from the load arguments
/// when they name it. Redis applies redis.conf and CONFIG SET through the
/// callbacks below.
pub fn register(
    ctx: *mut raw::RedisModuleCtx,
    config: &'static Config,
    args: &LoadArgs,
) -> Result<(), String> {
    let default = args.value_of(config).unwrap_or(config.default);
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

#[cfg(test)]
mod tests {
    use super::*;

    static A: Config = Config::new(c"a-max", 0, 0, 10);
    static B: Config = Config::new(c"b-window", 24, 1, 100);

    fn parse(args: &[&str]) -> Result<Vec<(&'static CStr, i64)>, String> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        LoadArgs::parse(&args, &[&A, &B]).map(|l| l.0)
    }

    #[test]
    fn load_arguments_are_checked() {
        assert_eq!(parse(&[]), Ok(vec![]));
        assert_eq!(
            parse(&["a-max", "5", "recipes.b-window", "7"]),
            Ok(vec![(c"a-max", 5), (c"b-window", 7)])
        );
        let err = |args: &[&str]| parse(args).unwrap_err();
        assert_eq!(
            err(&["nosuch", "3", "a-max", "5"]),
            "recipes: unknown load argument 'nosuch'"
        );
        assert_eq!(
            err(&["a-max"]),
            "recipes: load argument 'a-max' needs a value"
        );
        assert_eq!(
            err(&["a-max", "11"]),
            "recipes: load argument 'a-max' needs an integer from 0 to 10, got '11'"
        );
        assert_eq!(
            err(&["b-window", "x"]),
            "recipes: load argument 'b-window' needs an integer from 1 to 100, got 'x'"
        );
        assert_eq!(
            err(&["a-max", "1", "recipes.a-max", "2"]),
            "recipes: load argument 'recipes.a-max' given more than once"
        );
    }
}
