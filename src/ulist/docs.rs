//! ULIST's argument grammar, for its command docs (`crate::docs`): what
//! `command.rs` accepts, keywords in their usual order (options and
//! `name value` pairs may come in any order).

use crate::docs::{integer, key, one_of, pure_token, string, unix_time, Arg, AT, PAGE, PAIRS};

/// `ULIST.CREATE list VALUE value-name [value-name ...] [SCOPE scope-name
/// [scope-name ...]] [PARTITION partition-name [partition-name ...]] [EXPIRE seconds]`
pub const CREATE: &[Arg] = &[
    key("list"),
    string("value-name").token("VALUE").multiple(),
    string("scope-name")
        .token("SCOPE")
        .optional()
        .multiple()
        .summary("a value is unique within its scope"),
    string("partition-name")
        .token("PARTITION")
        .optional()
        .multiple(),
    integer("seconds")
        .token("EXPIRE")
        .optional()
        .summary("values expire this long after their add, by default"),
];

/// `ULIST.ADD list [EXPIRE seconds | NEVER | PXAT unix-time-milliseconds]
/// [REFRESH] [AT time] name value [name value ...]`
pub const ADD: &[Arg] = &[
    key("list"),
    one_of(
        "expiration",
        &[
            integer("seconds").token("EXPIRE"),
            pure_token("never", "NEVER"),
            unix_time("unix-time-milliseconds").token("PXAT"),
        ],
    )
    .optional(),
    pure_token("refresh", "REFRESH")
        .optional()
        .summary("a live value takes this add's expiry (sliding expiry)"),
    AT,
    PAIRS.summary("every VALUE, SCOPE and PARTITION name with its value"),
];

/// `ULIST.HAS list name value [name value ...]`
pub const HAS: &[Arg] = &[
    key("list"),
    PAIRS.summary("every VALUE and SCOPE name with its value"),
];

/// `ULIST.DATA | ULIST.PARTITIONS | ULIST.DEL list [name value [name value ...]]`
/// `ULIST.INFO list`.
pub const INFO: &[Arg] = &[key("list")];

pub const FILTERED: &[Arg] = &[
    key("list"),
    PAIRS
        .optional()
        .summary("a filter: any SCOPE and PARTITION names with their values"),
];

/// The filter of FILTERED, then a page: `DATA` and `PARTITIONS`.
pub const PAGED: &[Arg] = &[
    key("list"),
    PAIRS
        .optional()
        .summary("a filter: any SCOPE and PARTITION names with their values"),
    PAGE,
];

/// `ULIST.RECLAIM list item [item ...]`
pub const RECLAIM: &[Arg] = &[
    key("list"),
    string("item")
        .multiple()
        .summary("an expired value: its SCOPE and VALUE values, encoded"),
];

#[cfg(test)]
mod tests {
    use super::super::command::{ADD_OPTIONS, CREATE_OPTIONS};
    use super::super::list::DECLARATION;
    use crate::docs::{as_tokens, calls, Arg};
    use crate::tuples::schema::{Declarer, Pairs, Schema};

    fn value(a: &Arg, n: usize) -> String {
        match a.name {
            "seconds" | "time" | "unix-time-milliseconds" => "5".into(),
            name => format!("{name}{n}"),
        }
    }

    /// Every call the docs describe parses: CREATE's declarations, and the
    /// options and pairs of ADD on a list with names `name0` and `name2`.
    #[test]
    fn the_parser_takes_every_documented_call() {
        for call in calls(super::CREATE, &value) {
            Schema::parse(
                &as_tokens(&call[1..]),
                &DECLARATION,
                &CREATE_OPTIONS,
                Declarer::Client,
            )
            .unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
        let declare = ["VALUE", "name0", "name2"].map(|t| t.as_bytes());
        let (schema, _) =
            Schema::parse(&declare, &DECLARATION, &CREATE_OPTIONS, Declarer::Client).unwrap();
        for call in calls(super::ADD, &value) {
            Pairs::parse(&schema, &as_tokens(&call[1..]), &ADD_OPTIONS)
                .unwrap_or_else(|e| panic!("{call:?}: {e}"));
        }
    }
}
