//! Keyspace notifications and INFO counters.
use super::*;

#[test]
fn notifications_and_info() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let ev = |e: &str| (e.to_string(), "n".to_string());
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "n",
            "PARTITION",
            "p",
            "GROUP",
            "g",
            "UNIQUE",
            "u",
            "TTL",
            "60",
        ],
    );
    let _ = int_reply(c, &["HCOUNTER.INCR", "n", "p", "a", "g", "x", "u", "1"]);
    // Not counted: no event.
    let _ = int_reply(c, &["HCOUNTER.INCR", "n", "p", "a", "g", "x", "u", "1"]);
    let _ = int_reply(
        c,
        &["HCOUNTER.INCRBY", "n", "2", "p", "a", "g", "x", "u", "2"],
    );
    let _ = int_reply(c, &["HCOUNTER.GET", "n", "p", "a", "g", "x"]);
    let _ = rows(c, &["HCOUNTER.DATA", "n"]);
    let _ = rows(c, &["HCOUNTER.PARTITIONS", "n", "p", "a"]);
    let _ = expect_err(c, &cmd(&["HCOUNTER.INCR", "n", "p", "a"]));
    // Nothing deleted: no event.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n", "p", "zz"]), 0);
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n", "p", "a"]), 1);
    // Expired at once: reclaimed in the background, with its own event.
    let old = (now_ms() - HOUR_MS).to_string();
    let _ = int_reply(
        c,
        &[
            "HCOUNTER.INCR",
            "n",
            "AT",
            &old,
            "p",
            "b",
            "g",
            "x",
            "u",
            "3",
        ],
    );
    wait_reclaimed(c, 1, "master");
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("hcounter.create"),
            ev("hcounter.incr"),
            ev("hcounter.incr"),
            ev("hcounter.del"),
            ev("hcounter.incr"),
            ev("hcounter.expire"),
        ]
    );
    for (field, n) in [
        ("hcounter_create_calls", 1),
        ("hcounter_incr_calls", 4),
        ("hcounter_incrby_calls", 1),
        ("hcounter_get_calls", 1),
        ("hcounter_data_calls", 1),
        ("hcounter_partitions_calls", 1),
        ("hcounter_del_calls", 2),
        ("hcounter_set_calls", 0),
        ("hcounter_seen_calls", 0),
        ("hcounter_errors", 1),
        ("hcounter_expired_partitions", 1),
    ] {
        assert_eq!(recipes_info(c, field), n, "{field}");
    }
    // Present, whatever the master's own background reclaim counts.
    recipes_info(c, "hcounter_reclaim_calls");
}
