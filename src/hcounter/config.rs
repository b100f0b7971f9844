//! HCOUNTER's configs: what the commands and the loading of a value
//! both read (here, below both).

use crate::server::config::Config;

/// `recipes.hcounter-compact-max`: cells a partition keeps packed in one
/// allocation before they move to a hash table (a layout setting: content,
/// replies and RDB bytes do not depend on it). A write scans up to this many
/// packed cells, and the move takes that many: bounded, whatever the value.
pub(super) static COMPACT_MAX: Config = Config::new(
    c"hcounter-compact-max",
    super::counter::DEFAULT_COMPACT_MAX as i64,
    0,
    4096,
);
