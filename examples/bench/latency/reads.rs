//! The `topn-reads` scenarios of the latency group: a TOPN key of BUCKET 1
//! WINDOW 24 (24 buckets of 50,000 events over 200,000 members, popularity
//! reversing half-way) read at its newest bucket a few seconds after it, on a
//! master and on a real replica, against the recipe's read of the same bucket
//! zsets built in the same run (ZUNIONSTORE + ZREVRANGE). Three shapes of
//! counts: unit events with a skewed head (`topn-reads`), weighted events
//! (`BY` 1-100) spread evenly over the members (`topn-reads-weighted`: flat
//! counts, where no pruning helps and reads sum), and heavy-tailed weights
//! (`BY` Pareto, 1 to 1,000,000) on members equally likely
//! (`topn-reads-heavy`). Each read's first call (its plan decided with no
//! history) is a row of its own beside the later calls; a second key with
//! `VIEWS 2 6 12`, filled with the same events, is read beside the first. The
//! fill writes ahead of the server's clock, so that `LAST 2`, `6` and `12` are
//! also read at the server's time while it is in the newest bucket (`... now`
//! rows): there the second key's views are the read windows (`... view now`).

use std::time::Duration;

use redis::Value;

use super::{fresh, scenario as run_scenario, thousands, timed_load, Figures, Kind, Outcome};
use crate::control::{replica_synced, reply_counts, sleep_checked, wait_for, Conn};
use crate::json::Figure;
use crate::pipe::{enc, now_ms, Gen, A};
use crate::report::fmt_ratio;
use crate::topn::{last_union_of, member, slowlog_op_us};

/// Buckets, events per bucket, members, and the skewed head of each bucket
/// (`HEAD_EVENTS` of its events fall on the `HEAD_RANKS` first members).
const BUCKETS: u64 = 24;
const EVENTS: u64 = 50_000;
const MEMBERS: u64 = 200_000;
const HEAD_EVENTS: u64 = 5_000;
const HEAD_RANKS: f64 = 1_000.0;
/// The newest bucket begins this long after the fill starts (the fill writes ahead of the
/// server's clock), so the reads at the server's time come while it is the newest bucket.
const AHEAD_S: u64 = 24;
/// The reads at `AT` the newest bucket come at least this long after it began.
const LAG_S: u64 = 3;
/// The second whole-window read waits for this many buckets to age out.
const AGED: u64 = 9;
/// Server-side times taken per TOPN read / recipe read.
const READS: usize = 10;
const RECIPE_READS: usize = 3;
const LASTS: [u64; 5] = [1, 2, 6, 12, 24];
/// Events a fill call.
const PAIRS: usize = 100;
/// The views of the second key.
const VIEWS: [u64; 3] = [2, 6, 12];

/// The shape of the events' counts.
#[derive(Clone, Copy)]
enum Counts {
    /// `BY 1`, `HEAD_EVENTS` of each bucket's events on a skewed head.
    Unit,
    /// `BY` 1-100, every member equally likely.
    Weighted,
    /// `BY` from a Pareto law (shape 1.2, 1 to 1,000,000), every member equally likely.
    HeavyTailed,
}

impl Counts {
    fn id(self) -> &'static str {
        match self {
            Counts::Unit => "topn-reads",
            Counts::Weighted => "topn-reads-weighted",
            Counts::HeavyTailed => "topn-reads-heavy",
        }
    }

    /// The TOPN key, and the prefix of the recipe's bucket zsets (the unit
    /// ones are the topn-last group's names, on this scenario's own server).
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            Counts::Unit => ("lat:r", "topn:lz:"),
            Counts::Weighted => ("lat:w", "topn:lw:"),
            Counts::HeavyTailed => ("lat:h", "topn:lh:"),
        }
    }
}

/// Per bucket, the (member, count) pairs of its events.
fn bucket_events(shape: Counts) -> Vec<Vec<(u64, u64)>> {
    let mut g = Gen::new(24);
    let mut counts = vec![0u64; MEMBERS as usize];
    (0..BUCKETS)
        .map(|b| {
            counts.iter_mut().for_each(|x| *x = 0);
            for e in 0..EVENTS {
                let (rank, by) = match shape {
                    Counts::Unit if e < HEAD_EVENTS => {
                        let u = g.below(1 << 53) as f64 / (1u64 << 53) as f64;
                        ((HEAD_RANKS * u * u * u) as u64, 1)
                    }
                    Counts::Unit => (g.below(MEMBERS), 1),
                    Counts::Weighted => (g.below(MEMBERS), 1 + g.below(100)),
                    Counts::HeavyTailed => {
                        let u = (1 + g.below(1 << 53)) as f64 / (1u64 << 53) as f64;
                        (g.below(MEMBERS), (u.powf(-1.0 / 1.2) as u64).min(1_000_000))
                    }
                };
                // Popularity reverses half-way through the window.
                let m = if b < BUCKETS / 2 {
                    rank
                } else {
                    MEMBERS - 1 - rank
                };
                counts[m as usize] += by;
            }
            (0..MEMBERS)
                .filter(|&m| counts[m as usize] > 0)
                .map(|m| (m, counts[m as usize]))
                .collect()
        })
        .collect()
}

