//! Active defrag, the server half: the `defrag` type callback's body for any
//! module type (`module_type` hands it the value's walk), the [`Mover`] that asks Redis' allocator to move blocks
//! (`RedisModule_DefragAlloc`), and the module's global allocator, which
//! places the blocks of containers a pass rebuilds. What a value offers, in
//! what order, and where a stopped pass resumes is pure code
//! (`tuples::defrag`).
//!
//! Redis calls the callback for every key of our types while it defrags
//! (`activedefrag yes`, on a server built with its jemalloc): a key whose
//! free effort is at most `active-defrag-max-scan-fields` in one call that
//! never stops; a bigger one "late", in calls bounded by time, each resuming
//! where the last one stopped. Redis' cursor is one number, so it holds a
//! token and the resume path stays here: Redis defrags one late key at a
//! time, so one is enough, and a token it does not match (another key, or
//! the key replaced by another type) starts a pass from the beginning.
//!
//! Why moving a block is sound: every block of our values comes from the
//! module's allocator, which is Redis' (`RedisModule_Alloc`), the one
//! `RedisModule_DefragAlloc` works on. When that moves a block it copies all
//! of it (its usable size) into a block of the same size class (so the same
//! alignment), frees the old one and returns the new one; we then point the
//! owner (the `Vec`, `Box`, ...) at the new block and never touch the old.
//! It runs on the main thread inside the callback, while nothing else holds
//! a reference into the value.

use super::api::api;
use crate::stats::Stat;
use crate::tuples::defrag::{Mover, Pass, Resume};
#[cfg(not(test))]
use redis_module::alloc::RedisAlloc;
use redis_module::raw;
use smallvec::{Array, SmallVec};
#[cfg(not(test))]
use std::alloc::GlobalAlloc;
use std::alloc::Layout;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

/// Calls of the defrag callback (`INFO recipes`).
pub static CALLS: Stat = Stat::new("defrag_calls");
/// Blocks the allocator moved for us.
pub static MOVED: Stat = Stat::new("defrag_moved");
/// Calls that went on with a pass an earlier call had to stop.
pub static RESUMED: Stat = Stat::new("defrag_resumed");
/// The counters above, for `INFO recipes`.
pub static STATS: &[&Stat] = &[&CALLS, &MOVED, &RESUMED];

/// A pass that stopped before the end: the token Redis holds as its cursor,
/// the type it walked and where it resumes.
struct Stopped {
    token: u64,
    type_name: &'static str,
    at: Resume,
}

static STOPPED: Mutex<Option<Stopped>> = Mutex::new(None);
static LAST_TOKEN: AtomicU64 = AtomicU64::new(0);

