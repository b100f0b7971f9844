//! Counters shown by `INFO recipes`. Relaxed atomics: Redis runs commands on
//! one thread; atomics only make the statics safe to declare.

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

pub static RV_ADD_CALLS: Stat = Stat::new("rv_add_calls");
pub static RV_GET_CALLS: Stat = Stat::new("rv_get_calls");
pub static RV_REM_CALLS: Stat = Stat::new("rv_rem_calls");
pub static RV_LEN_CALLS: Stat = Stat::new("rv_len_calls");
pub static RV_TRIMS: Stat = Stat::new("rv_trims");
pub static RV_ERRORS: Stat = Stat::new("rv_errors");

pub static TL_PUSH_CALLS: Stat = Stat::new("tl_push_calls");
pub static TL_RANGE_CALLS: Stat = Stat::new("tl_range_calls");
pub static TL_REM_CALLS: Stat = Stat::new("tl_rem_calls");
pub static TL_LEN_CALLS: Stat = Stat::new("tl_len_calls");
pub static TL_TRIMS: Stat = Stat::new("tl_trims");
pub static TL_ERRORS: Stat = Stat::new("tl_errors");

pub static TOPN_CREATE_CALLS: Stat = Stat::new("topn_create_calls");
pub static TOPN_INCR_CALLS: Stat = Stat::new("topn_incr_calls");
pub static TOPN_TOP_CALLS: Stat = Stat::new("topn_top_calls");
pub static TOPN_COUNT_CALLS: Stat = Stat::new("topn_count_calls");
pub static TOPN_INFO_CALLS: Stat = Stat::new("topn_info_calls");
pub static TOPN_EXPIRED_BUCKETS: Stat = Stat::new("topn_expired_buckets");
pub static TOPN_MEMBERS: Stat = Stat::new("topn_members");
pub static TOPN_ERRORS: Stat = Stat::new("topn_errors");

/// Every counter, in the order INFO prints them.
pub static ALL: &[&Stat] = &[
    &RV_ADD_CALLS,
    &RV_GET_CALLS,
    &RV_REM_CALLS,
    &RV_LEN_CALLS,
    &RV_TRIMS,
    &RV_ERRORS,
    &TL_PUSH_CALLS,
    &TL_RANGE_CALLS,
    &TL_REM_CALLS,
    &TL_LEN_CALLS,
    &TL_TRIMS,
    &TL_ERRORS,
    &TOPN_CREATE_CALLS,
    &TOPN_INCR_CALLS,
    &TOPN_TOP_CALLS,
    &TOPN_COUNT_CALLS,
    &TOPN_INFO_CALLS,
    &TOPN_EXPIRED_BUCKETS,
    &TOPN_MEMBERS,
    &TOPN_ERRORS,
];
