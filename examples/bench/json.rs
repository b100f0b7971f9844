//! Results as JSON, for plots and A/B comparisons of runs: every group writes
//! `target/bench/<group>.json` (replaced atomically after each measure).
//!
//! Schema, one object per file:
//!
//! ```text
//! group, title            the group's id and what it measures
//! redis_version, module   the server's version, the module's path
//! command                 the environment and command that reproduce the run
//! settings                {clients, pipeline, rounds, ms, keys, cpus}
//! started_unix_ms, wall_s when the group started, how long it took
//! other_load_cpus         median load of other processes during its runs (CPUs), or null
//! scenarios: [{           a throughput scenario, a measure, or a whole experiment
//!   id, title             (experiments, e.g. the latency group's, add
//!                          redis_version, wall_s, other_load_cpus)
//!   figures: [{
//!     id, label
//!     role                plain | module | lua | multi | recipe | gem | reference | null
//!     value, unit         the figure (null when skipped or failed); ops/s, B, B/value, us, ms
//!     below               without a value: known to be below this (nothing reached SLOWLOG)
//!     goal_at_least, goal_at_most, met    a goal on the value, or null
//!     ratios: [{vs, value, goal_at_least, goal_at_most, met}]
//!                         this figure over figure `vs` of the same file (throughput: the
//!                         median of per-round ratios)
//!     params              what a plot puts on an axis or in a legend, e.g.
//!                         {"window_buckets": 6}, {"cells_per_partition": 20, "by": "allocator"}
//!     details             more numbers: per-round ops/s, CPU shares, percentiles, counts
//!     note, status        text; status null, "skipped: ..." or "FAILED: ..."
//!   }]
//! }]
//! ```

use std::path::PathBuf;

use serde_json::{json, Map, Value as Json};

use crate::group::{Goal, Params, Role};

/// A ratio of one figure to another.
pub(crate) struct Ratio {
    pub vs: &'static str,
    pub value: Option<f64>,
    pub goal: Option<Goal>,
}

/// One figure of a scenario.
pub(crate) struct Figure {
    pub id: String,
    pub label: String,
    pub role: Option<Role>,
    pub value: Option<f64>,
    pub below: Option<f64>,
    pub unit: &'static str,
    pub goal: Option<Goal>,
    pub ratios: Vec<Ratio>,
    pub params: Params,
    pub details: Vec<(&'static str, Json)>,
    pub note: String,
    pub status: Option<String>,
}

impl Figure {
    pub fn new(id: impl Into<String>, label: impl Into<String>, unit: &'static str) -> Figure {
        Figure {
            id: id.into(),
            label: label.into(),
            role: None,
            value: None,
            below: None,
            unit,
            goal: None,
            ratios: Vec::new(),
            params: Vec::new(),
            details: Vec::new(),
            note: String::new(),
            status: None,
        }
    }
    pub fn value(mut self, v: f64) -> Figure {
        self.value = Some(v);
        self
    }
    pub fn note(mut self, n: impl Into<String>) -> Figure {
        self.note = n.into();
        self
    }
    pub fn details(mut self, d: &[(&'static str, f64)]) -> Figure {
        self.details.extend(d.iter().map(|&(k, v)| (k, json!(v))));
        self
    }
    pub fn param(mut self, name: &'static str, value: impl Into<Json>) -> Figure {
        self.params.push((name, value.into()));
        self
    }
    /// Whether the value, or the bound it is below, meets the goal.
    pub fn met(&self) -> Option<bool> {
        let g = self.goal?;
        self.value.or(self.below).map(|v| g.met(v))
    }

    pub fn json(&self) -> Json {
        let mut o = Map::new();
        o.insert("id".into(), json!(self.id));
        o.insert("label".into(), json!(self.label));
        o.insert("role".into(), json!(self.role.map(Role::name)));
        o.insert("value".into(), number(self.value));
        o.insert("below".into(), number(self.below));
        o.insert("unit".into(), json!(self.unit));
        goal_fields(&mut o, self.goal, self.met());
        let ratios = self.ratios.iter().map(|r| {
            let mut o = Map::new();
            o.insert("vs".into(), json!(r.vs));
            o.insert("value".into(), number(r.value));
            goal_fields(&mut o, r.goal, r.goal.zip(r.value).map(|(g, v)| g.met(v)));
            Json::Object(o)
        });
        o.insert("ratios".into(), Json::Array(ratios.collect()));
        o.insert("params".into(), object(&self.params));
        o.insert("details".into(), object(&self.details));
        o.insert("note".into(), json!(self.note));
        o.insert("status".into(), json!(self.status));
        Json::Object(o)
    }
}

/// A number, `null` when absent or not finite (JSON has no NaN).
pub(crate) fn number(v: Option<f64>) -> Json {
    v.filter(|x| x.is_finite()).map_or(Json::Null, |x| json!(x))
}

pub(crate) fn object(members: &[(&'static str, Json)]) -> Json {
    Json::Object(
        members
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

fn goal_fields(o: &mut Map<String, Json>, goal: Option<Goal>, met: Option<bool>) {
    let (least, most) = match goal {
        Some(Goal::AtLeast(g)) => (Some(g), None),
        Some(Goal::AtMost(g)) => (None, Some(g)),
        None => (None, None),
    };
    o.insert("goal_at_least".into(), number(least));
    o.insert("goal_at_most".into(), number(most));
    o.insert("met".into(), json!(met));
}

/// Writes `doc` to `target/bench/<name>.json`, or to `$BENCH_JSON_DIR/<name>.json`
/// (`make bench-compare` keeps each run's files apart so), replacing it
/// atomically: a reader never sees half a file; returns the path.
pub(crate) fn write_results(name: &str, doc: &Json) -> Result<PathBuf, String> {
    let dir = match std::env::var_os("BENCH_JSON_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench"),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let path = dir.join(format!("{name}.json"));
    let tmp = dir.join(format!(".{name}.json.{}", std::process::id()));
    let text = serde_json::to_string_pretty(doc).map_err(|e| format!("{name}.json: {e}"))? + "\n";
    std::fs::write(&tmp, text).map_err(|e| format!("write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("rename to {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_carries_its_goal_ratios_and_plot_params() {
        let mut f = Figure::new("RV.ADD", "RV.ADD key member", "ops/s")
            .value(260_000.0)
            .param("window_buckets", 6);
        f.goal = Some(Goal::AtMost(300_000.0));
        f.ratios.push(Ratio {
            vs: "ZADD",
            value: Some(0.79),
            goal: Some(Goal::AtLeast(0.6)),
        });
        let j = f.json();
        assert_eq!(j["value"], json!(260_000.0));
        assert_eq!(j["goal_at_most"], json!(300_000.0));
        assert_eq!(j["goal_at_least"], Json::Null);
        assert_eq!(j["met"], json!(true));
        assert_eq!(j["ratios"][0]["vs"], json!("ZADD"));
        assert_eq!(j["ratios"][0]["met"], json!(true));
        assert_eq!(j["params"]["window_buckets"], json!(6));
        assert_eq!(j["role"], Json::Null);
        assert_eq!(number(Some(f64::NAN)), Json::Null, "JSON has no NaN");
    }
}