/// The recipe's read of the newest `k` bucket zsets.
fn recipe_read(shape: Counts, k: u64) -> Vec<String> {
    last_union_of(shape.keys().1, BUCKETS - 1, k)
}

/// Times the recipe's read of the newest `k` buckets (a figure); returns its median (us)
/// and the counts it answers.
fn recipe_figure(
    c: &mut Conn,
    shape: Counts,
    k: u64,
    figs: &mut Figures,
) -> Result<(f64, Vec<i64>), String> {
    let mut answer = Value::Nil;
    for line in recipe_read(shape, k) {
        answer = c.cmd(&line)?;
    }
    let mut us = slowlog_op_us(c, RECIPE_READS, Duration::ZERO, |_| recipe_read(shape, k))?;
    us.sort_unstable();
    let median = us[us.len() / 2] as f64;
    let label = format!(
        "recipe: `{}` (SLOWLOG, median of {RECIPE_READS})",
        recipe_read(shape, k).join("; ")
    );
    let f = Figure::new(format!("recipe LAST {k}"), label, "us")
        .value(median)
        .note(format!("max {} us", thousands(us[us.len() - 1] as f64)))
        .param("window_buckets", k)
        .param("side", "recipe");
    figs.push(Kind::Info, f);
    Ok((median, reply_counts(&answer)))
}

/// What a TOPN read is: its id, the command, and for plots its window and
/// how many buckets had aged out of the running total.
struct Read<'a> {
    what: &'a str,
    command: &'a str,
    window: u64,
    aged: u64,
}

/// A TOPN read's server-side times on the master and the replica, its answer checked
/// against the recipe's (counts: ties order differently): the first call of the read on
/// that server (its plan decided with no history), then `READS` more.
fn read_figures(
    servers: [(&str, &mut Conn); 2],
    read: &Read,
    recipe: &(f64, Vec<i64>),
    figs: &mut Figures,
) -> Result<(), String> {
    for (side, conn) in servers {
        let once = |conn: &mut Conn, n| {
            slowlog_op_us(conn, n, Duration::ZERO, |_| vec![read.command.to_string()])
        };
        let first = once(conn, 1)?[0] as f64;
        let answer = reply_counts(&conn.cmd(&format!("{} WITHCOUNTS", read.command))?);
        let mut us = once(conn, READS)?;
        us.sort_unstable();
        let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize] as f64;
        let agrees = if answer == recipe.1 {
            "the same counts as the recipe"
        } else {
            "DIFFERENT counts from the recipe"
        };
        let label = format!("`{}` on the {side}, its first call (SLOWLOG)", read.command);
        let f = Figure::new(format!("{side} {} first", read.what), label, "us")
            .value(first)
            .param("window_buckets", read.window)
            .param("aged_buckets", read.aged)
            .param("side", side)
            .param("call", "first");
        figs.push(Kind::Command, f);
        let label = format!(
            "`{}` on the {side}, the {READS} calls after the first two (SLOWLOG, max)",
            read.command
        );
        let f = Figure::new(format!("{side} {}", read.what), label, "us")
            .value(at(1.0))
            .note(format!(
                "median {} us, p99 {} us; recipe / TOPN (medians) {}; {agrees}",
                thousands(at(0.5)),
                thousands(at(0.99)),
                ratio_text(recipe.0 / at(0.5).max(1.0))
            ))
            .details(&[
                ("median_us", at(0.5)),
                ("p99_us", at(0.99)),
                ("recipe_median_us", recipe.0),
                ("same_answer", (answer == recipe.1) as u8 as f64),
            ])
            .param("window_buckets", read.window)
            .param("aged_buckets", read.aged)
            .param("side", side)
            .param("call", "later");
        figs.push(Kind::Command, f);
    }
    Ok(())
}

/// A ratio, also far below 1 (`1/250x`).
fn ratio_text(r: f64) -> String {
    if r >= 1.0 || r <= 0.0 {
        fmt_ratio(r)
    } else {
        format!("1/{}", fmt_ratio(1.0 / r))
    }
}

pub(super) fn scenario() -> Result<Outcome, String> {
    run(Counts::Unit)
}

