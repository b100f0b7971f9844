//! The HCOUNTER groups: the gem redis_counters' HashCounter and
//! UniqueHashCounter (`counter:<partition>` hashes with fields
//! `<group1>:<group2>`, the unique list `<counter>_uq:<scope>:<partition>`
//! sets + `<counter>_uq:<scope>:partitions`) against one HCOUNTER key.
//!
//! - `hcounter-write`: `HCOUNTER.INCR counter date <d> company_id <c>` (30
//!   daily partitions x 300 companies) against plain `HINCRBY counter:<date>
//!   <company> 1` on the gem's layout, the floor (goal >= 0.6x), and the
//!   HINCRBYFLOAT the gem sends (reference). The gem's hashes of 300 fields
//!   are listpacks under the default `hash-max-listpack-entries` (512), which
//!   HINCRBY searches linearly: that is what the gem's layout costs.
//! - `hcounter-unique`: 8 clients count (company, user) pairs drawn from
//!   200,000 (half stored at the start, spread over the 30 days) into 30
//!   daily partitions of one month's scope: the gem's UniqueHashCounter over
//!   its Blocking list (WATCH list; LRANGE; WATCH each set; SISMEMBER each
//!   until found; MULTI SADD [RPUSH] HINCRBYFLOAT EXEC, retried while EXEC is
//!   nil), request/reply, against HCOUNTER.INCR by the same 8 clients at
//!   pipeline 1 (goal >= 10x), and pipelined for reference.
//! - `hcounter-list`: 10,000 partitions (10 dates x 1,000 companies, 20
//!   cities each): `HCOUNTER.PARTITIONS` + one partition's `HCOUNTER.DATA`
//!   against the gem's `partitions` + `data(partition)` reduced to its
//!   cheapest form, `KEYS counter:*` + `HGETALL` of one partition key (as
//!   shipped, `data` runs two more KEYS: the exact key and `key:*`); goal >= 10x.
//!   For reference, the gem's listing also in db 1, where the same hashes
//!   share the db with 1,000,000 unrelated keys (KEYS scans them all).
//! - `hcounter-memory`: bytes per cell at 100,000 cells, 5, 20, 100 and
//!   1,000 cells per partition (20,000 partitions down to 100), HCOUNTER
//!   (integer counts) against the gem's hashes filled with HINCRBYFLOAT, by
//!   MEMORY USAGE and by what the allocator holds; goal HCOUNTER <= gem at
//!   each.

use std::sync::Arc;

use crate::control::Conn;
use crate::gem::{self, DAYS, MONTH};
use crate::group::{cmp, dialog, op, Goal, Group, Measure, Role, Scenario, Unit};
use crate::memory::{mem_alloc, mem_measure, AllocBytes};
use crate::pipe::{enc, A};
use crate::settings::Settings;

/// hcounter-write: companies per daily partition.
const HW_COMPANIES: u64 = 300;
/// hcounter-unique: (company, user) pairs drawn from this many, half of them
/// already counted when a run starts; companies among them.
const HU_PAIRS: u64 = 200_000;
const HU_COMPANIES: u64 = 300;
/// hcounter-list: partitions (dates x companies) and cells per partition.
const HL_DATES: u64 = 10;
const HL_COMPANIES: u64 = 1_000;
const HL_CITIES: u64 = 20;
/// hcounter-list reference: unrelated keys beside the gem's hashes in db 1.
const HL_OTHER_KEYS: u64 = 1_000_000;
/// hcounter-memory: cells per layout.
const HM_CELLS: u64 = 100_000;

const HC_CREATE: &str = "hcounter.create";
const HC_INCR: &str = "hcounter.incr";

/// A company id (5 digits).
fn company(k: u64) -> u64 {
    10_000 + k
}

/// hcounter-unique pair `n`: (company, user).
fn hu_pair(n: u64) -> (u64, u64) {
    (company(n % HU_COMPANIES), gem::user(n))
}

/// `HCOUNTER.CREATE key <decl>` as one line.
fn create(c: &mut Conn, key: &str, decl: &str) -> Result<(), String> {
    c.cmd(&format!("HCOUNTER.CREATE {key} {decl}")).map(|_| ())
}

