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
