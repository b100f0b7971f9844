//! Module configs (`CONFIG GET/SET recipes.<name>`, or `loadmodule ... name value`).

use std::sync::atomic::{AtomicI64, Ordering};

pub static RV_DEFAULT_MAXLEN: AtomicI64 = AtomicI64::new(0);

/// `recipes.rv-default-maxlen`: cap for RV.ADD without MAXLEN (0 = none).
pub fn rv_default_maxlen() -> i64 {
    RV_DEFAULT_MAXLEN.load(Ordering::Relaxed)
}

pub static TL_DEFAULT_MAXLEN: AtomicI64 = AtomicI64::new(0);

/// `recipes.tl-default-maxlen`: cap for TL.PUSH without MAXLEN (0 = none).
pub fn tl_default_maxlen() -> i64 {
    TL_DEFAULT_MAXLEN.load(Ordering::Relaxed)
}

pub static TOPN_DEFAULT_BUCKET: AtomicI64 = AtomicI64::new(3600);
pub static TOPN_DEFAULT_WINDOW: AtomicI64 = AtomicI64::new(24);

/// `recipes.topn-default-bucket`: bucket width in seconds for TOPN keys
/// created without BUCKET.
pub fn topn_default_bucket() -> i64 {
    TOPN_DEFAULT_BUCKET.load(Ordering::Relaxed)
}

/// `recipes.topn-default-window`: buckets per window for TOPN keys created
/// without WINDOW.
pub fn topn_default_window() -> i64 {
    TOPN_DEFAULT_WINDOW.load(Ordering::Relaxed)
}
