//! TOPN latency on one wide key (issue 14): server-side times (SLOWLOG, us) of
//! reads of `LAST k` and of the whole window, on a master and its replica, the
//! slowest `TOPN.INCR` while one key grows to 1,000,000 members, and the time
//! of `DEL` on that key.
//!
//! Run: `cargo build --release && cargo run --release --example topn_latency`
//! (`RECIPES_MODULE`: the .so, default `target/release/librecipes.so`;
//! `REDIS_SERVER`: default `redis-server`; `TOPN_GROW`: members of the growth
//! key, default 1,000,000).
//!
//! The key: `BUCKET 1 WINDOW 24`, 24 buckets of 50,000 events (BY 1) over
//! 200,000 members, popularity rising with the member number in the first 12
//! buckets and falling in the last 12 (about 43,000 distinct members a bucket).
//! Its buckets are seconds in the near future, so the fill (about 10 s) stays
//! inside the window at the server's time. Every read is checked against the
//! exact answer computed here; a wrong answer fails the run. Reads are at `AT` =
//! the newest bucket, first 3 s after it, then once 9 buckets have aged out of
//! the running total (the server's time 9 s past the window).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BUCKETS: i64 = 24;
const EVENTS: usize = 50_000;
const MEMBERS: u64 = 200_000;
const KEY: &str = "topn:wide";
const LASTS: [u32; 5] = [1, 2, 6, 12, 24];
const READS: usize = 15;

struct Server {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("port").port()
}

fn start(module: &str, replica_of: Option<u16>) -> Server {
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("topn-latency-{port}"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let server = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let mut cmd = Command::new(server);
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--loadmodule", module])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(p) = replica_of {
        cmd.args(["--replicaof", "127.0.0.1", &p.to_string()]);
    }
    let child = cmd.spawn().expect("start redis-server");
    let s = Server { child, port, dir };
    let deadline = Instant::now() + Duration::from_secs(15);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server not up in 15 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    s
}

fn conn(s: &Server) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{}/", s.port))
        .and_then(|c| c.get_connection())
        .expect("connect")
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn cmd(c: &mut redis::Connection, args: &[String]) -> redis::Value {
    let mut k = redis::cmd(&args[0]);
    for a in &args[1..] {
        k.arg(a);
    }
    k.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Sends RESP commands down one socket while a thread drains the one-line replies.
fn pipe(port: u16, commands: impl Iterator<Item = Vec<String>>) {
    let mut w = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let r = w.try_clone().expect("clone");
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(r);
        let mut want = None;
        let (mut got, mut line) = (0usize, String::new());
        loop {
            if want.is_none() {
                want = rx.try_recv().ok();
            }
            if want == Some(got) {
                return;
            }
            line.clear();
            r.read_line(&mut line).expect("reply");
            assert!(!line.starts_with('-'), "error reply: {line}");
            got += 1;
        }
    });
    let (mut buf, mut sent) = (Vec::new(), 0usize);
    for args in commands {
        buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in &args {
            buf.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        sent += 1;
        if buf.len() > 1 << 16 {
            w.write_all(&buf).expect("send");
            buf.clear();
        }
    }
    w.write_all(&buf).expect("send");
    tx.send(sent).expect("reader");
    reader.join().expect("reader");
}

fn member(m: u64) -> String {
    format!("{}", 100_000_000 + m * 37)
}

/// The events: per bucket, 50,000 members drawn with density rising (first half) or
/// falling (second half) linearly with the member number.
fn events(seed: u64) -> Vec<Vec<u64>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..BUCKETS)
        .map(|b| {
            (0..EVENTS)
                .map(|_| {
                    let x = (rng.gen::<f64>().sqrt() * MEMBERS as f64) as u64;
                    let m = x.min(MEMBERS - 1);
                    if b < BUCKETS / 2 {
                        m
                    } else {
                        MEMBERS - 1 - m
                    }
                })
                .collect()
        })
        .collect()
}

