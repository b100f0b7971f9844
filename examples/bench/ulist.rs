//! The ULIST groups (the gem redis_counters' UniqueValuesLists):
//! - `ulist-write`: ULIST.ADD into `BENCH_KEYS` lists created empty
//!   (`VALUE user`) against plain SADD of the same values into one set per
//!   key (goal >= 0.6x); also with `SCOPE month PARTITION day` (30 days),
//!   and with `AT` given (then replicated verbatim: shows what building the
//!   replicated effect costs).
//! - `ulist-gem`: 8 clients add user ids drawn from 200,000 (half stored
//!   at the start, spread over 30 days) into 30 daily partitions of one month:
//!   the gem's Blocking algorithm as it runs it, one request/reply at a time
//!   (`gem.rs`), against ULIST.ADD by the same 8 clients at pipeline 1 (goal
//!   >= 10x), and pipelined for reference.
//! - `ulist-memory`: bytes per value at 100,000 values in 30 daily
//!   partitions, integer and `u<n>` ids: ULIST without expiry against the
//!   gem's Blocking layout (a set per partition + the partitions list), and
//!   ULIST with `EXPIRE 86400` against its Expirable layout (a zset per
//!   partition scored by the expiry); goal ULIST <= gem on MEMORY USAGE
//!   (the module's own estimate for its key), checked also on what the
//!   allocator holds (`used_memory` with minus without the keys).
//! - `ulist-reclaim`: 200,000 values that expire together in one untouched
//!   list; a client PINGs about every ms during the background reclaim and,
//!   just before, on the idle server: goal max <= idle max + 2 ms; also the
//!   reclaim time and the list's MEMORY USAGE before, after and when empty.
//! - `ulist-small` (`ulist_small.rs`): memory per value in small lists.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::control::{text, Conn};
use crate::gem::{self, DAYS, MONTH};
use crate::group::{cmp, dialog, goal, op, Goal, Group, Measure, Role, Scenario, Unit};
use crate::memory::{mem_alloc, mem_measure, AllocBytes};
use crate::pipe::{enc, now_ms, A};
use crate::probe::{probed, PingStats};
use crate::report::{median, thousands};
use crate::settings::{stopped, Settings};

/// ulist-gem: user ids drawn from this many, half of them already stored
/// (spread over the 30 days) when a run starts: half the adds repeat.
const GEM_USERS: u64 = 200_000;
/// ulist-memory: values stored per layout.
const MEM_VALUES: u64 = 100_000;
const MEM_TTL: u64 = 86_400;
/// ulist-reclaim: values that expire together, and the idle PING window.
const RECLAIM_VALUES: u64 = 200_000;
const IDLE_PING_MS: u64 = 3_000;
/// ulist-reclaim: the values' AT is the load's start plus this, so that the
/// load (about 1 s on a busy 2-CPU machine) is over before they expire and
/// the PINGs measure the reclaim alone.
const RECLAIM_LEAD_MS: u64 = 2_000;

const ULIST: [&str; 2] = ["ulist.add", "ulist.create"];

/// Create `keys` ULIST keys `<prefix><n>` with the given declaration.
fn create_keys(
    c: &mut Conn,
    prefix: &'static str,
    keys: u64,
    decl: &'static [&'static str],
) -> Result<(), String> {
    c.load("ULIST.CREATE", keys, |k, out| {
        let mut args = vec![A::S("ULIST.CREATE"), A::K(prefix, k)];
        args.extend(decl.iter().map(|d| A::S(d)));
        enc(out, &args);
    })
}

