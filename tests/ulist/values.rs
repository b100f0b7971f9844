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
