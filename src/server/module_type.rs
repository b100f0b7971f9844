//! Rust values stored in module keys: the Redis type callbacks (RDB, AOF
//! rewrite, DEBUG DIGEST, MEMORY USAGE, COPY, unlink (which keeps the
//! background schedules on the keys: `moved`), free, free effort (which lets
//! Redis' lazyfree take big values), defrag (see `defrag`)) generated once for any
//! type implementing [`ModuleValue`], so a family only writes pure encoding
//! and rewrite logic.
//!
//! A payload a type refuses (RDB, RESTORE, MIGRATE, a replica's sync) is
//! logged once, naming the type, the encoding version and what was wrong:
//! Redis' own message only says to "check the module log above". At most
//! [`RefusalLog::PER_SECOND`] such lines a second, so a stream of bad
//! payloads cannot flood the log.
//!
//! Soundness: Redis hands every callback the `value` pointer it got from
//! [`Key::set_value`] (a `Box<T>` turned raw) or from our `rdb_load`/`copy`,
//! for the type those callbacks were registered with, so casting it back to
//! `T` is sound; it is freed exactly once, by `free`. The pointer is also
//! the value's identity (`identity`).

use super::api::{api, copy_of, new_string, RStr};
use super::fault;
use super::identity::{self, id_of};
use super::key::{Key, KeyKind};
use crate::args::{printable, CmdError};
use crate::tuples::defrag::{Mover, Pass};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::{c_void, CStr, CString};
use std::fmt::Display;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// A value kept in a module key.
pub trait ModuleValue: Clone + Sized + Send + 'static {
    /// The name the type is registered under (Redis wants exactly 9
    /// characters); refusals are logged with it.
    const TYPE_NAME: &'static str;
    /// The encoding version `encode` writes; Redis stores it beside each
    /// value and hands it back to `decode`. Each type names its versions and
    /// keeps decoding every one it ever wrote.
    const ENCODING_VERSION: c_int;
    /// What `decode` says about bytes it refuses.
    type DecodeError: Display;
    /// Bytes for RDB (and so DUMP/RESTORE/MIGRATE, replica sync).
    fn encode(&self) -> Vec<u8>;
    /// The inverse of `encode` for data written with `encver`; for bytes it
    /// cannot trust or a version it does not know, what is wrong.
    fn decode(bytes: &[u8], encver: c_int) -> Result<Self, Self::DecodeError>;
    /// A value held in a key only while a file loads, in place of one whose
    /// save panicked (`unsaved::marker_loaded`): dropped when the load ends.
    fn placeholder() -> Self;
    /// Heap bytes held, for MEMORY USAGE.
    fn mem_usage(&self) -> usize;
    /// [`ModuleValue::mem_usage`] sized from about `samples` items of each
    /// collection (`MEMORY USAGE key SAMPLES n`, 5 by default; 0 = all), so
    /// the command stays fast on a big key.
    fn mem_usage_sampled(&self, _samples: usize) -> usize {
        self.mem_usage()
    }
    /// About how many allocations freeing it takes: above 64, Redis frees the
    /// value on its lazyfree thread where the operator's settings ask for it.
    fn free_effort(&self) -> usize;
    /// Emits the commands that rebuild this value into `aof`.
    fn rewrite(&self, aof: &AofWriter);
    /// When the value's next expiring item is due, for types with background
    /// reclaim (a loaded key is then scheduled).
    fn next_due(&self) -> Option<i64> {
        None
    }
    /// When the value's next internal upkeep is due, for types with background
    /// upkeep (`Reclaimer::everywhere`; a loaded key is then scheduled).
    fn upkeep_due(&self) -> Option<i64> {
        None
    }
    /// The value is leaked, not dropped (a panic left it mid-change, so its
    /// data is not walked): what gauges count of it leaves them.
    fn leaked(&self) {}
    /// Offers the value's heap blocks to an active-defrag pass
    /// (`tuples::defrag`), in bounded units of work. By default none: only
    /// the value's own block is moved.
    fn defrag<M: Mover>(&mut self, _pass: &mut Pass<M>) {}
}