// ----------------------------------------------------------------------
// hcounter-write
// ----------------------------------------------------------------------

pub(crate) fn write_group(_s: &Settings) -> Group {
    let days: Arc<Vec<String>> = Arc::new(gem::days());
    // The gem's layout: hw:<date> = { <company> => count }.
    let hashes: Arc<Vec<String>> = Arc::new(days.iter().map(|d| format!("hw:{d}")).collect());
    let gem = |id: &'static str, role: Role, cmd: &'static str| {
        let hashes = hashes.clone();
        Scenario::command(
            id,
            role,
            format!("{cmd} hw:<date> <company> 1 ({DAYS} dates x {HW_COMPANIES} companies)"),
            move |g, out| {
                let hash = &hashes[g.below(DAYS) as usize];
                let c = company(g.below(HW_COMPANIES));
                enc(out, &[A::S(cmd), A::S(hash), A::U(c), A::S("1")]);
            },
        )
    };
    Group {
        reset_each: true,
        scenarios: vec![
            gem("HINCRBY", Role::Plain, "HINCRBY"),
            Scenario::new(
                "HCOUNTER.INCR",
                Role::Module,
                "HCOUNTER.INCR hcw date <date> company_id <company> \
                 (created with PARTITION date GROUP company_id)",
                move |c| {
                    create(c, "hcw", "PARTITION date GROUP company_id")?;
                    let days = days.clone();
                    Ok(op(move |g, out| {
                        let day = A::S(&days[g.below(DAYS) as usize]);
                        let c = A::U(company(g.below(HW_COMPANIES)));
                        enc(
                            out,
                            &[
                                A::S("HCOUNTER.INCR"),
                                A::S("hcw"),
                                A::S("date"),
                                day,
                                A::S("company_id"),
                                c,
                            ],
                        );
                        1
                    }))
                },
            )
            .requires(&[HC_INCR, HC_CREATE]),
            gem("HINCRBYFLOAT", Role::Gem, "HINCRBYFLOAT"),
        ],
        compares: vec![
            cmp("HCOUNTER.INCR", "HINCRBY", Some(Goal::AtLeast(0.6))),
            cmp("HCOUNTER.INCR", "HINCRBYFLOAT", None),
        ],
        ..Group::new(
            "hcounter-write",
            format!(
                "HCOUNTER write: counts into {DAYS} daily partitions x {HW_COMPANIES} companies; \
                 baseline: plain HINCRBY on the gem's layout (one hash per date, a listpack of \
                 {HW_COMPANIES} fields)"
            ),
        )
    }
}

// ----------------------------------------------------------------------
// hcounter-unique
// ----------------------------------------------------------------------

/// `HCOUNTER.INCR hcu date <day> company_id <c> user_id <u> month <month>`
/// for pair `n`.
fn hu_incr(out: &mut Vec<u8>, day: &str, n: u64) {
    let (c, u) = hu_pair(n);
    enc(
        out,
        &[
            A::S("HCOUNTER.INCR"),
            A::S("hcu"),
            A::S("date"),
            A::S(day),
            A::S("company_id"),
            A::U(c),
            A::S("user_id"),
            A::U(u),
            A::S("month"),
            A::S(MONTH),
        ],
    );
}

/// The pairs counted before a run: pair 2j on day j % 30.
const HU_PREFILL: u64 = HU_PAIRS / 2;

/// hcounter-unique prefill, the gem's layout: the partitions list, a set of
/// `<company>:<user>` per day and a hash of counts per day.
fn hu_prefill_gem(c: &mut Conn) -> Result<(), String> {
    let days = gem::days();
    c.query::<()>(
        redis::cmd("RPUSH")
            .arg(format!("hu_uq:{MONTH}:partitions"))
            .arg(&days),
    )?;
    c.load("HCOUNTER unique: gem", 2 * HU_PREFILL, |i, out| {
        let j = i / 2;
        let day = &days[(j % DAYS) as usize];
        let (company, user) = hu_pair(2 * j);
        if i % 2 == 0 {
            let set = format!("hu_uq:{MONTH}:{day}");
            enc(
                out,
                &[A::S("SADD"), A::S(&set), A::S(&format!("{company}:{user}"))],
            );
        } else {
            let hash = format!("hu:{day}");
            enc(
                out,
                &[A::S("HINCRBYFLOAT"), A::S(&hash), A::U(company), A::S("1")],
            );
        }
    })
}

