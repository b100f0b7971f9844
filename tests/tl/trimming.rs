//! Low/high-water trimming: by example, against a model of random
//! sequences, and on long lists.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;

#[test]
fn low_high_water_trimming() {
    let srv = Server::start();
    let mut c = srv.conn();

    // MAXLEN 5 SLACK 3: 1..7, then cut back to 5 at 8: 5,6,7,5,6,7,...
    let mut lens = Vec::new();
    for i in 0..20 {
        lens.push(q::<i64>(
            &mut c,
            &["TL.PUSH", "w", &i.to_string(), "MAXLEN", "5", "SLACK", "3"],
        ));
    }
    assert_eq!(
        lens,
        vec![1, 2, 3, 4, 5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6, 7, 5, 6, 7, 5]
    );
    // After the 20th push (a cut), the 5 newest are kept.
    assert_eq!(lrange(&mut c, "w"), s(&["19", "18", "17", "16", "15"]));
    // Trims: 5 cuts of 3 items.
    assert_eq!(recipes_info(&mut c, "tl_trims"), 15);
    // One more push: 6 items, the 6 newest.
    assert_eq!(
        q::<i64>(&mut c, &["TL.PUSH", "w", "20", "SLACK", "3", "MAXLEN", "5"]),
        6
    );
    assert_eq!(
        lrange(&mut c, "w"),
        s(&["20", "19", "18", "17", "16", "15"])
    );

    // SLACK 0 (explicit and default) keeps exactly n; SLACK 1 too.
    for (key, extra) in [
        ("s0", vec![]),
        ("s0x", vec!["SLACK", "0"]),
        ("s1", vec!["SLACK", "1"]),
    ] {
        let mut got = Vec::new();
        for i in 0..7 {
            let item = i.to_string();
            let mut a = vec!["TL.PUSH", key, item.as_str(), "MAXLEN", "3"];
            a.extend(extra.iter().copied());
            got.push(q::<i64>(&mut c, &a));
        }
        assert_eq!(got, vec![1, 2, 3, 3, 3, 3, 3], "key {key}");
        assert_eq!(lrange(&mut c, key), s(&["6", "5", "4"]), "key {key}");
    }
    // MAXLEN 1 keeps only the newest.
    for i in 0..4 {
        assert_eq!(
            q::<i64>(&mut c, &["TL.PUSH", "one", &i.to_string(), "MAXLEN", "1"]),
            1
        );
    }
    assert_eq!(lrange(&mut c, "one"), s(&["3"]));

    // A list built by plain LPUSH with 100 items is cut to n on the first push.
    let items: Vec<String> = (0..100).map(|i| format!("p{i}")).collect();
    lpush_many(&mut c, "big", &items);
    let trims0 = recipes_info(&mut c, "tl_trims");
    assert_eq!(
        q::<i64>(
            &mut c,
            &["TL.PUSH", "big", "new", "MAXLEN", "10", "SLACK", "50"]
        ),
        10
    );
    let mut want = vec!["new".to_string()];
    want.extend((91..100).rev().map(|i| format!("p{i}")));
    assert_eq!(lrange(&mut c, "big"), want);
    assert_eq!(recipes_info(&mut c, "tl_trims"), trims0 + 91);
    // Below the high-water mark nothing is cut even when over n.
    lpush_many(&mut c, "big2", &items);
    assert_eq!(
        q::<i64>(
            &mut c,
            &["TL.PUSH", "big2", "new", "MAXLEN", "10", "SLACK", "200"]
        ),
        101
    );
    // Exactly at the high-water mark (102 >= 10 + 92) it is cut.
    assert_eq!(
        q::<i64>(
            &mut c,
            &["TL.PUSH", "big2", "n2", "MAXLEN", "10", "SLACK", "92"]
        ),
        10
    );
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "big2"]), 10);
}

