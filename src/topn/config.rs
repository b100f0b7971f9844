//! TOPN's configs: what the commands and the loading of a value both read (here, below
//! both).

use super::error::{MAX_BUCKET_S, MAX_WINDOW};
use super::layout;
use crate::server::config::Config;

/// `recipes.topn-default-bucket`: bucket width in seconds for keys created
/// without BUCKET.
pub(super) static DEFAULT_BUCKET: Config =
    Config::new(c"topn-default-bucket", 3600, 1, MAX_BUCKET_S);
/// `recipes.topn-default-window`: buckets per window for keys created
/// without WINDOW.
pub(super) static DEFAULT_WINDOW: Config =
    Config::new(c"topn-default-window", 24, 1, MAX_WINDOW as i64);

/// `recipes.topn-compact-max`: entries (bucket, member) a key keeps in its
/// compact layout (one buffer, found by a scan) before it turns full; it
/// turns compact again at half of it. A layout setting: replies, replication
/// and RDB bytes do not depend on it. A write scans up to this many entries
/// and a conversion moves as many: bounded, whatever the value.
pub(super) static COMPACT_MAX: Config = Config::new(
    c"topn-compact-max",
    layout::DEFAULT_COMPACT_MAX as i64,
    0,
    1024,
);
