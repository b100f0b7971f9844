//! Rows, counts and names: reply shapes under RESP2 and RESP3, exact names
//! and keywords in any case, integer limits, binary values, declared keys.
use super::*;

/// RESP2 rows are flat name/value arrays, RESP3 rows maps with the same
/// pairs in the same order; a counter without names has one row `value N`
/// and one empty partition row once counted, none before.
#[test]
fn row_shapes_under_resp2_and_resp3() {
    let srv = Server::start();
    let c2 = &mut srv.conn();
    let c3 = &mut srv.conn_resp3();
    q_ok(
        c2,
        &["HCOUNTER.CREATE", "k", "PARTITION", "p", "GROUP", "g", "p"],
    );
    q_ok(c2, &["HCOUNTER.CREATE", "f", "GROUP", "g", "FLOAT"]);
    q_ok(c2, &["HCOUNTER.CREATE", "none"]);
    for c in [&mut *c2, &mut *c3] {
        assert_eq!(rows(c, &["HCOUNTER.DATA", "none"]), no_rows());
        assert_eq!(
            q::<Value>(c, &["HCOUNTER.PARTITIONS", "none"]),
            Value::Array(vec![])
        );
    }
    assert_eq!(
        int_reply(c3, &["HCOUNTER.INCRBY", "k", "3", "p", "a", "g", "x"]),
        3
    );
    assert_eq!(
        float_reply(c3, &["HCOUNTER.INCRBY", "f", "2.5", "g", "x"]),
        "2.5"
    );
    assert_eq!(int_reply(c3, &["HCOUNTER.INCR", "none"]), 1);

    // RESP2: flat arrays, the count an integer (a bulk string for FLOAT).
    let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.DATA", "k"]),
        Value::Array(vec![Value::Array(vec![
            b("p"),
            b("a"),
            b("g"),
            b("x"),
            b("value"),
            Value::Int(3)
        ])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.PARTITIONS", "k"]),
        Value::Array(vec![Value::Array(vec![b("p"), b("a")])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.DATA", "f"]),
        Value::Array(vec![Value::Array(vec![
            b("g"),
            b("x"),
            b("value"),
            b("2.5")
        ])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.DATA", "none"]),
        Value::Array(vec![Value::Array(vec![b("value"), Value::Int(1)])])
    );
    assert_eq!(
        q::<Value>(c2, &["HCOUNTER.PARTITIONS", "none"]),
        Value::Array(vec![Value::Array(vec![])])
    );
    // RESP3: maps.
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.DATA", "k"]),
        Value::Array(vec![Value::Map(vec![
            (b("p"), b("a")),
            (b("g"), b("x")),
            (b("value"), Value::Int(3))
        ])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.PARTITIONS", "k"]),
        Value::Array(vec![Value::Map(vec![(b("p"), b("a"))])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.DATA", "f"]),
        Value::Array(vec![Value::Map(vec![
            (b("g"), b("x")),
            (b("value"), b("2.5"))
        ])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.DATA", "none"]),
        Value::Array(vec![Value::Map(vec![(b("value"), Value::Int(1))])])
    );
    assert_eq!(
        q::<Value>(c3, &["HCOUNTER.PARTITIONS", "none"]),
        Value::Array(vec![Value::Map(vec![])])
    );
    assert_eq!(float_reply(c3, &["HCOUNTER.GET", "f", "g", "x"]), "2.5");
    assert_eq!(float_reply(c3, &["HCOUNTER.GET", "f", "g", "y"]), "0");
    assert_eq!(int_reply(c3, &["HCOUNTER.GET", "k", "g", "y", "p", "a"]), 0);
    // Both protocols read the same rows.
    for k in ["k", "f", "none"] {
        assert_eq!(
            rows(c2, &["HCOUNTER.DATA", k]),
            rows(c3, &["HCOUNTER.DATA", k])
        );
    }
}

/// Names are case-sensitive bytes, keywords case-insensitive; `name value`
/// pairs and AT come in any order.
#[test]
fn names_are_exact_keywords_any_case() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "hcounter.create",
            "k",
            "group",
            "a",
            "A",
            "ttl",
            "3600",
            "partition",
            "day",
            "unique",
            "u",
            "scope",
            "s",
        ],
    );
    let at = now_ms().to_string();
    let incr = |c: &mut Conn, args: &[&str]| {
        let mut full = vec!["HCOUNTER.INCR", "k"];
        full.extend_from_slice(args);
        int_reply(c, &full)
    };
    assert_eq!(
        incr(c, &["a", "1", "A", "2", "day", "d", "u", "x", "s", "s1"]),
        1
    );
    assert_eq!(
        incr(
            c,
            &["A", "1", "a", "2", "At", &at, "s", "s1", "u", "y", "day", "d"]
        ),
        1
    );
    assert_eq!(
        incr(
            c,
            &["u", "z", "s", "s1", "day", "d", "a", "1", "at", &at, "A", "2"]
        ),
        2
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "k"]),
        vec![
            row(&[("day", "d"), ("a", "1"), ("A", "2")], 2),
            row(&[("day", "d"), ("a", "2"), ("A", "1")], 1),
        ]
    );
    // Values are any bytes, keywords included.
    assert_eq!(
        incr(
            c,
            &["day", "AT", "a", "value", "A", "ttl", "u", "at", "s", "UNIQUE"]
        ),
        1
    );
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.GET", "k", "A", "ttl", "day", "AT", "a", "value"]
        ),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "k", "day", "AT"]),
        vec![prow(&[("day", "AT")])]
    );
    assert_eq!(
        expect_err(c, &cmd(&["HCOUNTER.GET", "k", "A", "1", "day", "d", "a"])),
        "ERR name 'a' needs a value"
    );
    let e = expect_err(
        c,
        &cmd(&["HCOUNTER.GET", "k", "day", "d", "a", "1", "a", "2"]),
    );
    assert_eq!(e, "ERR name 'a' given more than once");
    let e = expect_err(
        c,
        &cmd(&["HCOUNTER.GET", "k", "DAY", "d", "a", "1", "A", "2"]),
    );
    assert_eq!(e, "ERR unknown name 'DAY'");
}

/// Integer counts: INCRBY 0 creates the cell, negatives, the 64-bit limits;
/// an overflow is refused and changes nothing.
#[test]
fn integer_counts_and_overflow() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["HCOUNTER.CREATE", "k", "GROUP", "g"]);
    let incrby =
        |c: &mut Conn, by: &str, g: &str| int_reply(c, &["HCOUNTER.INCRBY", "k", by, "g", g]);
    assert_eq!(incrby(c, "0", "zero"), 0);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "k"]),
        vec![row(&[("g", "zero")], 0)]
    );
    assert_eq!(incrby(c, "-5", "neg"), -5);
    assert_eq!(int_reply(c, &["HCOUNTER.INCR", "k", "g", "neg"]), -4);
    assert_eq!(incrby(c, "9223372036854775807", "max"), i64::MAX);
    assert_eq!(incrby(c, "-9223372036854775808", "min"), i64::MIN);
    assert_eq!(incrby(c, "9223372036854775807", "neg"), i64::MAX - 4);
    let before = dump_all(c);
    let data = rows(c, &["HCOUNTER.DATA", "k"]);
    for args in [
        &["HCOUNTER.INCR", "k", "g", "max"][..],
        &["HCOUNTER.INCRBY", "k", "1", "g", "max"],
        &["HCOUNTER.INCRBY", "k", "9223372036854775807", "g", "max"],
        &["HCOUNTER.INCRBY", "k", "-1", "g", "min"],
        &["HCOUNTER.INCRBY", "k", "-9223372036854775808", "g", "min"],
        &["HCOUNTER.INCRBY", "k", "5", "g", "neg"],
    ] {
        assert_eq!(
            expect_err(c, &cmd(args)),
            "ERR increment or decrement would overflow",
            "{args:?}"
        );
    }
    assert_eq!(dump_all(c), before);
    assert_eq!(rows(c, &["HCOUNTER.DATA", "k"]), data);
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "k", "g", "max"]), i64::MAX);
    assert_eq!(incrby(c, "-1", "max"), i64::MAX - 1);
    assert_eq!(incrby(c, "1", "min"), i64::MIN + 1);
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "k", "g", "none"]), 0);
    // No PARTITION names: one partition, an empty row.
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", "k"]), vec![prow(&[])]);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "k"]),
        vec![
            row(&[("g", "max")], i64::MAX - 1),
            row(&[("g", "min")], i64::MIN + 1),
            row(&[("g", "neg")], i64::MAX - 4),
            row(&[("g", "zero")], 0),
        ]
    );
}