/// hcounter-unique prefill, HCOUNTER: the same pairs counted on the same days.
fn hu_prefill_hcounter(c: &mut Conn) -> Result<(), String> {
    let decl = "PARTITION date GROUP company_id UNIQUE company_id user_id SCOPE month";
    create(c, "hcu", decl)?;
    let days = gem::days();
    c.load("HCOUNTER unique: HCOUNTER.INCR", HU_PREFILL, |j, out| {
        hu_incr(out, &days[(j % DAYS) as usize], 2 * j)
    })
}

fn hu_hcounter_scenario(id: &'static str, pipeline: Option<usize>, what: &str) -> Scenario {
    let days: Arc<Vec<String>> = Arc::new(gem::days());
    let label = format!(
        "HCOUNTER.INCR hcu date <d> company_id <c> user_id <u> month {MONTH} ({} clients, {what})",
        gem::CLIENTS
    );
    Scenario::new(id, Role::Module, label, move |c| {
        hu_prefill_hcounter(c)?;
        let days = days.clone();
        Ok(op(move |g, out| {
            hu_incr(out, &days[g.below(DAYS) as usize], g.below(HU_PAIRS));
            1
        }))
    })
    .requires(&[HC_INCR, HC_CREATE])
    .clients(gem::CLIENTS, pipeline)
}

pub(crate) fn unique_group(s: &Settings) -> Group {
    let clients = gem::CLIENTS;
    Group {
        reset_each: true,
        scenarios: vec![
            Scenario::new(
                "gem unique",
                Role::Gem,
                format!(
                    "gem UniqueHashCounter increment ({clients} clients, request/reply): \
                     WATCH list; LRANGE; WATCH each of {DAYS} sets; SISMEMBER each until found; \
                     MULTI SADD [RPUSH] HINCRBYFLOAT hu:<date> <company> 1 EXEC, retried while EXEC is nil"
                ),
                |c| {
                    hu_prefill_gem(c)?;
                    let days = gem::days();
                    Ok(dialog(move |g, c| {
                        let day = &days[g.below(DAYS) as usize];
                        let (company, user) = hu_pair(g.below(HU_PAIRS));
                        let value = format!("{company}:{user}");
                        let mut incr = redis::cmd("HINCRBYFLOAT");
                        incr.arg(format!("hu:{day}")).arg(company).arg(1);
                        Ok(gem::blocking_add(c, "hu_uq", MONTH, day, &value, &[incr])?.1)
                    }))
                },
            )
            .clients(clients, Some(1)),
            hu_hcounter_scenario("HCOUNTER p1", Some(1), "request/reply"),
            hu_hcounter_scenario("HCOUNTER pipe", None, &format!("pipeline {} (reference)", s.pipeline)),
        ],
        compares: vec![
            cmp("HCOUNTER p1", "gem unique", Some(Goal::AtLeast(10.0))),
            cmp("HCOUNTER pipe", "gem unique", None),
        ],
        ..Group::new(
            "hcounter-unique",
            format!(
                "HCOUNTER unique vs the gem's UniqueHashCounter: {clients} concurrent clients count \
                 (company, user) pairs drawn from {HU_PAIRS} ({HU_COMPANIES} companies; half already \
                 counted at the start) into {DAYS} daily partitions of one month's scope; one op = one \
                 event (the gem's retries included)"
            ),
        )
    }
}

// ----------------------------------------------------------------------
// hcounter-list
// ----------------------------------------------------------------------

/// hcounter-list: the count of cell (partition p, city k), 1..1000.
fn hl_count(p: u64, k: u64) -> u64 {
    1 + (p * HL_CITIES + k) * 2_654_435_761 % 1000
}

/// A city id (3 digits).
fn city(k: u64) -> u64 {
    100 + k
}

