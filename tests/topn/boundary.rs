//! A bucket boundary with many members: reads stay exact as buckets seal.
use super::*;
use std::time::Instant;

fn fill_bucket(c: &mut Conn, key: &str, prefix: &str, n: usize, by: i64, at: i64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("TOPN.INCR")
                .arg(key)
                .arg(format!("{prefix}{i}"))
                .arg("BY")
                .arg(by)
                .arg("AT")
                .arg(at + (*i as i64 % 60_000))
                .ignore();
        }
        let _: () = p.query(c).unwrap();
    }
}

#[test]
fn bucket_boundary_with_many_members() {
    let srv = Server::start();
    let c = &mut srv.conn();
    let bm = 60_000;
    let b = now_ms() / bm;
    let t = |k: i64| (b + k) * bm;
    const OLD: usize = 100_000;

    // "inc": the old bucket is retired piecewise (a newer bucket stays live).
    q_ok(c, &["TOPN.CREATE", "inc", "BUCKET", "60", "WINDOW", "2"]);
    fill_bucket(c, "inc", "o", OLD, 5, t(0));
    for i in 0..20 {
        incr(c, "inc", &format!("mid{i:02}"), 2, t(1));
    }
    assert_eq!(info(c, "inc")["members"], OLD as i64 + 20);
    // "grave": the clock jumps past the whole window.
    q_ok(c, &["TOPN.CREATE", "grave", "BUCKET", "60", "WINDOW", "2"]);
    fill_bucket(c, "grave", "o", OLD, 5, t(0));
    assert_eq!(info(c, "grave")["members"], OLD as i64);
    let e0 = recipes_info(c, "topn_expired_buckets");

    q_ok(c, &["CONFIG", "SET", "slowlog-max-len", "100000"]);
    q_ok(c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    q_ok(c, &["SLOWLOG", "RESET"]);
    let started = Instant::now();
    assert_eq!(incr(c, "inc", "new0", 1, t(2)), 1);
    assert_eq!(incr(c, "grave", "new0", 1, t(5)), 1);
    let boundary = started.elapsed();

    // Right after the boundary: only the live buckets count.
    let mut want_inc: Rows = (0..20).map(|i| (format!("mid{i:02}"), 2)).collect();
    want_inc.push(("new0".into(), 1));
    assert_eq!(top(c, "inc", 100, t(2)), want_inc);
    assert_eq!(top(c, "inc", 5, t(2) + 1), want_inc[..5].to_vec());
    assert_eq!(
        top(c, "inc", 10, t(1)),
        want_inc[..10].to_vec(),
        "window [b, b+1] cut to [b+1, b+2]"
    );
    assert_eq!(top(c, "inc", 10, t(0)), rows(&[]));
    assert_eq!(
        count(
            c,
            "inc",
            &["o0", "o99999", "o5", "mid03", "new0"],
            Some(t(2))
        ),
        [0, 0, 0, 2, 1]
    );
    assert_eq!(count(c, "inc", &["o0", "o77"], Some(t(1))), [0, 0]);
    assert_eq!(
        incr(c, "inc", "o1", 1, t(0)),
        0,
        "bucket b is out of the window: ignored"
    );
    assert_eq!(top(c, "grave", 100, t(5)), rows(&[("new0", 1)]));
    assert_eq!(top(c, "grave", 100, t(4)), rows(&[]));
    assert_eq!(
        count(c, "grave", &["o0", "o99999", "new0"], Some(t(5))),
        [0, 0, 1]
    );
    assert_eq!(info(c, "grave")["buckets"], 1);
    assert_eq!(info(c, "inc")["buckets"], 2);
    let ti = Instant::now();
    assert_eq!(top(c, "inc", 10, t(2)).len(), 10);
    let top_time = ti.elapsed();

    // Further writes retire the old data piecewise.
    let mut settled = (false, false);
    for round in 0..40 {
        let mut p = redis::pipe();
        for i in 0..500 {
            p.cmd("TOPN.INCR")
                .arg("inc")
                .arg(format!("new{}", i % 50))
                .arg("AT")
                .arg(t(2))
                .ignore();
            p.cmd("TOPN.INCR")
                .arg("grave")
                .arg(format!("new{}", i % 50))
                .arg("AT")
                .arg(t(5))
                .ignore();
        }
        let _: () = p.query(c).unwrap();
        settled = (
            info(c, "inc")["members"] == 70,
            info(c, "grave")["members"] == 50,
        );
        if settled == (true, true) {
            eprintln!(
                "old buckets retired after {} rounds of 500 writes",
                round + 1
            );
            break;
        }
    }
    // For information only (no timing assertions): the cost of the writes around the
    // boundary as the server measured them.
    let (n_incr, max_us, max_cmd) = slowlog_slowest(c, "TOPN.INCR");
    eprintln!(
        "boundary INCRs took {boundary:?} (client side); TOP 10 {top_time:?}; \
         SLOWLOG: {n_incr} TOPN.INCR entries, slowest {max_us} us: {max_cmd}"
    );
    assert_eq!(
        settled,
        (true, true),
        "members after retirement: inc {:?}, grave {:?}",
        info(c, "inc"),
        info(c, "grave")
    );
    assert!(
        recipes_info(c, "topn_expired_buckets") >= e0 + 2,
        "topn_expired_buckets {} (was {e0})",
        recipes_info(c, "topn_expired_buckets")
    );
    assert_eq!(recipes_info(c, "topn_members"), 120);
    let mut want: Rows = (0..20).map(|i| (format!("mid{i:02}"), 2)).collect();
    let mut news: Rows = (0..50).map(|i| (format!("new{i}"), 0)).collect();
    // new0 got 1 at the boundary; each round adds 10 per new member
    let rounds = top(c, "grave", 1, t(5))[0].1;
    for (m, n) in news.iter_mut() {
        *n = if m == "new0" { rounds } else { rounds - 1 };
    }
    want.extend(news.clone());
    want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(top(c, "inc", 1000, t(2)), want);
    assert_eq!(top(c, "grave", 1000, t(5)), {
        let mut g = news;
        g.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        g
    });
}
