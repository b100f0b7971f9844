//! What every layout of a TOPN key shares: its shape and clock (what each encoding writes
//! first), the window rules that follow from them (which bucket a time falls in, which buckets
//! a key's window and a read hold, when a bucket is sealed). Pure Rust, no FFI.

/// The newest bucket is sealed once the server's time has been past its end and its last write
/// this long ([`Shape::seals_at`]).
pub const SEAL_DELAY_MS: i64 = 1000;

/// Where an event lands ([`Shape::landing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Landing {
    /// The event's bucket.
    pub bucket: i64,
    /// The clock after the event.
    pub clock: i64,
    /// The oldest bucket of the window ending at that clock: older ones leave.
    pub lo: i64,
}

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
    /// A key's shape before its first write: `bucket_ms` and `window` at least 1, `align_ms`
    /// brought into `0..bucket_ms` (the caller validates user input).
    pub fn new(bucket_ms: i64, window: u32, align_ms: i64) -> Shape {
        let bucket_ms = bucket_ms.max(1);
        Shape {
            bucket_ms,
            window: window.max(1),
            align_ms: align_ms.rem_euclid(bucket_ms),
            clock: None,
        }
    }

    /// A fresh key's shape of one-second buckets (tests).
    #[cfg(test)]
    pub fn of_seconds(window: u32) -> Shape {
        Shape::new(1000, window, 0)
    }

    /// The bucket holding `at_ms`: buckets start ALIGN after the epoch's multiples of BUCKET.
    pub fn bucket_of(&self, at_ms: i64) -> i64 {
        at_ms
            .saturating_sub(self.align_ms)
            .div_euclid(self.bucket_ms.max(1))
    }

    /// The first millisecond of bucket `idx` (saturating).
    pub fn bucket_start(&self, idx: i64) -> i64 {
        idx.saturating_mul(self.bucket_ms)
            .saturating_add(self.align_ms)
    }

    /// The oldest bucket of the window ending at bucket `newest`.
    pub fn live_lo(&self, newest: i64) -> i64 {
        newest.saturating_sub(self.window as i64 - 1)
    }

    /// The clock after an event in bucket `b`: the newest bucket ever written.
    pub fn clock_after(&self, b: i64) -> i64 {
        self.clock.map_or(b, |c| c.max(b))
    }

    /// Where an event at `at_ms` lands: its bucket, the clock after it and the oldest bucket
    /// of the window ending there; `None` when the event is older than the key's own window
    /// (a write ignores it). Every layout's write starts here.
    pub fn landing(&self, at_ms: i64) -> Option<Landing> {
        let bucket = self.bucket_of(at_ms);
        if self.is_stale(bucket) {
            return None;
        }
        let clock = self.clock_after(bucket);
        Some(Landing {
            bucket,
            clock,
            lo: self.live_lo(clock),
        })
    }

    /// Whether bucket `idx` is older than the clock: a newer bucket exists, so it is sealed
    /// whatever the server's time.
    pub fn has_newer(&self, idx: i64) -> bool {
        self.clock.is_some_and(|c| idx < c)
    }

    /// Whether bucket `idx` is older than the key's own window (the window ending at its
    /// clock): stale, its data no longer read, freed by upkeep.
    pub fn is_stale(&self, idx: i64) -> bool {
        self.clock.is_some_and(|c| idx < self.live_lo(c))
    }

    /// Retirement, the one rule by which stored buckets leave a key: how many at the front of
    /// `len` stored items (a layout's buckets, or its entries; ascending by bucket, `idx(i)`
    /// the bucket of item `i`) are stale at the clock. Each layout frees them its way: at once
    /// (compact, capped) or a slice at a time (full's upkeep).
    pub fn stale_front(&self, len: usize, idx: impl Fn(usize) -> i64) -> usize {
        let Some(clock) = self.clock else {
            return 0;
        };
        let lo = self.live_lo(clock);
        let (mut stale, mut live) = (0, len);
        while stale < live {
            let mid = stale + (live - stale) / 2;
            match idx(mid) < lo {
                true => stale = mid + 1,
                false => live = mid,
            }
        }
        stale
    }

    /// Whether an event at `at_ms` is outside the window at the server's time `now_ms` (a
    /// late or backfilled event): for a key that does not exist yet as for one that does.
    pub fn is_late_at(&self, at_ms: i64, now_ms: i64) -> bool {
        self.bucket_of(at_ms) < self.live_lo(self.bucket_of(now_ms))
    }

    /// The buckets `lo..=hi` of a read of the `last` newest buckets of the window ending at
    /// `at_ms`, cut to the key's own window (only its buckets ever count); `None` when that
    /// holds no bucket.
    pub fn read_range(&self, at_ms: i64, last: u32) -> Option<(i64, i64)> {
        let clock = self.clock?;
        let hi = self.bucket_of(at_ms);
        let lo = hi
            .saturating_sub(i64::from(last) - 1)
            .max(self.live_lo(clock));
        (last > 0 && lo <= hi).then_some((lo, hi))
    }

    /// When bucket `idx`, last written at the server's time `written_ms` (`i64::MIN`: unknown),
    /// is sealed, the one rule of sealing: at once when a newer bucket exists
    /// ([`Shape::has_newer`]); the newest once the server's time has been past its end, and past
    /// its last write, for `SEAL_DELAY_MS` (events a little late, and a backfill still writing
    /// it, keep it open).
    pub fn seals_at(&self, idx: i64, written_ms: i64) -> i64 {
        if self.has_newer(idx) {
            return i64::MIN;
        }
        let end = self.bucket_start(idx.saturating_add(1));
        end.max(written_ms).saturating_add(SEAL_DELAY_MS)
    }

    /// When the whole window has passed with no writes: the start of bucket
    /// `clock + window` (saturating); `None` before the first write.
    pub fn expire_at_ms(&self) -> Option<i64> {
        let c = self.clock?;
        Some(self.bucket_start(c.saturating_add(self.window as i64)))
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
