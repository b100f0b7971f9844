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
//!
//! The folder: `mod.rs` declares the family (commands, counters, configs,
//! types) and uses its files; `command` (handlers, with the counters and
//! config only it uses) sits on `parse` (pure). Uses the layers below the
//! families (`server`, `args`, `docs`, `stats`, `family`), never another
//! family; no import circles: what `mod.rs` and a file share lives below both
//! (`tests/import_circles.rs`).

mod command;
mod parse;

/// The argument grammar of the commands declared below.
mod docs;

use crate::docs::Docs;
use crate::family::Family;
use crate::server::command::{command, KEY_DELETE, KEY_INSERT, KEY_READ};
use crate::stats::Stat;

pub static FAMILY: Family = Family {
    commands: &[
        command!(
            c"tl.push",
            c"write deny-oom",
            -3,
            KEY_INSERT,
            command::push,
            PUSH_CALLS,
            ERRORS,
            Docs {
                summary: "Pushes an item on a timeline, trimming with low/high water marks",
                complexity: "O(1), plus O(T) when it trims T items (once every SLACK pushes)",
                acl: &["list"],
                args: docs::PUSH,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"tl.range",
            c"readonly",
            -2,
            KEY_READ,
            command::range,
            RANGE_CALLS,
            ERRORS,
            Docs {
                summary: "Returns timeline items newest first",
                complexity: "O(OFFSET + COUNT)",
                acl: &["list"],
                args: docs::RANGE,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"tl.rem",
            c"write",
            -3,
            KEY_DELETE,
            command::rem,
            REM_CALLS,
            ERRORS,
            Docs {
                summary: "Removes occurrences of an item from a timeline, newest first",
                complexity: "O(P) for P the position of the last occurrence removed",
                acl: &["list"],
                args: docs::REM,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"tl.len",
            c"readonly fast",
            2,
            KEY_READ,
            command::len,
            LEN_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the length of a timeline",
                complexity: "O(1)",
                acl: &["list"],
                args: docs::LEN,
                ..Docs::DEFAULT
            }
        ),
    ],
    stats: &[
        &PUSH_CALLS,
        &RANGE_CALLS,
        &REM_CALLS,
        &LEN_CALLS,
        &command::TRIMS,
        &ERRORS,
    ],
    configs: &[&command::DEFAULT_MAXLEN],
    types: &[],
    on_load: None,
};

static PUSH_CALLS: Stat = Stat::new("tl_push_calls");
static RANGE_CALLS: Stat = Stat::new("tl_range_calls");
static REM_CALLS: Stat = Stat::new("tl_rem_calls");
static LEN_CALLS: Stat = Stat::new("tl_len_calls");
static ERRORS: Stat = Stat::new("tl_errors");
