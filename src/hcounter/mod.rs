//! HCOUNTER: partitioned, grouped counters, one key per counter (module type
//! `recipesHC`).
//!
//! Replaces the gem redis_counters' HashCounter and UniqueHashCounter: a
//! count per cell (the tuple of the GROUP values) within a partition (the
//! tuple of the PARTITION values) that can be listed and deleted; optionally
//! FLOAT counts, a TTL per partition, and unique counting (a UNIQUE tuple
//! counts once within its SCOPE tuple). One atomic command, one key,
//! binary-safe values; expired partitions vanish at their time and are
//! reclaimed in the background.
//!
//! - `HCOUNTER.CREATE counter [PARTITION name ...] [GROUP name ...] [TTL s] [FLOAT] [UNIQUE name ... [SCOPE name ...]]`
//! - `HCOUNTER.INCR counter [AT ms] name value ...`
//! - `HCOUNTER.INCRBY counter increment [AT ms] name value ...`
//! - `HCOUNTER.GET counter name value ...`
//! - `HCOUNTER.DATA | HCOUNTER.PARTITIONS | HCOUNTER.DEL counter [name value ...]`
//!
//! The folder: `mod.rs` declares the family (commands, counters, configs,
//! types) and uses its files; `command` (handlers) sits on `counter` (the
//! value, pure, over `partition`, `cells` and `record`), `format` and
//! `rewrite` (RDB and AOF encodings), `value` (the module type) and `config`.
//! Uses the layers below the families (`server`, `tuples`, `args`, `docs`,
//! `stats`, `family`), never another family; no import circles: what `mod.rs`
//! and a file share lives below both (`tests/import_circles.rs`).

mod cells;
mod command;
mod config;
mod counter;
#[cfg(test)]
mod defrag_tests;
mod format;
mod partition;
mod record;
mod rewrite;
mod value;

/// The argument grammar of the commands declared below.
mod docs;

use crate::docs::{Docs, NONDETERMINISTIC_OUTPUT, PARTITIONS_COMPLEXITY};
use crate::family::Family;
use crate::server::command::{command, KEY_COUNT, KEY_DELETE, KEY_INSERT, KEY_READ, KEY_UPDATE};
use crate::server::reclaim::{self, Reclaimer};
use crate::server::Ctx;
use crate::stats::Stat;

