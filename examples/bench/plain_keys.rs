//! `plain-keys`: what the module costs keys that are not its own. DEL,
//! expiry and eviction churn of plain string keys on three servers of this
//! one run: one without the module, one with it and no keys of its own, one
//! with it and 2,000 ULIST keys each holding a value with an expiry (their
//! schedules full). Rounds interleave the servers; each measure is the
//! module server's best keys per CPU second over the bare one's (see
//! [`ratio`], [`churn_once`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use crate::control::{start_server, Conn};
use crate::group::{goal, Goal, Group, Measure, Measured, Role, Unit};
use crate::pipe::{enc, A};
use crate::report::{fmt_ops, median};
use crate::server::Server;
use crate::settings::Settings;

/// Plain keys churned in one timed pass.
const KEYS: u64 = 200_000;
/// ULIST keys with an expiring value on the "full" server.
const SCHEDULED: u64 = 2_000;

#[derive(Clone, Copy, PartialEq)]
enum Churn {
    Del,
    Expiry,
    Eviction,
}

impl Churn {
    const ALL: [Churn; 3] = [Churn::Del, Churn::Expiry, Churn::Eviction];

    fn name(self) -> &'static str {
        match self {
            Churn::Del => "DEL",
            Churn::Expiry => "expiry",
            Churn::Eviction => "eviction",
        }
    }
}

/// Keys/s of each churn on each server, per round: `[churn][server]`, the
/// servers bare, module with empty schedules, module with full ones.
type Rates = Vec<[[f64; 3]; 3]>;
type Shared = Rc<RefCell<Option<Result<Rates, String>>>>;

pub(crate) fn group(s: &Settings) -> Group {
    let shared: Shared = Default::default();
    let rounds = s.rounds;
    let mut measures = Vec::new();
    let mut ids = Vec::new();
    for churn in Churn::ALL {
        for (server, schedules) in [(1, "empty"), (2, "full")] {
            let id: &'static str =
                Box::leak(format!("{} {schedules}", churn.name()).into_boxed_str());
            ids.push(id);
            let shared = shared.clone();
            let label = format!(
                "{} of plain keys, module loaded with schedules {schedules}, over no module",
                churn.name()
            );
            measures.push(Measure::new(
                id,
                Role::Module,
                label,
                Unit::Ratio,
                move |_| {
                    let mut slot = shared.borrow_mut();
                    let rates = slot.get_or_insert_with(|| churn_rounds(rounds));
                    let rates = rates.as_ref().map_err(Clone::clone)?;
                    ratio(rates, churn, server)
                },
            ));
        }
    }
    Group {
        measures,
        compares: ids
            .into_iter()
            .map(|id| goal(id, Goal::AtLeast(0.97)))
            .collect(),
        ..Group::new(
            "plain-keys",
            format!(
                "Plain keys: {KEYS} string keys DELeted, expired (each read after its PX 1 \
                 passed, active expiry off) and evicted (allkeys-random, {KEYS} new SETs over a \
                 full maxmemory), pipelined, on a server without the module, with it and no keys \
                 of its own, and with it and {SCHEDULED} ULIST keys with an expiring value"
            ),
        )
    }
}

/// The best round's keys/s of the module server over the bare one's: on a
/// shared machine a pass is only ever slowed down by others (preemption,
/// caches), so each server's fastest pass is the nearest to its own cost.
fn ratio(rates: &Rates, churn: Churn, server: usize) -> Result<Measured, String> {
    let c = churn as usize;
    let best = |s: usize| rates.iter().map(|r| r[c][s]).fold(0.0, f64::max);
    let (bare, module) = (best(0), best(server));
    let mut ratios: Vec<f64> = rates.iter().map(|r| r[c][server] / r[c][0]).collect();
    let note = format!(
        "best {} keys/s vs {} without the module; median of the rounds' ratios {:.3}",
        fmt_ops(module),
        fmt_ops(bare),
        median(&mut ratios).ok_or("no rounds")?,
    );
    Ok((module / bare, note).into())
}

