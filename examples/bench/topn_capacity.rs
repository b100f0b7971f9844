//! The `topn-capacity` group: TOPN with `CAPACITY m` (bounded buckets, each
//! count with its error) against RedisBloom's TOPK at about TOPK's memory
//! (k 10, width 2,000, depth 7), on four streams of 24 hourly buckets of
//! 50,000 events: Zipf (s = 1.5) over 1,000,000 members, Pareto whose leaders change
//! twice, a sudden new leader in the last two hours, and the Zipf stream
//! with a new leader in its last two hours whose events end it near the
//! day's tenth place (counted at 22 buckets' floors where it is absent, it
//! competes with members counted nearly exactly). For each: ingest
//! time, recall@10 over the 24 hours and over the newest hour
//! (`LAST 1`; TOPK has no window: its list against the hour's leaders), and
//! whether every bound listed held (the true count within `[count - error,
//! count]`, checked against the exact counts kept here). Then each key's
//! MEMORY USAGE against TOPK's (goal: at most), and a day of 5,000,000
//! distinct members, one event each, in a CAPACITY key and in an exact one.
//! And the Zipf stream in batches of 10 and 100 events a call, `TOPN.INCRBY`
//! against `TOPK.INCRBY` with the same batches.

use crate::control::Conn;
use crate::group::{cmp, Goal, Group, Measure, Role, Unit};
use crate::pipe::{enc, now_ms, A};
use crate::settings::Settings;
use crate::topn_topk::{batches, listed, recall, topk_incrby, topn_incrby};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::Instant;

const HOURS: u64 = 24;
const PER_HOUR: u64 = 50_000;
const HOUR_MS: u64 = 3_600_000;
/// Counters a bucket keeps: the most whose key stays within TOPK's memory
/// (114,368 B) on the four streams.
const CAPACITY: u64 = 117;
/// Distinct members of the day of one event each.
const DAY_MEMBERS: u64 = 5_000_000;

#[derive(Clone, Copy)]
enum Stream {
    Zipf,
    Shifting,
    NewLeader,
    NearTenth,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Zipf => "zipf",
            Stream::Shifting => "shifting",
            Stream::NewLeader => "new-leader",
            Stream::NearTenth => "near-tenth",
        }
    }

    /// (member, by, hours back), oldest first.
    fn events(self) -> Vec<(u64, u64, u64)> {
        let mut rng = StdRng::seed_from_u64(29);
        let mut out = Vec::with_capacity((HOURS * PER_HOUR) as usize);
        for h in 0..HOURS {
            for _ in 0..PER_HOUR {
                let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                let (m, by) = match self {
                    // Zipf(1.5)-like ranks (P(rank > r) ~ r^-0.5) over 1,000,000 members.
                    Stream::Zipf => ((u.powf(-1.0 / 0.5) as u64 - 1) % 1_000_000, 1),
                    Stream::Shifting => {
                        let m = (u.powf(-1.0 / 1.2) as u64 - 1) % 200_000;
                        let m = match h {
                            8..=15 => (m * 7_919 + 13) % 200_000,
                            16.. => (m * 104_729 + 7) % 200_000,
                            _ => m,
                        };
                        (m, rng.gen_range(1..=20))
                    }
                    Stream::NewLeader => {
                        let m = (u.powf(-1.0 / 1.2) as u64 - 1) % 200_000;
                        let leader = h >= HOURS - 2 && rng.gen_bool(0.05);
                        (if leader { 999_999 } else { m }, 1)
                    }
                    // About 17,000 events: the Zipf draw's tenth place
                    // counts about 17,500.
                    Stream::NearTenth => {
                        let m = (u.powf(-1.0 / 0.5) as u64 - 1) % 1_000_000;
                        let leader = h >= HOURS - 2 && rng.gen_bool(0.17);
                        (if leader { 1_999_999 } else { m }, 1)
                    }
                };
                out.push((m, by, HOURS - 1 - h));
            }
        }
        out
    }
}

/// Exact counts per member over the events `hours_back <= newest`.
fn exact(events: &[(u64, u64, u64)], newest: u64) -> HashMap<String, i64> {
    let mut counts = HashMap::new();
    for &(m, by, back) in events {
        if back <= newest {
            *counts.entry(format!("m{m}")).or_default() += by as i64;
        }
    }
    counts
}

