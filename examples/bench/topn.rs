//! The TOPN groups (top-N over a sliding window of time buckets) against the
//! recipe's hourly bucket zsets:
//! - `topn-write`: TOPN.INCR against its floor ZINCRBY and the recipe's Lua,
//!   and TOPN.INCRBY with 1, 10 and 100 pairs a call; a day's backfill with
//!   views and without (`topn_backfill.rs`);
//! - `topn-read`: TOPN.TOP24 against the recipe's union of 24 buckets x 50k
//!   members, and the memory of either layout;
//! - `topn-last`: `LAST k` reads against the recipe's union of the newest k
//!   bucket zsets (k = 1, 2, 6, 12, 24), popularity reversing half-way;
//! - `topn-idle`: reads of a key nobody writes any more, master and replica
//!   (starts a replica; waits about 30 s for 1 s buckets to pass);
//! - `topn-latency`: the slowest TOPN command across a bucket boundary.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::control::{
    replica_synced, reply_counts, sleep_checked, start_replica, text, wait_for, Conn,
};
use crate::group::{cmp, goal, op, Goal, Group, Load, Measure, Measured, Role, Scenario, Unit};
use crate::pipe::{enc, enc_line, now_ms, Gen, A};
use crate::report::median;
use crate::server::Server;
use crate::settings::{stopped, Settings};

const HOUR_MS: u64 = 3_600_000;
const TOPN_KEYS: u64 = 10;
const TOPN_POOL: u64 = 10_000;
const TOPN_READ_MEMBERS: u64 = 50_000;
const TOPN_BUCKETS: u64 = 24;
const TOPN_LAT_MEMBERS: u64 = 100_000;

const TOPN_LUA: &str = "local n = redis.call('ZINCRBY', KEYS[1], 1, ARGV[1])\n\
                        redis.call('EXPIRE', KEYS[1], 90000)\n\
                        return n";

pub(crate) fn member(i: u64) -> u64 {
    100_000_000 + i
}

/// Fill the hour bucket zsets `topn:<k>:<hour>` with every pool member once.
fn prefill_zsets(c: &mut Conn, expire: bool) -> Result<(), String> {
    let hour = now_ms() / HOUR_MS;
    const PER: u64 = 1000;
    let per_key = TOPN_POOL.div_ceil(PER);
    c.load("TOPN zset prefill", TOPN_KEYS * per_key, |i, out| {
        let (k, chunk) = (i / per_key, i % per_key);
        let mut args = vec![A::S("ZADD"), A::K2("topn:", k, hour)];
        for m in chunk * PER..((chunk + 1) * PER).min(TOPN_POOL) {
            args.push(A::S("1"));
            args.push(A::U(member(m)));
        }
        enc(out, &args);
    })?;
    if expire {
        c.load("TOPN zset expire", TOPN_KEYS, |k, out| {
            enc(
                out,
                &[A::S("EXPIRE"), A::K2("topn:", k, hour), A::S("90000")],
            )
        })?;
    }
    Ok(())
}

/// `TOPN.INCRBY key 1 member ...` with `pairs` members of the pool a call,
/// on the prefilled keys (a row per call, as redis-benchmark counts).
fn incrby_scenario(id: &'static str, pairs: u64) -> Scenario {
    let label = format!("TOPN.INCRBY key 1 member ... ({pairs} pairs a call)");
    Scenario::new(id, Role::Module, label, move |c| {
        prefill_topn(c)?;
        Ok(op(move |g, out| {
            let mut args = vec![A::S("TOPN.INCRBY"), A::K("topn:", g.below(TOPN_KEYS))];
            for _ in 0..pairs {
                args.extend([A::S("1"), A::U(member(g.below(TOPN_POOL)))]);
            }
            enc(out, &args);
            1
        }))
    })
    .requires(&["topn.incrby"])
    .param("pairs", pairs)
}

/// Every pool member counted once in each TOPN key.
fn prefill_topn(c: &mut Conn) -> Result<(), String> {
    c.load("TOPN prefill", TOPN_KEYS * TOPN_POOL, |i, out| {
        let (k, m) = (i / TOPN_POOL, i % TOPN_POOL);
        enc(out, &[A::S("TOPN.INCR"), A::K("topn:", k), A::U(member(m))]);
    })
}

