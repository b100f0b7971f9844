//! TOPN's argument grammar, for its command docs (`crate::docs`): what
//! `parse.rs` accepts, options in their usual order (any order parses, but
//! TOP's count comes first and COUNT's options last).

use crate::docs::{block, integer, key, pure_token, string, Arg, AT};

/// `TOPN.CREATE key [BUCKET seconds] [WINDOW buckets] [ALIGN seconds] [CAPACITY counters]
/// [VIEWS buckets [buckets ...]]`
pub const CREATE: &[Arg] = &[
    key("key"),
    integer("seconds")
        .token("BUCKET")
        .optional()
        .summary("bucket width (default recipes.topn-default-bucket)"),
    integer("buckets")
        .token("WINDOW")
        .optional()
        .summary("buckets in the window (default recipes.topn-default-window)"),
    integer("offset").token("ALIGN").optional().summary(
        "bucket boundaries this many seconds after the epoch's multiples of BUCKET (default 0)",
    ),
    integer("counters").token("CAPACITY").optional().summary(
        "at most this many counters a bucket (1..10000): bounded memory, each count with its error (default: exact)",
    ),
    integer("buckets").token("VIEWS").optional().multiple().summary(
        "windows of the newest buckets (2..WINDOW-1, at most 8) whose totals the key keeps running: LAST k on them reads as fast as the whole window (not with CAPACITY)",
    ),
];

/// `TOPN.INCR key member [BY increment] [AT time]`
pub const INCR: &[Arg] = &[
    key("key"),
    string("member"),
    integer("increment").token("BY").optional(),
    AT,
];

/// `TOPN.INCRBY key [AT time] increment member [increment member ...]`
pub const INCRBY: &[Arg] = &[
    key("key"),
    AT,
    block("pair", &[integer("increment"), string("member")])
        .multiple()
        .summary("an increment (>= 1 on a key with CAPACITY), then its member, as in ZADD"),
];

const COUNT: Arg = integer("count")
    .optional()
    .summary("how many members (default 10)");
const LAST: Arg = integer("buckets")
    .token("LAST")
    .optional()
    .summary("only the newest buckets of the window");
const WITHCOUNTS: Arg = pure_token("withcounts", "WITHCOUNTS").optional();
const WITHERRORS: Arg = pure_token("witherrors", "WITHERRORS")
    .optional()
    .summary("each count, then its most over-counting (0 on an exact key)");

/// `TOPN.TOP key [count] [AT time] [LAST buckets] [WITHCOUNTS] [WITHERRORS]`
pub const TOP: &[Arg] = &[key("key"), COUNT, AT, LAST, WITHCOUNTS, WITHERRORS];

/// `TOPN.TOP24 key [count] [AT time] [WITHCOUNTS] [WITHERRORS]`
pub const TOP24: &[Arg] = &[key("key"), COUNT, AT, WITHCOUNTS, WITHERRORS];

/// `TOPN.COUNT key member [member ...] [AT time] [LAST buckets] [WITHERRORS]`
pub const COUNT_MEMBERS: &[Arg] = &[
    key("key"),
    string("member").multiple(),
    AT,
    LAST,
    WITHERRORS,
];

/// `TOPN.INFO key`
pub const INFO: &[Arg] = &[key("key")];

/// `TOPN.SETCOUNTER key bucket member count error <EVICTED | KEPT>`
pub const SETCOUNTER: &[Arg] = &[
    key("key"),
    integer("bucket").summary("a bucket index: (time - ALIGN) div BUCKET"),
    string("member"),
    integer("count"),
    integer("error"),
    crate::docs::one_of(
        "evicted",
        &[pure_token("evicted", "EVICTED"), pure_token("kept", "KEPT")],
    ),
];

#[cfg(test)]
#[path = "docs_tests.rs"]
mod tests;
