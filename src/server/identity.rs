//! How a value of ours is known beside the keyspace: by its address, for as
//! long as it lives. Values carry nothing of the module's in their block
//! (`MEMORY USAGE` counts only their data); what the module keeps about a
//! few of them (the values it follows, the schedule entries a load or a
//! copy made, the value a load scheduled last, values a panic left broken)
//! is kept beside them, keyed by that address. It stays right because:
//!
//! - an address names one live value: every entry keyed by it leaves before
//!   the value's block is freed (the type's `free` takes them out first, on
//!   whichever thread frees it), so a block handed out again is never
//!   mistaken for the value that had it;
//! - only our `defrag` callback moves a value's block (Redis hands it the
//!   slot and never copies our data itself), and it re-keys what is kept
//!   about the value at once, before anything else runs (`reclaim`'s
//!   `value_moved`).
//!
//! Which module types are ours is kept here too ([`adopt`], [`is_ours`]).

use super::api::api;
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A value of ours: its address while it lives (never 0, so a schedule
/// entry's owner 0 can mean "the value at the name": `reclaim`).
pub type Id = u64;

/// The identity of the value Redis holds as `value`.
pub fn id_of(value: *const c_void) -> Id {
    value as usize as Id
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

/// The identity of the value in `key`, if it holds one of ours.
pub fn value_in(key: *mut raw::RedisModuleKey) -> Option<Id> {
    if !is_ours(key) {
        return None;
    }
    let value = api!(RedisModule_ModuleTypeGetValue(key));
    (!value.is_null()).then(|| id_of(value))
}

/// Values a panic left mid-change (`panics`): never read again, leaked when
/// freed. Each is deleted from its key right after it is marked, so none is
/// ever in the keyspace for defrag to move.
static POISONED: Mutex<Option<HashSet<Id>>> = Mutex::new(None);
/// Whether any value is marked: `free` looks only then.
static ANY_POISONED: AtomicBool = AtomicBool::new(false);

fn poisoned() -> std::sync::MutexGuard<'static, Option<HashSet<Id>>> {
    POISONED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Marks the value `id` as left mid-change by a panic.
pub fn poison(id: Id) {
    poisoned().get_or_insert_with(HashSet::new).insert(id);
    ANY_POISONED.store(true, Ordering::Release);
}

/// Whether the value `id` is marked.
pub fn is_poisoned(id: Id) -> bool {
    ANY_POISONED.load(Ordering::Acquire) && poisoned().as_ref().is_some_and(|s| s.contains(&id))
}

/// `free` of the value `id`: whether it was marked (it is no more).
pub fn take_poisoned(id: Id) -> bool {
    if !ANY_POISONED.load(Ordering::Acquire) {
        return false;
    }
    let mut set = poisoned();
    let Some(marked) = set.as_mut() else {
        return false;
    };
    let was = marked.remove(&id);
    if marked.is_empty() {
        *set = None;
        ANY_POISONED.store(false, Ordering::Release);
    }
    was
}