/// The three servers, then `rounds` rounds of every churn on each in turn.
fn churn_rounds(rounds: usize) -> Result<Rates, String> {
    let debug = ["--enable-debug-command", "yes"];
    let bare = Server::builder()
        .dies_with_caller()
        .without_module()
        .args(&debug)
        .try_start()
        .map_err(|e| e.to_string())?;
    let empty = start_server(&debug)?;
    let full = start_server(&debug)?;
    let mut conns = [
        Conn::open(bare.port)?,
        Conn::open(empty.port)?,
        Conn::open(full.port)?,
    ];
    for c in &mut conns {
        c.cmd("DEBUG SET-ACTIVE-EXPIRE 0")?;
        c.cmd("CONFIG SET maxmemory-policy allkeys-random")?;
    }
    let mut rates = Rates::new();
    for round in 0..rounds {
        let mut round_rates = [[0.0; 3]; 3];
        for churn in Churn::ALL {
            // The order of the servers rotates each round.
            for i in 0..3 {
                let server = (i + round) % 3;
                let c = &mut conns[server];
                c.cmd("FLUSHALL")?;
                if server == 2 {
                    fill_schedules(c)?;
                }
                round_rates[churn as usize][server] = churn_once(c, churn)?;
            }
        }
        rates.push(round_rates);
    }
    Ok(rates)
}

/// 2,000 ULIST keys, each with a value due in a day.
fn fill_schedules(c: &mut Conn) -> Result<(), String> {
    c.load("ULIST.CREATE", SCHEDULED, |i, out| {
        enc(
            out,
            &[
                A::S("ULIST.CREATE"),
                A::K("ul:", i),
                A::S("VALUE"),
                A::S("v"),
            ],
        );
    })?;
    c.load("ULIST.ADD", SCHEDULED, |i, out| {
        enc(
            out,
            &[
                A::S("ULIST.ADD"),
                A::K("ul:", i),
                A::S("EXPIRE"),
                A::S("86400"),
                A::S("v"),
                A::S("x"),
            ],
        );
    })
}

/// One pass of `churn` over [`KEYS`] plain keys; keys per second of the
/// server's CPU (user + sys, from `INFO cpu`): what the server spends, which
/// other work on a shared machine disturbs far less than wall time.
fn churn_once(c: &mut Conn, churn: Churn) -> Result<f64, String> {
    c.load("SET", KEYS, |i, out| {
        if churn == Churn::Expiry {
            enc(
                out,
                &[
                    A::S("SET"),
                    A::K("k:", i),
                    A::S("value"),
                    A::S("PX"),
                    A::S("1"),
                ],
            );
        } else {
            enc(out, &[A::S("SET"), A::K("k:", i), A::S("value")]);
        }
    })?;
    let evicted = c.info_int("stats", "evicted_keys")?;
    if churn == Churn::Eviction {
        let used = c.info_int("memory", "used_memory")?;
        c.cmd(&format!("CONFIG SET maxmemory {used}"))?;
    } else {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let (t, cpu) = (Instant::now(), c.server_cpu()?);
    match churn {
        Churn::Del => c.load("DEL", KEYS, |i, out| {
            enc(out, &[A::S("DEL"), A::K("k:", i)])
        }),
        // A read of an expired key deletes it, as the expiry cycle would.
        Churn::Expiry => c.load("EXISTS", KEYS, |i, out| {
            enc(out, &[A::S("EXISTS"), A::K("k:", i)])
        }),
        Churn::Eviction => c.load("SET", KEYS, |i, out| {
            enc(out, &[A::S("SET"), A::K("n:", i), A::S("value")])
        }),
    }?;
    let cpu = c.server_cpu()? - cpu;
    let wall = t.elapsed().as_secs_f64();
    if churn == Churn::Eviction {
        c.cmd("CONFIG SET maxmemory 0")?;
        if c.info_int("stats", "evicted_keys")? == evicted {
            return Err("eviction: nothing was evicted".into());
        }
    }
    Ok(KEYS as f64 / cpu.max(wall * 0.01))
}
