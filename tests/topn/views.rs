//! VIEWS: windows of the newest buckets whose totals a key keeps running. Errors, the
//! declaration (compared as a set), INFO, and reads against the model through bucket
//! boundaries, late events, a replica, an AOF rewrite and an RDB reload.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn create(c: &mut Conn, key: &str, args: &[&str]) -> Result<(), String> {
    let mut k = redis::cmd("TOPN.CREATE");
    k.arg(key).arg(args);
    k.query::<Value>(c).map(|_| ()).map_err(|e| err_text(&e))
}

#[test]
fn bad_views_are_refused_and_create_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    for (args, wanted) in [
        (
            &["WINDOW", "24", "VIEWS", "1"][..],
            "VIEWS must be integers between 2 and the key's WINDOW - 1 (23), got 1",
        ),
        (
            &["WINDOW", "24", "VIEWS", "24"],
            "between 2 and the key's WINDOW - 1 (23), got 24",
        ),
        (&["VIEWS", "30"], "(23), got 30"), // the default window, 24
        (
            &["WINDOW", "2", "VIEWS", "2"],
            "VIEWS needs a WINDOW of at least 3 (the key's WINDOW is 2)",
        ),
        (&["VIEWS", "6", "12", "6"], "VIEWS names 6 twice"),
        (
            &["VIEWS", "2", "3", "4", "5", "6", "7", "8", "9", "10"],
            "at most 8",
        ),
        (&["VIEWS"], "VIEWS needs a value"),
        (&["VIEWS", "BUCKET", "60"], "VIEWS needs a value"),
        (
            &["VIEWS", "x"],
            "VIEWS must be integers between 2 and the key's WINDOW - 1, got 'x'",
        ),
        (&["VIEWS", "6", "VIEWS", "12"], "VIEWS given more than once"),
        (
            &["CAPACITY", "100", "VIEWS", "6"],
            "VIEWS does not apply to a key with CAPACITY",
        ),
    ] {
        let e = create(c, "k", args).unwrap_err();
        assert!(e.contains(wanted), "{args:?}: {e}");
        assert!(!exists(c, "k"), "{args:?} created the key");
    }
}

#[test]
fn views_are_part_of_the_declaration() {
    let srv = Server::start();
    let c = &mut srv.conn();
    create(
        c,
        "k",
        &["BUCKET", "60", "VIEWS", "12", "6", "WINDOW", "24"],
    )
    .unwrap();
    // The same set in any order: OK, nothing changes.
    create(
        c,
        "k",
        &["WINDOW", "24", "VIEWS", "6", "12", "BUCKET", "60"],
    )
    .unwrap();
    for (args, asked) in [
        (
            &["BUCKET", "60", "WINDOW", "24", "VIEWS", "6"][..],
            "(asked: BUCKET 60 WINDOW 24 ALIGN 0 VIEWS 6)",
        ),
        (
            &["BUCKET", "60", "WINDOW", "24"],
            "(asked: BUCKET 60 WINDOW 24 ALIGN 0)",
        ),
    ] {
        let e = create(c, "k", args).unwrap_err();
        assert!(
            e.contains("another shape: BUCKET 60 WINDOW 24 ALIGN 0 VIEWS 6 12")
                && e.contains(asked),
            "{args:?}: {e}"
        );
    }
    create(c, "plain", &["BUCKET", "60"]).unwrap();
    let e = create(c, "plain", &["BUCKET", "60", "VIEWS", "2"]).unwrap_err();
    assert!(
        e.contains("ALIGN 0 (asked: BUCKET 60 WINDOW 24 ALIGN 0 VIEWS 2)"),
        "{e}"
    );
    // INFO: the views and each one's memory (0 while the key is compact: implicit).
    let i = info(c, "k");
    assert_eq!(
        (i["views"], i["view-6-memory"], i["view-12-memory"]),
        (2, 0, 0)
    );
    assert!(!info(c, "plain").contains_key("views"));
}

#[test]
fn info_shows_each_views_memory_on_a_full_key() {
    let srv = Server::builder()
        .config("recipes.topn-compact-max", "0")
        .start();
    let c = &mut srv.conn();
    create(c, "k", &["BUCKET", "60", "WINDOW", "24", "VIEWS", "2", "6"]).unwrap();
    let now = now_ms();
    for m in 0..200 {
        incr(c, "k", &format!("m{m}"), m + 1, now);
    }
    let i = info(c, "k");
    assert_eq!(i["views"], 2);
    // Each view keeps an index key and a total per member.
    assert!(i["view-2-memory"] >= 200 * 16, "{i:?}");
    assert!(
        i["memory"] > i["view-2-memory"] + i["view-6-memory"],
        "{i:?}"
    );
    assert_eq!(
        top_last(c, "k", 2, Some(now), 2),
        rows(&[("m199", 200), ("m198", 199)])
    );
}

