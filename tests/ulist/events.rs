//! Keyspace notifications and INFO counters.
use super::*;
use std::time::Duration;

#[test]
fn notifications_and_info() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut sub = srv.conn();
    let mut ps = subscribe_keyevents(c, &mut sub);
    let ev = |e: &str| (e.to_string(), "l".to_string());
    q_ok(c, &["ULIST.CREATE", "l", "VALUE", "v", "PARTITION", "p"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "p", "a"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "p", "a"]); // not new: no event
    let _: i64 = q(c, &["ULIST.HAS", "l", "v", "1"]);
    let _ = rows(c, &["ULIST.DATA", "l"]);
    let _ = expect_err(c, &cmd(&["ULIST.ADD", "l", "v", "2"]));
    let _: i64 = q(c, &["ULIST.DEL", "l", "p", "zz"]); // nothing deleted: no event
    let _: i64 = q(c, &["ULIST.DEL", "l", "p", "a"]);
    // Expired at once: reclaimed in the background, with its own event.
    let past = (now_ms() - 10_000).to_string();
    let _: i64 = q(
        c,
        &[
            "ULIST.ADD",
            "l",
            "v",
            "2",
            "p",
            "b",
            "EXPIRE",
            "1",
            "AT",
            &past,
        ],
    );
    assert!(wait_until(Duration::from_secs(5), || recipes_info(
        c,
        "ulist_expired_values"
    ) == 1));
    q_ok(c, &["SET", "sentinel", "1"]);
    assert_eq!(
        events_until_sentinel(&mut ps),
        vec![
            ev("ulist.create"),
            ev("ulist.add"),
            ev("ulist.del"),
            ev("ulist.add"),
            ev("ulist.expire")
        ]
    );
    assert_eq!(recipes_info(c, "ulist_create_calls"), 1);
    assert_eq!(recipes_info(c, "ulist_add_calls"), 4);
    assert_eq!(recipes_info(c, "ulist_has_calls"), 1);
    assert_eq!(recipes_info(c, "ulist_data_calls"), 1);
    assert_eq!(recipes_info(c, "ulist_del_calls"), 2);
    assert_eq!(recipes_info(c, "ulist_errors"), 1);
}
