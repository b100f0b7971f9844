//! Counters shown by `INFO recipes`; each family declares its own. Relaxed
//! atomics: Redis runs commands on one thread; atomics only make the statics
//! safe to declare.

use std::sync::atomic::{AtomicI64, Ordering};

pub struct Stat {
    pub name: &'static str,
    value: AtomicI64,
}

impl Stat {
    pub const fn new(name: &'static str) -> Self {
        Stat {
            name,
            value: AtomicI64::new(0),
        }
    }
    /// Counters only grow; gauges (members held) also shrink.
    pub fn add(&self, n: i64) {
        self.value.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }
}
