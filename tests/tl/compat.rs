//! TL works on the recipe's lists (and the recipe on TL's); a replica with
//! another default MAXLEN ends equal.
use super::*;
use crate::common::families::tl::mixed_workload;
use rand::rngs::StdRng;
use rand::SeedableRng;

#[test]
fn recipe_compatibility() {
    let srv = Server::start();
    let mut c = srv.conn();
    // A list built with the plain recipe.
    for i in 0..8 {
        q::<i64>(&mut c, &["LPUSH", "r", &format!("x{i}")]);
    }
    q_ok(&mut c, &["LTRIM", "r", "0", "5"]);
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "r"]), 6);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "r", "COUNT", "3"]),
        s(&["x7", "x6", "x5"])
    );
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "r", "x5"]), 1);
    assert_eq!(q::<i64>(&mut c, &["TL.PUSH", "r", "x8", "MAXLEN", "4"]), 4);
    assert_eq!(lrange(&mut c, "r"), s(&["x8", "x7", "x6", "x4"]));

    // TL data read with LRANGE / LINDEX / LLEN equals TL.RANGE.
    for i in 0..30 {
        q::<i64>(
            &mut c,
            &[
                "TL.PUSH",
                "t",
                &format!("v{}", i % 7),
                "MAXLEN",
                "20",
                "SLACK",
                "4",
            ],
        );
    }
    let tl = q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "COUNT", "1000"]);
    assert_eq!(lrange(&mut c, "t"), tl);
    assert_eq!(q::<i64>(&mut c, &["LLEN", "t"]), tl.len() as i64);
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "t"]), tl.len() as i64);
    for (off, cnt) in [(0, 5), (3, 7), (10, 100), (19, 1)] {
        let lr = q::<Vec<String>>(
            &mut c,
            &[
                "LRANGE",
                "t",
                &off.to_string(),
                &(off + cnt - 1).to_string(),
            ],
        );
        let tr = q::<Vec<String>>(
            &mut c,
            &[
                "TL.RANGE",
                "t",
                "OFFSET",
                &off.to_string(),
                "COUNT",
                &cnt.to_string(),
            ],
        );
        assert_eq!(lr, tr, "offset {off} count {cnt}");
    }
    let first: Vec<String> = q::<Vec<String>>(&mut c, &["LINDEX", "t", "0"]);
    assert_eq!(first, s(&["v1"])); // 29 % 7
                                   // TL.REM behaves like LREM key count item (head first).
    q::<i64>(&mut c, &["COPY", "t", "t2"]);
    assert_eq!(
        q::<i64>(&mut c, &["TL.REM", "t", "v3", "COUNT", "2"]),
        q::<i64>(&mut c, &["LREM", "t2", "2", "v3"])
    );
    assert_eq!(lrange(&mut c, "t"), lrange(&mut c, "t2"));
    assert_eq!(
        q::<i64>(&mut c, &["TL.REM", "t", "v4", "COUNT", "0"]),
        q::<i64>(&mut c, &["LREM", "t2", "0", "v4"])
    );
    assert_eq!(lrange(&mut c, "t"), lrange(&mut c, "t2"));
    // Plain RPUSH onto TL data, then TL.* again.
    q::<i64>(&mut c, &["RPUSH", "t", "tail"]);
    let tl = q::<Vec<String>>(&mut c, &["TL.RANGE", "t", "COUNT", "1000"]);
    assert_eq!(tl.last().unwrap(), "tail");
    assert_eq!(lrange(&mut c, "t"), tl);
}

#[test]
fn replication_with_different_default_maxlen() {
    let master = Server::builder()
        .module_args(&["tl-default-maxlen", "3"])
        .start();
    let port = master.port.to_string();
    let replica = Server::builder()
        .module_args(&["tl-default-maxlen", "50"])
        .args(&["--replicaof", "127.0.0.1", &port])
        .start();
    let mut mc = master.conn();
    let mut rc = replica.conn();
    assert_eq!(
        q::<Vec<String>>(&mut rc, &["CONFIG", "GET", "recipes.tl-default-maxlen"]),
        s(&["recipes.tl-default-maxlen", "50"])
    );
    wait_for_sync(&master, &replica);

    let seed = seed_from_env("TL_SEED", 0);
    let mut rng = StdRng::seed_from_u64(seed);
    // A key pushed only with the default: master caps at 3.
    for i in 0..10 {
        q::<i64>(&mut mc, &["TL.PUSH", "dflt", &i.to_string()]);
    }
    mixed_workload(&mut mc, "", &mut rng, 600);
    q_ok(
        &mut mc,
        &["CONFIG", "SET", "recipes.tl-default-maxlen", "0"],
    );
    mixed_workload(&mut mc, "", &mut rng, 300);
    // A trim of many items at once.
    for i in 0..40 {
        q::<i64>(&mut mc, &["LPUSH", "many", &i.to_string()]);
    }
    q::<i64>(
        &mut mc,
        &["TL.PUSH", "many", "last", "MAXLEN", "5", "TTL", "5000"],
    );
    // REM that empties a key.
    q::<i64>(&mut mc, &["TL.PUSH", "gone", "z"]);
    q::<i64>(&mut mc, &["TL.REM", "gone", "z"]);

    wait_for_sync(&master, &replica);
    assert_eq!(q::<i64>(&mut rc, &["LLEN", "dflt"]), 3);
    assert_eq!(lrange(&mut rc, "dflt"), s(&["9", "8", "7"]));
    assert_eq!(q::<i64>(&mut rc, &["LLEN", "many"]), 5);
    assert!(q::<i64>(&mut rc, &["PEXPIRETIME", "many"]) > 0);
    assert!(!exists(&mut rc, "gone"));
    assert_same_data(&mut mc, &mut rc);
}
