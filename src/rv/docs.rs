//! RV's argument grammar, for its command docs (`crate::docs`): what
//! `parse.rs` accepts, options in their usual order (any order parses).

use crate::docs::{integer, key, pure_token, string, unix_time, Arg, AT, EXPIRATION};

/// `RV.ADD key member [AT time] [MAXLEN maxlen] [TTL seconds | PXAT unix-time-milliseconds]`
pub const ADD: &[Arg] = &[
    key("key"),
    string("member"),
    AT,
    integer("maxlen")
        .token("MAXLEN")
        .optional()
        .summary("keep the newest maxlen entries (0: no limit)"),
    EXPIRATION,
];

/// `RV.GET key [LIMIT count] [SINCE time] [WITHSCORES]`
pub const GET: &[Arg] = &[
    key("key"),
    integer("count").token("LIMIT").optional(),
    unix_time("time")
        .token("SINCE")
        .optional()
        .summary("only entries at or after this Unix time in ms"),
    pure_token("withscores", "WITHSCORES").optional(),
];

/// `RV.REM key member [member ...]`
pub const REM: &[Arg] = &[key("key"), string("member").multiple()];

/// `RV.LEN key`
pub const LEN: &[Arg] = &[key("key")];

#[cfg(test)]
mod tests {
    use super::super::parse;
    use crate::docs::{as_tokens, calls, Arg};

    fn value(a: &Arg, _: usize) -> String {
        match a.name {
            "key" | "member" => a.name.into(),
            _ => "5".into(),
        }
    }

    /// Every call the docs describe parses (options start after the member,
    /// or after the key for GET).
    #[test]
    fn the_parser_takes_every_documented_call() {
        for call in calls(super::ADD, &value) {
            parse::add_options(&as_tokens(&call[2..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
        for call in calls(super::GET, &value) {
            parse::get_options(&as_tokens(&call[1..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
    }
}
