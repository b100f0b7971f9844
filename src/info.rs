//! The `INFO recipes` section: every family's counters, in table order.

use crate::family::Family;
use crate::server::api;
use redis_module::raw;
use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::OnceLock;

/// The families whose counters the section lists, set once at load.
static FAMILIES: OnceLock<&'static [&'static Family]> = OnceLock::new();

/// Makes `families`' counters the server's `INFO recipes` section.
pub fn register(ctx: *mut raw::RedisModuleCtx, families: &'static [&'static Family]) {
    let _ = FAMILIES.set(families);
    api!(RedisModule_RegisterInfoFunc(ctx, Some(info)));
}

extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    api!(RedisModule_InfoAddSection(ctx, c"".as_ptr()));
    // `recipes_version`: the release, beside `MODULE LIST`'s number.
    api!(RedisModule_InfoAddFieldCString(
        ctx,
        c"version".as_ptr(),
        crate::release::RELEASE.as_ptr()
    ));
    let families = FAMILIES.get().copied().unwrap_or_default();
    let module_wide = crate::server::defrag::STATS;
    let counters = families
        .iter()
        .flat_map(|f| f.stats)
        .chain(module_wide)
        .chain(crate::stats::PAGING)
        .chain(crate::server::panics::STATS)
        .map(|stat| (stat.name, stat.get()));
    for (name, value) in counters.chain(crate::server::reclaim::gauges()) {
        // Names are static ASCII without NUL, so CString::new cannot fail.
        if let Ok(name) = CString::new(name) {
            api!(RedisModule_InfoAddFieldLongLong(ctx, name.as_ptr(), value));
        }
    }
}