pub(crate) fn write_group(s: &Settings) -> Group {
    let keys = s.keys;
    let days: Arc<Vec<String>> = Arc::new(gem::days());
    Group {
        reset_each: true,
        scenarios: vec![
            Scenario::command("SADD", Role::Plain, "SADD key <id>", move |g, out| {
                enc(out, &[A::S("SADD"), A::K("uw:", g.below(keys)), A::U(g.id9())])
            }),
            Scenario::new(
                "ULIST.ADD",
                Role::Module,
                "ULIST.ADD key user <id> (created with VALUE user)",
                move |c| {
                    create_keys(c, "uw:", keys, &["VALUE", "user"])?;
                    Ok(op(move |g, out| {
                        let key = A::K("uw:", g.below(keys));
                        enc(out, &[A::S("ULIST.ADD"), key, A::S("user"), A::U(g.id9())]);
                        1
                    }))
                },
            )
            .requires(&ULIST),
            // Diagnostic: with AT the call is deterministic as sent and is
            // replicated verbatim; without, the module builds the effect
            // (the call plus AT) for RM_Replicate, which looks the command up
            // by name each time.
            Scenario::new(
                "ULIST AT",
                Role::Reference,
                "ULIST.ADD key AT <now ms> user <id> (diagnostic: replicated verbatim)",
                move |c| {
                    create_keys(c, "uw:", keys, &["VALUE", "user"])?;
                    Ok(op(move |g, out| {
                        let key = A::K("uw:", g.below(keys));
                        let at = A::U(g.now_ms);
                        enc(out, &[A::S("ULIST.ADD"), key, A::S("AT"), at, A::S("user"), A::U(g.id9())]);
                        1
                    }))
                },
            )
            .requires(&ULIST),
            Scenario::new(
                "ULIST scoped",
                Role::Module,
                format!(
                    "ULIST.ADD key month {MONTH} day <1 of {DAYS}> user <id> \
                     (created with VALUE user SCOPE month PARTITION day)"
                ),
                move |c| {
                    let decl = &["VALUE", "user", "SCOPE", "month", "PARTITION", "day"];
                    create_keys(c, "uw:", keys, decl)?;
                    let days = days.clone();
                    Ok(op(move |g, out| {
                        let key = A::K("uw:", g.below(keys));
                        let day = A::S(&days[g.below(DAYS) as usize]);
                        let (month, user) = (A::S(MONTH), A::U(g.id9()));
                        enc(
                            out,
                            &[A::S("ULIST.ADD"), key, A::S("month"), month, A::S("day"), day, A::S("user"), user],
                        );
                        1
                    }))
                },
            )
            .requires(&ULIST),
        ],
        compares: vec![
            cmp("ULIST.ADD", "SADD", Some(Goal::AtLeast(0.6))),
            cmp("ULIST AT", "SADD", None),
            cmp("ULIST scoped", "SADD", None),
            cmp("ULIST AT", "ULIST.ADD", None),
            cmp("ULIST scoped", "ULIST.ADD", None),
        ],
        ..Group::new(
            "ulist-write",
            format!(
                "ULIST write: {keys} keys, random 9-digit user ids (almost all new); baseline: plain SADD \
                 of the same values into one set per key; ULIST keys created empty in setup"
            ),
        )
    }
}

/// ulist-gem prefill, the gem's layout: users with an even number, each in
/// day (n / 2) % 30, and the 30 days in the partitions list.
fn gem_prefill_sets(c: &mut Conn) -> Result<(), String> {
    let list = format!("gem:{MONTH}:partitions");
    c.query::<()>(redis::cmd("RPUSH").arg(list).arg(gem::days()))?;
    let per_day = GEM_USERS / 2 / DAYS + 1;
    const PER: u64 = 1000;
    let chunks = per_day.div_ceil(PER);
    c.load("ULIST gem: sets", DAYS * chunks, |i, out| {
        let (d, chunk) = (i / chunks, i % chunks);
        let key = format!("gem:{MONTH}:{}", gem::day(d));
        let mut args = vec![A::S("SADD"), A::S(&key)];
        let mut any = false;
        for j in chunk * PER..((chunk + 1) * PER).min(per_day) {
            let n = (j * DAYS + d) * 2;
            if n < GEM_USERS {
                args.push(A::U(gem::user(n)));
                any = true;
            }
        }
        if !any {
            args = vec![A::S("PING")];
        }
        enc(out, &args);
    })
}

/// `ULIST.ADD gem month <MONTH> day <day> user <user>`.
fn gem_ulist_add(out: &mut Vec<u8>, day: &str, user: u64) {
    let (month, user) = (A::S(MONTH), A::U(user));
    enc(
        out,
        &[
            A::S("ULIST.ADD"),
            A::S("gem"),
            A::S("month"),
            month,
            A::S("day"),
            A::S(day),
            A::S("user"),
            user,
        ],
    );
}

