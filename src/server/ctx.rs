//! The command context (`Ctx`): replies, replication, keyspace
//! notifications, the server's clock; and the module-wide config.

use super::api::{api, copy_of, free_string, new_string, RStr};
use super::config::Config;
use super::fault;
use crate::args::{check_client_time, CmdError, MAX_TIME_MS};
use crate::tuples::schema::Declarer;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::OnceLock;

/// Keyspace-notification classes we fire.
#[derive(Clone, Copy)]
pub enum Class {
    Generic = raw::REDISMODULE_NOTIFY_GENERIC as isize,
    /// `x`: a key removed because its expiry passed, as the core fires it.
    Expired = raw::REDISMODULE_NOTIFY_EXPIRED as isize,
    List = raw::REDISMODULE_NOTIFY_LIST as isize,
    Zset = raw::REDISMODULE_NOTIFY_ZSET as isize,
    Module = raw::REDISMODULE_NOTIFY_MODULE as isize,
}

/// How far ahead of the server's clock a client's `AT` may be, in ms (0: no
/// limit): a wrong clock or a unit slip must not move a key's window or
/// expiry years ahead.
pub static MAX_FUTURE_MS: Config = Config::new(c"max-future-ms", 86_400_000, 0, MAX_TIME_MS);

/// Configs of the module as a whole (each family declares its own).
pub static CONFIGS: &[&Config] = &[&MAX_FUTURE_MS];

/// The server's clock, Unix ms (for code that has no context, e.g. loading).
pub fn clock_ms() -> i64 {
    api!(RedisModule_Milliseconds())
}

/// When a write runs: the server's clock (Unix ms) and whether the call
/// replays the master's stream or a file (then it decides nothing by the
/// clock).
#[derive(Clone, Copy, Debug)]
pub struct WriteTime {
    pub now: i64,
    pub replaying: bool,
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

    /// Who declares a CREATE's names: a replayed call was accepted by the
    /// release that wrote it, so no newer keyword refuses it.
    pub fn declarer(self) -> Declarer {
        if self.is_replicated_or_loading() {
            Declarer::Replay
        } else {
            Declarer::Client
        }
    }

    /// Refuses a client's write `AT` that can only be seconds or is further
    /// ahead of the clock than `recipes.max-future-ms`
    /// (`args::check_client_time`); replicated and AOF-loaded calls replay as
    /// written. Returns the clock and whether the call replays, each read
    /// once: a write needs both.
    pub fn check_at(self, at: Option<i64>) -> Result<WriteTime, CmdError> {
        let time = WriteTime {
            now: self.now_ms(),
            replaying: self.is_replicated_or_loading(),
        };
        match at {
            Some(at) if !time.replaying => {
                check_client_time(at, time.now, MAX_FUTURE_MS.get())?;
            }
            _ => {}
        }
        Ok(time)
    }