fn run_model(c: &mut Conn, seed: u64, ops: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let keys = ["m0", "m1", "m2"];
    let pool = ["a", "b", "c", "d", "e", "a\0b", "x y"];
    let mut model: Vec<VecDeque<String>> = vec![VecDeque::new(); keys.len()];
    let mut default_maxlen: usize = 0;
    q_ok(c, &["CONFIG", "SET", "recipes.tl-default-maxlen", "0"]);
    let mut log: Vec<String> = Vec::new();
    for op in 0..ops {
        let k = rng.gen_range(0..keys.len());
        let key = keys[k];
        let m = &mut model[k];
        let roll = rng.gen_range(0..100);
        if roll < 3 {
            default_maxlen = [0, 1, 4, 9, 20][rng.gen_range(0..5)];
            let v = default_maxlen.to_string();
            log.push(format!("CONFIG SET recipes.tl-default-maxlen {v}"));
            q_ok(c, &["CONFIG", "SET", "recipes.tl-default-maxlen", &v]);
        } else if roll < 70 {
            let item = pool[rng.gen_range(0..pool.len())].to_string();
            let mut args: Vec<String> = vec!["TL.PUSH".into(), key.into(), item.clone()];
            let mut opts: Vec<Vec<String>> = Vec::new();
            let given = rng.gen_bool(0.7);
            let maxlen = if given {
                let n: usize = rng.gen_range(0..25);
                opts.push(vec!["MAXLEN".into(), n.to_string()]);
                n
            } else {
                default_maxlen
            };
            let slack = if rng.gen_bool(0.6) {
                let sl: usize = rng.gen_range(0..12);
                opts.push(vec!["SLACK".into(), sl.to_string()]);
                sl
            } else {
                0
            };
            // random option order
            if opts.len() == 2 && rng.gen_bool(0.5) {
                opts.swap(0, 1);
            }
            for o in opts {
                args.extend(o);
            }
            if slack > 0 && !given && default_maxlen == 0 {
                let a: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
                let err = expect_err(c, &cmd(&a));
                assert!(
                    err.contains("SLACK needs MAXLEN"),
                    "seed {seed} op {op}: {err}"
                );
                continue;
            }
            m.push_front(item);
            let t = model_trim(m.len(), maxlen, slack);
            for _ in 0..t {
                m.pop_back();
            }
            let a: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
            log.push(a.join(" "));
            let got = q::<i64>(c, &a);
            assert_eq!(
                got,
                m.len() as i64,
                "seed {seed} op {op}: {:?} (default {default_maxlen})\nlast ops: {:?}",
                a,
                &log[log.len().saturating_sub(10)..]
            );
        } else if roll < 90 {
            let item = pool[rng.gen_range(0..pool.len())].to_string();
            let count: usize = rng.gen_range(0..4);
            let mut args: Vec<String> = vec!["TL.REM".into(), key.into(), item.clone()];
            let want = if count == 1 && rng.gen_bool(0.5) {
                1 // default COUNT
            } else {
                args.push("COUNT".into());
                args.push(count.to_string());
                if count == 0 {
                    usize::MAX
                } else {
                    count
                }
            };
            let mut removed = 0usize;
            let mut i = 0;
            while i < m.len() && removed < want {
                if m[i] == item {
                    m.remove(i);
                    removed += 1;
                } else {
                    i += 1;
                }
            }
            let a: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
            log.push(a.join(" "));
            let got = q::<i64>(c, &a);
            assert_eq!(
                got,
                removed as i64,
                "seed {seed} op {op}: {:?}\nlast ops: {:?}",
                a,
                &log[log.len().saturating_sub(10)..]
            );
        } else {
            // TL.RANGE with random window, checked against the model.
            let off: usize = rng.gen_range(0..30);
            let cnt: usize = rng.gen_range(0..15);
            let got = q::<Vec<String>>(
                c,
                &[
                    "TL.RANGE",
                    key,
                    "OFFSET",
                    &off.to_string(),
                    "COUNT",
                    &cnt.to_string(),
                ],
            );
            let want: Vec<String> = m.iter().skip(off).take(cnt).cloned().collect();
            assert_eq!(
                got, want,
                "seed {seed} op {op}: TL.RANGE {key} OFFSET {off} COUNT {cnt}"
            );
            assert_eq!(
                q::<i64>(c, &["TL.LEN", key]),
                m.len() as i64,
                "seed {seed} op {op}: TL.LEN"
            );
        }
        if op % 50 == 49 || op + 1 == ops {
            for (i, key) in keys.iter().enumerate() {
                let want: Vec<String> = model[i].iter().cloned().collect();
                assert_eq!(lrange(c, key), want, "seed {seed} op {op}: LRANGE {key}");
                assert_eq!(
                    exists(c, key),
                    !want.is_empty(),
                    "seed {seed} op {op}: EXISTS {key}"
                );
            }
        }
    }
}

