//! The `topn-capacity-writes` group: the server-side time (SLOWLOG) of
//! `TOPN.INCR` at the server's time on a key of `BUCKET 1 WINDOW 86400`, with
//! `CAPACITY 100` and without, once 3,000 and 20,000 buckets are in use
//! (three events a bucket, written with AT). A CAPACITY write answers the
//! member's count over the window from the folded sums of the sealed buckets
//! (`topn/layout/capped/folded.rs`), so its time should not grow with the
//! buckets in use. Also the slowest `TOPN.INCR` of a bucket of `CAPACITY
//! 10000` filled with members of 1 KB, then evicting: a write copies and
//! hashes about its own member, whatever the bucket's member bytes. And the
//! slowest `TOPN.INCR` of a `WINDOW 100000 CAPACITY 100` key of 50,000 buckets
//! whose clock one write moves 75,000 buckets, and of the writes after it:
//! the buckets leave by segment, and the ones that stay stay summed.

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

/// Fills `key` (of one-second buckets) with `events` a bucket, written with AT,
/// into its `buckets` seconds up to now; returns the first bucket.
fn fill(c: &mut Conn, key: &str, buckets: u64, events: u64) -> Result<u64, String> {
    let first = now_ms() / 1000 - buckets;
    c.load("TOPN capacity fill", buckets * events, |i, out| {
        let (b, m) = (first + i / events, (i * 7 + i / events) % MEMBERS);
        let args = [
            A::S("TOPN.INCR"),
            A::S(key),
            A::K("m", m),
            A::S("AT"),
            A::U(b * 1000),
        ];
        enc(out, &args);
    })?;
    Ok(first)
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
            fill(c, key, buckets, 3)?;
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

/// Buckets in use, and events a bucket, before the clock moves.
const JUMP_BUCKETS: u64 = 50_000;
const JUMP_EVENTS: u64 = 10;
/// Buckets the clock moves, and writes timed from that one on.
const JUMP: u64 = 75_000;
const JUMP_WRITES: usize = 2_000;

/// The slowest server-side time of `TOPN.INCR` on a key of `BUCKET 1 WINDOW
/// 100000 CAPACITY 100` with 50,000 buckets in use, over the write that moves
/// its clock 75,000 buckets (two thirds of them leave) and the writes of new
/// members after it.
fn long_jump_time() -> Measure {
    Measure::new(
        "cap INCR clock jump max",
        Role::Module,
        "TOPN.INCR, CAPACITY 100, WINDOW 100000, 50,000 buckets in use: the write that moves \
         the clock 75,000 buckets and the 2,000 after it, slowest",
        Unit::Micros,
        |c| {
            let key = "topn:capw-jump";
            c.cmd(&format!("DEL {key}"))?;
            c.cmd(&format!(
                "TOPN.CREATE {key} BUCKET 1 WINDOW 100000 CAPACITY 100"
            ))?;
            let first = fill(c, key, JUMP_BUCKETS, JUMP_EVENTS)?;
            let at = (first + JUMP_BUCKETS - 1 + JUMP) * 1000;
            let mut us: Vec<f64> = slowlog_op_us(c, JUMP_WRITES, Duration::ZERO, |i| {
                vec![format!("TOPN.INCR {key} n{i} AT {at}")]
            })?
            .into_iter()
            .map(|x| x as f64)
            .collect();
            let in_use = info_buckets(c, key)?;
            c.cmd(&format!("UNLINK {key}"))?;
            let jump = us.first().copied().unwrap_or(0.0);
            let max = us.iter().copied().fold(0.0, f64::max);
            let med = median(&mut us).ok_or("no writes")?;
            Ok((
                max,
                format!("max of {JUMP_WRITES}; the jump {jump:.0} us, median {med:.0} us; {in_use} buckets after"),
            )
                .into())
        },
    )
    .requires(&["topn.incr"])
    .param("capacity", 100)
    .param("buckets", JUMP_BUCKETS)
    .param("jump", JUMP)
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
            .chain([long_members_time(), long_jump_time()])
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
            // No write above 1 ms when the clock moves past most of a long window.
            goal("cap INCR clock jump max", Goal::AtMost(1_000.0)),
        ],
        ..Group::new(
            "topn-capacity-writes",
            "TOPN.INCR server-side time (SLOWLOG, median) on BUCKET 1 WINDOW 86400, with CAPACITY \
             100 and without, at 3,000 and 20,000 buckets in use; the slowest of 1 KB members \
             into CAPACITY 10000, and across a clock moved past most of WINDOW 100000",
        )
    }
}
