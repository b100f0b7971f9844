//! Model-based exactness: random writes and reads of many shapes against
//! the naive model.
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Shape {
    bucket_s: i64,
    window: i64,
    members: usize,
    events: usize,
    span_buckets: i64,
    chunk: usize,
}

fn gen_by(rng: &mut StdRng) -> i64 {
    let r: f64 = rng.gen();
    if r < 0.80 {
        1
    } else if r < 0.88 {
        rng.gen_range(2..=50)
    } else if r < 0.95 {
        -rng.gen_range(1..=20)
    } else if r < 0.98 {
        0
    } else {
        rng.gen_range(1_000_000_000_000i64..10_000_000_000_000)
    }
}

fn check_against_model(
    c: &mut Conn,
    key: &str,
    model: &Model,
    universe: &[String],
    rng: &mut StdRng,
    ctx: &str,
) {
    let bm = model.bucket_ms;
    let w = model.window;
    let cl = model.clock.unwrap() * bm;
    let ts = [
        cl + rng.gen_range(0..bm),
        cl - bm,
        cl - 3 * bm + 1,
        cl - (w - 1) * bm,
        cl - w * bm,
        cl + 2 * bm + bm / 2,
        cl + (w - 1) * bm,
        cl + (w + 3) * bm,
        now_ms(),
    ];
    for &t in &ts {
        let got = top(c, key, 50, t);
        let want = model.top(50, t);
        assert_eq!(
            got, want,
            "{ctx}: TOPN.TOP {key} 50 AT {t} (clock bucket {:?})",
            model.clock
        );
        let mut sample: Vec<&str> = (0..60)
            .map(|_| universe[rng.gen_range(0..universe.len())].as_str())
            .collect();
        sample.push("never-seen");
        // the top members too (their counts are the most interesting)
        for (m, _) in want.iter().take(10) {
            sample.push(m.as_str());
        }
        let got = count(c, key, &sample, Some(t));
        let want: Vec<i64> = sample.iter().map(|m| model.count(m, t)).collect();
        assert_eq!(got, want, "{ctx}: TOPN.COUNT {key} {sample:?} AT {t}");
        // For LAST: never-seen, the top members and some others.
        let sample: Vec<&str> = sample[sample.len().saturating_sub(20)..].to_vec();
        if let Some(w24) = model.w24() {
            let got = top_ws(c, "TOPN.TOP24", key, 20, Some(t));
            assert_eq!(
                got,
                model.top_in(20, t, w24),
                "{ctx}: TOPN.TOP24 {key} 20 AT {t}"
            );
        }
        // LAST k: a random k, and the extremes.
        for k in [1, rng.gen_range(1..=w), w] {
            let n = [1, 10, 50][rng.gen_range(0..3)];
            assert_eq!(
                top_last(c, key, n, Some(t), k),
                model.top_in(n, t, k),
                "{ctx}: TOPN.TOP {key} {n} AT {t} LAST {k}"
            );
            let got = count_last(c, key, &sample, Some(t), Some(k));
            let want: Vec<i64> = sample.iter().map(|m| model.count_in(m, t, k)).collect();
            assert_eq!(got, want, "{ctx}: TOPN.COUNT {key} ... AT {t} LAST {k}");
        }
    }
    // LAST k at random times around the clock.
    for _ in 0..4 {
        let t = cl + rng.gen_range(-(w + 2) * bm..(w + 2) * bm);
        let k = rng.gen_range(1..=w);
        assert_eq!(
            top_last(c, key, 20, Some(t), k),
            model.top_in(20, t, k),
            "{ctx}: TOPN.TOP {key} 20 AT {t} LAST {k}"
        );
    }
    // The whole ranking at the clock.
    let t = cl + bm - 1;
    let got = top(c, key, 1_000_000, t);
    assert_eq!(
        got,
        model.top(usize::MAX, t),
        "{ctx}: full TOPN.TOP at the clock"
    );
    // A read without AT uses the server clock.
    let t0 = now_ms();
    let got = top_ws(c, "TOPN.TOP", key, 50, None);
    let t1 = now_ms();
    if t0 / bm == t1 / bm {
        assert_eq!(got, model.top(50, t0), "{ctx}: TOPN.TOP without AT");
    }
    let i = info(c, key);
    assert_eq!((i["bucket"] * 1000, i["window"]), (bm, w));
    assert_eq!(pexpiretime(c, key), model.expire_at(), "{ctx}: PEXPIRETIME");
}

