//! The TL group (timelines): TL.PUSH with low/high-water trimming against its
//! floor LPUSH and the recipe as Lua and as MULTI/EXEC (`tl-write`).

use crate::control::Conn;
use crate::group::{cmp, op, Goal, Group, Role, Scenario};
use crate::pipe::{enc, Gen, A};
use crate::settings::Settings;

const TL_MAXLEN: u64 = 100;
const TL_SLACK: u64 = 20;

const TL_LUA: &str = "local n = redis.call('LPUSH', KEYS[1], ARGV[1])\n\
                      if n >= 120 then redis.call('LTRIM', KEYS[1], 0, 99) end\n\
                      return n";

pub(crate) fn write_group(s: &Settings) -> Group {
    let keys = s.keys;
    Group {
        reset_each: true,
        setup: Some(Box::new(move |c: &mut Conn| {
            let mut g = Gen::new(2);
            c.load("TL prefill", keys, |k, out| {
                let mut args = vec![A::S("RPUSH"), A::K("tl:", k)];
                for _ in 0..TL_MAXLEN {
                    args.push(A::U(g.id9()));
                }
                enc(out, &args);
            })
        })),
        scenarios: vec![
            Scenario::command("LPUSH", Role::Plain, "LPUSH key item", move |g, out| {
                enc(out, &[A::S("LPUSH"), A::K("tl:", g.below(keys)), A::U(g.id9())])
            }),
            Scenario::command(
                "TL.PUSH",
                Role::Module,
                format!("TL.PUSH key item MAXLEN {TL_MAXLEN} SLACK {TL_SLACK}"),
                move |g, out| {
                    let key = A::K("tl:", g.below(keys));
                    let (max, slack) = (A::U(TL_MAXLEN), A::U(TL_SLACK));
                    enc(out, &[A::S("TL.PUSH"), key, A::U(g.id9()), A::S("MAXLEN"), max, A::S("SLACK"), slack])
                },
            )
            .requires(&["tl.push"]),
            Scenario::new(
                "Lua",
                Role::Lua,
                "Lua recipe via EVALSHA: LPUSH key item; LTRIM key 0 99 once the length reaches 120",
                move |c| {
                    let sha = c.script_load(TL_LUA)?;
                    Ok(op(move |g, out| {
                        enc(out, &[A::S("EVALSHA"), A::S(&sha), A::S("1"), A::K("tl:", g.below(keys)), A::U(g.id9())]);
                        1
                    }))
                },
            ),
            Scenario::new(
                "MULTI",
                Role::Multi,
                "MULTI; LPUSH key item; LTRIM key 0 99; EXEC",
                move |_| {
                    Ok(op(move |g, out| {
                        let k = g.below(keys);
                        enc(out, &[A::S("MULTI")]);
                        enc(out, &[A::S("LPUSH"), A::K("tl:", k), A::U(g.id9())]);
                        enc(out, &[A::S("LTRIM"), A::K("tl:", k), A::S("0"), A::S("99")]);
                        enc(out, &[A::S("EXEC")]);
                        4
                    }))
                },
            ),
        ],
        compares: vec![
            cmp("TL.PUSH", "LPUSH", Some(Goal::AtLeast(0.7))),
            cmp("TL.PUSH", "Lua", Some(Goal::AtLeast(2.0))),
            cmp("TL.PUSH", "MULTI", None),
        ],
        ..Group::new(
            "tl-write",
            format!(
                "TL write: {keys} keys tl:<n> starting at {TL_MAXLEN} items, random 9-digit items, \
                 MAXLEN {TL_MAXLEN} SLACK {TL_SLACK}; baseline: one plain LPUSH (no trim)"
            ),
        )
    }
}
