//! Every error: each names its argument and changes nothing; the limits
//! that are accepted.
use super::*;

/// (command line, the error it must reply), as [`assert_refusals`] runs them
/// on the keys of [`errors_change_nothing`]; `$AT` is a time in the window.
#[rustfmt::skip]
const REFUSALS: &[(&str, &str)] = &[
    // CREATE
    ("TOPN.CREATE", "ERR wrong number of arguments*"),
    ("TOPN.CREATE k", "ERR the key exists with another shape: BUCKET 60 WINDOW 4 ALIGN 0 (asked: BUCKET 3600 WINDOW 24 ALIGN 0)"),
    ("TOPN.CREATE k BUCKET 60 WINDOW 5", "ERR the key exists with another shape: BUCKET 60 WINDOW 4 ALIGN 0 (asked: BUCKET 60 WINDOW 5 ALIGN 0)"),
    ("TOPN.CREATE str", "WRONGTYPE *"),
    ("TOPN.CREATE n BUCKET 0", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET -1", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET 31536001", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET 1.5", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET x", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET ''", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET ' 5'", "ERR *BUCKET*"),
    ("TOPN.CREATE n BUCKET", "ERR *BUCKET*"),
    ("TOPN.CREATE n WINDOW 0", "ERR *WINDOW*"),
    ("TOPN.CREATE n WINDOW 100001", "ERR *WINDOW*"),
    ("TOPN.CREATE n WINDOW 99999999999999999999", "ERR *WINDOW*"),
    ("TOPN.CREATE n BUCKET 60 BUCKET 60", "ERR *BUCKET*"),
    ("TOPN.CREATE n FOO 1", "ERR *FOO*"),
    ("TOPN.CREATE n WINDOW 3 BUCKET 0", "ERR *BUCKET*"),
    // INCR
    ("TOPN.INCR", "ERR wrong number of arguments*"),
    ("TOPN.INCR k", "ERR wrong number of arguments*"),
    ("TOPN.INCR str m", "WRONGTYPE *"),
    ("TOPN.INCR str m AT $AT", "WRONGTYPE *"),
    ("TOPN.INCR k a BY 1.5", "ERR *BY*"),
    ("TOPN.INCR k a BY x", "ERR *BY*"),
    ("TOPN.INCR k a BY 9223372036854775808", "ERR *BY*"),
    ("TOPN.INCR k a BY -9223372036854775809", "ERR *BY*"),
    ("TOPN.INCR k a BY +1", "ERR *BY*"),
    ("TOPN.INCR k a BY", "ERR *BY*"),
    ("TOPN.INCR k a BY 1 BY 1", "ERR *BY*"),
    ("TOPN.INCR k a AT -1", "ERR *AT*"),
    ("TOPN.INCR k a AT 9007199254740993", "ERR *AT*"),
    ("TOPN.INCR k a AT 1e3", "ERR *AT*"),
    ("TOPN.INCR k a AT", "ERR *AT*"),
    ("TOPN.INCR k a AT $AT AT $AT", "ERR *AT*"),
    ("TOPN.INCR k a WINDOW 3", "ERR *WINDOW*"),
    ("TOPN.INCR k a 3", "ERR *"),
    ("TOPN.INCR newkey a BY x", "ERR *BY*"),
    ("TOPN.INCR newkey a AT -5", "ERR *AT*"),
    // TOP / TOP24
    ("TOPN.TOP", "ERR wrong number of arguments*"),
    ("TOPN.TOP k -1", "ERR count must be*"),
    ("TOPN.TOP k x", "ERR count must be*"),
    ("TOPN.TOP k 1.0", "ERR count must be*"),
    ("TOPN.TOP k 3 4", "ERR *4*"),
    ("TOPN.TOP k AT", "ERR *AT*"),
    ("TOPN.TOP k AT -5", "ERR *AT*"),
    ("TOPN.TOP k AT x", "ERR *AT*"),
    ("TOPN.TOP k WITHCOUNTS WITHCOUNTS", "ERR *WITHCOUNTS*"),
    ("TOPN.TOP k 3 AT $AT AT $AT", "ERR *AT*"),
    ("TOPN.TOP k BY 3", "ERR *"),
    ("TOPN.TOP str", "WRONGTYPE *"),
    ("TOPN.TOP k LAST 0", "ERR LAST must be an integer between 1 and the key's WINDOW (4), got 0"),
    ("TOPN.TOP k LAST -1", "ERR LAST must be an integer between 1 and the key's WINDOW (4), got -1"),
    ("TOPN.TOP k LAST x", "ERR LAST must be an integer between 1 and the key's WINDOW, got 'x'"),
    ("TOPN.TOP missing LAST 0", "ERR LAST must be an integer between 1 and the key's WINDOW, got 0"),
    ("TOPN.TOP k LAST", "ERR *LAST*"),
    ("TOPN.TOP k LAST 5", "ERR LAST must be an integer between 1 and the key's WINDOW (4), got 5"),
    ("TOPN.TOP k LAST 100001", "ERR *LAST*"),
    ("TOPN.TOP k LAST 1 LAST 1", "ERR *LAST*"),
    ("TOPN.TOP str LAST 1", "WRONGTYPE *"),
    ("TOPN.TOP24 k", "ERR *24*"),
    ("TOPN.TOP24 k LAST 1", "ERR *LAST*"),
    ("TOPN.TOP24 str", "WRONGTYPE *"),
    ("TOPN.TOP24 k x", "ERR count must be*"),
    // COUNT
    ("TOPN.COUNT", "ERR wrong number of arguments*"),
    ("TOPN.COUNT k", "ERR wrong number of arguments*"),
    ("TOPN.COUNT k a AT x", "ERR *AT*"),
    ("TOPN.COUNT k a AT -1", "ERR *AT*"),
    ("TOPN.COUNT k a LAST 0", "ERR LAST must be an integer between 1 and the key's WINDOW (4), got 0"),
    ("TOPN.COUNT missing a LAST 0", "ERR LAST must be an integer between 1 and the key's WINDOW, got 0"),
    ("TOPN.COUNT k a LAST 5", "ERR *LAST*WINDOW (4)*"),
    ("TOPN.COUNT k a LAST x AT $AT", "ERR *LAST*"),
    ("TOPN.COUNT str a", "WRONGTYPE *"),
    // INFO
    ("TOPN.INFO", "ERR wrong number of arguments*"),
    ("TOPN.INFO k x", "ERR wrong number of arguments*"),
    ("TOPN.INFO missing", "ERR *no such key*"),
    ("TOPN.INFO str", "WRONGTYPE *"),
];

