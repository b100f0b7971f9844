//! The RV groups (recently viewed): RV.ADD against its floor ZADD and the
//! recipe as Lua and as MULTI/EXEC (`rv-write`), and the memory of a
//! 30-entry list written either way (`rv-memory`).

use crate::control::Conn;
use crate::group::{cmp, op, Goal, Group, Measure, Role, Scenario, Unit};
use crate::pipe::{enc, now_ms, Gen, A};
use crate::settings::Settings;

const RV_MAXLEN: u64 = 30;
const RV_TTL: u64 = 86_400;

const RV_LUA: &str = "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])\n\
                      redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -31)\n\
                      redis.call('EXPIRE', KEYS[1], 86400)";

pub(crate) fn write_group(s: &Settings) -> Group {
    let keys = s.keys;
    Group {
        reset_each: true,
        setup: Some(Box::new(move |c: &mut Conn| {
            // Every key starts full: 30 entries in the last 30 minutes, TTL set.
            let mut g = Gen::new(1);
            let t0 = now_ms() - 3_600_000;
            c.load("RV prefill", keys * 2, |i, out| {
                let k = i / 2;
                if i % 2 == 1 {
                    enc(out, &[A::S("EXPIRE"), A::K("rv:", k), A::U(RV_TTL)]);
                    return;
                }
                let mut args = vec![A::S("ZADD"), A::K("rv:", k)];
                for j in 0..RV_MAXLEN {
                    args.push(A::U(t0 + j * 60_000));
                    args.push(A::U(g.id9()));
                }
                enc(out, &args);
            })
        })),
        scenarios: vec![
            Scenario::command(
                "ZADD",
                Role::Plain,
                "ZADD key <ms> member",
                move |g, out| {
                    let key = A::K("rv:", g.below(keys));
                    enc(out, &[A::S("ZADD"), key, A::U(g.now_ms), A::U(g.id9())])
                },
            ),
            Scenario::command(
                "RV.ADD",
                Role::Module,
                format!("RV.ADD key member MAXLEN {RV_MAXLEN} TTL {RV_TTL}"),
                move |g, out| {
                    let key = A::K("rv:", g.below(keys));
                    let (max, ttl) = (A::U(RV_MAXLEN), A::U(RV_TTL));
                    enc(
                        out,
                        &[
                            A::S("RV.ADD"),
                            key,
                            A::U(g.id9()),
                            A::S("MAXLEN"),
                            max,
                            A::S("TTL"),
                            ttl,
                        ],
                    )
                },
            )
            .requires(&["rv.add"]),
            Scenario::new(
                "Lua",
                Role::Lua,
                "Lua recipe via EVALSHA: ZADD key <ms> member; ZREMRANGEBYRANK key 0 -31; \
                 EXPIRE key 86400",
                move |c| {
                    let sha = c.script_load(RV_LUA)?;
                    Ok(op(move |g, out| {
                        let key = A::K("rv:", g.below(keys));
                        let (now, id) = (A::U(g.now_ms), A::U(g.id9()));
                        enc(out, &[A::S("EVALSHA"), A::S(&sha), A::S("1"), key, now, id]);
                        1
                    }))
                },
            ),
            Scenario::new(
                "MULTI",
                Role::Multi,
                "MULTI; ZADD key <ms> member; ZREMRANGEBYRANK key 0 -31; EXPIRE key 86400; EXEC",
                move |_| {
                    Ok(op(move |g, out| {
                        let k = g.below(keys);
                        enc(out, &[A::S("MULTI")]);
                        enc(
                            out,
                            &[A::S("ZADD"), A::K("rv:", k), A::U(g.now_ms), A::U(g.id9())],
                        );
                        enc(
                            out,
                            &[
                                A::S("ZREMRANGEBYRANK"),
                                A::K("rv:", k),
                                A::S("0"),
                                A::S("-31"),
                            ],
                        );
                        enc(out, &[A::S("EXPIRE"), A::K("rv:", k), A::U(RV_TTL)]);
                        enc(out, &[A::S("EXEC")]);
                        5
                    }))
                },
            ),
        ],
        compares: vec![
            cmp("RV.ADD", "ZADD", Some(Goal::AtLeast(0.6))),
            cmp("RV.ADD", "Lua", Some(Goal::AtLeast(2.0))),
            cmp("RV.ADD", "MULTI", None),
        ],
        ..Group::new(
            "rv-write",
            format!(
                "RV write: {keys} keys rv:<n>, random 9-digit members, lists full at {RV_MAXLEN} \
                 (every add trims one), TTL {RV_TTL}; baseline: one plain ZADD (no trim, no expire)"
            ),
        )
    }
}

