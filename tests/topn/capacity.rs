//! CAPACITY: a TOPN whose buckets keep at most m counters (Space-Saving), each
//! count with its error, in reads, INFO, errors, replicas, RDB reloads, AOF
//! rewrites and DUMP payloads.
use super::*;

/// `TOPN.TOP key n [AT at] WITHERRORS` as (member, count, error).
fn top_errors(c: &mut Conn, key: &str, n: usize, at: i64) -> Vec<(String, i64, i64)> {
    let v: Vec<Value> = q(
        c,
        &[
            "TOPN.TOP",
            key,
            &n.to_string(),
            "AT",
            &at.to_string(),
            "WITHERRORS",
        ],
    );
    v.chunks(3)
        .map(|r| match r {
            [Value::BulkString(m), Value::Int(c), Value::Int(e)] => {
                (String::from_utf8_lossy(m).into_owned(), *c, *e)
            }
            other => panic!("not a row: {other:?}"),
        })
        .collect()
}

/// `k`: buckets of a minute, a window of 5, `capacity` counters a bucket.
fn create_minutely(c: &mut Conn, capacity: u32) {
    let capacity = capacity.to_string();
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "k",
            "BUCKET",
            "60",
            "WINDOW",
            "5",
            "CAPACITY",
            &capacity,
        ],
    );
}

/// A skewed stream over 60 members into buckets of one minute, `cap 5`.
fn fill(c: &mut Conn, key: &str, base: i64) -> BTreeMap<String, i64> {
    let mut exact = BTreeMap::new();
    let mut p = redis::pipe();
    for i in 0..600i64 {
        let m = format!("m{}", (i * i * 7 % 997) % (1 + i % 60));
        let by = 1 + i % 3;
        let at = base + (i % 3) * 60_000 + i;
        p.add_command(incr_cmd(key, &m, by, at)).ignore();
        *exact.entry(m).or_insert(0) += by;
    }
    let _: () = p.query(c).unwrap();
    exact
}

#[test]
fn capped_reads_bound_every_count() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let base = (now_ms() / 60_000 - 3) * 60_000;
    create_minutely(&mut *c, 5);
    // While no bucket is full the key is exact.
    incr(c, "k", "a", 3, base);
    incr(c, "k", "b", 1, base);
    assert_eq!(
        top_errors(c, "k", 10, base),
        [("a".into(), 3, 0), ("b".into(), 1, 0)]
    );
    assert_eq!(info(c, "k")["exact"], 1);
    let mut exact = fill(c, "k", base);
    exact.entry("a".into()).and_modify(|v| *v += 3).or_insert(3);
    exact.entry("b".into()).and_modify(|v| *v += 1).or_insert(1);
    let at = base + 3 * 60_000 - 1;
    let rows = top_errors(c, "k", 1000, at);
    assert!(
        rows.len() <= 15,
        "at most 3 buckets x 5 counters: {}",
        rows.len()
    );
    for (m, count, error) in &rows {
        let truth = exact[m];
        assert!(
            count - error <= truth && truth <= *count,
            "{m}: {truth} not in [{}, {count}]",
            count - error
        );
    }
    // COUNT WITHERRORS bounds every member, listed or not.
    for (m, truth) in &exact {
        let v: Vec<Vec<i64>> = q(
            c,
            &["TOPN.COUNT", "k", m, "AT", &at.to_string(), "WITHERRORS"],
        );
        let (count, error) = (v[0][0], v[0][1]);
        assert!(
            count - error <= *truth && *truth <= count,
            "{m}: {truth} not in [{}, {count}]",
            count - error
        );
    }
    // COUNT answers the upper end for any member, listed or not.
    for (m, truth) in &exact {
        let got = count(c, "k", &[m], Some(at))[0];
        assert!(got >= *truth, "{m}: COUNT {got} under {truth}");
    }
    let i = info(c, "k");
    assert_eq!((i["capacity"], i["exact"]), (5, 0));
    assert!(i["bound"] > 0 && i["counters"] <= 15, "{i:?}");
    // WITHCOUNTS alone: pairs; an exact key answers errors of 0.
    assert_eq!(top(c, "k", 1, at).len(), 1);
    q_ok(c, &["TOPN.CREATE", "plain", "BUCKET", "60"]);
    incr(c, "plain", "x", 2, base);
    assert_eq!(top_errors(c, "plain", 5, base), [("x".into(), 2, 0)]);
}

#[test]
fn capacity_errors_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["TOPN.CREATE", "k", "CAPACITY", "3"]);
    for (line, wanted) in [
        ("TOPN.CREATE n CAPACITY 0", "ERR CAPACITY must be an integer between 1 and 10000"),
        ("TOPN.CREATE n CAPACITY 10001", "ERR CAPACITY must be an integer between 1 and 10000"),
        ("TOPN.CREATE k", "ERR the key exists with another shape: BUCKET 3600 WINDOW 24 ALIGN 0 CAPACITY 3 (asked: BUCKET 3600 WINDOW 24 ALIGN 0)"),
        ("TOPN.CREATE k CAPACITY 4", "ERR the key exists with another shape: BUCKET 3600 WINDOW 24 ALIGN 0 CAPACITY 3 (asked: BUCKET 3600 WINDOW 24 ALIGN 0 CAPACITY 4)"),
        ("TOPN.INCR k m BY 0", "ERR BY must be a positive integer on a key with CAPACITY"),
        ("TOPN.INCR k m BY -2", "ERR BY must be a positive integer on a key with CAPACITY"),
        ("TOPN.SETCOUNTER k 1 m 1 0 KEPT", "ERR TOPN.SETCOUNTER only replays an AOF; write with TOPN.INCR"),
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        assert_eq!(expect_err(c, &cmd(&args)), wanted, "{line}");
    }
    assert!(!exists(c, "n"));
    assert_eq!(info(c, "k")["counters"], 0);
    q_ok(c, &["TOPN.CREATE", "k", "CAPACITY", "3"]);
}