#[test]
fn errors_change_nothing() {
    let srv = Server::builder().module_args(AHEAD_OF_THE_CLOCK).start();
    let c = &mut srv.conn();
    let bm = 60_000;
    let base = now_ms() / bm * bm;
    q_ok(c, &["TOPN.CREATE", "k", "BUCKET", "60", "WINDOW", "4"]);
    // The same shape again: OK, nothing changes.
    let before = dump_all(c);
    q_ok(c, &["TOPN.CREATE", "k", "WINDOW", "4", "BUCKET", "60"]);
    assert_eq!(dump_all(c), before);
    incr(c, "k", "a", 3, base);
    incr(c, "k", "b", 2, base + bm);
    q_ok(c, &["SET", "str", "v"]);
    let ts = times_around(base, bm, 6);
    let ms: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let before = snap(c, "k", &ts, &ms, true);
    let errors0 = recipes_info(c, "topn_errors");
    let b = base.to_string();
    let rows: Vec<(String, &str)> = REFUSALS
        .iter()
        .map(|(line, want)| (line.replace("$AT", &b), *want))
        .collect();
    let n_err = assert_refusals(c, &rows) as i64;
    assert_eq!(
        snap(c, "k", &ts, &ms, true),
        before,
        "a rejected command changed the key"
    );
    for k in ["n", "newkey", "missing"] {
        assert!(!exists(c, k), "{k} was created by a failing command");
    }
    assert_eq!(
        recipes_info(c, "topn_errors") - errors0,
        n_err,
        "topn_errors counts each error the module replied"
    );

    // Limits that are accepted.
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            "max",
            "BUCKET",
            "31536000",
            "WINDOW",
            "100000",
        ],
    );
    q_ok(c, &["TOPN.CREATE", "min", "BUCKET", "1", "WINDOW", "1"]);
    let i = info(c, "max");
    assert_eq!((i["bucket"], i["window"]), (31_536_000, 100_000));
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", "max", "m", "AT", "0"]),
        1,
        "bucket 0 lives for 100000 years"
    );
    assert_eq!(
        q::<i64>(c, &["TOPN.INCR", "max", "m", "AT", "9007199254740992"]),
        1
    );
    assert_eq!(count(c, "max", &["m"], Some(9007199254740992)), [1]);
    assert!(pexpiretime(c, "max") > 9007199254740992);
    // COUNT: only a final AT pair is the option; members may be called AT otherwise.
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "AT"]), [0]);
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "AT", "a"]), [0, 3]);
    assert_eq!(
        q::<Vec<i64>>(
            c,
            &["TOPN.COUNT", "k", "a", "b", "at", &(base + bm).to_string()]
        ),
        [3, 2]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "missing", "a", "b"]),
        [0, 0]
    );
    // LAST: final pairs in either order; a member may be called LAST otherwise.
    let b1 = (base + bm).to_string();
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "a", "b", "LAST", "1", "AT", &b1]),
        [0, 2]
    );
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "a", "b", "AT", &b1, "LAST", "2"]),
        [3, 2]
    );
    assert_eq!(q::<Vec<i64>>(c, &["TOPN.COUNT", "k", "LAST", "1"]), [0, 0]);
    assert_eq!(
        q::<Vec<i64>>(c, &["TOPN.COUNT", "missing", "a", "LAST", "1000"]),
        [0]
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "k", "LAST", "1", "AT", &b1]),
        ["b"]
    );
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "missing", "LAST", "1000"]),
        Vec::<String>::new()
    );
    // Reads of missing keys.
    assert_eq!(
        q::<Vec<String>>(c, &["TOPN.TOP", "missing", "5", "WITHCOUNTS"]),
        Vec::<String>::new()
    );
    // Commands are case-insensitive and declare their key.
    assert_keys_declared(c, &["topn.incr thekey m BY 2", "TOPN.COUNT thekey a b"]);
    // Readonly commands are allowed on replicas etc.: check the flags.
    let ci: Vec<Value> = q(c, &["COMMAND", "INFO", "topn.top"]);
    let flags = format!("{ci:?}");
    assert!(flags.contains("readonly"), "{flags}");
}
