//! Reads in pages: `ULIST.DATA`, `ULIST.PARTITIONS`, `HCOUNTER.DATA` and
//! `HCOUNTER.PARTITIONS` with `CURSOR c [COUNT n]`, against a model: random
//! writes (new rows, deleted partitions) between the steps; every row present
//! throughout the scan is returned exactly once, no row twice, and the pages
//! end with cursor 0. Big scopes and partitions (many shards of their hash
//! tables) and lists changing layout between the steps included.

mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A row's identity: its fields' values, `value` (a count) left out.
type Row = Vec<Vec<u8>>;

fn bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::BulkString(b) => b.clone(),
        Value::SimpleString(s) => s.clone().into_bytes(),
        Value::Int(n) => n.to_string().into_bytes(),
        other => panic!("not a string: {other:?}"),
    }
}

fn row_of(v: &Value) -> Row {
    let Value::Array(fields) = v else {
        panic!("not a row: {v:?}")
    };
    fields
        .chunks(2)
        .filter(|p| bytes(&p[0]) != b"value")
        .map(|p| bytes(&p[1]))
        .collect()
}

fn rows_of(v: &Value) -> Vec<Row> {
    let Value::Array(rows) = v else {
        panic!("not rows: {v:?}")
    };
    rows.iter().map(row_of).collect()
}

/// The whole read (no cursor), as a set.
fn all(c: &mut Connection, read: &[&str]) -> BTreeSet<Row> {
    rows_of(&q::<Value>(c, read)).into_iter().collect()
}

/// A command line's words (no word holds a space).
fn words(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

/// One page: the rows and the next cursor.
fn step(c: &mut Connection, read: &[&str], cursor: &str, count: usize) -> (Vec<Row>, String) {
    let mut args = read.to_vec();
    let count = count.to_string();
    args.extend(["CURSOR", cursor, "COUNT", &count]);
    let reply: Value = q(c, &args);
    let Value::Array(parts) = reply else {
        panic!("{args:?}: {reply:?}")
    };
    (
        rows_of(&parts[1]),
        String::from_utf8(bytes(&parts[0])).unwrap(),
    )
}

/// Scans `read` in pages of random sizes, calling `write` between the steps;
/// checks the rows against what was there throughout. Returns the steps
/// that came back short (fewer rows than COUNT, and not the last).
fn scan_with_writes(
    c: &mut Connection,
    read: &[&str],
    rng: &mut StdRng,
    mut write: impl FnMut(&mut Connection, &mut StdRng),
) -> usize {
    let mut throughout = all(c, read);
    let mut seen: BTreeMap<Row, usize> = BTreeMap::new();
    let mut cursor = "0".to_string();
    let (mut steps, mut short) = (0, 0);
    loop {
        let count = rng.gen_range(1..20);
        let (rows, next) = step(c, read, &cursor, count);
        assert!(rows.len() <= count, "{read:?}: {} rows", rows.len());
        short += (rows.len() < count && next != "0") as usize;
        let now = all(c, read);
        for row in rows {
            assert!(
                now.contains(&row),
                "{read:?}: a row that is not there: {row:?}"
            );
            *seen.entry(row).or_default() += 1;
        }
        steps += 1;
        assert!(steps < 10_000, "{read:?}: the scan does not end");
        if next == "0" {
            break;
        }
        cursor = next;
        write(c, rng);
        throughout = throughout.intersection(&all(c, read)).cloned().collect();
    }
    for (row, n) in &seen {
        assert_eq!(*n, 1, "{read:?}: {row:?} returned {n} times");
    }
    for row in &throughout {
        assert!(
            seen.contains_key(row),
            "{read:?}: {row:?} was there throughout, never returned"
        );
    }
    short
}

#[test]
fn ulist_pages_return_every_lasting_row_once() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("CURSOR_SEED", 27));
    for compact_max in ["512", "0"] {
        let _: () = q(
            c,
            &["CONFIG", "SET", "recipes.ulist-compact-max", compact_max],
        );
        let key = format!("u{compact_max}");
        q_ok(
            c,
            &[
                "ULIST.CREATE",
                &key,
                "VALUE",
                "v",
                "SCOPE",
                "s",
                "PARTITION",
                "p",
            ],
        );
        let add = |c: &mut Connection, rng: &mut StdRng| {
            let (v, s, p) = (
                rng.gen_range(0..400),
                rng.gen_range(0..4),
                rng.gen_range(0..6),
            );
            let (v, s, p) = (v.to_string(), s.to_string(), p.to_string());
            let _: i64 = q(c, &["ULIST.ADD", &key, "v", &v, "s", &s, "p", &p]);
        };
        for _ in 0..300 {
            add(c, &mut rng);
        }
        let write = |c: &mut Connection, rng: &mut StdRng| {
            if rng.gen_bool(0.1) {
                // The next write moves the list to the other layout.
                let max = ["0", "512"][rng.gen_range(0..2)];
                let _: () = q(c, &["CONFIG", "SET", "recipes.ulist-compact-max", max]);
            }
            if rng.gen_bool(0.15) {
                let p = rng.gen_range(0..6).to_string();
                let _: i64 = q(c, &["ULIST.DEL", &key, "p", &p]);
            } else {
                for _ in 0..rng.gen_range(0..4) {
                    add(c, rng);
                }
            }
        };
        for read in [
            vec!["ULIST.DATA", key.as_str()],
            vec!["ULIST.DATA", key.as_str(), "s", "1"],
            vec!["ULIST.PARTITIONS", key.as_str()],
        ] {
            scan_with_writes(c, &read, &mut rng, write);
        }
    }
    // A missing key: one empty page.
    let reply: Value = q(c, &["ULIST.DATA", "missing", "CURSOR", "0"]);
    assert_eq!(
        reply,
        Value::Array(vec![Value::BulkString(b"0".to_vec()), Value::Array(vec![])])
    );
}

