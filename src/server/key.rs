//! An open key, closed on drop, with the sorted-set and list operations the
//! families need through the low-level key API (no `RM_Call`).

use super::api::{api, bytes_of, RStr};
use super::ctx::{Arg, Class, Ctx};
use crate::args::CmdError;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_int, c_long};

/// What a key holds, as far as our commands care.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KeyKind {
    Empty,
    Zset,
    List,
    Module,
    Other,
}

/// An open key. A read-only open of a missing key has a null handle: it
/// reads as empty, and write operations are only ever called on write opens.
pub struct Key {
    ctx: Ctx,
    ptr: *mut raw::RedisModuleKey,
    /// The name it was opened by (a value found under a name it was not
    /// scheduled under learns it: `module_type`).
    name: RStr,
}

/// A member read out of a sorted set or list, freed on drop.
pub struct OwnedStr {
    ctx: Ctx,
    pub ptr: RStr,
}

impl OwnedStr {
    pub fn bytes(&self) -> &[u8] {
        // Sound: `self` owns the string until it is dropped, which the
        // returned borrow of `self` outlives.
        unsafe { bytes_of(self.ptr) }
    }
}

impl Drop for OwnedStr {
    fn drop(&mut self) {
        api!(RedisModule_FreeString(self.ctx.0, self.ptr));
    }
}

impl Key {
    pub fn open(ctx: Ctx, name: RStr, write: bool) -> Key {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let ptr = api!(RedisModule_OpenKey(ctx.0, name, mode as c_int)).cast();
        Key { ctx, ptr, name }
    }

    /// Opens a key read-only for background upkeep: does not touch its LRU/LFU
    /// and (Redis 7.2+, ignored before) fires no keymiss event and counts no
    /// keyspace hit or miss. On a replica an expired key reads as missing and
    /// stays (only the master's DEL removes it).
    pub fn open_quiet(ctx: Ctx, name: RStr) -> Key {
        let mode = raw::REDISMODULE_READ
            | raw::REDISMODULE_OPEN_KEY_NOTOUCH
            | raw::REDISMODULE_OPEN_KEY_NONOTIFY
            | raw::REDISMODULE_OPEN_KEY_NOSTATS;
        let ptr = api!(RedisModule_OpenKey(ctx.0, name, mode as c_int)).cast();
        Key { ctx, ptr, name }
    }

    pub(super) fn raw(&self) -> *mut raw::RedisModuleKey {
        self.ptr
    }

    /// The context and name it was opened with.
    pub(super) fn opened_as(&self) -> (Ctx, RStr) {
        (self.ctx, self.name)
    }