fn top10(counts: &HashMap<String, i64>) -> Vec<String> {
    let mut all: Vec<(&String, &i64)> = counts.iter().collect();
    all.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    all.iter().take(10).map(|(m, _)| (*m).clone()).collect()
}

/// `TOPN.TOP key 10 [LAST k] WITHERRORS` rows, checked against `truth`:
/// returns the members and whether every bound held.
fn capped_top(
    c: &mut Conn,
    key: &str,
    last: Option<u64>,
    truth: &HashMap<String, i64>,
) -> Result<(Vec<String>, bool), String> {
    let mut cmd = redis::cmd("TOPN.TOP");
    cmd.arg(key).arg(10);
    if let Some(k) = last {
        cmd.arg("LAST").arg(k);
    }
    cmd.arg("WITHERRORS");
    let flat: Vec<redis::Value> = c.query(&cmd)?;
    let mut members = Vec::new();
    let mut held = true;
    for row in flat.chunks(3) {
        let (redis::Value::BulkString(m), redis::Value::Int(count), redis::Value::Int(error)) =
            (&row[0], &row[1], &row[2])
        else {
            return Err(format!("not a WITHERRORS row: {row:?}"));
        };
        let m = String::from_utf8_lossy(m).into_owned();
        let t = truth.get(&m).copied().unwrap_or(0);
        held &= count - error <= t && t <= *count;
        members.push(m);
    }
    Ok((members, held))
}

/// The key a stream is fed into, kept for [`memory`].
fn key(stream: Stream, topk: bool) -> String {
    format!(
        "cap:{}:{}",
        if topk { "topk" } else { "topn" },
        stream.name()
    )
}

/// The ids of a stream's measures (ingest, memory) into TOPN or TOPK.
fn ids(stream: Stream, topk: bool) -> (&'static str, &'static str) {
    match (stream, topk) {
        (Stream::Zipf, false) => ("TOPN cap zipf", "TOPN cap zipf memory"),
        (Stream::Zipf, true) => ("TOPK zipf", "TOPK zipf memory"),
        (Stream::Shifting, false) => ("TOPN cap shifting", "TOPN cap shifting memory"),
        (Stream::Shifting, true) => ("TOPK shifting", "TOPK shifting memory"),
        (Stream::NewLeader, false) => ("TOPN cap new-leader", "TOPN cap new-leader memory"),
        (Stream::NewLeader, true) => ("TOPK new-leader", "TOPK new-leader memory"),
        (Stream::NearTenth, false) => ("TOPN cap near-tenth", "TOPN cap near-tenth memory"),
        (Stream::NearTenth, true) => ("TOPK near-tenth", "TOPK near-tenth memory"),
    }
}

/// A measure's role and label: `what` of TOPN or TOPK on the stream.
fn role_label(stream: Stream, topk: bool, what: &str) -> (Role, String) {
    let name = stream.name();
    match topk {
        false => (
            Role::Module,
            format!("TOPN CAPACITY {CAPACITY}{what}, {name} stream"),
        ),
        true => (
            Role::Recipe,
            format!("TOPK (10, 2000, 7){what}, {name} stream"),
        ),
    }
}

/// `TOPN.INCR key member AT at [BY by]`.
fn topn_incr(out: &mut Vec<u8>, key: &str, member: &str, at: u64, by: Option<u64>) {
    let by_arg = A::U(by.unwrap_or(1));
    let args = [
        A::S("TOPN.INCR"),
        A::S(key),
        A::S(member),
        A::S("AT"),
        A::U(at),
        A::S("BY"),
        by_arg,
    ];
    enc(out, &args[..if by.is_some() { 7 } else { 5 }]);
}

/// The id of a measure of ingest `size` events a call (one: [`ids`]).
fn batch_id(stream: Stream, topk: bool, size: usize) -> &'static str {
    match (topk, size) {
        (false, 10) => "TOPN cap zipf batch 10",
        (true, 10) => "TOPK zipf batch 10",
        (false, 100) => "TOPN cap zipf batch 100",
        (true, 100) => "TOPK zipf batch 100",
        _ => ids(stream, topk).0,
    }
}