/// ulist-gem prefill, ULIST: the same values in the same days.
fn gem_prefill_ulist(c: &mut Conn) -> Result<(), String> {
    c.cmd("ULIST.CREATE gem VALUE user SCOPE month PARTITION day")?;
    c.load("ULIST gem: ULIST.ADD", GEM_USERS / 2, |j, out| {
        gem_ulist_add(out, &gem::day(j % DAYS), gem::user(j * 2))
    })
}

fn gem_ulist_scenario(id: &'static str, pipeline: Option<usize>, what: &str) -> Scenario {
    let days: Arc<Vec<String>> = Arc::new(gem::days());
    let label = format!(
        "ULIST.ADD gem month {MONTH} day <d> user <u> ({} clients, {what})",
        gem::CLIENTS
    );
    Scenario::new(id, Role::Module, label, move |c| {
        gem_prefill_ulist(c)?;
        let days = days.clone();
        Ok(op(move |g, out| {
            let day = &days[g.below(DAYS) as usize];
            gem_ulist_add(out, day, gem::user(g.below(GEM_USERS)));
            1
        }))
    })
    .requires(&ULIST)
    .clients(gem::CLIENTS, pipeline)
}

pub(crate) fn gem_group(s: &Settings) -> Group {
    let clients = gem::CLIENTS;
    Group {
        reset_each: true,
        scenarios: vec![
            Scenario::new(
                "gem Blocking",
                Role::Gem,
                format!(
                    "gem Blocking add ({clients} clients, request/reply): WATCH list; LRANGE; \
                     WATCH each of {DAYS} sets; SISMEMBER each until found; \
                     MULTI SADD [RPUSH] EXEC, retried while EXEC is nil"
                ),
                |c| {
                    gem_prefill_sets(c)?;
                    let days = gem::days();
                    Ok(dialog(move |g, c| {
                        let day = &days[g.below(DAYS) as usize];
                        let user = gem::user(g.below(GEM_USERS)).to_string();
                        Ok(gem::blocking_add(c, "gem", MONTH, day, &user, &[])?.1)
                    }))
                },
            )
            .clients(clients, Some(1)),
            gem_ulist_scenario("ULIST p1", Some(1), "request/reply"),
            gem_ulist_scenario(
                "ULIST pipe",
                None,
                &format!("pipeline {} (reference)", s.pipeline),
            ),
        ],
        compares: vec![
            cmp("ULIST p1", "gem Blocking", Some(Goal::AtLeast(10.0))),
            cmp("ULIST pipe", "gem Blocking", None),
        ],
        ..Group::new(
            "ulist-gem",
            format!(
                "ULIST vs the gem's Blocking list: {clients} concurrent clients add user ids drawn \
                 from {GEM_USERS} (half already stored at the start) into {DAYS} daily partitions \
                 of one month's scope; one op = one add (the gem's retries included)"
            ),
        )
    }
}

/// ulist-memory: the id of value `i`, as an integer or as `u<integer>`:
/// distinct 9-digit numbers in no particular order (users arrive in any
/// order; inserted in ascending order, the module's B-tree nodes end up
/// about half full: 88.8 B/value allocated instead of 72.4 measured here).
fn mem_value(i: u64, strings: bool) -> String {
    let n = 100_000_000 + i * 2_654_435_761 % 900_000_000; // a permutation
    if strings {
        format!("u{n}")
    } else {
        n.to_string()
    }
}

/// ULIST layout: one key, VALUE user SCOPE month PARTITION day, value i in
/// day i % 30; `ttl`: per-value EXPIRE.
fn mem_ulist(id: &'static str, strings: bool, ttl: Option<u64>, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    let label = format!(
        "ULIST, {} ids, {}: one key, {MEM_VALUES} values in {DAYS} day partitions",
        if strings { "u<n>" } else { "integer" },
        match ttl {
            Some(t) => format!("EXPIRE {t} per value"),
            None => "no expiry".into(),
        }
    );
    Measure::new(id, Role::Module, label, Unit::BytesPerValue, move |c| {
        let key = format!("ulm:{id}");
        let keys = [key.clone()];
        let days = gem::days();
        mem_measure(c, id, &alloc, &keys, MEM_VALUES, |c| {
            let decl = ["VALUE", "user", "SCOPE", "month", "PARTITION", "day"];
            c.query::<()>(redis::cmd("ULIST.CREATE").arg(&key).arg(&decl))?;
            c.load("ULIST memory fill", MEM_VALUES, |i, out| {
                let v = mem_value(i, strings);
                let day = &days[(i % DAYS) as usize];
                let mut args = vec![A::S("ULIST.ADD"), A::S(&key)];
                if let Some(t) = ttl {
                    args.extend([A::S("EXPIRE"), A::U(t)]);
                }
                args.extend([A::S("month"), A::S(MONTH), A::S("day"), A::S(day)]);
                args.extend([A::S("user"), A::S(&v)]);
                enc(out, &args);
            })
        })
    })
    .requires(&ULIST)
    .param("ids", if strings { "u<n>" } else { "integer" })
    .param("expiring", ttl.is_some())
    .param("by", "MEMORY USAGE")
}

