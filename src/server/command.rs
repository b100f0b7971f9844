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
    pub bytes: ArgBytes<'a>,
}

/// The arguments' bytes, on the stack for the usual short command (no
/// allocation on the hot path), on the heap past that.
#[allow(clippy::large_enum_variant)] // inline on purpose: no allocation per call
pub enum ArgBytes<'a> {
    Inline([&'a [u8]; INLINE_ARGS], usize),
    Heap(Vec<&'a [u8]>),
}

const INLINE_ARGS: usize = 16;

impl<'a> ArgBytes<'a> {
    fn of(raw: &'a [RStr]) -> Self {
        if raw.len() > INLINE_ARGS {
            return ArgBytes::Heap(raw.iter().map(|&s| bytes_of(s)).collect());
        }
        let mut inline: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
        for (slot, &s) in inline.iter_mut().zip(raw) {
            *slot = bytes_of(s);
        }
        ArgBytes::Inline(inline, raw.len())
    }
}

impl<'a> std::ops::Deref for ArgBytes<'a> {
    type Target = [&'a [u8]];
    fn deref(&self) -> &Self::Target {
        match self {
            ArgBytes::Inline(inline, len) => &inline[..*len],
            ArgBytes::Heap(all) => all,
        }
    }
}

impl<'a> Args<'a> {
    pub fn raw(&self, i: usize) -> RStr {
        self.raw[i]
    }
    pub fn raw_from(&self, i: usize) -> &'a [RStr] {
        &self.raw[i..]
    }
}

pub type Handler = fn(Ctx, &Args) -> Result<(), CmdError>;

/// One row of the command table.
pub struct Command {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    /// Redis arity: n = exactly n arguments with the name, -n = at least n.
    pub arity: i32,
    /// Key-spec flags of the one key (argument 1): `REDISMODULE_CMD_KEY_*`.
    pub key_flags: u32,
    pub summary: &'static CStr,
    pub entry: raw::RedisModuleCmdFunc,
}

/// A row of the command table; the arity feeds both Redis' command info and
/// our own check in [`run`].
macro_rules! command {
    ($name:literal, $flags:literal, $arity:literal, $key_flags:expr, $handler:path, $calls:path, $errors:path, $summary:literal) => {
        $crate::server::command::Command {
            name: $name,
            flags: $flags,
            arity: $arity,
            key_flags: $key_flags,
            summary: $summary,
            entry: $crate::server::command::entry!($handler, $arity, $calls, $errors),
        }
    };
}
pub(crate) use command;

/// Read-only key access flags, for the command table.
pub const KEY_READ: u32 = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS;
/// Writes that change values in place (ZADD-like), for the command table.
pub const KEY_UPDATE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE;
/// Writes that add data (LPUSH-like).
pub const KEY_INSERT: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT;
/// Writes that remove data (ZREM-like).
pub const KEY_DELETE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE;

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
                bytes: ArgBytes::of(raw),
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

/// Registers every command of the table, each with a Redis 7 key spec (key
/// at argument 1) and its arity; false if Redis refused one.
pub fn register_all(ctx: *mut raw::RedisModuleCtx, table: &[Command]) -> bool {
    table.iter().all(|cmd| {
        let created = api!(RedisModule_CreateCommand(
            ctx,
            cmd.name.as_ptr(),
            cmd.entry,
            cmd.flags.as_ptr(),
            1,
            1,
            1
        )) == raw::REDISMODULE_OK as c_int;
        created && set_command_info(ctx, cmd)
    })
}

fn set_command_info(ctx: *mut raw::RedisModuleCtx, cmd: &Command) -> bool {
    let command = api!(RedisModule_GetCommand(ctx, cmd.name.as_ptr()));
    if command.is_null() {
        return false;
    }
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    // Sound: an all-zero key spec is the array terminator Redis expects, and
    // an all-zero info has null pointers for every optional field.
    let mut specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
    specs[0].flags = cmd.key_flags as u64;
    specs[0].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    specs[0].bs.index.pos = 1;
    specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    specs[0].fk.range.lastkey = 0;
    specs[0].fk.range.keystep = 1;
    specs[0].fk.range.limit = 0;
    let mut info: raw::RedisModuleCommandInfo = unsafe { std::mem::zeroed() };
    info.version = &version;
    info.summary = cmd.summary.as_ptr();
    info.arity = cmd.arity;
    info.key_specs = specs.as_mut_ptr();
    // Redis copies what it needs before returning.
    api!(RedisModule_SetCommandInfo(command, &info)) == raw::REDISMODULE_OK as c_int
}

/// Logs panics to the Redis log instead of stderr, which is often closed.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        redis_module::logging::log_warning(format!("recipes: panic: {info}"));
    }));
}