#[test]
fn hcounter_pages_return_every_lasting_row_once() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("CURSOR_SEED", 28));
    q_ok(
        c,
        &["HCOUNTER.CREATE", "h", "PARTITION", "day", "GROUP", "city"],
    );
    let incr = |c: &mut Connection, rng: &mut StdRng| {
        let (d, city) = (
            rng.gen_range(0..8).to_string(),
            rng.gen_range(0..60).to_string(),
        );
        let _: i64 = q(c, &["HCOUNTER.INCR", "h", "day", &d, "city", &city]);
    };
    for _ in 0..300 {
        incr(c, &mut rng);
    }
    let write = |c: &mut Connection, rng: &mut StdRng| {
        if rng.gen_bool(0.15) {
            let d = rng.gen_range(0..8).to_string();
            let _: i64 = q(c, &["HCOUNTER.DEL", "h", "day", &d]);
        } else {
            for _ in 0..rng.gen_range(0..4) {
                incr(c, rng);
            }
        }
    };
    for read in [
        vec!["HCOUNTER.DATA", "h"],
        vec!["HCOUNTER.DATA", "h", "day", "3"],
        vec!["HCOUNTER.PARTITIONS", "h"],
    ] {
        scan_with_writes(c, &read, &mut rng, write);
    }
    assert_refusals(
        c,
        &[
            ("HCOUNTER.DATA h CURSOR zz", "ERR invalid CURSOR*"),
            (
                "HCOUNTER.DATA h CURSOR 0 COUNT 0",
                "ERR COUNT must be an integer between 1 and 10000",
            ),
            ("HCOUNTER.DATA h COUNT 5", "ERR COUNT needs CURSOR"),
            (
                "HCOUNTER.PARTITIONS h CURSOR 0 CURSOR 0",
                "ERR CURSOR given more than once",
            ),
        ],
    );
}

/// Scopes and partitions of thousands of rows (their tables of many
/// shards), also read through a filter that keeps few: every lasting row
/// once, and a step that looks at many rows it leaves out comes back short
/// (bounded work) rather than reading on.
#[test]
fn big_groups_page_in_bounded_steps() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let mut rng = StdRng::seed_from_u64(seed_from_env("CURSOR_SEED", 29));
    for create in [
        "ULIST.CREATE big VALUE v SCOPE s PARTITION p",
        "HCOUNTER.CREATE hbig PARTITION day GROUP city",
    ] {
        q_ok(c, &create.split(' ').collect::<Vec<_>>());
    }
    let mut pipe = redis::pipe();
    for v in 0..2500 {
        let p = if v % 400 == 0 {
            "rare".into()
        } else {
            (v % 10).to_string()
        };
        let v = v.to_string();
        pipe.cmd("ULIST.ADD")
            .arg(&["big", "v", &v, "s", "1", "p", &p]);
        let (d, city) = ((v.len() % 2).to_string(), v.clone());
        pipe.cmd("HCOUNTER.INCR")
            .arg(&["hbig", "day", &d, "city", &city]);
    }
    let _: () = pipe.ignore().query(c).unwrap();
    let write = |c: &mut Connection, rng: &mut StdRng| {
        for _ in 0..rng.gen_range(0..20) {
            let (v, p) = (rng.gen_range(0..4000).to_string(), rng.gen_range(0..10));
            let p = p.to_string();
            let _: i64 = q(c, &["ULIST.ADD", "big", "v", &v, "s", "1", "p", &p]);
            let _: i64 = q(c, &["HCOUNTER.INCR", "hbig", "day", "0", "city", &v]);
        }
    };
    for read in [
        vec!["ULIST.DATA", "big", "p", "3"],
        vec!["ULIST.DATA", "big"],
        vec!["HCOUNTER.DATA", "hbig"],
    ] {
        scan_with_writes(c, &read, &mut rng, write);
    }
    let short = scan_with_writes(c, &["ULIST.DATA", "big", "p", "rare"], &mut rng, write);
    assert!(short > 0, "no step came back short");
}