fn run_model(c: &mut Conn, seed: u64, shape: &Shape, key: &str) {
    let mut rng = StdRng::seed_from_u64(seed);
    let bm = shape.bucket_s * 1000;
    let w = shape.window;
    q_ok(
        c,
        &[
            "TOPN.CREATE",
            key,
            "BUCKET",
            &shape.bucket_s.to_string(),
            "WINDOW",
            &w.to_string(),
        ],
    );
    let mut model = Model::new(shape.bucket_s, w);
    // Member names of varied lengths, so bytewise order differs from numeric order.
    let universe: Vec<String> = (0..shape.members)
        .map(|i| match i % 4 {
            0 => format!("u{i}"),
            1 => format!("user:{i}"),
            2 => format!("U{}", i * 7919 % 100_003),
            _ => format!("u{i}-x"),
        })
        .collect();
    // The events start two buckets ahead of the server's time and run ahead of it, so the
    // server-time rule for late events never rejects what the model's clock rule accepts.
    let base = (now_ms() / bm + 2) * bm;
    let mut cur = base;
    let step_max = (shape.span_buckets * bm * 2 / shape.events as i64).max(1);
    let mut i = 0;
    let mut checks = 0;
    while i < shape.events {
        let end = (i + shape.chunk).min(shape.events);
        let mut p = redis::pipe();
        let mut want = Vec::with_capacity(end - i);
        for j in i..end {
            if j == shape.events / 2 {
                cur += (w + 2) * bm; // the whole window passes at once
            }
            if j == shape.events * 3 / 4 {
                cur += 3 * bm;
            }
            cur += rng.gen_range(0..=step_max);
            let at = if j > 0 && rng.gen_bool(0.1) {
                (cur - rng.gen_range(0..(w + 3) * bm)).max(0)
            } else {
                cur
            };
            // skewed popularity
            let x: f64 = rng.gen();
            let m = &universe[((x * x * x) * shape.members as f64) as usize];
            let by = gen_by(&mut rng);
            p.cmd("TOPN.INCR")
                .arg(key)
                .arg(m)
                .arg("BY")
                .arg(by)
                .arg("AT")
                .arg(at);
            let clock_before = model.clock;
            want.push((
                model.incr(m, by, at).expect("model overflow"),
                m.clone(),
                by,
                at,
            ));
            // Sometimes check right after the clock entered a new bucket, while the bucket
            // that just left the window may not be retired yet.
            if clock_before.is_some() && model.clock != clock_before && rng.gen_bool(0.3) {
                break;
            }
        }
        let n = want.len();
        let got: Vec<i64> = p
            .query(c)
            .unwrap_or_else(|e| panic!("seed {seed}: pipeline failed: {}", err_text(&e)));
        for (k, (g, (wv, m, by, at))) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g,
                wv,
                "seed {seed}: reply of event {} TOPN.INCR {key} {m} BY {by} AT {at}",
                i + k
            );
        }
        i += n;
        checks += 1;
        check_against_model(
            c,
            key,
            &model,
            &universe,
            &mut rng,
            &format!("seed {seed}, after {i} events (check {checks})"),
        );
    }
}

#[test]
fn model_based_exactness() {
    let srv = Server::builder().module_args(AHEAD_OF_THE_CLOCK).start();
    let c = &mut srv.conn();
    let seed = seed_from_env("TOPN_SEED", 0);
    let shapes = [
        Shape {
            bucket_s: 60,
            window: 6,
            members: 2000,
            events: 20_000,
            span_buckets: 30,
            chunk: 1000,
        },
        Shape {
            bucket_s: 1,
            window: 50,
            members: 40,
            events: 5000,
            span_buckets: 150,
            chunk: 250,
        },
        Shape {
            bucket_s: 3600,
            window: 30,
            members: 300,
            events: 6000,
            span_buckets: 60,
            chunk: 500,
        },
        Shape {
            bucket_s: 600,
            window: 1,
            members: 100,
            events: 3000,
            span_buckets: 20,
            chunk: 300,
        },
    ];
    for (k, shape) in shapes.iter().enumerate() {
        run_model(c, seed.wrapping_add(k as u64), shape, &format!("model{k}"));
    }
}
