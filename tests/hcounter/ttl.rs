//! TTL expiry driven by AT, without sleeping.
use super::*;

/// Runs `cmds` in one MULTI/EXEC (so background reclaim cannot run between
/// them) and returns EXEC's replies.
fn multi(c: &mut Conn, cmds: &[Vec<String>]) -> Vec<Value> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for args in cmds {
        let mut k = redis::cmd(&args[0]);
        for a in &args[1..] {
            k.arg(a);
        }
        pipe.add_command(k);
    }
    pipe.query(c)
        .unwrap_or_else(|e| panic!("MULTI {cmds:?}: {}", err_text(&e)))
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// TTL expiry driven by AT in the past, without sleeping: a write older than
/// the TTL replies its count but is never seen; a later write refreshes a
/// partition, an older one does not shorten it; a write at a time its
/// partition had expired starts it afresh; a unique INCR that does not count
/// refreshes nothing.
#[test]
fn ttl_expiry_driven_by_at() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "t";
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "TTL",
            "600",
        ],
    );
    let now = now_ms();
    let ago = |s: i64| (now - s * 1000).to_string();
    let incr = |at: &str, day: &str, page: &str| {
        strings(&["HCOUNTER.INCR", k, "AT", at, "day", day, "page", page])
    };
    // An hour ago: counted (the reply), but expired at once.
    let old = ago(3600);
    assert_eq!(int_reply(c, &strs(&incr(&old, "d1", "p"))), 1);
    assert_eq!(
        int_reply(
            c,
            &[
                "HCOUNTER.INCRBY",
                k,
                "5",
                "AT",
                &old,
                "day",
                "d1",
                "page",
                "q"
            ]
        ),
        5
    );
    assert_eq!(rows(c, &["HCOUNTER.DATA", k]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.DATA", k, "day", "d1"]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", k]), no_rows());
    assert_eq!(
        int_reply(c, &["HCOUNTER.GET", k, "day", "d1", "page", "p"]),
        0
    );
    assert_eq!(
        int_reply(c, &["HCOUNTER.GET", k, "day", "d1", "page", "q"]),
        0
    );
    assert_eq!(
        int_reply(c, &["HCOUNTER.DEL", k, "day", "d1"]),
        0,
        "nothing live to delete"
    );
    // Now: the partition starts afresh.
    assert_eq!(
        int_reply(c, &["HCOUNTER.INCR", k, "day", "d1", "page", "p"]),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![row(&[("day", "d1"), ("page", "p")], 1)]
    );

    // In one transaction, so no reclaim runs in between:
    let got = multi(
        c,
        &[
            // d2 expires at -400 s, but is written again at -500 s, while
            // still live: it then lives until +100 s.
            incr(&ago(1000), "d2", "p"),
            incr(&ago(500), "d2", "p"),
            // d3 expired at -400 s; written at -300 s it starts afresh.
            incr(&ago(1000), "d3", "p"),
            incr(&ago(300), "d3", "p"),
            strings(&["HCOUNTER.GET", k, "day", "d3", "page", "p"]),
        ],
    );
    assert_eq!(
        got,
        [1, 2, 1, 1, 1].map(Value::Int).to_vec(),
        "d2 counted twice, d3 started afresh"
    );
    // d4 lives until +100 s; a write at -700 s (while it lives) adds to it
    // and does not shorten it to -100 s.
    assert_eq!(int_reply(c, &strs(&incr(&ago(500), "d4", "p"))), 1);
    assert_eq!(int_reply(c, &strs(&incr(&ago(700), "d4", "p"))), 2);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            row(&[("day", "d1"), ("page", "p")], 1),
            row(&[("day", "d2"), ("page", "p")], 2),
            row(&[("day", "d3"), ("page", "p")], 1),
            row(&[("day", "d4"), ("page", "p")], 2),
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        ["d1", "d2", "d3", "d4"]
            .iter()
            .map(|d| prow(&[("day", d)]))
            .collect::<Vec<_>>()
    );

    // A unique INCR that does not count refreshes nothing: u's partition
    // expired at -400 s stays expired.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "u",
            "PARTITION",
            "day",
            "TTL",
            "600",
            "UNIQUE",
            "user",
        ],
    );
    let got = multi(
        c,
        &[
            strings(&[
                "HCOUNTER.INCR",
                "u",
                "AT",
                &ago(1000),
                "day",
                "d",
                "user",
                "a",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "u",
                "AT",
                &ago(500),
                "day",
                "d",
                "user",
                "a",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "u",
                "AT",
                &ago(450),
                "day",
                "e",
                "user",
                "a",
            ]),
        ],
    );
    assert_eq!(got, [1, 1, 0].map(Value::Int).to_vec());
    assert_eq!(rows(c, &["HCOUNTER.DATA", "u"]), no_rows());
    // Expired: the tuple is forgotten and counts again.
    assert_eq!(
        int_reply(c, &["HCOUNTER.INCR", "u", "day", "e", "user", "a"]),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "u"]),
        vec![row(&[("day", "e")], 1)]
    );

    // Before any reclaim can run: a tuple whose partition expired counts
    // again and moves to its new partition, which the reclaim of the old
    // one leaves alone; a write at a time its partition had expired starts
    // it afresh, tuples included; DEL counts live partitions only.
    let reclaimed = recipes_info(c, "hcounter_expired_partitions");
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "v",
            "PARTITION",
            "day",
            "TTL",
            "600",
            "UNIQUE",
            "user",
        ],
    );
    let got = multi(
        c,
        &[
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(3600),
                "day",
                "old",
                "user",
                "a",
            ]),
            strings(&["HCOUNTER.INCR", "v", "day", "new", "user", "a"]),
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(1000),
                "day",
                "f",
                "user",
                "b",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(300),
                "day",
                "f",
                "user",
                "b",
            ]),
            strings(&[
                "HCOUNTER.INCR",
                "v",
                "AT",
                &ago(3600),
                "day",
                "gone",
                "user",
                "c",
            ]),
            strings(&["HCOUNTER.DEL", "v", "day", "gone"]),
        ],
    );
    assert_eq!(got, [1, 1, 1, 1, 1, 0].map(Value::Int).to_vec());
    // "old" expired on arrival: reclaimed in the background ("gone" too,
    // unless DEL removed it).
    wait_reclaimed(c, reclaimed + 1, "master");
    let incr_v = |c: &mut Conn, day: &str, user: &str| {
        int_reply(c, &["HCOUNTER.INCR", "v", "day", day, "user", user])
    };
    assert_eq!(incr_v(c, "x", "a"), 0, "a is seen in 'new'");
    assert_eq!(incr_v(c, "x", "b"), 0, "b is seen in 'f'");
    assert_eq!(incr_v(c, "x", "c"), 1, "c went with 'gone'");
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "v"]),
        vec![
            row(&[("day", "f")], 1),
            row(&[("day", "new")], 1),
            row(&[("day", "x")], 1)
        ]
    );
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "v"]), 3);
}
