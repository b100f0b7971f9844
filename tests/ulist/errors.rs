//! Every error names its argument and changes nothing.
use super::*;

/// (command line, the error it must reply), as [`assert_refusals`] runs them
/// on the keys of [`errors_name_the_argument_and_change_nothing`].
#[rustfmt::skip]
const REFUSALS: &[(&str, &str)] = &[
    ("ULIST.CREATE l VALUE x", "ERR the list exists with another declaration: VALUE * (asked: VALUE x)"),
    ("ULIST.CREATE str VALUE x", "WRONGTYPE*"),
    ("ULIST.CREATE n VALUE at", "ERR 'at' is a keyword (AT of *) and cannot be a name"),
    ("ULIST.CREATE n VALUE session_id TTL 600", "ERR 'TTL' is a keyword (TTL of HCOUNTER.CREATE, RV.ADD, TL.PUSH) and cannot be a name"),
    ("ULIST.CREATE n VALUE a FOO b WINDOW c", "ERR 'WINDOW' is a keyword (WINDOW of TOPN.CREATE) and cannot be a name"),
    ("ULIST.CREATE n VALUE v SCOPE Never", "ERR *keyword (NEVER of ULIST.ADD)*"),
    ("ULIST.CREATE n VALUE v v", "ERR name 'v' declared more than once*"),
    ("ULIST.CREATE n VALUE v PARTITION v", "ERR *declared more than once*"),
    ("ULIST.CREATE n SCOPE s", "ERR VALUE needs at least one name*"),
    ("ULIST.CREATE n VALUE expire SCOPE CURSOR", "ERR VALUE needs at least one name ('expire' is a keyword of this command, not a name)"),
    ("ULIST.CREATE n VALUE v EXPIRE 0", "ERR *EXPIRE must be an integer*"),
    ("ULIST.CREATE n VALUE v EXPIRE x", "ERR *EXPIRE must be an integer*"),
    ("ULIST.CREATE n junk VALUE v", "ERR unexpected argument 'junk'*"),
    ("ULIST.ADD n v 1", "ERR no such list; create it with ULIST.CREATE*"),
    ("ULIST.ADD l v 1 s a", "ERR missing name 'p'*"),
    ("ULIST.ADD l v 1 s a p x q 1", "ERR unknown name 'q'*"),
    ("ULIST.ADD l v 1 s a p x v 2", "ERR name 'v' given more than once*"),
    ("ULIST.ADD l v 1 s a p", "ERR name 'p' needs a value*"),
    ("ULIST.ADD l v 1 s a p x EXPIRE 5 NEVER", "ERR *cannot be used together*"),
    ("ULIST.ADD l v 1 s a p x EXPIRE -5", "ERR *EXPIRE must be*"),
    ("ULIST.ADD l v 1 s a p x AT nan", "ERR *AT must be*"),
    ("ULIST.ADD l v 1 s a p x AT 1 AT 2", "ERR *AT given more than once*"),
    ("ULIST.ADD l v 1 s a p x PXAT 0", "ERR *PXAT must be*"),
    ("ULIST.HAS l v 1", "ERR missing name 's'*"),
    ("ULIST.HAS l v 1 s a p x AT 1", "ERR unknown name 'AT'*"),
    ("ULIST.HAS l v 1 s a q x", "ERR unknown name 'q'*"),
    ("ULIST.DATA l v 1", "ERR name 'v' does not belong here*"),
    ("ULIST.DATA l zzz 1", "ERR unknown name 'zzz'*"),
    ("ULIST.PARTITIONS l s", "ERR name 's' needs a value*"),
    ("ULIST.DEL l v 1", "ERR name 'v' does not belong here*"),
    ("ULIST.RECLAIM l x", "ERR *ULIST.RECLAIM is internal*"),
    ("ULIST.ADD str v 1", "WRONGTYPE *"),
    ("ULIST.HAS str v 1", "WRONGTYPE *"),
    ("ULIST.DATA str", "WRONGTYPE *"),
    ("ULIST.PARTITIONS str", "WRONGTYPE *"),
    ("ULIST.DEL str", "WRONGTYPE *"),
    ("ULIST.CREATE n", "ERR wrong number of arguments*"),
    ("ULIST.CREATE n VALUE", "ERR wrong number of arguments*"),
    ("ULIST.ADD", "ERR wrong number of arguments*"),
    ("ULIST.DATA", "ERR wrong number of arguments*"),
];

