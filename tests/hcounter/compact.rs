//! Compact and hashed partitions (`recipes.hcounter-compact-max`) agree.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// `recipes.hcounter-compact-max` changes only the layout: random
/// increments into partitions that grow past the compact size (and, after a
/// delete, start small again) agree with a model on the master and on a
/// replica whose compact size differs, across DEBUG RELOADs (which load with
/// the size in force), size changes and writes already expired on arrival
/// (reclaimed in the background); the DUMPs stay equal.
#[test]
fn compact_and_hashed_partitions_agree() {
    let seed = std::env::var("HCOUNTER_COMPACT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("HCOUNTER_COMPACT_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let master = Server::start();
    let replica = Server::builder()
        .config("recipes.hcounter-compact-max", "7")
        .start();
    let r = &mut replica.conn();
    q_ok(r, &["REPLICAOF", "127.0.0.1", &master.port.to_string()]);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();
    let create = [
        "HCOUNTER.CREATE",
        "cc",
        "PARTITION",
        "day",
        "GROUP",
        "company",
        "TTL",
        "86400",
    ];
    q_ok(c, &create);
    // day -> company -> count; bytewise order, as DATA lists them.
    let mut model: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    let two_days_ago = (now_ms() - 48 * HOUR_MS).to_string();
    let mut expired = 0;
    for step in 0..1_500 {
        let day = format!("d{}", rng.gen_range(0..4));
        // Company ids as numbers (packed as varints) and as text.
        let company = match rng.gen_range(0..3) {
            0 => format!("{}", rng.gen_range(0..40)),
            1 => format!("c{}", rng.gen_range(0..40)),
            _ => format!("{}", 10_000_000_000u64 + rng.gen_range(0..5)),
        };
        match rng.gen_range(0..100) {
            0..=74 => {
                let by: i64 = match rng.gen_range(0..10) {
                    0 => -300,
                    1 => 1 << 40,
                    _ => rng.gen_range(1..5),
                };
                let cell = model.entry(day.clone()).or_default();
                let count = cell.entry(company.clone()).or_insert(0);
                *count += by;
                let by = by.to_string();
                let args = [
                    "HCOUNTER.INCRBY",
                    "cc",
                    &by,
                    "day",
                    &day,
                    "company",
                    &company,
                ];
                assert_eq!(q::<i64>(c, &args), *count, "step {step}");
            }
            75..=79 => {
                // Expired on arrival: never read, reclaimed by the master.
                expired += 1;
                let old = format!("old{step}");
                let args = [
                    "HCOUNTER.INCR",
                    "cc",
                    "AT",
                    &two_days_ago,
                    "day",
                    &old,
                    "company",
                    &company,
                ];
                assert_eq!(q::<i64>(c, &args), 1, "step {step}");
            }
            80..=83 => {
                let _: i64 = q(c, &["HCOUNTER.DEL", "cc", "day", &day]);
                model.remove(&day);
            }
            84..=87 => {
                let size = ["0", "1", "3", "16", "128"][rng.gen_range(0..5)];
                q_ok(c, &["CONFIG", "SET", "recipes.hcounter-compact-max", size]);
            }
            88..=89 => q_ok(c, &["DEBUG", "RELOAD"]),
            _ => {
                let want: Vec<Row> = model
                    .iter()
                    .flat_map(|(d, cells)| {
                        cells
                            .iter()
                            .map(move |(co, n)| row(&[("day", d), ("company", co)], *n))
                    })
                    .collect();
                assert_eq!(rows(c, &["HCOUNTER.DATA", "cc"]), want, "step {step}");
                // Once the master reclaimed what expired (no reclaim runs
                // between the two DUMPs), the replica holds the same bytes.
                wait_reclaimed(c, expired, &format!("step {step}"));
                wait_for_sync(&master, &replica);
                assert_eq!(rows(r, &["HCOUNTER.DATA", "cc"]), want, "step {step}");
                let on_master: Vec<u8> = q(c, &["DUMP", "cc"]);
                let on_replica: Vec<u8> = q(r, &["DUMP", "cc"]);
                assert_eq!(on_master, on_replica, "step {step}: DUMP");
            }
        }
    }
    assert!(!master.log().contains("panic"), "{}", master.log());
}
