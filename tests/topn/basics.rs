//! Basics: ties, zero and negative counts, late events, reads AT a time;
//! defaults, configs and TOP24; the blog's phone-lookup scenario.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn basics_ties_zero_negative_late_and_reads_at() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "3"]);
    let i = info(c, "k");
    assert_eq!(i["bucket"], 60);
    assert_eq!(i["window"], 3);
    assert_eq!(i["members"], 0);
    assert_eq!(i["buckets"], 0);
    assert!(i["memory"] > 0, "{i:?}");
    assert_eq!(
        pexpiretime(c, "k"),
        -1,
        "a created key without writes has no expiry"
    );
    assert_eq!(q::<String>(c, &["TYPE", "k"]), "recipesTN");
    assert_eq!(top_ws(c, "TOPN.TOP", "k", 10, None), rows(&[]));

    let bm = 60_000;
    let b = now_ms() / bm; // current bucket
    let base = b * bm;
    assert_eq!(incr(c, "k", "a", 1, base), 1);
    assert_eq!(incr(c, "k", "a", 1, base + 1), 2);
    assert_eq!(incr(c, "k", "b", 2, base + 59_999), 2);
    assert_eq!(incr(c, "k", "c", 2, base), 2);
    assert_eq!(pexpiretime(c, "k"), (b + 3) * bm);
    assert_eq!(incr(c, "k", "d", 5, base + bm), 5);
    assert_eq!(pexpiretime(c, "k"), (b + 1 + 3) * bm);
    assert_eq!(incr(c, "k", "a", 1, base + bm), 3);
    assert_eq!(incr(c, "k", "n", -4, base + bm), -4);
    let clock_t = base + bm + 30_000;
    // highest first, ties by member ascending, negatives after positives
    assert_eq!(
        top(c, "k", 10, clock_t),
        rows(&[("d", 5), ("a", 3), ("b", 2), ("c", 2), ("n", -4)])
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "k", "2", "AT", &clock_t.to_string()]),
        ["d", "a"]
    );
    assert_eq!(
        top(c, "k", 4, clock_t),
        rows(&[("d", 5), ("a", 3), ("b", 2), ("c", 2)])
    );
    assert_eq!(
        top(c, "k", 3, clock_t),
        rows(&[("d", 5), ("a", 3), ("b", 2)])
    );
    assert_eq!(top(c, "k", 0, clock_t), rows(&[]));
    // options in any order, lower case
    let v: Vec<Value> = q(
        c,
        &[
            "topn.top",
            "k",
            "3",
            "withcounts",
            "at",
            &clock_t.to_string(),
        ],
    );
    assert_eq!(pairs(v), rows(&[("d", 5), ("a", 3), ("b", 2)]));
    assert_eq!(
        count(c, "k", &["a", "b", "d", "n", "nobody"], Some(clock_t)),
        [3, 2, 5, -4, 0]
    );

    // Reads at AT before the clock: window [b-2, b] cut to the live window [b-1, b+1].
    assert_eq!(
        top(c, "k", 10, base + 5),
        rows(&[("a", 2), ("b", 2), ("c", 2)])
    );
    assert_eq!(count(c, "k", &["a", "d"], Some(base)), [2, 0]);
    // Window ending before the live window: nothing.
    assert_eq!(top(c, "k", 10, base - 2 * bm), rows(&[]));
    // Later reads with no writes: AT b+2 still covers [b, b+2].
    assert_eq!(
        top(c, "k", 10, base + 2 * bm),
        top(c, "k", 10, clock_t),
        "window ending at b+2 holds b..b+2 = everything"
    );
    // AT b+3: [b+1, b+3] -> bucket b+1 only.
    assert_eq!(
        top(c, "k", 10, base + 3 * bm),
        rows(&[("d", 5), ("a", 1), ("n", -4)])
    );
    assert_eq!(count(c, "k", &["a", "b"], Some(base + 3 * bm + 1)), [1, 0]);
    // Far future: empty.
    assert_eq!(top(c, "k", 10, base + 4 * bm), rows(&[]));
    assert_eq!(top(c, "k", 10, base + 1000 * bm), rows(&[]));
    assert_eq!(count(c, "k", &["a", "d"], Some(base + 4 * bm)), [0, 0]);

    // Late events: clock b+1, live [b-1, b+1]. b-2 is ignored, reply = current count.
    let before = top(c, "k", 10, clock_t);
    let exp_before = pexpiretime(c, "k");
    assert_eq!(incr(c, "k", "a", 100, base - 2 * bm), 3);
    assert_eq!(incr(c, "k", "zz", 100, base - 2 * bm + 59_999), 0);
    assert_eq!(top(c, "k", 10, clock_t), before);
    assert_eq!(pexpiretime(c, "k"), exp_before);
    // b-1 is still live: accepted, and the reply is the count at the clock.
    assert_eq!(incr(c, "k", "a", 10, base - bm), 13);
    assert_eq!(incr(c, "k", "b", 1, base), 3);
    assert_eq!(
        pexpiretime(c, "k"),
        exp_before,
        "older writes keep the expiry"
    );
    assert_eq!(count(c, "k", &["a", "b"], Some(clock_t)), [13, 3]);
    assert_eq!(count(c, "k", &["a", "b"], Some(base - bm)), [10, 0]);
    assert_eq!(count(c, "k", &["a"], Some(base + 3 * bm)), [1]);
    let i = info(c, "k");
    assert_eq!(i["buckets"], 3);
    assert_eq!(i["members"], 5, "a b c d n: {i:?}");

    // Zero counts are hidden; BY 0 stores nothing.
    q_ok(c, &["TOPN.CREATE", "z", "BUCKET", "60", "WINDOW", "3"]);
    assert_eq!(incr(c, "z", "e", 1, base), 1);
    assert_eq!(incr(c, "z", "e", -1, base), 0);
    assert_eq!(incr(c, "z", "f", 0, base), 0);
    assert_eq!(incr(c, "z", "g", 2, base), 2);
    assert_eq!(incr(c, "z", "h", 3, base + bm), 3);
    assert_eq!(
        incr(c, "z", "h", -3, base),
        0,
        "bucket b: h -3; window b..b+1: 0"
    );
    assert_eq!(top(c, "z", 10, base + bm), rows(&[("g", 2)]));
    assert_eq!(top(c, "z", 10, base), rows(&[("g", 2), ("h", -3)]));
    assert_eq!(
        count(c, "z", &["e", "f", "g", "h"], Some(base + bm)),
        [0, 0, 2, 0]
    );
    assert_eq!(
        count(c, "z", &["e", "f", "g", "h"], Some(base)),
        [0, 0, 2, -3]
    );
    assert_eq!(top(c, "z", 10, base + 2 * bm), rows(&[("g", 2)]));
    assert_eq!(top(c, "z", 10, base + 3 * bm), rows(&[("h", 3)]));

    // Overflow is rejected and changes nothing.
    q_ok(c, &["TOPN.CREATE", "o", "BUCKET", "60", "WINDOW", "3"]);
    let max = i64::MAX.to_string();
    assert_eq!(
        q::<i64>(
            c,
            &["TOPN.INCR", "o", "m", "BY", &max, "AT", &base.to_string()]
        ),
        i64::MAX
    );
    let exp_o = pexpiretime(c, "o");
    for (by, at) in [(1, base), (1, base + bm), (5, base + 30)] {
        let e = expect_err(
            c,
            &cmd(&[
                "TOPN.INCR",
                "o",
                "m",
                "BY",
                &by.to_string(),
                "AT",
                &at.to_string(),
            ]),
        );
        // Worded as INCRBY's (and HCOUNTER.INCRBY's).
        assert_eq!(e, "ERR increment or decrement would overflow");
    }
    assert_eq!(
        pexpiretime(c, "o"),
        exp_o,
        "failed INCR in a later bucket moved the clock"
    );
    assert_eq!(top(c, "o", 10, base), rows(&[("m", i64::MAX)]));
    assert_eq!(count(c, "o", &["m"], Some(base + bm)), [i64::MAX]);
    // Another member is independent; a negative in a later bucket then a positive is fine.
    assert_eq!(incr(c, "o", "m", -1, base + bm), i64::MAX - 1);
    assert_eq!(incr(c, "o", "m", 1, base + bm), i64::MAX);
    let e = expect_err(
        c,
        &cmd(&["TOPN.INCR", "o", "m", "AT", &(base + bm).to_string()]),
    );
    assert_eq!(e, "ERR increment or decrement would overflow");
    let min = i64::MIN.to_string();
    assert_eq!(
        q::<i64>(
            c,
            &["TOPN.INCR", "o", "low", "BY", &min, "AT", &base.to_string()]
        ),
        i64::MIN
    );
    let e = expect_err(
        c,
        &cmd(&["TOPN.INCR", "o", "low", "BY", "-1", "AT", &base.to_string()]),
    );
    assert_eq!(e, "ERR increment or decrement would overflow");
    assert_eq!(
        top(c, "o", 10, base + bm),
        rows(&[("m", i64::MAX), ("low", i64::MIN)])
    );
}