/// The 30 (seconds, member) pairs of the memory comparison.
fn mem_data() -> Vec<(u64, u64)> {
    let mut g = Gen::new(7);
    (0..RV_MAXLEN)
        .map(|i| (1_364_218_200 + i * 60, g.id9()))
        .collect()
}

/// The recipe's way: one ZADD of the 30 pairs, times scaled by `scale`.
fn mem_zadd(id: &'static str, label: &str, key: &'static str, scale: u64) -> Measure {
    Measure::new(id, Role::Recipe, label, Unit::Bytes, move |c| {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(key);
        for (t, m) in mem_data() {
            zadd.arg(t * scale).arg(m);
        }
        c.query::<()>(&zadd)?;
        let enc = c.encoding(key)?;
        Ok((c.memory_usage(key)? as f64, format!("{key}, {enc}")).into())
    })
    .param("time_unit", if scale == 1 { "s" } else { "ms" })
}

/// RV's way: one RV.ADD ... AT per pair.
fn mem_rvadd(id: &'static str, label: &str, key: &'static str, scale: u64) -> Measure {
    Measure::new(id, Role::Module, label, Unit::Bytes, move |c| {
        for (t, m) in mem_data() {
            c.query::<()>(
                redis::cmd("RV.ADD")
                    .arg(key)
                    .arg(m)
                    .arg("AT")
                    .arg(t * scale)
                    .arg("MAXLEN")
                    .arg(RV_MAXLEN),
            )?;
        }
        let n: i64 = c.query(redis::cmd("ZCARD").arg(key))?;
        let enc = c.encoding(key)?;
        let note = format!("{key}, {enc}, {n} entries");
        Ok((c.memory_usage(key)? as f64, note).into())
    })
    .requires(&["rv.add"])
    .param("time_unit", if scale == 1 { "s" } else { "ms" })
}

pub(crate) fn memory_group(_s: &Settings) -> Group {
    Group {
        measures: vec![
            mem_zadd("ZADD s", "ZADD, scores in seconds (the recipe as published)", "rv:100000001", 1),
            mem_rvadd("RV.ADD AT s", "RV.ADD with AT = those seconds (the same numbers as the recipe)", "rv:100000002", 1),
            mem_zadd("ZADD ms", "ZADD, scores in milliseconds", "rv:100000003", 1000),
            mem_rvadd("RV.ADD AT ms", "RV.ADD with AT = seconds * 1000 (real use: RV keeps ms)", "rv:100000004", 1000),
        ],
        compares: vec![
            cmp("RV.ADD AT s", "ZADD s", Some(Goal::AtMost(1.0))),
            cmp("RV.ADD AT ms", "ZADD ms", Some(Goal::AtMost(1.0))),
            cmp("RV.ADD AT ms", "ZADD s", None),
        ],
        ..Group::new(
            "rv-memory",
            "RV memory: one key rv:<9 digits>, 30 entries, 9-digit members, times 1364218200 + i*60 s \
             (a listpack zset of this data is 440 B on Redis 7.0.15; the recipe's author measured 429 B)",
        )
    }
}
