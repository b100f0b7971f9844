//! What a caught panic leaves behind. A panic is a bug of ours, caught so
//! that it never unwinds into Redis; this module makes sure that catching it
//! never leaves a broken file or a replica that differs from its master:
//!
//! - While saving (RDB, AOF rewrite, a replica's sync) in a child process:
//!   the child ends itself by SIGKILL, so Redis reports the save failed,
//!   removes its temp file and keeps the old one (`BGSAVE` then shows
//!   `rdb_last_bgsave_status:err`).
//! - While saving in the server itself (`SAVE`, `SHUTDOWN`, `DUMP`), which a
//!   module cannot fail: the key is written as a marker that every load
//!   refuses naming the key, and the panic is logged.
//! - In a write command, after it may have changed its key: the master
//!   replicates the key's whole state (`RESTORE ... REPLACE ABSTTL` from its
//!   `DUMP`, or `DEL` if it is gone), so replicas and the AOF hold what the
//!   master holds; if even that cannot be encoded, the key is deleted on both.
//!
//! Test-only fault injection: with `RECIPES_FAULT_PANIC_KEY=save:<name>` in
//! the server's environment, saving the value of key `<name>` panics; with
//! `write:<name>`, replicating an effect of a write to it does, so the fault
//! suite can show the above. Unset (as in production) each check is one load
//! of a static.

use super::{api, copy_of, free_string, new_string, Arg, Ctx, Key, KeyKind, RStr};
use redis_module::raw;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What a save that panicked in the server writes for the key instead of its
/// value: no encoding of ours starts with a zero byte followed by this text.
pub const SAVE_PANICKED: &[u8] = b"\0recipes: this value's save panicked";

static SERVER_PID: OnceLock<u32> = OnceLock::new();
static FAULT_KEY: OnceLock<Option<Vec<u8>>> = OnceLock::new();
/// Set when a save in the server wrote [`SAVE_PANICKED`] (read by the
/// resync after a command's panic, which saves through `DUMP`).
static WROTE_MARKER: AtomicBool = AtomicBool::new(false);

/// At module load: remembers the server's pid (a save in another process is
/// a fork's) and the test-only fault key.
pub fn init() {
    let _ = SERVER_PID.set(std::process::id());
    let _ =
        FAULT_KEY.set(std::env::var_os("RECIPES_FAULT_PANIC_KEY").map(|k| k.into_encoded_bytes()));
}

/// Where the test-only fault injection may strike.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fault {
    /// Encoding the key's value for RDB, DUMP or an AOF rewrite.
    Save,
    /// Replicating an effect of a write to the key (after the write changed it).
    Write,
}

/// Whether the test-only fault injection is on (never in production).
pub fn armed() -> bool {
    matches!(FAULT_KEY.get(), Some(Some(_)))
}

/// Panics when the test-only fault key names `fault` and `name`
/// (`RECIPES_FAULT_PANIC_KEY=save:<name>` or `write:<name>`).
pub fn inject(fault: Fault, name: &[u8]) {
    let Some(Some(spec)) = FAULT_KEY.get() else {
        return;
    };
    let prefix: &[u8] = match fault {
        Fault::Save => b"save:",
        Fault::Write => b"write:",
    };
    if spec.strip_prefix(prefix) == Some(name) {
        panic!(
            "RECIPES_FAULT_PANIC_KEY: {fault:?} of {}",
            String::from_utf8_lossy(name)
        );
    }
}

/// A save's encoding panicked: in a forked child, fail the whole save; in the
/// server, answer the marker to write instead.
pub fn save_panicked() -> &'static [u8] {
    if SERVER_PID
        .get()
        .is_some_and(|&pid| pid != std::process::id())
    {
        redis_module::logging::log_warning(
            "recipes: a value could not be encoded (panic above); failing this save, the old file stays",
        );
        // Sound: signalling our own process. SIGKILL cannot be caught: the
        // child ends here, and its parent sees a save ended by a signal.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    WROTE_MARKER.store(true, Ordering::Relaxed);
    SAVE_PANICKED
}

/// After a write command on `name` panicked: replicas and the AOF get the
/// key's state as the master has it now.
pub fn resync_after_panic(ctx: Ctx, name: RStr) {
    if ctx.is_replicated_or_loading() {
        return;
    }
    let key = Key::open(ctx, name, false);
    let (exists, expire_at) = (key.kind() != KeyKind::Empty, key.expire_at());
    drop(key);
    let shown = String::from_utf8_lossy(&copy_of(name)).into_owned();
    if exists {
        if let Some(payload) = dump(ctx, name) {
            let payload = new_string(&payload);
            ctx.propagate(
                c"RESTORE",
                &[
                    Arg::Str(name),
                    Arg::Int(expire_at.unwrap_or(0)),
                    Arg::Str(payload),
                    REPLACE.arg(),
                    ABSTTL.arg(),
                ],
            );
            free_string(payload);
            redis_module::logging::log_warning(format!(
                "recipes: a write to key \"{shown}\" panicked; its state was replicated as RESTORE"
            ));
            return;
        }
        Key::open(ctx, name, true).delete();
    }
    ctx.propagate(c"DEL", &[Arg::Str(name)]);
    redis_module::logging::log_warning(format!(
        "recipes: a write to key \"{shown}\" panicked and its value could not be encoded; \
         the key was deleted on the master and its replicas"
    ));
}

static REPLACE: super::Word = super::Word::new(c"REPLACE");
static ABSTTL: super::Word = super::Word::new(c"ABSTTL");

/// `DUMP name` through `RM_Call` (only on this rare path), unless the value
/// cannot be encoded.
fn dump(ctx: Ctx, name: RStr) -> Option<Vec<u8>> {
    WROTE_MARKER.store(false, Ordering::Relaxed);
    // Sound: the format "s" takes one Redis string, which we pass.
    let reply =
        unsafe { raw::RedisModule_Call.unwrap()(ctx.0, c"DUMP".as_ptr(), c"s".as_ptr(), name) };
    if reply.is_null() {
        return None;
    }
    let payload = (api!(RedisModule_CallReplyType(reply))
        == raw::REDISMODULE_REPLY_STRING as c_int)
        .then(|| {
            let mut len = 0usize;
            let p = api!(RedisModule_CallReplyStringPtr(reply, &mut len));
            // Sound: the reply owns `len` bytes at `p` until it is freed below.
            unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }.to_vec()
        });
    api!(RedisModule_FreeCallReply(reply));
    payload.filter(|_| !WROTE_MARKER.load(Ordering::Relaxed))
}
