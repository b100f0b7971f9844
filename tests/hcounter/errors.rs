//! Every error of the contract: each names its argument and changes nothing.
use super::*;

/// (command line, the error it must reply), as [`assert_refusals`] runs them
/// on the keys of [`errors_name_the_argument_and_change_nothing`].
#[rustfmt::skip]
const REFUSALS: &[(&str, &str)] = &[
    ("HCOUNTER.CREATE c", "ERR the counter exists with another declaration: PARTITION day (asked: PARTITION (none))"),
    ("HCOUNTER.CREATE c GROUP x", "ERR the counter exists with another declaration: PARTITION day (asked: PARTITION (none))"),
    ("HCOUNTER.CREATE str GROUP x", "WRONGTYPE*"),
    ("HCOUNTER.CREATE n SCOPE s", "ERR *SCOPE*"),
    ("HCOUNTER.CREATE n GROUP g SCOPE s", "ERR *SCOPE*"),
    ("HCOUNTER.CREATE n UNIQUE u SCOPE u", "ERR *'u'*"),
    ("HCOUNTER.CREATE n GROUP value", "ERR *'value'*"),
    ("HCOUNTER.CREATE n PARTITION Value", "ERR *'Value'*"),
    ("HCOUNTER.CREATE n GROUP g UNIQUE VALUE", "ERR *'VALUE'*"),
    ("HCOUNTER.CREATE n PARTITION at", "ERR *'at'*"),
    ("HCOUNTER.CREATE n PARTITION day GROUP group", "ERR GROUP needs at least one name ('group' is a keyword of this command, not a name)"),
    ("HCOUNTER.CREATE n PARTITION day EXPIRE 600", "ERR 'EXPIRE' is a keyword (EXPIRE of ULIST.ADD, ULIST.CREATE) and cannot be a name"),
    ("HCOUNTER.CREATE n GROUP city LIMIT", "ERR 'LIMIT' is a keyword (LIMIT of RV.GET) and cannot be a name"),
    ("HCOUNTER.CREATE n UNIQUE At", "ERR *'At'*"),
    ("HCOUNTER.CREATE n GROUP g g", "ERR *'g'*"),
    ("HCOUNTER.CREATE n PARTITION p p", "ERR *'p'*"),
    ("HCOUNTER.CREATE n UNIQUE u u", "ERR *'u'*"),
    ("HCOUNTER.CREATE n junk", "ERR *'junk'*"),
    ("HCOUNTER.CREATE n GROUP g TTL 0", "ERR *TTL*"),
    ("HCOUNTER.CREATE n GROUP g TTL -1", "ERR *TTL*"),
    ("HCOUNTER.CREATE n GROUP g TTL x", "ERR *TTL*"),
    ("HCOUNTER.CREATE n GROUP g TTL", "ERR *TTL*"),
    ("HCOUNTER.CREATE n PARTITION", "ERR *"),
    ("HCOUNTER.CREATE n GROUP TTL 5", "ERR *"),
    ("HCOUNTER.CREATE n GROUP FLOAT", "ERR *"),
    ("HCOUNTER.CREATE n UNIQUE SCOPE s", "ERR *"),
    // a counter that was never created
    ("HCOUNTER.INCR n", "ERR no such counter; create it with HCOUNTER.CREATE"),
    ("HCOUNTER.INCR n g 1", "ERR no such counter; create it with HCOUNTER.CREATE"),
    ("HCOUNTER.INCRBY n 5 g 1", "ERR no such counter; create it with HCOUNTER.CREATE"),
    // names
    ("HCOUNTER.INCR c day d page p user u", "ERR missing name 'month'"),
    ("HCOUNTER.INCR c page p user u month m", "ERR missing name 'day'"),
    ("HCOUNTER.INCR c day d page p user u month m x 1", "ERR unknown name 'x'"),
    ("HCOUNTER.INCR c day d page p user u month m day e", "ERR name 'day' given more than once"),
    ("HCOUNTER.INCR c day d page p user u month", "ERR name 'month' needs a value"),
    ("HCOUNTER.INCRBY c 2 day d page p user u mon m", "ERR unknown name 'mon'"),
    ("HCOUNTER.GET c day d page p user u", "ERR name 'user' does not belong here"),
    ("HCOUNTER.GET c day d page p month m", "ERR name 'month' does not belong here"),
    ("HCOUNTER.GET c day d", "ERR missing name 'page'"),
    ("HCOUNTER.GET c page p day", "ERR name 'day' needs a value"),
    ("HCOUNTER.DATA c page p", "ERR name 'page' does not belong here"),
    ("HCOUNTER.DATA c day d day d", "ERR name 'day' given more than once"),
    ("HCOUNTER.DATA c zzz 1", "ERR unknown name 'zzz'"),
    ("HCOUNTER.PARTITIONS c month m", "ERR name 'month' does not belong here"),
    ("HCOUNTER.PARTITIONS c day", "ERR name 'day' needs a value"),
    ("HCOUNTER.DEL c user u", "ERR name 'user' does not belong here"),
    ("HCOUNTER.DEL c Day d", "ERR unknown name 'Day'"),
    ("HCOUNTER.DEL i g max", "ERR name 'g' does not belong here"),
    // increments
    ("HCOUNTER.INCRBY i x g a", "ERR increment*"),
    ("HCOUNTER.INCRBY i 1.5 g a", "ERR increment*"),
    ("HCOUNTER.INCRBY i '' g a", "ERR increment*"),
    ("HCOUNTER.INCRBY i 1e3 g a", "ERR increment*"),
    ("HCOUNTER.INCRBY i 9223372036854775808 g a", "ERR increment*"),
    ("HCOUNTER.INCRBY i -9223372036854775809 g a", "ERR increment*"),
    ("HCOUNTER.INCR i g max", "ERR increment or decrement would overflow"),
    ("HCOUNTER.INCRBY i -1 g min", "ERR increment or decrement would overflow"),
    ("HCOUNTER.INCRBY f inf g a", "ERR increment*"),
    ("HCOUNTER.INCRBY f -inf g a", "ERR increment*"),
    ("HCOUNTER.INCRBY f nan g a", "ERR increment*"),
    ("HCOUNTER.INCRBY f abc g a", "ERR increment*"),
    ("HCOUNTER.INCRBY f 1.5x g a", "ERR increment*"),
    ("HCOUNTER.INCRBY f '' g a", "ERR increment*"),
    ("HCOUNTER.INCRBY f 1e308 g big", "ERR increment would produce NaN or Infinity"),
    // AT
    ("HCOUNTER.INCR c AT nan day d page p user v month m", "ERR *AT*"),
    ("HCOUNTER.INCR c AT 1.5 day d page p user v month m", "ERR *AT*"),
    ("HCOUNTER.INCR c AT 1 AT 2 day d page p user v month m", "ERR *AT*"),
    ("HCOUNTER.INCR i g a AT", "ERR *"),
    // internal commands, refused from a client
    ("HCOUNTER.SET i 5 AT 1 g max", "ERR *"),
    ("HCOUNTER.SET i 5 AT 1 g new", "ERR *"),
    ("HCOUNTER.SEEN c AT 1 month m user w day d", "ERR *"),
    ("HCOUNTER.RECLAIM c x", "ERR *"),
    // WRONGTYPE
    ("HCOUNTER.INCR str g 1", "WRONGTYPE *"),
    ("HCOUNTER.INCRBY str 1 g 1", "WRONGTYPE *"),
    ("HCOUNTER.GET str g 1", "WRONGTYPE *"),
    ("HCOUNTER.DATA str", "WRONGTYPE *"),
    ("HCOUNTER.PARTITIONS str", "WRONGTYPE *"),
    ("HCOUNTER.DEL str", "WRONGTYPE *"),
    ("GET c", "WRONGTYPE *"),
    // arity
    ("HCOUNTER.CREATE", "ERR wrong number of arguments*"),
    ("HCOUNTER.INCR", "ERR wrong number of arguments*"),
    ("HCOUNTER.INCRBY i", "ERR wrong number of arguments*"),
    ("HCOUNTER.GET", "ERR wrong number of arguments*"),
    ("HCOUNTER.DATA", "ERR wrong number of arguments*"),
    ("HCOUNTER.PARTITIONS", "ERR wrong number of arguments*"),
    ("HCOUNTER.DEL", "ERR wrong number of arguments*"),
];

