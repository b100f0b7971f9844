//! Active defrag of the module's types on a real server that can defrag: one
//! built with its own jemalloc, named by `RECIPES_DEFRAG_SERVER` (`make
//! test-compat` builds one and runs this test on it). Debian's redis-server
//! is linked to the system's jemalloc and refuses `activedefrag yes`, so
//! without that variable the test says why it skips, and passes.
//!
//! Many keys of each type are grown, then most of them deleted, which leaves
//! the survivors' blocks scattered over sparse pages; then `activedefrag
//! yes` on a master and its replica. Both must end less fragmented, the
//! module's callbacks must have run and moved blocks (`INFO recipes`), and
//! every key must read the same as before: byte-equal DUMPs, lookups that
//! find what was written, and the replica holding the master's data.
mod common;
use common::*;

use std::time::Duration;

type Conn = redis::Connection;

/// Keys of each type, before most are deleted; one in `KEEP` stays.
const KEYS: usize = 3_000;
const KEEP: usize = 10;
/// How long defrag may take to bring fragmentation down (a deadline, not
/// a measure: the test waits for the outcome).
const DEFRAG_DEADLINE: Duration = Duration::from_secs(300);

#[test]
fn defrag_moves_module_values_and_every_key_reads_the_same() {
    let Some(server) = std::env::var_os("RECIPES_DEFRAG_SERVER") else {
        eprintln!(
            "skipped: set RECIPES_DEFRAG_SERVER to a redis-server built with its jemalloc \
             (make test-compat builds one); the default server cannot run active defrag"
        );
        return;
    };
    // The only test of this binary: every server it starts runs this binary.
    std::env::set_var("REDIS_SERVER", &server);
    let master = Server::builder()
        // Keys past this free effort are defragged late, in resumed calls.
        .config("active-defrag-max-scan-fields", "200")
        .start();
    let replica = Server::start_replica_of(&master);
    wait_for_sync(&master, &replica);
    let c = &mut master.conn();

    grow(c);
    delete_most(c);
    wait_for_sync(&master, &replica);
    let before = dump_all(c);
    let kept = before.len();
    assert!(kept > 3 * KEYS / KEEP, "{kept} keys kept");
    let frag_before = [settled_frag(&master), settled_frag(&replica)];

    for srv in [&master, &replica] {
        let c = &mut srv.conn();
        let refused = redis::cmd("CONFIG")
            .arg("SET")
            .arg("activedefrag")
            .arg("yes")
            .query::<()>(c)
            .err();
        assert!(
            refused.is_none(),
            "{server:?} cannot defrag ({refused:?}): RECIPES_DEFRAG_SERVER must name a \
             server built with its own jemalloc"
        );
        for (name, value) in [
            ("active-defrag-ignore-bytes", "1mb"),
            ("active-defrag-threshold-lower", "5"),
            // A few ms of defrag per 100 ms: big keys go in resumed calls.
            ("active-defrag-cycle-min", "1"),
            ("active-defrag-cycle-max", "10"),
        ] {
            q_ok(c, &["CONFIG", "SET", name, value]);
        }
    }
    // Done: each server's defrag stopped (what is left is under its
    // threshold), or scanned every key three times (what it can move has
    // moved: big B-trees keep their nodes, so some stays).
    let settled = |srv: &Server| {
        let stopped =
            info_field(&srv.info("memory"), "active_defrag_running").as_deref() == Some("0");
        let calls = srv.recipes_info("defrag_calls");
        calls > 0 && (stopped || calls >= 3 * kept as i64)
    };
    // Polled slowly: INFO memory makes the allocator gather its statistics.
    let deadline = std::time::Instant::now() + DEFRAG_DEADLINE;
    let done = loop {
        if settled(&master) && settled(&replica) {
            break true;
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let frag_after = [frag(&master), frag(&replica)];
    for (srv, role, before, after) in [
        (&master, "master", frag_before[0], frag_after[0]),
        (&replica, "replica", frag_before[1], frag_after[1]),
    ] {
        let (calls, moved, resumed) = (
            srv.recipes_info("defrag_calls"),
            srv.recipes_info("defrag_moved"),
            srv.recipes_info("defrag_resumed"),
        );
        let hits = info_field(&srv.info("stats"), "active_defrag_hits").unwrap_or_default();
        println!(
            "defrag figures: {role} allocator_frag_ratio {before:.2} -> {after:.2}, \
             recipes_defrag_calls {calls}, recipes_defrag_moved {moved}, \
             recipes_defrag_resumed {resumed}, active_defrag_hits {hits}"
        );
        assert!(
            done,
            "{role}: defrag did not settle\n{}",
            srv.info("memory")
        );
        // The excess over 1 at least halves: every type moved its blocks (one
        // that moved none keeps its share of the sparse pages: before TOPN
        // moved its names, this key mix went from 3.86 to 3.14 only).
        let bound = 1.0 + (before - 1.0) / 2.0;
        assert!(
            after < bound,
            "{role}: fragmentation {before} -> {after}, not below {bound:.2}"
        );
        assert!(moved > 0, "{role}: nothing moved");
    }

    // Every key reads the same: DUMP, lookups, and the replica.
    assert_eq!(dump_all(c), before, "DUMP changed on the master");
    look_up_everything(c);
    look_up_everything(&mut replica.conn());
    assert_same_data(c, &mut replica.conn());
    let _: i64 = q(c, &["ULIST.ADD", "ul:0", "v", "new", "p", "1"]);
    wait_for_sync(&master, &replica);
    assert_same_data(c, &mut replica.conn());
}

/// `allocator_frag_ratio` of `INFO memory`: what active defrag brings down.
fn frag_of(memory: &str) -> f64 {
    info_field(memory, "allocator_frag_ratio")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no allocator_frag_ratio in\n{memory}"))
}

fn frag(srv: &Server) -> f64 {
    frag_of(&srv.info("memory"))
}

/// `allocator_frag_ratio` once the deletions are over: big keys are freed on
/// a background thread, and the server refreshes its allocator statistics
/// every 100 ms, so the figure is read once `allocator_allocated` is the
/// same in two readings 300 ms apart (read earlier, it can still count the
/// deleted keys: a fragmentation far below the real one).
fn settled_frag(srv: &Server) -> f64 {
    let mut last = String::new();
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(300));
        let memory = srv.info("memory");
        let allocated = info_field(&memory, "allocator_allocated").unwrap_or_default();
        if allocated == last {
            return frag_of(&memory);
        }
        last = allocated;
    }
    panic!(
        "the allocator statistics never settled\n{}",
        srv.info("memory")
    );
}