/// What a step may look at (`paged_looked` in `INFO recipes`): its budget,
/// `max(4 x COUNT, 1024)` entries, and the rest of the shard it was in
/// when the budget ran out (a shard holds up to about 3 x 512 entries).
fn step_bound(count: usize) -> i64 {
    ((4 * count).max(1024) + 3 * 512 + 2) as i64
}

/// Pages through `read` with `count` rows a step, `write` between the
/// steps (none: the rows must be exactly the whole read's); checks what
/// each step looked at against [`step_bound`] and every lasting row once.
/// Returns the steps taken.
fn bounded_scan(
    c: &mut Connection,
    read: &[&str],
    count: usize,
    mut write: Option<&mut dyn FnMut(&mut Connection)>,
) -> usize {
    let whole = all(c, read);
    let mut throughout = whole.clone();
    let mut seen: BTreeMap<Row, usize> = BTreeMap::new();
    let (mut cursor, mut steps) = ("0".to_string(), 0);
    loop {
        let before = recipes_info(c, "paged_looked");
        let (rows, next) = step(c, read, &cursor, count);
        let looked = recipes_info(c, "paged_looked") - before;
        assert!(
            looked <= step_bound(count),
            "{read:?} step {steps}: looked at {looked}"
        );
        assert!(rows.len() <= count);
        for row in rows {
            *seen.entry(row).or_default() += 1;
        }
        steps += 1;
        if next == "0" {
            break;
        }
        cursor = next;
        if let Some(write) = write.as_mut() {
            write(c);
            throughout = throughout.intersection(&all(c, read)).cloned().collect();
        }
    }
    for (row, n) in &seen {
        assert_eq!(*n, 1, "{read:?}: {row:?} returned {n} times");
    }
    for row in &throughout {
        assert!(seen.contains_key(row), "{read:?}: {row:?} never returned");
    }
    if write.is_none() {
        assert_eq!(seen.len(), whole.len(), "{read:?}: rows that are not there");
    }
    steps
}

