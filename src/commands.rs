//! Every command the module registers, in one table: name, flags, key
//! positions (first, last, step) and handler. Find any command here first.

use crate::server::command::{entry, Command};
use crate::stats::*;
use crate::{rv, tl};

pub fn table() -> Vec<Command> {
    vec![
        Command {
            name: c"rv.add",
            flags: c"write deny-oom",
            keys: (1, 1, 1),
            entry: entry!(rv::add, -3, RV_ADD_CALLS, RV_ERRORS),
        },
        Command {
            name: c"rv.get",
            flags: c"readonly",
            keys: (1, 1, 1),
            entry: entry!(rv::get, -2, RV_GET_CALLS, RV_ERRORS),
        },
        Command {
            name: c"rv.rem",
            flags: c"write",
            keys: (1, 1, 1),
            entry: entry!(rv::rem, -3, RV_REM_CALLS, RV_ERRORS),
        },
        Command {
            name: c"rv.len",
            flags: c"readonly fast",
            keys: (1, 1, 1),
            entry: entry!(rv::len, 2, RV_LEN_CALLS, RV_ERRORS),
        },
        Command {
            name: c"tl.push",
            flags: c"write deny-oom",
            keys: (1, 1, 1),
            entry: entry!(tl::push, -3, TL_PUSH_CALLS, TL_ERRORS),
        },
        Command {
            name: c"tl.range",
            flags: c"readonly",
            keys: (1, 1, 1),
            entry: entry!(tl::range, -2, TL_RANGE_CALLS, TL_ERRORS),
        },
        Command {
            name: c"tl.rem",
            flags: c"write",
            keys: (1, 1, 1),
            entry: entry!(tl::rem, -3, TL_REM_CALLS, TL_ERRORS),
        },
        Command {
            name: c"tl.len",
            flags: c"readonly fast",
            keys: (1, 1, 1),
            entry: entry!(tl::len, 2, TL_LEN_CALLS, TL_ERRORS),
        },
    ]
}