/// Every error of the contract, each naming its argument; none changes
/// anything.
#[test]
fn errors_name_the_argument_and_change_nothing() {
    let srv = Server::start();
    let c = &mut srv.conn();
    q_ok(
        c,
        &[
            "HCOUNTER.CREATE",
            "c",
            "PARTITION",
            "day",
            "GROUP",
            "page",
            "UNIQUE",
            "user",
            "SCOPE",
            "month",
            "TTL",
            "3600",
        ],
    );
    let counted = ["day", "d", "page", "p", "user", "u", "month", "m"];
    let mut args = vec!["HCOUNTER.INCR", "c"];
    args.extend(counted);
    assert_eq!(int_reply(c, &args), 1);
    q_ok(c, &["HCOUNTER.CREATE", "i", "GROUP", "g"]);
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.INCRBY", "i", "9223372036854775807", "g", "max"]
        ),
        i64::MAX
    );
    assert_eq!(
        int_reply(
            c,
            &["HCOUNTER.INCRBY", "i", "-9223372036854775808", "g", "min"]
        ),
        i64::MIN
    );
    q_ok(c, &["HCOUNTER.CREATE", "f", "GROUP", "g", "FLOAT"]);
    let big = float_reply(c, &["HCOUNTER.INCRBY", "f", "1e308", "g", "big"]);
    assert_eq!(big, format!("{}", 1e308_f64));
    q_ok(c, &["SET", "str", "x"]);
    let data: Vec<Vec<Row>> = ["c", "i", "f"]
        .iter()
        .map(|k| rows(c, &["HCOUNTER.DATA", k]))
        .collect();
    let errors_before = recipes_info(c, "hcounter_errors");
    let module_errors = assert_refusals(c, REFUSALS);
    for (k, want) in ["c", "i", "f"].iter().zip(&data) {
        assert_eq!(&rows(c, &["HCOUNTER.DATA", k]), want, "{k}");
    }
    assert!(!exists(c, "n"), "a refused command created a key");
    // (Arity errors may be refused by Redis itself, before the module.)
    let errors = recipes_info(c, "hcounter_errors") - errors_before;
    assert!(
        errors >= module_errors as i64,
        "hcounter_errors counts every refused HCOUNTER call: {errors} < {module_errors}"
    );
    // A finite result after a refused one is fine.
    assert_eq!(
        float_reply(c, &["HCOUNTER.INCRBY", "f", "-1e308", "g", "big"]),
        "0"
    );
    // Reads of a missing key answer as an empty counter would, and create nothing.
    assert_eq!(rows(c, &["HCOUNTER.DATA", "n"]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.DATA", "n", "day", "d"]), no_rows());
    assert_eq!(rows(c, &["HCOUNTER.PARTITIONS", "n"]), no_rows());
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n"]), 0);
    assert_eq!(int_reply(c, &["HCOUNTER.DEL", "n", "day", "d"]), 0);
    assert!(!exists(c, "n"));
    assert!(!srv.log().contains("panic"), "{}", srv.log());
}

/// CREATE with the key's own declaration answers OK and changes nothing;
/// another declaration is refused naming the difference; GET of a missing
/// counter is 0, as HGET of a missing field is nil.
#[test]
fn create_again_is_ok_with_the_same_declaration() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let decl = [
        "HCOUNTER.CREATE",
        "c",
        "PARTITION",
        "day",
        "GROUP",
        "city",
        "TTL",
        "600",
    ];
    q_ok(c, &decl);
    assert_eq!(
        q::<i64>(c, &["HCOUNTER.INCR", "c", "day", "d1", "city", "7"]),
        1
    );
    let before = dump_all(c);
    q_ok(c, &decl);
    assert_eq!(dump_all(c), before, "a repeated CREATE changed the key");
    assert_refusals(
        c,
        &[
            (
                "HCOUNTER.CREATE c PARTITION day GROUP city TTL 600 FLOAT",
                "ERR the counter exists with another declaration: integer counts (asked: FLOAT)",
            ),
            (
                "HCOUNTER.CREATE c PARTITION day GROUP city",
                "ERR the counter exists with another declaration: TTL 600 (asked: TTL (none))",
            ),
        ],
    );
    assert_eq!(q::<i64>(c, &["HCOUNTER.GET", "missing", "day", "d1"]), 0);
}

