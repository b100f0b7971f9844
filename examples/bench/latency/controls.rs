//! The controls of the latency group: each growth of the module's scenarios
//! done with the core command on a fresh server, measured the same way
//! (SLOWLOG above 100 us, the PING probe), without goals. Plain Redis also
//! logs stalls of a millisecond or two on a shared machine now and then
//! (rehashing, a listpack converted, the machine's own preemption): these
//! figures are that floor, printed next to the module's.

use super::{growth_id, repeats, scenario, thousands, Outcome, BIG, GROWTHS, PARTS, TOPN_BIG};
use crate::pipe::{enc, A};
use crate::topn::member;

/// ZADD of the `topn` scenario's members into one zset, as many times.
pub(super) fn zadd() -> Result<Outcome, String> {
    let title = format!(
        "control of topn: {} members into one zset (ZADD key 1 member), then DEL of the key; \
         {GROWTHS} times, a fresh key each",
        thousands(TOPN_BIG as f64)
    );
    scenario("topn control", Some("topn"), title, |run| {
        let mut growths = Vec::new();
        for g in 0..GROWTHS {
            let key = format!("lat:z{g}");
            let writes = run.grow_as(&growth_id(g), "ZADD", Some(3), TOPN_BIG, |i, out| {
                enc(out, &[A::S("ZADD"), A::S(&key), A::S("1"), A::U(member(i))])
            })?;
            growths.push(writes);
            run.c.cmd(&format!("DEL {key}"))?;
        }
        repeats::repeated_figure(&mut run.figs, &growths);
        Ok(0.0)
    })
}

/// SADD of the `ulist` scenario's values into one set.
pub(super) fn sadd() -> Result<Outcome, String> {
    let title = format!(
        "control of ulist: {} values into one set (SADD key u<n>)",
        thousands(BIG as f64)
    );
    scenario("ulist control", Some("ulist"), title, |run| {
        run.grow("SADD", BIG, |i, out| {
            enc(out, &[A::S("SADD"), A::S("lat:s"), A::K("u", i)])
        })?;
        Ok(0.0)
    })
}

/// HINCRBY of the `hcounter` scenario's cells: one hash of BIG fields, then
/// PARTS one-field hashes.
pub(super) fn hincrby() -> Result<Outcome, String> {
    let title = format!(
        "control of hcounter: {} fields into one hash plus {} one-field hashes (HINCRBY key \
         field 1)",
        thousands(BIG as f64),
        thousands(PARTS as f64)
    );
    scenario("hcounter control", Some("hcounter"), title, |run| {
        run.grow("HINCRBY", BIG + PARTS, |i, out| {
            if i < BIG {
                enc(out, &[A::S("HINCRBY"), A::S("lat:h"), A::U(i), A::S("1")])
            } else {
                let key = A::K("lat:h:", i - BIG);
                enc(out, &[A::S("HINCRBY"), key, A::S("0"), A::S("1")])
            }
        })?;
        Ok(0.0)
    })
}
