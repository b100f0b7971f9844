//! Command registration and the one entry path every command takes: arity
//! check, argument decoding, call counting, and a panic guard so no Rust
//! panic ever unwinds into Redis.

use super::api::{api, bytes_of, RStr};
use super::ctx::Ctx;
use crate::args::CmdError;
use crate::docs::{self, Arg, ArgType, Docs};
use crate::stats::Stat;
use redis_module::raw;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null;

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
    /// Sound only for `raw` being the running command's argument vector, as
    /// [`run`] passes it: Redis keeps those strings alive and unchanged for
    /// the call, which `'a` does not outlive. Inlined: built in place, not
    /// copied (256 bytes) into its `Args`.
    #[inline(always)]
    fn of(raw: &'a [RStr]) -> Self {
        // Sound: see above.
        let bytes = |s: RStr| unsafe { bytes_of::<'a>(s) };
        if raw.len() > INLINE_ARGS {
            return ArgBytes::Heap(raw.iter().map(|&s| bytes(s)).collect());
        }
        let mut inline: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
        for (slot, &s) in inline.iter_mut().zip(raw) {
            *slot = bytes(s);
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
    /// What COMMAND DOCS, ACL and `commands.json` say about it.
    pub docs: Docs,
    pub entry: raw::RedisModuleCmdFunc,
}

/// A row of the command table; the arity feeds both Redis' command info and
/// our own check in [`run`].
macro_rules! command {
    ($name:literal, $flags:literal, $arity:literal, $key_flags:expr, $handler:path, $calls:path, $errors:path, $docs:expr $(,)?) => {
        $crate::server::command::Command {
            name: $name,
            flags: $flags,
            arity: $arity,
            key_flags: $key_flags,
            docs: $docs,
            entry: $crate::server::command::entry!(
                $handler,
                $arity,
                $crate::server::command::is_write($flags),
                $calls,
                $errors
            ),
        }
    };
}
pub(crate) use command;

/// Whether a command's flags make it a write (they start with `write`).
pub const fn is_write(flags: &CStr) -> bool {
    let (flags, word) = (flags.to_bytes(), b"write");
    if flags.len() < word.len() {
        return false;
    }
    let mut i = 0;
    while i < word.len() {
        if flags[i] != word[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Read-only key access flags, for the command table.
pub const KEY_READ: u32 = raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS;
/// Writes that change values in place (ZADD-like), for the command table.
pub const KEY_UPDATE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE;
/// Writes whose reply is a value read from the key (INCRBY-like: a count):
/// `ACCESS`, so a write-only (`%W~`) ACL user gets NOPERM as for INCRBY.
pub const KEY_COUNT: u32 = KEY_UPDATE | raw::REDISMODULE_CMD_KEY_ACCESS;
/// Writes that add data (LPUSH-like).
pub const KEY_INSERT: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT;
/// Writes that remove data (ZREM-like).
pub const KEY_DELETE: u32 = raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_DELETE;

/// Runs `handler` for one call: counts it, checks arity, catches panics and
/// turns errors into error replies. After a write's panic, replicas are
/// brought to the key's state on the master (`panics::resync_after_panic`).
#[allow(clippy::too_many_arguments)] // the command table's row, spelled out
pub fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut RStr,
    argc: c_int,
    arity: i32,
    write: bool,
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
            if let (true, true, Some(key)) = (write, super::fault::armed(), args.bytes.get(1)) {
                super::fault::inject(super::fault::Fault::Command, key);
            }
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
            if let (true, Some(&key)) = (write, raw.get(1)) {
                let _ = catch_unwind(|| super::panics::resync_after_panic(ctx, key));
            }
            ctx.reply_error("ERR internal error in recipes (logged); the command was aborted");
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// Declares a command's entry point: an `extern "C"` function Redis can call,
/// routed through [`run`] with its arity (Redis convention: n = exactly n
/// arguments with the name, -n = at least n) and counters.
macro_rules! entry {
    ($handler:path, $arity:expr, $write:expr, $calls:path, $errors:path) => {{
        extern "C" fn entry(
            ctx: *mut ::redis_module::raw::RedisModuleCtx,
            argv: *mut *mut ::redis_module::raw::RedisModuleString,
            argc: ::std::os::raw::c_int,
        ) -> ::std::os::raw::c_int {
            $crate::server::command::run(
                ctx, argv, argc, $arity, $write, $handler, &$calls, &$errors,
            )
        }
        Some(entry as _)
    }};
}
pub(crate) use entry;

/// How commands get ACL categories on this server.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Acl {
    /// None can be set (Redis 7.0 has no `RedisModule_SetCommandACLCategories`).
    Unsupported,
    /// The server's own categories (`@read`, `@fast`, ...): Redis 7.2.
    Core,
    /// Those and `@recipes` (`RedisModule_AddACLCategory`: Valkey 8, Redis 7.4+).
    WithModuleCategory,
}

/// The module's own ACL category, where the server can add one.
pub const ACL_CATEGORY: &CStr = c"recipes";

/// Finds out what the server allows for ACL categories and adds `@recipes`
/// where it can; says once in the log what is missing.
pub fn prepare_acl(ctx: *mut raw::RedisModuleCtx) -> Acl {
    let log = redis_module::Context::new(ctx);
    // Sound: the API pointers were filled in by RedisModule_Init; a server
    // without a function leaves its pointer empty, so copying it is all we do
    // before checking.
    let (set, add) = unsafe {
        (
            raw::RedisModule_SetCommandACLCategories,
            raw::RedisModule_AddACLCategory,
        )
    };
    if set.is_none() {
        log.log_notice(
            "ACL categories not set: this server has no RedisModule_SetCommandACLCategories \
             (Redis 7.2+), so rules like +@read do not cover recipes commands; name them instead",
        );
        return Acl::Unsupported;
    }
    let Some(add) = add else {
        log.log_notice(
            "no @recipes ACL category: this server cannot add module categories \
             (RedisModule_AddACLCategory, Redis 7.4+ and Valkey 8); commands carry the core ones",
        );
        return Acl::Core;
    };
    // Sound: called during load with the load context, as the API requires.
    // (A module with data types cannot be unloaded, so no earlier load of
    // ours left the category behind.)
    if unsafe { add(ctx, ACL_CATEGORY.as_ptr()) } == raw::REDISMODULE_OK as c_int {
        Acl::WithModuleCategory
    } else {
        log.log_warning("could not add the @recipes ACL category; commands carry the core ones");
        Acl::Core
    }
}

/// Registers every command of the table with its docs (key spec, arity,
/// arguments...) and ACL categories; the error names what Redis refused.
pub fn register_all(
    ctx: *mut raw::RedisModuleCtx,
    table: &[Command],
    acl: Acl,
) -> Result<(), String> {
    for cmd in table {
        let name = cmd.name.to_string_lossy();
        let created = api!(RedisModule_CreateCommand(
            ctx,
            cmd.name.as_ptr(),
            cmd.entry,
            cmd.flags.as_ptr(),
            1,
            1,
            1
        )) == raw::REDISMODULE_OK as c_int;
        if !created {
            return Err(format!("recipes: could not create command {name}"));
        }
        let command = api!(RedisModule_GetCommand(ctx, cmd.name.as_ptr()));
        if command.is_null() || !set_command_info(command, cmd) {
            return Err(format!(
                "recipes: {name}: the server refused its command info"
            ));
        }
        if acl != Acl::Unsupported && !set_acl_categories(command, cmd, acl) {
            return Err(format!(
                "recipes: {name}: the server refused its ACL categories"
            ));
        }
    }
    Ok(())
}

fn set_acl_categories(command: *mut raw::RedisModuleCommand, cmd: &Command, acl: Acl) -> bool {
    let module = (acl == Acl::WithModuleCategory).then(|| ACL_CATEGORY.to_str().unwrap_or(""));
    let flags = cmd.flags.to_str().unwrap_or("");
    let categories = docs::acl_categories(flags, cmd.docs.acl, module).join(" ");
    let mut strings = CStrings::default();
    let categories = strings.text(&categories);
    // Sound: `command` came from RedisModule_GetCommand during load; the
    // server parses the string before returning.
    api!(RedisModule_SetCommandACLCategories(command, categories)) == raw::REDISMODULE_OK as c_int
}

fn set_command_info(command: *mut raw::RedisModuleCommand, cmd: &Command) -> bool {
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
    let docs = &cmd.docs;
    let mut strings = CStrings::default();
    let mut args = CArgs::default();
    let mut info: raw::RedisModuleCommandInfo = unsafe { std::mem::zeroed() };
    info.version = &version;
    info.summary = strings.text(docs.summary);
    info.complexity = strings.text(docs.complexity);
    info.since = strings.text(docs::SINCE);
    if !docs.tips.is_empty() {
        info.tips = strings.text(&docs.tips.join(" "));
    }
    info.arity = cmd.arity;
    info.key_specs = specs.as_mut_ptr();
    info.args = args.array(docs.args);
    // Redis copies what it needs before returning: `strings` and `args` may
    // go after this call.
    api!(RedisModule_SetCommandInfo(command, &info)) == raw::REDISMODULE_OK as c_int
}

/// C copies of the docs' texts, alive as long as this is.
#[derive(Default)]
struct CStrings(Vec<CString>);

impl CStrings {
    /// A NUL-terminated copy of `text` (the docs table is ours and has no
    /// NUL; one would only cut the text short).
    fn text(&mut self, text: &str) -> *const c_char {
        let text = text.split('\0').next().unwrap_or_default();
        let copy = CString::new(text).unwrap_or_default();
        // The CString's buffer stays put when the Vec grows.
        let ptr = copy.as_ptr();
        self.0.push(copy);
        ptr
    }
}

/// A grammar in the C form `RedisModule_SetCommandInfo` reads: arrays of
/// `RedisModuleCommandArg` ended by an all-zero entry, and the strings they
/// point to, alive as long as this is.
#[derive(Default)]
struct CArgs {
    strings: CStrings,
    arrays: Vec<Vec<raw::RedisModuleCommandArg>>,
}

impl CArgs {
    fn array(&mut self, args: &[Arg]) -> *mut raw::RedisModuleCommandArg {
        let mut array = Vec::with_capacity(args.len() + 1);
        for arg in args {
            // Sound: all-zero is a valid argument (null pointers, no flags).
            let mut c: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
            c.name = self.strings.text(arg.name);
            c.type_ = arg_type(arg.kind);
            // Our one key spec (index 0) for the key; -1 = none.
            c.key_spec_index = if arg.kind == ArgType::Key { 0 } else { -1 };
            c.token = arg.token.map_or(null(), |t| self.strings.text(t));
            c.summary = arg.summary.map_or(null(), |s| self.strings.text(s));
            let mut flags = raw::REDISMODULE_CMD_ARG_NONE;
            if arg.optional {
                flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
            }
            if arg.multiple {
                flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
            }
            c.flags = flags as c_int;
            if !arg.kind.subargs().is_empty() {
                c.subargs = self.array(arg.kind.subargs());
            }
            array.push(c);
        }
        // Sound: all zero (a null name) ends the array.
        array.push(unsafe { std::mem::zeroed() });
        // The Vec's buffer stays put when it moves into `arrays`.
        let ptr = array.as_mut_ptr();
        self.arrays.push(array);
        ptr
    }
}

fn arg_type(kind: ArgType) -> raw::RedisModuleCommandArgType {
    match kind {
        ArgType::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
        ArgType::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
        ArgType::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
        ArgType::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
        ArgType::UnixTime => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_UNIX_TIME,
        ArgType::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
        ArgType::OneOf(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
        ArgType::Block(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
    }
}

/// Logs panics to the Redis log instead of stderr, which is often closed, with where in this
/// crate they happened (a panic in `std`, an overflow in a `sum()`, names only a std file), a
/// frame a line (the log cuts lines at 1 KiB).
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        redis_module::logging::log_warning(format!("recipes: panic: {info}"));
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        for frame in our_frames(&trace).iter().take(12) {
            redis_module::logging::log_warning(format!("recipes: panic: in {frame}"));
        }
    }));
}

/// This crate's frames in a backtrace's text, innermost first, each `function at file:line`
/// (the hook's own left out).
fn our_frames(trace: &str) -> Vec<String> {
    let mut frames = Vec::new();
    let mut lines = trace.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        let Some((_, function)) = line.split_once(": ") else {
            continue;
        };
        let ours = function.trim_start_matches('<').starts_with("recipes::");
        if !ours || function.contains("install_panic_hook") {
            continue;
        }
        match lines.next_if(|l| l.starts_with("at ")) {
            Some(place) => frames.push(format!("{function} {place}")),
            None => frames.push(function.to_string()),
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_backtrace_names_this_crates_frames() {
        let trace = "   0: recipes::server::command::install_panic_hook::{{closure}}
             at ./src/server/command.rs:425:82
   1: std::panicking::panic_with_hook
  18: recipes::topn::layout::full::bucket::Bucket::get
             at ./src/topn/layout/full/bucket.rs:134:53
  22: <recipes::topn::layout::full::key::Full as recipes::topn::window::Window>::incr_many
  23: core::ops::function::FnOnce::call_once
             at /rustc/x/library/core/src/ops/function.rs:250:5";
        assert_eq!(
            super::our_frames(trace),
            [
                "recipes::topn::layout::full::bucket::Bucket::get at ./src/topn/layout/full/bucket.rs:134:53",
                "<recipes::topn::layout::full::key::Full as recipes::topn::window::Window>::incr_many",
            ]
        );
    }
}
