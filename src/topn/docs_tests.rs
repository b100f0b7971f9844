//! Tests of `docs.rs`.

use super::super::parse;
use crate::docs::{as_tokens, calls, Arg};

fn value(a: &Arg, n: usize) -> String {
    match a.name {
        "key" => "key".into(),
        "member" => format!("member{n}"),
        _ => "5".into(),
    }
}

/// Every call the docs describe parses, to what it says.
#[test]
fn the_parser_takes_every_documented_call() {
    for call in calls(super::CREATE, &value) {
        parse::create_options(&as_tokens(&call[1..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
    }
    for call in calls(super::INCR, &value) {
        parse::incr_options(&as_tokens(&call[2..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
    }
    for call in calls(super::INCRBY, &value) {
        let (_, pairs) =
            parse::incrby_args(&as_tokens(&call[1..])).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        let given = call.iter().filter(|t| t.starts_with("member")).count();
        assert_eq!(pairs.len(), given, "{call:?}");
    }
    for (args, last) in [(super::TOP, true), (super::TOP24, false)] {
        for call in calls(args, &value) {
            let got = parse::top_options(&as_tokens(&call[1..]), last)
                .unwrap_or_else(|e| panic!("{call:?}: {e}"));
            let errors = call.contains(&"WITHERRORS".into());
            assert_eq!(
                got.with_counts,
                errors || call.contains(&"WITHCOUNTS".into())
            );
            assert_eq!(got.with_errors, errors);
        }
    }
    for call in calls(super::COUNT_MEMBERS, &value) {
        let tokens = as_tokens(&call[1..]);
        let (members, ..) = parse::count_args(&tokens).unwrap_or_else(|e| panic!("{call:?}: {e}"));
        let given = call.iter().filter(|t| t.starts_with("member")).count();
        assert_eq!(members.len(), given, "{call:?}");
    }
}
