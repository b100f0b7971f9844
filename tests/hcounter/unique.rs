//! Unique counting within scopes.
use super::*;

/// A unique counter counts a UNIQUE tuple only the first time within its
/// SCOPE tuple; a repeat replies the cell's count (0 for a missing cell) and
/// creates nothing; the tuple belongs to the partition it was first counted
/// in, and deleting that partition forgets it.
#[test]
fn unique_counting_within_scopes() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "u",
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "UNIQUE",
            "user",
            "SCOPE",
            "month",
        ],
    );
    let incrby = |c: &mut Conn, by: &str, day: &str, page: &str, user: &str, month: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCRBY",
                "u",
                by,
                "day",
                day,
                "page",
                page,
                "user",
                user,
                "month",
                month,
            ],
        )
    };
    let incr = |c: &mut Conn, day: &str, page: &str, user: &str, month: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCR",
                "u",
                "month",
                month,
                "user",
                user,
                "page",
                page,
                "day",
                day,
            ],
        )
    };
    assert_eq!(incr(c, "d1", "p", "a", "m1"), 1);
    assert_eq!(incr(c, "d1", "p", "a", "m1"), 1, "seen in m1");
    assert_eq!(incr(c, "d1", "p", "a", "m2"), 2, "another scope");
    assert_eq!(
        incr(c, "d2", "p", "a", "m1"),
        0,
        "seen; the cell does not exist"
    );
    assert_eq!(incrby(c, "10", "d2", "p", "a", "m1"), 0);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "u"]),
        vec![prow(&[("day", "d1")])],
        "a repeat creates nothing"
    );
    assert_eq!(incr(c, "d2", "q", "b", "m1"), 1);
    assert_eq!(incrby(c, "10", "d2", "q", "c", "m1"), 11);
    assert_eq!(incrby(c, "10", "d2", "q", "c", "m1"), 11);
    assert_eq!(incrby(c, "-3", "d2", "q", "c", "m2"), 8);
    // Deleting d1 forgets (m1, a) and (m2, a), counted there.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "u", "day", "d1"]), 1);
    assert_eq!(incr(c, "d2", "p", "a", "m1"), 1, "(m1, a) counts again");
    assert_eq!(incr(c, "d1", "p", "a", "m2"), 1, "(m2, a) counts again");
    // (m1, a) now belongs to d2: deleting d1 again leaves it.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "u", "day", "d1"]), 1);
    assert_eq!(incr(c, "d3", "p", "a", "m1"), 0);
    assert_eq!(incr(c, "d3", "p", "a", "m2"), 1);
    // (m1, b) and (m1, c) are still seen (in d2).
    assert_eq!(incr(c, "d3", "p", "b", "m1"), 1);
    assert_eq!(incr(c, "d3", "p", "c", "m1"), 1);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "u"]),
        vec![
            row(&[("day", "d2"), ("page", "p")], 1),
            row(&[("day", "d2"), ("page", "q")], 8),
            row(&[("day", "d3"), ("page", "p")], 1),
        ]
    );
    // Deleting everything forgets every tuple.
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "u"]), 2);
    assert_eq!(incr(c, "d1", "p", "a", "m1"), 1);
    assert_eq!(incr(c, "d1", "p", "c", "m1"), 2);

    // Scope and unique tuples of several names: bytes never mix.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "s",
            "GROUP",
            "g",
            "UNIQUE",
            "u1",
            "u2",
            "SCOPE",
            "s1",
            "s2",
        ],
    );
    let incr_s = |c: &mut Conn, u: (&str, &str), s: (&str, &str)| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCR",
                "s",
                "g",
                "x",
                "u1",
                u.0,
                "u2",
                u.1,
                "s1",
                s.0,
                "s2",
                s.1,
            ],
        )
    };
    assert_eq!(incr_s(c, ("1", "2"), ("a:b", "c")), 1);
    assert_eq!(incr_s(c, ("1", "2"), ("a", "b:c")), 2);
    assert_eq!(incr_s(c, ("1", "2"), ("a", "b\0c")), 3);
    assert_eq!(incr_s(c, ("1:2", ""), ("a", "b:c")), 4);
    assert_eq!(incr_s(c, ("1", ":2"), ("a", "b:c")), 5);
    for (u, s) in [
        (("1", "2"), ("a:b", "c")),
        (("1", "2"), ("a", "b:c")),
        (("1", "2"), ("a", "b\0c")),
        (("1:2", ""), ("a", "b:c")),
        (("1", ":2"), ("a", "b:c")),
    ] {
        assert_eq!(incr_s(c, u, s), 5, "{u:?} {s:?} seen");
    }

    // Without SCOPE the whole counter is the scope; a UNIQUE name may also
    // be a GROUP and a PARTITION name.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "w",
            "PARTITION",
            "company",
            "GROUP",
            "company",
            "UNIQUE",
            "company",
            "user",
        ],
    );
    let incr_w = |c: &mut Conn, company: &str, user: &str| {
        int_reply(c, &["HCOUNTER.INCR", "w", "company", company, "user", user])
    };
    assert_eq!(
        [
            incr_w(c, "1", "a"),
            incr_w(c, "1", "b"),
            incr_w(c, "1", "a"),
            incr_w(c, "2", "a"),
            incr_w(c, "2", "a"),
        ],
        [1, 2, 2, 1, 1]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "w"]),
        vec![row(&[("company", "1")], 2), row(&[("company", "2")], 1)]
    );
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "w", "company", "1"]), 2);

    // A SCOPE name that is also a GROUP name: users are unique per company.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "x",
            "PARTITION",
            "day",
            "GROUP",
            "company",
            "UNIQUE",
            "user",
            "SCOPE",
            "company",
        ],
    );
    let incr_x = |c: &mut Conn, day: &str, company: &str, user: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.INCR",
                "x",
                "day",
                day,
                "company",
                company,
                "user",
                user,
            ],
        )
    };
    assert_eq!(
        [
            incr_x(c, "d1", "1", "a"),
            incr_x(c, "d2", "1", "a"),
            incr_x(c, "d2", "2", "a"),
            incr_x(c, "d2", "2", "b"),
        ],
        [1, 0, 1, 2]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "x"]),
        vec![
            row(&[("day", "d1"), ("company", "1")], 1),
            row(&[("day", "d2"), ("company", "2")], 2),
        ]
    );
}
