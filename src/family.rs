//! What a family declares, in its own folder: its commands, INFO counters,
//! configs and module types. `lib.rs` lists the families, one line each, and
//! registers everything they declare at load.

use crate::server::command::Command;
use crate::server::config::Config;
use crate::server::Ctx;
use crate::stats::Stat;
use redis_module::native_types::RedisType;

pub struct Family {
    pub commands: &'static [Command],
    /// Counters of `INFO recipes`, in the order printed.
    pub stats: &'static [&'static Stat],
    pub configs: &'static [&'static Config],
    pub types: &'static [&'static RedisType],
    /// Runs once at load, after everything above is registered (timers,
    /// event subscriptions).
    pub on_load: Option<fn(Ctx)>,
}
