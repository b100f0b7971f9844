//! What a group's results become: its detail on stdout, rows of the final
//! markdown table, and its JSON file (`json.rs` has the schema).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value as Json};

use crate::group::{Compare, Goal, Group, Unit};
use crate::json::{number, write_results, Figure, Ratio};
use crate::run::{Results, RunContext, Status};
use crate::settings::Settings;

pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub(crate) fn thousands(x: f64) -> String {
    let n = x.abs().round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    if x.round() < 0.0 {
        out.push('-');
    }
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

pub(crate) fn fmt_ops(x: f64) -> String {
    if x < 100.0 {
        format!("{x:.1}")
    } else {
        thousands(x)
    }
}

fn trim_num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(crate) fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{}x", thousands(r))
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

fn fmt_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Bytes if v >= 10_000_000.0 => format!("{:.1} MB", v / 1e6),
        Unit::Bytes => format!("{} B", thousands(v)),
        Unit::BytesPerValue => format!("{v:.1} B/value"),
        Unit::Micros => format!("{} us", thousands(v)),
        Unit::Millis => format!("{} ms", thousands(v)),
        Unit::Ratio => format!("{v:.3}x"),
    }
}

/// `>= 0.6x`, `<= 1,000 us`: the goal in the units of what it is on.
fn goal_text(g: Goal, unit: &str) -> String {
    match g {
        Goal::AtLeast(g) => format!(">= {}{unit}", trim_num(g)),
        Goal::AtMost(g) => format!("<= {}{unit}", trim_num(g)),
    }
}

fn met_text(goal: Option<Goal>, v: Option<f64>) -> String {
    match (goal, v) {
        (Some(g), Some(x)) => if g.met(x) { "yes" } else { "NO" }.into(),
        (Some(_), None) => "n/a".into(),
        _ => String::new(),
    }
}

/// One row of the final markdown table.
pub(crate) struct Row {
    group: &'static str,
    what: String,
    result: String,
    ratio: String,
    goal: String,
    met: String,
}

/// The end of a run: the markdown table of every group's rows, the run's
/// settings, and how busy the rest of the machine was.
pub(crate) fn print_summary(ctx: &RunContext, rows: &[Row], busy: &mut [f64], took: Duration) {
    let s = ctx.settings;
    let (clients, pipeline, rounds, ms) = (s.clients, s.pipeline, s.rounds, s.ms);
    println!();
    println!("## Results (one run, interleaved; medians over {rounds} rounds)");
    println!();
    print_table(rows);
    println!();
    println!(
        "Redis {}, {} CPUs, {clients} clients x pipeline {pipeline}, {rounds} rounds x {ms} ms, \
         total {:.0} s.",
        ctx.redis_version,
        ctx.cpus,
        took.as_secs_f64()
    );
    println!("Command: `{}`", s.command_line());
    let max = busy.iter().copied().reduce(f64::max);
    if let (Some(med), Some(max)) = (median(busy), max) {
        println!(
            "Other load on the machine during the runs: median {:.0}%, max {:.0}% of a CPU.",
            med * 100.0,
            max * 100.0
        );
        if med > 0.15 {
            println!(
                "WARNING: other processes competed for the CPUs during the runs; \
                 the ratios are unreliable: rerun on an idle machine."
            );
        }
    }
}

fn print_table(rows: &[Row]) {
    println!("| group | scenario | result | ratio | goal | met? |");
    println!("|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            r.group, r.what, r.result, r.ratio, r.goal, r.met
        );
    }
}

/// A group's results with the lookups its report needs.
struct View<'a> {
    rounds: usize,
    grp: &'a Group,
    res: &'a Results,
}