#[test]
fn capped_keys_survive_replicas_reloads_and_rewrites() {
    let mut master = Server::builder().config("appendonly", "yes").start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    let base = (now_ms() / 60_000 - 3) * 60_000;
    create_minutely(&mut *mc, 4);
    fill(mc, "k", base);
    wait_for_sync(&master, &replica);
    let at = base + 3 * 60_000 - 1;
    let expected = top_errors(mc, "k", 100, at);
    let payload = |c: &mut Conn| -> Vec<u8> { q(c, &["DUMP", "k"]) };
    let dump = payload(mc);
    let same = |c: &mut Conn, what: &str| {
        assert_eq!(top_errors(c, "k", 100, at), expected, "{what}");
        assert_eq!(payload(c), dump, "{what}: DUMP");
    };
    same(&mut replica.conn(), "the replica");
    wait_for_bg_done(&master);
    let _: String = q(mc, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    master.restart();
    same(&mut master.conn(), "after the AOF rewrite");
    master.restart_with_save();
    let mc = &mut master.conn();
    same(mc, "after the RDB reload");
    let _: () = redis::cmd("RESTORE")
        .arg("again")
        .arg(0)
        .arg(&dump)
        .query(mc)
        .unwrap();
    assert_eq!(top_errors(mc, "again", 100, at), expected, "RESTORE");
}

/// A key whose total nears `i64::MAX` (one member counted `i64::MAX` in
/// one bucket of many): batches go on as before, each pair refused exactly
/// where its own count would pass the range, naming it and changing nothing.
#[test]
fn a_capped_key_near_the_range_of_counts_refuses_only_what_would_pass_it() {
    let srv = Server::builder().module_args(AHEAD_OF_THE_CLOCK).start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "c",
            "BUCKET",
            "1",
            "WINDOW",
            "3600",
            "CAPACITY",
            "3",
        ],
    );
    let base = (now_ms() / 1000 - 100) * 1000;
    let max = i64::MAX.to_string();
    // Many buckets in use, then the huge count in the oldest of them.
    let mut p = redis::pipe();
    for b in 0..60i64 {
        for m in ["a", "b", "c", "d"] {
            p.add_command(incr_cmd("c", m, 1 + b % 3, base + b * 1000))
                .ignore();
        }
    }
    let _: () = p.query(c).unwrap();
    let at = (base + 60_000).to_string();
    let huge = (i64::MAX - 1_000).to_string();
    let _: Vec<i64> = q(c, &["TOPN.INCRBY", "c", "AT", &at, &huge, "x"]);
    let dump = |c: &mut Conn| -> Vec<u8> { q(c, &["DUMP", "c"]) };
    // Other members, in the huge count's bucket and later: accepted.
    for i in 0..50i64 {
        let later = (base + 60_000 + i * 100).to_string();
        let got: Vec<i64> = q(c, &["TOPN.INCRBY", "c", "AT", &later, "1", "y", "2", "z"]);
        assert!(got.iter().all(|&n| n > 0 && n < 1_000_000), "{got:?}");
    }
    // A pair that would pass the range, after others: refused, named, no change.
    for (args, named) in [
        (
            vec!["TOPN.INCRBY", "c", "AT", &at, "1", "y", "2000", "x"],
            "argument 6",
        ),
        (vec!["TOPN.INCRBY", "c", "AT", &at, &max, "y"], "argument 4"),
        (
            vec![
                "TOPN.INCRBY",
                "c",
                "AT",
                &at,
                "5",
                "w",
                "1",
                "y",
                "1001",
                "x",
            ],
            "argument 8",
        ),
    ] {
        let before = dump(c);
        let e = expect_err(c, &cmd(&args));
        assert!(
            e.contains(named) && e.contains("would overflow"),
            "{args:?}: {e}"
        );
        assert_eq!(dump(c), before, "{args:?} changed the key");
    }
    // The member's own count (its counter here, the floors of the buckets
    // that evicted it) reaches i64::MAX exactly, and not one more.
    let count: Vec<i64> = q(c, &["TOPN.COUNT", "c", "x", "AT", &at]);
    let rest = (i64::MAX - count[0]).to_string();
    let got: Vec<i64> = q(c, &["TOPN.INCRBY", "c", "AT", &at, "1", "y", &rest, "x"]);
    assert_eq!(got[1], i64::MAX, "{got:?}");
    let e = expect_err(c, &cmd(&["TOPN.INCR", "c", "x", "AT", &at]));
    assert!(e.contains("overflow"), "{e}");
}