/// The gem's layouts: per day partition a set (Blocking) or a zset scored by
/// the expiry in seconds (Expirable), plus the scope's partitions list.
fn mem_gem(id: &'static str, strings: bool, expirable: bool, alloc: &AllocBytes) -> Measure {
    let alloc = alloc.clone();
    let label = format!(
        "gem {}, {} ids: {DAYS} {} <name>:<month>:<day> + list <name>:<month>:partitions",
        if expirable { "Expirable" } else { "Blocking" },
        if strings { "u<n>" } else { "integer" },
        if expirable {
            "zsets (score = expiry s)"
        } else {
            "sets"
        },
    );
    Measure::new(id, Role::Gem, label, Unit::BytesPerValue, move |c| {
        let name = format!("gm{}{}", strings as u8, expirable as u8);
        let list = format!("{name}:{MONTH}:partitions");
        let days = gem::days();
        let sets: Vec<String> = days.iter().map(|d| format!("{name}:{MONTH}:{d}")).collect();
        let mut keys = sets.clone();
        keys.push(list.clone());
        let expiry = now_ms() / 1000 + MEM_TTL;
        mem_measure(c, id, &alloc, &keys, MEM_VALUES, |c| {
            c.query::<()>(redis::cmd("RPUSH").arg(&list).arg(&days))?;
            // The gem adds one value per call; the stored data is the same.
            c.load("gem memory fill", MEM_VALUES, |i, out| {
                let v = mem_value(i, strings);
                let set = A::S(&sets[(i % DAYS) as usize]);
                if expirable {
                    enc(out, &[A::S("ZADD"), set, A::U(expiry), A::S(&v)]);
                } else {
                    enc(out, &[A::S("SADD"), set, A::S(&v)]);
                }
            })
        })
    })
    .param("ids", if strings { "u<n>" } else { "integer" })
    .param("expiring", expirable)
    .param("by", "MEMORY USAGE")
}