/// hcounter-list partition `p`: (date, company).
fn hl_part(p: u64) -> (String, u64) {
    (gem::day(p / HL_COMPANIES), company(p % HL_COMPANIES))
}

/// The gem's layout: hl:<date>:<company> = { <company>:<city> => count }.
fn hl_fill_gem(c: &mut Conn) -> Result<(), String> {
    c.load(
        "HCOUNTER list: gem hashes",
        HL_DATES * HL_COMPANIES,
        |p, out| {
            let (day, co) = hl_part(p);
            let key = format!("hl:{day}:{co}");
            let fields: Vec<String> = (0..HL_CITIES)
                .map(|k| format!("{co}:{}", city(k)))
                .collect();
            let mut args = vec![A::S("HSET"), A::S(&key)];
            for (k, f) in fields.iter().enumerate() {
                args.extend([A::S(f), A::U(hl_count(p, k as u64))]);
            }
            enc(out, &args);
        },
    )
}

/// The gem's listing in db `db`: KEYS hl:*, then HGETALL of one partition.
fn hl_gem_scenario(id: &'static str, role: Role, db: u64, label: String) -> Scenario {
    Scenario::new(id, role, label, move |_| {
        Ok(op(move |g, out| {
            let (day, co) = hl_part(g.below(HL_DATES * HL_COMPANIES));
            enc(out, &[A::S("SELECT"), A::U(db)]);
            enc(out, &[A::S("KEYS"), A::S("hl:*")]);
            enc(out, &[A::S("HGETALL"), A::S(&format!("hl:{day}:{co}"))]);
            3
        }))
    })
    .clients(1, Some(1))
}

/// The hcounter-list data: the gem's hashes in db 0, again in db 1 beside a
/// million other keys, and the HCOUNTER key in db 0.
fn hl_setup(c: &mut Conn) -> Result<(), String> {
    hl_fill_gem(c)?;
    eprintln!("  db 1: the gem's hashes and {HL_OTHER_KEYS} other keys ...");
    c.select(1)?;
    hl_fill_gem(c)?;
    const PER: u64 = 500;
    c.load(
        "HCOUNTER list: other keys",
        HL_OTHER_KEYS / PER,
        |i, out| {
            let mut args = vec![A::S("MSET")];
            for n in i * PER..(i + 1) * PER {
                args.extend([A::K("other:", n), A::S("x")]);
            }
            enc(out, &args);
        },
    )?;
    c.select(0)?;
    if c.has(HC_INCR)? {
        create(
            c,
            "hcl",
            "PARTITION date company_id GROUP company_id city_id",
        )?;
        let n = HL_DATES * HL_COMPANIES * HL_CITIES;
        c.load("HCOUNTER list: HCOUNTER.INCRBY", n, |i, out| {
            let (p, k) = (i / HL_CITIES, i % HL_CITIES);
            let (day, co) = hl_part(p);
            let (count, co, city) = (A::U(hl_count(p, k)), A::U(co), A::U(city(k)));
            let date = A::S(&day);
            enc(
                out,
                &[
                    A::S("HCOUNTER.INCRBY"),
                    A::S("hcl"),
                    count,
                    A::S("date"),
                    date,
                    A::S("company_id"),
                    co,
                    A::S("city_id"),
                    city,
                ],
            );
        })?;
    }
    Ok(())
}

