//! The run loop: every scenario of a group in turn for R rounds (the order
//! rotating), C client threads each driving its own connection, then the
//! group's measures; the report is `report.rs`'s.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::control::{connect, Conn};
use crate::group::{Group, Load, Measure, Measured, Unit};
use crate::pipe::{now_ms, Gen, Pipe};
use crate::probe::{CpuSnap, CpuUse};
use crate::report::{self, fmt_ops, Row};
use crate::settings::{stopped, Settings};

/// What every group of a run shares.
pub(crate) struct RunContext<'a> {
    pub settings: &'a Settings,
    pub port: u16,
    pub redis_version: String,
    pub cpus: usize,
}

pub(crate) enum Status {
    Ok,
    Skipped(String),
    Failed(String),
}

impl Status {
    pub fn text(&self) -> String {
        match self {
            Status::Ok => String::new(),
            Status::Skipped(w) => w.clone(),
            Status::Failed(e) => format!("FAILED: {e}"),
        }
    }
}

/// A scenario's runs, one entry per round (`None`: not run).
pub(crate) struct ScenResult {
    pub ops: Vec<Option<f64>>,
    /// Server CPU and bench (client) CPU during the run, in cores.
    pub cpu: Vec<Option<CpuUse>>,
    /// Dialogs: attempts per operation (1 = never retried).
    pub attempts: Vec<Option<f64>>,
    pub status: Status,
}

pub(crate) struct MeasureResult {
    pub value: Option<f64>,
    pub note: String,
    pub json: Option<serde_json::Value>,
    pub status: Status,
}

/// A group's results so far.
pub(crate) struct Results {
    pub scenarios: Vec<ScenResult>,
    pub measures: Vec<MeasureResult>,
    pub started_unix_ms: u64,
    pub started: Instant,
    /// Other load on the machine during its runs and timed measures, in CPUs.
    pub busy: Vec<f64>,
    pub failed: bool,
}

struct RunOut {
    ops: u64,
    secs: f64,
    /// Attempts of dialog operations (retries included); 0 for pipelined runs.
    attempts: u64,
}

/// Per client: (operations, attempts, start, end).
type ClientOut = (u64, u64, Instant, Instant);

/// One client until `deadline`: pipelines of `pipeline` operations, or one dialog after the other.
fn client(
    port: u16,
    pipeline: usize,
    dur: Duration,
    load: &Load,
    mut g: Gen,
    barrier: &Barrier,
) -> Result<ClientOut, String> {
    let (mut ops, mut attempts) = (0u64, 0u64);
    match load {
        Load::Dialog(d) => {
            let c = connect(port);
            barrier.wait();
            let mut c = c?;
            let start = Instant::now();
            let deadline = start + dur;
            loop {
                g.now_ms = now_ms();
                attempts += d(&mut g, &mut c)?;
                ops += 1;
                if Instant::now() >= deadline || stopped() {
                    return Ok((ops, attempts, start, Instant::now()));
                }
            }
        }
        Load::Pipelined(f) => {
            let p = Pipe::open(port);
            barrier.wait();
            let mut p = p.map_err(|e| format!("connect: {e}"))?;
            let mut out = Vec::with_capacity(pipeline * 128);
            let start = Instant::now();
            let deadline = start + dur;
            loop {
                out.clear();
                g.now_ms = now_ms();
                let mut replies = 0;
                for _ in 0..pipeline {
                    replies += f(&mut g, &mut out);
                }
                p.exchange(&out, replies)?;
                ops += pipeline as u64;
                if Instant::now() >= deadline || stopped() {
                    return Ok((ops, 0, start, Instant::now()));
                }
            }
        }
    }
}

/// Drive one scenario for `dur` with `clients` connections of `pipeline`-deep
/// pipelines (or, for a dialog, one conversation at a time).
fn run_load(
    port: u16,
    clients: usize,
    pipeline: usize,
    dur: Duration,
    load: &Load,
    seed: u64,
) -> Result<RunOut, String> {
    let barrier = Barrier::new(clients);
    let results: Vec<Result<ClientOut, String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                let g = Gen::new(seed.wrapping_mul(31).wrapping_add(t as u64 * 0x1_0000_0001));
                let barrier = &barrier;
                sc.spawn(move || client(port, pipeline, dur, load, g, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".into()))
            })
            .collect()
    });
    let (mut ops, mut attempts) = (0, 0);
    let mut span: Option<(Instant, Instant)> = None;
    for r in results {
        let (o, a, s, e) = r?;
        ops += o;
        attempts += a;
        span = Some(span.map_or((s, e), |(s0, e0)| (s0.min(s), e0.max(e))));
    }
    let (start, end) = span.ok_or("no clients")?;
    Ok(RunOut {
        ops,
        secs: (end - start).as_secs_f64(),
        attempts,
    })
}