/// Thousands of scopes (partitions) the filter leaves out, each with many
/// values (cells): a step passes over one at the cost of one entry,
/// whatever it holds, for every filter shape (leading names, trailing
/// names, both, none, PARTITION names), while a writer grows and shrinks
/// the table being read; the rows are right.
#[test]
fn passed_over_groups_cost_one_entry_each() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &words("ULIST.CREATE ul VALUE v SCOPE month company PARTITION p"),
    );
    q_ok(
        c,
        &words("HCOUNTER.CREATE hc PARTITION day company GROUP city"),
    );
    const COMPANIES: usize = 1500;
    let mut pipe = redis::pipe();
    for company in 0..COMPANIES {
        for v in 0..40 {
            let (month, p) = (v % 2, v % 4);
            let add = format!("ULIST.ADD ul v {v} month m{month} company c{company} p p{p}");
            pipe.cmd("ULIST.ADD").arg(&words(&add)[1..]);
        }
        for city in 0..8 {
            let incr = format!(
                "HCOUNTER.INCR hc day d{} company c{company} city {city}",
                city % 2
            );
            pipe.cmd("HCOUNTER.INCR").arg(&words(&incr)[1..]);
        }
        let _: () = pipe.ignore().query(c).unwrap();
        pipe.clear();
    }
    // One scope and one partition of thousands (tables of several shards).
    let add_target = |v: &str, p: usize| {
        let add = format!("ULIST.ADD ul v {v} month m1 company target p p{p}");
        let incr = format!("HCOUNTER.INCR hc day d1 company target city {v}");
        [add, incr]
    };
    for v in 0..3000 {
        for write in add_target(&format!("t{v}"), v % 10) {
            let args = words(&write);
            pipe.cmd(args[0]).arg(&args[1..]);
        }
    }
    let _: () = pipe.ignore().query(c).unwrap();
    let mut rng = StdRng::seed_from_u64(seed_from_env("CURSOR_SEED", 30));
    // Adds to the target scope and partition; now and then deletes a
    // tenth of the scope, or the whole partition (which the adds refill).
    let mut write = |c: &mut Connection| {
        for _ in 0..40 {
            let v = format!("t{}", rng.gen_range(0..6000));
            for write in add_target(&v, rng.gen_range(0..10)) {
                let _: i64 = q(c, &words(&write));
            }
        }
        if rng.gen_bool(0.05) {
            let p = rng.gen_range(0..10);
            let del = format!("ULIST.DEL ul month m1 company target p p{p}");
            let _: i64 = q(c, &words(&del));
        }
        if rng.gen_bool(0.02) {
            let _: i64 = q(c, &words("HCOUNTER.DEL hc day d1 company target"));
        }
    };
    // Trailing names: every other scope or partition passed over.
    for read in [
        "ULIST.DATA ul company target",
        "ULIST.DATA ul month m1 company target",
        "ULIST.PARTITIONS ul company target",
        "HCOUNTER.DATA hc company target",
        "HCOUNTER.PARTITIONS hc company target",
    ] {
        bounded_scan(c, &words(read), 10, Some(&mut write));
    }
    // Nothing matches: some thousands of groups, about 1024 a step.
    for read in [
        "ULIST.DATA ul company nobody",
        "ULIST.PARTITIONS ul company nobody",
        "HCOUNTER.DATA hc company nobody",
        "HCOUNTER.PARTITIONS hc company nobody",
    ] {
        let steps = bounded_scan(c, &words(read), 10, None);
        assert!(steps >= 3, "{read}: {steps} steps over 3,000 groups");
    }
    // Leading names, PARTITION names, none: what they look at is theirs.
    for read in [
        "ULIST.DATA ul month m0",
        "ULIST.DATA ul p p3",
        "ULIST.DATA ul",
        "HCOUNTER.DATA hc day d0",
        "HCOUNTER.DATA hc",
    ] {
        bounded_scan(c, &words(read), 1000, None);
    }
}

/// A cursor is good in the server process that made it only: the same
/// rows on a replica, or on the master after a restart, are in another
/// order (each process seeds its own hashes), so a cursor carried there is
/// refused (start again from 0) rather than read as if it were theirs.
#[test]
fn cursors_of_another_process_are_refused() {
    let mut master = Server::start();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    q_ok(c, &words("ULIST.CREATE l VALUE v SCOPE s PARTITION p"));
    q_ok(c, &words("HCOUNTER.CREATE h PARTITION day"));
    for v in 0..100 {
        let (v, p) = (v.to_string(), (v % 10).to_string());
        let _: i64 = q(c, &["ULIST.ADD", "l", "v", &v, "s", "1", "p", &p]);
        let _: i64 = q(c, &["HCOUNTER.INCR", "h", "day", &v]);
    }
    wait_for_sync(&master, &replica);
    let r = &mut replica.conn();
    let refused = |c: &mut Connection, read: &[&str], cursor: &str| {
        let mut args = read.to_vec();
        args.extend(["CURSOR", cursor, "COUNT", "5"]);
        let e = expect_err(c, &cmd(&args));
        assert!(
            e.starts_with("ERR invalid CURSOR: not one this server process returned")
                && e.ends_with("start again from 0"),
            "{args:?}: {e}"
        );
    };
    let mut cursors = Vec::new();
    for read in [
        vec!["ULIST.DATA", "l"],
        vec!["ULIST.PARTITIONS", "l"],
        vec!["HCOUNTER.DATA", "h"],
        vec!["HCOUNTER.PARTITIONS", "h"],
    ] {
        let (_, cursor) = step(c, &read, "0", 5);
        assert_ne!(cursor, "0");
        // Good where it was made, refused on the replica, which pages
        // its own rows from 0.
        step(c, &read, &cursor, 5);
        refused(r, &read, &cursor);
        let mut rows = BTreeSet::new();
        let mut at = "0".to_string();
        loop {
            let (page, next) = step(r, &read, &at, 7);
            rows.extend(page);
            if next == "0" {
                break;
            }
            at = next;
        }
        assert_eq!(rows, all(r, &read), "{read:?}");
        cursors.push((read, cursor));
    }
    // Nor is a cursor good after a restart.
    master.restart_with_save();
    let c = &mut master.conn();
    for (read, cursor) in &cursors {
        refused(c, read, cursor);
        assert!(!step(c, read, "0", 5).0.is_empty());
    }
}