#[test]
fn defaults_configs_and_top24() {
    let srv = Server::builder().module_args(AHEAD_OF_THE_CLOCK).start();
    let c = &mut srv.conn();
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-bucket"]),
        ["recipes.topn-default-bucket", "3600"]
    );
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-window"]),
        ["recipes.topn-default-window", "24"]
    );
    avoid_boundary(HOUR_MS, 5_000);
    // Default key, server time.
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "x"]), 1);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "x"]), 2);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "y", "BY", "7"]), 7);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d", "w", "BY", "2"]), 2);
    let i = info(c, "d");
    assert_eq!(
        (i["bucket"], i["window"], i["members"], i["buckets"]),
        (3600, 24, 3, 1)
    );
    let h = now_ms() / HOUR_MS;
    assert_eq!(pexpiretime(c, "d"), (h + 24) * HOUR_MS);
    assert_eq!(q::<Vec<String>>(c, &["TOPN.TOP", "d"]), ["y", "w", "x"]);
    assert_eq!(
        top_ws(c, "TOPN.TOP", "d", 10, None),
        rows(&[("y", 7), ("w", 2), ("x", 2)])
    );
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "d", 10, None),
        rows(&[("y", 7), ("w", 2), ("x", 2)])
    );
    assert_eq!(q::<Vec<String>>(c, &["TOPN.TOP24", "d", "1"]), ["y"]);
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "d", "x", "y", "none"]),
        [2, 7, 0]
    );
    // TOP24 on a default key equals TOP at several times.
    let base = h * HOUR_MS;
    for k in 1..30 {
        incr(c, "d", &format!("m{}", k % 7), k, base + k * HOUR_MS);
    }
    for t in [
        base,
        base + 5 * HOUR_MS,
        base + 23 * HOUR_MS,
        base + 29 * HOUR_MS + 1,
        base + 40 * HOUR_MS,
    ] {
        let a = top_ws(c, "TOPN.TOP", "d", 100, Some(t));
        assert_eq!(a, top_ws(c, "TOPN.TOP24", "d", 100, Some(t)), "t={t}");
    }

    // Runtime config changes apply to keys created afterwards.
    q_ok(c, &["CONFIG", "SET", "recipes.topn-default-bucket", "60"]);
    q_ok(c, &["CONFIG", "SET", "recipes.topn-default-window", "7"]);
    assert_eq!(q::<i64>(c, &["TOPN.INCR", "d2", "x"]), 1);
    q_ok(c, &["TOPN.CREATE", "d3"]);
    q_ok(c, &["TOPN.CREATE", "d4", "WINDOW", "2"]);
    for (k, b, w) in [("d2", 60, 7), ("d3", 60, 7), ("d4", 60, 2), ("d", 3600, 24)] {
        let i = info(c, k);
        assert_eq!((i["bucket"], i["window"]), (b, w), "{k}");
    }
    for bad in [
        ["recipes.topn-default-bucket", "0"],
        ["recipes.topn-default-bucket", "31536001"],
        ["recipes.topn-default-window", "0"],
        ["recipes.topn-default-window", "100001"],
        ["recipes.topn-default-window", "x"],
    ] {
        expect_err(c, &cmd(&["CONFIG", "SET", bad[0], bad[1]]));
    }
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-window"]),
        ["recipes.topn-default-window", "7"]
    );

    // TOP24 needs 24 h in whole buckets within the window.
    let now = now_ms();
    q_ok(c, &["TOPN.CREATE", "b7", "BUCKET", "7", "WINDOW", "100000"]);
    incr(c, "b7", "m", 1, now);
    let e = expect_err(c, &cmd(&["TOPN.TOP24", "b7"]));
    assert!(e.starts_with("ERR") && e.contains("24"), "{e}");
    q_ok(c, &["TOPN.CREATE", "w23", "BUCKET", "3600", "WINDOW", "23"]);
    incr(c, "w23", "m", 1, now);
    let e = expect_err(c, &cmd(&["TOPN.TOP24", "w23", "5", "WITHCOUNTS"]));
    assert!(e.starts_with("ERR") && e.contains("24"), "{e}");
    // TOP still works on them.
    assert_eq!(q::<Vec<String>>(c, &["TOPN.TOP", "w23"]), ["m"]);
    // A longer window: TOP24 covers only the last 24 h of it.
    q_ok(
        c,
        &["TOPN.CREATE", "long", "BUCKET", "60", "WINDOW", "2000"],
    );
    let b = now / 60_000 * 60_000;
    incr(c, "long", "old", 10, b);
    incr(c, "long", "new", 1, b + 1500 * 60_000);
    let t = b + 1500 * 60_000;
    assert_eq!(top(c, "long", 10, t), rows(&[("old", 10), ("new", 1)]));
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "long", 10, Some(t)),
        rows(&[("new", 1)])
    );
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "long", 10, Some(b + 1439 * 60_000)),
        rows(&[("old", 10)])
    );
    assert_eq!(
        top_ws(c, "TOPN.TOP24", "long", 10, Some(b + 1440 * 60_000)),
        rows(&[])
    );
    // TOP24 on a missing key: empty.
    assert_eq!(top_ws(c, "TOPN.TOP24", "missing", 10, None), rows(&[]));
}