/// Ingest of the stream, `size` events a call (`TOPN.INCRBY`,
/// `TOPK.INCRBY` with as many pairs; one: `TOPN.INCR`).
fn measure(stream: Stream, topk: bool, size: usize) -> Measure {
    let calls = match size {
        1 => String::new(),
        n => format!(", {n} events a call"),
    };
    let (role, label) = role_label(stream, topk, &calls);
    Measure::new(
        batch_id(stream, topk, size),
        role,
        label,
        Unit::Millis,
        move |c| {
            let events = stream.events();
            let (day, hour) = (exact(&events, HOURS - 1), exact(&events, 0));
            let key = &key(stream, topk);
            c.cmd(&format!("DEL {key}"))?;
            c.cmd(&match topk {
                true => format!("TOPK.RESERVE {key} 10 2000 7 0.925"),
                false => {
                    format!("TOPN.CREATE {key} BUCKET 3600 WINDOW {HOURS} CAPACITY {CAPACITY}")
                }
            })?;
            let now_hour = now_ms() / HOUR_MS * HOUR_MS;
            let calls = batches(&events, size);
            let started = Instant::now();
            c.load("stream", calls.len() as u64, |i, out| {
                let run = &events[calls[i as usize].clone()];
                match (topk, run) {
                    (true, _) => topk_incrby(key, run, now_hour, out),
                    (false, [(m, by, back)]) => {
                        let m = format!("m{m}");
                        topn_incr(out, key, &m, now_hour - back * HOUR_MS + 1, Some(*by));
                    }
                    (false, _) => topn_incrby(key, run, now_hour, out),
                }
            })?;
            let secs = started.elapsed().as_secs_f64();
            let note = if topk {
                let list = listed(c, &format!("TOPK.LIST {key}"))?;
                format!(
                    "{:.0} events/s; recall@10 24 h {:.2}, newest hour {:.2} (no window)",
                    events.len() as f64 / secs,
                    recall(&list, &top10(&day)),
                    recall(&list, &top10(&hour))
                )
            } else {
                let (whole, held_day) = capped_top(c, key, None, &day)?;
                let (newest, held_hour) = capped_top(c, key, Some(1), &hour)?;
                format!(
                    "{:.0} events/s; recall@10 24 h {:.2}, LAST 1 {:.2}; bounds held: {}",
                    events.len() as f64 / secs,
                    recall(&whole, &top10(&day)),
                    recall(&newest, &top10(&hour)),
                    held_day && held_hour
                )
            };
            Ok((secs * 1000.0, note).into())
        },
    )
    .requires(match (topk, size) {
        (true, _) => &["topk.incrby"],
        (false, 1) => &["topn.incr"],
        (false, _) => &["topn.incrby"],
    })
    .param("stream", stream.name())
    .param("batch", size)
}

/// MEMORY USAGE of the key [`measure`] fed (then deleted).
fn memory(stream: Stream, topk: bool) -> Measure {
    let (role, label) = role_label(stream, topk, " key");
    Measure::new(ids(stream, topk).1, role, label, Unit::Bytes, move |c| {
        let key = &key(stream, topk);
        let memory = c.memory_usage(key)?;
        let note = if topk {
            "set by k, width and depth".to_string()
        } else {
            let counters = info_int(c, key, "counters")?;
            format!(
                "{counters} counters, {:.1} B a counter",
                memory as f64 / counters as f64
            )
        };
        c.cmd(&format!("DEL {key}"))?;
        Ok((memory as f64, note).into())
    })
    .requires(if topk {
        &["topk.incrby"]
    } else {
        &["topn.incr"]
    })
    .param("stream", stream.name())
}

/// A field of `TOPN.INFO key`.
fn info_int(c: &mut Conn, key: &str, field: &str) -> Result<i64, String> {
    let info: Vec<redis::Value> = c.query(redis::cmd("TOPN.INFO").arg(key))?;
    info.chunks(2)
        .find_map(|kv| match kv {
            [redis::Value::BulkString(k), redis::Value::Int(v)] if k == field.as_bytes() => {
                Some(*v)
            }
            _ => None,
        })
        .ok_or_else(|| format!("TOPN.INFO {key}: no {field}"))
}

