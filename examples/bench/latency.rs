//! The `latency` group: the worst case a user sees (SLOWLOG, a PING probe)
//! while one structure grows to 1,000,000 entries, while it is reclaimed in
//! the background, and when it is deleted; and the server-side time of TOPN
//! reads on a big key, on a master and on a real replica.
//!
//! Each scenario runs on a fresh server of its own (`start_server_with`),
//! stopped when the scenario ends:
//! - `topn`: `TOPN.INCR` of 1,000,000 members into one bucket, then `DEL` of
//!   the key;
//! - `ulist`: `ULIST.ADD` of 1,000,000 values into one scope, all expiring
//!   `EXPIRE_S` after the growth starts, the background reclaim to its end;
//!   then `ULIST.DEL` matching 100,000 partitions of another list;
//! - `hcounter`: `HCOUNTER.INCR` of 1,000,000 cells into one partition plus
//!   100,000 one-cell partitions, with a TTL that ends `EXPIRE_S` after the
//!   growth starts, the background reclaim to its end; then on a counter
//!   without TTL, `HCOUNTER.DEL` of a 1,000,000-cell partition and of 100,000
//!   partitions;
//! - `topn-reads` (`latency/reads.rs`): `TOPN.TOP ... AT <newest> LAST k` on
//!   24 one-second buckets of 50,000 events, master and replica, against the
//!   recipe's ZUNIONSTORE + ZREVRANGE of the same bucket zsets.
//!
//! Before each scenario a probe client PINGs the idle server (one PING at a
//! time, about one a millisecond); the same probe runs through every phase.
//! Growth is pipelined (`Conn::load`), which also gives TOPN.INCR / ULIST.ADD /
//! HCOUNTER.INCR throughput for A/B runs. Commands are timed by SLOWLOG (wall
//! clock inside the server: a preempted server inflates them, so each scenario
//! also reports the other load on the machine). Goals are printed PASS / FAIL,
//! never asserted: every command and read <= 1 ms, PING never more than 2 ms
//! above its idle max (a timer step shows there). The group's headline per
//! scenario is its slowest command or read. Every figure, with percentiles and
//! counts for plots, is also written to `target/bench/latency.json`.

mod reads;

use super::json::{write_results, Json};
use super::*;

/// Entries a structure grows to.
const BIG: u64 = 1_000_000;
/// Small partitions (HCOUNTER one-cell partitions, partitions a DEL matches).
const PARTS: u64 = 100_000;
/// How long the probe PINGs the idle server before a scenario.
const IDLE_PROBE: Duration = Duration::from_secs(2);
/// How long the probe keeps going after a delete: deferred work shows there.
const AFTER_DELETE: Duration = Duration::from_secs(1);
/// ULIST values and HCOUNTER partitions expire this long after their growth
/// starts (the growth has to end before: it takes a few seconds).
const EXPIRE_S: u64 = 8;
/// Longest wait for a background reclaim to finish.
const RECLAIM_MAX: Duration = Duration::from_secs(120);
/// SLOWLOG threshold while growing (a million commands cannot all be kept).
const GROW_SLOW_US: u64 = 100;
const SLOWLOG_LEN: u64 = 100_000;

const COMMAND_GOAL_US: f64 = 1000.0;
const PING_GOAL_US: f64 = 2000.0;

// ----------------------------------------------------------------------
// Figures and scenario outcomes
// ----------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A command's server-side time (goal: <= 1 ms).
    Command,
    /// The probe's PING max above its idle max (goal: <= 2 ms).
    Ping,
    /// Context: throughput, durations, idle figures.
    Info,
}

