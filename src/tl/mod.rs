//! TL: a timeline, the capped list of the Redis design patterns. The data is
//! a plain list, newest at the head, exactly as `LPUSH`/`LTRIM` make it, so
//! `LRANGE` reads TL data and TL.* works on a list built with `LPUSH`.
//!
//! - `TL.PUSH key item [MAXLEN n] [SLACK m] [TTL s]`: low/high-water trimming:
//!   the list is cut back to n items only once it reaches n+m, so a push is one
//!   list insert and the cut is paid once every m pushes.
//! - `TL.RANGE key [OFFSET o] [COUNT c]`, `TL.REM key item [COUNT c]` (newest
//!   occurrences first; linear in the depth of the last one removed),
//!   `TL.LEN key`.

mod command;
mod parse;

pub use command::{len, push, range, rem};
