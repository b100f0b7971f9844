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

/// What paged reads did (`tuples::page`): steps taken, and what they looked
/// at: each group, key and shard offered, and each entry of the hash-table
/// shards read (`Table::shard_at` counts those, where the walk happens), so
/// a step's bound can be checked from outside.
pub static PAGED_STEPS: Stat = Stat::new("paged_steps");
pub static PAGED_LOOKED: Stat = Stat::new("paged_looked");
pub static PAGING: &[&Stat] = &[&PAGED_STEPS, &PAGED_LOOKED];