impl View<'_> {
    fn scenario(&self, id: &str) -> Option<usize> {
        self.grp.scenarios.iter().position(|x| x.id == id)
    }

    fn measure(&self, id: &str) -> Option<usize> {
        self.grp.measures.iter().position(|x| x.id == id)
    }

    fn measure_value(&self, id: &str) -> Option<f64> {
        self.measure(id)
            .and_then(|i| self.res.measures.get(i))
            .and_then(|r| r.value)
    }

    /// Per-round ratio of scenario a to scenario b, then the median.
    fn ratio_ops(&self, a: usize, b: usize) -> Option<f64> {
        let (a, b) = (&self.res.scenarios[a], &self.res.scenarios[b]);
        let mut r: Vec<f64> = (0..self.rounds)
            .filter_map(|k| match (a.ops[k], b.ops[k]) {
                (Some(x), Some(y)) if y > 0.0 => Some(x / y),
                _ => None,
            })
            .collect();
        median(&mut r)
    }

    fn compare_value(&self, cm: &Compare) -> Option<f64> {
        match (self.scenario(cm.a), cm.b.and_then(|b| self.scenario(b))) {
            (Some(a), Some(b)) => self.ratio_ops(a, b),
            _ => {
                let va = self.measure_value(cm.a)?;
                match cm.b {
                    None => Some(va),
                    Some(b) => {
                        let vb = self.measure_value(b)?;
                        (vb > 0.0).then(|| va / vb)
                    }
                }
            }
        }
    }

    /// The absolute goal on the measure `id`.
    fn abs_goal(&self, id: &str) -> Option<Goal> {
        self.grp
            .compares
            .iter()
            .find(|cm| cm.a == id && cm.b.is_none())
            .and_then(|cm| cm.goal)
    }

    /// The ratios of `id` to other figures: every comparison of it, and for a
    /// throughput scenario also the one to the baseline.
    fn ratios(&self, id: &'static str) -> Vec<Ratio> {
        let mut out = Vec::new();
        let base = self.grp.scenarios.first().map(|b| b.id);
        if let (Some(i), Some(b)) = (self.scenario(id), base) {
            if i > 0 && !self.grp.compares.iter().any(|c| c.a == id && c.b == base) {
                out.push(Ratio {
                    vs: b,
                    value: self.ratio_ops(i, 0),
                    goal: None,
                });
            }
        }
        for cm in self.grp.compares.iter().filter(|c| c.a == id) {
            if let Some(vs) = cm.b {
                out.push(Ratio {
                    vs,
                    value: self.compare_value(cm),
                    goal: cm.goal,
                });
            }
        }
        out
    }
}

fn pct(x: &mut [f64]) -> String {
    median(x)
        .map(|x| format!("{:.0}%", x * 100.0))
        .unwrap_or_default()
}

