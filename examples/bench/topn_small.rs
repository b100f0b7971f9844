//! The `topn-small` group: memory per event of many small TOPN keys (a
//! "top pages per user" board: one key per user), where TOPN keeps a key
//! compact (`recipes.topn-compact-max`) and the recipe keeps one zset per
//! user and hourly bucket (a listpack while small).
//!
//! 20,000 events, one per (user, member), users of 1, 2, 10 and 50 members,
//! the events in one hourly bucket or spread over 24: TOPN.INCR ... AT
//! against ZINCRBY into the bucket's zset. MEMORY USAGE ... SAMPLES 0 summed
//! over the keys (every zset of the recipe); goal: at most 1.5x the recipe.
//! `BENCH_TOPN_COMPACT_MAX` sets `recipes.topn-compact-max` for the TOPN keys
//! (0: the full layout from the first event, what the compact layout saves).

use crate::group::{cmp, Goal, Group, Measure, Role, Unit};
use crate::memory::{mem_measure, AllocBytes};
use crate::pipe::{enc, now_ms, A};
use crate::settings::Settings;

/// Events per layout.
const EVENTS: u64 = 20_000;
const HOUR_MS: u64 = 3_600_000;

const TOPN: [&str; 1] = ["topn.incr"];

/// The bucket (hours back) of a user's member `i` when events spread over
/// `spread` buckets.
fn hours_back(i: u64, spread: u64) -> u64 {
    i % spread
}

/// One layout: users of `per` members, events over `spread` buckets; `key`
/// names the key an event of (user, hours back) goes to, `write` the command.
fn small_measure(
    id: &'static str,
    role: Role,
    label: String,
    (per, spread): (u64, u64),
    alloc: &AllocBytes,
    zset_per_bucket: bool,
    compact_max: Option<u64>,
) -> Measure {
    let alloc = alloc.clone();
    Measure::new(id, role, label, Unit::BytesPerValue, move |c| {
        if let Some(n) = compact_max.filter(|_| !zset_per_bucket) {
            c.cmd(&format!("CONFIG SET recipes.topn-compact-max {n}"))?;
        }
        let users = EVENTS / per;
        let hour = now_ms() / HOUR_MS * HOUR_MS;
        let key = |user: u64, back: u64| match zset_per_bucket {
            true => format!("ts:{id}:{user}:{back}"),
            false => format!("ts:{id}:{user}"),
        };
        let buckets = if zset_per_bucket { per.min(spread) } else { 1 };
        let keys: Vec<String> = (0..users)
            .flat_map(|u| (0..buckets).map(move |b| (u, b)))
            .map(|(u, b)| key(u, b))
            .collect();
        mem_measure(c, id, &alloc, &keys, EVENTS, |c| {
            c.load("fill", EVENTS, |e, out| {
                let (user, i) = (e / per, e % per);
                let back = hours_back(i, spread);
                let member = format!("page:{i:05}");
                let k = key(user, back);
                if zset_per_bucket {
                    enc(out, &[A::S("ZINCRBY"), A::S(&k), A::S("1"), A::S(&member)]);
                } else {
                    let at = (hour - back * HOUR_MS + 1).to_string();
                    enc(
                        out,
                        &[
                            A::S("TOPN.INCR"),
                            A::S(&k),
                            A::S(&member),
                            A::S("AT"),
                            A::S(&at),
                        ],
                    );
                }
            })
        })
    })
    .param("members_per_key", per)
    .param("buckets", spread)
    .param("by", "MEMORY USAGE")
}

pub(crate) fn group(s: &Settings) -> Group {
    let a: AllocBytes = Default::default();
    let (mut measures, mut compares) = (Vec::new(), Vec::new());
    let rows: [(u64, u64, &'static str, &'static str); 8] = [
        (1, 1, "TOPN 1x1", "zsets 1x1"),
        (2, 1, "TOPN 2x1", "zsets 2x1"),
        (10, 1, "TOPN 10x1", "zsets 10x1"),
        (50, 1, "TOPN 50x1", "zsets 50x1"),
        (1, 24, "TOPN 1x24", "zsets 1x24"),
        (2, 24, "TOPN 2x24", "zsets 2x24"),
        (10, 24, "TOPN 10x24", "zsets 10x24"),
        (50, 24, "TOPN 50x24", "zsets 50x24"),
    ];
    for (per, spread, topn, zsets) in rows {
        let users = EVENTS / per;
        measures.extend([
            small_measure(
                topn,
                Role::Module,
                format!("TOPN, {users} keys of {per} members, events over {spread} hourly buckets"),
                (per, spread),
                &a,
                false,
                s.topn_compact_max,
            )
            .requires(&TOPN),
            small_measure(
                zsets,
                Role::Recipe,
                format!("the recipe, {users} users' zsets of {per} members over {spread} buckets"),
                (per, spread),
                &a,
                true,
                None,
            ),
        ]);
        compares.push(cmp(topn, zsets, Some(Goal::AtMost(1.5))));
    }
    Group {
        measures,
        compares,
        ..Group::new(
            "topn-small",
            format!(
                "TOPN memory per event in small keys: {EVENTS} events in keys of 1, 2, 10 and 50 \
                 members, in one bucket or over 24, MEMORY USAGE ... SAMPLES 0 against the \
                 recipe's zsets"
            ),
        )
    }
}