pub(crate) fn write_group(_s: &Settings) -> Group {
    let (backfills, backfill_ratio) = crate::topn_backfill::measures();
    Group {
        reset_each: true,
        measures: backfills,
        scenarios: vec![
            Scenario::new("ZINCRBY", Role::Plain, "ZINCRBY key:<hour> 1 member", |c| {
                prefill_zsets(c, false)?;
                Ok(op(|g, out| {
                    let k = g.below(TOPN_KEYS);
                    let m = member(g.below(TOPN_POOL));
                    let key = A::K2("topn:", k, g.now_ms / HOUR_MS);
                    enc(out, &[A::S("ZINCRBY"), key, A::S("1"), A::U(m)]);
                    1
                }))
            }),
            Scenario::new("TOPN.INCR", Role::Module, "TOPN.INCR key member", |c| {
                prefill_topn(c)?;
                Ok(op(|g, out| {
                    let k = g.below(TOPN_KEYS);
                    let m = A::U(member(g.below(TOPN_POOL)));
                    enc(out, &[A::S("TOPN.INCR"), A::K("topn:", k), m]);
                    1
                }))
            })
            .requires(&["topn.incr"]),
            incrby_scenario("TOPN.INCRBY 1", 1),
            incrby_scenario("TOPN.INCRBY 10", 10),
            incrby_scenario("TOPN.INCRBY 100", 100),
            Scenario::new(
                "Lua",
                Role::Lua,
                "Lua recipe via EVALSHA: ZINCRBY key:<hour> 1 member; EXPIRE key:<hour> 90000",
                |c| {
                    prefill_zsets(c, true)?;
                    let sha = c.script_load(TOPN_LUA)?;
                    Ok(op(move |g, out| {
                        let k = g.below(TOPN_KEYS);
                        let m = member(g.below(TOPN_POOL));
                        let key = A::K2("topn:", k, g.now_ms / HOUR_MS);
                        enc(out, &[A::S("EVALSHA"), A::S(&sha), A::S("1"), key, A::U(m)]);
                        1
                    }))
                },
            ),
        ],
        compares: vec![
            cmp("TOPN.INCR", "ZINCRBY", Some(Goal::AtLeast(0.5))),
            cmp("TOPN.INCR", "Lua", None),
            // Calls a second: one of 10 events against 10 INCRs is a rate x 10.
            cmp("TOPN.INCRBY 1", "TOPN.INCR", None),
            cmp("TOPN.INCRBY 10", "TOPN.INCR", None),
            cmp("TOPN.INCRBY 100", "TOPN.INCR", None),
        ]
        .into_iter()
        .chain(backfill_ratio)
        .collect(),
        ..Group::new(
            "topn-write",
            format!(
                "TOPN write: {TOPN_KEYS} top-N keys, members from a pool of {TOPN_POOL} 9-digit ids \
                 (each already counted once), hourly buckets; baseline: one plain ZINCRBY (no expire)"
            ),
        )
    }
}

/// Count of member `m` in bucket `b` for the read group (same for both layouts).
fn read_count(b: u64, m: u64) -> u64 {
    let mut g = Gen::new(b.wrapping_mul(1_000_003) ^ m);
    1 + g.below(20)
}