/// Exact top 10 (member, count) over buckets `lo..=hi` (0-based).
fn expected(ev: &[Vec<u64>], lo: usize, hi: usize) -> Vec<(String, i64)> {
    let mut sum: HashMap<u64, i64> = HashMap::new();
    for b in &ev[lo..=hi] {
        for &m in b {
            *sum.entry(m).or_default() += 1;
        }
    }
    let mut rows: Vec<(String, i64)> = sum.into_iter().map(|(m, c)| (member(m), c)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows.truncate(10);
    rows
}

fn rows(v: redis::Value) -> Vec<(String, i64)> {
    let redis::Value::Array(items) = v else {
        panic!("not an array: {v:?}")
    };
    items
        .chunks(2)
        .map(|p| match (&p[0], &p[1]) {
            (redis::Value::BulkString(m), redis::Value::Int(n)) => {
                (String::from_utf8_lossy(m).into_owned(), *n)
            }
            other => panic!("bad row {other:?}"),
        })
        .collect()
}

/// SLOWLOG durations (us) of the entries logged since the last reset, newest first.
fn slowlog(c: &mut redis::Connection) -> Vec<(i64, String)> {
    let redis::Value::Array(entries) = cmd(c, &words("SLOWLOG GET -1")) else {
        return vec![];
    };
    let mut out = vec![];
    for e in entries {
        if let redis::Value::Array(f) = e {
            if let (Some(redis::Value::Int(d)), Some(redis::Value::Array(a))) = (f.get(2), f.get(3))
            {
                let name = match a.first() {
                    Some(redis::Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                    _ => String::new(),
                };
                out.push((*d, name.to_ascii_uppercase()));
            }
        }
    }
    out
}

fn slowlog_all(c: &mut redis::Connection, threshold_us: i64) {
    cmd(c, &words("CONFIG SET slowlog-max-len 100000"));
    cmd(
        c,
        &words(&format!(
            "CONFIG SET slowlog-log-slower-than {threshold_us}"
        )),
    );
    cmd(c, &words("SLOWLOG RESET"));
}

/// Median and max server-side us of `READS` reads of `read`, each checked against `want`.
fn measure(c: &mut redis::Connection, read: &[String], want: &[(String, i64)]) -> (i64, i64) {
    slowlog_all(c, 0);
    for _ in 0..READS {
        let got = rows(cmd(c, read));
        assert_eq!(got, want, "{read:?} is not exact");
    }
    let mut d: Vec<i64> = slowlog(c)
        .into_iter()
        .filter(|(_, n)| n == "TOPN.TOP")
        .map(|(d, _)| d)
        .collect();
    d.sort_unstable();
    (d[d.len() / 2], d[d.len() - 1])
}

fn wait_synced(master: &mut redis::Connection, replica: &mut redis::Connection) {
    let field = |c: &mut redis::Connection, f: &str| -> i64 {
        let redis::Value::BulkString(b) = cmd(c, &words("INFO replication")) else {
            return -1;
        };
        let text = String::from_utf8_lossy(&b).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{f}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = field(master, "master_repl_offset");
        if m > 0 && field(replica, "slave_repl_offset") >= m {
            return;
        }
        assert!(Instant::now() < deadline, "replica not in sync in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sleep_until_ms(t: i64) {
    let d = t - now_ms();
    if d > 0 {
        std::thread::sleep(Duration::from_millis(d as u64));
    }
}

fn reads(
    label: &str,
    servers: &mut [(&str, &mut redis::Connection)],
    ev: &[Vec<u64>],
    newest_ms: i64,
    lasts: &[u32],
) {
    for &k in lasts {
        let read = words(&format!(
            "TOPN.TOP {KEY} 10 AT {newest_ms} LAST {k} WITHCOUNTS"
        ));
        let want = expected(ev, (BUCKETS as usize) - k as usize, BUCKETS as usize - 1);
        for (name, c) in servers.iter_mut() {
            let (med, max) = measure(c, &read, &want);
            println!("| {label} | LAST {k} | {name} | {med} | {max} |");
        }
    }
}

fn main() {
    let module = std::env::var("RECIPES_MODULE").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/librecipes.so").into()
    });
    let grow: usize = std::env::var("TOPN_GROW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    // Absolute: the server changes to its own --dir before it loads modules.
    let module = std::fs::canonicalize(&module)
        .unwrap_or_else(|e| panic!("{module}: {e}"))
        .to_string_lossy()
        .into_owned();
    println!("module: {module}");
    let master = start(&module, None);
    let replica = start(&module, Some(master.port));
    let mut mc = conn(&master);
    let mut rc = conn(&replica);

    if std::env::var("TOPN_ONLY").as_deref() != Ok("grow") {
        wide_key_reads(&master, &mut mc, &mut rc);
    }
    grow_and_del(&master, &mut mc, &mut rc, grow);
}

/// The wide key's reads on the master and the replica.
fn wide_key_reads(master: &Server, mc: &mut redis::Connection, rc: &mut redis::Connection) {
    // The wide key, bucket by bucket, in seconds just ahead of the server's time.
    let ev = events(14);
    let distinct: Vec<usize> = ev
        .iter()
        .map(|b| b.iter().collect::<std::collections::HashSet<_>>().len())
        .collect();
    let first_s = now_ms() / 1000 + 2;
    cmd(mc, &words(&format!("TOPN.CREATE {KEY} BUCKET 1 WINDOW 24")));
    let fill = Instant::now();
    pipe(
        master.port,
        ev.iter().enumerate().flat_map(|(b, ms)| {
            let at = ((first_s + b as i64) * 1000).to_string();
            ms.iter().map(move |&m| {
                vec![
                    "TOPN.INCR".into(),
                    KEY.into(),
                    member(m),
                    "AT".into(),
                    at.clone(),
                ]
            })
        }),
    );
    let newest_ms = (first_s + BUCKETS - 1) * 1000;
    println!(
        "filled {} events in {:.1} s; distinct members a bucket {}..{}",
        BUCKETS as usize * EVENTS,
        fill.elapsed().as_secs_f64(),
        distinct.iter().min().unwrap(),
        distinct.iter().max().unwrap()
    );
    wait_synced(mc, rc);
    let info = cmd(mc, &words(&format!("MEMORY USAGE {KEY} SAMPLES 0")));
    println!("MEMORY USAGE of the key: {info:?}");

    println!("\n| when | read | server | median us | max us |\n|---|---|---|---|---|");
    let mut servers = [("master", mc), ("replica", rc)];
    sleep_until_ms(newest_ms + 3000);
    reads(
        "3 s after the newest bucket",
        &mut servers,
        &ev,
        newest_ms,
        &LASTS,
    );
    sleep_until_ms(newest_ms + 1000 * 10);
    reads("9 buckets aged", &mut servers, &ev, newest_ms, &LASTS);
}

/// The slowest INCR while one key grows to `grow` members in one bucket, then its DEL.
fn grow_and_del(
    master: &Server,
    mc: &mut redis::Connection,
    rc: &mut redis::Connection,
    grow: usize,
) {
    // Growth of one key to `grow` members in one bucket, then DEL.
    cmd(mc, &words("FLUSHALL"));
    wait_synced(mc, rc);
    slowlog_all(mc, 500);
    slowlog_all(rc, 500);
    let t = Instant::now();
    pipe(
        master.port,
        (0..grow).map(|i| {
            vec![
                "TOPN.INCR".into(),
                "topn:grow".into(),
                format!("member:{i}"),
            ]
        }),
    );
    println!(
        "\ngrew topn:grow to {grow} members in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    wait_synced(mc, rc);
    for (name, c) in [("master", &mut *mc), ("replica", &mut *rc)] {
        let log = slowlog(c);
        let incr: Vec<i64> = log
            .iter()
            .filter(|(_, n)| n == "TOPN.INCR")
            .map(|(d, _)| *d)
            .collect();
        println!(
            "{name}: TOPN.INCR above 500 us: {}, above 1 ms: {}, slowest {} us",
            incr.len(),
            incr.iter().filter(|d| **d > 1000).count(),
            incr.iter().max().copied().unwrap_or(0)
        );
    }
    let mem = cmd(mc, &words("MEMORY USAGE topn:grow SAMPLES 0"));
    println!("MEMORY USAGE of topn:grow: {mem:?}");
    slowlog_all(mc, 0);
    let t = Instant::now();
    cmd(mc, &words("DEL topn:grow"));
    let client_us = t.elapsed().as_micros();
    let del = slowlog(mc)
        .into_iter()
        .find(|(_, n)| n == "DEL")
        .map_or(-1, |(d, _)| d);
    println!("DEL topn:grow: {del} us server-side ({client_us} us at the client)");
    wait_synced(mc, rc);
    let del = slowlog(rc)
        .into_iter()
        .find(|(_, n)| n == "DEL")
        .map_or(-1, |(d, _)| d);
    println!("replica: DEL above 500 us: {del} us (-1: none)");
}
