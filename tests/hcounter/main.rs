//! Acceptance tests of the HCOUNTER family (partitioned, grouped counters
//! with TTL, FLOAT counts and unique-event counting) against a real
//! redis-server, as `/work/hcounter-contract.md` pins it.
//!
//! The model test takes its seed from `HCOUNTER_SEED`, the FLOAT test from
//! `HCOUNTER_FLOAT_SEED` (both printed).
#[path = "../common/mod.rs"]
mod common;

mod compact;
mod errors;
mod events;
mod examples;
mod float;
mod model;
mod names;
mod replication;
mod ttl;
mod unique;

use common::*;

use redis::Value;

type Conn = redis::Connection;

const HOUR_MS: i64 = 3_600_000;

/// One entry of a row: a name's value, or an integer count.
#[derive(Clone, Debug, PartialEq)]
enum V {
    B(Vec<u8>),
    I(i64),
}

/// A row of DATA or PARTITIONS: (name, value) pairs in reply order.
type Row = Vec<(Vec<u8>, V)>;

fn bytes_of(v: &Value) -> Vec<u8> {
    match v {
        Value::BulkString(b) => b.clone(),
        Value::SimpleString(s) => s.as_bytes().to_vec(),
        other => panic!("not a string: {other:?}"),
    }
}

fn entry_of(v: &Value) -> V {
    match v {
        Value::Int(n) => V::I(*n),
        Value::BulkString(b) => V::B(b.clone()),
        other => panic!("a row value must be an integer or a bulk string: {other:?}"),
    }
}

/// Rows of a DATA/PARTITIONS reply: flat name/value arrays (RESP2) or maps
/// (RESP3).
fn rows_of(v: Value) -> Vec<Row> {
    let Value::Array(rows) = v else {
        panic!("rows: {v:?}")
    };
    rows.iter()
        .map(|row| match row {
            Value::Array(flat) => {
                assert!(flat.len().is_multiple_of(2), "odd row {flat:?}");
                flat.chunks(2)
                    .map(|p| (bytes_of(&p[0]), entry_of(&p[1])))
                    .collect()
            }
            Value::Map(pairs) => pairs
                .iter()
                .map(|(k, v)| (bytes_of(k), entry_of(v)))
                .collect(),
            other => panic!("a row must be an array or a map: {other:?}"),
        })
        .collect()
}

fn rows(c: &mut Conn, args: &[&str]) -> Vec<Row> {
    rows_of(q(c, args))
}

fn rows_bin(c: &mut Conn, args: &[&[u8]]) -> Vec<Row> {
    rows_of(q_bin(c, args))
}

fn pairs_of(pairs: &[(&str, &str)]) -> Row {
    pairs
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), V::B(v.as_bytes().to_vec())))
        .collect()
}

/// A DATA row of an integer counter: the pairs, then `value n`.
fn row(pairs: &[(&str, &str)], n: i64) -> Row {
    let mut r = pairs_of(pairs);
    r.push((b"value".to_vec(), V::I(n)));
    r
}

/// A DATA row of a FLOAT counter: the pairs, then `value "text"`.
fn frow(pairs: &[(&str, &str)], text: &str) -> Row {
    let mut r = pairs_of(pairs);
    r.push((b"value".to_vec(), V::B(text.as_bytes().to_vec())));
    r
}

/// A PARTITIONS row.
fn prow(pairs: &[(&str, &str)]) -> Row {
    pairs_of(pairs)
}

fn no_rows() -> Vec<Row> {
    Vec::new()
}

/// A FLOAT count reply: must be a bulk string.
fn float_reply(c: &mut Conn, args: &[&str]) -> String {
    match q::<Value>(c, args) {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        other => panic!("{args:?}: a FLOAT count is a bulk string, got {other:?}"),
    }
}

/// An integer count reply: must be an integer.
fn int_reply(c: &mut Conn, args: &[&str]) -> i64 {
    match q::<Value>(c, args) {
        Value::Int(n) => n,
        other => panic!("{args:?}: a count is an integer, got {other:?}"),
    }
}

/// Waits until this server's background reclaim has removed `total`
/// partitions (INFO `hcounter_expired_partitions`).
fn wait_reclaimed(c: &mut Conn, total: i64, ctx: &str) {
    wait_recipes_info(c, "hcounter_expired_partitions", total, ctx);
}

/// A master with an AOF (fsync always) whose rewrites write commands, not
/// an RDB preamble: BGREWRITEAOF then goes through the module's AOF rewrite.
fn aof_master() -> Server {
    Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .config("aof-use-rdb-preamble", "no")
        .start()
}

/// BGREWRITEAOF, its base as commands (the module's AOF rewrite) or as an
/// RDB preamble (the module's RDB save, loaded at the next start).
fn rewrite_aof(srv: &Server, rdb_preamble: bool) {
    let c = &mut srv.conn();
    let preamble = if rdb_preamble { "yes" } else { "no" };
    q_ok(c, &["CONFIG", "SET", "aof-use-rdb-preamble", preamble]);
    let _: String = q(c, &["BGREWRITEAOF"]);
    wait_for_bg_done(srv);
}

/// The commands of the AOF base file a rewrite without preamble made.
fn aof_base(srv: &Server) -> String {
    let dir = srv.dir.join("appendonlydir");
    let base = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".base.aof"))
        .unwrap_or_else(|| panic!("no command-form base file in {}", dir.display()));
    String::from_utf8_lossy(&std::fs::read(base).unwrap()).into_owned()
}

/// How many times the command `name` (any case) appears in an AOF text.
fn aof_count(aof: &str, name: &str) -> usize {
    let bulk = format!("${}\r\n{}\r\n", name.len(), name.to_uppercase());
    aof.to_uppercase().matches(&bulk).count()
}
