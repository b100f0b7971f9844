//! `recipes`: five well-known Redis recipes as native, atomic commands.
//!
//! Layout: `server/` is the only FFI layer (key access, replies, replication,
//! command dispatch); `args`, `stats` and the families' `parse` modules are
//! pure Rust. Each family lives in its own folder; `commands` lists them all.

mod args;
mod commands;
mod config;
mod info;
mod rv;
mod server;
mod stats;
mod tl;
mod topn;

use redis_module::{configuration::ConfigurationFlags, redis_module, Context, RedisString, Status};
use topn::TOPN_TYPE;

// Redis' allocator inside the server; the system one in unit tests, which run
// without a server.
#[cfg(not(test))]
use redis_module::alloc::RedisAlloc as Allocator;
#[cfg(test)]
use std::alloc::System as Allocator;

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    server::command::install_panic_hook();
    let raw_ctx = ctx.ctx;
    if !server::command::register_all(raw_ctx, &commands::table()) {
        ctx.log_warning("recipes: could not register a command");
        return Status::Err;
    }
    // Our types check for I/O errors while loading, so Redis may use
    // diskless loading on replicas.
    server::api!(RedisModule_SetModuleOptions(
        raw_ctx,
        redis_module::raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as i32
    ));
    // Replaces the crate's default INFO callback with our section.
    server::api!(RedisModule_RegisterInfoFunc(raw_ctx, Some(info::info)));
    Status::Ok
}

redis_module! {
    name: "recipes",
    version: 1,
    allocator: (Allocator, Allocator),
    data_types: [TOPN_TYPE],
    init: init,
    configurations: [
        i64: [
            ["rv-default-maxlen", &config::RV_DEFAULT_MAXLEN, 0, 0, args::MAX_LEN, ConfigurationFlags::DEFAULT, None],
            ["tl-default-maxlen", &config::TL_DEFAULT_MAXLEN, 0, 0, args::MAX_LEN, ConfigurationFlags::DEFAULT, None],
            ["topn-default-bucket", &config::TOPN_DEFAULT_BUCKET, 3600, 1, topn::MAX_BUCKET_S, ConfigurationFlags::DEFAULT, None],
            ["topn-default-window", &config::TOPN_DEFAULT_WINDOW, 24, 1, topn::MAX_WINDOW, ConfigurationFlags::DEFAULT, None],
        ],
        string: [],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
