//! The TOPN module type: a [`Layout`] (compact, full or capped) in a key, with its
//! persistence callbacks.

use super::config::COMPACT_MAX;
use super::declaration::Token;
use super::error::Error;
use super::layout::Layout;
use crate::server::module_type::{type_methods, AofWriter, ModuleValue};
use crate::stats::Stat;
use crate::tuples::defrag::{Mover, Pass};
use redis_module::native_types::RedisType;
use std::os::raw::c_int;

/// A gauge: members held by every TOPN key of the server.
pub(super) static MEMBERS: Stat = Stat::new("topn_members");

/// Registered as `recipesTN` (Redis type names are exactly 9 characters).
pub static TOPN_TYPE: RedisType = RedisType::new(
    TopnValue::TYPE_NAME,
    TopnValue::ENCODING_VERSION,
    type_methods::<TopnValue>(),
);

/// The first encoding (a layout's `encode`, which also starts with its own
/// version byte). Data written with it must always load.
pub const TOPN_ENCODING_V1: c_int = 1;

/// A key's top-N. Keeps the `topn_members` gauge of INFO in step with the
/// members it holds, from creation to free (or leak).
pub struct TopnValue(Layout);

impl TopnValue {
    pub fn new(core: Layout) -> Self {
        MEMBERS.add(core.members() as i64);
        TopnValue(core)
    }

    pub fn get(&self) -> &Layout {
        &self.0
    }

    /// Mutates the core, keeping the members gauge exact, also when `f`
    /// panics half-way (the gauge then counts what the core holds, which
    /// is what a leak of the value takes back out).
    pub fn update<R>(&mut self, f: impl FnOnce(&mut Layout) -> R) -> R {
        let before = self.0.members() as i64;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut self.0)));
        MEMBERS.add(self.0.members() as i64 - before);
        out.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Clone for TopnValue {
    fn clone(&self) -> Self {
        TopnValue::new(self.0.clone())
    }
}

impl Drop for TopnValue {
    fn drop(&mut self) {
        MEMBERS.add(-(self.0.members() as i64));
    }
}

impl ModuleValue for TopnValue {
    const TYPE_NAME: &'static str = "recipesTN";
    const ENCODING_VERSION: c_int = TOPN_ENCODING_V1;
    type DecodeError = Error;

    fn encode(&self) -> Vec<u8> {
        self.0.encode()
    }

    fn decode(bytes: &[u8], encver: c_int) -> Result<Self, Error> {
        match encver {
            // Buckets that already left the window at this server's time load aged.
            TOPN_ENCODING_V1 => {
                let now = crate::server::clock_ms();
                Layout::decode_at(bytes, now, COMPACT_MAX.count()).map(TopnValue::new)
            }
            _ => Err(Error::UnknownVersion(encver.into())),
        }
    }

    fn placeholder() -> Self {
        TopnValue::new(Layout::new(3_600_000, 24, 0, COMPACT_MAX.count()))
    }

    fn mem_usage(&self) -> usize {
        self.0.mem_usage()
    }

    fn leaked(&self) {
        MEMBERS.add(-(self.0.members() as i64));
    }

    fn free_effort(&self) -> usize {
        self.0.window().free_effort()
    }

    /// Every block of the core: its buffer, or names (their index keys
    /// re-pointed), buckets and the rest.
    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        self.0.defrag(pass)
    }

    fn upkeep_due(&self) -> Option<i64> {
        self.0.window().upkeep_due_ms()
    }

    /// `TOPN.CREATE` with the key's shape (ALIGN only when not 0, as before
    /// ALIGN existed; CAPACITY, VIEWS when it has them), then one `TOPN.INCR ... AT`
    /// per live (bucket, member) count, oldest bucket first; a capped key's
    /// counters as `TOPN.SETCOUNTER` (increments cannot rebuild the errors).
    fn rewrite(&self, aof: &AofWriter) {
        let core = &self.0;
        let words: Vec<String> = (core.declaration().tokens().iter())
            .map(|t| match *t {
                Token::Keyword(k) => k.name().to_string(),
                Token::Int(n) => n.to_string(),
            })
            .collect();
        let shape: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        aof.emit(c"TOPN.CREATE", &shape);
        for (member, by, at) in core.replay_events() {
            let (by, at) = (by.to_string(), at.to_string());
            aof.emit(
                c"TOPN.INCR",
                &[member, b"BY", by.as_bytes(), b"AT", at.as_bytes()],
            );
        }
        for (bucket, evicted, counters) in core.counters_by_bucket() {
            let bucket = bucket.to_string();
            let kept: &[u8] = if evicted { b"EVICTED" } else { b"KEPT" };
            for (member, count, error) in counters {
                let (count, error) = (count.to_string(), error.to_string());
                aof.emit(
                    c"TOPN.SETCOUNTER",
                    &[
                        bucket.as_bytes(),
                        member,
                        count.as_bytes(),
                        error.as_bytes(),
                        kept,
                    ],
                );
            }
        }
    }
}
