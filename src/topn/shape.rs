//! What every layout of a TOPN key shares: its shape and clock (what each encoding
//! writes first), and the refusal of a write that would overflow. Pure Rust, no FFI.

use std::fmt;

/// A key's shape and clock: what both layouts encode first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub bucket_ms: i64,
    pub window: u32,
    pub align_ms: i64,
    /// The newest bucket ever written.
    pub clock: Option<i64>,
}

impl Shape {
    /// A fresh key's shape of one-second buckets (tests).
    #[cfg(test)]
    pub fn of_seconds(window: u32) -> Shape {
        Shape {
            bucket_ms: 1000,
            window,
            align_ms: 0,
            clock: None,
        }
    }

    pub fn bucket_of(&self, at_ms: i64) -> i64 {
        at_ms
            .saturating_sub(self.align_ms)
            .div_euclid(self.bucket_ms.max(1))
    }

    pub fn bucket_start(&self, idx: i64) -> i64 {
        idx.saturating_mul(self.bucket_ms)
            .saturating_add(self.align_ms)
    }

    /// The oldest bucket of the window ending at bucket `clock`.
    pub fn live_lo(&self, clock: i64) -> i64 {
        clock.saturating_sub(self.window as i64 - 1)
    }

    /// Whether an event at `at_ms` is older than the key's own window (the
    /// window ending at its clock): a write ignores it.
    pub fn is_older_than_window(&self, at_ms: i64) -> bool {
        self.clock
            .is_some_and(|c| self.bucket_of(at_ms) < self.live_lo(c))
    }

    /// When the whole window has passed with no writes: the start of bucket
    /// `clock + window` (saturating); `None` before the first write.
    pub fn expire_at_ms(&self) -> Option<i64> {
        let c = self.clock?;
        Some(self.bucket_start(c.saturating_add(self.window as i64)))
    }
}

/// An increment would overflow a bucket count or a window total; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("increment or decrement would overflow")
    }
}

impl std::error::Error for Overflow {}
