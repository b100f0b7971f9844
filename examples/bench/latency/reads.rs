//! The `topn-reads` scenario of the latency group: a TOPN key of BUCKET 1
//! WINDOW 24 (24 buckets of 50,000 events over 200,000 members, popularity
//! reversing half-way) read at its newest bucket a few seconds after it, on a
//! master and on a real replica, against the recipe's read of the same bucket
//! zsets built in the same run (ZUNIONSTORE + ZREVRANGE).

use super::*;

/// Buckets, events per bucket, members, and the skewed head of each bucket
/// (`HEAD_EVENTS` of its events fall on the `HEAD_RANKS` first members).
const BUCKETS: u64 = 24;
const EVENTS: u64 = 50_000;
const MEMBERS: u64 = 200_000;
const HEAD_EVENTS: u64 = 5_000;
const HEAD_RANKS: f64 = 1_000.0;
/// The reads come at least this long after the newest bucket began.
const LAG_S: u64 = 3;
/// The second whole-window read waits for this many buckets to age out.
const AGED: u64 = 9;
/// Server-side times taken per TOPN read / recipe read.
const READS: usize = 10;
const RECIPE_READS: usize = 3;
const LASTS: [u64; 5] = [1, 2, 6, 12, 24];

/// Per bucket, the (member, count) pairs of its events.
fn bucket_events() -> Vec<Vec<(u64, u64)>> {
    let mut g = Gen::new(24);
    let mut counts = vec![0u64; MEMBERS as usize];
    (0..BUCKETS)
        .map(|b| {
            counts.iter_mut().for_each(|x| *x = 0);
            for e in 0..EVENTS {
                let rank = if e < HEAD_EVENTS {
                    let u = g.below(1 << 53) as f64 / (1u64 << 53) as f64;
                    (HEAD_RANKS * u * u * u) as u64
                } else {
                    g.below(MEMBERS)
                };
                // Popularity reverses half-way through the window.
                let m = if b < BUCKETS / 2 {
                    rank
                } else {
                    MEMBERS - 1 - rank
                };
                counts[m as usize] += 1;
            }
            (0..MEMBERS)
                .filter(|&m| counts[m as usize] > 0)
                .map(|m| (m, counts[m as usize]))
                .collect()
        })
        .collect()
}

/// The recipe's read of the newest `k` bucket zsets, `topn:lz:<0..24>`: the
/// topn-last group's, whose key names this scenario uses on its own server.
fn recipe_read(k: u64) -> Vec<String> {
    topn_last_union(BUCKETS - 1, k)
}

fn replica_synced(c: &mut Conn, rc: &mut Conn) -> Result<bool, String> {
    Ok(rc.info_field("replication", "master_link_status")? == "up"
        && c.info_field("replication", "master_repl_offset")?
            == rc.info_field("replication", "slave_repl_offset")?)
}

/// Waits until `ok` holds, checking every 50 ms, at most `max`.
fn wait_for(
    what: &str,
    max: Duration,
    mut ok: impl FnMut() -> Result<bool, String>,
) -> Result<(), String> {
    let deadline = Instant::now() + max;
    while !ok()? {
        if Instant::now() > deadline {
            return Err(format!("{what}: not after {} s", max.as_secs()));
        }
        sleep_checked(Duration::from_millis(50))?;
    }
    Ok(())
}

/// Times the recipe's read of the newest `k` buckets (a figure); returns its median (us)
/// and the counts it answers.
fn recipe_figure(
    c: &mut Conn,
    k: u64,
    figures: &mut Vec<Figure>,
) -> Result<(f64, Vec<i64>), String> {
    let mut answer = V::Nil;
    for line in recipe_read(k) {
        answer = c.cmd(&line)?;
    }
    let mut us = slowlog_op_us(c, RECIPE_READS, |_| recipe_read(k))?;
    us.sort_unstable();
    let median = us[us.len() / 2] as f64;
    figures.push(
        Figure::new(
            format!("recipe LAST {k}"),
            format!(
                "recipe: `{}` (SLOWLOG, median of {RECIPE_READS})",
                recipe_read(k).join("; ")
            ),
            Kind::Info,
            "us",
        )
        .value(median)
        .note(format!("max {} us", thousands(us[us.len() - 1] as f64))),
    );
    Ok((median, reply_counts(&answer)))
}

/// A TOPN read's server-side times on the master and the replica, its answer checked
/// against the recipe's (counts: ties order differently).
fn read_figures(
    servers: [(&str, &mut Conn); 2],
    what: &str,
    read: &str,
    recipe: &(f64, Vec<i64>),
    figures: &mut Vec<Figure>,
) -> Result<(), String> {
    for (side, conn) in servers {
        let answer = reply_counts(&conn.cmd(&format!("{read} WITHCOUNTS"))?);
        let mut us = slowlog_op_us(conn, READS, |_| vec![read.to_string()])?;
        us.sort_unstable();
        let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize] as f64;
        let agrees = if answer == recipe.1 {
            "the same counts as the recipe"
        } else {
            "DIFFERENT counts from the recipe"
        };
        figures.push(
            Figure::new(
                format!("{side} {what}"),
                format!("`{read}` on the {side} (SLOWLOG, max of {READS})"),
                Kind::Command,
                "us",
            )
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
            ]),
        );
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