pub(crate) fn list_group(_s: &Settings) -> Group {
    let partitions = HL_DATES * HL_COMPANIES;
    Group {
        setup: Some(Box::new(hl_setup)),
        scenarios: vec![
            hl_gem_scenario(
                "gem listing",
                Role::Gem,
                0,
                "KEYS hl:*; HGETALL hl:<date>:<company> (the gem's partitions + data(partition) at \
                 its cheapest; 1 client, no pipeline)"
                    .into(),
            ),
            Scenario::new(
                "HCOUNTER",
                Role::Module,
                "HCOUNTER.PARTITIONS hcl; HCOUNTER.DATA hcl date <date> company_id <company> \
                 (1 client, no pipeline)",
                move |_| {
                    Ok(op(move |g, out| {
                        let (day, co) = hl_part(g.below(partitions));
                        enc(out, &[A::S("HCOUNTER.PARTITIONS"), A::S("hcl")]);
                        let (date, co) = (A::S(&day), A::U(co));
                        enc(
                            out,
                            &[A::S("HCOUNTER.DATA"), A::S("hcl"), A::S("date"), date, A::S("company_id"), co],
                        );
                        2
                    }))
                },
            )
            .requires(&[HC_INCR, HC_CREATE, "hcounter.partitions", "hcounter.data"])
            .clients(1, Some(1)),
            hl_gem_scenario(
                "gem + 1M keys",
                Role::Reference,
                1,
                format!(
                    "the same in db 1, beside {HL_OTHER_KEYS} unrelated keys (reference: KEYS scans \
                     the whole db; 1 client, no pipeline)"
                ),
            ),
        ],
        measures: vec![
            server_us("KEYS", Role::Gem, 0, "KEYS hl:*", 50),
            server_us("HGETALL", Role::Gem, 0, "HGETALL hl:2024-05-03:10500", 200),
            server_us("PARTITIONS", Role::Module, 0, "HCOUNTER.PARTITIONS hcl", 50),
            server_us(
                "DATA",
                Role::Module,
                0,
                "HCOUNTER.DATA hcl date 2024-05-03 company_id 10500",
                200,
            ),
            server_us("KEYS + 1M keys", Role::Reference, 1, "KEYS hl:*", 5),
        ],
        compares: vec![
            cmp("HCOUNTER", "gem listing", Some(Goal::AtLeast(10.0))),
            cmp("HCOUNTER", "gem + 1M keys", None),
        ],
        ..Group::new(
            "hcounter-list",
            format!(
                "HCOUNTER listing: {partitions} partitions ({HL_DATES} dates x {HL_COMPANIES} companies) \
                 of {HL_CITIES} cells (cities) each; one op = list the partitions, then read one \
                 partition's rows; baseline: the gem's listing"
            ),
        )
    }
}

/// The server's time per call of `line` in db `db`: run `times` times after
/// CONFIG RESETSTAT, then read INFO commandstats.
fn server_us(id: &'static str, role: Role, db: u64, line: &'static str, times: u64) -> Measure {
    let cmd = line
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let label = format!("server time per call of `{line}` in db {db} (INFO commandstats)");
    let requires: &[&str] = if cmd.starts_with("hcounter.") {
        &[HC_INCR, HC_CREATE]
    } else {
        &[]
    };
    Measure::new(id, role, label, Unit::Micros, move |c| {
        c.select(db)?;
        c.cmd("CONFIG RESETSTAT")?;
        for _ in 0..times {
            c.run(line)?;
        }
        let stat = c.info_field("commandstats", &format!("cmdstat_{cmd}"));
        c.select(0)?;
        let stat = stat?;
        let us = stat
            .split(',')
            .find_map(|kv| kv.strip_prefix("usec_per_call="))
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("cmdstat_{cmd}: no usec_per_call in {stat}"))?;
        Ok((us, format!("{times} calls")).into())
    })
    .requires(requires)
}

// ----------------------------------------------------------------------
// hcounter-memory
// ----------------------------------------------------------------------

/// hcounter-memory: partition `d` as a 10-byte date-shaped value (the
/// values are opaque to both layouts; 5,000 of them do not fit in real days
/// of a few years only).
fn hm_date(d: u64) -> String {
    format!(
        "{}-{:02}-{:02}",
        2000 + d / 372,
        d / 31 % 12 + 1,
        d % 31 + 1
    )
}

/// hcounter-memory: cell `j` of partition `d`: (company, count 1..1000).
/// The companies of a partition are distinct, in no particular order.
fn hm_cell(d: u64, j: u64) -> (u64, u64) {
    let i = d * 1000 + j;
    (
        company((d * 7919 + j * 13) % 90_000),
        1 + i * 2_654_435_761 % 1000,
    )
}

