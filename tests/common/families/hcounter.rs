//! HCOUNTER in the family table: partitioned, grouped counters (module type
//! `recipesHC`).

use super::super::{cmd, exists, q, q_bin, q_ok};
use super::{read_line, Family, Reclaim, Step, Tally};
use rand::rngs::StdRng;
use rand::Rng;
use redis::{Connection, Value};

pub const FAMILY: Family = Family {
    name: "HCOUNTER",
    commands: &[
        "HCOUNTER.CREATE",
        "HCOUNTER.INCR",
        "HCOUNTER.INCRBY",
        "HCOUNTER.GET",
        "HCOUNTER.DATA",
        "HCOUNTER.INFO",
        "HCOUNTER.PARTITIONS",
        "HCOUNTER.DEL",
        "HCOUNTER.SET",
        "HCOUNTER.SEEN",
        "HCOUNTER.RECLAIM",
    ],
    keywords: &[
        "PARTITION",
        "GROUP",
        "UNIQUE",
        "SCOPE",
        "TTL",
        "FLOAT",
        "AT",
        "VALUE",
    ],
    configs: &[("recipes.hcounter-compact-max", "2")],
    workload,
    read,
    sample,
    tally: Tally {
        setup: |key| vec![cmd(&["HCOUNTER.CREATE", key, "GROUP", "g"])],
        write: |key, i| cmd(&["HCOUNTER.INCR", key, "g", &(i % 5).to_string()]),
        count: |c, key| {
            let rows: Vec<Vec<redis::Value>> = q(c, &["HCOUNTER.DATA", key]);
            rows.iter()
                .map(|row| redis::from_redis_value::<i64>(&row[row.len() - 1]).unwrap())
                .sum()
        },
    },
    // A partition expires TTL seconds after its latest AT.
    reclaim: Some(Reclaim {
        create: |key| vec![cmd(&["HCOUNTER.CREATE", key, "PARTITION", "p", "TTL", "1"])],
        expiring: |key, n, due| {
            let at = (due - 1000).to_string();
            (0..n)
                .map(|i| cmd(&["HCOUNTER.INCR", key, "AT", &at, "p", &i.to_string()]))
                .collect()
        },
    }),
    upkeep: None,
};

const DAY_MS: i64 = 86_400_000;

/// Values with `:`, NUL and 0xFF, which must never split or mix.
const COMPANIES: [&[u8]; 3] = [b"c:1", b"c\x00", b"\xff"];
/// Fractional increments of the FLOAT counter.
const FRACTIONS: [&str; 5] = ["0.1", "1e-3", "12.345", "-0.7", "2.5e1"];