/// `HCOUNTER.INFO` describes a counter (its declaration, which CREATE takes
/// back); a missing key is an error.
#[test]
fn info_describes_the_counter() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let decl = [
        "PARTITION",
        "day",
        "GROUP",
        "city",
        "UNIQUE",
        "user",
        "TTL",
        "60",
    ];
    let mut create = vec!["HCOUNTER.CREATE", "h"];
    create.extend(decl);
    q_ok(c, &create);
    for (day, city, user) in [("d1", "1", "u1"), ("d1", "2", "u2"), ("d2", "1", "u1")] {
        let _: i64 = q(
            c,
            &["HCOUNTER.INCR", "h", "day", day, "city", city, "user", user],
        );
    }
    let info: std::collections::BTreeMap<String, Value> = q(c, &["HCOUNTER.INFO", "h"]);
    let declared: Vec<String> = redis::from_redis_value(&info["declaration"]).unwrap();
    assert_eq!(declared, decl);
    // u1 on d2 was already counted (no SCOPE: unique in the whole counter).
    assert_eq!(info["partitions"], Value::Int(1));
    assert_eq!(info["cells"], Value::Int(2));
    assert_eq!(info["unique tuples"], Value::Int(2));
    assert_eq!(info["expiring partitions"], Value::Int(1));
    q_ok(c, &create);
    assert_refusals(c, &[("HCOUNTER.INFO missing", "ERR no such counter*")]);
}