/// Every read of `LAST k` (each k, views or not) and the whole window, at the given times.
fn reads(
    c: &mut Conn,
    key: &str,
    window: i64,
    ts: &[i64],
    members: &[&str],
) -> Vec<(Rows, Vec<i64>)> {
    let mut out = Vec::new();
    for &t in ts {
        for k in 1..=window {
            out.push((
                top_last(c, key, 30, Some(t), k),
                count_last(c, key, members, Some(t), Some(k)),
            ));
        }
    }
    out
}

/// Writes at the server's time (some late, inside the window) into a full key with views
/// (compact-max 0), across one-second bucket boundaries. Every read agrees with the model, on the master, its replica, after an
/// AOF rewrite and after an RDB reload.
#[test]
fn views_read_as_the_model_on_replicas_and_reloads() {
    let seed = seed_from_env("TOPN_SEED", 37);
    let mut rng = StdRng::seed_from_u64(seed);
    let (window, views) = (8, ["2", "5"]);
    let mut master = Server::builder()
        .config("appendonly", "yes")
        .config("recipes.topn-compact-max", "0")
        .start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let mc = &mut master.conn();
    create(
        mc,
        "k",
        &["BUCKET", "1", "WINDOW", "8", "VIEWS", views[0], views[1]],
    )
    .unwrap();
    let mut model = Model::new(1, window);
    let names: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
    let members: Vec<&str> = names.iter().map(String::as_str).collect();
    let start = now_ms();
    let mut ts = Vec::new();
    while now_ms() < start + 3_500 {
        let now = now_ms();
        for _ in 0..20 {
            let at = match rng.gen_range(0..6) {
                0 => now - rng.gen_range(0..(window - 2) * 1000), // late, inside the window
                _ => now,
            };
            let m = members[rng.gen_range(0..members.len())];
            let by = rng.gen_range(1..30);
            assert_eq!(
                Some(incr(mc, "k", m, by, at)),
                model.incr(m, by, at),
                "seed {seed}"
            );
        }
        let t = now_ms();
        for k in 1..=window {
            assert_eq!(
                top_last(mc, "k", 30, Some(t), k),
                model.top_in(30, t, k),
                "seed {seed} LAST {k}"
            );
            let want: Vec<i64> = members.iter().map(|m| model.count_in(m, t, k)).collect();
            assert_eq!(
                count_last(mc, "k", &members, Some(t), Some(k)),
                want,
                "seed {seed} LAST {k}"
            );
        }
        ts.push(t);
        std::thread::sleep(Duration::from_millis(rng.gen_range(20..120)));
    }
    let ts: Vec<i64> = ts.iter().rev().step_by(5).copied().collect();
    let expected = reads(mc, "k", window, &ts, &members);
    wait_for_sync(&master, &replica);
    assert_eq!(
        reads(&mut replica.conn(), "k", window, &ts, &members),
        expected,
        "replica"
    );
    let dump: Vec<u8> = q(mc, &["DUMP", "k"]);
    assert_eq!(
        q::<Vec<u8>>(&mut replica.conn(), &["DUMP", "k"]),
        dump,
        "replica's DUMP"
    );
    wait_for_bg_done(&master);
    let _: String = q(mc, &["BGREWRITEAOF"]);
    wait_for_bg_done(&master);
    master.restart();
    let mc = &mut master.conn();
    assert_eq!(
        reads(mc, "k", window, &ts, &members),
        expected,
        "after the AOF rewrite"
    );
    // The rewrite's CREATE carried the views: the declaration is the same.
    create(mc, "k", &["BUCKET", "1", "WINDOW", "8", "VIEWS", "5", "2"]).unwrap();
    master.restart_with_save();
    let mc = &mut master.conn();
    assert_eq!(
        reads(mc, "k", window, &ts, &members),
        expected,
        "after the RDB reload"
    );
    assert_eq!(info(mc, "k")["views"], 2);
    // RESTORE of the payload: the same reads.
    let _: Value = redis::cmd("RESTORE")
        .arg("copy")
        .arg(0)
        .arg(&dump)
        .query(mc)
        .unwrap();
    assert_eq!(
        reads(mc, "copy", window, &ts, &members),
        expected,
        "RESTORE"
    );
}
