//! Acceptance tests of the TL family (timeline / capped list).
#[path = "../common/mod.rs"]
mod common;

mod basics;
mod compat;
mod errors;
mod events;
mod trimming;

use common::*;

type Conn = redis::Connection;

fn lrange(c: &mut Conn, key: &str) -> Vec<String> {
    q::<Vec<String>>(c, &["LRANGE", key, "0", "-1"])
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// LPUSH many items in batches (items[0] pushed first, so it ends at the tail).
fn lpush_many(c: &mut Conn, key: &str, items: &[String]) {
    for chunk in items.chunks(5000) {
        let mut k = redis::cmd("LPUSH");
        k.arg(key);
        for it in chunk {
            k.arg(it);
        }
        let _: i64 = k.query(c).unwrap();
    }
}

/// Number of tail items to cut, per the contract.
fn model_trim(len: usize, maxlen: usize, slack: usize) -> usize {
    if maxlen > 0 && len > maxlen && len >= maxlen + slack {
        len - maxlen
    } else {
        0
    }
}
