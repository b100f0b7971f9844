//! TOPN: exact top-N over a sliding window of time buckets, one key per top-N.
//!
//! The recipe keeps one sorted set per hour and ZUNIONSTOREs the last 24 at
//! read time (approximate after pruning, and the union blocks the server).
//! Here one module key holds the buckets of its window plus running sums
//! with order indexes (the design: `docs/design.md#topn`), so TOP is exact
//! and costs about O(N log M). A bucket that leaves the window is taken
//! out of the running sums a little at a time, by later writes and by a timer
//! on every server (`server::reclaim` upkeep), so reads stay cheap also on a
//! key that no longer receives writes, on masters and replicas alike.
//!
//! - `TOPN.CREATE key [BUCKET s] [WINDOW buckets] [ALIGN s] [CAPACITY m] [VIEWS k [k ...]]`
//! - `TOPN.INCR key member [BY n] [AT ms]`
//! - `TOPN.INCRBY key [AT ms] increment member [increment member ...]`
//! - `TOPN.TOP key [N] [AT ms] [LAST k] [WITHCOUNTS]`, `TOPN.TOP24 ...` (trailing 24 h)
//! - `TOPN.COUNT key member [member ...] [AT ms] [LAST k]`, `TOPN.INFO key`
//!
//! Files, top down (each uses only those below it): this one (the declarations),
//! `command.rs` (the handlers), `parse.rs` and `docs.rs` (the grammar), `value.rs` (the
//! module type's callbacks); `layout/` (a key is one of three layouts: compact, full,
//! capped); what the layouts share: `declaration.rs` (what CREATE declares), `window.rs` (the trait they implement, the read they
//! take), `views.rs` (the declared views), `encoding.rs` (the exact keys' bytes),
//! `shape.rs` (the window rules), `select.rs` (top rows of a sum), `storage/` (the only
//! `unsafe` of TOPN).

mod command;
mod config;
mod declaration;
mod encoding;
mod error;
mod layout;
mod parse;
mod select;
mod shape;
mod storage;
mod value;
mod views;
mod window;

/// The argument grammar of the commands declared below.
mod docs;

use crate::docs::{Docs, NONDETERMINISTIC_OUTPUT};
use crate::family::Family;
use crate::server::command::{command, KEY_COUNT, KEY_INSERT, KEY_READ};
use crate::server::reclaim::{self, Reclaimer};
use crate::server::Ctx;
use crate::server::{background_free, timer};
use crate::stats::Stat;