struct Figure {
    id: String,
    label: String,
    value: Option<f64>,
    /// No value, but known to be below this (nothing reached the SLOWLOG threshold).
    below: Option<f64>,
    unit: &'static str,
    kind: Kind,
    note: String,
    /// More numbers for plots (JSON only): percentiles, counts.
    details: Vec<(&'static str, f64)>,
}

impl Figure {
    fn new(
        id: impl Into<String>,
        label: impl Into<String>,
        kind: Kind,
        unit: &'static str,
    ) -> Figure {
        Figure {
            id: id.into(),
            label: label.into(),
            value: None,
            below: None,
            unit,
            kind,
            note: String::new(),
            details: Vec::new(),
        }
    }
    fn value(mut self, v: f64) -> Figure {
        self.value = Some(v);
        self
    }
    fn note(mut self, n: impl Into<String>) -> Figure {
        self.note = n.into();
        self
    }
    fn details(mut self, d: &[(&'static str, f64)]) -> Figure {
        self.details.extend_from_slice(d);
        self
    }
    fn goal(&self) -> Option<f64> {
        match self.kind {
            Kind::Command => Some(COMMAND_GOAL_US),
            Kind::Ping => Some(PING_GOAL_US),
            Kind::Info => None,
        }
    }
    fn met(&self) -> Option<bool> {
        let g = self.goal()?;
        self.value.or(self.below).map(|v| v <= g)
    }
    fn value_text(&self) -> String {
        match (self.value, self.below) {
            (Some(v), _) => fmt_unit(v, self.unit),
            (None, Some(b)) => format!("< {}", fmt_unit(b, self.unit)),
            (None, None) => "n/a".into(),
        }
    }
    fn json(&self) -> Json {
        Json::obj([
            ("id", Json::from(self.id.as_str())),
            ("label", self.label.as_str().into()),
            ("value", self.value.into()),
            ("below", self.below.into()),
            ("unit", self.unit.into()),
            ("goal_at_most", self.goal().into()),
            ("met", self.met().into()),
            ("note", self.note.as_str().into()),
            (
                "details",
                Json::obj(self.details.iter().map(|&(k, v)| (k, Json::from(v)))),
            ),
        ])
    }
}

fn fmt_unit(v: f64, unit: &str) -> String {
    match unit {
        "ms" if v < 100.0 => format!("{v:.1} ms"),
        _ => format!("{} {unit}", thousands(v)),
    }
}

/// What one scenario measured.
struct Outcome {
    id: &'static str,
    title: String,
    redis_version: String,
    wall: Duration,
    /// Other load on the machine during the scenario, in CPUs.
    other_load: Option<f64>,
    figures: Vec<Figure>,
}

impl Outcome {
    /// The slowest command or read (ms): the group's headline per scenario.
    fn slowest_ms(&self) -> f64 {
        self.figures
            .iter()
            .filter(|f| f.kind == Kind::Command)
            .filter_map(|f| f.value.or(f.below))
            .fold(0.0, f64::max)
            / 1000.0
    }

    /// The figures as a table, one line each (notes below), for the measure's note.
    fn table(&self) -> String {
        let failed = self
            .figures
            .iter()
            .filter(|f| f.met() == Some(false))
            .count();
        let mut out = format!(
            "{:.1} s, other load on the machine {}; {failed} goals not met\n    {}\n",
            self.wall.as_secs_f64(),
            self.other_load
                .map(|o| format!("{:.0}% of a CPU", o * 100.0))
                .unwrap_or_else(|| "unknown".into()),
            self.title
        );
        for f in &self.figures {
            let goal = f
                .goal()
                .map(|g| format!("<= {}", fmt_unit(g, f.unit)))
                .unwrap_or_default();
            let verdict = match f.met() {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "",
            };
            out += &format!(
                "    {:<22} {:>14} {:>12} {verdict:<4}  {}\n",
                f.id,
                f.value_text(),
                goal,
                f.label
            );
            if !f.note.is_empty() {
                out += &format!("    {:<22} {}\n", "", f.note);
            }
        }
        out.trim_end().to_string()
    }

    fn json(&self) -> Json {
        Json::obj([
            ("id", Json::from(self.id)),
            ("title", self.title.as_str().into()),
            ("redis_version", self.redis_version.as_str().into()),
            ("wall_s", self.wall.as_secs_f64().into()),
            ("other_load_cpus", self.other_load.into()),
            (
                "figures",
                Json::Arr(self.figures.iter().map(Figure::json).collect()),
            ),
        ])
    }
}

// ----------------------------------------------------------------------
// Instruments: the PING probe, SLOWLOG, pipelined growth, reclaim
// ----------------------------------------------------------------------

/// Runs `work` while a probe client PINGs the server from its own connection.
fn probed<T>(
    port: u16,
    work: impl FnOnce() -> Result<T, String>,
) -> Result<(T, PingStats), String> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let probe = sc.spawn(|| ping_loop(port, &stop));
        let out = work();
        stop.store(true, Ordering::Relaxed);
        let pings = probe
            .join()
            .unwrap_or_else(|_| Err("PING thread panicked".into()));
        Ok((out?, pings?))
    })
}

