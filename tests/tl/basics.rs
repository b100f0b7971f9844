//! Basics and defaults; PXAT sets the exact expiry.
use super::*;
use std::time::Duration;

#[test]
fn basics_and_defaults() {
    let srv = Server::start();
    let mut c = srv.conn();

    // Missing key.
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "t"]), 0);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t"]),
        Vec::<String>::new()
    );
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "t", "a"]), 0);
    assert!(!exists(&mut c, "t"));

    // No default cap: 25 pushes keep all 25.
    for i in 0..25 {
        let n = q::<i64>(&mut c, &["TL.PUSH", "t", &format!("i{i}")]);
        assert_eq!(n, i + 1);
    }
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "t"]), 25);
    let ty: String = cmd(&["TYPE", "t"]).query(&mut c).unwrap();
    assert_eq!(ty, "list");
    // Newest first, default COUNT 10 OFFSET 0.
    let all: Vec<String> = (0..25).rev().map(|i| format!("i{i}")).collect();
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t"]),
        all[..10].to_vec()
    );
    assert_eq!(lrange(&mut c, "t"), all);
    // OFFSET only (COUNT defaults to 10).
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "OFFSET", "3"]),
        all[3..13].to_vec()
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "OFFSET", "20"]),
        all[20..].to_vec()
    );
    // COUNT only.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "COUNT", "3"]),
        all[..3].to_vec()
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "COUNT", "100"]),
        all.clone()
    );
    // Both, any order, case-insensitive.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["tl.range", "t", "count", "4", "offset", "2"]),
        all[2..6].to_vec()
    );
    // Edges.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "COUNT", "0"]),
        Vec::<String>::new()
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "OFFSET", "24", "COUNT", "5"]),
        s(&["i0"])
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "OFFSET", "25"]),
        Vec::<String>::new()
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "OFFSET", "1000"]),
        Vec::<String>::new()
    );
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            &[
                "TL.RANGE",
                "t",
                "OFFSET",
                "9223372036854775807",
                "COUNT",
                "9223372036854775807"
            ]
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            &[
                "TL.RANGE",
                "t",
                "OFFSET",
                "23",
                "COUNT",
                "9223372036854775807"
            ]
        ),
        s(&["i1", "i0"])
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "OFFSET", "0", "COUNT", "1"]),
        s(&["i24"])
    );

    // Duplicates and REM: newest first, default COUNT 1, COUNT 0 = all.
    q::<i64>(&mut c, &["DEL", "d"]);
    for it in ["a", "b", "a", "c", "a", "b", "a"] {
        q::<i64>(&mut c, &["TL.PUSH", "d", it]);
    }
    // list (head first): a b a c a b a
    assert_eq!(lrange(&mut c, "d"), s(&["a", "b", "a", "c", "a", "b", "a"]));
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "d", "a"]), 1);
    assert_eq!(lrange(&mut c, "d"), s(&["b", "a", "c", "a", "b", "a"]));
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "d", "a", "COUNT", "2"]), 2);
    assert_eq!(lrange(&mut c, "d"), s(&["b", "c", "b", "a"]));
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "d", "zz", "COUNT", "0"]), 0);
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "d", "b", "COUNT", "0"]), 2);
    assert_eq!(lrange(&mut c, "d"), s(&["c", "a"]));
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "d", "a", "COUNT", "5"]), 1);
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "d"]), 1);
    // Emptied -> key deleted.
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "d", "c"]), 1);
    assert!(!exists(&mut c, "d"));
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "d"]), 0);

    // MAXLEN 0 = no limit, even when a config default is set.
    q_ok(&mut c, &["CONFIG", "SET", "recipes.tl-default-maxlen", "3"]);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["CONFIG", "GET", "recipes.tl-default-maxlen"]),
        s(&["recipes.tl-default-maxlen", "3"])
    );
    for i in 0..6 {
        assert_eq!(
            q::<i64>(&mut c, &["TL.PUSH", "u", "x", "MAXLEN", "0"]),
            i + 1
        );
    }
    // Without MAXLEN the default applies.
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "v", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "v", "2"]), 2);
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "v", "3"]), 3);
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "v", "4"]), 3);
    assert_eq!(lrange(&mut c, "v"), s(&["4", "3", "2"]));
    // Explicit MAXLEN beats the default.
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "v", "5", "MAXLEN", "10"]), 4);
    // ... and an existing list longer than the default is cut on a default push.
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "u", "y"]), 3);
    assert_eq!(lrange(&mut c, "u"), s(&["y", "x", "x"]));
    q_ok(&mut c, &["CONFIG", "SET", "recipes.tl-default-maxlen", "0"]);
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "u", "z"]), 4);

    // TTL: absolute expiry now + s*1000; without TTL the expiry is untouched.
    let before = now_ms();
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "e", "a", "TTL", "100"]), 1);
    let after = now_ms();
    let at = q::<i64>(&mut c, &["PEXPIRETIME", "e"]);
    assert!(
        at >= before + 100_000 && at <= after + 100_000,
        "PEXPIRETIME {at} not in [{}, {}]",
        before + 100_000,
        after + 100_000
    );
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "e", "b"]), 2);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "e"]), at);
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "e", "b"]), 1);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "e"]), at);
    // A TTL refreshes (replaces) the expiry.
    q::<i64>(
        &mut c,
        &["PEXPIREAT", "e", &(now_ms() + 5_000_000).to_string()],
    );
    let before = now_ms();
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "e", "c", "TTL", "7"]), 2);
    let after = now_ms();
    let at = q::<i64>(&mut c, &["PEXPIRETIME", "e"]);
    assert!(
        at >= before + 7_000 && at <= after + 7_000,
        "PEXPIRETIME {at}"
    );
    // No TTL on a key without expiry: stays persistent.
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "v"]), -1);
    // TTL with trimming at once.
    assert_eq!(
        q::<i64>(
            &mut c,
            &["TL.PUSH", "v", "6", "MAXLEN", "2", "TTL", "1000000000"]
        ),
        2
    );
    assert_eq!(lrange(&mut c, "v"), s(&["6", "5"]));
    assert!(q::<i64>(&mut c, &["PEXPIRETIME", "v"]) > now_ms() + 999_000_000 * 1000);
    // A TTL that is very short really expires the key.
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "short", "a", "TTL", "1"]), 1);
    assert!(
        wait_until(Duration::from_secs(5), || !exists(&mut c, "short")),
        "key with TTL 1 did not expire"
    );
}

#[test]
fn pxat_sets_exact_expiry() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let at = common::now_ms() + 3_600_000;
    assert_eq!(
        q::<i64>(c, &["TL.PUSH", "t", "a", "PXAT", &at.to_string()]),
        1
    );
    assert_eq!(q::<i64>(c, &["PEXPIRETIME", "t"]), at);
    let err = expect_err(c, &cmd(&["TL.PUSH", "t", "b", "TTL", "5", "PXAT", "99"]));
    assert!(err.starts_with("ERR") && err.contains("PXAT"), "{err}");
    assert_eq!(lrange(c, "t"), s(&["a"]));
    // An expiry already past: the list is gone.
    assert_eq!(q::<i64>(c, &["TL.PUSH", "t", "b", "PXAT", "1000"]), 0);
    assert!(!exists(c, "t"));
}
