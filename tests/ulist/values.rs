//! Values and names: binary values never mix up, RESP3 rows are maps,
//! commands declare their key.
use super::*;

#[test]
fn binary_values_never_mix_up() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &["ULIST.CREATE", "b", "VALUE", "x", "y", "PARTITION", "p"],
    );
    let cases: [(&[u8], &[u8]); 6] = [
        (b"a:b", b"c"),
        (b"a", b"b:c"),
        (b"a\x00", b"b"),
        (b"a", b"\x00b"),
        (b"\xff", b""),
        (b"", b"\xff\x00"),
    ];
    for (x, y) in cases {
        let r: i64 = q_bin(c, &[b"ULIST.ADD", b"b", b"x", x, b"y", y, b"p", b"d:1\x00"]);
        assert_eq!(r, 1, "{x:?} {y:?}");
    }
    for (x, y) in cases {
        let r: i64 = q_bin(c, &[b"ULIST.ADD", b"b", b"y", y, b"x", x, b"p", b"other"]);
        assert_eq!(r, 0, "{x:?} {y:?} is already there");
        let has: i64 = q_bin(c, &[b"ULIST.HAS", b"b", b"x", x, b"y", y]);
        assert_eq!(has, 1);
    }
    let data = rows(c, &["ULIST.DATA", "b"]);
    let mut got: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = data
        .iter()
        .map(|r| (r[0].1.clone(), r[1].1.clone(), r[2].1.clone()))
        .collect();
    got.sort();
    let mut expected: Vec<_> = cases
        .iter()
        .map(|(x, y)| (x.to_vec(), y.to_vec(), b"d:1\x00".to_vec()))
        .collect();
    expected.sort();
    assert_eq!(got, expected);
    let filtered: Value = q_bin(c, &[b"ULIST.DATA", b"b", b"p", b"d:1"]);
    assert_eq!(
        rows_of(filtered).len(),
        0,
        "a prefix of a value is another value"
    );
}

#[test]
fn rows_are_maps_under_resp3() {
    let srv = Server::start();
    let c = &mut srv.conn_resp3();
    q_ok(c, &["ULIST.CREATE", "l", "VALUE", "v", "SCOPE", "s"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "s", "a"]);
    let data: Value = q(c, &["ULIST.DATA", "l"]);
    let Value::Array(rows) = data else {
        panic!("{data:?}")
    };
    assert!(
        matches!(&rows[0], Value::Map(m) if m.len() == 2),
        "{rows:?}"
    );
    let parts: Value = q(c, &["ULIST.PARTITIONS", "l"]);
    assert!(
        matches!(&parts, Value::Array(p) if matches!(p[0], Value::Map(_))),
        "{parts:?}"
    );
}

#[test]
fn keys_are_declared() {
    let srv = Server::start();
    assert_keys_declared(
        &mut srv.conn(),
        &[
            "ULIST.CREATE k1 VALUE v",
            "ULIST.ADD k1 v 1",
            "ULIST.HAS k1 v 1",
            "ULIST.DATA k1",
            "ULIST.PARTITIONS k1",
            "ULIST.DEL k1",
        ],
    );
}

/// Sliding expiry: `REFRESH` gives a live value the add's expiry, later or
/// earlier (the reply still 0); without it a re-add leaves the expiry. In the
/// compact and the hashed layouts; a replica follows.
#[test]
fn refresh_slides_a_live_values_expiry() {
    let master = Server::start();
    let replica = Server::start_replica_of(&master);
    let c = &mut master.conn();
    for compact_max in ["512", "0"] {
        let _: () = q(
            c,
            &["CONFIG", "SET", "recipes.ulist-compact-max", compact_max],
        );
        let key = format!("sess{compact_max}");
        q_ok(c, &["ULIST.CREATE", &key, "VALUE", "sid"]);
        let at = |ms_ago: i64| (now_ms() - ms_ago).to_string();
        let add = |c: &mut redis::Connection, ago: i64, expire: &str, refresh: bool| {
            let mut args = vec!["ULIST.ADD".to_string(), key.clone(), "AT".into(), at(ago)];
            args.extend(["EXPIRE".into(), expire.into()]);
            if refresh {
                args.push("REFRESH".into());
            }
            args.extend(["sid".into(), "s1".into()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            q::<i64>(c, &args)
        };
        let has = |c: &mut redis::Connection| q::<i64>(c, &["ULIST.HAS", &key, "sid", "s1"]);
        // Live for one more second.
        assert_eq!(add(c, 9_000, "10", false), 1);
        // A re-add without REFRESH leaves it; with it, 600 s from its AT.
        assert_eq!(add(c, 8_000, "1", false), 0);
        assert_eq!(has(c), 1, "a re-add without REFRESH shortened it");
        assert_eq!(add(c, 8_000, "600", true), 0);
        assert_eq!(has(c), 1);
        // Sliding back: expires 1 s after its AT, 7 s ago.
        assert_eq!(add(c, 8_000, "1", true), 0);
        assert_eq!(has(c), 0, "REFRESH to an earlier expiry");
        assert_eq!(add(c, 100, "600", false), 1, "expired, so new again");
    }
    wait_for_sync(&master, &replica);
    assert_same_data(c, &mut replica.conn());
}