#[test]
fn module_args_set_defaults() {
    let srv = Server::builder()
        .module_args(&["topn-default-bucket", "60", "topn-default-window", "5"])
        .start();
    let c = &mut srv.conn();
    assert_eq!(
        q::<Vec<String>>(c, &["CONFIG", "GET", "recipes.topn-default-bucket"]),
        ["recipes.topn-default-bucket", "60"]
    );
    let b = now_ms() / 60_000;
    assert_eq!(incr(c, "k", "m", 3, b * 60_000), 3);
    let i = info(c, "k");
    assert_eq!((i["bucket"], i["window"]), (60, 5));
    assert_eq!(pexpiretime(c, "k"), (b + 5) * 60_000);
    // The trailing 24 h are not whole buckets of a 5-bucket window.
    let e = expect_err(c, &cmd(&["TOPN.TOP24", "k"]));
    assert!(e.contains("24"), "{e}");
}

#[test]
fn blog_scenario_phone_lookups() {
    // "Most looked-up phone numbers of the last 24 hours", hourly buckets.
    let srv = Server::builder().module_args(AHEAD_OF_THE_CLOCK).start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 17);
    let mut rng = StdRng::seed_from_u64(seed);
    q_ok(
        c,
        &["TOPN.CREATE", "lookups", "BUCKET", "3600", "WINDOW", "24"],
    );
    let mut model = Model::new(3600, 24);
    let numbers: Vec<String> = (0..200).map(|i| format!("+1-555-01{i:03}")).collect();
    let h0 = now_ms() / HOUR_MS;
    for h in 0..30 {
        let mut p = redis::pipe();
        let mut want = vec![];
        for _ in 0..300 {
            let x: f64 = rng.gen();
            let num = if h < 6 && rng.gen_bool(0.5) {
                // very popular during the first 6 hours only
                "+1-555-0999".to_string()
            } else {
                numbers[(x * x * 200.0) as usize].clone()
            };
            let at = (h0 + h) * HOUR_MS + rng.gen_range(0..HOUR_MS);
            p.cmd("TOPN.INCR")
                .arg("lookups")
                .arg(&num)
                .arg("AT")
                .arg(at);
            want.push(model.incr(&num, 1, at).unwrap());
        }
        let got: Vec<i64> = p.query(c).unwrap();
        assert_eq!(got, want, "hour {h}");
    }
    let t = (h0 + 29) * HOUR_MS + 1_800_000;
    let want = model.top(10, t);
    assert_eq!(want.len(), 10);
    assert_eq!(top_ws(c, "TOPN.TOP24", "lookups", 10, Some(t)), want);
    assert_eq!(top_ws(c, "TOPN.TOP", "lookups", 10, Some(t)), want);
    let names: Vec<String> = q(c, &["TOPN.TOP24", "lookups", "AT", &t.to_string()]);
    assert_eq!(names, want.iter().map(|r| r.0.clone()).collect::<Vec<_>>());
    assert!(
        !names.contains(&"+1-555-0999".to_string()),
        "a number popular only 24+ hours ago is out"
    );
    assert_eq!(count(c, "lookups", &["+1-555-0999"], Some(t)), [0]);
    // The early hours were all in the window at hour 23.
    let t23 = (h0 + 23) * HOUR_MS;
    assert_eq!(
        count(c, "lookups", &["+1-555-0999"], Some(t23)),
        [0],
        "hour 0..5 left the live window"
    );
    let i = info(c, "lookups");
    assert_eq!(i["buckets"], 24);
}