pub(super) fn scenario(env: &Env) -> Result<Outcome, String> {
    let title = format!(
        "TOPN reads: TOPN.CREATE k BUCKET 1 WINDOW 24, {BUCKETS} buckets of {} events over {} \
         members (popularity reverses half-way); TOPN.TOP k 10 AT <newest bucket> LAST k a few \
         seconds after it, and the whole window once {AGED} buckets aged out, on the master \
         and a replica; against ZUNIONSTORE + ZREVRANGE of the same bucket zsets",
        thousands(EVENTS as f64),
        thousands(MEMBERS as f64)
    );
    super::scenario(env, "topn-reads", title, |run| {
        let (c, figures) = (&mut run.c, &mut run.figures);
        let data = bucket_events();
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
            let mut args = vec![A::S("ZADD"), A::K("topn:lz:", b as u64)];
            for &(m, n) in &data[b][s..(s + 1000).min(data[b].len())] {
                args.push(A::U(n));
                args.push(A::U(topn_member(m)));
            }
            enc(out, &args);
        })?;
        let mut recipe = Vec::new();
        for k in LASTS {
            recipe.push(recipe_figure(c, k, figures)?);
        }
        // Buckets oldest first; the newest one begins 1 s after the fill starts, so every
        // event is inside the window when written (for a fill of up to ~24 s).
        c.cmd("TOPN.CREATE lat:r BUCKET 1 WINDOW 24")?;
        let newest = now_ms() / 1000 + 1;
        let first = newest + 1 - BUCKETS;
        let events: Vec<(u64, u64, u64)> = data
            .iter()
            .enumerate()
            .flat_map(|(b, pairs)| pairs.iter().map(move |&(m, n)| (b as u64, m, n)))
            .collect();
        eprintln!(
            "  filling lat:r: {} TOPN.INCR ...",
            thousands(events.len() as f64)
        );
        let secs = timed_load(c, "TOPN reads fill", events.len() as u64, |i, out| {
            let (b, m, n) = events[i as usize];
            let at = (first + b) * 1000 + 1;
            enc(
                out,
                &[
                    A::S("TOPN.INCR"),
                    A::S("lat:r"),
                    A::U(topn_member(m)),
                    A::S("BY"),
                    A::U(n),
                    A::S("AT"),
                    A::U(at),
                ],
            );
        })?;
        figures.push(
            Figure::new(
                "fill ops/s",
                "TOPN.INCR k m BY n AT t while filling",
                Kind::Info,
                "ops/s",
            )
            .value(events.len() as f64 / secs)
            .note(format!(
                "{} commands in {secs:.2} s; {distinct:.0} distinct members a bucket",
                thousands(events.len() as f64)
            )),
        );
        // The replica now: one full sync, faster than streaming the fill to it.
        eprintln!("  starting a replica, waiting for its sync ...");
        let port = c.info_field("server", "tcp_port")?;
        c.cmd("CONFIG SET repl-diskless-sync-delay 0")?;
        let (_replica, mut rc) = fresh(env, &["--replicaof".into(), "127.0.0.1".into(), port])?;
        let replica_cpu0 = rc.server_cpu()?;
        wait_for("replica in sync", Duration::from_secs(60), || {
            replica_synced(c, &mut rc)
        })?;
        let newest_ms = newest * 1000;
        while now_ms() < newest_ms + LAG_S * 1000 {
            sleep_checked(Duration::from_millis(20))?;
        }
        let aged = |c: &mut Conn| info_count(c, "recipes_topn_aged_buckets");
        let aged_note = |c: &mut Conn, rc: &mut Conn| -> Result<String, String> {
            Ok(format!(
                "buckets aged out of the running total by then: {} on the master, {} on the replica \
                 (which counts only those it aged after its sync)",
                aged(c)?,
                aged(rc)?
            ))
        };
        figures.push(
            Figure::new(
                "reads at",
                "the LAST k reads began this long after the newest bucket began",
                Kind::Info,
                "ms",
            )
            .value((now_ms() - newest_ms) as f64)
            .note(aged_note(c, &mut rc)?),
        );
        let at = newest_ms + 500;
        eprintln!("  reading LAST k on the master and the replica ...");
        for (k, recipe) in LASTS.into_iter().zip(&recipe) {
            let read = format!("TOPN.TOP lat:r 10 AT {at} LAST {k}");
            read_figures(
                [("master", &mut *c), ("replica", &mut rc)],
                &format!("LAST {k}"),
                &read,
                recipe,
                figures,
            )?;
        }
        eprintln!("  waiting until {AGED} buckets aged out ...");
        // Bounded: the key expires a whole window (24 s) after its newest bucket.
        let aged_by = (newest + AGED) * 1000 + 300;
        let give_up = aged_by + 5000;
        while now_ms() < aged_by || (aged(c)? < AGED as i64 && now_ms() < give_up) {
            sleep_checked(Duration::from_millis(50))?;
        }
        figures.push(
            Figure::new(
                "aged read at",
                format!("the whole-window reads began this long after the newest bucket began ({AGED} buckets out)"),
                Kind::Info,
                "ms",
            )
            .value((now_ms() - newest_ms) as f64)
            .note(aged_note(c, &mut rc)?),
        );
        let whole = &recipe[LASTS.len() - 1];
        let read = format!("TOPN.TOP lat:r 10 AT {at}");
        read_figures(
            [("master", &mut *c), ("replica", &mut rc)],
            &format!("aged {AGED}"),
            &read,
            whole,
            figures,
        )?;
        rc.server_cpu().map(|t| t - replica_cpu0)
    })
}