pub(super) fn weighted_scenario() -> Result<Outcome, String> {
    run(Counts::Weighted)
}

pub(super) fn heavy_scenario() -> Result<Outcome, String> {
    run(Counts::HeavyTailed)
}

fn run(shape: Counts) -> Result<Outcome, String> {
    let events_are = match shape {
        Counts::Unit => "unit events, a tenth of them on a skewed head of 1,000",
        Counts::Weighted => "events of BY 1-100 on members equally likely (flat counts)",
        Counts::HeavyTailed => {
            "events of BY Pareto(1.2), 1 to 1,000,000, on members equally likely (heavy-tailed)"
        }
    };
    let title = format!(
        "TOPN reads: TOPN.CREATE k BUCKET 1 WINDOW 24, {BUCKETS} buckets of {} events over {} \
         members ({events_are}; popularity reverses half-way); TOPN.TOP k 10 AT <newest bucket> \
         LAST k a few seconds after it (and LAST {} with no AT while the server's time is in the \
         newest bucket), and the whole window once {AGED} buckets aged out, on \
         the master and a replica; against ZUNIONSTORE + ZREVRANGE of the same bucket zsets; \
         beside them the same reads of a key with VIEWS {}, filled with the same events",
        thousands(EVENTS as f64),
        thousands(MEMBERS as f64),
        VIEWS.map(|k| k.to_string()).join(", "),
        VIEWS.map(|k| k.to_string()).join(" ")
    );
    let (key, zsets) = shape.keys();
    let viewed = format!("{key}v");
    run_scenario(shape.id(), None, title, |run| {
        let (c, figs) = (&mut run.c, &mut run.figs);
        let data = bucket_events(shape);
        let distinct = data.iter().map(|b| b.len()).sum::<usize>() as f64 / BUCKETS as f64;
        // The recipe's bucket zsets and its reads first, on the master alone: the TOPN part
        // is bound to the clock.
        let chunks: Vec<(usize, usize)> = data
            .iter()
            .enumerate()
            .flat_map(|(b, pairs)| (0..pairs.len()).step_by(1000).map(move |s| (b, s)))
            .collect();
        eprintln!("  filling {BUCKETS} bucket zsets, the recipe's reads ...");
        c.load("bucket zsets", chunks.len() as u64, |i, out| {
            let (b, s) = chunks[i as usize];
            let mut args = vec![A::S("ZADD"), A::K(zsets, b as u64)];
            for &(m, n) in &data[b][s..(s + 1000).min(data[b].len())] {
                args.push(A::U(n));
                args.push(A::U(member(m)));
            }
            enc(out, &args);
        })?;
        let mut recipe = Vec::new();
        for k in LASTS {
            recipe.push(recipe_figure(c, shape, k, figs)?);
        }
        // Buckets oldest first, all ahead of the server's clock (the oldest begins 1 s after
        // the fill starts), so every event is inside the window when written.
        c.cmd(&format!("TOPN.CREATE {key} BUCKET 1 WINDOW 24"))?;
        let views = VIEWS.map(|k| k.to_string()).join(" ");
        c.cmd(&format!(
            "TOPN.CREATE {viewed} BUCKET 1 WINDOW 24 VIEWS {views}"
        ))?;
        let newest = now_ms() / 1000 + AHEAD_S;
        let first = newest + 1 - BUCKETS;
        // Each key filled by TOPN.INCRBY calls of up to `PAIRS` events of one bucket (one
        // event a call would leave too little of the window by the reads on a busy machine).
        let calls: Vec<(usize, usize)> = data
            .iter()
            .enumerate()
            .flat_map(|(b, pairs)| (0..pairs.len()).step_by(PAIRS).map(move |s| (b, s)))
            .collect();
        let events: usize = data.iter().map(Vec::len).sum();
        eprintln!(
            "  filling {key} and {viewed}: {} events each, TOPN.INCRBY of {PAIRS} ...",
            thousands(events as f64)
        );
        let secs = timed_load(c, "TOPN reads fill", 2 * calls.len() as u64, |i, out| {
            let (b, s) = calls[i as usize / 2];
            let k = if i % 2 == 0 { key } else { &viewed };
            let at = (first + b as u64) * 1000 + 1;
            let mut args = vec![A::S("TOPN.INCRBY"), A::S(k), A::S("AT"), A::U(at)];
            for &(m, n) in &data[b][s..(s + PAIRS).min(data[b].len())] {
                args.push(A::U(n));
                args.push(A::U(member(m)));
            }
            enc(out, &args);
        })?;
        let fill = Figure::new(
            "fill events/s",
            format!("TOPN.INCRBY k AT t n m ... ({PAIRS} pairs a call) while filling, both keys"),
            "events/s",
        )
        .value(2.0 * events as f64 / secs)
        .note(format!(
            "{} events in {secs:.2} s; {distinct:.0} distinct members a bucket",
            thousands(2.0 * events as f64)
        ));
        figs.push(Kind::Info, fill);
        // The replica now: one full sync, faster than streaming the fill to it.
        eprintln!("  starting a replica, waiting for its sync ...");
        let port = c.port().to_string();
        let (_replica, mut rc) = fresh(&["--replicaof", "127.0.0.1", &port])?;
        let replica_cpu0 = rc.server_cpu()?;
        wait_for("replica in sync", Duration::from_secs(60), || {
            replica_synced(c, &mut rc)
        })?;
        let newest_ms = newest * 1000;
        // At the server's time, while it is in the newest bucket (and the views hold its k
        // newest buckets): `LAST k` with no `AT`, on the key and on the key with views.
        while now_ms() < newest_ms + 200 {
            sleep_checked(Duration::from_millis(20))?;
        }
        let label = "the reads at the server's time began this long after the newest bucket began \
                     (under 1,000 ms: their window is the recipe's)";
        let now_at = Figure::new("reads now at", label, "ms").value((now_ms() - newest_ms) as f64);
        figs.push(Kind::Info, now_at);
        eprintln!("  reading LAST k at the server's time, with and without views ...");
        for (k, recipe) in LASTS.into_iter().zip(&recipe) {
            if !VIEWS.contains(&k) {
                continue;
            }
            for (what, k_key) in [("now", key), ("view now", &viewed[..])] {
                let read = Read {
                    what: &format!("LAST {k} {what}"),
                    command: &format!("TOPN.TOP {k_key} 10 LAST {k}"),
                    window: k,
                    aged: 0,
                };
                read_figures(
                    [("master", &mut *c), ("replica", &mut rc)],
                    &read,
                    recipe,
                    figs,
                )?;
            }
        }
        while now_ms() < newest_ms + LAG_S * 1000 {
            sleep_checked(Duration::from_millis(20))?;
        }
        let aged = |c: &mut Conn| c.info_int("recipes", "recipes_topn_aged_buckets");
        let aged_note = |c: &mut Conn, rc: &mut Conn| -> Result<String, String> {
            Ok(format!(
                "buckets aged out of the running total by then: {} on the master, {} on the replica \
                 (which counts only those it aged after its sync)",
                aged(c)?,
                aged(rc)?
            ))
        };
        let label = "the LAST k reads began this long after the newest bucket began";
        let reads_at = Figure::new("reads at", label, "ms")
            .value((now_ms() - newest_ms) as f64)
            .note(aged_note(c, &mut rc)?);
        figs.push(Kind::Info, reads_at);
        let at = newest_ms + 500;
        eprintln!("  reading LAST k on the master and the replica ...");
        for (k, recipe) in LASTS.into_iter().zip(&recipe) {
            for (what, k_key) in [("", key), (" view", &viewed[..])] {
                if k_key != key && !VIEWS.contains(&k) {
                    continue;
                }
                let read = Read {
                    what: &format!("LAST {k}{what}"),
                    command: &format!("TOPN.TOP {k_key} 10 AT {at} LAST {k}"),
                    window: k,
                    aged: 0,
                };
                read_figures(
                    [("master", &mut *c), ("replica", &mut rc)],
                    &read,
                    recipe,
                    figs,
                )?;
            }
        }
        eprintln!("  waiting until {AGED} buckets aged out ...");
        // Bounded: the key expires a whole window (24 s) after its newest bucket.
        let aged_by = (newest + AGED) * 1000 + 300;
        let give_up = aged_by + 5000;
        while now_ms() < aged_by || (aged(c)? < AGED as i64 && now_ms() < give_up) {
            sleep_checked(Duration::from_millis(50))?;
        }
        let label = format!(
            "the whole-window reads began this long after the newest bucket began ({AGED} buckets out)"
        );
        let aged_at = Figure::new("aged read at", label, "ms")
            .value((now_ms() - newest_ms) as f64)
            .note(aged_note(c, &mut rc)?);
        figs.push(Kind::Info, aged_at);
        let whole = &recipe[LASTS.len() - 1];
        let read = Read {
            what: &format!("aged {AGED}"),
            command: &format!("TOPN.TOP {key} 10 AT {at}"),
            window: BUCKETS,
            aged: AGED,
        };
        read_figures(
            [("master", &mut *c), ("replica", &mut rc)],
            &read,
            whole,
            figs,
        )?;
        rc.server_cpu().map(|t| t - replica_cpu0)
    })
}
