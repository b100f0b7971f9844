//! TL's argument grammar, for its command docs (`crate::docs`): what
//! `parse.rs` accepts, options in their usual order (any order parses).

use crate::docs::{integer, key, string, Arg, EXPIRATION};

/// `TL.PUSH key item [MAXLEN maxlen] [SLACK slack] [TTL seconds | PXAT unix-time-milliseconds]`
pub const PUSH: &[Arg] = &[
    key("key"),
    string("item"),
    integer("maxlen")
        .token("MAXLEN")
        .optional()
        .summary("keep the newest maxlen items (0: no limit)"),
    integer("slack")
        .token("SLACK")
        .optional()
        .summary("trim back to maxlen only once the list holds maxlen + slack items"),
    EXPIRATION,
];

/// `TL.RANGE key [OFFSET offset] [COUNT count]`
pub const RANGE: &[Arg] = &[
    key("key"),
    integer("offset").token("OFFSET").optional(),
    integer("count").token("COUNT").optional(),
];

/// `TL.REM key item [COUNT count]`
pub const REM: &[Arg] = &[
    key("key"),
    string("item"),
    integer("count")
        .token("COUNT")
        .optional()
        .summary("occurrences to remove, newest first (default 1, 0: all)"),
];

/// `TL.LEN key`
pub const LEN: &[Arg] = &[key("key")];

#[cfg(test)]
mod tests {
    use super::super::parse;
    use crate::docs::{as_tokens, calls, Arg};

    fn value(a: &Arg, _: usize) -> String {
        match a.name {
            "key" | "item" => a.name.into(),
            _ => "5".into(),
        }
    }

    /// Every call the docs describe parses.
    #[test]
    fn the_parser_takes_every_documented_call() {
        for call in calls(super::PUSH, &value) {
            parse::push_options(&as_tokens(&call[2..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
        for call in calls(super::RANGE, &value) {
            parse::range_options(&as_tokens(&call[1..]))
                .unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
        for call in calls(super::REM, &value) {
            parse::rem_count(&as_tokens(&call[2..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
    }
}