fn stopped() -> std::sync::MutexGuard<'static, Option<Stopped>> {
    STOPPED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `defrag` callback of a value of type `type_name` (see the module
/// doc): moves the value's own block, then `offer`s the value (its new
/// address) to the pass; 1 when it stopped with work left (Redis calls
/// again, with the cursor set), else 0.
///
/// # Safety
/// `ctx` and `value` are what Redis passed the callback: `*value` is a
/// `Box` of the type turned raw (see `module_type`), which we may replace.
pub unsafe fn run(
    ctx: *mut raw::RedisModuleDefragCtx,
    value: *mut *mut c_void,
    type_name: &'static str,
    offer: impl FnOnce(*mut c_void, &mut Pass<ServerMover>),
) -> c_int {
    CALLS.add(1);
    let mut cursor = 0;
    let late = api!(RedisModule_DefragCursorGet(ctx, &mut cursor)) == raw::REDISMODULE_OK as c_int;
    // Only a late call resumes; the state stays for it meanwhile.
    let resume = (late && cursor != 0)
        .then(|| stopped().take())
        .flatten()
        .filter(|s| s.token == cursor && s.type_name == type_name)
        .map(|s| s.at);
    let mut mover = ServerMover { ctx };
    match &resume {
        Some(_) => RESUMED.add(1),
        // A pass from the start moves the value's own block first. Sound:
        // see the module doc; `*value` then points at the moved `T`.
        None => mover.relocate(unsafe { &mut *value }),
    }
    // Sound: see the safety section.
    let value = unsafe { *value };
    let mut pass = Pass::new(&mut mover, resume.unwrap_or_default());
    offer(value, &mut pass);
    let Some(at) = pass.finish() else {
        return 0;
    };
    // Tokens are never 0: Redis takes a cursor of 0 for "done".
    let token = LAST_TOKEN.fetch_add(1, Ordering::Relaxed) + 1;
    if api!(RedisModule_DefragCursorSet(ctx, token as _)) != raw::REDISMODULE_OK as c_int {
        // Not a late call (it cannot resume): the next visit starts again.
        return 0;
    }
    *stopped() = Some(Stopped {
        token,
        type_name,
        at,
    });
    1
}

/// Moves blocks through `RedisModule_DefragAlloc` during one callback.
pub struct ServerMover {
    ctx: *mut raw::RedisModuleDefragCtx,
}

impl ServerMover {
    /// Offers `block`; if the allocator moved it, `block` is the new one.
    ///
    /// Sound when `block` is a live block of the module's allocator that
    /// nothing else points at (see the module doc): a null answer leaves it
    /// alone.
    fn relocate<T>(&mut self, block: &mut *mut T) {
        let moved = api!(RedisModule_DefragAlloc(self.ctx, block.cast()));
        if !moved.is_null() {
            *block = moved.cast();
            MOVED.add(1);
        }
    }
}

impl Mover for ServerMover {
    fn vec<T>(&mut self, v: &mut Vec<T>) {
        if v.capacity() == 0 || std::mem::size_of::<T>() == 0 {
            return; // no block
        }
        let (mut ptr, len, capacity) = (v.as_mut_ptr(), v.len(), v.capacity());
        self.relocate(&mut ptr);
        // Sound: `ptr` is the vector's block, moved or not, with its `len`
        // items and room for `capacity`; the old vector is forgotten, never
        // touching a freed block.
        unsafe {
            std::mem::forget(std::mem::replace(
                v,
                Vec::from_raw_parts(ptr, len, capacity),
            ))
        }
    }

    fn boxed<T>(&mut self, b: &mut Box<T>) {
        if std::mem::size_of::<T>() == 0 {
            return;
        }
        let mut ptr: *mut T = &mut **b;
        self.relocate(&mut ptr);
        // Sound: as for `vec`, with the box's one `T`.
        unsafe { std::mem::forget(std::mem::replace(b, Box::from_raw(ptr))) }
    }

    fn slice<T>(&mut self, b: &mut Box<[T]>) {
        if b.is_empty() || std::mem::size_of::<T>() == 0 {
            return;
        }
        let len = b.len();
        let mut ptr = b.as_mut_ptr();
        self.relocate(&mut ptr);
        // Sound: as for `vec`, with the slice's `len` items.
        unsafe {
            let moved = Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len));
            std::mem::forget(std::mem::replace(b, moved));
        }
    }

    fn small_vec<A: Array>(&mut self, v: &mut SmallVec<A>) {
        if !v.spilled() || std::mem::size_of::<A::Item>() == 0 {
            return; // inline: no block of its own
        }
        let (mut ptr, len, capacity) = (v.as_mut_ptr(), v.len(), v.capacity());
        self.relocate(&mut ptr);
        // Sound: as for `vec`; a spilled vector's capacity exceeds its
        // inline room, as `from_raw_parts` requires.
        unsafe {
            let moved = SmallVec::from_raw_parts(ptr, len, capacity);
            std::mem::forget(std::mem::replace(v, moved));
        }
    }

    unsafe fn raw(&mut self, block: NonNull<u8>, _layout: Layout) -> NonNull<u8> {
        let mut ptr = block.as_ptr();
        // Sound: `block` is a live block of the global allocator (the
        // caller's contract), which is the module's, Redis' allocator. The
        // caller re-points what pointed at the old block (`Mover::raw`).
        self.relocate(&mut ptr);
        NonNull::new(ptr).unwrap_or(block)
    }

    fn placed<R>(&mut self, rebuild: impl FnOnce(&mut Self) -> R) -> R {
        let _placing = Placing::start(self.ctx);
        rebuild(self)
    }

    fn should_stop(&mut self) -> bool {
        api!(RedisModule_DefragShouldStop(self.ctx)) != 0
    }
}

/// The callback's context while a rebuild runs, and the thread running it.
static PLACING: AtomicPtr<raw::RedisModuleDefragCtx> = AtomicPtr::new(std::ptr::null_mut());
static PLACING_THREAD: AtomicU64 = AtomicU64::new(0);

/// Places the module's new blocks while it lives (on this thread only).
struct Placing;

impl Placing {
    fn start(ctx: *mut raw::RedisModuleDefragCtx) -> Placing {
        PLACING_THREAD.store(this_thread(), Ordering::Relaxed);
        PLACING.store(ctx, Ordering::Release);
        Placing
    }
}

impl Drop for Placing {
    fn drop(&mut self) {
        PLACING.store(std::ptr::null_mut(), Ordering::Release);
    }
}

fn this_thread() -> u64 {
    // Sound: `pthread_self` has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

/// The module's global allocator: Redis' (`RedisModule_Alloc`), and while a
/// defrag pass rebuilds a container on the main thread ([`Mover::placed`]),
/// every new block is offered to `RedisModule_DefragAlloc` at once: a fresh
/// block may come from a sparse page like any other (the allocator's
/// per-thread cache hands out what was just freed), and this moves it to
/// where the allocator wants it, before anything is written into it.
/// Outside a rebuild it costs one atomic load.
// Unit tests run on the system allocator (no server): not built there.
#[cfg(not(test))]
pub struct ModuleAlloc;

// Sound: blocks come from `RedisAlloc` and go back to it. A block moved by
// `RedisModule_DefragAlloc` is a block of the same allocator and size class
// (so at least the size and alignment asked for), handed out before anyone
// wrote into it; the call runs only on the thread inside the defrag callback
// whose context `PLACING` holds (other threads, such as Redis' lazy-free
// thread freeing a value, see another thread id and are left alone).
#[cfg(not(test))]
unsafe impl GlobalAlloc for ModuleAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let block = unsafe { RedisAlloc.alloc(layout) };
        let ctx = PLACING.load(Ordering::Acquire);
        if ctx.is_null()
            || block.is_null()
            || PLACING_THREAD.load(Ordering::Relaxed) != this_thread()
        {
            return block;
        }
        let moved = api!(RedisModule_DefragAlloc(ctx, block.cast()));
        if moved.is_null() {
            return block;
        }
        MOVED.add(1);
        moved.cast()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { RedisAlloc.dealloc(ptr, layout) }
    }
}
