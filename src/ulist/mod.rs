//! ULIST: lists of unique values, one key per list (module type `recipesUL`).
//!
//! Replaces the gem redis_counters' unique-value lists: a value (the tuple of
//! the VALUE names) is unique within its scope (the SCOPE names), kept in a
//! partition (SCOPE and PARTITION names) that can be listed and deleted, and
//! may expire. One atomic command, one key, binary-safe values; expired
//! values vanish at their time and are reclaimed in the background.
//!
//! - `ULIST.CREATE list VALUE name ... [SCOPE name ...] [PARTITION name ...] [EXPIRE s]`
//! - `ULIST.ADD list [EXPIRE s | NEVER | PXAT ms] [AT ms] name value ...`
//! - `ULIST.HAS list name value ...` (an ADD's names and values serve too)
//! - `ULIST.DATA | ULIST.PARTITIONS | ULIST.DEL list [name value ...]`
//!
//! The folder: `mod.rs` declares the family (commands, counters, configs,
//! types) and uses its files; `command` (handlers) sits on `list` (the value,
//! pure, over `compact`, `hashed` and `entry`), `format` and `rewrite` (RDB
//! and AOF encodings), `value` (the module type) and `config`. Uses the
//! layers below the families (`server`, `tuples`, `args`, `docs`, `stats`,
//! `family`), never another family; no import circles: what `mod.rs` and a
//! file share lives below both (`tests/import_circles.rs`).

mod command;
mod compact;
mod config;
#[cfg(test)]
mod defrag_tests;
mod entry;
mod format;
mod hashed;
mod list;
mod rewrite;
mod value;

/// The argument grammar of the commands declared below.
mod docs;

use crate::docs::{Docs, NONDETERMINISTIC_OUTPUT, PARTITIONS_COMPLEXITY};
use crate::family::Family;
use crate::server::command::{command, KEY_DELETE, KEY_INSERT, KEY_READ};
use crate::server::reclaim::{self, Reclaimer};
use crate::server::Ctx;
use crate::stats::Stat;

pub static FAMILY: Family = Family {
    commands: &[
        command!(
            c"ulist.create",
            c"write deny-oom fast",
            -4,
            KEY_INSERT,
            command::create,
            CREATE_CALLS,
            ERRORS,
            Docs {
                summary: "Creates a unique-value list with its VALUE, SCOPE and PARTITION names",
                complexity: "O(1)",
                args: docs::CREATE,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.add",
            c"write deny-oom fast",
            -4,
            KEY_INSERT,
            command::add,
            ADD_CALLS,
            ERRORS,
            Docs {
                summary: "Adds a value to a unique-value list; 1 if it is new within its scope",
                complexity: "O(1) on average, plus O(log V) for V expiring values if it expires",
                args: docs::ADD,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.has",
            c"readonly fast",
            -4,
            KEY_READ,
            command::has,
            HAS_CALLS,
            ERRORS,
            Docs {
                summary: "Tells whether a value is in its scope",
                complexity: "O(1) on average",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::HAS,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.data",
            c"readonly",
            -2,
            KEY_READ,
            command::data,
            DATA_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the live values of the matching scopes and partitions",
                complexity: "O(P + V + R log R) for P partitions in the range the filter's leading names fix, V values in the matching scopes, R rows returned; with CURSOR, O(log S + COUNT + 1024) a page for S scopes, whatever the filter: a step looks at up to max(4 x COUNT, 1024) values and scopes, a scope the filter leaves out counting as one",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::PAGED,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.count",
            c"readonly",
            -2,
            KEY_READ,
            command::count,
            COUNT_CALLS,
            ERRORS,
            Docs {
                summary: "Returns how many live values the matching scopes and partitions hold",
                complexity: "O(P) for P matching partitions while no value has expired; O(V) for V values in the matching scopes otherwise",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::FILTERED,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.info",
            c"readonly",
            2,
            KEY_READ,
            command::info,
            INFO_CALLS,
            ERRORS,
            Docs {
                summary: "Describes a list: its declaration, values, partitions, expiring values and memory",
                complexity: "O(1), O(V) for the expiring values of a compact list of V values (at most recipes.ulist-compact-max)",
                args: docs::INFO,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.partitions",
            c"readonly",
            -2,
            KEY_READ,
            command::partitions,
            PARTITIONS_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the matching partitions",
                complexity: PARTITIONS_COMPLEXITY,
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::PAGED,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.del",
            c"write",
            -2,
            KEY_DELETE,
            command::del,
            DEL_CALLS,
            ERRORS,
            Docs {
                summary: "Deletes the matching partitions with their values",
                complexity: "O(V) for V values in the matching scopes",
                args: docs::FILTERED,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"ulist.reclaim",
            c"write",
            -3,
            KEY_DELETE,
            command::reclaim_items,
            RECLAIM_CALLS,
            ERRORS,
            Docs {
                summary:
                    "Internal: the master's background removal of expired values, as replicated",
                complexity: "O(I) for I items",
                acl: &["dangerous"],
                args: docs::RECLAIM,
                ..Docs::DEFAULT
            }
        ),
    ],
    stats: &[
        &CREATE_CALLS,
        &ADD_CALLS,
        &HAS_CALLS,
        &DATA_CALLS,
        &COUNT_CALLS,
        &INFO_CALLS,
        &PARTITIONS_CALLS,
        &DEL_CALLS,
        &RECLAIM_CALLS,
        &command::EXPIRED_VALUES,
        &ERRORS,
    ],
    configs: &[&config::COMPACT_MAX],
    types: &[&value::ULIST_TYPE],
    on_load: Some(on_load),
};

static CREATE_CALLS: Stat = Stat::new("ulist_create_calls");
static ADD_CALLS: Stat = Stat::new("ulist_add_calls");
static HAS_CALLS: Stat = Stat::new("ulist_has_calls");
static DATA_CALLS: Stat = Stat::new("ulist_data_calls");
static COUNT_CALLS: Stat = Stat::new("ulist_count_calls");
static INFO_CALLS: Stat = Stat::new("ulist_info_calls");
static PARTITIONS_CALLS: Stat = Stat::new("ulist_partitions_calls");
static DEL_CALLS: Stat = Stat::new("ulist_del_calls");
static RECLAIM_CALLS: Stat = Stat::new("ulist_reclaim_calls");
static ERRORS: Stat = Stat::new("ulist_errors");

static RECLAIMER: Reclaimer = Reclaimer {
    ty: &value::ULIST_TYPE,
    next_due: command::next_due,
    reclaim: command::reclaim,
    everywhere: false,
};

fn on_load(ctx: Ctx) {
    reclaim::enable(ctx, &RECLAIMER);
}
