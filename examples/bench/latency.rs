//! The `latency` group: the worst case a user sees (SLOWLOG, a PING probe)
//! while one structure grows to 1,000,000 entries, while it is reclaimed in
//! the background, and when it is deleted; and the server-side time of TOPN
//! reads on a big key, on a master and on a real replica.
//!
//! Each scenario runs on a fresh server of its own, stopped when the
//! scenario ends:
//! - `topn`: `TOPN.INCR` of 4,000,000 members into one bucket, then `DEL` of
//!   the key, twice (a fresh key each time): every write over 1 ms is
//!   reported with the member count it came at, and a count at which both
//!   growths had one is a failure (`latency/repeats.rs`: a structure copied
//!   whole as it doubles, where a stall of the machine lands anywhere);
//! - `ulist`: `ULIST.ADD` of 1,000,000 values into one scope, all expiring
//!   `EXPIRE_S` after the growth starts, the background reclaim to its end;
//!   then `ULIST.DEL` matching 100,000 partitions of another list;
//! - `hcounter`: `HCOUNTER.INCR` of 1,000,000 cells into one partition plus
//!   100,000 one-cell partitions, with a TTL that ends `EXPIRE_S` after the
//!   growth starts, the background reclaim to its end; then on a counter
//!   without TTL, `HCOUNTER.DEL` of a 1,000,000-cell partition and of 100,000
//!   partitions;
//! - a control after each of these three: the same growth with the core
//!   command on a fresh server (`controls.rs`: ZADD into one zset, twice, as
//!   the `topn` growths; SADD into one set, HINCRBY into one hash plus
//!   100,000 one-field hashes),
//!   without goals: the machine's own noise floor, printed next to the
//!   module's figures;
//! - `switch` (`latency/switch.rs`): the adds around a small TOPN key's and
//!   ULIST list's switch from compact to hashed (entry 512) on 40 keys each,
//!   every one timed, with a plain SADD beside each;
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
//! counts for plots, is also in `target/bench/latency.json`.

mod controls;
mod reads;
mod repeats;
mod switch;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use redis::FromRedisValue;
use serde_json::json;

use crate::control::{sleep_checked, start_server, Conn, SlowEntry};
use crate::group::{goal, Goal, Group, Measure, Measured, Role, Unit};
use crate::json::Figure;
use crate::pipe::{enc, now_ms, A};
use crate::probe::{probed, CpuSnap, PingStats};
use crate::report::thousands;
use crate::server::Server;
use crate::settings::Settings;
use crate::topn::member;

/// Entries a structure grows to.
const BIG: u64 = 1_000_000;
/// Members the `topn` scenario grows one bucket to (and its control one zset).
const TOPN_BIG: u64 = 4_000_000;
/// Growths of the `topn` scenario and of its control, each of a fresh key.
const GROWTHS: usize = 2;
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
    /// Member counts at which a write took over 1 ms in every growth (goal: none).
    Repeat,
}

/// A scenario's figures so far, and its slowest command.
struct Figures {
    list: Vec<Figure>,
    slowest_us: f64,
    /// A control: the same figures, without goals.
    control: bool,
}

impl Figures {
    fn push(&mut self, kind: Kind, mut f: Figure) {
        if kind == Kind::Command {
            self.slowest_us = self.slowest_us.max(f.value.or(f.below).unwrap_or(0.0));
        }
        if !self.control {
            f.goal = match kind {
                Kind::Command => Some(Goal::AtMost(COMMAND_GOAL_US)),
                Kind::Ping => Some(Goal::AtMost(PING_GOAL_US)),
                Kind::Repeat => Some(Goal::AtMost(0.0)),
                Kind::Info => None,
            };
        }
        self.list.push(f);
    }

    fn get(&self, id: &str) -> Option<&Figure> {
        self.list.iter().find(|f| f.id == id)
    }
}

fn fmt_unit(v: f64, unit: &str) -> String {
    match unit {
        "ms" if v < 100.0 => format!("{v:.1} ms"),
        _ => format!("{} {unit}", thousands(v)),
    }
}

fn value_text(f: &Figure) -> String {
    match (f.value, f.below) {
        (Some(v), _) => fmt_unit(v, f.unit),
        (None, Some(b)) => format!("< {}", fmt_unit(b, f.unit)),
        (None, None) => "n/a".into(),
    }
}

