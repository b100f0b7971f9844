//! Where RENAME, RENAMENX and MOVE sent a key. No callback of a module type
//! names a RENAME's new name or a MOVE's db (`unlink2` only names the place
//! a value left), but both are in the command's arguments, and a command
//! filter sees every command before it runs: a client's, one queued in
//! MULTI (at queue time), a script's or a function's call, an `RM_Call`, the
//! master's stream on a replica (Redis 7.0.15 and 8.2.3, Valkey 8.1.8 and
//! 9.1.2 alike). Commands an AOF load replays pass no filter: `moved` has
//! its own ways for those.
//!
//! The filter is registered only while a value of ours owes background work
//! ([`need`], [`unneeded`]): then every command pays it, about 105
//! instructions (Redis' dispatch to filters 66, ours 39: two calls and the
//! name's first byte). For a name starting with R or M it reads on; for the
//! three commands it keeps a hash of the key and a copy of the destination
//! (the new name, or the db) in a small ring of buffers reused from one
//! command to the next (no allocation once they are as long as the names;
//! a reference to the arguments instead would break a module that later
//! appends to strings it passed `RM_Call`, which Redis allows only on
//! unshared strings). `unlink2` of a value of ours asks [`destinations`]
//! where its name was last sent: O(ring) compares of hashes, and only for
//! our values. What it answers is a candidate, checked before use: a
//! RENAME that failed, one queued in a MULTI that was discarded, or another
//! name of the same hash leaves one too. Filters and `unlink2` run on
//! Redis' main thread only: the ring is that thread's.

use super::api::{api, RStr};
use super::ctx::Ctx;
use redis_module::raw;
use std::cell::RefCell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Sends remembered: a MULTI of more renames and moves than this before its
/// EXEC leaves the oldest to `moved`'s search.
const RING: usize = 64;

/// Where a command sent its key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum To {
    /// RENAME, RENAMENX: the new name (the slot's bytes), in the same db.
    Name,
    /// MOVE: this db, the name staying.
    Db(i32),
}

/// One command's send: the hash of its key ([`name_hash`]) and where it
/// went; `to` is `None` for a slot taken or unused.
struct Sent {
    key: u64,
    to: Option<To>,
    name: Vec<u8>,
}

struct Ring {
    slots: Vec<Sent>,
    next: usize,
}

thread_local! {
    static SENT: RefCell<Ring> = const {
        RefCell::new(Ring {
            slots: Vec::new(),
            next: 0,
        })
    };
}

