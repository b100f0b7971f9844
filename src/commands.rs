//! Every command the module registers, in one table: name, flags, arity, key
//! access, handler, INFO counters and summary. Find any command here first.
//! Every command takes exactly one key, its first argument.

use crate::server::command::{command, Command, KEY_DELETE, KEY_INSERT, KEY_READ, KEY_UPDATE};
use crate::stats::*;
use crate::{rv, tl, topn};

pub fn table() -> Vec<Command> {
    vec![
        command!(
            c"rv.add",
            c"write deny-oom",
            -3,
            KEY_UPDATE,
            rv::add,
            RV_ADD_CALLS,
            RV_ERRORS,
            c"Adds a member to a recency list at a time, trimming to MAXLEN and refreshing TTL"
        ),
        command!(
            c"rv.get",
            c"readonly",
            -2,
            KEY_READ,
            rv::get,
            RV_GET_CALLS,
            RV_ERRORS,
            c"Returns a recency list newest first"
        ),
        command!(
            c"rv.rem",
            c"write",
            -3,
            KEY_DELETE,
            rv::rem,
            RV_REM_CALLS,
            RV_ERRORS,
            c"Removes members from a recency list"
        ),
        command!(
            c"rv.len",
            c"readonly fast",
            2,
            KEY_READ,
            rv::len,
            RV_LEN_CALLS,
            RV_ERRORS,
            c"Returns the number of entries of a recency list"
        ),
        command!(
            c"tl.push",
            c"write deny-oom",
            -3,
            KEY_INSERT,
            tl::push,
            TL_PUSH_CALLS,
            TL_ERRORS,
            c"Pushes an item on a timeline, trimming with low/high water marks"
        ),
        command!(
            c"tl.range",
            c"readonly",
            -2,
            KEY_READ,
            tl::range,
            TL_RANGE_CALLS,
            TL_ERRORS,
            c"Returns timeline items newest first"
        ),
        command!(
            c"tl.rem",
            c"write",
            -3,
            KEY_DELETE,
            tl::rem,
            TL_REM_CALLS,
            TL_ERRORS,
            c"Removes occurrences of an item from a timeline, newest first"
        ),
        command!(
            c"tl.len",
            c"readonly fast",
            2,
            KEY_READ,
            tl::len,
            TL_LEN_CALLS,
            TL_ERRORS,
            c"Returns the length of a timeline"
        ),
        command!(
            c"topn.create",
            c"write deny-oom",
            -2,
            KEY_INSERT,
            topn::create,
            TOPN_CREATE_CALLS,
            TOPN_ERRORS,
            c"Creates a sliding-window top-N"
        ),
        command!(
            c"topn.incr",
            c"write deny-oom",
            -3,
            KEY_UPDATE,
            topn::incr,
            TOPN_INCR_CALLS,
            TOPN_ERRORS,
            c"Counts an event for a member in its time bucket"
        ),
        command!(
            c"topn.top",
            c"readonly",
            -2,
            KEY_READ,
            topn::top,
            TOPN_TOP_CALLS,
            TOPN_ERRORS,
            c"Returns the N highest members over the window"
        ),
        command!(
            c"topn.top24",
            c"readonly",
            -2,
            KEY_READ,
            topn::top24,
            TOPN_TOP_CALLS,
            TOPN_ERRORS,
            c"Returns the N highest members over the trailing 24 hours"
        ),
        command!(
            c"topn.count",
            c"readonly",
            -3,
            KEY_READ,
            topn::count,
            TOPN_COUNT_CALLS,
            TOPN_ERRORS,
            c"Returns the counts of members over the window"
        ),
        command!(
            c"topn.info",
            c"readonly",
            2,
            KEY_READ,
            topn::info,
            TOPN_INFO_CALLS,
            TOPN_ERRORS,
            c"Describes a top-N key"
        ),
    ]
}
