//! CAPACITY keys with many buckets in use (`BUCKET 1 WINDOW 86400 CAPACITY
//! 100`, events spread over 20,000 buckets with AT): every write's reply is
//! the member's count over the window (as `TOPN.COUNT` sums it, bucket by
//! bucket), while upkeep folds the sealed buckets, after late events into
//! folded ones, after a reload (the folded sums are rebuilt, not stored),
//! and on a replica (same bytes, same digest, same answers). Behaviour
//! only: how long a write takes is `make bench`'s (`topn-capacity`).
mod common;
use common::families::topn::*;
use common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Conn = redis::Connection;

const BUCKETS: i64 = 20_000;

/// `n` writes `(member, by, at)` pipelined, each followed by `TOPN.COUNT
/// member AT clock_at`: every reply equals the count read right after it.
fn writes_answer_the_window_count(c: &mut Conn, writes: &[(String, i64, i64)], clock_at: i64) {
    for chunk in writes.chunks(500) {
        let mut p = redis::pipe();
        for (m, by, at) in chunk {
            p.add_command(incr_cmd("k", m, *by, *at));
            p.cmd("TOPN.COUNT").arg("k").arg(m).arg("AT").arg(clock_at);
        }
        let replies: Vec<redis::Value> = p.query(c).unwrap();
        for (i, pair) in replies.chunks(2).enumerate() {
            let reply: i64 = redis::from_redis_value(&pair[0]).unwrap();
            let counted: Vec<i64> = redis::from_redis_value(&pair[1]).unwrap();
            assert_eq!(reply, counted[0], "write {:?}", chunk[i]);
        }
    }
}

fn member(rng: &mut StdRng) -> String {
    let x: f64 = rng.gen();
    format!("m{}", (x * x * 400.0) as u32)
}

#[test]
fn writes_over_many_buckets_answer_the_window_count() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("TOPN_SEED", 36));
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "k",
            "BUCKET",
            "1",
            "WINDOW",
            "86400",
            "CAPACITY",
            "100",
        ],
    );
    let first = now_ms() / 1000 - BUCKETS;
    let last = first + BUCKETS - 1;
    // Three events a bucket, ascending; one bucket in 200 over its capacity
    // (150 distinct members of distinct counts: it evicts, and each
    // eviction moves its floor).
    let mut bulk = redis::pipe();
    for b in first..=last {
        for _ in 0..3 {
            bulk.add_command(incr_cmd("k", &member(&mut rng), 1, b * 1000))
                .ignore();
        }
        if b % 200 == 0 {
            for i in 0..150 {
                bulk.add_command(incr_cmd("k", &format!("w{i}"), 1 + i, b * 1000))
                    .ignore();
            }
        }
        if b % 2000 == 0 {
            let _: () = bulk.query(c).unwrap();
            bulk = redis::pipe();
        }
    }
    let _: () = bulk.query(c).unwrap();
    assert_eq!(info(c, "k")["buckets"], BUCKETS);
    let clock_at = last * 1000;
    // At the clock, late (into folded buckets, full ones among them: their
    // floors move), and new members.
    let writes: Vec<(String, i64, i64)> = (0..3_000)
        .map(|i| {
            let m = match i % 5 {
                0 => format!("w{}", rng.gen_range(0..300)),
                1 => format!("new{i}"),
                _ => member(&mut rng),
            };
            let at = match i % 3 {
                0 => clock_at,
                1 => (first + rng.gen_range(0..BUCKETS / 200) * 200) * 1000,
                _ => (first + rng.gen_range(0..BUCKETS)) * 1000 + 7,
            };
            (m, rng.gen_range(1..4), at)
        })
        .collect();
    writes_answer_the_window_count(c, &writes, clock_at);
    // A reload rebuilds the sums; writes right after it answer the same.
    q_ok(c, &["DEBUG", "RELOAD"]);
    writes_answer_the_window_count(c, &writes[..600], clock_at);
    // The replica: same bytes, same digest, same answers.
    wait_for_sync(&master, &replica);
    let rc = &mut replica.conn();
    let dump = |c: &mut Conn| -> Vec<u8> { q(c, &["DUMP", "k"]) };
    assert!(dump(c) == dump(rc), "DUMP differs on the replica");
    let digest = |c: &mut Conn| -> Vec<String> { q(c, &["DEBUG", "DIGEST-VALUE", "k"]) };
    assert_eq!(digest(c), digest(rc));
    let members: Vec<String> = (0..400).map(|i| format!("m{i}")).collect();
    let members: Vec<&str> = members.iter().map(String::as_str).collect();
    let at = Some(clock_at);
    assert_eq!(count(c, "k", &members, at), count(rc, "k", &members, at));
}
