//! Where RENAME, RENAMENX and MOVE sent a key. No callback of a module type
//! names a RENAME's new name or a MOVE's db (`unlink2` only names the place
//! a value left), but both are in the command's arguments, and a command
//! filter sees every command before it runs: a client's, one queued in
//! MULTI (at queue time), a script's or a function's call, an `RM_Call`, the
//! master's stream on a replica (Redis 7.0.15 and 8.2.3, Valkey 8.1.8 and
//! 9.1.2 alike). Commands an AOF load replays pass no filter: `moved` has
//! its own ways for those.
//!
//! The filter compares the command name's length, then its bytes, with the
//! three names, and only for them copies the key and its destination into a
//! small ring of buffers reused from one command to the next (no allocation
//! once they are as long as the names; a reference to the arguments instead
//! would break a module that later appends to strings it passed `RM_Call`,
//! which Redis allows only on unshared strings). `unlink2` of a value of
//! ours asks [`destinations`] where its name was last sent: O(ring) byte
//! compares, and only for our values. What it answers is a candidate,
//! checked before use: a RENAME that failed, or one queued in a MULTI that
//! was discarded, leaves one too.

use super::api::{api, RStr};
use super::ctx::Ctx;
use redis_module::raw;
use std::os::raw::c_int;
use std::sync::{Mutex, MutexGuard};

/// Sends remembered: a MULTI of more renames and moves than this before its
/// EXEC leaves the oldest to `moved`'s search.
const RING: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// RENAME, RENAMENX: the destination is the new name, in the same db.
    Rename,
    /// MOVE: the destination is the db, the name stays.
    Move,
}

/// One command's key and destination: `bytes` holds the key, then the
/// destination, from `split` on; `None` kind for a slot taken or unused.
struct Sent {
    kind: Option<Kind>,
    bytes: Vec<u8>,
    split: usize,
}

impl Sent {
    fn key(&self) -> &[u8] {
        &self.bytes[..self.split]
    }

    fn to(&self) -> &[u8] {
        &self.bytes[self.split..]
    }
}

struct Ring {
    slots: Vec<Sent>,
    next: usize,
}

static SENT: Mutex<Ring> = Mutex::new(Ring {
    slots: Vec::new(),
    next: 0,
});

fn ring() -> MutexGuard<'static, Ring> {
    SENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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

/// At load: the filter, for every command from now on.
pub fn enable(ctx: Ctx) {
    api!(RedisModule_RegisterCommandFilter(ctx.0, Some(filter), 0));
}

/// Runs before every command of the server: two calls into Redis and a
/// length compare for all but the three commands it keeps.
extern "C" fn filter(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let Some(name) = arg(fctx, 0) else {
        return;
    };
    if !matches!(name.len(), 4 | 6 | 8) {
        return;
    }
    let kind = if name.eq_ignore_ascii_case(b"RENAME") || name.eq_ignore_ascii_case(b"RENAMENX") {
        Kind::Rename
    } else if name.eq_ignore_ascii_case(b"MOVE") {
        Kind::Move
    } else {
        return;
    };
    if api!(RedisModule_CommandFilterArgsCount(fctx)) != 3 {
        return;
    }
    if let (Some(key), Some(to)) = (arg(fctx, 1), arg(fctx, 2)) {
        let _ = std::panic::catch_unwind(|| keep(kind, key, to));
    }
}

fn keep(kind: Kind, key: &[u8], to: &[u8]) {
    let mut ring = ring();
    if ring.slots.len() < RING {
        ring.slots.push(Sent {
            kind: None,
            bytes: Vec::new(),
            split: 0,
        });
        ring.next = ring.slots.len() - 1;
    }
    let at = ring.next;
    ring.next = (at + 1) % RING;
    let slot = &mut ring.slots[at];
    slot.bytes.clear();
    slot.bytes.extend_from_slice(key);
    slot.bytes.extend_from_slice(to);
    slot.split = key.len();
    slot.kind = Some(kind);
}

/// Where the key `name` of db `db` was last sent, newest first, as
/// (db, name): each such send is taken out of the ring (a value leaves a
/// name once). Called by `unlink2`, on the main thread.
pub fn destinations(name: &[u8], db: i32) -> Vec<(i32, Vec<u8>)> {
    let mut ring = ring();
    let n = ring.slots.len();
    // The slot written last is just before `next` (`next` wraps once full).
    let newest = (ring.next + n).saturating_sub(1) % n.max(1);
    let mut out = Vec::new();
    for back in 0..n {
        let slot = &mut ring.slots[(newest + n - back) % n];
        let Some(kind) = slot.kind.filter(|_| slot.key() == name) else {
            continue;
        };
        slot.kind = None;
        let to = slot.to();
        match kind {
            Kind::Rename => out.push((db, to.to_vec())),
            Kind::Move => {
                let target = std::str::from_utf8(to)
                    .ok()
                    .and_then(|d| d.parse::<i32>().ok());
                if let Some(d) = target.filter(|&d| d >= 0) {
                    out.push((d, name.to_vec()));
                }
            }
        }
    }
    out
}