/// What one scenario measured.
struct Outcome {
    id: &'static str,
    title: String,
    /// The module scenario a control stands beside.
    control_of: Option<&'static str>,
    redis_version: String,
    wall: Duration,
    /// Other load on the machine during the scenario, in CPUs.
    other_load: Option<f64>,
    figures: Figures,
}

impl Outcome {
    /// The figures as a table, one line each (notes below), for the measure's note.
    fn table(&self) -> String {
        let figures = &self.figures.list;
        let failed = figures.iter().filter(|f| f.met() == Some(false)).count();
        let mut out = format!(
            "{:.1} s, other load on the machine {}; {failed} goals not met\n    {}\n",
            self.wall.as_secs_f64(),
            self.other_load
                .map(|o| format!("{:.0}% of a CPU", o * 100.0))
                .unwrap_or_else(|| "unknown".into()),
            self.title
        );
        for f in figures {
            let goal = match f.goal {
                Some(Goal::AtMost(g)) => format!("<= {}", fmt_unit(g, f.unit)),
                _ => String::new(),
            };
            let verdict = match f.met() {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "",
            };
            out += &format!(
                "    {:<22} {:>14} {:>12} {verdict:<4}  {}\n",
                f.id,
                value_text(f),
                goal,
                f.label
            );
            if !f.note.is_empty() {
                out += &format!("    {:<22} {}\n", "", f.note);
            }
        }
        out.trim_end().to_string()
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "id": self.id,
            "title": self.title,
            "control_of": self.control_of,
            "redis_version": self.redis_version,
            "wall_s": self.wall.as_secs_f64(),
            "other_load_cpus": self.other_load,
            "figures": self.figures.list.iter().map(Figure::json).collect::<Vec<_>>(),
        })
    }
}

// ----------------------------------------------------------------------
// Instruments: SLOWLOG, pipelined growth, reclaim
// ----------------------------------------------------------------------