#[test]
fn errors_name_the_argument_and_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "l",
            "VALUE",
            "v",
            "SCOPE",
            "s",
            "PARTITION",
            "p",
            "EXPIRE",
            "60",
        ],
    );
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "s", "a", "p", "x"]);
    q_ok(c, &["SET", "str", "x"]);
    assert_refusals(c, REFUSALS);
    // Reads of a missing key answer as an empty list would.
    assert_eq!(q::<i64>(c, &["ULIST.HAS", "none", "v", "1"]), 0);
    assert_eq!(rows(c, &["ULIST.DATA", "none"]), Vec::<Row>::new());
    assert_eq!(
        rows(c, &["ULIST.PARTITIONS", "none", "x", "1"]),
        Vec::<Row>::new()
    );
    assert_eq!(q::<i64>(c, &["ULIST.DEL", "none"]), 0);
    assert_eq!(q::<i64>(c, &["EXISTS", "none", "n"]), 0);
    assert!(!srv.log().contains("panic"), "{}", srv.log());
}

/// CREATE with the key's own declaration answers OK and changes nothing
/// (its values, expiry and bytes stay); another declaration is refused
/// naming the difference; another type is WRONGTYPE.
#[test]
fn create_again_is_ok_with_the_same_declaration() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let decl = [
        "ULIST.CREATE",
        "l",
        "VALUE",
        "v",
        "SCOPE",
        "s",
        "EXPIRE",
        "60",
    ];
    q_ok(c, &decl);
    let _: i64 = q(c, &["ULIST.ADD", "l", "v", "1", "s", "a"]);
    let _: i64 = q(c, &["PEXPIRE", "l", "100000"]);
    let before = dump_all(c);
    q_ok(c, &decl);
    q_ok(
        c,
        &[
            "ulist.create",
            "l",
            "EXPIRE",
            "60",
            "SCOPE",
            "s",
            "VALUE",
            "v",
        ],
    );
    assert_eq!(dump_all(c), before, "a repeated CREATE changed the key");
    assert_refusals(
        c,
        &[
            (
                "ULIST.CREATE l VALUE v SCOPE s",
                "ERR the list exists with another declaration: EXPIRE 60 (asked: EXPIRE (none))",
            ),
            (
                "ULIST.CREATE l VALUE v SCOPE t EXPIRE 60",
                "ERR the list exists with another declaration: SCOPE s (asked: SCOPE t)",
            ),
        ],
    );
}

/// `ULIST.INFO` describes a list (its declaration, which CREATE takes
/// back); a missing key is an error, as for TOPN.INFO.
#[test]
fn info_describes_the_list() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "ULIST.CREATE",
            "l",
            "VALUE",
            "user",
            "SCOPE",
            "month",
            "EXPIRE",
            "600",
        ],
    );
    let _: i64 = q(c, &["ULIST.ADD", "l", "user", "1", "month", "m1"]);
    let _: i64 = q(c, &["ULIST.ADD", "l", "NEVER", "user", "2", "month", "m1"]);
    let info: Vec<Value> = q(c, &["ULIST.INFO", "l"]);
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Int(n) => n.to_string(),
        other => panic!("{other:?}"),
    };
    let field = |name: &str| {
        let i = info.chunks(2).position(|p| text(&p[0]) == name).unwrap();
        info[2 * i + 1].clone()
    };
    let Value::Array(decl) = field("declaration") else {
        panic!("{info:?}")
    };
    let decl: Vec<String> = decl.iter().map(text).collect();
    assert_eq!(decl, ["VALUE", "user", "SCOPE", "month", "EXPIRE", "600"]);
    assert_eq!(field("values"), Value::Int(2));
    assert_eq!(field("partitions"), Value::Int(1));
    assert_eq!(field("expiring values"), Value::Int(1));
    let mut again = vec!["ULIST.CREATE", "l"];
    again.extend(decl.iter().map(String::as_str));
    q_ok(c, &again);
    assert_eq!(q::<i64>(c, &["ULIST.COUNT", "l"]), 2);
    assert_eq!(q::<i64>(c, &["ULIST.COUNT", "missing"]), 0);
    assert_refusals(c, &[("ULIST.INFO missing", "ERR no such list*")]);
}