    pub fn kind(&self) -> KeyKind {
        if self.ptr.is_null() {
            return KeyKind::Empty;
        }
        match api!(RedisModule_KeyType(self.raw())) as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => KeyKind::Empty,
            raw::REDISMODULE_KEYTYPE_ZSET => KeyKind::Zset,
            raw::REDISMODULE_KEYTYPE_LIST => KeyKind::List,
            raw::REDISMODULE_KEYTYPE_MODULE => KeyKind::Module,
            _ => KeyKind::Other,
        }
    }

    /// Entries of a sorted set or list (0 for an empty key).
    pub fn len(&self) -> usize {
        if self.ptr.is_null() {
            return 0;
        }
        api!(RedisModule_ValueLength(self.raw()))
    }

    /// The key's absolute expiry, Unix ms, if it has one.
    pub fn expire_at(&self) -> Option<i64> {
        if self.ptr.is_null() {
            return None;
        }
        let at = api!(RedisModule_GetAbsExpire(self.raw()));
        (at >= 0).then_some(at)
    }

    pub fn set_expire_at(&self, at_ms: i64) {
        api!(RedisModule_SetAbsExpire(self.raw(), at_ms));
    }

    /// Deletes the key. Takes `&mut self`: no value borrowed from this key
    /// (`value`, `value_mut`) can outlive it.
    pub fn delete(&mut self) {
        api!(RedisModule_DeleteKey(self.raw()));
    }

    // ---- sorted sets ----

    /// `ZADD key GT score member`: returns true when the set changed.
    pub fn zadd_gt(&self, score: f64, member: RStr) -> bool {
        let mut flags = raw::REDISMODULE_ZADD_GT as c_int;
        api!(RedisModule_ZsetAdd(self.raw(), score, member, &mut flags));
        flags & (raw::REDISMODULE_ZADD_ADDED | raw::REDISMODULE_ZADD_UPDATED) as c_int != 0
    }

    /// Removes a member; true if it was there. An emptied set is deleted by Redis.
    pub fn zrem(&self, member: RStr) -> bool {
        let mut deleted: c_int = 0;
        api!(RedisModule_ZsetRem(self.raw(), member, &mut deleted));
        deleted != 0
    }

    /// Visits members with score >= `min` (> `min` if `exclusive`), highest
    /// score first (ties in reverse member order, as ZREVRANGE), until `visit`
    /// returns false.
    pub fn zrev_each(
        &self,
        min: f64,
        exclusive: bool,
        mut visit: impl FnMut(OwnedStr, f64) -> bool,
    ) {
        self.zscan(true, min, exclusive, &mut visit);
    }

    /// Visits members lowest score first until `visit` returns false.
    pub fn zfwd_each(&self, mut visit: impl FnMut(OwnedStr, f64) -> bool) {
        self.zscan(false, f64::NEG_INFINITY, false, &mut visit);
    }

    fn zscan(
        &self,
        reverse: bool,
        min: f64,
        exclusive: bool,
        visit: &mut dyn FnMut(OwnedStr, f64) -> bool,
    ) {
        let k = self.raw();
        if k.is_null() {
            return;
        }
        let minex = exclusive as c_int;
        let started = if reverse {
            api!(RedisModule_ZsetLastInScoreRange(
                k,
                min,
                f64::INFINITY,
                minex,
                0
            ))
        } else {
            api!(RedisModule_ZsetFirstInScoreRange(
                k,
                min,
                f64::INFINITY,
                minex,
                0
            ))
        };
        if started != raw::REDISMODULE_OK as c_int {
            return;
        }
        while api!(RedisModule_ZsetRangeEndReached(k)) == 0 {
            let mut score = 0f64;
            let ptr = api!(RedisModule_ZsetRangeCurrentElement(k, &mut score));
            if ptr.is_null() {
                break;
            }
            let member = OwnedStr { ctx: self.ctx, ptr };
            if !visit(member, score) {
                break;
            }
            let more = if reverse {
                api!(RedisModule_ZsetRangePrev(k))
            } else {
                api!(RedisModule_ZsetRangeNext(k))
            };
            if more == 0 {
                break;
            }
        }
        api!(RedisModule_ZsetRangeStop(k));
    }

    /// The highest score above `floor`, if any. Cheap when there is none
    /// (the usual case for a write at the current time): no member is read.
    pub fn zmax_score_above(&self, floor: f64) -> Option<f64> {
        let mut max = None;
        self.zrev_each(floor, true, |_, score| {
            max = Some(score);
            false
        });
        max
    }

    /// Removes the `count` lowest-scored members; returns how many went.
    pub fn ztrim_lowest(&self, count: usize) -> usize {
        let mut doomed = Vec::with_capacity(count);
        // Collect first: the range iterator must not see the set change.
        self.zfwd_each(|member, _| {
            doomed.push(member);
            doomed.len() < count
        });
        doomed.iter().filter(|m| self.zrem(m.ptr)).count()
    }

    // ---- lists ----

    pub fn list_push_head(&self, item: RStr) {
        api!(RedisModule_ListPush(
            self.raw(),
            raw::REDISMODULE_LIST_HEAD as c_int,
            item
        ));
    }

    /// Item at `index` (0 = head).
    pub fn list_get(&self, index: usize) -> Option<OwnedStr> {
        let ptr = api!(RedisModule_ListGet(self.raw(), index as c_long));
        (!ptr.is_null()).then_some(OwnedStr { ctx: self.ctx, ptr })
    }

    pub fn list_delete(&self, index: usize) {
        api!(RedisModule_ListDelete(self.raw(), index as c_long));
    }

    /// Drops the tail item. (Popping, not `ListDelete(-1)`: repeated tail
    /// deletes trip an iterator assertion in Redis 7.0's module.c.)
    pub fn list_pop_tail(&self) {
        let ptr = api!(RedisModule_ListPop(
            self.raw(),
            raw::REDISMODULE_LIST_TAIL as c_int
        ));
        if !ptr.is_null() {
            drop(OwnedStr { ctx: self.ctx, ptr });
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            api!(RedisModule_CloseKey(self.ptr));
        }
    }
}

/// What a command does to its key through the context (here, not in `ctx`,
/// which keys sit on).
impl Ctx {
    /// Deletes `key` if its new expiry is already past, as a core write with
    /// an expiry in the past would leave it; true if it did. Never on a
    /// replica or while loading: those follow the master's own `DEL`.
    pub fn delete_if_expired(self, key: &mut Key, name: RStr, expire_at: i64) -> bool {
        if expire_at > self.now_ms() || self.is_replicated_or_loading() {
            return false;
        }
        key.delete();
        self.notify(Class::Expired, c"expired", name);
        self.replicate(c"DEL", &[Arg::Str(name)]);
        true
    }

    pub fn open(self, name: RStr, write: bool) -> Key {
        Key::open(self, name, write)
    }

    /// Opens a key that must be missing or of `kind` (WRONGTYPE otherwise).
    pub fn open_kind(self, name: RStr, write: bool, kind: KeyKind) -> Result<Key, CmdError> {
        let key = Key::open(self, name, write);
        match key.kind() {
            KeyKind::Empty => Ok(key),
            found if found == kind => Ok(key),
            _ => Err(CmdError::WrongType),
        }
    }

    /// Gives a written key its new absolute expiry, if the write has one, and
    /// fires `expire`; deletes it instead if that time is already past.
    /// Returns true when the key is gone.
    pub fn apply_expiry(self, key: &mut Key, name: RStr, expire_at: Option<i64>) -> bool {
        let Some(ms) = expire_at else {
            return false;
        };
        if self.delete_if_expired(key, name, ms) {
            return true;
        }
        key.set_expire_at(ms);
        self.notify(Class::Generic, c"expire", name);
        false
    }

    /// After a removal that changed `key`: fires `event`, `del` if the key is
    /// now gone, and replicates the (deterministic) call verbatim.
    pub fn removed(self, key: &Key, name: RStr, class: Class, event: &CStr) {
        self.notify(class, event, name);
        if key.kind() == KeyKind::Empty {
            self.notify(Class::Generic, c"del", name);
        }
        self.replicate_verbatim();
    }
}
