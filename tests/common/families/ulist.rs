//! ULIST in the family table: unique-value lists (module type `recipesUL`).

use super::super::{cmd, q, q_ok};
use super::{read_line, Family, Reclaim, Step, Tally};
use rand::rngs::StdRng;
use rand::Rng;
use redis::Connection;

pub const FAMILY: Family = Family {
    name: "ULIST",
    commands: &[
        "ULIST.CREATE",
        "ULIST.ADD",
        "ULIST.HAS",
        "ULIST.DATA",
        "ULIST.COUNT",
        "ULIST.INFO",
        "ULIST.PARTITIONS",
        "ULIST.DEL",
        "ULIST.RECLAIM",
    ],
    keywords: &[
        "VALUE",
        "SCOPE",
        "PARTITION",
        "EXPIRE",
        "NEVER",
        "AT",
        "PXAT",
        "REFRESH",
    ],
    configs: &[("recipes.ulist-compact-max", "2")],
    workload,
    read,
    sample,
    tally: Tally {
        setup: |key| vec![cmd(&["ULIST.CREATE", key, "VALUE", "v"])],
        write: |key, i| cmd(&["ULIST.ADD", key, "v", &i.to_string()]),
        count: |c, key| q::<Vec<redis::Value>>(c, &["ULIST.DATA", key]).len() as i64,
    },
    reclaim: Some(Reclaim {
        create: |key| vec![cmd(&["ULIST.CREATE", key, "VALUE", "v", "PARTITION", "p"])],
        expiring: |key, n, due| {
            let due = due.to_string();
            (0..n)
                .map(|i| {
                    let (v, p) = (i.to_string(), (i % 7).to_string());
                    cmd(&["ULIST.ADD", key, "PXAT", &due, "v", &v, "p", &p])
                })
                .collect()
        },
    }),
    upkeep: None,
};

/// Lists with and without scope and partitions, with a default expiry:
/// adds with and without AT (the server clock: replicated as effects),
/// re-adds, values with EXPIRE, NEVER and PXAT, values already expired on
/// arrival (reclaimed in the background), binary values, and deletes with
/// and without a filter.
fn workload(c: &mut Connection, p: &str, base: i64, rng: &mut StdRng) {
    let k = |s: &str| format!("{p}{s}");
    let (month, plain) = (k("month"), k("plain"));
    if !super::super::exists(c, &month) {
        q_ok(
            c,
            &[
                "ULIST.CREATE",
                &month,
                "VALUE",
                "company",
                "user",
                "SCOPE",
                "month",
                "PARTITION",
                "day",
                "EXPIRE",
                "86400",
            ],
        );
        q_ok(c, &["ULIST.CREATE", &plain, "VALUE", "v"]);
    }
    let past = (base - 3_600_000).to_string();
    let later = (base + 7_200_000).to_string();
    for i in 0..60 {
        let company = format!("c{}", rng.gen_range(0..3));
        let user = format!("u:{}\0", rng.gen_range(0..15));
        let day = format!("2024-0{}-{:02}", 1 + i % 2, rng.gen_range(1..4));
        let m = &day[..7];
        let mut args = vec![
            "ULIST.ADD",
            &month,
            "company",
            &company,
            "user",
            &user,
            "month",
            m,
            "day",
            &day,
        ];
        match rng.gen_range(0..5) {
            0 => args.push("NEVER"),
            1 => args.extend(["AT", &past, "EXPIRE", "60"]),
            2 => args.extend(["PXAT", &later]),
            _ => {}
        }
        q::<i64>(c, &args);
        q::<i64>(c, &["ULIST.ADD", &plain, "v", &user]);
    }
    q::<i64>(c, &["ULIST.DEL", &month, "day", "2024-01-02"]);
    q::<i64>(c, &["ULIST.DEL", &plain]);
    q::<i64>(c, &["ULIST.ADD", &plain, "v", "a:b\u{ff}"]);
}

fn read(c: &mut Connection, key: &str, _base: i64) -> Vec<String> {
    vec![
        read_line(c, &["ULIST.DATA", key]),
        read_line(c, &["ULIST.PARTITIONS", key]),
    ]
}

fn sample(key: &str, _at: i64) -> Vec<Step> {
    vec![
        Step::new(
            &["ULIST.CREATE", key, "VALUE", "user", "PARTITION", "day"],
            "OK",
        ),
        Step::new(&["ULIST.ADD", key, "user", "7", "day", "d1"], "1"),
        Step::new(&["ULIST.ADD", key, "user", "7", "day", "d2"], "0"),
        Step::new(&["ULIST.DATA", key], "[[user, 7, day, d1]]"),
    ]
}
