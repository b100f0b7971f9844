//! The gem's examples (redis_counters' unique lists) written as ULIST
//! commands.
use super::*;

/// The gem's simple list of unique users: `increment(user_id: 1)` x {1, 2, 1}.
#[test]
fn gem_simple_list_of_users() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["ULIST.CREATE", "users", "VALUE", "user_id"]);
    let added: Vec<i64> = ["1", "2", "1"]
        .iter()
        .map(|u| q(c, &["ULIST.ADD", "users", "user_id", u]))
        .collect();
    assert_eq!(added, [1, 1, 0]);
    assert_eq!(
        rows(c, &["ULIST.DATA", "users"]),
        want(&[&[("user_id", "1")], &[("user_id", "2")]])
    );
    // One partition, with no names: the gem's `partitions => [{}]`.
    assert_eq!(rows(c, &["ULIST.PARTITIONS", "users"]), want(&[&[]]));
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "users", "user_id", "2"]), 1);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "users", "user_id", "3"]), 0);
    assert_eq!(q::<String>(c, &["TYPE", "users"]), "recipesUL");
}

fn add_company_user(
    c: &mut Conn,
    key: &str,
    company: &str,
    user: &str,
    date: &str,
    month: &str,
) -> i64 {
    q(
        c,
        &[
            "ULIST.ADD",
            key,
            "company_id",
            company,
            "user_id",
            user,
            "date",
            date,
            "start_month_date",
            month,
        ],
    )
}

/// The gem's unique company users per month, partitioned by day.
#[test]
fn gem_company_users_by_month() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "company_users_by_month";
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            k,
            "VALUE",
            "company_id",
            "user_id",
            "SCOPE",
            "start_month_date",
            "PARTITION",
            "date",
        ],
    );
    let mut added = 0;
    for (times, company, user, date, month) in [
        (2, "1", "11", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-09-05", "2013-09-01"),
        (3, "2", "11", "2013-08-10", "2013-08-01"),
        (1, "2", "22", "2013-08-11", "2013-08-01"),
    ] {
        for _ in 0..times {
            added += add_company_user(c, k, company, user, date, month);
        }
    }
    assert_eq!(added, 5);
    // The gem's keys, as rows: partitions per month, values per partition.
    let p = |m: &'static str, d: &'static str| -> Vec<(&'static str, &'static str)> {
        vec![("start_month_date", m), ("date", d)]
    };
    assert_eq!(
        rows(c, &["ULIST.PARTITIONS", k]),
        want(&[
            &p("2013-08-01", "2013-08-10"),
            &p("2013-08-01", "2013-08-11"),
            &p("2013-09-01", "2013-09-05"),
        ])
    );
    assert_eq!(
        rows(
            c,
            &["ULIST.PARTITIONS", k, "start_month_date", "2013-08-01"]
        ),
        want(&[
            &p("2013-08-01", "2013-08-10"),
            &p("2013-08-01", "2013-08-11")
        ])
    );
    assert_eq!(
        rows(c, &["ULIST.PARTITIONS", k, "date", "2013-09-05"]),
        want(&[&p("2013-09-01", "2013-09-05")])
    );
    let v = |co: &'static str, u: &'static str, m: &'static str, d: &'static str| {
        vec![
            ("company_id", co),
            ("user_id", u),
            ("start_month_date", m),
            ("date", d),
        ]
    };
    assert_eq!(
        rows(
            c,
            &[
                "ULIST.DATA",
                k,
                "start_month_date",
                "2013-08-01",
                "date",
                "2013-08-10"
            ]
        ),
        want(&[
            &v("1", "11", "2013-08-01", "2013-08-10"),
            &v("1", "22", "2013-08-01", "2013-08-10"),
            &v("2", "11", "2013-08-01", "2013-08-10"),
        ])
    );
    assert_eq!(
        rows(c, &["ULIST.DATA", k, "date", "2013-08-11"]),
        want(&[&v("2", "22", "2013-08-01", "2013-08-11")])
    );
    assert_eq!(rows(c, &["ULIST.DATA", k]).len(), 5);
    let has = |c: &mut Conn, co: &str, u: &str, m: &str| -> i64 {
        q(
            c,
            &[
                "ULIST.HAS",
                k,
                "user_id",
                u,
                "company_id",
                co,
                "start_month_date",
                m,
            ],
        )
    };
    assert_eq!(has(c, "1", "22", "2013-09-01"), 1);
    assert_eq!(has(c, "2", "22", "2013-09-01"), 0);
    // An ADD's arguments serve HAS; the partition does not narrow the answer
    // (a value is unique in its scope wherever it was added).
    let has_in = |c: &mut Conn, co: &str, u: &str, m: &str, d: &str| -> i64 {
        q(
            c,
            &[
                "ULIST.HAS",
                k,
                "company_id",
                co,
                "user_id",
                u,
                "start_month_date",
                m,
                "date",
                d,
            ],
        )
    };
    assert_eq!(has_in(c, "1", "22", "2013-09-01", "2013-08-11"), 1);
    assert_eq!(has_in(c, "1", "22", "2013-09-01", "2099-01-01"), 1);
    assert_eq!(has_in(c, "2", "22", "2013-09-01", "2013-08-11"), 0);
    // Deleting a day forgets its values in their month: they are new again.
    assert_eq!(q::<i64>(c, &["ULIST.DEL", k, "date", "2013-08-10"]), 1);
    assert_eq!(has(c, "1", "11", "2013-08-01"), 0);
    assert_eq!(
        add_company_user(c, k, "1", "11", "2013-08-12", "2013-08-01"),
        1
    );
    assert_eq!(
        rows(
            c,
            &["ULIST.PARTITIONS", k, "start_month_date", "2013-08-01"]
        ),
        want(&[
            &p("2013-08-01", "2013-08-11"),
            &p("2013-08-01", "2013-08-12")
        ])
    );
    // Deleting everything keeps the list and its schema.
    assert_eq!(q::<i64>(c, &["ULIST.DEL", k]), 3);
    assert_eq!(rows(c, &["ULIST.DATA", k]), Vec::<Row>::new());
    assert_eq!(q::<i64>(c, &["EXISTS", k]), 1);
    assert_eq!(q::<i64>(c, &["ULIST.DEL", k]), 0);
    assert_eq!(
        add_company_user(c, k, "1", "11", "2013-08-12", "2013-08-01"),
        1
    );
}

