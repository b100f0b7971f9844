//! ULIST's configs: what the commands and the loading of a value
//! both read (here, below both).

use crate::server::config::Config;

/// `recipes.ulist-compact-max`: values a list keeps compact (one buffer,
/// found by a scan) before it turns hashed; it turns compact again below
/// half of it. A layout setting: replies, replication and RDB bytes do not
/// depend on it. A write scans up to this many values and a conversion moves
/// as many: bounded, whatever the value.
pub(super) static COMPACT_MAX: Config = Config::new(
    c"ulist-compact-max",
    super::list::DEFAULT_COMPACT_MAX as i64,
    0,
    4096,
);
