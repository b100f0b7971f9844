//! The `switch` scenario of the latency group: what a key's change of layout
//! costs the write that makes it. A small TOPN key or ULIST list is one
//! compact buffer and moves to hashed tables with its 513th entry
//! (`recipes.topn-compact-max`, `recipes.ulist-compact-max`: 512). On `KEYS`
//! keys of each, every add from entry `FROM` to `TO` is timed by SLOWLOG
//! (threshold 0), with a plain SADD into a set beside each: the switching
//! add against its neighbours, every time. A cost the switch adds on every
//! key is ours; a stall of milliseconds that hits one add in many, the SADDs
//! as often, is the machine's.

use std::collections::HashMap;

use super::{scenario, Kind, Outcome, SLOWLOG_LEN};
use crate::json::Figure;
use crate::pipe::{enc, now_ms, A};
use crate::report::median;
use crate::topn::member;

const KEYS: u64 = 40;
/// Entries each key holds before the timed adds, and the end of those.
const FROM: u64 = 508;
const TO: u64 = 516;
/// The entry whose add makes the key switch layouts (0-based).
const SWITCH: u64 = 512;
/// The three adds of entry `i` of key `k` (TOPN, ULIST with an expiry as in
/// the `ulist` scenario, plain SADD).
const PER_ENTRY: u64 = 3;

fn add(out: &mut Vec<u8>, k: u64, i: u64, at: u64) {
    match i % PER_ENTRY {
        0 => enc(
            out,
            &[
                A::S("TOPN.INCR"),
                A::K("lat:sw:t:", k),
                A::U(member(i / PER_ENTRY)),
                A::S("AT"),
                A::U(at),
            ],
        ),
        1 => enc(
            out,
            &[
                A::S("ULIST.ADD"),
                A::K("lat:sw:u:", k),
                A::S("EXPIRE"),
                A::U(86_400),
                A::S("AT"),
                A::U(at),
                A::S("user"),
                A::K("u", i / PER_ENTRY),
                A::S("month"),
                A::S("2024-05"),
            ],
        ),
        _ => enc(
            out,
            &[A::S("SADD"), A::K("lat:sw:s:", k), A::K("u", i / PER_ENTRY)],
        ),
    }
}

/// The entry a logged add wrote (TOPN member, ULIST `user`, SADD member).
fn entry_of(args: &[String]) -> Option<u64> {
    let name = args.first()?.to_ascii_uppercase();
    let arg = match name.as_str() {
        "TOPN.INCR" => return args.get(2)?.parse::<u64>().ok().map(|m| m - member(0)),
        "ULIST.ADD" => args.get(7)?,
        _ => args.get(2)?,
    };
    arg.strip_prefix('u')?.parse().ok()
}

pub(super) fn scenario_switch() -> Result<Outcome, String> {
    let title = format!(
        "layout switch: {KEYS} TOPN keys and {KEYS} ULIST lists grown to {TO} entries, each \
         add from entry {FROM} on timed (SLOWLOG), the add of entry {SWITCH} switching the \
         key from compact to hashed; a plain SADD beside each"
    );
    scenario("switch", None, title, |run| {
        run.c
            .load("TOPN.CREATE / ULIST.CREATE", KEYS * 2, |i, out| {
                match i % 2 {
                    0 => enc(
                        out,
                        &[
                            A::S("TOPN.CREATE"),
                            A::K("lat:sw:t:", i / 2),
                            A::S("BUCKET"),
                            A::S("3600"),
                        ],
                    ),
                    _ => enc(
                        out,
                        &[
                            A::S("ULIST.CREATE"),
                            A::K("lat:sw:u:", i / 2),
                            A::S("VALUE"),
                            A::S("user"),
                            A::S("SCOPE"),
                            A::S("month"),
                        ],
                    ),
                }
            })?;
        let at = now_ms();
        let per_key = FROM * PER_ENTRY;
        run.c.load("the first entries", KEYS * per_key, |i, out| {
            add(out, i / per_key, i % per_key, at)
        })?;
        run.c.slowlog_arm(SLOWLOG_LEN, 0)?;
        let timed = (TO - FROM) * PER_ENTRY;
        run.c.load("the timed entries", KEYS * timed, |i, out| {
            add(out, i / timed, FROM * PER_ENTRY + i % timed, at)
        })?;
        let mut times: HashMap<(String, bool), Vec<f64>> = HashMap::new();
        for e in run.c.slowlog_take(SLOWLOG_LEN)? {
            let name = e.name();
            if let (true, Some(i)) = (name != "CONFIG" && name != "SLOWLOG", entry_of(&e.args)) {
                times
                    .entry((name, i == SWITCH))
                    .or_default()
                    .push(e.us as f64);
            }
        }
        for name in ["TOPN.INCR", "ULIST.ADD", "SADD"] {
            for switching in [true, false] {
                let mut us = times
                    .remove(&(name.to_string(), switching))
                    .unwrap_or_default();
                let what = if switching {
                    format!("the add of entry {SWITCH}")
                } else {
                    format!("the other adds of entries {FROM}-{}", TO - 1)
                };
                let over = us.iter().filter(|&&t| t > 1000.0).count();
                let (n, med) = (us.len(), median(&mut us).unwrap_or(0.0));
                let max = us.last().copied().unwrap_or(0.0);
                let id = format!("{name} {}", if switching { "switch" } else { "others" });
                let f = Figure::new(
                    id,
                    format!("{name}: {what}, slowest of {n} (SLOWLOG)"),
                    "us",
                )
                .value(max)
                .note(format!("median {med:.0} us, {over} of {n} above 1 ms"))
                .details(&[
                    ("median_us", med),
                    ("calls", n as f64),
                    ("above_1ms", over as f64),
                ]);
                // Only the module's adds have a goal; SADD is the control beside them.
                let kind = if name == "SADD" {
                    Kind::Info
                } else {
                    Kind::Command
                };
                run.figs.push(kind, f);
            }
        }
        Ok(0.0)
    })
}
