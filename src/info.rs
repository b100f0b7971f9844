//! The `INFO recipes` section.

use crate::server::api;
use redis_module::raw;
use std::ffi::CString;
use std::os::raw::c_int;

pub extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    api!(RedisModule_InfoAddSection(ctx, c"".as_ptr()));
    let families = crate::FAMILIES.iter().flat_map(|f| f.stats);
    for stat in families.chain(crate::server::defrag::STATS) {
        // Names are static ASCII without NUL, so CString::new cannot fail.
        if let Ok(name) = CString::new(stat.name) {
            api!(RedisModule_InfoAddFieldLongLong(
                ctx,
                name.as_ptr(),
                stat.get()
            ));
        }
    }
}