/// Runs `cmds` in pipelines of a few thousand, checking no reply is an error.
fn pipelined(c: &mut Conn, cmds: impl IntoIterator<Item = Vec<String>>) {
    let mut cmds = cmds.into_iter().peekable();
    while cmds.peek().is_some() {
        let mut p = redis::pipe();
        for args in cmds.by_ref().take(5_000) {
            let mut cmd = redis::cmd(&args[0]);
            cmd.arg(&args[1..]);
            p.add_command(cmd).ignore();
        }
        let () = p.query(c).expect("pipeline");
    }
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// A value of `i` long enough to need a block of its own in most layouts.
fn long(prefix: &str, i: usize) -> String {
    format!("{prefix}-{i:06}-a-value-that-does-not-fit-inline")
}

/// Rounds of `grow`, and members a TOPN key gets each round: 300 members
/// with long names a key, each its own block.
const ROUNDS: usize = 60;
const TOPN_PER_ROUND: usize = 5;

/// The count of a small TOPN key's member `i`: 1 to 7, so TOP has an order.
fn topn_count(i: usize) -> usize {
    i % 7 + 1
}

/// Grows `KEYS` keys of each type a little at a time, round robin, so every
/// page ends up shared by many keys; plus one big key of each type, whose
/// defrag goes in resumed calls.
fn grow(c: &mut Conn) {
    pipelined(c, (0..KEYS).flat_map(|k| create(&k.to_string())));
    for round in 0..ROUNDS {
        pipelined(
            c,
            (0..KEYS).flat_map(|k| {
                // Some lists go past the compact size (hashed), kept ones too.
                let values = if k % 20 == 10 || k % 7 == 3 { 4 } else { 1 };
                let ulist = (0..values).map(move |j| {
                    let v = long("v", round * 4 + j);
                    args(&[
                        "ULIST.ADD",
                        &format!("ul:{k}"),
                        "v",
                        &v,
                        "p",
                        &(round % 5).to_string(),
                    ])
                });
                let day = (round % 6).to_string();
                let city = long("city", round % 20);
                let user = round.to_string();
                let hcounter = args(&[
                    "HCOUNTER.INCR",
                    &format!("hc:{k}"),
                    "day",
                    &day,
                    "city",
                    &city,
                    "user",
                    &user,
                ]);
                let topn = (0..TOPN_PER_ROUND).map(move |j| {
                    let i = round * TOPN_PER_ROUND + j;
                    let by = topn_count(i).to_string();
                    args(&["TOPN.INCR", &format!("tn:{k}"), &long("m", i), "BY", &by])
                });
                ulist.chain([hcounter]).chain(topn)
            }),
        );
    }
    pipelined(
        c,
        create("big").into_iter().chain((0..20_000).flat_map(|i| {
            let v = long("v", i);
            [
                args(&["ULIST.ADD", "ul:big", "v", &v, "p", &(i % 50).to_string()]),
                args(&[
                    "HCOUNTER.INCR",
                    "hc:big",
                    "day",
                    "1",
                    "city",
                    &v,
                    "user",
                    &v,
                ]),
                args(&["TOPN.INCR", "tn:big", &v]),
            ]
        })),
    );
}

/// The commands that create `ul:<name>`, `hc:<name>` and `tn:<name>`.
fn create(name: &str) -> [Vec<String>; 3] {
    [
        args(&[
            "ULIST.CREATE",
            &format!("ul:{name}"),
            "VALUE",
            "v",
            "PARTITION",
            "p",
        ]),
        args(&[
            "HCOUNTER.CREATE",
            &format!("hc:{name}"),
            "PARTITION",
            "day",
            "GROUP",
            "city",
            "UNIQUE",
            "user",
        ]),
        args(&[
            "TOPN.CREATE",
            &format!("tn:{name}"),
            "BUCKET",
            "3600",
            "WINDOW",
            "24",
        ]),
    ]
}

/// Deletes all keys but one in `KEEP` of each type (and the big ones).
fn delete_most(c: &mut Conn) {
    pipelined(
        c,
        (0..KEYS).filter(|k| k % KEEP != 0).flat_map(|k| {
            [
                args(&["DEL", &format!("ul:{k}")]),
                args(&["DEL", &format!("hc:{k}")]),
                args(&["DEL", &format!("tn:{k}")]),
            ]
        }),
    );
}

/// Lookups (hash tables, indexes) on every kept key find what was written.
fn look_up_everything(c: &mut Conn) {
    for k in (0..KEYS).step_by(KEEP) {
        let ul = format!("ul:{k}");
        assert_eq!(
            q::<i64>(c, &["ULIST.HAS", &ul, "v", &long("v", 4)]),
            1,
            "{ul}"
        );
        let hc = format!("hc:{k}");
        let city = long("city", 7);
        let got: i64 = q(c, &["HCOUNTER.GET", &hc, "day", "1", "city", &city]);
        assert_eq!(got, 1, "{hc}");
        let tn = format!("tn:{k}");
        let members = ROUNDS * TOPN_PER_ROUND;
        for i in (0..members).step_by(37) {
            let counts: Vec<i64> = q(c, &["TOPN.COUNT", &tn, &long("m", i)]);
            assert_eq!(counts, [topn_count(i) as i64], "{tn} member {i}");
        }
        // The order index: the highest counts (7), ties by name.
        let top: Vec<String> = q(c, &["TOPN.TOP", &tn, "3"]);
        let want: Vec<String> = (0..members)
            .filter(|&i| topn_count(i) == 7)
            .take(3)
            .map(|i| long("m", i))
            .collect();
        assert_eq!(top, want, "{tn}");
    }
    for i in (0..20_000).step_by(997) {
        let v = long("v", i);
        assert_eq!(q::<i64>(c, &["ULIST.HAS", "ul:big", "v", &v]), 1);
        let got: i64 = q(c, &["HCOUNTER.GET", "hc:big", "day", "1", "city", &v]);
        assert_eq!(got, 1);
        let counts: Vec<i64> = q(c, &["TOPN.COUNT", "tn:big", &v]);
        assert_eq!(counts, [1]);
    }
}
