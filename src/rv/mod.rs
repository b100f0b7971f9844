//! RV: a recency list ("recently viewed"). The data is a plain sorted set,
//! score = time in ms, exactly the layout of the recipe
//! `ZADD` / `ZREMRANGEBYRANK` / `EXPIRE` / `ZREVRANGE`, so recipe data works
//! with RV.* and RV data reads with `ZREVRANGE`.
//!
//! - `RV.ADD key member [AT ms] [MAXLEN n] [TTL s]`: newest wins (ZADD GT), so
//!   adds are idempotent and commute; keeps the n newest; with TTL the key
//!   expires s seconds after its newest entry.
//! - `RV.GET key [LIMIT n] [SINCE ms] [WITHSCORES]`, `RV.REM key member...`,
//!   `RV.LEN key`.

mod command;
mod parse;

pub use command::{add, get, len, rem};