/// Counters with and without TTL, a FLOAT one, a unique one with a scope and
/// one without names: increments with and without AT (the server clock:
/// replicated as effects), writes already expired on arrival (a day-long TTL
/// three days ago: reclaimed in the background, their unique tuples
/// forgotten), binary values, and deletes with and without a filter.
/// Everything live stays live for hours, so reads made later agree.
fn workload(c: &mut Connection, p: &str, base: i64, rng: &mut StdRng) {
    let k = |s: &str| format!("{p}{s}");
    let (pages, float, uniq, simple) = (k("pages"), k("float"), k("uniq"), k("simple"));
    if !exists(c, &pages) {
        q_ok(
            c,
            &[
                "HCOUNTER.CREATE",
                &pages,
                "PARTITION",
                "day",
                "company",
                "GROUP",
                "company",
                "city",
                "TTL",
                "86400",
            ],
        );
        q_ok(
            c,
            &[
                "HCOUNTER.CREATE",
                &float,
                "PARTITION",
                "day",
                "GROUP",
                "page",
                "FLOAT",
            ],
        );
        q_ok(
            c,
            &[
                "HCOUNTER.CREATE",
                &uniq,
                "PARTITION",
                "day",
                "GROUP",
                "company",
                "TTL",
                "86400",
                "UNIQUE",
                "company",
                "user",
                "SCOPE",
                "month",
            ],
        );
        q_ok(c, &["HCOUNTER.CREATE", &simple]);
    }
    let old = (base - 3 * DAY_MS).to_string();
    for _ in 0..60 {
        let day = format!("2024-01-0{}", rng.gen_range(1..4));
        let company = COMPANIES[rng.gen_range(0..COMPANIES.len())];
        let city = format!("city:{}", rng.gen_range(0..4));
        let user = format!("u\x00{}", rng.gen_range(0..8));
        let recent = (base - rng.gen_range(0..3_600_000)).to_string();
        // No AT (the server clock), a recent AT, or one long expired.
        let at: Option<&str> = match rng.gen_range(0..4) {
            0 => None,
            1 => Some(&old),
            _ => Some(&recent),
        };
        let mut args: Vec<&[u8]> = vec![b"HCOUNTER.INCR".as_slice(), pages.as_bytes()];
        let by = rng.gen_range(-2..20).to_string();
        if rng.gen_bool(0.5) {
            args = vec![
                b"HCOUNTER.INCRBY".as_slice(),
                pages.as_bytes(),
                by.as_bytes(),
            ];
        }
        if let Some(at) = at {
            args.extend([b"AT".as_slice(), at.as_bytes()]);
        }
        args.extend([
            b"city".as_slice(),
            city.as_bytes(),
            b"company",
            company,
            b"day",
            day.as_bytes(),
        ]);
        q_bin::<Value>(c, &args);

        let fraction = FRACTIONS[rng.gen_range(0..FRACTIONS.len())];
        let page = format!("/p:{}", rng.gen_range(0..3));
        let mut args: Vec<&str> = vec!["HCOUNTER.INCRBY", &float, fraction];
        if rng.gen_bool(0.3) {
            args = vec!["HCOUNTER.INCR", &float];
        }
        if let Some(at) = at {
            args.extend(["AT", at]);
        }
        args.extend(["day", &day, "page", &page]);
        q::<Value>(c, &args);

        let mut args: Vec<&[u8]> = vec![b"HCOUNTER.INCR".as_slice(), uniq.as_bytes()];
        if let Some(at) = at {
            args.extend([b"AT".as_slice(), at.as_bytes()]);
        }
        args.extend([
            b"day".as_slice(),
            day.as_bytes(),
            b"company",
            company,
            b"user",
            user.as_bytes(),
            b"month",
            &day.as_bytes()[..7],
        ]);
        q_bin::<Value>(c, &args);

        let mut args = vec!["HCOUNTER.INCR", &simple];
        if let Some(at) = at {
            args.extend(["AT", at]);
        }
        q::<i64>(c, &args);
    }
    q::<i64>(c, &["HCOUNTER.DEL", &pages, "day", "2024-01-02"]);
    q::<i64>(c, &["HCOUNTER.DEL", &uniq, "day", "2024-01-03"]);
    q::<i64>(c, &["HCOUNTER.DEL", &float, "day", "2024-01-01"]);
    q::<i64>(c, &["HCOUNTER.DEL", &simple]);
    q::<i64>(c, &["HCOUNTER.INCRBY", &simple, "7"]);
}

fn read(c: &mut Connection, key: &str, _base: i64) -> Vec<String> {
    vec![
        read_line(c, &["HCOUNTER.DATA", key]),
        read_line(c, &["HCOUNTER.PARTITIONS", key]),
    ]
}

fn sample(key: &str, at: i64) -> Vec<Step> {
    let at = at.to_string();
    vec![
        Step::new(
            &[
                "HCOUNTER.CREATE",
                key,
                "PARTITION",
                "day",
                "GROUP",
                "page",
                "UNIQUE",
                "user",
            ],
            "OK",
        ),
        Step::new(
            &[
                "HCOUNTER.INCR",
                key,
                "AT",
                &at,
                "day",
                "d1",
                "page",
                "/",
                "user",
                "7",
            ],
            "1",
        ),
        Step::new(
            &["HCOUNTER.INCR", key, "day", "d2", "page", "/", "user", "7"],
            "0",
        ),
        Step::new(
            &[
                "HCOUNTER.INCRBY",
                key,
                "5",
                "day",
                "d2",
                "page",
                "/",
                "user",
                "8",
            ],
            "5",
        ),
        Step::new(&["HCOUNTER.GET", key, "page", "/", "day", "d1"], "1"),
        Step::new(
            &["HCOUNTER.DATA", key],
            "[[day, d1, page, /, value, 1], [day, d2, page, /, value, 5]]",
        ),
    ]
}
