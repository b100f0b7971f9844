//! The `topn-capacity-writes` group: the server-side time (SLOWLOG) of
//! `TOPN.INCR` at the server's time on a key of `BUCKET 1 WINDOW 86400`, with
//! `CAPACITY 100` and without, once 3,000 and 20,000 buckets are in use
//! (three events a bucket, written with AT). A CAPACITY write answers the
//! member's count over the window from the folded sums of the sealed buckets
//! (`topn/layout/capped/folded.rs`), so its time should not grow with the
//! buckets in use. Also the slowest `TOPN.INCR` of a bucket of `CAPACITY
//! 10000` filled with members of 1 KB, then evicting: a write copies and
//! hashes about its own member, whatever the bucket's member bytes.

use crate::control::Conn;
use crate::group::{cmp, goal, Goal, Group, Measure, Role, Unit};
use crate::pipe::{enc, now_ms, A};
use crate::report::median;
use crate::settings::Settings;
use crate::topn::slowlog_op_us;
use std::time::Duration;

/// Writes timed per measure, one at a time.
const WRITES: usize = 400;
/// Members the writes (and the fill) pick from.
const MEMBERS: u64 = 500;

fn id(buckets: u64, capped: bool) -> &'static str {
    match (buckets, capped) {
        (3_000, true) => "cap INCR 3000 buckets",
        (3_000, false) => "exact INCR 3000 buckets",
        (_, true) => "cap INCR 20000 buckets",
        (_, false) => "exact INCR 20000 buckets",
    }
}

/// The median server-side time of `TOPN.INCR` on a key of `buckets`
/// buckets in use.
fn incr_time(buckets: u64, capped: bool) -> Measure {
    let what = if capped { "CAPACITY 100" } else { "exact" };
    let label = format!("TOPN.INCR, {what}, {buckets} buckets in use");
    Measure::new(
        id(buckets, capped),
        Role::Module,
        label,
        Unit::Micros,
        move |c| {
            let key = "topn:capw";
            c.cmd(&format!("DEL {key}"))?;
            let capacity = if capped { " CAPACITY 100" } else { "" };
            c.cmd(&format!(
                "TOPN.CREATE {key} BUCKET 1 WINDOW 86400{capacity}"
            ))?;
            let first = now_ms() / 1000 - buckets;
            c.load("TOPN capacity fill", buckets * 3, |i, out| {
                let (b, m) = (first + i / 3, (i * 7 + i / 3) % MEMBERS);
                let args = [
                    A::S("TOPN.INCR"),
                    A::S(key),
                    A::K("m", m),
                    A::S("AT"),
                    A::U(b * 1000),
                ];
                enc(out, &args);
            })?;
            let mut us: Vec<f64> = slowlog_op_us(c, WRITES, Duration::ZERO, |i| {
                vec![format!("TOPN.INCR {key} m{}", i as u64 * 13 % MEMBERS)]
            })?
            .into_iter()
            .map(|x| x as f64)
            .collect();
            let max = us.iter().copied().fold(0.0, f64::max);
            let in_use = info_buckets(c, key)?;
            c.cmd(&format!("UNLINK {key}"))?;
            let med = median(&mut us).ok_or("no writes")?;
            Ok((
                med,
                format!("median of {WRITES}, max {max:.0} us; {in_use} buckets"),
            )
                .into())
        },
    )
    .requires(&["topn.incr"])
    .param("buckets", buckets)
    .param("capacity", if capped { 100 } else { 0 })
}

/// Members of 1 KB the slowest-write measure writes: a bucket's 10,000, then as
/// many evicting.
const LONG_MEMBERS: usize = 20_000;

/// The slowest server-side time of `TOPN.INCR` of a new member of 1 KB into a
/// bucket of `CAPACITY 10000`, over its filling and as many evictions.
fn long_members_time() -> Measure {
    Measure::new(
        "cap INCR 1 KB members max",
        Role::Module,
        "TOPN.INCR of 1 KB members, CAPACITY 10000, slowest of 20,000 (10,000 evicting)",
        Unit::Micros,
        |c| {
            let key = "topn:capw-long";
            c.cmd(&format!("DEL {key}"))?;
            c.cmd(&format!(
                "TOPN.CREATE {key} BUCKET 3600 WINDOW 24 CAPACITY 10000"
            ))?;
            let mut us: Vec<f64> = slowlog_op_us(c, LONG_MEMBERS, Duration::ZERO, |i| {
                vec![format!("TOPN.INCR {key} {i:01000}")]
            })?
            .into_iter()
            .map(|x| x as f64)
            .collect();
            c.cmd(&format!("UNLINK {key}"))?;
            let max = us.iter().copied().fold(0.0, f64::max);
            let med = median(&mut us).ok_or("no writes")?;
            Ok((max, format!("max of {LONG_MEMBERS}, median {med:.0} us")).into())
        },
    )
    .requires(&["topn.incr"])
    .param("capacity", 10_000)
    .param("member_bytes", 1_000)
}

/// `buckets` of `TOPN.INFO key`.
fn info_buckets(c: &mut Conn, key: &str) -> Result<i64, String> {
    let info: Vec<redis::Value> = c.query(redis::cmd("TOPN.INFO").arg(key))?;
    info.chunks(2)
        .find_map(|kv| match kv {
            [redis::Value::BulkString(k), redis::Value::Int(v)] if k == b"buckets" => Some(*v),
            _ => None,
        })
        .ok_or_else(|| format!("TOPN.INFO {key}: no buckets"))
}

pub(crate) fn group(_s: &Settings) -> Group {
    Group {
        measures: [3_000, 20_000]
            .into_iter()
            .flat_map(|b| [incr_time(b, true), incr_time(b, false)])
            .chain([long_members_time()])
            .collect(),
        compares: vec![
            // Whatever the buckets in use: the time at 20,000 as at 3,000,
            // and within a few times an exact key's.
            cmp(
                "cap INCR 20000 buckets",
                "cap INCR 3000 buckets",
                Some(Goal::AtMost(1.5)),
            ),
            cmp(
                "cap INCR 20000 buckets",
                "exact INCR 20000 buckets",
                Some(Goal::AtMost(3.0)),
            ),
            cmp(
                "cap INCR 3000 buckets",
                "exact INCR 3000 buckets",
                Some(Goal::AtMost(3.0)),
            ),
            // No write above 1 ms, whatever the bucket's member bytes.
            goal("cap INCR 1 KB members max", Goal::AtMost(1_000.0)),
        ],
        ..Group::new(
            "topn-capacity-writes",
            "TOPN.INCR server-side time (SLOWLOG, median) on BUCKET 1 WINDOW 86400, with CAPACITY \
             100 and without, at 3,000 and 20,000 buckets in use; the slowest of 1 KB members \
             into CAPACITY 10000",
        )
    }
}
