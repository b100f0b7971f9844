//! Acceptance tests of the ULIST family (unique-value lists with scopes,
//! partitions and per-value expiry) against a real redis-server.
//!
//! The model test takes its seed from `ULIST_SEED` (printed).
#[path = "../common/mod.rs"]
mod common;

mod errors;
mod events;
mod examples;
mod model;
mod reclaim;
mod replication;
mod values;

use common::*;

use redis::Value;

type Conn = redis::Connection;
/// A row of DATA or PARTITIONS: (name, value) pairs in reply order.
type Row = Vec<(Vec<u8>, Vec<u8>)>;

const DAY_MS: i64 = 86_400_000;

/// Rows of a RESP2 DATA/PARTITIONS reply (flat name/value arrays).
fn rows_of(v: Value) -> Vec<Row> {
    let Value::Array(rows) = v else {
        panic!("rows: {v:?}")
    };
    rows.into_iter()
        .map(|row| {
            let flat: Vec<Vec<u8>> = redis::from_redis_value(&row).unwrap();
            assert!(flat.len().is_multiple_of(2), "odd row {flat:?}");
            flat.chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect()
        })
        .collect()
}

fn rows(c: &mut Conn, args: &[&str]) -> Vec<Row> {
    rows_of(q(c, args))
}

/// Rows written as `&[&[("name", "value"), ...]]`.
fn want(rows: &[&[(&str, &str)]]) -> Vec<Row> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect()
        })
        .collect()
}

fn memory(c: &mut Conn, key: &str) -> i64 {
    q(c, &["MEMORY", "USAGE", key, "SAMPLES", "0"])
}

fn create(c: &mut Conn, key: &str) {
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            key,
            "VALUE",
            "v",
            "SCOPE",
            "s",
            "PARTITION",
            "p",
            "EXPIRE",
            "86400",
        ],
    );
}

/// Waits until background reclaim has removed `total` values on this server.
fn wait_reclaimed(c: &mut Conn, total: i64) {
    wait_recipes_info(c, "ulist_expired_values", total, "reclaim");
}