pub(crate) fn read_group(_s: &Settings) -> Group {
    let hour = now_ms() / HOUR_MS;
    let first = hour + 1 - TOPN_BUCKETS;
    Group {
        setup: Some(Box::new(move |c: &mut Conn| {
            const PER: u64 = 1000;
            let per_bucket = TOPN_READ_MEMBERS.div_ceil(PER);
            eprintln!("  filling {TOPN_BUCKETS} bucket zsets ...");
            c.load("TOPN read: zsets", TOPN_BUCKETS * per_bucket, |i, out| {
                let (b, chunk) = (i / per_bucket, i % per_bucket);
                let mut args = vec![A::S("ZADD"), A::K("topn:z:", first + b)];
                for m in chunk * PER..((chunk + 1) * PER).min(TOPN_READ_MEMBERS) {
                    args.push(A::U(read_count(b, m)));
                    args.push(A::U(member(m)));
                }
                enc(out, &args);
            })?;
            if c.has("topn.incr")? {
                let n = TOPN_BUCKETS * TOPN_READ_MEMBERS;
                eprintln!("  filling the TOPN key ({n} TOPN.INCR) ...");
                c.load("TOPN read: TOPN.INCR", n, |i, out| {
                    let (b, m) = (i / TOPN_READ_MEMBERS, i % TOPN_READ_MEMBERS);
                    let (m, by) = (A::U(member(m)), A::U(read_count(b, m)));
                    let at = A::U((first + b) * HOUR_MS);
                    enc(out, &[A::S("TOPN.INCR"), A::S("topn:r"), m, A::S("BY"), by, A::S("AT"), at]);
                })?;
            }
            Ok(())
        })),
        scenarios: vec![
            Scenario::new(
                "ZUNIONSTORE",
                Role::Recipe,
                format!(
                    "ZUNIONSTORE tmp {TOPN_BUCKETS} <bucket keys>; ZREVRANGE tmp 0 9 WITHSCORES \
                     (1 client, no pipeline)"
                ),
                move |_| {
                    Ok(op(move |_, out| {
                        let mut args = vec![A::S("ZUNIONSTORE"), A::S("topn:tmp"), A::U(TOPN_BUCKETS)];
                        for b in 0..TOPN_BUCKETS {
                            args.push(A::K("topn:z:", first + b));
                        }
                        enc(out, &args);
                        enc_line(out, "ZREVRANGE topn:tmp 0 9 WITHSCORES");
                        2
                    }))
                },
            )
            .clients(1, Some(1)),
            // AT pins the window to the filled buckets even if the wall clock
            // crosses an hour during the bench.
            Scenario::command(
                "TOPN.TOP24",
                Role::Module,
                "TOPN.TOP24 key 10 AT <ms in the newest bucket>",
                move |_, out| {
                    let at = A::U((first + TOPN_BUCKETS - 1) * HOUR_MS + 1000);
                    enc(out, &[A::S("TOPN.TOP24"), A::S("topn:r"), A::S("10"), A::S("AT"), at])
                },
            )
            .requires(&["topn.top24", "topn.incr"]),
        ],
        measures: vec![
            Measure::new(
                "zsets",
                Role::Recipe,
                format!("{TOPN_BUCKETS} bucket zsets (sum of MEMORY USAGE)"),
                Unit::Bytes,
                move |c| {
                    let mut total = 0;
                    for b in 0..TOPN_BUCKETS {
                        total += c.memory_usage(&format!("topn:z:{}", first + b))?;
                    }
                    let note = format!("{} entries", TOPN_BUCKETS * TOPN_READ_MEMBERS);
                    Ok((total as f64, note).into())
                },
            ),
            Measure::new("TOPN key", Role::Module, "the TOPN key (MEMORY USAGE)", Unit::Bytes, |c| {
                Ok((c.memory_usage("topn:r")? as f64, "topn:r".to_string()).into())
            })
            .requires(&["topn.incr"]),
        ],
        compares: vec![
            cmp("TOPN.TOP24", "ZUNIONSTORE", Some(Goal::AtLeast(100.0))),
            cmp("TOPN key", "zsets", Some(Goal::AtMost(0.5))),
        ],
        ..Group::new(
            "topn-read",
            format!(
                "TOPN read: top 10 over {TOPN_BUCKETS} hourly buckets x {TOPN_READ_MEMBERS} distinct members \
                 (zsets topn:z:<hour> vs one TOPN key filled with TOPN.INCR ... BY c AT <hour>); \
                 baseline: the recipe's read (union of the buckets, then the top 10)"
            ),
        )
    }
}

const TOPN_LAT_TRIALS: usize = 3;

/// Max server-side time (SLOWLOG) of TOPN.* commands around a bucket boundary
/// where the expiring bucket and the newest one hold 100k members each; the
/// median over a few trials on fresh keys, since SLOWLOG times are wall-clock
/// and one preemption of the server by another process adds milliseconds.
fn boundary_latency(c: &mut Conn) -> Result<Measured, String> {
    let mut maxes = Vec::new();
    let mut notes = Vec::new();
    for trial in 0..TOPN_LAT_TRIALS {
        let (max, note) = boundary_trial(c, &format!("topn:lat:{trial}"))?;
        maxes.push(max as f64);
        notes.push(format!("      trial {}: max {max} us, {note}", trial + 1));
    }
    let med = median(&mut maxes).unwrap_or(0.0);
    let note = format!(
        "median of {TOPN_LAT_TRIALS} trials' max\n{}",
        notes.join("\n")
    );
    Ok((med, note).into())
}