pub(crate) fn memory_group(_s: &Settings) -> Group {
    let a: AllocBytes = Default::default();
    let mut measures = vec![
        mem_ulist("ULIST int", false, None, &a),
        mem_gem("Blocking int", false, false, &a),
        mem_ulist("ULIST str", true, None, &a),
        mem_gem("Blocking str", true, false, &a),
        mem_ulist("ULIST exp int", false, Some(MEM_TTL), &a),
        mem_gem("Expirable int", false, true, &a),
        mem_ulist("ULIST exp str", true, Some(MEM_TTL), &a),
        mem_gem("Expirable str", true, true, &a),
    ];
    let allocated = [
        "alloc ULIST int",
        "alloc Block int",
        "alloc ULIST str",
        "alloc Block str",
        "alloc ULIST exp i",
        "alloc Expir int",
        "alloc ULIST exp s",
        "alloc Expir str",
    ];
    let allocs: Vec<Measure> = allocated
        .into_iter()
        .zip(&measures)
        .map(|(id, of)| mem_alloc(id, of, &a))
        .collect();
    measures.extend(allocs);
    Group {
        measures,
        // The goal is on MEMORY USAGE, which for a module key is the module's
        // own estimate (its mem_usage callback); the same goal is also
        // checked on what the allocator really holds.
        compares: vec![
            cmp("ULIST int", "Blocking int", Some(Goal::AtMost(1.0))),
            cmp("ULIST str", "Blocking str", Some(Goal::AtMost(1.0))),
            cmp("ULIST exp int", "Expirable int", Some(Goal::AtMost(1.0))),
            cmp("ULIST exp str", "Expirable str", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST int", "alloc Block int", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST str", "alloc Block str", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST exp i", "alloc Expir int", Some(Goal::AtMost(1.0))),
            cmp("alloc ULIST exp s", "alloc Expir str", Some(Goal::AtMost(1.0))),
        ],
        ..Group::new(
            "ulist-memory",
            format!(
                "ULIST memory per stored value: {MEM_VALUES} distinct users in {DAYS} daily partitions \
                 of one month scope, MEMORY USAGE ... SAMPLES 0 summed over each layout's keys"
            ),
        )
    }
}

struct ReclaimOut {
    idle: PingStats,
    during: PingStats,
    /// From the values' expiry to the last one reclaimed.
    reclaim: Duration,
    /// From the expiry to the first one reclaimed.
    first: Option<Duration>,
    load: Duration,
    /// Load end minus expiry, ms (> 0: the load overran the expiry).
    overrun_ms: i64,
    reclaimed_at_load_end: i64,
    mem_empty: i64,
    mem_before: i64,
    mem_after: i64,
    used_grew: i64,
    used_after: i64,
    data_after: usize,
}

fn expired_values(c: &mut Conn) -> Result<i64, String> {
    c.info_int("recipes", "recipes_ulist_expired_values")
}

/// The ulist-reclaim experiment (once; the group's measures report parts).
fn reclaim_run(c: &mut Conn) -> Result<ReclaimOut, String> {
    let port = c.port();
    let key = "ulr";
    c.cmd(&format!("ULIST.CREATE {key} VALUE user"))?;
    let mem_empty = c.memory_usage(key)?;
    let expired0 = expired_values(c)?;

    // The same PING loop on the idle server, just before.
    let ((), idle) = probed(port, || {
        std::thread::sleep(Duration::from_millis(IDLE_PING_MS));
        Ok(())
    })?;

    // 200,000 values added at t0 with EXPIRE 1: all expire at t0 + 1 s.
    let used0 = c.info_int("memory", "used_memory")?;
    let t0 = now_ms() + RECLAIM_LEAD_MS;
    let started = Instant::now();
    c.load("ULIST reclaim fill", RECLAIM_VALUES, |i, out| {
        let (at, user) = (A::U(t0), A::K("u", i));
        enc(
            out,
            &[
                A::S("ULIST.ADD"),
                A::S(key),
                A::S("EXPIRE"),
                A::S("1"),
                A::S("AT"),
                at,
                A::S("user"),
                user,
            ],
        )
    })?;
    let load = started.elapsed();
    let expiry = started + Duration::from_millis(RECLAIM_LEAD_MS + 1000);
    let reclaimed_at_load_end = expired_values(c)? - expired0;
    let mem_before = c.memory_usage(key)?;
    let used_grew = c.info_int("memory", "used_memory")? - used0;

    // PINGs from now on; the control connection polls the counter only
    // (MEMORY USAGE of the list walks its values: not during the reclaim).
    let ((first, done), all) = probed(port, || {
        let mut first = None;
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let n = expired_values(c)? - expired0;
            let now = Instant::now();
            if n > 0 && first.is_none() {
                first = Some(now);
            }
            if n >= RECLAIM_VALUES as i64 {
                return Ok((first, now));
            }
            if now > deadline || stopped() {
                return Err(format!(
                    "reclaim incomplete after 300 s: {n} of {RECLAIM_VALUES}"
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })?;
    let during = all.within(expiry.max(started + load), done);
    let mem_after = c.memory_usage(key)?;
    let data_after = match c.query(redis::cmd("ULIST.DATA").arg(key))? {
        redis::Value::Array(rows) => rows.len(),
        v => return Err(format!("ULIST.DATA: {}", text(&v))),
    };
    let used_after = c.info_int("memory", "used_memory")? - used0;
    c.query::<()>(redis::cmd("DEL").arg(key))?;
    Ok(ReclaimOut {
        idle,
        during,
        reclaim: done.saturating_duration_since(expiry),
        first: first.map(|f| f.saturating_duration_since(expiry)),
        load,
        overrun_ms: load.as_millis() as i64 - (RECLAIM_LEAD_MS + 1000) as i64,
        reclaimed_at_load_end,
        mem_empty,
        mem_before,
        mem_after,
        used_grew,
        used_after,
        data_after,
    })
}

type Shared<T> = std::rc::Rc<std::cell::RefCell<Option<Result<T, String>>>>;

/// A measure reporting `f` of the shared experiment's result (run by the first).
fn reclaim_measure(
    id: &'static str,
    label: &str,
    unit: Unit,
    shared: &Shared<ReclaimOut>,
    run_it: bool,
    f: impl Fn(&ReclaimOut) -> (f64, String) + 'static,
) -> Measure {
    let shared = shared.clone();
    Measure::new(id, Role::Module, label, unit, move |c| {
        if run_it {
            *shared.borrow_mut() = Some(reclaim_run(c));
        }
        match &*shared.borrow() {
            Some(Ok(r)) => Ok(f(r).into()),
            Some(Err(e)) => Err(e.clone()),
            None => Err("the reclaim experiment did not run".into()),
        }
    })
    .requires(&["ulist.add", "ulist.create", "ulist.data"])
}

fn ping_excess(r: &ReclaimOut) -> (f64, String) {
    let mut w = r.idle.window_maxes_us(r.reclaim);
    let windows = match (median(&mut w), w.last()) {
        (Some(m), Some(&worst)) => format!(
            "; idle max per {} ms window (as long as the reclaim): median {} us, \
             worst {} us over {} windows",
            r.reclaim.as_millis(),
            thousands(m),
            thousands(worst),
            w.len()
        ),
        _ => String::new(),
    };
    (
        r.during.max_us() - r.idle.max_us(),
        format!(
            "during reclaim: {}; idle: {}{windows}",
            r.during.text(),
            r.idle.text()
        ),
    )
}

fn reclaim_time(r: &ReclaimOut) -> (f64, String) {
    let overrun = if r.overrun_ms > 0 {
        format!(
            "; the load overran the expiry by {} ms ({} values already reclaimed at its end)",
            r.overrun_ms, r.reclaimed_at_load_end
        )
    } else {
        String::new()
    };
    (
        r.reclaim.as_secs_f64() * 1000.0,
        format!(
            "first value reclaimed {} after the expiry; {:.0} values/s; the load took {} ms{overrun}; \
             ULIST.DATA after: {} rows",
            r.first
                .map(|f| format!("{} ms", f.as_millis()))
                .unwrap_or_else(|| "?".into()),
            RECLAIM_VALUES as f64 / r.reclaim.as_secs_f64().max(1e-3),
            r.load.as_millis(),
            r.data_after
        ),
    )
}

pub(crate) fn reclaim_group(_s: &Settings) -> Group {
    let shared: Shared<ReclaimOut> = Default::default();
    let n = RECLAIM_VALUES;
    Group {
        measures: vec![
            reclaim_measure(
                "PING max excess",
                "PING max during reclaim minus idle PING max",
                Unit::Micros,
                &shared,
                true,
                ping_excess,
            ),
            reclaim_measure(
                "reclaim time",
                &format!("from the values' expiry until INFO recipes counts {n} expired values"),
                Unit::Millis,
                &shared,
                false,
                reclaim_time,
            ),
            reclaim_measure(
                "memory before",
                &format!("MEMORY USAGE of the list holding the {n} values"),
                Unit::Bytes,
                &shared,
                false,
                |r| {
                    let grew = thousands(r.used_grew as f64);
                    (r.mem_before as f64, format!("used_memory grew {grew} B with the load"))
                },
            ),
            reclaim_measure(
                "memory after",
                "MEMORY USAGE of the list once all are reclaimed",
                Unit::Bytes,
                &shared,
                false,
                |r| {
                    let note = format!("used_memory vs before the load: {:+} B", r.used_after);
                    (r.mem_after as f64, note)
                },
            ),
            reclaim_measure(
                "memory empty",
                "MEMORY USAGE of the list right after ULIST.CREATE",
                Unit::Bytes,
                &shared,
                false,
                |r| (r.mem_empty as f64, String::new()),
            ),
        ],
        compares: vec![
            goal("PING max excess", Goal::AtMost(2000.0)),
            cmp("memory after", "memory empty", None),
        ],
        ..Group::new(
            "ulist-reclaim",
            format!(
                "ULIST reclaim: {n} values added with EXPIRE 1 AT <load start + {RECLAIM_LEAD_MS} ms> into one list nobody touches \
                 afterwards; while the master reclaims them in the background, another client PINGs about \
                 every ms (request/reply); the same PING loop ran {IDLE_PING_MS} ms on the idle server just before"
            ),
        )
    }
}
