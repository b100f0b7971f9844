//! The backfill rows of the `topn-write` group: a day of history imported
//! into a key, what an import, an AOF replay or a lagging replica does. 24
//! hourly buckets of 50,000 `TOPN.INCR key member AT ms` each, oldest bucket
//! first, every `AT` in the past (the 24 hours up to the server's time),
//! into `BUCKET 3600 WINDOW 24` with `VIEWS 6 12` and without; each kind
//! loaded twice, alternated (without, with, with, without), each into a
//! fresh key. The figure is the server's CPU time of a load (the median of
//! its two), steadier than wall time on a shared machine; its ratio
//! views / without has the goal 1.5. The events: unit counts, 5,000 of a
//! bucket's on a skewed head of 1,000 members, the rest over 200,000, the
//! popularity reversing half-way (the `topn-reads` shape).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use crate::control::Conn;
use crate::group::{cmp, Compare, Goal, Measure, Measured, Role, Unit};
use crate::pipe::{enc, now_ms, Gen, A};
use crate::report::median;
use crate::topn::member;

const HOUR_MS: u64 = 3_600_000;
const BUCKETS: u64 = 24;
const EVENTS: u64 = 50_000;
const MEMBERS: u64 = 200_000;
const HEAD_EVENTS: u64 = 5_000;
const HEAD_RANKS: f64 = 1_000.0;
const KEY: &str = "topn:backfill";

/// One load: the server's CPU time and the wall time, in ms.
#[derive(Clone, Copy)]
struct Load {
    cpu_ms: f64,
    wall_ms: f64,
}

/// Loads the day into a fresh key (`views`: with `VIEWS 6 12`).
fn load(c: &mut Conn, views: bool) -> Result<Load, String> {
    let declared = if views { " VIEWS 6 12" } else { "" };
    c.cmd(&format!("DEL {KEY}"))?;
    c.cmd(&format!(
        "TOPN.CREATE {KEY} BUCKET 3600 WINDOW 24{declared}"
    ))?;
    let now = now_ms();
    let first = (now / HOUR_MS - (BUCKETS - 1)) * HOUR_MS;
    let mut g = Gen::new(24);
    let (cpu, started) = (c.server_cpu()?, Instant::now());
    c.load("backfill", BUCKETS * EVENTS, |i, out| {
        let (b, e) = (i / EVENTS, i % EVENTS);
        let rank = match e < HEAD_EVENTS {
            true => {
                let u = g.below(1 << 53) as f64 / (1u64 << 53) as f64;
                (HEAD_RANKS * u * u * u) as u64
            }
            false => g.below(MEMBERS),
        };
        let m = if b < BUCKETS / 2 {
            rank
        } else {
            MEMBERS - 1 - rank
        };
        // Spread over the bucket, the newest up to the server's time.
        let start = first + b * HOUR_MS;
        let at = start + e * now.saturating_sub(start).clamp(1, HOUR_MS) / EVENTS;
        let (m, at) = (A::U(member(m)), A::U(at));
        enc(out, &[A::S("TOPN.INCR"), A::S(KEY), m, A::S("AT"), at]);
    })?;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let cpu_ms = (c.server_cpu()? - cpu) * 1000.0;
    c.cmd(&format!("DEL {KEY}"))?;
    Ok(Load { cpu_ms, wall_ms })
}

/// The figure of the loads of one kind: the median CPU time, and a note.
fn measured(loads: &[Load]) -> Measured {
    let mut cpu: Vec<f64> = loads.iter().map(|l| l.cpu_ms).collect();
    let mut wall: Vec<f64> = loads.iter().map(|l| l.wall_ms).collect();
    let (cpu, wall) = (median(&mut cpu), median(&mut wall));
    let (cpu, wall) = (cpu.unwrap_or(0.0), wall.unwrap_or(0.0));
    let events = (BUCKETS * EVENTS) as f64;
    let note = format!(
        "server CPU, median of {} loads; wall {wall:.0} ms, {:.0} events/s",
        loads.len(),
        events / (wall / 1000.0)
    );
    (cpu, note).into()
}

/// The measures (`backfill`: every load, both kinds alternated, its own
/// figure; `backfill views`: the other kind's, kept from it) and their ratio.
pub(crate) fn measures() -> (Vec<Measure>, Vec<Compare>) {
    let viewed: Rc<RefCell<Vec<Load>>> = Rc::default();
    let keep = viewed.clone();
    let label = |views: &str| {
        format!(
            "backfill: {BUCKETS} past hours x {EVENTS} TOPN.INCR ... AT ms, oldest first, \
             WINDOW 24{views} (server CPU)"
        )
    };
    let plain = Measure::new(
        "backfill",
        Role::Module,
        label(""),
        Unit::Millis,
        move |c| {
            let mut without = Vec::new();
            keep.borrow_mut().clear();
            for views in [false, true, true, false] {
                let l = load(c, views)?;
                match views {
                    true => keep.borrow_mut().push(l),
                    false => without.push(l),
                }
            }
            Ok(measured(&without))
        },
    )
    // VIEWS came with TOPN.INCRBY (0.2.0).
    .requires(&["topn.incr", "topn.incrby"]);
    let views = Measure::new(
        "backfill views",
        Role::Module,
        label(" VIEWS 6 12"),
        Unit::Millis,
        move |_| match viewed.borrow().as_slice() {
            [] => Err("no loads: the backfill measure did not run".into()),
            loads => Ok(measured(loads)),
        },
    )
    .requires(&["topn.incr", "topn.incrby"]);
    let compares = vec![cmp("backfill views", "backfill", Some(Goal::AtMost(1.5)))];
    (vec![plain, views], compares)
}
