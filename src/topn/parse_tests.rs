//! Tests of `parse.rs`.

use super::*;

fn toks<'a>(s: &'a [&'a str]) -> Vec<&'a [u8]> {
    s.iter().map(|t| t.as_bytes()).collect()
}

#[test]
fn top_takes_an_optional_leading_n() {
    assert_eq!(
        top_options(&[], true).unwrap(),
        TopOptions {
            n: 10,
            at: None,
            last: None,
            with_counts: false,
            with_errors: false
        }
    );
    assert_eq!(
        top_options(&toks(&["3", "withcounts", "AT", "5"]), true).unwrap(),
        TopOptions {
            n: 3,
            at: Some(5),
            last: None,
            with_counts: true,
            with_errors: false
        }
    );
    assert_eq!(
        top_options(&toks(&["at", "7"]), false).unwrap(),
        TopOptions {
            n: 10,
            at: Some(7),
            last: None,
            with_counts: false,
            with_errors: false
        }
    );
    assert_eq!(
        top_options(&toks(&["last", "6", "5", "WITHCOUNTS"]), true)
            .unwrap_err()
            .to_string(),
        "ERR unknown option '5'",
        "N comes first"
    );
    assert_eq!(
        top_options(&toks(&["5", "LAST", "1", "AT", "9"]), true).unwrap(),
        TopOptions {
            n: 5,
            at: Some(9),
            last: Some(1),
            with_counts: false,
            with_errors: false
        }
    );
    for bad in [&["LAST", "x"][..], &["LAST"]] {
        assert!(
            top_options(&toks(bad), true)
                .unwrap_err()
                .to_string()
                .contains("LAST"),
            "{bad:?}"
        );
    }
    // The range is the key's: checked once it is known.
    assert_eq!(
        top_options(&toks(&["LAST", "0"]), true).unwrap().last,
        Some(0)
    );
    for (k, window, err) in [
        (
            0,
            Some(24),
            "ERR LAST must be an integer between 1 and the key's WINDOW (24), got 0",
        ),
        (
            25,
            Some(24),
            "ERR LAST must be an integer between 1 and the key's WINDOW (24), got 25",
        ),
        (
            -1,
            None,
            "ERR LAST must be an integer between 1 and the key's WINDOW, got -1",
        ),
        (
            100_001,
            None,
            "ERR LAST must be an integer between 1 and the key's WINDOW, got 100001",
        ),
    ] {
        assert_eq!(last_within(k, window).unwrap_err().to_string(), err);
    }
    assert_eq!(last_within(24, Some(24)).unwrap(), 24);
    assert!(top_options(&toks(&["LAST", "2", "LAST", "2"]), true).is_err());
    // TOP24 has no LAST.
    assert_eq!(
        top_options(&toks(&["LAST", "2"]), false)
            .unwrap_err()
            .to_string(),
        "ERR unknown option 'LAST'"
    );
    assert!(top_options(&toks(&["-1"]), true)
        .unwrap_err()
        .to_string()
        .contains("count must"));
    assert!(top_options(&toks(&["x"]), true)
        .unwrap_err()
        .to_string()
        .contains("count must"));
    assert!(top_options(&toks(&["3", "4"]), true)
        .unwrap_err()
        .to_string()
        .contains("unknown option"));
}

#[test]
fn count_takes_final_at_and_last_pairs_only() {
    let t = toks(&["a", "b", "AT", "5"]);
    let (members, at, last, errors) = count_args(&t).unwrap();
    assert_eq!(members, &toks(&["a", "b"])[..]);
    assert_eq!((at, last, errors), (Some(5), None, false));
    let t = toks(&["a", "LAST", "2", "witherrors"]);
    assert_eq!(
        count_args(&t).unwrap(),
        (&toks(&["a"])[..], None, Some(2), true)
    );
    // A lone member named WITHERRORS stays a member.
    let t = toks(&["WITHERRORS"]);
    assert_eq!(count_args(&t).unwrap(), (&t[..], None, None, false));
    let t = toks(&["a", "LAST", "2", "at", "5"]);
    assert_eq!(count_args(&t).unwrap(), (&t[..1], Some(5), Some(2), false));
    let t = toks(&["a", "at", "5", "last", "2"]);
    assert_eq!(count_args(&t).unwrap(), (&t[..1], Some(5), Some(2), false));
    // A second pair of the same option is made of members.
    let t = toks(&["a", "AT", "4", "AT", "5"]);
    assert_eq!(count_args(&t).unwrap(), (&t[..3], Some(5), None, false));
    // At least one member stays.
    let t = toks(&["AT", "b"]);
    assert_eq!(count_args(&t).unwrap(), (&t[..], None, None, false));
    let t = toks(&["LAST", "3", "AT", "5"]);
    assert_eq!(count_args(&t).unwrap(), (&t[..2], Some(5), None, false));
    let t = toks(&["a", "at", "x"]);
    assert!(count_args(&t).unwrap_err().to_string().contains("AT"));
    let t = toks(&["a", "LAST", "y"]);
    assert!(count_args(&t).unwrap_err().to_string().contains("LAST"));
    let t = toks(&["a", "LAST", "x", "AT", "5"]);
    assert!(count_args(&t).unwrap_err().to_string().contains("LAST"));
}

#[test]
fn create_and_incr_options() {
    assert_eq!(
        create_options(&toks(&["WINDOW", "6", "BUCKET", "60"])).unwrap(),
        (Some(60), Some(6), None, None, vec![])
    );
    assert_eq!(
        create_options(&toks(&["CAPACITY", "100"])).unwrap(),
        (None, None, None, Some(100), vec![])
    );
    for bad in [
        &["CAPACITY", "0"][..],
        &["CAPACITY", "10001"],
        &["CAPACITY"],
    ] {
        let err = create_options(&toks(bad)).unwrap_err().to_string();
        assert!(err.contains("CAPACITY"), "{bad:?}: {err}");
    }
    assert_eq!(
        create_options(&toks(&["ALIGN", "3600", "BUCKET", "86400"])).unwrap(),
        (Some(86400), None, Some(3600), None, vec![])
    );
    assert_eq!(
        create_options(&toks(&["views", "12", "6", "WINDOW", "24", "VIEWS"]))
            .unwrap_err()
            .to_string(),
        "ERR VIEWS given more than once"
    );
    assert_eq!(
        create_options(&toks(&["VIEWS", "12", "6", "window", "24"])).unwrap(),
        (None, Some(24), None, None, vec![12, 6])
    );
    assert_eq!(
        create_options(&toks(&["WINDOW", "24", "VIEWS", "6"])).unwrap(),
        (None, Some(24), None, None, vec![6])
    );
    for bad in [&["VIEWS"][..], &["VIEWS", "x"], &["VIEWS", "BUCKET", "60"]] {
        let err = create_options(&toks(bad)).unwrap_err().to_string();
        assert!(err.contains("VIEWS"), "{bad:?}: {err}");
    }
    for bad in [&["ALIGN", "-1"][..], &["ALIGN", "x"], &["ALIGN"]] {
        let err = create_options(&toks(bad)).unwrap_err().to_string();
        assert!(err.contains("ALIGN"), "{bad:?}: {err}");
    }
    assert_eq!(align_within(None, 60).unwrap(), 0);
    assert_eq!(align_within(Some(59), 60).unwrap(), 59);
    let err = align_within(Some(60), 60).unwrap_err().to_string();
    assert!(err.contains("ALIGN") && err.contains("BUCKET"), "{err}");
    assert!(create_options(&toks(&["BUCKET", "0"]))
        .unwrap_err()
        .to_string()
        .contains("BUCKET"));
    assert!(create_options(&toks(&["WINDOW", "100001"]))
        .unwrap_err()
        .to_string()
        .contains("WINDOW"));
    assert_eq!(incr_options(&[]).unwrap(), (1, None));
    assert_eq!(
        incr_options(&toks(&["BY", "-4", "AT", "9"])).unwrap(),
        (-4, Some(9))
    );
    assert!(incr_options(&toks(&["BY", "1.5"]))
        .unwrap_err()
        .to_string()
        .contains("BY"));
}

#[test]
fn incrby_takes_pairs_increment_first_after_an_optional_at() {
    fn parsed<'a>(t: &'a [&'a str]) -> Result<(Option<i64>, Vec<Pair<'a>>), CmdError> {
        incrby_args(&toks(t)).map(|(at, p)| (at, p.to_vec()))
    }
    assert_eq!(
        parsed(&["3", "a", "-2", "b"]).unwrap(),
        (None, vec![(3, &b"a"[..]), (-2, &b"b"[..])])
    );
    assert_eq!(
        parsed(&["at", "9", "1", "AT"]).unwrap(),
        (Some(9), vec![(1, &b"AT"[..])]),
        "a member may be a keyword"
    );
    for bad in [
        &[][..],
        &["1"],
        &["AT", "9"],
        &["AT", "9", "1"],
        &["1", "a", "2"],
    ] {
        assert_eq!(parsed(bad), Err(CmdError::Arity), "{bad:?}");
    }
    let err = incrby_args(&toks(&["AT", "9", "1", "a", "x", "b"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "ERR increment (argument 6) must be an integer"
    );
    let err = incrby_args(&toks(&["1.5", "a"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "ERR increment (argument 2) must be an integer"
    );
    let err = incrby_args(&toks(&["AT", "x", "1", "a"])).unwrap_err();
    assert!(err.to_string().contains("AT"), "{err}");
    // An AT that is not first is a pair: its increment is not an integer.
    assert!(incrby_args(&toks(&["1", "a", "AT", "9"])).is_err());
}

/// The direct reading of short digit strings agrees with `int_in` on every
/// token, around its edges too.
#[test]
fn increments_read_as_any_integer() {
    let nines = "9".repeat(18);
    let tokens = [
        "0",
        "1",
        "7",
        "007",
        "10",
        "-0",
        "-1",
        "+1",
        " 1",
        "1 ",
        "",
        "-",
        "1.0",
        "1e3",
        "x",
        &nines,
        "999999999999999999",
        "1000000000000000000",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "0000000000000000001",
    ];
    for t in tokens {
        let direct = int_in("increment", t.as_bytes(), i64::MIN, i64::MAX).ok();
        assert_eq!(increment(t.as_bytes()), direct, "{t:?}");
    }
    let (_, pairs) = incrby_args(&toks(&["AT", "5", "12", "a", "3", "b"])).unwrap();
    assert_eq!(pairs.to_vec(), [(12, &b"a"[..]), (3, &b"b"[..])]);
}

#[test]
fn twenty_four_hours_in_whole_buckets() {
    assert_eq!(buckets_in_24h(3_600_000, 24), Some(24));
    assert_eq!(buckets_in_24h(3_600_000, 48), Some(24));
    assert_eq!(buckets_in_24h(3_600_000, 23), None);
    assert_eq!(buckets_in_24h(7_000_000, 100), None);
    assert_eq!(buckets_in_24h(60_000, 1440), Some(1440));
}