/// The gem's Expirable: sessions expire after 10 minutes unless NEVER.
#[test]
fn gem_expirable_sessions() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "sessions",
            "VALUE",
            "session_id",
            "EXPIRE",
            "600",
        ],
    );
    let now = now_ms();
    let eleven_min_ago = (now - 660_000).to_string();
    // Added now: all three are there.
    for s in ["1", "2"] {
        assert_eq!(q::<i64>(c, &["ULIST.ADD", "sessions", "session_id", s]), 1);
    }
    assert_eq!(
        q::<i64>(c, &["ULIST.ADD", "sessions", "session_id", "3", "NEVER"]),
        1
    );
    assert_eq!(rows(c, &["ULIST.DATA", "sessions"]).len(), 3);
    // The same, as if added 11 minutes ago: only the NEVER one is left.
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "old",
            "VALUE",
            "session_id",
            "EXPIRE",
            "600",
        ],
    );
    for s in ["1", "2"] {
        let r: i64 = q(
            c,
            &["ULIST.ADD", "old", "session_id", s, "AT", &eleven_min_ago],
        );
        assert_eq!(r, 1);
    }
    let r: i64 = q(
        c,
        &[
            "ULIST.ADD",
            "old",
            "NEVER",
            "AT",
            &eleven_min_ago,
            "session_id",
            "3",
        ],
    );
    assert_eq!(r, 1);
    assert_eq!(
        rows(c, &["ULIST.DATA", "old"]),
        want(&[&[("session_id", "3")]])
    );
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "old", "session_id", "1"]), 0);
    // An expired value is new again; a live one is not, and keeps its expiry.
    assert_eq!(q::<i64>(c, &["ULIST.ADD", "old", "session_id", "1"]), 1);
    assert_eq!(
        q::<i64>(c, &["ULIST.ADD", "old", "session_id", "1", "NEVER"]),
        0
    );
    // EXPIRE on the add overrides the default; the value goes at AT + s.
    let at = (now - 5_000).to_string();
    let r: i64 = q(
        c,
        &[
            "ULIST.ADD",
            "old",
            "session_id",
            "9",
            "EXPIRE",
            "4",
            "AT",
            &at,
        ],
    );
    assert_eq!(r, 1);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "old", "session_id", "9"]), 0);
    let pxat = (now + 3_600_000).to_string();
    let r: i64 = q(c, &["ULIST.ADD", "old", "session_id", "8", "PXAT", &pxat]);
    assert_eq!(r, 1);
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "old", "session_id", "8"]), 1);
}