/// Prints a group's detail; returns its rows of the final table.
pub(crate) fn print_group(s: &Settings, grp: &Group, res: &Results) -> Vec<Row> {
    let v = View {
        rounds: s.rounds,
        grp,
        res,
    };
    let mut rows = Vec::new();

    // Throughput detail.
    if let Some(base) = grp.scenarios.first() {
        println!(
            "  {:<12} {:>12} {:>23} {:>14} {:>7} {:>7} {:>7}  operation",
            "scenario",
            "ops/s median",
            "min .. max",
            format!("vs {}", base.id),
            "server",
            "bench",
            "other"
        );
        for (i, sc) in grp.scenarios.iter().enumerate() {
            let r = &res.scenarios[i];
            let mut ops: Vec<f64> = r.ops.iter().flatten().copied().collect();
            let mut srv: Vec<f64> = r.cpu.iter().flatten().map(|c| c.server).collect();
            let mut cli: Vec<f64> = r.cpu.iter().flatten().map(|c| c.client).collect();
            let mut oth: Vec<f64> = r.cpu.iter().flatten().filter_map(|c| c.other).collect();
            let med = median(&mut ops);
            let ratio = v.ratio_ops(i, 0);
            let goal = grp
                .compares
                .iter()
                .find(|cm| cm.a == sc.id && cm.b == Some(base.id))
                .and_then(|cm| cm.goal);
            match med {
                Some(m) => {
                    println!(
                        "  {:<12} {:>12} {:>23} {:>14} {:>7} {:>7} {:>7}  {}",
                        sc.id,
                        fmt_ops(m),
                        format!("{} .. {}", fmt_ops(ops[0]), fmt_ops(ops[ops.len() - 1])),
                        ratio.map(fmt_ratio).unwrap_or_else(|| "n/a".into()),
                        pct(&mut srv),
                        pct(&mut cli),
                        pct(&mut oth),
                        sc.label
                    );
                    let mut att: Vec<f64> = r.attempts.iter().flatten().copied().collect();
                    if let Some(a) = median(&mut att) {
                        println!(
                            "  {:<12} {a:.2} attempts per operation (median over rounds; 1 = no retry)",
                            ""
                        );
                    }
                    if let Status::Failed(e) = &r.status {
                        println!("  {:<12} FAILED in a later round: {e}", "");
                    }
                }
                None => println!("  {:<12} {}  ({})", sc.id, r.status.text(), sc.label),
            }
            rows.push(Row {
                group: grp.id,
                what: format!("`{}`", sc.label),
                result: med
                    .map(|m| format!("{} ops/s", fmt_ops(m)))
                    .unwrap_or_else(|| r.status.text()),
                ratio: if i == 0 {
                    "1.00x (baseline)".into()
                } else {
                    ratio
                        .map(|r| format!("{} vs {}", fmt_ratio(r), base.id))
                        .unwrap_or_else(|| "n/a".into())
                },
                goal: goal.map(|g| goal_text(g, "x")).unwrap_or_default(),
                met: met_text(goal, ratio),
            });
        }
    }

    // Measure detail.
    for (m, r) in grp.measures.iter().zip(&res.measures) {
        let abs_goal = v.abs_goal(m.id);
        match r.value {
            Some(x) => {
                let (first, more) = r.note.split_once('\n').unwrap_or((&r.note, ""));
                println!(
                    "  {:<14} {:>12}  {}  ({first})",
                    m.id,
                    fmt_value(x, m.unit),
                    m.label
                );
                if !more.is_empty() {
                    println!("{more}");
                }
            }
            None => println!("  {:<14} {}  ({})", m.id, r.status.text(), m.label),
        }
        rows.push(Row {
            group: grp.id,
            what: format!("{}: {}", m.id, m.label),
            result: r
                .value
                .map(|x| fmt_value(x, m.unit))
                .unwrap_or_else(|| r.status.text()),
            ratio: String::new(),
            goal: abs_goal
                .map(|g| goal_text(g, &format!(" {}", m.unit.suffix())))
                .unwrap_or_default(),
            met: met_text(abs_goal, r.value),
        });
    }

    // Comparisons; those not already shown as "vs baseline" also as rows.
    let base_id = grp.scenarios.first().map(|x| x.id);
    let ratios: Vec<&Compare> = grp.compares.iter().filter(|cm| cm.b.is_some()).collect();
    if !ratios.is_empty() {
        println!("  comparisons:");
    }
    for cm in &ratios {
        let x = v.compare_value(cm);
        let goal = match (cm.goal, x) {
            (Some(g), Some(x)) => format!(
                "  goal {}: {}",
                goal_text(g, "x"),
                if g.met(x) { "met" } else { "NOT met" }
            ),
            (Some(g), None) => format!("  goal {}", goal_text(g, "x")),
            _ => String::new(),
        };
        println!(
            "    {:<32} {:>9}{goal}",
            format!("{} / {}", cm.a, cm.b.unwrap_or_default()),
            x.map(fmt_ratio).unwrap_or_else(|| "n/a".into())
        );
    }
    for cm in grp.compares.iter().filter(|cm| cm.b.is_none()) {
        if let (Some(g), Some(x)) = (cm.goal, v.compare_value(cm)) {
            let unit = v
                .measure(cm.a)
                .map(|i| format!(" {}", grp.measures[i].unit.suffix()))
                .unwrap_or_default();
            println!(
                "    {:<32} goal {}: {}",
                cm.a,
                goal_text(g, &unit),
                if g.met(x) { "met" } else { "NOT met" }
            );
        }
    }
    for cm in ratios
        .into_iter()
        .filter(|cm| !(v.scenario(cm.a).is_some() && cm.b == base_id))
    {
        let x = v.compare_value(cm);
        rows.push(Row {
            group: grp.id,
            what: format!("{} vs {}", cm.a, cm.b.unwrap_or_default()),
            result: String::new(),
            ratio: x.map(fmt_ratio).unwrap_or_else(|| "n/a".into()),
            goal: cm.goal.map(|g| goal_text(g, "x")).unwrap_or_default(),
            met: met_text(cm.goal, x),
        });
    }
    rows
}