/// The AOF being rewritten, with the key whose commands it is receiving.
pub struct AofWriter {
    io: *mut raw::RedisModuleIO,
    key: RStr,
}

impl AofWriter {
    /// Appends `cmd key args...` to the AOF.
    pub fn emit(&self, cmd: &CStr, args: &[&[u8]]) {
        let mut strings: Vec<RStr> = args.iter().map(|a| new_string(a)).collect();
        // Sound: `s` is a Redis string and `v` a vector of `len` Redis
        // strings, as the format string says.
        unsafe {
            raw::RedisModule_EmitAOF.unwrap()(
                self.io,
                cmd.as_ptr(),
                c"sv".as_ptr(),
                self.key,
                strings.as_mut_ptr(),
                strings.len(),
            );
        }
        for s in strings {
            api!(RedisModule_FreeString(std::ptr::null_mut(), s));
        }
    }
}

/// The type callbacks for `T`, for `RedisType::new`.
pub const fn type_methods<T: ModuleValue>() -> raw::RedisModuleTypeMethods {
    raw::RedisModuleTypeMethods {
        // Version 4 is what Redis 7.0 knows; later fields stay unset.
        version: 4,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<T>),
        unlink: None,
        copy: None,
        defrag: Some(defrag::<T>),
        mem_usage2: Some(mem_usage2::<T>),
        free_effort2: None,
        unlink2: Some(unlink2::<T>),
        copy2: Some(copy::<T>),
        aux_save2: None,
    }
}