/// The `q` quantile of a probe's round trips, us (0 without samples).
fn percentile(p: &PingStats, q: f64) -> f64 {
    let v = p.sorted_us();
    v.get(((v.len().max(1) - 1) as f64 * q).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

fn sleep_checked(d: Duration) -> Result<(), String> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stopped() {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    Ok(())
}

/// Starts logging every command slower than `threshold_us` into an empty SLOWLOG.
fn slowlog_arm(c: &mut Conn, threshold_us: u64) -> Result<(), String> {
    c.cmd(&format!("CONFIG SET slowlog-max-len {SLOWLOG_LEN}"))?;
    c.cmd(&format!(
        "CONFIG SET slowlog-log-slower-than {threshold_us}"
    ))?;
    c.cmd("SLOWLOG RESET").map(|_| ())
}

struct Slow {
    /// (server-side us, the command as logged), slowest first.
    entries: Vec<(i64, String)>,
    /// The log filled up: older entries were dropped.
    full: bool,
}

/// The SLOWLOG entries of commands named `names` (`"TOPN."` = any TOPN.*
/// command), slowest first; empties the log.
fn slowlog_take(c: &mut Conn, names: &[&str]) -> Result<Slow, String> {
    let log = c.cmd(&format!("SLOWLOG GET {SLOWLOG_LEN}"))?;
    c.cmd("SLOWLOG RESET")?;
    let V::Arr(all) = log else {
        return Err(format!("SLOWLOG GET: {}", log.text()));
    };
    let full = all.len() as u64 >= SLOWLOG_LEN;
    let mut entries = Vec::new();
    for e in &all {
        let V::Arr(f) = e else { continue };
        let (Some(d), Some(V::Arr(args))) = (f.get(2), f.get(3)) else {
            continue;
        };
        let name = args
            .first()
            .map(|a| a.text().to_ascii_uppercase())
            .unwrap_or_default();
        let wanted = names.iter().any(|n| {
            if n.ends_with('.') {
                name.starts_with(n)
            } else {
                name == *n
            }
        });
        if wanted {
            let line: Vec<String> = args.iter().take(8).map(|a| a.text()).collect();
            entries.push((d.int()?, line.join(" ")));
        }
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok(Slow { entries, full })
}

fn slowest_figure(id: &str, label: String, slow: &Slow, threshold_us: u64) -> Figure {
    let mut f = Figure::new(id, label, Kind::Command, "us");
    let over_goal = slow
        .entries
        .iter()
        .filter(|e| e.0 as f64 > COMMAND_GOAL_US)
        .count();
    let top: Vec<String> = slow
        .entries
        .iter()
        .take(3)
        .map(|(us, cmd)| format!("{} us `{cmd}`", thousands(*us as f64)))
        .collect();
    let mut note = if threshold_us > 0 {
        format!(
            "{} logged above {threshold_us} us, {over_goal} above 1 ms",
            slow.entries.len()
        )
    } else {
        format!("{} calls, {over_goal} above 1 ms", slow.entries.len())
    };
    if !top.is_empty() {
        note += &format!("; slowest: {}", top.join(", "));
    }
    if slow.full {
        note += "; the SLOWLOG filled up: older entries were lost";
    }
    f.details = vec![
        ("logged", slow.entries.len() as f64),
        ("above_goal", over_goal as f64),
    ];
    match slow.entries.first() {
        Some(&(us, _)) => f.value = Some(us as f64),
        None => f.below = Some(threshold_us as f64),
    }
    f.note(note)
}

/// Pipelines `n` commands (`f(i, out)` writes number i) and returns the seconds taken.
fn timed_load(
    c: &mut Conn,
    what: &str,
    n: u64,
    f: impl FnMut(u64, &mut Vec<u8>),
) -> Result<f64, String> {
    let t = Instant::now();
    c.load(what, n, f)?;
    Ok(t.elapsed().as_secs_f64())
}

fn info_count(c: &mut Conn, field: &str) -> Result<i64, String> {
    c.info_field("recipes", field)?
        .parse()
        .map_err(|e| format!("{field}: {e}"))
}

/// A fresh server and a control connection to it.
fn fresh(env: &Env, extra: &[String]) -> Result<(Server, Conn), String> {
    let server = start_server_with(&env.redis_server, &env.module, extra)?;
    let c = Conn::open(server.port).map_err(|e| format!("connect: {e}"))?;
    Ok((server, c))
}

/// A scenario in progress: its server's control connection and port, the idle
/// probe's figures, and the figures so far.
struct Run {
    c: Conn,
    port: u16,
    idle: PingStats,
    figures: Vec<Figure>,
}

impl Run {
    /// The probe's max during a phase against its idle max; notes when the idle max
    /// itself was a stall (other load on the machine), which makes the comparison lenient.
    fn ping_figure(&self, id: &str, phase: &str, during: &PingStats) -> Figure {
        let (idle_max, idle_p99) = (self.idle.max_us(), percentile(&self.idle, 0.99));
        let mut note = during.text();
        if idle_max > idle_p99 + PING_GOAL_US {
            note += &format!(
                "; the idle max ({} us, p99 {} us) was itself a stall: other load on the machine",
                thousands(idle_max),
                thousands(idle_p99)
            );
        }
        Figure::new(
            id,
            format!("PING max {phase}, minus the idle max"),
            Kind::Ping,
            "us",
        )
        .value(during.max_us() - idle_max)
        .note(note)
        .details(&[
            ("max_us", during.max_us()),
            ("p99_us", percentile(during, 0.99)),
            ("p50_us", percentile(during, 0.5)),
            ("pings", during.samples.len() as f64),
            ("idle_max_us", idle_max),
            ("idle_p99_us", idle_p99),
        ])
    }

    /// The growth phase: `n` pipelined `command`s (`f` writes them) under the
    /// probe. Adds the throughput, the slowest command of the family and the
    /// probe's figures.
    fn grow(
        &mut self,
        command: &str,
        n: u64,
        f: impl FnMut(u64, &mut Vec<u8>),
    ) -> Result<(), String> {
        eprintln!("  growing: {} x {command} ...", thousands(n as f64));
        slowlog_arm(&mut self.c, GROW_SLOW_US)?;
        let c = &mut self.c;
        let (secs, pings) = probed(self.port, || timed_load(c, command, n, f))?;
        let family = format!("{}.", command.split('.').next().unwrap_or(command));
        let slow = slowlog_take(&mut self.c, &[family.as_str()])?;
        self.figures.push(
            Figure::new(
                "grow ops/s",
                format!("{command} throughput while growing (1 connection, pipelined)"),
                Kind::Info,
                "ops/s",
            )
            .value(n as f64 / secs)
            .note(format!("{} commands in {secs:.2} s", thousands(n as f64))),
        );
        self.figures.push(slowest_figure(
            "grow slowest",
            format!("slowest {family}* command while growing (SLOWLOG)"),
            &slow,
            GROW_SLOW_US,
        ));
        let ping = self.ping_figure("grow PING", "while growing", &pings);
        self.figures.push(ping);
        Ok(())
    }

    /// One delete command under the probe, which runs `AFTER_DELETE` longer;
    /// checks its reply.
    fn delete(&mut self, id: &str, line: &str, expect: i64) -> Result<(), String> {
        eprintln!("  {line} ...");
        slowlog_arm(&mut self.c, 0)?;
        let c = &mut self.c;
        let (reply, pings) = probed(self.port, || {
            let r = c.cmd(line)?.int()?;
            sleep_checked(AFTER_DELETE)?;
            Ok(r)
        })?;
        if reply != expect {
            return Err(format!("{line}: replied {reply}, expected {expect}"));
        }
        let name = line.split(' ').next().unwrap_or(line).to_ascii_uppercase();
        let slow = slowlog_take(&mut self.c, &[name.as_str()])?;
        self.figures
            .push(slowest_figure(id, format!("`{line}` (SLOWLOG)"), &slow, 0));
        let phase = format!("from the delete to {} ms after", AFTER_DELETE.as_millis());
        let ping = self.ping_figure(&format!("{id} PING"), &phase, &pings);
        self.figures.push(ping);
        Ok(())
    }

    /// The reclaim phase: waits, the probe running, until INFO recipes `field`
    /// counts `n` more than `start`, at most `RECLAIM_MAX` after `expiry`.
    fn reclaim(&mut self, field: &str, start: i64, n: i64, expiry: Instant) -> Result<(), String> {
        let growth_end = Instant::now();
        let early = info_count(&mut self.c, field)? - start;
        eprintln!(
            "  waiting for the background reclaim of {} ...",
            thousands(n as f64)
        );
        let c = &mut self.c;
        let ((done, count), pings) = probed(self.port, || loop {
            let count = info_count(c, field)? - start;
            let now = Instant::now();
            if count >= n {
                return Ok((Some(now), count));
            }
            if now > expiry + RECLAIM_MAX {
                return Ok((None, count));
            }
            sleep_checked(Duration::from_millis(5))?;
        })?;
        let end = done.unwrap_or_else(Instant::now);
        let mut notes = Vec::new();
        if done.is_none() {
            notes.push(format!(
                "INCOMPLETE after {} s: {count} of {n}",
                RECLAIM_MAX.as_secs()
            ));
        }
        if growth_end > expiry {
            notes.push(format!(
                "the growth overran the expiry by {} ms ({early} already reclaimed at its end)",
                (growth_end - expiry).as_millis()
            ));
        }
        self.figures.push(
            Figure::new(
                "reclaim time",
                format!(
                    "from the expiry until INFO {field} counts {}",
                    thousands(n as f64)
                ),
                Kind::Info,
                "ms",
            )
            .value(end.saturating_duration_since(expiry).as_secs_f64() * 1000.0)
            .note(notes.join("; ")),
        );
        let during = pings.within(expiry.max(growth_end), end);
        let ping = self.ping_figure("reclaim PING", "during the reclaim", &during);
        self.figures.push(ping);
        Ok(())
    }
}

/// Runs `body` on a fresh server after the idle probe; times it and measures
/// the other load on the machine. `body` returns the CPU seconds of any other
/// server it started (a replica): those are not "other load".
fn scenario(
    env: &Env,
    id: &'static str,
    title: String,
    body: impl FnOnce(&mut Run) -> Result<f64, String>,
) -> Result<Outcome, String> {
    eprintln!("  latency scenario {id}: a fresh server, the idle probe ...");
    let (server, mut c) = fresh(env, &[])?;
    let redis_version = c.info_field("server", "redis_version")?;
    let t = Instant::now();
    let cpu0 = CpuSnap::take(&mut c)?;
    let ((), idle) = probed(server.port, || sleep_checked(IDLE_PROBE))?;
    let figures = vec![Figure::new(
        "idle PING",
        "probe on the idle server before the scenario (max)",
        Kind::Info,
        "us",
    )
    .value(idle.max_us())
    .note(idle.text())
    .details(&[
        ("p99_us", percentile(&idle, 0.99)),
        ("p50_us", percentile(&idle, 0.5)),
    ])];
    let mut run = Run {
        c,
        port: server.port,
        idle,
        figures,
    };
    let own_servers = body(&mut run)?;
    let peak = run.c.info_field("memory", "used_memory_peak")?;
    run.figures.push(
        Figure::new(
            "memory peak",
            "the server's used_memory_peak",
            Kind::Info,
            "B",
        )
        .value(peak.parse().map_err(|e| format!("used_memory_peak: {e}"))?),
    );
    let cpu = CpuSnap::take(&mut run.c)?.since(&cpu0);
    let wall = t.elapsed();
    Ok(Outcome {
        id,
        title,
        redis_version,
        wall,
        other_load: cpu
            .other
            .map(|o| (o - own_servers / wall.as_secs_f64()).max(0.0)),
        figures: run.figures,
    })
}

// ----------------------------------------------------------------------
// The growth / reclaim / delete scenarios
// ----------------------------------------------------------------------

fn topn_scenario(env: &Env) -> Result<Outcome, String> {
    let title = format!(
        "TOPN: {} members into one bucket of one key (TOPN.INCR ... AT <one time>), then DEL \
         of the key",
        thousands(BIG as f64)
    );
    scenario(env, "topn", title, |run| {
        run.c.cmd("TOPN.CREATE lat:topn BUCKET 3600 WINDOW 24")?;
        let at = now_ms();
        run.grow("TOPN.INCR", BIG, |i, out| {
            let m = topn_member(i);
            enc(
                out,
                &[
                    A::S("TOPN.INCR"),
                    A::S("lat:topn"),
                    A::U(m),
                    A::S("AT"),
                    A::U(at),
                ],
            )
        })?;
        let members = run.c.info_field("recipes", "recipes_topn_members")?;
        if members != BIG.to_string() {
            return Err(format!(
                "INFO recipes counts {members} TOPN members, not {BIG}"
            ));
        }
        run.delete("DEL", "DEL lat:topn", 1)?;
        Ok(0.0)
    })
}

fn ulist_scenario(env: &Env) -> Result<Outcome, String> {
    let title = format!(
        "ULIST: {} values into one scope, all expiring {EXPIRE_S} s after the growth starts \
         (ULIST.ADD ... EXPIRE {EXPIRE_S} AT <start>), the background reclaim; then ULIST.DEL \
         matching {} partitions",
        thousands(BIG as f64),
        thousands(PARTS as f64)
    );
    scenario(env, "ulist", title, |run| {
        run.c.cmd("ULIST.CREATE lat:ul VALUE user SCOPE month")?;
        let expired0 = info_count(&mut run.c, "recipes_ulist_expired_values")?;
        let (at, expiry) = (now_ms(), Instant::now() + Duration::from_secs(EXPIRE_S));
        run.grow("ULIST.ADD", BIG, |i, out| {
            let (add, user) = ([A::S("ULIST.ADD"), A::S("lat:ul")], A::K("u", i));
            let expire = [A::S("EXPIRE"), A::U(EXPIRE_S), A::S("AT"), A::U(at)];
            let names = [A::S("user"), user, A::S("month"), A::S("2024-05")];
            let args: Vec<A> = add.into_iter().chain(expire).chain(names).collect();
            enc(out, &args)
        })?;
        run.reclaim("recipes_ulist_expired_values", expired0, BIG as i64, expiry)?;
        run.c
            .cmd("ULIST.CREATE lat:uld VALUE user SCOPE month PARTITION day")?;
        run.c.load("ULIST partitions", PARTS, |i, out| {
            let add = [
                A::S("ULIST.ADD"),
                A::S("lat:uld"),
                A::S("user"),
                A::K("u", i),
            ];
            let partition = [A::S("month"), A::S("2024-05"), A::S("day"), A::K("d", i)];
            let args: Vec<A> = add.into_iter().chain(partition).collect();
            enc(out, &args)
        })?;
        run.delete("ULIST.DEL", "ULIST.DEL lat:uld month 2024-05", PARTS as i64)?;
        Ok(0.0)
    })
}

/// `HCOUNTER.INCR key <before> p <p> g <g>`: command `i` of a growth of BIG
/// cells in partition `big`, then PARTS one-cell partitions.
fn hcounter_incr<'a>(out: &mut Vec<u8>, key: &'a str, before: [A<'a>; 2], i: u64) {
    let (p, g) = if i < BIG {
        (A::S("big"), i)
    } else {
        (A::U(i - BIG), 0)
    };
    let incr = [A::S("HCOUNTER.INCR"), A::S(key)];
    let cell = [A::S("p"), p, A::S("g"), A::U(g)];
    let args: Vec<A> = incr.into_iter().chain(before).chain(cell).collect();
    enc(out, &args)
}

fn hcounter_scenario(env: &Env) -> Result<Outcome, String> {
    let (big, parts) = (thousands(BIG as f64), thousands(PARTS as f64));
    let title = format!(
        "HCOUNTER: {big} cells into one partition plus {parts} one-cell partitions, all with a \
         TTL ending {EXPIRE_S} s after the growth starts (HCOUNTER.INCR ... AT <start>), the \
         background reclaim; then, on a counter without TTL, HCOUNTER.DEL of a {big}-cell \
         partition and of {parts} partitions"
    );
    scenario(env, "hcounter", title, |run| {
        let create = format!("HCOUNTER.CREATE lat:hc PARTITION p GROUP g TTL {EXPIRE_S}");
        run.c.cmd(&create)?;
        let expired0 = info_count(&mut run.c, "recipes_hcounter_expired_partitions")?;
        let (at, expiry) = (now_ms(), Instant::now() + Duration::from_secs(EXPIRE_S));
        run.grow("HCOUNTER.INCR", BIG + PARTS, |i, out| {
            hcounter_incr(out, "lat:hc", [A::S("AT"), A::U(at)], i)
        })?;
        let field = "recipes_hcounter_expired_partitions";
        run.reclaim(field, expired0, (PARTS + 1) as i64, expiry)?;
        // The same cells without TTL, the big partition in day 0, the others in day 1.
        run.c
            .cmd("HCOUNTER.CREATE lat:hcd PARTITION day p GROUP g")?;
        eprintln!("  filling a counter without TTL the same way ...");
        run.c.load("HCOUNTER fill", BIG + PARTS, |i, out| {
            let day = [A::S("day"), A::S(if i < BIG { "0" } else { "1" })];
            hcounter_incr(out, "lat:hcd", day, i)
        })?;
        run.delete("DEL 1M cells", "HCOUNTER.DEL lat:hcd day 0 p big", 1)?;
        run.delete("DEL 100k parts", "HCOUNTER.DEL lat:hcd day 1", PARTS as i64)?;
        Ok(0.0)
    })
}

// ----------------------------------------------------------------------
// The group
// ----------------------------------------------------------------------

/// What the scenarios need from the bench's settings.
struct Env {
    redis_server: String,
    module: PathBuf,
}

type ScenarioFn = fn(&Env) -> Result<Outcome, String>;

pub(crate) fn group(s: &Settings) -> Group {
    let env = Rc::new(Env {
        redis_server: s.redis_server.clone(),
        module: s.module.clone(),
    });
    // The scenarios done so far, rewritten to the JSON file after each one.
    let results: Rc<RefCell<Vec<Json>>> = Default::default();
    let header: Vec<(String, Json)> = [
        ("group", Json::from("latency")),
        ("command", s.command_line().into()),
        ("module", s.module.display().to_string().into()),
        ("started_unix_ms", (now_ms() as f64).into()),
        (
            "goals",
            Json::obj([
                ("command_us_at_most", Json::from(COMMAND_GOAL_US)),
                ("ping_above_idle_us_at_most", PING_GOAL_US.into()),
            ]),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let measure = |id: &'static str, requires: Vec<&'static str>, run: ScenarioFn| {
        let (env, results, header) = (env.clone(), results.clone(), header.clone());
        Measure {
            id,
            label: "slowest command or read of the scenario (server-side); all figures below"
                .into(),
            unit: Unit::Millis,
            requires,
            run: Box::new(move |_| {
                let out = run(&env);
                results.borrow_mut().push(match &out {
                    Ok(o) => o.json(),
                    Err(e) => Json::obj([("id", Json::from(id)), ("error", e.as_str().into())]),
                });
                let mut doc = header.clone();
                doc.push(("scenarios".into(), Json::Arr(results.borrow().clone())));
                let path = write_results("latency", &Json::Obj(doc))?;
                let o = out?;
                Ok((
                    o.slowest_ms(),
                    format!("{}\n    figures also in {}", o.table(), path.display()),
                ))
            }),
        }
    };
    let ids = ["topn", "ulist", "hcounter", "topn-reads"];
    Group {
        id: "latency",
        title: "latency: worst cases at 1,000,000 entries, each scenario on a fresh server: \
                SLOWLOG (server-side) and a one-connection PING probe (max above its idle max); \
                goals: every command and read <= 1 ms, PING <= 2 ms above idle"
            .into(),
        reset_each: false,
        setup: None,
        scenarios: vec![],
        measures: vec![
            measure(ids[0], vec!["topn.incr"], topn_scenario),
            measure(ids[1], vec!["ulist.add"], ulist_scenario),
            measure(ids[2], vec!["hcounter.incr"], hcounter_scenario),
            measure(ids[3], vec!["topn.top"], reads::scenario),
        ],
        compares: ids
            .iter()
            .map(|&id| Compare {
                a: id,
                b: None,
                goal: Some(Goal::AtMost(1.0)),
            })
            .collect(),
    }
}