pub static FAMILY: Family = Family {
    commands: &[
        command!(
            c"hcounter.create",
            c"write deny-oom fast",
            -2,
            KEY_INSERT,
            command::create,
            CREATE_CALLS,
            ERRORS,
            Docs {
                summary: "Creates a counter with its PARTITION, GROUP, UNIQUE and SCOPE names",
                complexity: "O(1)",
                args: docs::CREATE,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.incr",
            c"write deny-oom fast",
            -2,
            KEY_COUNT,
            command::incr,
            INCR_CALLS,
            ERRORS,
            Docs {
                summary: "Adds one to a cell; on a unique counter only for a tuple not yet counted",
                complexity: "O(1) on average, O(log P) for a new partition among P; plus O(1) on average for the cell and the unique tuple",
                args: docs::INCR,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.incrby",
            c"write deny-oom fast",
            -3,
            KEY_COUNT,
            command::incrby,
            INCRBY_CALLS,
            ERRORS,
            Docs {
                summary: "Adds an increment to a cell; on a unique counter only for a tuple not yet counted",
                complexity: "O(1) on average, O(log P) for a new partition among P; plus O(1) on average for the cell and the unique tuple",
                args: docs::INCRBY,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.get",
            c"readonly fast",
            -2,
            KEY_READ,
            command::get,
            GET_CALLS,
            ERRORS,
            Docs {
                summary: "Returns one cell's count",
                complexity: "O(1) on average, O(log P) for a new partition among P; plus O(1) on average for the cell",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::GET,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.data",
            c"readonly",
            -2,
            KEY_READ,
            command::data,
            DATA_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the cells of the matching partitions",
                complexity: "O(log P + P' + C log C) for P partitions, P' in the range the filter's leading names fix, C cells in the matching ones; with CURSOR, O(log P + COUNT + 1024) a page, whatever the filter: a step looks at up to max(4 x COUNT, 1024) cells and partitions, a partition the filter leaves out counting as one",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::PAGED,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.info",
            c"readonly",
            2,
            KEY_READ,
            command::info,
            INFO_CALLS,
            ERRORS,
            Docs {
                summary: "Describes a counter: its declaration, partitions, cells, unique tuples and memory",
                complexity: "O(1)",
                args: docs::INFO,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.partitions",
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
            c"hcounter.del",
            c"write",
            -2,
            KEY_DELETE,
            command::del,
            DEL_CALLS,
            ERRORS,
            Docs {
                summary: "Deletes the matching partitions with their cells and unique tuples",
                complexity: "O(log P + D) for P partitions, D of them deleted, when the filter fixes leading names; O(P) otherwise",
                args: docs::FILTERED,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.set",
            c"write deny-oom",
            -5,
            KEY_UPDATE,
            command::set,
            SET_CALLS,
            ERRORS,
            Docs {
                summary: "Internal: a master's FLOAT increment (the resulting count), as replicated",
                complexity: "O(1) on average, O(log P) for a new partition among P; plus O(1) on average for the cell",
                acl: &["dangerous"],
                args: docs::SET,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.seen",
            c"write deny-oom",
            -6,
            KEY_UPDATE,
            command::seen,
            SEEN_CALLS,
            ERRORS,
            Docs {
                summary: "Internal: a master's newly counted unique tuple, as replicated",
                complexity: "O(1) on average, O(log P) for a new partition among P; plus O(1) on average for the tuple",
                acl: &["dangerous"],
                args: docs::SEEN,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"hcounter.reclaim",
            c"write",
            -3,
            KEY_DELETE,
            command::reclaim_partitions,
            RECLAIM_CALLS,
            ERRORS,
            Docs {
                summary: "Internal: the master's background removal of expired partitions, as replicated",
                complexity: "O(C) for C cells and unique tuples of the partitions removed",
                acl: &["dangerous"],
                args: docs::RECLAIM,
                ..Docs::DEFAULT
            }
        ),
    ],
    stats: &[
        &CREATE_CALLS,
        &INCR_CALLS,
        &INCRBY_CALLS,
        &GET_CALLS,
        &DATA_CALLS,
        &INFO_CALLS,
        &PARTITIONS_CALLS,
        &DEL_CALLS,
        &SET_CALLS,
        &SEEN_CALLS,
        &RECLAIM_CALLS,
        &command::EXPIRED_PARTITIONS,
        &ERRORS,
    ],
    configs: &[&config::COMPACT_MAX],
    types: &[&value::HCOUNTER_TYPE],
    on_load: Some(on_load),
};

static CREATE_CALLS: Stat = Stat::new("hcounter_create_calls");
static INCR_CALLS: Stat = Stat::new("hcounter_incr_calls");
static INCRBY_CALLS: Stat = Stat::new("hcounter_incrby_calls");
static GET_CALLS: Stat = Stat::new("hcounter_get_calls");
static DATA_CALLS: Stat = Stat::new("hcounter_data_calls");
static PARTITIONS_CALLS: Stat = Stat::new("hcounter_partitions_calls");
static DEL_CALLS: Stat = Stat::new("hcounter_del_calls");
static INFO_CALLS: Stat = Stat::new("hcounter_info_calls");
static SET_CALLS: Stat = Stat::new("hcounter_set_calls");
static SEEN_CALLS: Stat = Stat::new("hcounter_seen_calls");
static RECLAIM_CALLS: Stat = Stat::new("hcounter_reclaim_calls");
static ERRORS: Stat = Stat::new("hcounter_errors");

static RECLAIMER: Reclaimer = Reclaimer {
    ty: &value::HCOUNTER_TYPE,
    next_due: command::next_due,
    reclaim: command::reclaim,
    everywhere: false,
};

/// The teardown of removed partitions too big to free at once, on every
/// server (replicas free their own memory).
static TEAR_DOWN: Reclaimer = Reclaimer {
    ty: &value::HCOUNTER_TYPE,
    next_due: command::tear_down_due,
    reclaim: command::tear_down,
    everywhere: true,
};

fn on_load(ctx: Ctx) {
    reclaim::enable(ctx, &RECLAIMER);
    reclaim::enable(ctx, &TEAR_DOWN);
}
