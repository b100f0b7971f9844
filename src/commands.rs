//! Every command the module registers, in one table: name, flags, key
//! positions (first, last, step) and handler. Find any command here first.

use crate::rv;
use crate::server::command::{entry, Command};
use crate::stats::*;

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
    ]
}