/// Runs a callback body; a panic becomes `fallback` instead of unwinding into Redis.
fn guarded<R>(fallback: R, body: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

unsafe fn value_ref<'a, T>(value: *const c_void) -> &'a T {
    &*value.cast::<T>()
}

/// The name of the key saved or loaded through `io`, when Redis gives one.
fn key_name(io: *mut raw::RedisModuleIO) -> Option<Vec<u8>> {
    let name = api!(RedisModule_GetKeyNameFromIO(io));
    (!name.is_null()).then(|| copy_of(name.cast_mut()))
}

/// Saves the value's encoding; if encoding panics, a marker in its place
/// (`unsaved::save_panicked`).
extern "C" fn rdb_save<T: ModuleValue>(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guarded((), || {
        let encoded = catch_unwind(AssertUnwindSafe(|| {
            if fault::armed() {
                let name = key_name(rdb).unwrap_or_default();
                fault::inject(fault::Fault::Save, &name);
            }
            unsafe { value_ref::<T>(value) }.encode()
        }));
        let bytes = match &encoded {
            Ok(bytes) => bytes.as_slice(),
            Err(_) => super::unsaved::save_panicked(key_name(rdb).as_deref()),
        };
        api!(RedisModule_SaveStringBuffer(
            rdb,
            bytes.as_ptr().cast(),
            bytes.len()
        ));
    })
}

extern "C" fn rdb_load<T: ModuleValue>(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    guarded(std::ptr::null_mut(), || {
        let mut len = 0usize;
        let buf = api!(RedisModule_LoadStringBuffer(rdb, &mut len));
        if buf.is_null() || api!(RedisModule_IsIOError(rdb)) != 0 {
            log_refusal::<T>(rdb, encver, &"the payload could not be read");
            return std::ptr::null_mut();
        }
        // Sound: Redis returned `len` bytes it allocated for us; we free them below.
        let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
        if bytes == super::unsaved::SAVE_PANICKED {
            api!(RedisModule_Free(buf.cast()));
            let placeholder = Box::into_raw(Box::new(T::placeholder()));
            if super::unsaved::marker_loaded(rdb, id_of(placeholder.cast())) {
                return placeholder.cast();
            }
            // Sound: made just above, never handed to Redis.
            drop(unsafe { Box::from_raw(placeholder) });
            log_refusal::<T>(
                rdb,
                encver,
                &"its value could not be saved (a panic, logged then)",
            );
            return std::ptr::null_mut();
        }
        let value = T::decode(bytes, encver);
        api!(RedisModule_Free(buf.cast()));
        let value = match value {
            Ok(value) => value,
            Err(why) => {
                log_refusal::<T>(rdb, encver, &why);
                return std::ptr::null_mut();
            }
        };
        let (reclaim_due, upkeep_due) = (value.next_due(), value.upkeep_due());
        let value = Box::into_raw(Box::new(value));
        super::reclaim::schedule_loaded(rdb, id_of(value.cast()), reclaim_due, upkeep_due);
        value.cast()
    })
}

/// Logs why a payload of `T` read through `io` was refused: one warning,
/// `recipesHC v1: cell count 4294967295 exceeds the payload (key "k")`,
/// unless [`RefusalLog`] holds it back.
fn log_refusal<T: ModuleValue>(io: *mut raw::RedisModuleIO, encver: c_int, why: &dyn Display) {
    let Some(held_back) = REFUSALS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .admit(super::ctx::clock_ms())
    else {
        return;
    };
    let mut line = format!("{} v{encver}: {why}", T::TYPE_NAME);
    if let Some(name) = key_name(io) {
        line += &format!(" (key \"{}\")", printable(&name));
    }
    if held_back > 0 {
        line += &format!("; {held_back} refused payloads before it were not logged");
    }
    let line = CString::new(line.replace('\0', "?")).unwrap_or_default();
    // Sound: a format of one `%s` with one NUL-terminated string.
    unsafe {
        raw::RedisModule_LogIOError.unwrap()(
            io,
            c"warning".as_ptr(),
            c"%s".as_ptr(),
            line.as_ptr(),
        );
    }
}

static REFUSALS: Mutex<RefusalLog> = Mutex::new(RefusalLog::new());

/// Lets at most [`RefusalLog::PER_SECOND`] refusal lines through in each
/// second of the clock and counts the rest, which the next line logged reports.
struct RefusalLog {
    second: i64,
    admitted: u32,
    held_back: u64,
}

impl RefusalLog {
    const PER_SECOND: u32 = 10;

    const fn new() -> Self {
        RefusalLog {
            second: i64::MIN,
            admitted: 0,
            held_back: 0,
        }
    }

    /// At `now_ms`: `Some(n)` to log the line (`n` lines were held back
    /// since the last one logged), `None` to hold it back.
    fn admit(&mut self, now_ms: i64) -> Option<u64> {
        let second = now_ms.div_euclid(1000);
        if second != self.second {
            self.second = second;
            self.admitted = 0;
        }
        if self.admitted == Self::PER_SECOND {
            self.held_back += 1;
            return None;
        }
        self.admitted += 1;
        Some(std::mem::take(&mut self.held_back))
    }
}

extern "C" fn aof_rewrite<T: ModuleValue>(
    aof: *mut raw::RedisModuleIO,
    key: RStr,
    value: *mut c_void,
) {
    let rewritten = catch_unwind(AssertUnwindSafe(|| {
        if fault::armed() {
            fault::inject(fault::Fault::Save, &copy_of(key));
        }
        unsafe { value_ref::<T>(value) }.rewrite(&AofWriter { io: aof, key })
    }));
    if rewritten.is_err() {
        guarded((), || super::unsaved::rewrite_panicked(&copy_of(key)));
    }
}

/// `DEBUG DIGEST` / `DEBUG DIGEST-VALUE`: the value's encoding (its logical
/// content in a fixed order), so a replica digests as its master does and
/// every write that changes the content changes the digest.
extern "C" fn digest<T: ModuleValue>(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guarded((), || {
        let bytes = unsafe { value_ref::<T>(value) }.encode();
        api!(RedisModule_DigestAddStringBuffer(
            md,
            bytes.as_ptr().cast_mut().cast(),
            bytes.len()
        ));
        api!(RedisModule_DigestEndSequence(md));
    })
}

extern "C" fn mem_usage<T: ModuleValue>(value: *const c_void) -> usize {
    guarded(0, || {
        std::mem::size_of::<T>() + unsafe { value_ref::<T>(value) }.mem_usage()
    })
}

extern "C" fn mem_usage2<T: ModuleValue>(
    _ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
    samples: usize,
) -> usize {
    guarded(0, || {
        std::mem::size_of::<T>() + unsafe { value_ref::<T>(value) }.mem_usage_sampled(samples)
    })
}

extern "C" fn free_effort<T: ModuleValue>(_key: RStr, value: *const c_void) -> usize {
    if identity::is_poisoned(id_of(value)) {
        return 1;
    }
    guarded(1, || unsafe { value_ref::<T>(value) }.free_effort())
}

/// `COPY`: a clone, scheduled under the copy's name and db for what it owes.
extern "C" fn copy<T: ModuleValue>(
    ctx: *mut raw::RedisModuleKeyOptCtx,
    value: *const c_void,
) -> *mut c_void {
    guarded(std::ptr::null_mut(), || {
        let copy = unsafe { value_ref::<T>(value) }.clone();
        let (reclaim_due, upkeep_due) = (copy.next_due(), copy.upkeep_due());
        let copy = Box::into_raw(Box::new(copy));
        super::reclaim::schedule_copy(
            api!(RedisModule_GetToDbIdFromOptCtx(ctx)),
            api!(RedisModule_GetToKeyNameFromOptCtx(ctx)).cast_mut(),
            id_of(copy.cast()),
            reclaim_due,
            upkeep_due,
        );
        copy.cast()
    })
}

/// The value leaves its key (deleted, expired, evicted, overwritten,
/// renamed or moved away): its schedule entries leave with it (`moved`).
/// Called only for our values, so other keys pay nothing.
extern "C" fn unlink2<T: ModuleValue>(ctx: *mut raw::RedisModuleKeyOptCtx, value: *const c_void) {
    guarded((), || {
        super::moved::unlinked(
            api!(RedisModule_GetKeyNameFromOptCtx(ctx)).cast_mut(),
            api!(RedisModule_GetDbIdFromOptCtx(ctx)),
            id_of(value),
            super::reclaim::forget,
        );
    })
}

/// Active defrag of the value of `key`: its blocks may move, its own
/// included, and what is kept about it by its identity follows
/// (`reclaim::value_moved`).
extern "C" fn defrag<T: ModuleValue>(
    ctx: *mut raw::RedisModuleDefragCtx,
    key: RStr,
    value: *mut *mut c_void,
) -> c_int {
    guarded(0, || {
        // Sound: Redis passes the callback's context and the key's value
        // slot, which holds our `T`; nothing else holds a reference to it
        // meanwhile.
        let old = unsafe { *value };
        let more = unsafe {
            super::defrag::run(ctx, value, T::TYPE_NAME, |value, pass| {
                (*value.cast::<T>()).defrag(pass)
            })
        };
        let new = unsafe { *value };
        if new != old {
            let db = api!(RedisModule_GetDbIdFromDefragCtx(ctx));
            super::reclaim::value_moved(db, key, id_of(old), id_of(new));
        }
        more
    })
}

/// Drops the value where Redis frees it: on its main thread, where eviction,
/// `INFO memory` and a synchronous FLUSHALL see the memory come back at once,
/// or on its lazyfree thread when the operator's `lazyfree-lazy-*` settings
/// (or UNLINK, FLUSHALL ASYNC) and `free_effort` say so. Nothing here touches
/// the Redis API but the allocator, so either thread is fine.
extern "C" fn free<T: ModuleValue>(value: *mut c_void) {
    guarded((), || {
        // What is kept about the value by its identity goes first, so its
        // address, once handed out again, is never taken for it.
        let id = id_of(value);
        super::moved::freed(id, super::reclaim::forget_loaded);
        // A value a panic left mid-change is leaked, never walked.
        if identity::take_poisoned(id) {
            // Sound: see the module doc; Redis calls free once per value.
            let leaked = unsafe { value_ref::<T>(value) };
            super::panics::leaked(std::mem::size_of::<T>(), || {
                leaked.leaked();
                leaked.mem_usage_sampled(SAMPLES_OF_LEAKED)
            });
            return;
        }
        drop(unsafe { Box::from_raw(value.cast::<T>()) });
    })
}

/// Items of each collection a leaked value's bytes are estimated from (as
/// `MEMORY USAGE`'s default): a few reads of sizes, not a walk.
const SAMPLES_OF_LEAKED: usize = 5;

impl Key {
    /// The value of a module key of type `ty`: `None` for an empty key,
    /// WRONGTYPE for anything else.
    pub fn value<T: ModuleValue>(&self, ty: &RedisType) -> Result<Option<&T>, CmdError> {
        // Sound: as `value_mut`, shared.
        Ok(self.value_ptr::<T>(ty)?.map(|p| unsafe { &*p }))
    }

    /// The value, for changing it in place (a write-opened key).
    pub fn value_mut<T: ModuleValue>(
        &mut self,
        ty: &RedisType,
    ) -> Result<Option<&mut T>, CmdError> {
        // Sound: the key holds a `T` of our type (checked by `value_ptr`) and
        // this handle, borrowed mutably, is its only user during the command.
        Ok(self.value_ptr::<T>(ty)?.map(|p| unsafe { &mut *p }))
    }

    /// Whether this key holds a value of module type `ty`.
    pub fn holds(&self, ty: &RedisType) -> bool {
        self.kind() == KeyKind::Module
            && api!(RedisModule_ModuleTypeGetType(self.raw())) == *ty.raw_type.borrow()
    }

    fn value_ptr<T: ModuleValue>(&self, ty: &RedisType) -> Result<Option<*mut T>, CmdError> {
        // The usual case first, in two calls: the key holds one of ours
        // (GetType is NULL for an empty key or one of another type).
        if !self.raw().is_null()
            && api!(RedisModule_ModuleTypeGetType(self.raw())) == *ty.raw_type.borrow()
        {
            let value = api!(RedisModule_ModuleTypeGetValue(self.raw()));
            if super::moved::is_followed(id_of(value)) {
                // Found under a name no callback told: scheduled here.
                super::reclaim::relearn(self, id_of(value));
            }
            // Sound: the key holds a `T` (its type checked above).
            return Ok(Some(value.cast::<T>()));
        }
        match self.kind() {
            KeyKind::Empty => Ok(None),
            _ => Err(CmdError::WrongType),
        }
    }

    /// Stores `value` in this (write-opened) key, replacing (and freeing) what
    /// was there: `&mut self`, so no borrow of the old value survives it.
    pub fn set_value<T: ModuleValue>(&mut self, ty: &RedisType, value: T) {
        let ptr = Box::into_raw(Box::new(value));
        api!(RedisModule_ModuleTypeSetValue(
            self.raw(),
            *ty.raw_type.borrow(),
            ptr.cast()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RefusalLog;

    #[test]
    fn refusal_log_lets_a_few_lines_a_second_through_and_counts_the_rest() {
        let mut log = RefusalLog::new();
        let first_second: Vec<Option<u64>> = (0..15).map(|i| log.admit(5_000 + i)).collect();
        let admitted = RefusalLog::PER_SECOND as usize;
        assert!(first_second[..admitted].iter().all(|a| *a == Some(0)));
        assert!(first_second[admitted..].iter().all(|a| a.is_none()));
        // The next second: the first line reports the 5 held back, then none.
        assert_eq!(log.admit(6_000), Some(5));
        assert_eq!(log.admit(6_001), Some(0));
    }
}
