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
use crate::server::command::{command, KEY_DELETE, KEY_READ, KEY_UPDATE};
use crate::stats::Stat;

pub static FAMILY: Family = Family {
    commands: &[
        command!(
            c"rv.add",
            c"write deny-oom",
            -3,
            KEY_UPDATE,
            command::add,
            ADD_CALLS,
            ERRORS,
            Docs {
                summary: "Adds a member to a recency list at a time, trimming to MAXLEN and refreshing TTL",
                complexity: "O(log N) for N entries, plus O(log N) per entry trimmed",
                acl: &["sortedset"],
                args: docs::ADD,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"rv.get",
            c"readonly",
            -2,
            KEY_READ,
            command::get,
            GET_CALLS,
            ERRORS,
            Docs {
                summary: "Returns a recency list newest first",
                complexity: "O(log N + M) for N entries, M of them returned",
                acl: &["sortedset"],
                args: docs::GET,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"rv.rem",
            c"write fast",
            -3,
            KEY_DELETE,
            command::rem,
            REM_CALLS,
            ERRORS,
            Docs {
                summary: "Removes members from a recency list",
                complexity: "O(M log N) for M members removed from N entries",
                acl: &["sortedset"],
                args: docs::REM,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"rv.len",
            c"readonly fast",
            2,
            KEY_READ,
            command::len,
            LEN_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the number of entries of a recency list",
                complexity: "O(1)",
                acl: &["sortedset"],
                args: docs::LEN,
                ..Docs::DEFAULT
            }
        ),
    ],
    stats: &[
        &ADD_CALLS, &GET_CALLS, &REM_CALLS, &LEN_CALLS, &command::TRIMS, &ERRORS,
    ],
    configs: &[&command::DEFAULT_MAXLEN],
    types: &[],
    on_load: None,
};

static ADD_CALLS: Stat = Stat::new("rv_add_calls");
static GET_CALLS: Stat = Stat::new("rv_get_calls");
static REM_CALLS: Stat = Stat::new("rv_rem_calls");
static LEN_CALLS: Stat = Stat::new("rv_len_calls");
static ERRORS: Stat = Stat::new("rv_errors");