/// The SLOWLOG entries of commands named `names` (`"TOPN."` = any TOPN.*
/// command), slowest first, and whether the log filled up (older entries lost).
fn slowlog_take(c: &mut Conn, names: &[&str]) -> Result<(Vec<(i64, String)>, bool), String> {
    let all: Vec<SlowEntry> = c.slowlog_take(SLOWLOG_LEN)?;
    let full = all.len() as u64 >= SLOWLOG_LEN;
    let mut entries: Vec<(i64, String)> = all
        .iter()
        .filter(|e| {
            let name = e.name();
            names.iter().any(|n| match n.strip_suffix('.') {
                Some(_) => name.starts_with(n),
                None => name == *n,
            })
        })
        .map(|e| {
            (
                e.us,
                e.args.iter().take(8).cloned().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    Ok((entries, full))
}

fn slowest_figure(
    id: &str,
    label: String,
    (entries, full): &(Vec<(i64, String)>, bool),
    threshold_us: u64,
) -> Figure {
    let mut f = Figure::new(id, label, "us");
    let over_goal = entries
        .iter()
        .filter(|e| e.0 as f64 > COMMAND_GOAL_US)
        .count();
    let top: Vec<String> = entries
        .iter()
        .take(3)
        .map(|(us, cmd)| format!("{} us `{cmd}`", thousands(*us as f64)))
        .collect();
    let mut note = if threshold_us > 0 {
        format!(
            "{} logged above {threshold_us} us, {over_goal} above 1 ms",
            entries.len()
        )
    } else {
        format!("{} calls, {over_goal} above 1 ms", entries.len())
    };
    if !top.is_empty() {
        note += &format!("; slowest: {}", top.join(", "));
    }
    if *full {
        note += "; the SLOWLOG filled up: older entries were lost";
    }
    match entries.first() {
        Some(&(us, _)) => f.value = Some(us as f64),
        None => f.below = Some(threshold_us as f64),
    }
    f.note(note).details(&[
        ("logged", entries.len() as f64),
        ("above_goal", over_goal as f64),
    ])
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

/// A fresh server and a control connection to it.
fn fresh(args: &[&str]) -> Result<(Server, Conn), String> {
    let server = start_server(args)?;
    let c = Conn::open(server.port)?;
    Ok((server, c))
}

/// A scenario in progress: its server's control connection and port, the idle
/// probe's figures, and the figures so far.
struct Run {
    c: Conn,
    port: u16,
    idle: PingStats,
    figs: Figures,
}

impl Run {
    /// The probe's max during a phase against its idle max; notes when the idle max
    /// itself was a stall (other load on the machine), which makes the comparison lenient.
    fn ping_figure(&mut self, id: &str, phase: &str, during: &PingStats) {
        let (idle_max, idle_p99) = (self.idle.max_us(), self.idle.percentile(0.99));
        let mut note = during.text();
        if idle_max > idle_p99 + PING_GOAL_US {
            note += &format!(
                "; the idle max ({} us, p99 {} us) was itself a stall: other load on the machine",
                thousands(idle_max),
                thousands(idle_p99)
            );
        }
        let f = Figure::new(id, format!("PING max {phase}, minus the idle max"), "us")
            .value(during.max_us() - idle_max)
            .note(note)
            .details(&[
                ("max_us", during.max_us()),
                ("p99_us", during.percentile(0.99)),
                ("p50_us", during.percentile(0.5)),
                ("pings", during.samples.len() as f64),
                ("idle_max_us", idle_max),
                ("idle_p99_us", idle_p99),
            ]);
        self.figs.push(Kind::Ping, f);
    }

    /// The growth phase: `n` pipelined `command`s (`f` writes them) under the
    /// probe. Adds the throughput, the slowest command of the family (of
    /// `command` itself for a core command) and the probe's figures.
    fn grow(
        &mut self,
        command: &str,
        n: u64,
        f: impl FnMut(u64, &mut Vec<u8>),
    ) -> Result<(), String> {
        self.grow_as("grow", command, None, n, f).map(|_| ())
    }

    /// [`Run::grow`], its figures named `{id} ...`; with `member_arg` (the
    /// argument that holds the bench's member number), also its writes over
    /// 1 ms with the member count each came at, which it returns.
    fn grow_as(
        &mut self,
        id: &str,
        command: &str,
        member_arg: Option<usize>,
        n: u64,
        f: impl FnMut(u64, &mut Vec<u8>),
    ) -> Result<Vec<repeats::SlowWrite>, String> {
        eprintln!("  growing: {} x {command} ...", thousands(n as f64));
        self.c.slowlog_arm(SLOWLOG_LEN, GROW_SLOW_US)?;
        let c = &mut self.c;
        let (secs, pings) = probed(self.port, || timed_load(c, command, n, f))?;
        let (names, what) = match command.split_once('.') {
            Some((family, _)) => (format!("{family}."), format!("{family}.*")),
            None => (command.to_string(), command.to_string()),
        };
        let slow = slowlog_take(&mut self.c, &[names.as_str()])?;
        let rate = Figure::new(
            format!("{id} ops/s"),
            format!("{command} throughput while growing (1 connection, pipelined)"),
            "ops/s",
        )
        .value(n as f64 / secs)
        .note(format!("{} commands in {secs:.2} s", thousands(n as f64)));
        self.figs.push(Kind::Info, rate);
        let label = format!("slowest {what} command while growing (SLOWLOG)");
        let slowest = slowest_figure(&format!("{id} slowest"), label, &slow, GROW_SLOW_US);
        self.figs.push(Kind::Command, slowest);
        self.ping_figure(&format!("{id} PING"), "while growing", &pings);
        let Some(arg) = member_arg else {
            return Ok(Vec::new());
        };
        let writes = repeats::over_goal(&slow.0, arg);
        let figure = repeats::growth_figure(format!("{id} over 1 ms"), command, &writes);
        self.figs.push(Kind::Info, figure);
        Ok(writes)
    }

    /// One delete command under the probe, which runs `AFTER_DELETE` longer;
    /// checks its reply.
    fn delete(&mut self, id: &str, line: &str, expect: i64) -> Result<(), String> {
        eprintln!("  {line} ...");
        self.c.slowlog_arm(SLOWLOG_LEN, 0)?;
        let c = &mut self.c;
        let (reply, pings) = probed(self.port, || {
            let r = i64::from_redis_value(&c.cmd(line)?).map_err(|e| format!("{line}: {e}"))?;
            sleep_checked(AFTER_DELETE)?;
            Ok(r)
        })?;
        if reply != expect {
            return Err(format!("{line}: replied {reply}, expected {expect}"));
        }
        let name = line.split(' ').next().unwrap_or(line).to_ascii_uppercase();
        let slow = slowlog_take(&mut self.c, &[name.as_str()])?;
        let slowest = slowest_figure(id, format!("`{line}` (SLOWLOG)"), &slow, 0);
        self.figs.push(Kind::Command, slowest);
        let phase = format!("from the delete to {} ms after", AFTER_DELETE.as_millis());
        self.ping_figure(&format!("{id} PING"), &phase, &pings);
        Ok(())
    }

    /// The reclaim phase: waits, the probe running, until INFO recipes `field`
    /// counts `n` more than `start`, at most `RECLAIM_MAX` after `expiry`.
    fn reclaim(&mut self, field: &str, start: i64, n: i64, expiry: Instant) -> Result<(), String> {
        let growth_end = Instant::now();
        let early = self.c.info_int("recipes", field)? - start;
        eprintln!(
            "  waiting for the background reclaim of {} ...",
            thousands(n as f64)
        );
        let c = &mut self.c;
        let ((done, count), pings) = probed(self.port, || loop {
            let count = c.info_int("recipes", field)? - start;
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
        let label = format!(
            "from the expiry until INFO {field} counts {}",
            thousands(n as f64)
        );
        let time = Figure::new("reclaim time", label, "ms")
            .value(end.saturating_duration_since(expiry).as_secs_f64() * 1000.0)
            .note(notes.join("; "));
        self.figs.push(Kind::Info, time);
        let during = pings.within(expiry.max(growth_end), end);
        self.ping_figure("reclaim PING", "during the reclaim", &during);
        Ok(())
    }
}

/// Runs `body` on a fresh server after the idle probe; times it and measures
/// the other load on the machine. `body` returns the CPU seconds of any other
/// server it started (a replica): those are not "other load". A control
/// (`control_of` its module scenario) gets no goals.
fn scenario(
    id: &'static str,
    control_of: Option<&'static str>,
    title: String,
    body: impl FnOnce(&mut Run) -> Result<f64, String>,
) -> Result<Outcome, String> {
    eprintln!("  latency scenario {id}: a fresh server, the idle probe ...");
    let (server, mut c) = fresh(&[])?;
    let redis_version = c.info_field("server", "redis_version")?;
    let t = Instant::now();
    let cpu0 = CpuSnap::take(&mut c)?;
    let ((), idle) = probed(server.port, || sleep_checked(IDLE_PROBE))?;
    let mut figs = Figures {
        list: Vec::new(),
        slowest_us: 0.0,
        control: control_of.is_some(),
    };
    let idle_figure = Figure::new(
        "idle PING",
        "probe on the idle server before the scenario (max)",
        "us",
    )
    .value(idle.max_us())
    .note(idle.text())
    .details(&[
        ("p99_us", idle.percentile(0.99)),
        ("p50_us", idle.percentile(0.5)),
    ]);
    figs.push(Kind::Info, idle_figure);
    let mut run = Run {
        c,
        port: server.port,
        idle,
        figs,
    };
    let own_servers = body(&mut run)?;
    let peak = run.c.info_int("memory", "used_memory_peak")?;
    let peak = Figure::new("memory peak", "the server's used_memory_peak", "B").value(peak as f64);
    run.figs.push(Kind::Info, peak);
    let cpu = CpuSnap::take(&mut run.c)?.since(&cpu0);
    let wall = t.elapsed();
    Ok(Outcome {
        id,
        title,
        control_of,
        redis_version,
        wall,
        other_load: cpu
            .other
            .map(|o| (o - own_servers / wall.as_secs_f64()).max(0.0)),
        figures: run.figs,
    })
}

// ----------------------------------------------------------------------
// The growth / reclaim / delete scenarios
// ----------------------------------------------------------------------

fn topn_scenario() -> Result<Outcome, String> {
    let title = format!(
        "TOPN: {} members into one bucket of one key (TOPN.INCR ... AT <one time>), then DEL \
         of the key; {GROWTHS} times, a fresh key each",
        thousands(TOPN_BIG as f64)
    );
    scenario("topn", None, title, |run| {
        let at = now_ms();
        let mut growths = Vec::new();
        for g in 0..GROWTHS {
            let key = format!("lat:topn{g}");
            run.c
                .cmd(&format!("TOPN.CREATE {key} BUCKET 3600 WINDOW 24"))?;
            let id = growth_id(g);
            let writes = run.grow_as(&id, "TOPN.INCR", Some(2), TOPN_BIG, |i, out| {
                let (m, at) = (A::U(member(i)), A::U(at));
                enc(out, &[A::S("TOPN.INCR"), A::S(&key), m, A::S("AT"), at])
            })?;
            growths.push(writes);
            let members = run.c.info_field("recipes", "recipes_topn_members")?;
            if members != TOPN_BIG.to_string() {
                return Err(format!(
                    "INFO recipes counts {members} TOPN members, not {TOPN_BIG}"
                ));
            }
            let delete = if g == 0 {
                "DEL".into()
            } else {
                format!("{id} DEL")
            };
            run.delete(&delete, &format!("DEL {key}"), 1)?;
        }
        repeats::repeated_figure(&mut run.figs, &growths);
        Ok(0.0)
    })
}

/// The figures' prefix of growth `g` of a repeated one: `grow`, `grow 2`, ...
fn growth_id(g: usize) -> String {
    match g {
        0 => "grow".into(),
        g => format!("grow {}", g + 1),
    }
}

fn ulist_scenario() -> Result<Outcome, String> {
    let title = format!(
        "ULIST: {} values into one scope, all expiring {EXPIRE_S} s after the growth starts \
         (ULIST.ADD ... EXPIRE {EXPIRE_S} AT <start>), the background reclaim; then ULIST.DEL \
         matching {} partitions",
        thousands(BIG as f64),
        thousands(PARTS as f64)
    );
    scenario("ulist", None, title, |run| {
        run.c.cmd("ULIST.CREATE lat:ul VALUE user SCOPE month")?;
        let field = "recipes_ulist_expired_values";
        let expired0 = run.c.info_int("recipes", field)?;
        let (at, expiry) = (now_ms(), Instant::now() + Duration::from_secs(EXPIRE_S));
        run.grow("ULIST.ADD", BIG, |i, out| {
            let (add, user) = ([A::S("ULIST.ADD"), A::S("lat:ul")], A::K("u", i));
            let expire = [A::S("EXPIRE"), A::U(EXPIRE_S), A::S("AT"), A::U(at)];
            let names = [A::S("user"), user, A::S("month"), A::S("2024-05")];
            let args: Vec<A> = add.into_iter().chain(expire).chain(names).collect();
            enc(out, &args)
        })?;
        run.reclaim(field, expired0, BIG as i64, expiry)?;
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

fn hcounter_scenario() -> Result<Outcome, String> {
    let (big, parts) = (thousands(BIG as f64), thousands(PARTS as f64));
    let title = format!(
        "HCOUNTER: {big} cells into one partition plus {parts} one-cell partitions, all with a \
         TTL ending {EXPIRE_S} s after the growth starts (HCOUNTER.INCR ... AT <start>), the \
         background reclaim; then, on a counter without TTL, HCOUNTER.DEL of a {big}-cell \
         partition and of {parts} partitions"
    );
    scenario("hcounter", None, title, |run| {
        let create = format!("HCOUNTER.CREATE lat:hc PARTITION p GROUP g TTL {EXPIRE_S}");
        run.c.cmd(&create)?;
        let field = "recipes_hcounter_expired_partitions";
        let expired0 = run.c.info_int("recipes", field)?;
        let (at, expiry) = (now_ms(), Instant::now() + Duration::from_secs(EXPIRE_S));
        run.grow("HCOUNTER.INCR", BIG + PARTS, |i, out| {
            hcounter_incr(out, "lat:hc", [A::S("AT"), A::U(at)], i)
        })?;
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

/// Each module scenario's growth figures (slowest command, PING above idle),
/// for its control's note.
type Growths = Rc<RefCell<HashMap<&'static str, (Option<f64>, Option<f64>)>>>;

fn growth(o: &Outcome) -> (Option<f64>, Option<f64>) {
    let f = &o.figures;
    let slowest = f.get("grow slowest").and_then(|x| x.value.or(x.below));
    (slowest, f.get("grow PING").and_then(|x| x.value))
}

/// A control's growth next to its module scenario's: `slowest 0.41 ms vs 0.32
/// ms; PING above idle 2.9 ms vs 3.6 ms`.
fn beside(control: (Option<f64>, Option<f64>), module: (Option<f64>, Option<f64>)) -> String {
    let ms = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.2} ms", v / 1000.0));
    format!(
        "growth, this control vs the module: slowest command {} vs {}; PING max above idle {} vs {}",
        ms(control.0),
        ms(module.0),
        ms(control.1),
        ms(module.1)
    )
}

type ScenarioFn = fn() -> Result<Outcome, String>;

pub(crate) fn group(_s: &Settings) -> Group {
    let growths: Growths = Default::default();
    let measure = |id: &'static str, role: Role, requires: &[&'static str], run: ScenarioFn| {
        let growths = growths.clone();
        Measure::new(
            id,
            role,
            "slowest command or read of the scenario (server-side); all figures below",
            Unit::Millis,
            move |_| {
                let o = run()?;
                let mut note = o.table();
                match o.control_of {
                    None => {
                        growths.borrow_mut().insert(o.id, growth(&o));
                    }
                    Some(of) => {
                        if let Some(&module) = growths.borrow().get(of) {
                            note += &format!("\n    {}", beside(growth(&o), module));
                        }
                    }
                }
                Ok(Measured {
                    value: o.figures.slowest_us / 1000.0,
                    note,
                    json: Some(o.json()),
                })
            },
        )
        .requires(requires)
    };
    let measures = vec![
        measure("topn", Role::Module, &["topn.incr"], topn_scenario),
        measure("topn control", Role::Plain, &[], controls::zadd),
        measure("ulist", Role::Module, &["ulist.add"], ulist_scenario),
        measure("ulist control", Role::Plain, &[], controls::sadd),
        measure(
            "hcounter",
            Role::Module,
            &["hcounter.incr"],
            hcounter_scenario,
        ),
        measure("hcounter control", Role::Plain, &[], controls::hincrby),
        measure(
            "switch",
            Role::Module,
            &["topn.incr", "ulist.add"],
            switch::scenario_switch,
        ),
        measure("topn-reads", Role::Module, &["topn.top"], reads::scenario),
        measure(
            "topn-reads-weighted",
            Role::Module,
            &["topn.top"],
            reads::weighted_scenario,
        ),
        measure(
            "topn-reads-heavy",
            Role::Module,
            &["topn.top"],
            reads::heavy_scenario,
        ),
    ];
    // `BENCH_LATENCY`: comma-separated prefixes of the scenarios to run (all when unset; a
    // prefix ending in `$` is a whole id: `topn$`).
    let wanted: Vec<String> = std::env::var("BENCH_LATENCY")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    let wants = |id: &str| {
        let matches = |w: &String| match w.strip_suffix('$') {
            Some(whole) => id == whole,
            None => id.starts_with(w.as_str()),
        };
        wanted.is_empty() || wanted.iter().any(matches)
    };
    let measures: Vec<Measure> = measures.into_iter().filter(|m| wants(m.id)).collect();
    let with_goals = [
        "topn",
        "ulist",
        "hcounter",
        "switch",
        "topn-reads",
        "topn-reads-weighted",
        "topn-reads-heavy",
    ];
    Group {
        measures,
        compares: with_goals
            .iter()
            .filter(|id| wants(id))
            .map(|&id| goal(id, Goal::AtMost(1.0)))
            .collect(),
        ..Group::new(
            "latency",
            "latency: worst cases at 1,000,000 entries (TOPN: 4,000,000 members, grown \
             twice), each scenario on a fresh server: SLOWLOG (server-side) and a \
             one-connection PING probe (max above its idle max); goals: every command and \
             read <= 1 ms, PING <= 2 ms above idle, no member count at which both TOPN \
             growths had a write over 1 ms; each growth also with the core command \
             (control: no goals)",
        )
    }
}