/// HCOUNTER layout: one key, PARTITION date GROUP company_id, integer counts.
fn hm_hcounter(id: &'static str, per: u64, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    let parts = HM_CELLS / per;
    let label = format!(
        "HCOUNTER, {per} cells per partition: one key, {parts} partitions (PARTITION date \
         GROUP company_id), {HM_CELLS} cells"
    );
    Measure::new(id, Role::Module, label, Unit::BytesPerValue, move |c| {
        let key = format!("hcm:{per}");
        mem_measure(c, id, &alloc, std::slice::from_ref(&key), HM_CELLS, |c| {
            create(c, &key, "PARTITION date GROUP company_id")?;
            c.load("HCOUNTER memory fill", HM_CELLS, |i, out| {
                let (d, j) = (i / per, i % per);
                let (co, n) = hm_cell(d, j);
                let (n, date, co) = (A::U(n), A::S(&hm_date(d)), A::U(co));
                enc(
                    out,
                    &[
                        A::S("HCOUNTER.INCRBY"),
                        A::S(&key),
                        n,
                        A::S("date"),
                        date,
                        A::S("company_id"),
                        co,
                    ],
                );
            })
        })
    })
    .requires(&["hcounter.incrby", HC_CREATE])
    .param("cells_per_partition", per)
    .param("by", "MEMORY USAGE")
}

/// The gem's layout: a hash `hm<per>:<date>` per partition, fields
/// `<company>`, values written by HINCRBYFLOAT.
fn hm_gem(id: &'static str, per: u64, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    let parts = HM_CELLS / per;
    let label = format!(
        "gem, {per} cells per partition: {parts} hashes hm{per}:<date> {{<company> => count}} \
         written by HINCRBYFLOAT"
    );
    Measure::new(id, Role::Gem, label, Unit::BytesPerValue, move |c| {
        let keys: Vec<String> = (0..parts)
            .map(|d| format!("hm{per}:{}", hm_date(d)))
            .collect();
        mem_measure(c, id, &alloc, &keys, HM_CELLS, |c| {
            // The gem adds 1 per event; the stored data is the same.
            c.load("gem memory fill", HM_CELLS, |i, out| {
                let (d, j) = (i / per, i % per);
                let (co, n) = hm_cell(d, j);
                let hash = A::S(&keys[d as usize]);
                enc(out, &[A::S("HINCRBYFLOAT"), hash, A::U(co), A::U(n)]);
            })
        })
    })
    .param("cells_per_partition", per)
    .param("by", "MEMORY USAGE")
}

pub(crate) fn memory_group(_s: &Settings) -> Group {
    let a: AllocBytes = Default::default();
    let rows = [
        (5, "HCOUNTER 5", "gem 5", "alloc HC 5", "alloc gem 5"),
        (20, "HCOUNTER 20", "gem 20", "alloc HC 20", "alloc gem 20"),
        (
            100,
            "HCOUNTER 100",
            "gem 100",
            "alloc HC 100",
            "alloc gem 100",
        ),
        (
            1000,
            "HCOUNTER 1000",
            "gem 1000",
            "alloc HC 1000",
            "alloc gem 1000",
        ),
    ];
    let (mut measures, mut compares) = (Vec::new(), Vec::new());
    for (per, hc, gem, _, _) in rows {
        measures.extend([hm_hcounter(hc, per, &a), hm_gem(gem, per, &a)]);
        compares.push(cmp(hc, gem, Some(Goal::AtMost(1.0))));
    }
    for (i, (_, _, _, alloc_hc, alloc_gem)) in rows.into_iter().enumerate() {
        let (hc, gem) = (&measures[2 * i], &measures[2 * i + 1]);
        let allocs = [mem_alloc(alloc_hc, hc, &a), mem_alloc(alloc_gem, gem, &a)];
        measures.extend(allocs);
        compares.push(cmp(alloc_hc, alloc_gem, Some(Goal::AtMost(1.0))));
    }
    Group {
        measures,
        compares,
        ..Group::new(
            "hcounter-memory",
            format!(
                "HCOUNTER memory per cell: {HM_CELLS} cells at 5, 20, 100 and 1000 cells per \
                 partition, MEMORY USAGE ... SAMPLES 0 summed over each layout's keys"
            ),
        )
    }
}
