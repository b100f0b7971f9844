//! The gem's examples (redis_counters' HashCounter and UniqueHashCounter)
//! written as HCOUNTER commands.
use super::*;

/// The gem's simple counter: `5.times { counter.increment }`, then
/// `partitions => [{}]` and `data => [{:value=>5}]`.
#[test]
fn gem_simple_counter() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["HCOUNTER.CREATE", "simple_counter"]);
    assert_eq!(rows(c, &["HCOUNTER.DATA", "simple_counter"]), no_rows());
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "simple_counter"]),
        no_rows()
    );
    let counts: Vec<i64> = (0..5)
        .map(|_| int_reply(c, &["HCOUNTER.INCR", "simple_counter"]))
        .collect();
    assert_eq!(counts, [1, 2, 3, 4, 5]);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", "simple_counter"]),
        vec![prow(&[])]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", "simple_counter"]),
        vec![row(&[], 5)]
    );
    assert_eq!(int_reply(c, &["HCOUNTER.GET", "simple_counter"]), 5);
    assert_eq!(q::<String>(c, &["TYPE", "simple_counter"]), "recipesHC");
}

/// The gem's pages by day: GROUP company_id, PARTITION date.
#[test]
fn gem_pages_by_day() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "pages_by_day";
    // Options in any order: GROUP before PARTITION.
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "GROUP",
            "company_id",
            "PARTITION",
            "date",
        ],
    );
    let mut replies = Vec::new();
    for (times, company, date) in [
        (2, "1", "2013-08-01"),
        (3, "2", "2013-08-01"),
        (1, "3", "2013-08-02"),
    ] {
        for _ in 0..times {
            replies.push(int_reply(
                c,
                &["HCOUNTER.INCR", k, "company_id", company, "date", date],
            ));
        }
    }
    assert_eq!(replies, [1, 2, 1, 2, 3, 1]);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![
            prow(&[("date", "2013-08-01")]),
            prow(&[("date", "2013-08-02")])
        ]
    );
    // The gem's rows lack the partition names; ours carry them first.
    let r = |date: &str, company: &str, n: i64| row(&[("date", date), ("company_id", company)], n);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            r("2013-08-01", "1", 2),
            r("2013-08-01", "2", 3),
            r("2013-08-02", "3", 1)
        ]
    );
    // delete_partitions!(:date => '2013-08-01') => [1]
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k, "date", "2013-08-01"]), 1);
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![prow(&[("date", "2013-08-02")])]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![r("2013-08-02", "3", 1)]
    );
    // delete_all! => [1]
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k]), 1);
    assert_eq!(rows(c, &["HCOUNTER.DATA", k]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", k]), no_rows());
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k]), 0);
    // The key and its schema stay.
    assert!(exists(c, k));
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.INCR", k, "date", "2013-08-01", "company_id", "1"]
        ),
        1
    );
}

