//! TOPN: exact top-N over a sliding window of time buckets, one key per top-N.
//!
//! The recipe keeps one sorted set per hour and ZUNIONSTOREs the last 24 at
//! read time (approximate after pruning, and the union blocks the server).
//! Here one module key holds the buckets of its window plus a running
//! aggregate with an order index (see `window.rs` for the design), so TOP is
//! exact and costs about O(N log M), and a bucket that ages out is retired a
//! little at a time by later writes.
//!
//! - `TOPN.CREATE key [BUCKET s] [WINDOW buckets]`
//! - `TOPN.INCR key member [BY n] [AT ms]`
//! - `TOPN.TOP key [N] [AT ms] [WITHCOUNTS]`, `TOPN.TOP24 ...` (trailing 24 h)
//! - `TOPN.COUNT key member [member ...] [AT ms]`, `TOPN.INFO key`

mod command;
mod parse;
mod storage;
mod value;
mod window;

pub use command::{count, create, incr, info, top, top24};
pub use parse::{MAX_BUCKET_S, MAX_WINDOW};
pub use value::TOPN_TYPE;