#[test]
fn model_based_random_sequences() {
    let srv = Server::start();
    let mut c = srv.conn();
    for seed in seeds_from_env("TL_SEED", 4) {
        q_ok(&mut c, &["FLUSHALL"]);
        run_model(&mut c, seed, 1500);
    }
}

#[test]
fn long_lists() {
    let srv = Server::start();
    let mut c = srv.conn();
    const N: usize = 100_000;
    // items[0] is pushed first -> tail (index N-1); items[N-1] is the head.
    let items: Vec<String> = (0..N).map(|i| format!("it{i}")).collect();
    lpush_many(&mut c, "big", &items);
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "big"]), N as i64);

    // RANGE near the end.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "big", "OFFSET", &(N - 3).to_string()]),
        s(&["it2", "it1", "it0"])
    );
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            &["TL.RANGE", "big", "OFFSET", "50000", "COUNT", "3"]
        ),
        s(&["it49999", "it49998", "it49997"])
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["TL.RANGE", "big", "OFFSET", &N.to_string()]),
        Vec::<String>::new()
    );

    // REM deep: the tail item, and one in the middle.
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "big", "it0"]), 1);
    assert_eq!(q::<i64>(&mut c, &["TL.LEN", "big"]), (N - 1) as i64);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LINDEX", "big", "-1"]),
        s(&["it1"])
    );
    assert_eq!(
        q::<i64>(&mut c, &["TL.REM", "big", "it30000", "COUNT", "0"]),
        1
    );
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "big", "it30000"]), 0);
    assert_eq!(
        q::<i64>(&mut c, &["TL.REM", "big", "nothere", "COUNT", "0"]),
        0
    );
    assert_eq!(q::<i64>(&mut c, &["LLEN", "big"]), (N - 2) as i64);
    // Neighbours intact.
    let pos = q::<i64>(&mut c, &["LPOS", "big", "it30001"]);
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            &["LRANGE", "big", &pos.to_string(), &(pos + 1).to_string()]
        ),
        s(&["it30001", "it29999"])
    );
    // Several deep duplicates, removed all at once and some by COUNT.
    let mut dup = redis::cmd("RPUSH");
    dup.arg("big");
    for _ in 0..5 {
        dup.arg("dup");
    }
    let _: i64 = dup.query(&mut c).unwrap();
    q_ok(&mut c, &["LSET", "big", "70000", "dup"]); // overwrites one item
    q_ok(&mut c, &["LSET", "big", "90000", "dup"]);
    let len0 = q::<i64>(&mut c, &["LLEN", "big"]);
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "big", "dup", "COUNT", "3"]), 3);
    assert_eq!(q::<i64>(&mut c, &["LLEN", "big"]), len0 - 3);
    // The two head-most (LSET ones) and the first RPUSHed one went.
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LRANGE", "big", "-4", "-1"]),
        s(&["dup", "dup", "dup", "dup"])
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LINDEX", "big", "-5"]),
        s(&["it1"])
    );
    assert_eq!(q::<i64>(&mut c, &["TL.REM", "big", "dup", "COUNT", "0"]), 4);
    assert_eq!(q::<i64>(&mut c, &["LLEN", "big"]), len0 - 7);
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LINDEX", "big", "-1"]),
        s(&["it1"])
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["LINDEX", "big", "0"]),
        s(&[&format!("it{}", N - 1)])
    );

    // A trim of many items at once.
    let items: Vec<String> = (0..10_000).map(|i| format!("t{i}")).collect();
    lpush_many(&mut c, "cut", &items);
    assert_eq!(
        q::<i64>(&mut c, &["TL.PUSH", "cut", "new", "MAXLEN", "10"]),
        10
    );
    assert_eq!(q::<i64>(&mut c, &["LLEN", "cut"]), 10);
    let mut want = vec!["new".to_string()];
    want.extend((9991..10_000).rev().map(|i| format!("t{i}")));
    assert_eq!(lrange(&mut c, "cut"), want);
    assert_eq!(recipes_info(&mut c, "tl_trims"), 9991);
    // And the whole 100k list cut to 1 in one push.
    assert_eq!(
        q::<i64>(&mut c, &["TL.PUSH", "big", "only", "MAXLEN", "1"]),
        1
    );
    assert_eq!(lrange(&mut c, "big"), s(&["only"]));
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
}