/// A key name's hash for the ring (FNV-1a: a few instructions a byte).
fn name_hash(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The bytes of a filtered command's argument. Sound: Redis' argument
/// strings, alive during the filter, which the borrow does not outlive.
fn arg<'a>(fctx: *mut raw::RedisModuleCommandFilterCtx, i: c_int) -> Option<&'a [u8]> {
    let s: RStr = api!(RedisModule_CommandFilterArgGet(fctx, i));
    if s.is_null() {
        return None;
    }
    let mut len = 0usize;
    let ptr = api!(RedisModule_StringPtrLen(s, &mut len));
    Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// The filter, while registered, and the context it is (un)registered with.
struct Filter {
    ctx: *mut raw::RedisModuleCtx,
    registered: *mut raw::RedisModuleCommandFilter,
}

// Sound: only used on Redis' main thread; the lock only makes the static
// declarable.
unsafe impl Send for Filter {}

static FILTER: Mutex<Filter> = Mutex::new(Filter {
    ctx: std::ptr::null_mut(),
    registered: std::ptr::null_mut(),
});
/// Whether the filter is registered (read without the lock).
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// At load: a context to register the filter with later (it runs only
/// while a value of ours owes work: [`need`]).
pub fn enable(ctx: Ctx) {
    let mut filter = FILTER.lock().unwrap_or_else(|p| p.into_inner());
    filter.ctx = api!(RedisModule_GetDetachedThreadSafeContext(ctx.0));
}

/// A value of ours owes work (`reclaim` schedules it): the filter runs from
/// the next command on. A server whose keys of ours owe nothing (or that
/// holds none) runs no filter: its commands pay nothing.
pub fn need() {
    if REGISTERED.load(Ordering::Relaxed) {
        return;
    }
    let mut f = FILTER.lock().unwrap_or_else(|p| p.into_inner());
    if !f.ctx.is_null() && f.registered.is_null() {
        f.registered = api!(RedisModule_RegisterCommandFilter(f.ctx, Some(filter), 0));
        REGISTERED.store(!f.registered.is_null(), Ordering::Relaxed);
    }
}

/// Nothing of ours owes work, nothing is followed (the timer's call).
pub fn unneeded() {
    if !REGISTERED.load(Ordering::Relaxed) {
        return;
    }
    let mut f = FILTER.lock().unwrap_or_else(|p| p.into_inner());
    if !f.registered.is_null() {
        api!(RedisModule_UnregisterCommandFilter(f.ctx, f.registered));
        f.registered = std::ptr::null_mut();
    }
    REGISTERED.store(false, Ordering::Relaxed);
}

/// Runs before every command of the server while registered: two calls into
/// Redis and a look at the command name's first byte for all but commands
/// starting with R or M.
extern "C" fn filter(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let name: RStr = api!(RedisModule_CommandFilterArgGet(fctx, 0));
    if name.is_null() {
        return;
    }
    let ptr = api!(RedisModule_StringPtrLen(name, std::ptr::null_mut()));
    // Sound: a command's name is a string Redis keeps NUL-terminated, so
    // its first byte is there whatever its length.
    let first = unsafe { *ptr.cast::<u8>() };
    if matches!(first | 0x20, b'r' | b'm') {
        sent(fctx, ptr.cast());
    }
}

/// Whether the NUL-terminated `name` is `word` (upper case), in any case.
/// Sound for a NUL-terminated string: reading stops at its first byte that
/// differs, its NUL at the latest.
fn is_named(name: *const u8, word: &[u8]) -> bool {
    let mut i = 0;
    loop {
        // Sound: see above; `i` never passes the NUL.
        let b = unsafe { *name.add(i) };
        match word.get(i) {
            None => return b == 0,
            Some(&w) if b.to_ascii_uppercase() == w => i += 1,
            Some(_) => return false,
        }
    }
}

/// The rest of the filter, for a command whose name starts with R or M.
#[cold]
fn sent(fctx: *mut raw::RedisModuleCommandFilterCtx, name: *const u8) {
    if api!(RedisModule_CommandFilterArgsCount(fctx)) != 3 {
        return;
    }
    let rename = is_named(name, b"RENAME") || is_named(name, b"RENAMENX");
    if !rename && !is_named(name, b"MOVE") {
        return;
    }
    let (Some(key), Some(dest)) = (arg(fctx, 1), arg(fctx, 2)) else {
        return;
    };
    let to = if rename {
        To::Name
    } else {
        match std::str::from_utf8(dest)
            .ok()
            .and_then(|d| d.parse::<i32>().ok())
        {
            Some(db) if db >= 0 => To::Db(db),
            _ => return,
        }
    };
    let _ = std::panic::catch_unwind(|| keep(name_hash(key), to, dest));
}

fn keep(key: u64, to: To, dest: &[u8]) {
    SENT.with_borrow_mut(|ring| {
        if ring.slots.len() < RING {
            ring.slots.push(Sent {
                key: 0,
                to: None,
                name: Vec::new(),
            });
            ring.next = ring.slots.len() - 1;
        }
        let at = ring.next;
        ring.next = (at + 1) % RING;
        let slot = &mut ring.slots[at];
        slot.key = key;
        slot.to = Some(to);
        slot.name.clear();
        if to == To::Name {
            // Byte by byte: names are short, and a call to memcpy costs more.
            slot.name.extend(dest.iter().copied());
        }
    })
}

/// Where the key `name` of db `db` was last sent, newest first, as
/// (db, name): each such send is taken out of the ring (a value leaves a
/// name once). Called by `unlink2`, on the main thread.
pub fn destinations(name: &[u8], db: i32) -> Vec<(i32, Vec<u8>)> {
    let key = name_hash(name);
    SENT.with_borrow_mut(|ring| {
        let n = ring.slots.len();
        // The slot written last is just before `next`.
        let newest = (ring.next + n).saturating_sub(1) % n.max(1);
        let mut out = Vec::new();
        for back in 0..n {
            let slot = &mut ring.slots[(newest + n - back) % n];
            let Some(to) = slot.to.filter(|_| slot.key == key) else {
                continue;
            };
            slot.to = None;
            out.push(match to {
                To::Name => (db, slot.name.clone()),
                To::Db(d) => (d, name.to_vec()),
            });
        }
        out
    })
}
