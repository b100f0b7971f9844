//! Command registration and the one entry path every command takes: arity
//! check, argument decoding, call counting, and a panic guard so no Rust
//! panic ever unwinds into Redis.

use super::{api, bytes_of, Ctx, RStr};
use crate::args::CmdError;
use crate::stats::Stat;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A command's arguments: the raw Redis strings (for keys, replies and
/// replication) and their bytes (for parsing).
pub struct Args<'a> {
    raw: &'a [RStr],
    pub bytes: Vec<&'a [u8]>,
}

impl<'a> Args<'a> {
    pub fn raw(&self, i: usize) -> RStr {
        self.raw[i]
    }
    pub fn raw_from(&self, i: usize) -> &'a [RStr] {
        &self.raw[i..]
    }
    pub fn len(&self) -> usize {
        self.raw.len()
    }
}

pub type Handler = fn(Ctx, &Args) -> Result<(), CmdError>;

/// One row of the command table.
pub struct Command {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    /// First key, last key, step, as `COMMAND INFO` reports them.
    pub keys: (i32, i32, i32),
    pub entry: raw::RedisModuleCmdFunc,
}

/// Runs `handler` for one call: counts it, checks arity, catches panics and
/// turns errors into error replies.
pub fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut RStr,
    argc: c_int,
    arity: i32,
    handler: Handler,
    calls: &Stat,
    errors: &Stat,
) -> c_int {
    calls.add(1);
    let ctx = Ctx(ctx);
    // Sound: Redis passes `argc` valid strings that outlive this call.
    let raw = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
    let arity_ok = if arity >= 0 {
        raw.len() == arity as usize
    } else {
        raw.len() >= arity.unsigned_abs() as usize
    };
    let outcome = if arity_ok {
        catch_unwind(AssertUnwindSafe(|| {
            let args = Args {
                raw,
                bytes: raw.iter().map(|&s| bytes_of(s)).collect(),
            };
            handler(ctx, &args)
        }))
    } else {
        Ok(Err(CmdError::Arity))
    };
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(CmdError::Arity)) => {
            errors.add(1);
            ctx.reply_wrong_arity();
        }
        Ok(Err(err)) => {
            errors.add(1);
            ctx.reply_error(&err.to_string());
        }
        Err(_) => {
            errors.add(1);
            ctx.reply_error("ERR internal error in recipes (logged); the command was aborted");
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// Declares a command's entry point: an `extern "C"` function Redis can call,
/// routed through [`run`] with its arity (Redis convention: n = exactly n
/// arguments with the name, -n = at least n) and counters.
macro_rules! entry {
    ($handler:path, $arity:expr, $calls:path, $errors:path) => {{
        extern "C" fn entry(
            ctx: *mut ::redis_module::raw::RedisModuleCtx,
            argv: *mut *mut ::redis_module::raw::RedisModuleString,
            argc: ::std::os::raw::c_int,
        ) -> ::std::os::raw::c_int {
            $crate::server::command::run(ctx, argv, argc, $arity, $handler, &$calls, &$errors)
        }
        Some(entry as _)
    }};
}
pub(crate) use entry;

/// Registers every command of the table; false if Redis refused one.
pub fn register_all(ctx: *mut raw::RedisModuleCtx, table: &[Command]) -> bool {
    table.iter().all(|cmd| {
        let (first, last, step) = cmd.keys;
        api!(RedisModule_CreateCommand(
            ctx,
            cmd.name.as_ptr(),
            cmd.entry,
            cmd.flags.as_ptr(),
            first,
            last,
            step
        )) == raw::REDISMODULE_OK as c_int
    })
}

/// Logs panics to the Redis log instead of stderr, which is often closed.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        redis_module::logging::log_warning(format!("recipes: panic: {info}"));
    }));
}
