//! The `topn-capacity` group: TOPN with `CAPACITY m` (bounded buckets, each
//! count with its error) against RedisBloom's TOPK at about TOPK's memory
//! (k 10, width 2,000, depth 7), on three streams of 24 hourly buckets of
//! 50,000 events: Zipf (s = 1.5) over 1,000,000 members, Pareto whose leaders change
//! twice, and a sudden new leader in the last two hours. For each: ingest
//! time, MEMORY USAGE, recall@10 over the 24 hours and over the newest hour
//! (`LAST 1`; TOPK has no window: its list against the hour's leaders), and
//! whether every bound listed held (the true count within `[count - error,
//! count]`, checked against the exact counts kept here).

use crate::control::Conn;
use crate::group::{cmp, Goal, Group, Measure, Role, Unit};
use crate::pipe::{enc, now_ms, A};
use crate::settings::Settings;
use crate::topn_topk::{listed, recall};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::Instant;

const HOURS: u64 = 24;
const PER_HOUR: u64 = 50_000;
const HOUR_MS: u64 = 3_600_000;
/// Counters a bucket keeps: about TOPK's memory over 24 buckets.
const CAPACITY: u64 = 28;

#[derive(Clone, Copy)]
enum Stream {
    Zipf,
    Shifting,
    NewLeader,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Zipf => "zipf",
            Stream::Shifting => "shifting",
            Stream::NewLeader => "new-leader",
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
    last: Option<u64>,
    truth: &HashMap<String, i64>,
) -> Result<(Vec<String>, bool), String> {
    let mut cmd = redis::cmd("TOPN.TOP");
    cmd.arg("cap:topn").arg(10);
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

fn measure(stream: Stream, topk: bool) -> Measure {
    let id: &'static str = match (stream, topk) {
        (Stream::Zipf, false) => "TOPN cap zipf",
        (Stream::Zipf, true) => "TOPK zipf",
        (Stream::Shifting, false) => "TOPN cap shifting",
        (Stream::Shifting, true) => "TOPK shifting",
        (Stream::NewLeader, false) => "TOPN cap new-leader",
        (Stream::NewLeader, true) => "TOPK new-leader",
    };
    let (role, label) = match topk {
        false => (
            Role::Module,
            format!("TOPN CAPACITY {CAPACITY}, {} stream", stream.name()),
        ),
        true => (
            Role::Recipe,
            format!("TOPK (10, 2000, 7), {} stream", stream.name()),
        ),
    };
    Measure::new(id, role, label, Unit::Millis, move |c| {
        let events = stream.events();
        let (day, hour) = (exact(&events, HOURS - 1), exact(&events, 0));
        let key = if topk { "cap:topk" } else { "cap:topn" };
        c.cmd(&format!("DEL {key}"))?;
        c.cmd(&match topk {
            true => format!("TOPK.RESERVE {key} 10 2000 7 0.925"),
            false => format!("TOPN.CREATE {key} BUCKET 3600 WINDOW {HOURS} CAPACITY {CAPACITY}"),
        })?;
        let now_hour = now_ms() / HOUR_MS * HOUR_MS;
        let started = Instant::now();
        c.load("stream", events.len() as u64, |i, out| {
            let (m, by, back) = events[i as usize];
            let (m, by) = (format!("m{m}"), by.to_string());
            if topk {
                enc(out, &[A::S("TOPK.INCRBY"), A::S(key), A::S(&m), A::S(&by)]);
            } else {
                let at = (now_hour - back * HOUR_MS + 1).to_string();
                enc(out, &[A::S("TOPN.INCR"), A::S(key), A::S(&m), A::S("BY"), A::S(&by), A::S("AT"), A::S(&at)]);
            }
        })?;
        let secs = started.elapsed().as_secs_f64();
        let memory = c.memory_usage(key)?;
        let note = if topk {
            let list = listed(c, &format!("TOPK.LIST {key}"))?;
            format!(
                "{:.0} events/s; MEMORY USAGE {memory} B; recall@10 24 h {:.2}, newest hour {:.2} (no window)",
                events.len() as f64 / secs,
                recall(&list, &top10(&day)),
                recall(&list, &top10(&hour))
            )
        } else {
            let (whole, held_day) = capped_top(c, None, &day)?;
            let (newest, held_hour) = capped_top(c, Some(1), &hour)?;
            format!(
                "{:.0} events/s; MEMORY USAGE {memory} B; recall@10 24 h {:.2}, LAST 1 {:.2}; bounds held: {}",
                events.len() as f64 / secs,
                recall(&whole, &top10(&day)),
                recall(&newest, &top10(&hour)),
                held_day && held_hour
            )
        };
        c.cmd(&format!("DEL {key}"))?;
        Ok((secs * 1000.0, note).into())
    })
    .requires(if topk { &["topk.incrby"] } else { &["topn.incr"] })
    .param("stream", stream.name())
}

pub(crate) fn group(_s: &Settings) -> Group {
    let streams = [Stream::Zipf, Stream::Shifting, Stream::NewLeader];
    let measures = streams
        .iter()
        .flat_map(|&s| [measure(s, false), measure(s, true)])
        .collect();
    Group {
        measures,
        compares: vec![
            cmp("TOPN cap zipf", "TOPK zipf", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap shifting", "TOPK shifting", Some(Goal::AtMost(1.0))),
            cmp("TOPN cap new-leader", "TOPK new-leader", Some(Goal::AtMost(1.0))),
        ],
        ..Group::new(
            "topn-capacity",
            format!(
                "TOPN CAPACITY {CAPACITY} against TOPK on three streams of {HOURS} hourly buckets of \
                 {PER_HOUR} events: ingest time (lower is better), memory, recall@10 and bounds \
                 in the notes"
            ),
        )
    }
}
