//! Slow writes by the size at which they came: a growth of one structure,
//! done twice the same way, logs each write over 1 ms with the member count
//! the structure had reached (the member number in the write's arguments).
//! A write over 1 ms at the same count in both growths is a cost of the
//! structure at that size (a table or vector copied whole as it doubles),
//! not a stall of the machine's, which lands at random counts: it is
//! reported as a failure of the module (none for its plain control).

use std::collections::BTreeMap;

use serde_json::json;

use super::{fmt_unit, Figures, Kind, COMMAND_GOAL_US};
use crate::json::Figure;
use crate::report::thousands;
use crate::topn::member;

/// A write over 1 ms: the member count it brought the structure to, its time.
#[derive(Clone, Copy)]
pub(super) struct SlowWrite {
    pub count: u64,
    pub us: i64,
}

/// The writes over 1 ms among a growth's SLOWLOG lines (`us`, the command as
/// logged), each at the count of the member argument `arg` names (the
/// bench's `member(i)` is member `i + 1`).
pub(super) fn over_goal(logged: &[(i64, String)], arg: usize) -> Vec<SlowWrite> {
    let first = member(0);
    let mut out: Vec<SlowWrite> = logged
        .iter()
        .filter(|(us, _)| *us as f64 > COMMAND_GOAL_US)
        .filter_map(|(us, line)| {
            let m: u64 = line.split(' ').nth(arg)?.parse().ok()?;
            let count = m.checked_sub(first)? + 1;
            Some(SlowWrite { count, us: *us })
        })
        .collect();
    out.sort_by_key(|w| w.count);
    out
}

/// `12.1 ms at 1,048,577 members, ...`: the slowest `n`.
fn text(writes: &[SlowWrite], n: usize) -> String {
    let mut slowest = writes.to_vec();
    slowest.sort_by_key(|w| std::cmp::Reverse(w.us));
    let each: Vec<String> = slowest
        .iter()
        .take(n)
        .map(|w| {
            let ms = fmt_unit(w.us as f64 / 1000.0, "ms");
            format!("{ms} at {} members", thousands(w.count as f64))
        })
        .collect();
    match each.is_empty() {
        true => "none".into(),
        false => each.join(", "),
    }
}

/// The figure of one growth's writes over 1 ms, each with its member count.
pub(super) fn growth_figure(id: String, what: &str, writes: &[SlowWrite]) -> Figure {
    let label = format!("{what} writes over 1 ms (SLOWLOG), with the member count each came at");
    let pairs: Vec<[i64; 2]> = writes.iter().map(|w| [w.count as i64, w.us]).collect();
    let mut f = Figure::new(id, label, "writes")
        .value(writes.len() as f64)
        .note(format!("slowest: {}", text(writes, 8)));
    f.details.push(("at_counts", json!(pairs)));
    f
}

/// The figure of the counts at which a write took over 1 ms in two growths
/// or more (goal: none, for the module).
pub(super) fn repeated_figure(figs: &mut Figures, growths: &[Vec<SlowWrite>]) {
    let mut at: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for writes in growths {
        let mut seen = Vec::new();
        for w in writes {
            if !seen.contains(&w.count) {
                seen.push(w.count);
                at.entry(w.count).or_default().push(w.us);
            }
        }
    }
    at.retain(|_, us| us.len() > 1);
    let listed: Vec<String> = at
        .iter()
        .map(|(count, us)| {
            let ms: Vec<String> = us
                .iter()
                .map(|&u| fmt_unit(u as f64 / 1000.0, "ms"))
                .collect();
            format!("{} members: {}", thousands(*count as f64), ms.join(" / "))
        })
        .collect();
    let note = match listed.is_empty() {
        true => format!("none in {} growths", growths.len()),
        false => listed.join("; "),
    };
    let label = format!(
        "member counts at which a write took over 1 ms in {} growths alike",
        growths.len()
    );
    let rows: Vec<serde_json::Value> = at.iter().map(|(c, us)| json!([c, us])).collect();
    let mut f = Figure::new("repeated over 1 ms", label, "counts")
        .value(at.len() as f64)
        .note(note);
    f.details.push(("counts", json!(rows)));
    figs.push(Kind::Repeat, f);
}