fn status(st: &Status) -> Option<String> {
    (!matches!(st, Status::Ok)).then(|| st.text())
}

/// A scenario entry of one figure.
fn entry(title: &str, f: Figure) -> Json {
    json!({ "id": f.id, "title": title, "figures": [f.json()] })
}

/// The group's JSON document (schema in `json.rs`).
fn group_json(ctx: &RunContext, grp: &Group, res: &Results) -> Json {
    let s = ctx.settings;
    let v = View {
        rounds: s.rounds,
        grp,
        res,
    };
    let mut scenarios = Vec::new();
    for (i, (sc, r)) in grp.scenarios.iter().zip(&res.scenarios).enumerate() {
        let mut ops: Vec<f64> = r.ops.iter().flatten().copied().collect();
        let cpu = |f: &dyn Fn(&crate::probe::CpuUse) -> Option<f64>| {
            let mut x: Vec<f64> = r.cpu.iter().flatten().filter_map(f).collect();
            number(median(&mut x))
        };
        let mut attempts: Vec<f64> = r.attempts.iter().flatten().copied().collect();
        let mut f = Figure::new(sc.id, sc.label.as_str(), "ops/s");
        f.role = Some(sc.role);
        f.value = median(&mut ops);
        f.ratios = v.ratios(sc.id);
        f.params = sc.params.clone();
        f.details = vec![
            ("baseline", json!(i == 0)),
            ("min", number(ops.first().copied())),
            ("max", number(ops.last().copied())),
            ("rounds", json!(r.ops)),
            ("server_cpu", cpu(&|c| Some(c.server))),
            ("bench_cpu", cpu(&|c| Some(c.client))),
            ("other_cpu", cpu(&|c| c.other)),
            ("attempts_per_op", number(median(&mut attempts))),
            ("clients", json!(sc.clients.unwrap_or(s.clients))),
            ("pipeline", json!(sc.pipeline.unwrap_or(s.pipeline))),
        ];
        f.status = status(&r.status);
        scenarios.push(entry(&sc.label, f));
    }
    for (m, r) in grp.measures.iter().zip(&res.measures) {
        if let Some(doc) = &r.json {
            scenarios.push(doc.clone());
            continue;
        }
        let mut f = Figure::new(m.id, m.label.as_str(), m.unit.suffix());
        f.role = Some(m.role);
        f.value = r.value;
        f.goal = v.abs_goal(m.id);
        f.ratios = v.ratios(m.id);
        f.params = m.params.clone();
        f.note = r.note.clone();
        f.status = status(&r.status);
        scenarios.push(entry(&m.label, f));
    }
    json!({
        "group": grp.id,
        "title": grp.title,
        "redis_version": ctx.redis_version,
        "module": s.module.display().to_string(),
        "command": s.command_line(),
        "settings": {
            "clients": s.clients,
            "pipeline": s.pipeline,
            "rounds": s.rounds,
            "ms": s.ms,
            "keys": s.keys,
            "cpus": ctx.cpus,
        },
        "started_unix_ms": res.started_unix_ms,
        "wall_s": res.started.elapsed().as_secs_f64(),
        "other_load_cpus": number(median(&mut res.busy.clone())),
        "scenarios": scenarios,
    })
}

/// Writes the group's results to `target/bench/<group>.json`.
pub(crate) fn write_json(ctx: &RunContext, grp: &Group, res: &Results) -> Result<PathBuf, String> {
    write_results(grp.id, &group_json(ctx, grp, res))
}