    /// [`Ctx::check_at`] for a write that reads the clock itself only when
    /// it needs it: a call without `AT` has nothing to check, so neither the
    /// clock nor the context flags are read here (a hot path's ~130
    /// instructions).
    #[inline]
    pub fn check_given_at(self, at: Option<i64>) -> Result<(), CmdError> {
        match at {
            Some(_) => self.check_at(at).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Refuses a client's read `AT` that can only be seconds. A read changes
    /// nothing, so it may look at any time ahead.
    pub fn check_read_at(self, at: Option<i64>) -> Result<(), CmdError> {
        match at {
            Some(at) if !self.is_replicated_or_loading() => check_client_time(at, self.now_ms(), 0),
            _ => Ok(()),
        }
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

    /// Replicates `cmd args...` to replicas and the AOF (effects
    /// replication: explicit arguments instead of the client's call). Any
    /// number of arguments; the usual short effect needs no allocation.
    pub fn replicate(self, cmd: &CStr, args: &[Arg]) {
        if let (true, Some(&Arg::Str(key))) = (fault::armed(), args.first()) {
            fault::inject(fault::Fault::Write, &copy_of(key));
        }
        self.propagate(cmd, args);
    }

    /// [`Ctx::replicate`] without the test-only fault injection.
    pub(super) fn propagate(self, cmd: &CStr, args: &[Arg]) {
        let mut inline = [std::ptr::null_mut(); INLINE_ARGS];
        let mut heap = Vec::new();
        let strings: &mut [RStr] = if args.len() <= INLINE_ARGS {
            &mut inline[..args.len()]
        } else {
            heap.resize(args.len(), std::ptr::null_mut());
            &mut heap
        };
        for (slot, arg) in strings.iter_mut().zip(args) {
            *slot = match *arg {
                Arg::Str(s) => s,
                Arg::Int(n) => small_int(n).unwrap_or_else(|| new_string(Decimal::new(n).bytes())),
            };
        }
        // Sound: `v` takes an array of Redis strings and its length, which
        // is what we pass. It only fails for an unknown command, which ours
        // are not.
        unsafe {
            raw::RedisModule_Replicate.unwrap()(
                self.0,
                cmd.as_ptr(),
                c"v".as_ptr(),
                strings.as_ptr(),
                strings.len(),
            );
        }
        for (arg, &s) in args.iter().zip(strings.iter()) {
            if let Arg::Int(n) = *arg {
                if small_int(n).is_none() {
                    api!(RedisModule_FreeString(std::ptr::null_mut(), s));
                }
            }
        }
    }

    /// Replicates `cmd key args...` with `args` given as bytes (strings
    /// made for the call and freed after).
    pub fn replicate_bytes(self, cmd: &CStr, key: RStr, args: &[&[u8]]) {
        let strings: Vec<RStr> = args.iter().map(|a| new_string(a)).collect();
        let mut effect = Vec::with_capacity(strings.len() + 1);
        effect.push(Arg::Str(key));
        effect.extend(strings.iter().map(|&s| Arg::Str(s)));
        self.replicate(cmd, &effect);
        for s in strings {
            free_string(s);
        }
    }

    /// Replicates `cmd args... [PXAT ms]`: the effect of a write, with its
    /// absolute expiry when it has one.
    pub fn replicate_with_expiry(self, cmd: &CStr, args: &[Arg], expire_at: Option<i64>) {
        let Some(ms) = expire_at else {
            return self.replicate(cmd, args);
        };
        let tail = [PXAT.arg(), Arg::Int(ms)];
        let mut inline = [Arg::Int(0); INLINE_ARGS];
        if args.len() + tail.len() <= INLINE_ARGS {
            let all = &mut inline[..args.len() + tail.len()];
            all[..args.len()].copy_from_slice(args);
            all[args.len()..].copy_from_slice(&tail);
            self.replicate(cmd, all);
        } else {
            self.replicate(cmd, &[args, &tail].concat());
        }
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

    /// Opens the reply of a read of `rows` rows: the rows alone, or under
    /// a cursor (`[next, [rows...]]`) when the read is paged.
    pub fn reply_rows(self, next_cursor: Option<&[u8]>, rows: usize) {
        if let Some(next) = next_cursor {
            self.reply_array(2);
            self.reply_bytes(next);
        }
        self.reply_array(rows);
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

/// An `*.INFO` reply: a map of `declaration` (the CREATE arguments that
/// declare the key again, an array) and integer `fields`.
pub fn reply_info(ctx: Ctx, declaration: &[Vec<u8>], fields: &[(&[u8], i64)]) {
    ctx.reply_map(1 + fields.len());
    ctx.reply_bytes(b"declaration");
    ctx.reply_array(declaration.len());
    for arg in declaration {
        ctx.reply_bytes(arg);
    }
    for &(name, n) in fields {
        ctx.reply_bytes(name);
        ctx.reply_int(n);
    }
}

/// Replicated commands up to this many arguments are built on the stack.
const INLINE_ARGS: usize = 16;

/// An argument of a replicated command.
#[derive(Clone, Copy)]
pub enum Arg {
    Str(RStr),
    Int(i64),
}

/// A keyword used in replicated commands, created once as a Redis string so
/// replicating it costs a reference count, not an allocation.
pub struct Word {
    text: &'static CStr,
    string: OnceLock<SharedStr>,
}

struct SharedStr(RStr);
// Sound: Redis strings are only touched from Redis' main thread; the lock
// only makes the static declarable.
unsafe impl Send for SharedStr {}
unsafe impl Sync for SharedStr {}

impl Word {
    pub const fn new(text: &'static CStr) -> Self {
        Word {
            text,
            string: OnceLock::new(),
        }
    }

    pub fn arg(&self) -> Arg {
        Arg::Str(self.get())
    }

    fn get(&self) -> RStr {
        self.string
            .get_or_init(|| SharedStr(new_string(self.text.to_bytes())))
            .0
    }
}

/// Integers below this are replicated from strings made once (caps, slacks,
/// increments, window shapes repeat on every call).
const SMALL_INTS: usize = 4096;

static SMALL_INT_STRINGS: [OnceLock<SharedStr>; SMALL_INTS] =
    [const { OnceLock::new() }; SMALL_INTS];

/// The shared string of a small non-negative integer, made on first use.
fn small_int(n: i64) -> Option<RStr> {
    let slot = SMALL_INT_STRINGS.get(usize::try_from(n).ok()?)?;
    Some(
        slot.get_or_init(|| SharedStr(new_string(Decimal::new(n).bytes())))
            .0,
    )
}

/// Keywords of replicated effects that several families share; a family
/// declares its own beside its commands.
pub static AT: Word = Word::new(c"AT");
pub static MAXLEN: Word = Word::new(c"MAXLEN");
pub static PXAT: Word = Word::new(c"PXAT");

/// An integer in decimal, formatted on the stack (cheaper than asking Redis
/// to format a long long).
pub struct Decimal {
    buf: [u8; 20],
    start: usize,
}

impl Decimal {
    pub fn new(n: i64) -> Self {
        let mut buf = [0u8; 20];
        let mut start = buf.len();
        let mut rest = n.unsigned_abs();
        loop {
            start -= 1;
            buf[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if n < 0 {
            start -= 1;
            buf[start] = b'-';
        }
        Decimal { buf, start }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::Decimal;

    #[test]
    fn decimals_match_rust_formatting() {
        for n in [0, 7, -7, 10, 1_700_000_000_000, i64::MAX, i64::MIN, -1] {
            assert_eq!(Decimal::new(n).bytes(), n.to_string().as_bytes());
        }
    }
}