/// A day of [`DAY_MEMBERS`] distinct members, one event each, spread over
/// 24 hourly buckets, into a key with CAPACITY or an exact one: its MEMORY
/// USAGE (the key deleted after).
fn day(capped: bool) -> Measure {
    let (id, label) = match capped {
        true => (
            "TOPN cap 5M day",
            format!("TOPN CAPACITY {CAPACITY}, {DAY_MEMBERS} distinct members a day"),
        ),
        false => (
            "TOPN exact 5M day",
            format!("TOPN exact, {DAY_MEMBERS} distinct members a day"),
        ),
    };
    let role = if capped {
        Role::Module
    } else {
        Role::Reference
    };
    Measure::new(id, role, label, Unit::Bytes, move |c| {
        let key = if capped {
            "cap:day:capped"
        } else {
            "cap:day:exact"
        };
        c.cmd(&format!("DEL {key}"))?;
        let capacity = if capped {
            format!(" CAPACITY {CAPACITY}")
        } else {
            String::new()
        };
        c.cmd(&format!(
            "TOPN.CREATE {key} BUCKET 3600 WINDOW {HOURS}{capacity}"
        ))?;
        let day_start = (now_ms() / HOUR_MS - (HOURS - 1)) * HOUR_MS;
        let started = Instant::now();
        c.load("day", DAY_MEMBERS, |i, out| {
            let at = day_start + i * HOURS / DAY_MEMBERS * HOUR_MS + 1;
            let m = format!("m{i}");
            topn_incr(out, key, &m, at, None);
        })?;
        let secs = started.elapsed().as_secs_f64();
        let memory = c.memory_usage(key)?;
        let held = if capped { "counters" } else { "members" };
        let n = info_int(c, key, held)?;
        c.cmd(&format!("DEL {key}"))?;
        let note = format!(
            "{n} {held} held, {:.1} B each; fed in {secs:.1} s",
            memory as f64 / n as f64
        );
        Ok((memory as f64, note).into())
    })
    .requires(&["topn.incr"])
}

pub(crate) fn group(_s: &Settings) -> Group {
    let streams = [
        Stream::Zipf,
        Stream::Shifting,
        Stream::NewLeader,
        Stream::NearTenth,
    ];
    let mut measures: Vec<Measure> = streams
        .iter()
        .flat_map(|&s| [measure(s, false, 1), measure(s, true, 1)])
        .collect();
    measures.extend([10, 100].into_iter().flat_map(|size| {
        [
            measure(Stream::Zipf, false, size),
            measure(Stream::Zipf, true, size),
        ]
    }));
    measures.extend(
        streams
            .iter()
            .flat_map(|&s| [memory(s, false), memory(s, true)]),
    );
    measures.extend([day(true), day(false)]);
    Group {
        measures,
        compares: vec![
            cmp("TOPN cap zipf", "TOPK zipf", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap shifting", "TOPK shifting", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap new-leader", "TOPK new-leader", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap zipf memory", "TOPK zipf memory", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap shifting memory", "TOPK shifting memory", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap new-leader memory", "TOPK new-leader memory", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap near-tenth", "TOPK near-tenth", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap near-tenth memory", "TOPK near-tenth memory", Some(Goal::AtMost(1.0))),
            cmp("TOPN exact 5M day", "TOPN cap 5M day", None),
            // Batch for batch, at least TOPK's rate within its memory.
            cmp("TOPN cap zipf batch 10", "TOPK zipf batch 10", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap zipf batch 100", "TOPK zipf batch 100", Some(Goal::AtMost(1.0))),
        ],
        ..Group::new(
            "topn-capacity",
            format!(
                "TOPN CAPACITY {CAPACITY} against TOPK on four streams of {HOURS} hourly buckets of \
                 {PER_HOUR} events: ingest time (lower is better), recall@10 and bounds in the \
                 notes; memory against TOPK's; a day of {DAY_MEMBERS} distinct members, capped \
                 and exact"
            ),
        )
    }
}
