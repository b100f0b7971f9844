//! ALIGN: bucket boundaries shifted from the epoch (a daily bucket from a local midnight), in
//! reads, TOP24, expiry, INFO, replicas, RDB reloads, AOF rewrites and DUMP payloads.
use super::*;

const DAY_MS: i64 = 24 * HOUR_MS;

/// Hourly buckets over two days starting at :30 past each hour would not show the shift in a
/// day's totals; daily-sized tests use hours: BUCKET 3600 ALIGN 1800, WINDOW 48.
fn create_aligned(c: &mut Conn, key: &str) {
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            "3600",
            "WINDOW",
            "48",
            "ALIGN",
            "1800",
        ],
    );
}

/// Events around the :30 boundaries of the current hour, all inside the window.
fn write_around_boundaries(c: &mut Conn, key: &str) -> i64 {
    // The start of the bucket holding the server's time, an hour ago (inside the window).
    let start = (now_ms() - 1_800_000).div_euclid(HOUR_MS) * HOUR_MS + 1_800_000 - HOUR_MS;
    incr(c, key, "early", 5, start - 1);
    incr(c, key, "opening", 3, start);
    incr(c, key, "closing", 2, start + HOUR_MS - 1);
    start
}

#[test]
fn align_moves_bucket_boundaries() {
    let srv = Server::start();
    let c = &mut srv.conn();
    create_aligned(c, "k");
    let start = write_around_boundaries(c, "k");
    let i = info(c, "k");
    assert_eq!((i["bucket"], i["window"], i["align"]), (3600, 48, 1800));
    // LAST 1 at the bucket's start: its own events, not the one a millisecond before.
    assert_eq!(
        top_last(c, "k", 10, Some(start), 1),
        rows(&[("opening", 3), ("closing", 2)])
    );
    assert_eq!(
        top_last(c, "k", 10, Some(start - 1), 1),
        rows(&[("early", 5)])
    );
    // TOP24 covers 24 of the shifted buckets: the one a millisecond before 24 h on holds all.
    let t24: Rows = pairs(q(
        c,
        &[
            "TOPN.TOP24",
            "k",
            "10",
            "AT",
            &(start + DAY_MS - 1).to_string(),
            "WITHCOUNTS",
        ],
    ));
    assert_eq!(t24, rows(&[("opening", 3), ("closing", 2)]));
    // The key expires when its whole window has passed after its newest bucket.
    assert_eq!(pexpiretime(c, "k"), start + 48 * HOUR_MS);
    // A key without ALIGN reports 0.
    q_ok(c, &["TOPN.CREATE", "plain", "BUCKET", "3600"]);
    assert_eq!(info(c, "plain")["align"], 0);
}

#[test]
fn bad_align_is_refused_and_creates_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for (args, wanted) in [
        (
            &["BUCKET", "60", "ALIGN", "60"][..],
            "ALIGN must be less than BUCKET",
        ),
        (&["ALIGN", "3600"], "ALIGN must be less than BUCKET"), // default bucket 3600
        (&["BUCKET", "60", "ALIGN", "-1"], "ALIGN must be an integer"),
        (&["ALIGN", "x"], "ALIGN must be an integer"),
        (&["ALIGN"], "ALIGN needs a value"),
    ] {
        let mut k = redis::cmd("TOPN.CREATE");
        k.arg("k").arg(args);
        let e = expect_err(c, &k);
        assert!(e.contains(wanted), "{args:?}: {e}");
        assert!(!exists(c, "k"), "{args:?} created the key");
    }
}

#[test]
fn align_survives_replicas_reloads_and_rewrites() {
    let mut master = Server::builder().config("appendonly", "yes").start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    create_aligned(mc, "k");
    let start = write_around_boundaries(mc, "k");
    q_ok(
        mc,
        &["TOPN.CREATE", "plain", "BUCKET", "3600", "WINDOW", "48"],
    );
    incr(mc, "plain", "x", 1, start);
    wait_for_sync(&master, &replica);
    let ts = [start - 1, start, start + HOUR_MS - 1, start + HOUR_MS];
    let members: Vec<String> = ["early", "opening", "closing", "x"]
        .map(String::from)
        .to_vec();
    let expected = snap(mc, "k", &ts, &members, true);
    assert_eq!(
        snap(&mut replica.conn(), "k", &ts, &members, true),
        expected
    );
    // DUMP: version 2 only for the aligned key; the plain key keeps the first encoding.
    let payload = |c: &mut Conn, key: &str| -> Vec<u8> { q(c, &["DUMP", key]) };
    let (aligned, plain) = (payload(mc, "k"), payload(mc, "plain"));
    assert_ne!(aligned, plain);
    wait_for_bg_done(&master);
    let _: String = q(mc, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    master.restart();
    let mc = &mut master.conn();
    assert_eq!(
        snap(mc, "k", &ts, &members, true),
        expected,
        "after the AOF rewrite"
    );
    assert_eq!(payload(mc, "k"), aligned);
    master.restart_with_save();
    let mc = &mut master.conn();
    assert_eq!(
        snap(mc, "k", &ts, &members, true),
        expected,
        "after the RDB reload"
    );
    assert_eq!((payload(mc, "k"), payload(mc, "plain")), (aligned, plain));
}
