//! The `ulist-small` group: memory per value of many small lists, where
//! Redis packs a set into one intset or listpack and ULIST keeps a list
//! compact (`recipes.ulist-compact-max`).
//!
//! 100,000 random 9-digit user ids in lists of 10, 100 and 10,000 values
//! (10,000, 1,000 and 10 keys): ULIST (`VALUE user`) against one plain set
//! per list (SADD: what the gem stores for a list without partitions), and
//! ULIST with `EXPIRE 86400` on every value against the gem's Expirable
//! layout (a zset per list scored by the expiry in seconds). MEMORY USAGE
//! ... SAMPLES 0 summed over the keys; the allocator's view is in each
//! row's note.

use crate::group::{cmp, Group, Measure, Role, Unit};
use crate::memory::{mem_measure, AllocBytes};
use crate::pipe::{enc, now_ms, A};
use crate::settings::Settings;

/// Values per layout.
const SMALL_VALUES: u64 = 100_000;
/// The expiry of the expiring values, in seconds.
const SMALL_TTL: u64 = 86_400;

const ULIST: [&str; 2] = ["ulist.add", "ulist.create"];

/// Value `i` of a layout: a 9-digit id, distinct within its list.
fn small_value(i: u64) -> u64 {
    100_000_000 + (i * 2_654_435_761) % 900_000_000
}

/// One layout: `SMALL_VALUES` values in lists of `per`, written by `write`
/// (the list's key and the value) after `create` made each list.
fn small_measure(
    id: &'static str,
    role: Role,
    label: String,
    per: u64,
    alloc: &AllocBytes,
    create: fn(&str) -> Option<Vec<String>>,
    write: fn(&str, u64) -> Vec<String>,
) -> Measure {
    let alloc = alloc.clone();
    Measure::new(id, role, label, Unit::BytesPerValue, move |c| {
        let lists = SMALL_VALUES / per;
        let keys: Vec<String> = (0..lists).map(|k| format!("us:{id}:{k}")).collect();
        mem_measure(c, id, &alloc, &keys, SMALL_VALUES, |c| {
            c.load("create", lists, |k, out| {
                if let Some(args) = create(&keys[k as usize]) {
                    enc(out, &args.iter().map(|a| A::S(a)).collect::<Vec<_>>());
                } else {
                    enc(out, &[A::S("PING")]);
                }
            })?;
            c.load("fill", SMALL_VALUES, |i, out| {
                let args = write(&keys[(i / per) as usize], small_value(i));
                enc(out, &args.iter().map(|a| A::S(a)).collect::<Vec<_>>());
            })
        })
    })
    .param("values_per_list", per)
    .param("by", "MEMORY USAGE")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

pub(crate) fn group(_s: &Settings) -> Group {
    let a: AllocBytes = Default::default();
    let (mut measures, mut compares) = (Vec::new(), Vec::new());
    let rows: [(u64, [&'static str; 4]); 3] = [
        (10, ["ULIST 10", "SADD 10", "ULIST exp 10", "Expirable 10"]),
        (
            100,
            ["ULIST 100", "SADD 100", "ULIST exp 100", "Expirable 100"],
        ),
        (
            10_000,
            [
                "ULIST 10000",
                "SADD 10000",
                "ULIST exp 10000",
                "Expirable 10000",
            ],
        ),
    ];
    for (per, [ul, sadd, ul_exp, gem_exp]) in rows {
        let lists = SMALL_VALUES / per;
        measures.extend([
            small_measure(
                ul,
                Role::Module,
                format!("ULIST, {lists} lists of {per} values (VALUE user)"),
                per,
                &a,
                |k| Some(strings(&["ULIST.CREATE", k, "VALUE", "user"])),
                |k, v| strings(&["ULIST.ADD", k, "user", &v.to_string()]),
            )
            .requires(&ULIST)
            .param("expiring", false),
            small_measure(
                sadd,
                Role::Gem,
                format!("SADD, {lists} sets of {per} values (the gem's list without partitions)"),
                per,
                &a,
                |_| None,
                |k, v| strings(&["SADD", k, &v.to_string()]),
            )
            .param("expiring", false),
            small_measure(
                ul_exp,
                Role::Module,
                format!("ULIST, {lists} lists of {per} values, EXPIRE {SMALL_TTL} per value"),
                per,
                &a,
                |k| Some(strings(&["ULIST.CREATE", k, "VALUE", "user"])),
                |k, v| {
                    let ttl = SMALL_TTL.to_string();
                    strings(&["ULIST.ADD", k, "EXPIRE", &ttl, "user", &v.to_string()])
                },
            )
            .requires(&ULIST)
            .param("expiring", true),
            small_measure(
                gem_exp,
                Role::Gem,
                format!("gem Expirable, {lists} zsets of {per} values (score = expiry s)"),
                per,
                &a,
                |_| None,
                |k, v| {
                    let expiry = (now_ms() / 1000 + SMALL_TTL).to_string();
                    strings(&["ZADD", k, &expiry, &v.to_string()])
                },
            )
            .param("expiring", true),
        ]);
        compares.push(cmp(ul, sadd, None));
        compares.push(cmp(ul_exp, gem_exp, None));
    }
    Group {
        measures,
        compares,
        ..Group::new(
            "ulist-small",
            format!(
                "ULIST memory per value in small lists: {SMALL_VALUES} values in lists of 10, 100 and \
                 10000, MEMORY USAGE ... SAMPLES 0 summed over each layout's keys"
            ),
        )
    }
}