/// One trial: returns the slowest TOPN.* call's duration (us) and stats.
fn boundary_trial(c: &mut Conn, key: &str) -> Result<(i64, String), String> {
    // The boundary crossed: the next one, so that every AT used keeps the key
    // alive (the oldest bucket's data, 24 h older, is not yet expired now).
    let t0 = (now_ms() / HOUR_MS + 1) * HOUR_MS;
    let oldest = t0 - TOPN_BUCKETS * HOUR_MS; // leaves the window at t0
    let newest = t0 - HOUR_MS;
    const MIDDLE: u64 = 1000; // members in each bucket in between
    eprintln!(
        "  filling {key}: 2 x {TOPN_LAT_MEMBERS} members + {} x {MIDDLE} ...",
        TOPN_BUCKETS - 2
    );
    let fill = 2 * TOPN_LAT_MEMBERS + (TOPN_BUCKETS - 2) * MIDDLE;
    c.load("TOPN latency fill", fill, |i, out| {
        let (at, m) = if i < TOPN_LAT_MEMBERS {
            (oldest, i)
        } else if i < 2 * TOPN_LAT_MEMBERS {
            (newest, i - TOPN_LAT_MEMBERS + TOPN_LAT_MEMBERS / 2) // half shared with the oldest
        } else {
            let j = i - 2 * TOPN_LAT_MEMBERS;
            (oldest + (1 + j / MIDDLE) * HOUR_MS, j % MIDDLE)
        };
        let (m, at) = (A::U(member(m)), A::U(at + 1000));
        enc(out, &[A::S("TOPN.INCR"), A::S(key), m, A::S("AT"), at]);
    })?;
    // Writes and reads from 1 s before the boundary to 5 s after it, 1 ms apart.
    const LOG_LEN: u64 = 1_000_000;
    c.slowlog_arm(LOG_LEN, 0)?;
    let mut g = Gen::new(11);
    let (from, n) = (t0 - 1000, 6000u64);
    let res = c.load("TOPN boundary crossing", n, |i, out| {
        let at = A::U(from + i);
        if i % 10 == 5 {
            enc(
                out,
                &[A::S("TOPN.TOP24"), A::S(key), A::S("10"), A::S("AT"), at],
            );
        } else {
            let m = A::U(member(g.below(2 * TOPN_LAT_MEMBERS)));
            enc(out, &[A::S("TOPN.INCR"), A::S(key), m, A::S("AT"), at]);
        }
    });
    let log = c.slowlog_take(LOG_LEN);
    res?;
    // (duration us, command name, AT relative to the boundary in ms)
    let mut durs: Vec<(i64, String, i64)> = Vec::new();
    for e in log? {
        let name = e.name();
        if !name.starts_with("TOPN.") {
            continue;
        }
        let at = e
            .args
            .iter()
            .position(|a| a.eq_ignore_ascii_case("AT"))
            .and_then(|i| e.args.get(i + 1))
            .and_then(|x| x.parse::<i64>().ok())
            .map_or(0, |at| at - t0 as i64);
        durs.push((e.us, name, at));
    }
    if durs.len() < n as usize {
        return Err(format!(
            "SLOWLOG holds only {} of the {n} TOPN.* calls",
            durs.len()
        ));
    }
    durs.sort_by_key(|d| std::cmp::Reverse(d.0));
    let p = |q: f64| durs[((durs.len() - 1) as f64 * (1.0 - q)) as usize].0;
    let slowest: Vec<String> = durs
        .iter()
        .take(5)
        .map(|(d, name, at)| format!("{d} us {name} at {at:+} ms"))
        .collect();
    let before = durs.iter().find(|d| d.2 < 0).map_or(0, |d| d.0);
    let over_1ms = durs.iter().filter(|d| d.0 > 1000).count();
    c.query::<()>(redis::cmd("UNLINK").arg(key))?;
    Ok((
        durs[0].0,
        format!(
            "{} calls, p50 {} us, p99 {} us, {over_1ms} over 1 ms, max before the boundary {before} us; \
             slowest (AT relative to the boundary): {}",
            durs.len(),
            p(0.5),
            p(0.99),
            slowest.join(", ")
        ),
    ))
}

pub(crate) fn latency_group(_s: &Settings) -> Group {
    Group {
        measures: vec![Measure::new(
            "max latency",
            Role::Module,
            "slowest TOPN.* call across the boundary",
            Unit::Micros,
            boundary_latency,
        )
        .requires(&["topn.incr", "topn.top24"])],
        compares: vec![goal("max latency", Goal::AtMost(1000.0))],
        ..Group::new(
            "topn-latency",
            format!(
                "TOPN latency: server-side time (SLOWLOG) of TOPN.INCR / TOPN.TOP24 from 1 s before to 5 s after \
                 a bucket boundary; the expiring bucket and the newest one hold {TOPN_LAT_MEMBERS} members each"
            ),
        )
    }
}