/// The gem's pages by day and city: two-level partitions (date, company_id),
/// company_id also a group name; filters; deleting a partition.
#[test]
fn gem_pages_by_day_city() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "pages_by_day_city";
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "PARTITION",
            "date",
            "company_id",
            "GROUP",
            "company_id",
            "city_id",
        ],
    );
    let mut replies = Vec::new();
    for (times, date, company, city) in [
        (2, "2013-08-01", "1", "11"),
        (1, "2013-08-01", "1", "12"),
        (4, "2013-08-01", "2", "10"),
        (3, "2013-08-02", "1", "15"),
    ] {
        for _ in 0..times {
            replies.push(int_reply(
                c,
                &[
                    "HCOUNTER.INCR",
                    k,
                    "date",
                    date,
                    "company_id",
                    company,
                    "city_id",
                    city,
                ],
            ));
        }
    }
    assert_eq!(replies, [1, 2, 1, 1, 2, 3, 4, 1, 2, 3]);
    let p = |date: &str, company: &str| prow(&[("date", date), ("company_id", company)]);
    // The gem lists 2013-08-02 first (KEYS order); ours are bytewise.
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![
            p("2013-08-01", "1"),
            p("2013-08-01", "2"),
            p("2013-08-02", "1")
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k, "date", "2013-08-01"]),
        vec![p("2013-08-01", "1"), p("2013-08-01", "2")]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k, "company_id", "1"]),
        vec![p("2013-08-01", "1"), p("2013-08-02", "1")]
    );
    // Rows carry date (a partition name the gem leaves out), company_id once
    // (partition and group name), city_id, value; the gem lists the
    // 2013-08-02 row first.
    let r = |date: &str, company: &str, city: &str, n: i64| {
        row(
            &[("date", date), ("company_id", company), ("city_id", city)],
            n,
        )
    };
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            r("2013-08-01", "1", "11", 2),
            r("2013-08-01", "1", "12", 1),
            r("2013-08-01", "2", "10", 4),
            r("2013-08-02", "1", "15", 3),
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k, "date", "2013-08-01"]),
        vec![
            r("2013-08-01", "1", "11", 2),
            r("2013-08-01", "1", "12", 1),
            r("2013-08-01", "2", "10", 4),
        ]
    );
    assert_eq!(
        rows(
            c,
            &["HCOUNTER.DATA", k, "company_id", "2", "date", "2013-08-01"]
        ),
        vec![r("2013-08-01", "2", "10", 4)]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k, "date", "2013-08-03"]),
        no_rows()
    );
    let get = |c: &mut Conn, date: &str, company: &str, city: &str| {
        int_reply(
            c,
            &[
                "HCOUNTER.GET",
                k,
                "city_id",
                city,
                "date",
                date,
                "company_id",
                company,
            ],
        )
    };
    assert_eq!(get(c, "2013-08-01", "1", "12"), 1);
    assert_eq!(get(c, "2013-08-02", "1", "15"), 3);
    assert_eq!(get(c, "2013-08-02", "1", "11"), 0);
    // Deleting one partition of the two-level scheme.
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.DEL", k, "date", "2013-08-01", "company_id", "1"]
        ),
        1
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![p("2013-08-01", "2"), p("2013-08-02", "1")]
    );
    assert_eq!(get(c, "2013-08-01", "1", "11"), 0);
    assert_eq!(
        int_reply(c, &["HCOUNTER.DEL", k, "company_id", "1"]),
        1,
        "only 2013-08-02/1 is left with company 1"
    );
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", k, "company_id", "1"]), 0);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![r("2013-08-01", "2", "10", 4)]
    );
}

fn incr_company_user(
    c: &mut Conn,
    k: &str,
    company: &str,
    user: &str,
    date: &str,
    month: &str,
) -> i64 {
    int_reply(
        c,
        &[
            "HCOUNTER.INCR",
            k,
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

/// The gem's UniqueHashCounter: unique (company_id, user_id) per
/// start_month_date, counted per company into daily partitions.
#[test]
fn gem_unique_company_users_by_month() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let k = "company_users_by_month";
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            k,
            "PARTITION",
            "date",
            "GROUP",
            "company_id",
            "UNIQUE",
            "company_id",
            "user_id",
            "SCOPE",
            "start_month_date",
        ],
    );
    let mut replies = Vec::new();
    for (times, company, user, date, month) in [
        (2, "1", "11", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-09-05", "2013-09-01"),
        (3, "2", "11", "2013-08-10", "2013-08-01"),
        (1, "2", "22", "2013-08-11", "2013-08-01"),
    ] {
        for _ in 0..times {
            replies.push(incr_company_user(c, k, company, user, date, month));
        }
    }
    // A repeat does not count and replies the cell's current count.
    assert_eq!(replies, [1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]);
    // The gem's hashes, as rows (with the partition name first).
    let r = |date: &str, company: &str, n: i64| row(&[("date", date), ("company_id", company)], n);
    assert_eq!(
        rows(c, &["HCOUNTER.DATA", k]),
        vec![
            r("2013-08-10", "1", 2),
            r("2013-08-10", "2", 1),
            r("2013-08-11", "2", 1),
            r("2013-09-05", "1", 1),
        ]
    );
    assert_eq!(
        rows(c, &["HCOUNTER.PARTITIONS", k]),
        vec![
            prow(&[("date", "2013-08-10")]),
            prow(&[("date", "2013-08-11")]),
            prow(&[("date", "2013-09-05")]),
        ]
    );
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.GET", k, "date", "2013-08-10", "company_id", "1"]
        ),
        2
    );
}
