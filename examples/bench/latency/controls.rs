//! The controls of the latency group: each growth of the module's scenarios
//! done with the core command on a fresh server, measured the same way
//! (SLOWLOG above 100 us, the PING probe), without goals. Plain Redis also
//! logs stalls of a millisecond or two on a shared machine now and then
//! (rehashing, a listpack converted, the machine's own preemption): these
//! figures are that floor, printed next to the module's.

use super::{scenario, thousands, Outcome, BIG, PARTS};
use crate::pipe::{enc, A};
use crate::topn::member;

/// ZINCRBY of the `topn` scenario's members into one zset.
pub(super) fn zincrby() -> Result<Outcome, String> {
    let title = format!(
        "control of topn: {} members into one zset (ZINCRBY key 1 member)",
        thousands(BIG as f64)
    );
    scenario("topn control", Some("topn"), title, |run| {
        run.grow("ZINCRBY", BIG, |i, out| {
            enc(
                out,
                &[A::S("ZINCRBY"), A::S("lat:z"), A::S("1"), A::U(member(i))],
            )
        })?;
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
