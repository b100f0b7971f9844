//! The thin FFI layer: every call into the Redis module API goes through
//! here, so the command code above it stays safe Rust.
//!
//! Soundness, once for the whole layer: Redis calls our command functions on
//! its main thread with a valid `RedisModuleCtx` and argument vector that live
//! until the function returns; every API pointer we call (`RedisModule_*`) was
//! filled in by `RedisModule_Init` before any command can run, so `unwrap` on
//! them cannot fail on a supported server (Redis >= 7.0).

pub mod command;
pub mod key;
pub mod module_type;

use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;

pub use key::{bytes_of, Key, KeyKind};

/// A Redis string argument, borrowed for the duration of a command.
pub type RStr = *mut raw::RedisModuleString;

/// Calls a Redis module API function by name (see the module doc for why
/// this is sound).
macro_rules! api {
    ($name:ident($($arg:expr),* $(,)?)) => {
        unsafe { ::redis_module::raw::$name.unwrap()($($arg),*) }
    };
}
pub(crate) use api;

/// Keyspace-notification classes we fire.
#[derive(Clone, Copy)]
pub enum Class {
    Generic = raw::REDISMODULE_NOTIFY_GENERIC as isize,
    List = raw::REDISMODULE_NOTIFY_LIST as isize,
    Zset = raw::REDISMODULE_NOTIFY_ZSET as isize,
    Module = raw::REDISMODULE_NOTIFY_MODULE as isize,
}

/// The calling command's context.
#[derive(Clone, Copy)]
pub struct Ctx(pub(crate) *mut raw::RedisModuleCtx);

impl Ctx {
    /// The server's clock, Unix ms.
    pub fn now_ms(self) -> i64 {
        api!(RedisModule_Milliseconds())
    }

    /// True while applying the master's stream or loading AOF/RDB: such
    /// writes must reproduce the master, never decide anything by the clock.
    pub fn is_replicated_or_loading(self) -> bool {
        let flags = api!(RedisModule_GetContextFlags(self.0)) as u32;
        flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0
    }

    /// Deletes `key` if its new expiry is already past, as a core write with
    /// an expiry in the past would leave it; true if it did. Never on a
    /// replica or while loading: those follow the master's own `DEL`.
    pub fn delete_if_expired(self, key: &Key, name: RStr, expire_at: i64) -> bool {
        if expire_at > self.now_ms() || self.is_replicated_or_loading() {
            return false;
        }
        key.delete();
        self.notify(Class::Generic, c"expired", name);
        replicate!(self, c"DEL", c"s", name);
        true
    }

    pub fn open(self, name: RStr, write: bool) -> Key {
        Key::open(self, name, write)
    }

    pub fn notify(self, class: Class, event: &CStr, key: RStr) {
        api!(RedisModule_NotifyKeyspaceEvent(
            self.0,
            class as c_int,
            event.as_ptr(),
            key
        ));
    }

    /// Replicates this command exactly as the client sent it. Only for
    /// commands whose effect does not depend on the clock or on config.
    pub fn replicate_verbatim(self) {
        api!(RedisModule_ReplicateVerbatim(self.0));
    }

    pub fn reply_int(self, n: i64) {
        api!(RedisModule_ReplyWithLongLong(self.0, n));
    }

    pub fn reply_double(self, d: f64) {
        api!(RedisModule_ReplyWithDouble(self.0, d));
    }

    pub fn reply_str(self, s: RStr) {
        api!(RedisModule_ReplyWithString(self.0, s));
    }

    pub fn reply_bytes(self, b: &[u8]) {
        api!(RedisModule_ReplyWithStringBuffer(
            self.0,
            b.as_ptr().cast(),
            b.len()
        ));
    }

    pub fn reply_null(self) {
        api!(RedisModule_ReplyWithNull(self.0));
    }

    pub fn reply_ok(self) {
        api!(RedisModule_ReplyWithSimpleString(self.0, c"OK".as_ptr()));
    }

    /// Starts an array whose length is given later with [`Ctx::set_array_len`].
    pub fn reply_array_open(self) {
        api!(RedisModule_ReplyWithArray(
            self.0,
            raw::REDISMODULE_POSTPONED_ARRAY_LEN as std::os::raw::c_long
        ));
    }

    pub fn reply_array(self, len: usize) {
        api!(RedisModule_ReplyWithArray(
            self.0,
            len as std::os::raw::c_long
        ));
    }

    pub fn set_array_len(self, len: usize) {
        api!(RedisModule_ReplySetArrayLength(
            self.0,
            len as std::os::raw::c_long
        ));
    }

    /// A map reply: a RESP3 map under `HELLO 3`, a flat name/value array under
    /// RESP2 (Redis downgrades it by itself).
    pub fn reply_map(self, pairs: usize) {
        api!(RedisModule_ReplyWithMap(
            self.0,
            pairs as std::os::raw::c_long
        ));
    }

    pub fn reply_error(self, message: &str) {
        // Error lines cannot carry NUL, CR or LF; messages quote client input
        // only through `args::printable`, this is a last guard.
        let clean: Vec<u8> = message
            .bytes()
            .map(|b| {
                if b == 0 || b == b'\r' || b == b'\n' {
                    b' '
                } else {
                    b
                }
            })
            .chain(std::iter::once(0))
            .collect();
        api!(RedisModule_ReplyWithError(self.0, clean.as_ptr().cast()));
    }

    pub fn reply_wrong_arity(self) {
        api!(RedisModule_WrongArity(self.0));
    }
}

/// Replicates one command with explicit arguments (effects replication). The
/// format string follows `RedisModule_Replicate`: `s` a Redis string, `c` a C
/// string, `l` a long long, `b` a buffer and its length.
macro_rules! replicate {
    ($ctx:expr, $cmd:expr, $fmt:expr $(, $arg:expr)* $(,)?) => {{
        let ctx: $crate::server::Ctx = $ctx;
        // Sound: the format string matches the arguments' C types, checked at
        // each call site; see the module doc for the context pointer.
        unsafe {
            ::redis_module::raw::RedisModule_Replicate.unwrap()(
                ctx.0,
                ($cmd as &::std::ffi::CStr).as_ptr(),
                ($fmt as &::std::ffi::CStr).as_ptr()
                $(, $arg)*
            )
        }
    }};
}
pub(crate) use replicate;