/// Every command declares its key (COMMAND GETKEYS), so cluster clients and
/// ACL key patterns find it.
#[test]
fn keys_are_declared() {
    let srv = Server::start();
    assert_keys_declared(
        &mut srv.conn(),
        &[
            "HCOUNTER.CREATE k1 GROUP g",
            "HCOUNTER.INCR k1 g 1",
            "HCOUNTER.INCRBY k1 2 g 1",
            "HCOUNTER.GET k1 g 1",
            "HCOUNTER.DATA k1",
            "HCOUNTER.PARTITIONS k1",
            "HCOUNTER.DEL k1",
            "HCOUNTER.SET k1 1 AT 1 g 1",
            "HCOUNTER.SEEN k1 AT 1 u 1",
            "HCOUNTER.RECLAIM k1 x",
        ],
    );
}

/// Values with ':', NUL and 0xFF (and empty ones) in partition, group and
/// unique values are kept as they are: no two ever mix up.
#[test]
fn binary_values_never_mix_up() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "b",
            "PARTITION",
            "p",
            "q",
            "GROUP",
            "g",
            "UNIQUE",
            "u",
            "v",
        ],
    );
    // Pairs that a ':'-joined key would confuse, or NUL-terminated C strings.
    let pairs: [(&[u8], &[u8]); 7] = [
        (b"a:b", b"c"),
        (b"a", b"b:c"),
        (b"a\x00", b"b"),
        (b"a", b"\x00b"),
        (b"\xff", b""),
        (b"", b"\xff\x00"),
        (b"a", b"b"),
    ];
    // Each (p, q) is its own partition, each g its own cell, each (u, v) its
    // own unique tuple: all count.
    for (i, (x, y)) in pairs.iter().enumerate() {
        let n: i64 = q_bin(
            c,
            &[
                b"HCOUNTER.INCR",
                b"b",
                b"p",
                x,
                b"q",
                y,
                b"g",
                y,
                b"u",
                x,
                b"v",
                y,
            ],
        );
        assert_eq!(n, 1, "{i}: {x:?} {y:?}");
    }
    // Unique tuples: all seen now, wherever they go.
    for (x, y) in pairs {
        let n: i64 = q_bin(
            c,
            &[
                b"HCOUNTER.INCR",
                b"b",
                b"p",
                b"other",
                b"q",
                b"",
                b"g",
                b":",
                b"u",
                x,
                b"v",
                y,
            ],
        );
        assert_eq!(n, 0, "{x:?} {y:?} was counted already");
    }
    // A new tuple made of the same bytes split elsewhere counts.
    let n: i64 = q_bin(
        c,
        &[
            b"HCOUNTER.INCR",
            b"b",
            b"p",
            b"other",
            b"q",
            b"",
            b"g",
            b":",
            b"u",
            b"a:b:c",
            b"v",
            b"",
        ],
    );
    assert_eq!(n, 1);
    for (x, y) in pairs {
        let n: i64 = q_bin(c, &[b"HCOUNTER.GET", b"b", b"q", y, b"g", y, b"p", x]);
        assert_eq!(n, 1, "{x:?} {y:?}");
        let n: i64 = q_bin(c, &[b"HCOUNTER.GET", b"b", b"q", y, b"g", x, b"p", x]);
        assert_eq!(n, (x == y) as i64, "{x:?} {y:?}: cell g={x:?}");
    }
    // Rows in bytewise order of (p, q), then g.
    let mut want: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = pairs
        .iter()
        .map(|(x, y)| (x.to_vec(), y.to_vec(), y.to_vec()))
        .collect();
    want.push((b"other".to_vec(), b"".to_vec(), b":".to_vec()));
    want.sort();
    let to_row = |(x, y, g): &(Vec<u8>, Vec<u8>, Vec<u8>)| -> Row {
        vec![
            (b"p".to_vec(), V::B(x.clone())),
            (b"q".to_vec(), V::B(y.clone())),
            (b"g".to_vec(), V::B(g.clone())),
            (b"value".to_vec(), V::I(1)),
        ]
    };
    let want_rows: Vec<Row> = want.iter().map(to_row).collect();
    assert_eq!(rows(c, &["HCOUNTER.DATA", "b"]), want_rows);
    let want_parts: Vec<Row> = want.iter().map(|r| to_row(r)[..2].to_vec()).collect();
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", "b"]), want_parts);
    // Filters match whole values: a prefix of a value is another value.
    assert_eq!(rows_bin(c, &[b"HCOUNTER.DATA", b"b", b"p", b"a"]).len(), 3);
    assert_eq!(
        rows_bin(c, &[b"HCOUNTER.DATA", b"b", b"p", b"a\x00"]).len(),
        1
    );
    assert_eq!(rows_bin(c, &[b"HCOUNTER.DATA", b"b", b"p", b"a:"]).len(), 0);
    assert_eq!(
        rows_bin(c, &[b"HCOUNTER.PARTITIONS", b"b", b"q", b"\xff\x00"]),
        vec![want_parts[0].clone()]
    );
    let n: i64 = q_bin(c, &[b"HCOUNTER.DEL", b"b", b"p", b"a", b"q", b"b:c"]);
    assert_eq!(n, 1);
    let n: i64 = q_bin(
        c,
        &[b"HCOUNTER.GET", b"b", b"p", b"a:b", b"q", b"c", b"g", b"c"],
    );
    assert_eq!(n, 1, "deleting (a, b:c) left (a:b, c)");
    // Its tuple (a, b:c) is forgotten, (a:b, c) is not.
    let n: i64 = q_bin(
        c,
        &[
            b"HCOUNTER.INCR",
            b"b",
            b"p",
            b"x",
            b"q",
            b"",
            b"g",
            b"",
            b"u",
            b"a",
            b"v",
            b"b:c",
        ],
    );
    assert_eq!(n, 1);
    let n: i64 = q_bin(
        c,
        &[
            b"HCOUNTER.INCR",
            b"b",
            b"p",
            b"x",
            b"q",
            b"",
            b"g",
            b"",
            b"u",
            b"a:b",
            b"v",
            b"c",
        ],
    );
    assert_eq!(n, 1, "not counted: the cell stays at 1");
    assert_eq!(rows(c, &["HCOUNTER.DATA", "b"]).len(), want_rows.len());
}