// ----------------------------------------------------------------------
// Reads of an idle key, and of the LAST k buckets, on 24 buckets x 50k
// members whose popularity reverses half-way through the window
// ----------------------------------------------------------------------

const TOPN_REV_MEMBERS: u64 = 50_000;
/// Buckets between the newest bucket written and the idle read.
const TOPN_IDLE_AFTER: u64 = 18;
/// Calls whose server-side times (SLOWLOG) a read measure takes.
const TOPN_READ_CALLS: usize = 200;
/// Pause between the idle reads: a dashboard reads at arbitrary moments, also while the
/// server ages a bucket that just left the window (one a second with 1 s buckets).
const TOPN_READ_PAUSE: Duration = Duration::from_millis(10);
/// The windows of the `topn-last` reads, and the ids of their server-side times.
const LASTS: [u64; 5] = [1, 2, 6, 12, 24];
const LAST_US: [&str; 5] = [
    "LAST 1 us",
    "LAST 2 us",
    "LAST 6 us",
    "LAST 12 us",
    "LAST 24 us",
];
const UNION_US: [&str; 5] = [
    "union 1 us",
    "union 2 us",
    "union 6 us",
    "union 12 us",
    "union 24 us",
];

/// Count of member `m` in bucket `b` (0..24): one set of members leads the
/// first 12 buckets, the reverse set the last 12.
fn rev_count(b: u64, m: u64) -> u64 {
    let rank = if b < TOPN_BUCKETS / 2 {
        m
    } else {
        TOPN_REV_MEMBERS - 1 - m
    };
    1 + (TOPN_REV_MEMBERS - rank) / 1000
}

/// Fills the TOPN key `key` with buckets `first .. first + 24` (of `bucket_ms`), bucket by
/// bucket, and the zsets `<zset_prefix><bucket>` of the buckets `zsets` (indexes 0..24).
fn rev_fill(
    c: &mut Conn,
    key: &str,
    bucket_ms: u64,
    first: u64,
    zset_prefix: &'static str,
    zsets: std::ops::Range<u64>,
) -> Result<(), String> {
    let n = TOPN_BUCKETS * TOPN_REV_MEMBERS;
    eprintln!("  filling {key}: {n} TOPN.INCR ...");
    c.load("TOPN reversing fill", n, |i, out| {
        let (b, m) = (i / TOPN_REV_MEMBERS, i % TOPN_REV_MEMBERS);
        let (m, by) = (A::U(member(m)), A::U(rev_count(b, m)));
        let at = A::U((first + b) * bucket_ms + 1);
        enc(
            out,
            &[
                A::S("TOPN.INCR"),
                A::S(key),
                m,
                A::S("BY"),
                by,
                A::S("AT"),
                at,
            ],
        );
    })?;
    const PER: u64 = 1000;
    let per_bucket = TOPN_REV_MEMBERS.div_ceil(PER);
    let (z0, nz) = (zsets.start, zsets.end - zsets.start);
    eprintln!("  filling {nz} bucket zsets ...");
    c.load("TOPN reversing zsets", nz * per_bucket, |i, out| {
        let (b, chunk) = (z0 + i / per_bucket, i % per_bucket);
        let mut args = vec![A::S("ZADD"), A::K(zset_prefix, first + b)];
        for m in chunk * PER..((chunk + 1) * PER).min(TOPN_REV_MEMBERS) {
            args.push(A::U(rev_count(b, m)));
            args.push(A::U(member(m)));
        }
        enc(out, &args);
    })
}