pub static FAMILY: Family = Family {
    commands: &[
        command!(
            c"topn.create",
            c"write deny-oom fast",
            -2,
            KEY_INSERT,
            command::create,
            CREATE_CALLS,
            ERRORS,
            Docs {
                summary: "Creates a sliding-window top-N",
                complexity: "O(1)",
                args: docs::CREATE,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.incr",
            c"write deny-oom fast",
            -3,
            KEY_COUNT,
            command::incr,
            INCR_CALLS,
            ERRORS,
            Docs {
                summary: "Counts an event for a member in its time bucket",
                complexity: "O(log M) for M members (with CAPACITY m: O(log m), whatever the buckets in use), plus a bounded share of taking old buckets out of the window",
                args: docs::INCR,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.incrby",
            c"write deny-oom fast",
            -4,
            KEY_COUNT,
            command::incrby,
            INCRBY_CALLS,
            ERRORS,
            Docs {
                summary: "Counts events for many members at one time, all or nothing",
                complexity: "O(P log M) for P pairs and M members (with CAPACITY m: O(P log m)), plus a bounded share of taking old buckets out of the window",
                args: docs::INCRBY,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.top",
            c"readonly",
            -2,
            KEY_READ,
            command::top,
            TOP_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the N highest members over the window",
                complexity: "O(N log M) for M members at the server's time (and for a declared view's LAST k); another window (AT, LAST) at most O(E + M) for E entries in its buckets",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::TOP,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.top24",
            c"readonly",
            -2,
            KEY_READ,
            command::top24,
            TOP24_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the N highest members over the trailing 24 hours",
                complexity: "O(N log M) for M members at the server's time; another window (AT) at most O(E + M) for E entries in its buckets",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::TOP24,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.count",
            c"readonly",
            -3,
            KEY_READ,
            command::count,
            COUNT_CALLS,
            ERRORS,
            Docs {
                summary: "Returns the counts of members over the window",
                complexity: "O(K) per member, K = 1 at the server's time, else the fewer of LAST and the buckets the window differs by",
                tips: NONDETERMINISTIC_OUTPUT,
                args: docs::COUNT_MEMBERS,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.setcounter",
            c"write deny-oom",
            7,
            KEY_INSERT,
            command::set_counter,
            SETCOUNTER_CALLS,
            ERRORS,
            Docs {
                summary: "Internal: a counter of a key with CAPACITY, as an AOF rewrite writes it",
                complexity: "O(log C) for C counters in the bucket; O(C) when it moves the floor of a sealed bucket",
                acl: &["dangerous"],
                args: docs::SETCOUNTER,
                ..Docs::DEFAULT
            }
        ),
        command!(
            c"topn.info",
            c"readonly",
            2,
            KEY_READ,
            command::info,
            INFO_CALLS,
            ERRORS,
            Docs {
                summary: "Describes a top-N key",
                complexity: "O(W) for W buckets in the window; O(E log E) for a compact key of E entries",
                args: docs::INFO,
                ..Docs::DEFAULT
            }
        ),
    ],
    stats: &[
        &CREATE_CALLS,
        &INCR_CALLS,
        &INCRBY_CALLS,
        &TOP_CALLS,
        &TOP24_CALLS,
        &COUNT_CALLS,
        &INFO_CALLS,
        &SETCOUNTER_CALLS,
        &command::EXPIRED_BUCKETS,
        &command::LATE_EVENTS,
        &command::AGED_BUCKETS,
        &value::MEMBERS,
        &layout::full::READ_BUFFER_BYTES,
        &ERRORS,
    ],
    configs: &[&config::DEFAULT_BUCKET, &config::DEFAULT_WINDOW, &config::COMPACT_MAX],
    types: &[&value::TOPN_TYPE],
    on_load: Some(on_load),
};

/// The timer's upkeep of TOPN keys, on every server.
static UPKEEP: Reclaimer = Reclaimer {
    ty: &value::TOPN_TYPE,
    next_due: command::upkeep_due,
    reclaim: command::upkeep,
    everywhere: true,
};

fn on_load(ctx: Ctx) {
    reclaim::enable(ctx, &UPKEEP);
    // Read accumulators are made ready for big keys, and freed when left idle for a period.
    timer::repeat(ctx, layout::full::TICK_MS, |ctx| {
        layout::full::tend_read_buffers(ctx.now_ms())
    });
    // After a fork the timer writes their pages again (copied then, not by a read).
    timer::on_fork(layout::full::read_buffers_forked);
    // Old hash tables (megabytes on a big key) are freed off the main thread.
    storage::set_disposer(background_free::drop_later);
}

static CREATE_CALLS: Stat = Stat::new("topn_create_calls");
static INCR_CALLS: Stat = Stat::new("topn_incr_calls");
static INCRBY_CALLS: Stat = Stat::new("topn_incrby_calls");
static TOP_CALLS: Stat = Stat::new("topn_top_calls");
static TOP24_CALLS: Stat = Stat::new("topn_top24_calls");
static COUNT_CALLS: Stat = Stat::new("topn_count_calls");
static INFO_CALLS: Stat = Stat::new("topn_info_calls");
static SETCOUNTER_CALLS: Stat = Stat::new("topn_setcounter_calls");
static ERRORS: Stat = Stat::new("topn_errors");