fn missing(c: &mut Conn, requires: &[&'static str]) -> Result<Option<String>, String> {
    let mut miss = vec![];
    for r in requires {
        if !c.has(r)? {
            miss.push(r.to_ascii_uppercase());
        }
    }
    Ok(if miss.is_empty() {
        None
    } else {
        Some(format!(
            "skipped: {} unknown to the server",
            miss.join(", ")
        ))
    })
}

/// Run a measure; for timings, also report how busy the rest of the machine
/// was (SLOWLOG durations are wall-clock: preemption inflates them).
fn timed_measure(c: &mut Conn, m: &Measure, busy: &mut Vec<f64>) -> Result<Measured, String> {
    if m.unit != Unit::Micros {
        return (m.run)(c);
    }
    let before = CpuSnap::take(c)?;
    let mut out = (m.run)(c)?;
    let cpu = CpuSnap::take(c)?.since(&before);
    if let Some(o) = cpu.other {
        busy.push(o);
        out.note += &format!("; other load on the machine {:.0}% of a CPU", o * 100.0);
    }
    Ok(out)
}

/// The throughput rounds of a group.
fn run_rounds(
    ctx: &RunContext,
    c: &mut Conn,
    grp: &Group,
    res: &mut Results,
) -> Result<(), String> {
    let s = ctx.settings;
    let n = grp.scenarios.len();
    let dur = Duration::from_millis(s.ms);
    for round in 0..s.rounds {
        let mut line = format!("  round {}/{}:", round + 1, s.rounds);
        for k in 0..n {
            let i = (k + round) % n;
            let sc = &grp.scenarios[i];
            if !matches!(res.scenarios[i].status, Status::Ok) {
                continue;
            }
            if stopped() {
                return Err("interrupted".into());
            }
            let attempt = (|| -> Result<(RunOut, CpuUse), String> {
                if grp.reset_each {
                    c.cmd("FLUSHALL")?;
                    if let Some(setup) = &grp.setup {
                        setup(c).map_err(|e| format!("group setup: {e}"))?;
                    }
                }
                let f = (sc.setup)(c).map_err(|e| format!("setup: {e}"))?;
                let cpu0 = CpuSnap::take(c)?;
                let out = run_load(
                    ctx.port,
                    sc.clients.unwrap_or(s.clients),
                    sc.pipeline.unwrap_or(s.pipeline),
                    dur,
                    &f,
                    (round * 1000 + i) as u64,
                )?;
                let cpu = CpuSnap::take(c)?.since(&cpu0);
                Ok((out, cpu))
            })();
            let r = &mut res.scenarios[i];
            match attempt {
                _ if stopped() => return Err("interrupted".into()),
                Ok((out, cpu)) => {
                    let ops = out.ops as f64 / out.secs;
                    r.ops[round] = Some(ops);
                    r.cpu[round] = Some(cpu);
                    if out.attempts > 0 {
                        r.attempts[round] = Some(out.attempts as f64 / out.ops as f64);
                    }
                    if let Some(o) = cpu.other {
                        res.busy.push(o);
                    }
                    line += &format!(" {} {}/s", sc.id, fmt_ops(ops));
                }
                Err(e) => {
                    eprintln!("!!! {} / {}: FAILED: {e}", grp.id, sc.id);
                    r.status = Status::Failed(e);
                    res.failed = true;
                }
            }
        }
        eprintln!("{line}");
    }
    Ok(())
}

/// Runs a group, prints its detail and writes `target/bench/<group>.json`
/// (also after each measure, so a long group leaves what it measured);
/// returns the rows of the final table, whether anything failed and the
/// other load seen.
pub(crate) fn run_group(
    ctx: &RunContext,
    c: &mut Conn,
    grp: &Group,
) -> Result<(Vec<Row>, bool, Vec<f64>), String> {
    println!();
    println!("== {} ==", grp.title);
    let mut res = Results {
        scenarios: Vec::new(),
        measures: Vec::new(),
        started_unix_ms: now_ms(),
        started: Instant::now(),
        busy: Vec::new(),
        failed: false,
    };
    let rounds = ctx.settings.rounds;
    for sc in &grp.scenarios {
        let status = match missing(c, &sc.requires)? {
            Some(why) => Status::Skipped(why),
            None => Status::Ok,
        };
        res.scenarios.push(ScenResult {
            ops: vec![None; rounds],
            cpu: vec![None; rounds],
            attempts: vec![None; rounds],
            status,
        });
    }
    c.cmd("FLUSHALL")?;
    if let Some(setup) = &grp.setup {
        setup(c).map_err(|e| format!("{}: setup: {e}", grp.id))?;
    }
    if !grp.scenarios.is_empty() {
        run_rounds(ctx, c, grp, &mut res)?;
    }
    for m in &grp.measures {
        let r = match missing(c, &m.requires)? {
            Some(why) => MeasureResult {
                value: None,
                note: String::new(),
                json: None,
                status: Status::Skipped(why),
            },
            None => match timed_measure(c, m, &mut res.busy) {
                Ok(out) => MeasureResult {
                    value: Some(out.value),
                    note: out.note,
                    json: out.json,
                    status: Status::Ok,
                },
                Err(e) => {
                    eprintln!("!!! {} / {}: FAILED: {e}", grp.id, m.id);
                    res.failed = true;
                    MeasureResult {
                        value: None,
                        note: String::new(),
                        json: None,
                        status: Status::Failed(e),
                    }
                }
            },
        };
        res.measures.push(r);
        report::write_json(ctx, grp, &res)?;
    }
    let path = report::write_json(ctx, grp, &res)?;
    let rows = report::print_group(ctx.settings, grp, &res);
    println!("  results in {}", path.display());
    Ok((rows, res.failed, res.busy))
}