/// Server-side times (SLOWLOG, us) of `n` operations run one at a time, `pause` apart (reads
/// at arbitrary moments, not in a burst), each made of the commands `op(i)` returns
/// (whitespace-separated lines); per operation, the sum of its commands' times.
pub(crate) fn slowlog_op_us(
    c: &mut Conn,
    n: usize,
    pause: Duration,
    op: impl Fn(usize) -> Vec<String>,
) -> Result<Vec<i64>, String> {
    let names: Vec<String> = op(0)
        .iter()
        .map(|l| {
            let name = l.split_whitespace().next().unwrap_or("");
            name.to_ascii_uppercase()
        })
        .collect();
    const LOG_LEN: u64 = 100_000;
    c.slowlog_arm(LOG_LEN, 0)?;
    let mut run = || -> Result<(), String> {
        for i in 0..n {
            for line in op(i) {
                c.run(&line)?;
            }
            if !pause.is_zero() {
                std::thread::sleep(pause);
            }
        }
        Ok(())
    };
    let res = run();
    let log = c.slowlog_take(LOG_LEN);
    res?;
    let durs: Vec<i64> = log?
        .iter()
        .filter(|e| names.contains(&e.name()))
        .map(|e| e.us)
        .collect();
    if durs.len() != n * names.len() {
        return Err(format!(
            "SLOWLOG holds {} entries of {names:?}, expected {}",
            durs.len(),
            n * names.len()
        ));
    }
    Ok(durs.chunks(names.len()).map(|c| c.iter().sum()).collect())
}

/// `(median, note with p50 / p99 / max)` of server-side times.
fn us_summary(mut v: Vec<i64>, what: &str) -> Measured {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    let note = format!(
        "median of {} {what}; p99 {} us, max {} us",
        v.len(),
        at(0.99),
        v[v.len() - 1]
    );
    (at(0.5) as f64, note).into()
}

/// The idle key's zsets that the recipe's union of the window at `now_ms` names (24 keys; the
/// older ones no longer exist, as the recipe's TTL would have removed them).
fn idle_union(now_ms: u64) -> Vec<String> {
    let hi = now_ms / 1000;
    let keys: Vec<String> = (hi + 1 - TOPN_BUCKETS..=hi)
        .map(|b| format!("topn:iz:{b}"))
        .collect();
    vec![
        format!("ZUNIONSTORE topn:itmp {TOPN_BUCKETS} {}", keys.join(" ")),
        "ZREVRANGE topn:itmp 0 9 WITHSCORES".into(),
    ]
}

