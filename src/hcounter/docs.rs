//! HCOUNTER's argument grammar, for its command docs (`crate::docs`): what
//! `command.rs` accepts, keywords in their usual order (options and
//! `name value` pairs may come in any order).

use crate::docs::{
    block, double, integer, key, pure_token, string, unix_time, Arg, AT, PAGE, PAIRS,
};

/// `HCOUNTER.CREATE counter [PARTITION partition-name [partition-name ...]]
/// [GROUP group-name [group-name ...]] [TTL seconds] [FLOAT]
/// [UNIQUE unique-name [unique-name ...] [SCOPE scope-name [scope-name ...]]]`
pub const CREATE: &[Arg] = &[
    key("counter"),
    string("partition-name")
        .token("PARTITION")
        .optional()
        .multiple(),
    string("group-name").token("GROUP").optional().multiple(),
    integer("seconds")
        .token("TTL")
        .optional()
        .summary("a partition expires this long after its latest write"),
    pure_token("float", "FLOAT")
        .optional()
        .summary("counts are doubles"),
    block(
        "unique",
        &[
            string("unique-name").token("UNIQUE").multiple(),
            string("scope-name")
                .token("SCOPE")
                .optional()
                .multiple()
                .summary("a unique tuple counts once within its scope"),
        ],
    )
    .optional(),
];

const WRITE_PAIRS: Arg = PAIRS
    .optional()
    .summary("every PARTITION and GROUP name with its value (and UNIQUE and SCOPE names)");

/// `HCOUNTER.INCR counter [AT time] [name value [name value ...]]`
pub const INCR: &[Arg] = &[key("counter"), AT, WRITE_PAIRS];

/// `HCOUNTER.INCRBY counter increment [AT time] [name value [name value ...]]`
pub const INCRBY: &[Arg] = &[
    key("counter"),
    double("increment").summary("an integer; any finite number on a FLOAT counter"),
    AT,
    WRITE_PAIRS,
];

/// `HCOUNTER.GET counter [name value [name value ...]]`
pub const GET: &[Arg] = &[
    key("counter"),
    PAIRS
        .optional()
        .summary("every PARTITION and GROUP name with its value"),
];

/// `HCOUNTER.DATA | HCOUNTER.PARTITIONS | HCOUNTER.DEL counter [name value [name value ...]]`
/// `HCOUNTER.INFO counter`.
pub const INFO: &[Arg] = &[key("counter")];

pub const FILTERED: &[Arg] = &[
    key("counter"),
    PAIRS
        .optional()
        .summary("a filter: any PARTITION names with their values"),
];

/// The filter of FILTERED, then a page: `DATA` and `PARTITIONS`.
pub const PAGED: &[Arg] = &[
    key("counter"),
    PAIRS
        .optional()
        .summary("a filter: any PARTITION names with their values"),
    PAGE,
];

const AT_REQUIRED: Arg = unix_time("time").token("AT");

/// `HCOUNTER.SET counter count AT time [name value [name value ...]]`
pub const SET: &[Arg] = &[
    key("counter"),
    double("count").summary("the cell's count after the master's increment"),
    AT_REQUIRED,
    PAIRS
        .optional()
        .summary("every PARTITION and GROUP name with its value"),
];

/// `HCOUNTER.SEEN counter AT time name value [name value ...]`
pub const SEEN: &[Arg] = &[
    key("counter"),
    AT_REQUIRED,
    PAIRS.summary("every PARTITION, UNIQUE and SCOPE name with its value"),
];

/// `HCOUNTER.RECLAIM counter partition [partition ...]`
pub const RECLAIM: &[Arg] = &[
    key("counter"),
    string("partition")
        .multiple()
        .summary("an expired partition's PARTITION values, encoded"),
];

#[cfg(test)]
mod tests {
    use super::super::command::{AT_OPTION, CREATE_OPTIONS};
    use super::super::counter::DECLARATION;
    use crate::docs::{as_tokens, calls, Arg};
    use crate::tuples::schema::{Declarer, Pairs, Schema};

    fn value(a: &Arg, n: usize) -> String {
        match a.name {
            "seconds" | "time" | "increment" | "count" => "5".into(),
            name => format!("{name}{n}"),
        }
    }

    /// Every call the docs describe parses: CREATE's declarations, and the
    /// AT option and pairs of the writes on a counter with names `name0`
    /// and `name2`.
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
        let declare = ["GROUP", "name0", "name2"].map(|t| t.as_bytes());
        let (schema, _) =
            Schema::parse(&declare, &DECLARATION, &CREATE_OPTIONS, Declarer::Client).unwrap();
        for (args, first) in [
            (super::INCR, 1),
            (super::INCRBY, 2),
            (super::SET, 2),
            (super::SEEN, 1),
        ] {
            for call in calls(args, &value) {
                Pairs::parse(&schema, &as_tokens(&call[first..]), &AT_OPTION)
                    .unwrap_or_else(|e| panic!("{call:?}: {e}"));
            }
        }
    }
}
