//! The `topn-boundary` group: the server-side time (SLOWLOG) of `TOPN.INCR`
//! across bucket boundaries on big keys, against the same key's ordinary
//! writes. Each key (`BUCKET 3600 WINDOW 24`: exact, exact with `VIEWS 6
//! 12`, and `CAPACITY 1000`) is filled with 24 buckets of 50,000 events over
//! 200,000 members (written with AT, 100 a call), then takes 50,000 single
//! writes into its newest bucket (ordinary: nothing to retire), then 50,000
//! a bucket into each of the next 6 buckets: each first write moves the
//! clock, and the writes that follow free the bucket that left the window
//! and subtract the ones that left the views, a slice each.

use crate::control::Conn;
use crate::group::{goal, Goal, Group, Measure, Measured, Role, Unit};
use crate::pipe::{enc, now_ms, Gen, A};
use crate::settings::Settings;

const HOUR_MS: u64 = 3_600_000;
const WINDOW: u64 = 24;
const PER_BUCKET: u64 = 50_000;
const MEMBERS: u64 = 200_000;
/// Boundaries crossed.
const CROSSED: u64 = 6;
/// Events a fill call.
const FILL_PAIRS: u64 = 100;

#[derive(Clone, Copy)]
enum Kind {
    Exact,
    Views,
    Capped,
}

impl Kind {
    fn id(self) -> &'static str {
        match self {
            Kind::Exact => "exact boundary p99.9",
            Kind::Views => "views boundary p99.9",
            Kind::Capped => "capacity boundary p99.9",
        }
    }

    fn options(self) -> &'static str {
        match self {
            Kind::Exact => "",
            Kind::Views => " VIEWS 6 12",
            Kind::Capped => " CAPACITY 1000",
        }
    }
}

/// Median, p99.9 and max of server-side times (us), sorted in place.
fn summary(us: &mut [i64]) -> String {
    us.sort_unstable();
    let at = |q: f64| us[((us.len() - 1) as f64 * q) as usize];
    format!(
        "{} writes: median {} us, p99.9 {} us, max {} us ({} over 1 ms)",
        us.len(),
        at(0.5),
        at(0.999),
        at(1.0),
        us.iter().filter(|&&x| x > 1000).count()
    )
}

/// Server-side times of `PER_BUCKET` single writes into the bucket starting
/// at `start` (random members, one every few ms of the bucket).
fn timed_bucket(c: &mut Conn, key: &str, start: u64, g: &mut Gen) -> Result<Vec<i64>, String> {
    let len = PER_BUCKET + 10;
    c.slowlog_arm(len, 0)?;
    let step = HOUR_MS / PER_BUCKET;
    let res = c.load("TOPN boundary writes", PER_BUCKET, |i, out| {
        let m = A::U(g.below(MEMBERS));
        let at = A::U(start + i * step);
        enc(out, &[A::S("TOPN.INCR"), A::S(key), m, A::S("AT"), at]);
    });
    let log = c.slowlog_take(len);
    res?;
    let us: Vec<i64> = log?
        .iter()
        .filter(|e| e.name() == "TOPN.INCR")
        .map(|e| e.us)
        .collect();
    if us.len() != PER_BUCKET as usize {
        return Err(format!(
            "SLOWLOG holds {} of the {PER_BUCKET} writes",
            us.len()
        ));
    }
    Ok(us)
}

fn boundary_writes(c: &mut Conn, kind: Kind) -> Result<Measured, String> {
    let key = "topn:boundary";
    c.cmd(&format!("DEL {key}"))?;
    c.cmd(&format!(
        "TOPN.CREATE {key} BUCKET 3600 WINDOW {WINDOW}{}",
        kind.options()
    ))?;
    // Every AT stays inside the window at the server's time and at most a day
    // ahead of it: the oldest bucket 8 hours back, the last one crossed 21
    // hours ahead.
    let first = (now_ms() / HOUR_MS - 8) * HOUR_MS;
    let mut g = Gen::new(17);
    let calls = WINDOW * PER_BUCKET / FILL_PAIRS;
    eprintln!(
        "  filling {key}{}: {WINDOW} buckets x {PER_BUCKET} events ...",
        kind.options()
    );
    c.load("TOPN boundary fill", calls, |i, out| {
        let at = first + (i * FILL_PAIRS / PER_BUCKET) * HOUR_MS + 1000;
        let mut args = vec![A::S("TOPN.INCRBY"), A::S(key), A::S("AT"), A::U(at)];
        for _ in 0..FILL_PAIRS {
            args.extend([A::S("1"), A::U(g.below(MEMBERS))]);
        }
        enc(out, &args);
    })?;
    let newest = first + (WINDOW - 1) * HOUR_MS;
    let mut ordinary = timed_bucket(c, key, newest, &mut g)?;
    let (mut crossing, mut firsts) = (Vec::new(), Vec::new());
    for b in 1..=CROSSED {
        let us = timed_bucket(c, key, newest + b * HOUR_MS, &mut g)?;
        firsts.push(us[0]);
        crossing.extend(us);
    }
    c.cmd(&format!("UNLINK {key}"))?;
    let note = format!(
        "across {CROSSED} boundaries: {}; first writes of the buckets: {:?} us\n      \
         ordinary (newest bucket, nothing to retire): {}",
        summary(&mut crossing),
        firsts,
        summary(&mut ordinary)
    );
    // SLOWLOG times are wall-clock: on a shared machine the max is the worst preemption
    // (milliseconds), so the measure is the p99.9, the max in the note.
    let p999 = crossing[((crossing.len() - 1) as f64 * 0.999) as usize];
    Ok((p999 as f64, note).into())
}

fn measure(kind: Kind) -> Measure {
    let label = format!(
        "TOPN.INCR across bucket boundaries, BUCKET 3600 WINDOW {WINDOW}{} (p99.9)",
        kind.options()
    );
    Measure::new(kind.id(), Role::Module, label, Unit::Micros, move |c| {
        boundary_writes(c, kind)
    })
    .requires(&["topn.incr", "topn.incrby", "topn.create"])
}

pub(crate) fn group(_s: &Settings) -> Group {
    let kinds = [Kind::Exact, Kind::Views, Kind::Capped];
    Group {
        measures: kinds.into_iter().map(measure).collect(),
        compares: kinds
            .into_iter()
            .map(|k| goal(k.id(), Goal::AtMost(250.0)))
            .collect(),
        ..Group::new(
            "topn-boundary",
            format!(
                "TOPN.INCR server-side time (SLOWLOG) across {CROSSED} bucket boundaries on keys of \
                 {WINDOW} buckets x {PER_BUCKET} events over {MEMBERS} members (exact, VIEWS 6 12, \
                 CAPACITY 1000), against the same key's ordinary writes"
            ),
        )
    }
}
