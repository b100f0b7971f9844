//! What every value of ours carries ahead of its data, in the block Redis
//! holds for the key ([`Held`]): an identity that is not its address
//! (active defrag moves values, and a freed address is handed out again),
//! and what the module knows about it beside the keyspace (flags). Derived
//! state: stamped when a value is made (a write, a load, a copy), never
//! encoded, so no file or replica sees it.
//!
//! Which module types are ours is kept here too ([`adopt`], [`is_ours`]):
//! only their values carry a tag.

use super::api::api;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A value of ours as Redis holds it: the tag first, whatever `T` is, so
/// code that does not know `T` finds the tag ([`tag_of`]).
#[repr(C)]
pub struct Held<T> {
    pub tag: Tag,
    pub value: T,
}

impl<T> Held<T> {
    /// A new value with a new identity.
    pub fn new(value: T) -> Held<T> {
        Held {
            tag: Tag(Cell::new(NEXT_ID.fetch_add(1, Ordering::Relaxed))),
            value,
        }
    }
}

/// The identity (low 56 bits) and flags (high 8) of a value. A `Cell`:
/// Redis hands callbacks shared pointers to values it owns, and the flags
/// change under them; only one thread ever touches a value at a time (the
/// main thread while it is in the keyspace, whoever frees it after).
#[repr(transparent)]
pub struct Tag(Cell<u64>);

const ID_BITS: u64 = (1 << 56) - 1;
/// Unlinked from its name with work owed there, and not found since: where
/// it is now is not known (`moved`).
const LOST: u64 = 1 << 56;
/// Left mid-change by a panic: never read again, leaked when freed (`panics`).
const POISONED: u64 = 1 << 57;

/// Identities are never 0: a schedule entry's owner 0 means "the value at
/// the name" (`reclaim`).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Tag {
    pub fn id(&self) -> u64 {
        self.0.get() & ID_BITS
    }

    fn flag(&self, flag: u64) -> bool {
        self.0.get() & flag != 0
    }

    fn set(&self, flag: u64, on: bool) {
        let bits = self.0.get();
        self.0.set(if on { bits | flag } else { bits & !flag });
    }

    pub fn is_lost(&self) -> bool {
        self.flag(LOST)
    }

    pub fn set_lost(&self, lost: bool) {
        self.set(LOST, lost)
    }

    pub fn is_poisoned(&self) -> bool {
        self.flag(POISONED)
    }

    pub fn poison(&self) {
        self.set(POISONED, true)
    }
}

/// The tag of a value of ours.
///
/// # Safety
/// `value` is the pointer Redis holds for a key of one of our types (a
/// `Box<Held<T>>` turned raw), alive for `'a`.
pub unsafe fn tag_of<'a>(value: *const c_void) -> &'a Tag {
    unsafe { &*value.cast::<Tag>() }
}

/// Our module types, by the pointer Redis gave each at registration: at
/// most a few, set at load, read without a lock.
static OURS: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

/// Records `ty` (just registered) as one of ours.
pub fn adopt(ty: &RedisType) {
    let ptr = *ty.raw_type.borrow() as usize;
    if let Some(free) = OURS.iter().find(|slot| slot.load(Ordering::Relaxed) == 0) {
        free.store(ptr, Ordering::Relaxed);
    }
}

/// Whether the open module key `key` holds a value of one of our types.
pub fn is_ours(key: *mut raw::RedisModuleKey) -> bool {
    if key.is_null() {
        return false;
    }
    let ty = api!(RedisModule_ModuleTypeGetType(key)) as usize;
    ty != 0 && OURS.iter().any(|slot| slot.load(Ordering::Relaxed) == ty)
}

/// The tag of the value in `key`, if it holds one of ours.
pub fn tag_in<'a>(key: *mut raw::RedisModuleKey) -> Option<&'a Tag> {
    if !is_ours(key) {
        return None;
    }
    let value = api!(RedisModule_ModuleTypeGetValue(key));
    // Sound: the key holds one of our values (checked above), alive while
    // the key is open, which the caller's borrow does not outlive.
    (!value.is_null()).then(|| unsafe { tag_of(value) })
}