/// The topn-idle setup: a replica, the idle key and the zsets of its window, then the wait
/// until both servers have aged the buckets that left the window by themselves.
fn idle_setup(c: &mut Conn, replica: &RefCell<Option<Server>>) -> Result<(), String> {
    if !c.has("topn.incr")? {
        return Ok(());
    }
    let rport = {
        let r = start_replica(c.port())?;
        let port = r.port;
        *replica.borrow_mut() = Some(r);
        port
    };
    c.cmd("TOPN.CREATE topn:idle BUCKET 1 WINDOW 24")?;
    // Oldest bucket 14 s ago: every event is inside the window when written (future
    // buckets are), whatever the fill takes.
    let first = now_ms() / 1000 - 14;
    let newest = first + TOPN_BUCKETS - 1;
    let read_at = (newest + TOPN_IDLE_AFTER) * 1000;
    // The buckets still inside the window at the read: zsets for the recipe's union.
    let kept = TOPN_BUCKETS - TOPN_IDLE_AFTER;
    rev_fill(
        c,
        "topn:idle",
        1000,
        first,
        "topn:iz:",
        TOPN_BUCKETS - kept..TOPN_BUCKETS,
    )?;
    let mut rc = Conn::open(rport).map_err(|e| format!("replica: {e}"))?;
    eprintln!("  waiting for the replica, then {TOPN_IDLE_AFTER} s of no writes ...");
    wait_for("the replica in sync", Duration::from_secs(120), || {
        replica_synced(c, &mut rc)
    })?;
    sleep_checked(Duration::from_millis(
        (read_at + 300).saturating_sub(now_ms()),
    ))?;
    // Each server's timer has aged the buckets that left the window by itself.
    let aged = |c: &mut Conn| c.info_int("recipes", "recipes_topn_aged_buckets");
    let deadline = Instant::now() + Duration::from_secs(60);
    while aged(c)? < TOPN_IDLE_AFTER as i64 || aged(&mut rc)? < TOPN_IDLE_AFTER as i64 {
        if Instant::now() > deadline || stopped() {
            return Err(format!(
                "buckets aged: master {}, replica {} (expected {TOPN_IDLE_AFTER})",
                aged(c)?,
                aged(&mut rc)?
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The answer is the union's (counts compared: ties order differently).
    let top = c.cmd("TOPN.TOP topn:idle 10 WITHCOUNTS")?;
    let mut union = redis::Value::Nil;
    for line in idle_union(now_ms()) {
        union = c.cmd(&line)?;
    }
    if reply_counts(&top) != reply_counts(&union) || reply_counts(&top).len() != 10 {
        return Err(format!(
            "TOPN.TOP and the union disagree: {} vs {}",
            text(&top),
            text(&union)
        ));
    }
    Ok(())
}

/// `TOPN.TOP topn:idle 10` on `c`: server-side times of reads 10 ms apart.
fn idle_reads(c: &mut Conn) -> Result<Measured, String> {
    let v = slowlog_op_us(c, TOPN_READ_CALLS, TOPN_READ_PAUSE, |_| {
        vec!["TOPN.TOP topn:idle 10".into()]
    })?;
    Ok(us_summary(v, "reads, 10 ms apart"))
}

pub(crate) fn idle_group(_s: &Settings) -> Group {
    // The replica lives as long as the group (its measures use it).
    let replica: Rc<RefCell<Option<Server>>> = Rc::new(RefCell::new(None));
    let (setup_replica, read_replica) = (replica.clone(), replica);
    Group {
        setup: Some(Box::new(move |c: &mut Conn| idle_setup(c, &setup_replica))),
        measures: vec![
            Measure::new(
                "idle master",
                Role::Module,
                "TOPN.TOP key 10 (server's time) on the master",
                Unit::Micros,
                idle_reads,
            )
            .requires(&["topn.incr"])
            .param("side", "master"),
            Measure::new(
                "idle replica",
                Role::Module,
                "TOPN.TOP key 10 (server's time) on the replica",
                Unit::Micros,
                move |_| {
                    let port = read_replica.borrow().as_ref().map(|r| r.port).ok_or("no replica")?;
                    idle_reads(&mut Conn::open(port).map_err(|e| format!("replica: {e}"))?)
                },
            )
            .requires(&["topn.incr"])
            .param("side", "replica"),
            Measure::new(
                "union (idle)",
                Role::Recipe,
                "recipe: ZUNIONSTORE tmp 24 <window's bucket keys, 6 left>; ZREVRANGE tmp 0 9 WITHSCORES",
                Unit::Micros,
                |c| {
                    let v = slowlog_op_us(c, 7, Duration::ZERO, |_| idle_union(now_ms()))?;
                    Ok(us_summary(v, "unions"))
                },
            )
            .requires(&["topn.incr"]),
        ],
        compares: vec![
            cmp("union (idle)", "idle master", None),
            goal("idle master", Goal::AtMost(1000.0)),
            goal("idle replica", Goal::AtMost(1000.0)),
        ],
        ..Group::new(
            "topn-idle",
            format!(
                "TOPN idle key: BUCKET 1 WINDOW 24, {TOPN_BUCKETS} buckets x {TOPN_REV_MEMBERS} members \
                 (popularity reverses half-way), then no writes; TOPN.TOP key 10 at the server's time \
                 {TOPN_IDLE_AFTER} buckets after the newest bucket written, on the master and on a \
                 replica (server-side, SLOWLOG); baseline: the recipe's union of the window's bucket zsets"
            ),
        )
    }
}

/// `TOPN.TOP topn:l 10 LAST k AT <ms in the newest bucket>`.
fn last_cmd(newest: u64, k: u64) -> String {
    format!("TOPN.TOP topn:l 10 LAST {k} AT {}", newest * HOUR_MS + 1000)
}

/// The recipe's read of the newest `k` hourly bucket zsets `topn:lz:<bucket>` (a union, or
/// one zset).
pub(crate) fn last_union(newest: u64, k: u64) -> Vec<String> {
    last_union_of("topn:lz:", newest, k)
}

/// [`last_union`] of the bucket zsets `<prefix><bucket>`.
pub(crate) fn last_union_of(prefix: &str, newest: u64, k: u64) -> Vec<String> {
    if k == 1 {
        return vec![format!("ZREVRANGE {prefix}{newest} 0 9 WITHSCORES")];
    }
    let keys: Vec<String> = (newest + 1 - k..=newest)
        .map(|b| format!("{prefix}{b}"))
        .collect();
    vec![
        format!("ZUNIONSTORE topn:ltmp {k} {}", keys.join(" ")),
        "ZREVRANGE topn:ltmp 0 9 WITHSCORES".into(),
    ]
}

/// A scenario of the whitespace-separated command lines `lines`, one client, no pipeline.
fn lines_scenario(id: &'static str, role: Role, label: String, lines: Vec<String>) -> Scenario {
    Scenario::new(id, role, label, move |_| -> Result<Load, String> {
        let lines = lines.clone();
        Ok(op(move |_, out| {
            for l in &lines {
                enc_line(out, l);
            }
            lines.len()
        }))
    })
    .clients(1, Some(1))
}

fn union_label(k: u64) -> String {
    if k == 1 {
        "ZREVRANGE <newest bucket zset> 0 9 WITHSCORES".to_string()
    } else {
        format!("ZUNIONSTORE tmp {k} <newest {k} bucket zsets>; ZREVRANGE tmp 0 9 WITHSCORES")
    }
}

pub(crate) fn last_group(_s: &Settings) -> Group {
    let hour = now_ms() / HOUR_MS;
    let first = hour + 1 - TOPN_BUCKETS;
    let newest = hour;
    let last_scenario = |id, k| {
        let label = format!("{} (1 client)", last_cmd(newest, k));
        lines_scenario(id, Role::Module, label, vec![last_cmd(newest, k)])
            .requires(&["topn.incr"])
            .param("window_buckets", k)
    };
    let union_scenario = |id, k| {
        let label = format!("{} (1 client)", union_label(k));
        lines_scenario(id, Role::Recipe, label, last_union(newest, k)).param("window_buckets", k)
    };
    // Server-side times against the window: TOPN's reads, then the recipe's (slower: fewer).
    let mut measures: Vec<Measure> = LASTS
        .into_iter()
        .zip(LAST_US)
        .map(|(k, id)| {
            Measure::new(
                id,
                Role::Module,
                format!("TOPN.TOP key 10 LAST {k} (server-side)"),
                Unit::Micros,
                move |c| {
                    let v = slowlog_op_us(c, 50, Duration::ZERO, |_| vec![last_cmd(newest, k)])?;
                    Ok(us_summary(v, "reads"))
                },
            )
            .requires(&["topn.incr"])
            .param("window_buckets", k)
        })
        .collect();
    measures.extend(LASTS.into_iter().zip(UNION_US).map(|(k, id)| {
        Measure::new(
            id,
            Role::Recipe,
            format!("recipe: {} (server-side)", union_label(k)),
            Unit::Micros,
            move |c| {
                let v = slowlog_op_us(c, 3, Duration::ZERO, |_| last_union(newest, k))?;
                Ok(us_summary(v, "reads"))
            },
        )
        .requires(&["topn.incr"])
        .param("window_buckets", k)
    }));
    // The recipe's server-side time over TOPN's, per window.
    let recipe_over_topn = UNION_US
        .into_iter()
        .zip(LAST_US)
        .map(|(u, l)| cmp(u, l, None));
    Group {
        setup: Some(Box::new(move |c: &mut Conn| {
            if !c.has("topn.incr")? {
                return Ok(());
            }
            rev_fill(c, "topn:l", HOUR_MS, first, "topn:lz:", 0..TOPN_BUCKETS)?;
            for k in LASTS {
                let top = c.cmd(&(last_cmd(newest, k) + " WITHCOUNTS"))?;
                let mut union = redis::Value::Nil;
                for line in last_union(newest, k) {
                    union = c.cmd(&line)?;
                }
                if reply_counts(&top) != reply_counts(&union) {
                    return Err(format!(
                        "LAST {k} and the union disagree: {} vs {}",
                        text(&top),
                        text(&union)
                    ));
                }
            }
            Ok(())
        })),
        scenarios: vec![
            union_scenario("union 12", 12),
            union_scenario("union 6", 6),
            union_scenario("zset 1", 1),
            last_scenario("LAST 12", 12),
            last_scenario("LAST 6", 6),
            last_scenario("LAST 1", 1),
        ],
        measures,
        compares: vec![
            cmp("LAST 12", "union 12", None),
            cmp("LAST 6", "union 6", None),
            cmp("LAST 1", "zset 1", None),
            goal("LAST 1 us", Goal::AtMost(5000.0)),
            goal("LAST 6 us", Goal::AtMost(5000.0)),
            goal("LAST 12 us", Goal::AtMost(5000.0)),
        ]
        .into_iter()
        .chain(recipe_over_topn)
        .collect(),
        ..Group::new(
            "topn-last",
            format!(
                "TOPN LAST k: hourly key, {TOPN_BUCKETS} buckets x {TOPN_REV_MEMBERS} members (popularity \
                 reverses half-way), read at the newest bucket; each against the recipe's read of the \
                 same k bucket zsets"
            ),
        )
    }
}
