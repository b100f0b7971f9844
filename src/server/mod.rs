//! The thin FFI layer: every call into the Redis module API goes through
//! here, so the command code above it stays safe Rust.
//!
//! Soundness, once for the whole layer: Redis calls our command functions on
//! its main thread with a valid `RedisModuleCtx` and argument vector that live
//! until the function returns; every API pointer we call (`RedisModule_*`) was
//! filled in by `RedisModule_Init` before any command can run, so `unwrap` on
//! them cannot fail on a supported server (Redis >= 7.0).
//!
//! What it may use: the pure helpers (`args`, `stats`, `tuples`), never a
//! family. Inside, `api` (the `api!` macro and Redis strings) and `fault` are
//! at the bottom and use nothing; `ctx` (the command context: replies,
//! replication, notifications) and `key` sit on them; the rest on those.
//! This file only declares and re-exports what the families use: no file
//! of the layer uses it (`tests/import_circles.rs` holds both).

mod api;
pub mod background_free;
pub mod command;
pub mod config;
mod ctx;
pub mod defrag;
mod fault;
pub mod identity;
pub mod key;
pub mod module_type;
pub mod moved;
pub mod panics;
pub mod reclaim;
pub mod slot_migration;
pub mod test_view;
pub mod timer;
mod unsaved;

pub(crate) use api::api;
pub use api::RStr;
pub use ctx::{clock_ms, reply_info, Arg, Class, Ctx, Word, WriteTime, AT, CONFIGS, MAXLEN};
pub use key::{Key, KeyKind};
