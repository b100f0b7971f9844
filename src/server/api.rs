//! The bottom of the FFI layer: how a call into the module API is made
//! (`api!`) and Redis strings (make, free, read). Uses nothing of the crate;
//! every other file of the layer uses it.

use redis_module::raw;

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

/// A Redis string owned by no context; the caller frees it.
pub fn new_string(bytes: &[u8]) -> RStr {
    api!(RedisModule_CreateString(
        std::ptr::null_mut(),
        bytes.as_ptr().cast(),
        bytes.len()
    ))
}

/// Frees a string made with [`new_string`].
pub fn free_string(s: RStr) {
    api!(RedisModule_FreeString(std::ptr::null_mut(), s));
}

/// The bytes of a Redis string.
///
/// # Safety
///
/// `s` must be a valid Redis string that stays alive and unchanged for `'a`
/// (an argument of the running command, or a name Redis passes to a
/// callback, read during that callback). Safe code gets bytes with a
/// lifetime the borrow checker enforces: `Args::bytes`, `OwnedStr::bytes`.
pub unsafe fn bytes_of<'a>(s: RStr) -> &'a [u8] {
    let mut len = 0usize;
    let p = api!(RedisModule_StringPtrLen(s, &mut len));
    // Sound by the contract above: `len` bytes owned by `s`, alive for 'a.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}

/// A copy of the bytes of a Redis string that Redis passes to a callback,
/// for the duration of that callback.
pub fn copy_of(s: RStr) -> Vec<u8> {
    // Sound: the string is alive while the callback that holds it runs, and
    // the bytes are copied before it returns.
    unsafe { bytes_of(s) }.to_vec()
}
