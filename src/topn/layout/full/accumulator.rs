//! The dense sums' accumulators (one slot per member: `read.rs`), kept between reads on the
//! server's thread, and kept *warm*: a fresh one is megabytes of new pages, whose page faults
//! cost more than the sum itself (measured in the server: 200 faults, 0.44-0.49 ms, for the
//! 800 KB of a 32-bit accumulator over 200,000 members, against a 0.3 ms read). So a key that
//! seals a bucket (`sealed.rs`: what reads sum), or is loaded or copied with sealed buckets (a
//! replica's sync), asks for a 32-bit accumulator of its size and an eighth more, and the
//! module's timer touches its pages in slices of `WARM_SLICE` slots between commands; the
//! first read finds them ready. A fork shares them with the child until written: the timer
//! writes them again after one. 32-bit accumulators take the sums whose buckets' bounds keep
//! every total in range: half the bytes to stream.
//!
//! Bounded: at most `KEPT_ACCUMULATOR` slots are kept after a read, at most `KEPT_WARM` made
//! ready ahead of one. A period with no read and no packing frees what reads grew beyond the
//! ready part; the ready part stays until `WARM_HOLD_MS` pass without either (a big key often
//! sits idle between its fill, or its last bucket's writes, and its next read: freeing it after
//! 5-10 s would give that read the faults again). `INFO recipes` `topn_read_buffer_bytes`
//! shows what is held.

use crate::stats::Stat;
use std::cell::{Cell, RefCell};

/// The most slots of the accumulators kept after a read (32 MB of `i64`).
const KEPT_ACCUMULATOR: usize = 1 << 22;
/// The most slots of the 32-bit accumulator made ready ahead of a read (4 MB).
const KEPT_WARM: usize = 1 << 20;
/// Slots made ready a timer step: 256 KB, 64 pages (~0.15 ms of page faults on a VM).
const WARM_SLICE: usize = 1 << 16;
/// How often idle accumulators are looked at (freed after one to two periods unused).
const RELEASE_MS: i64 = 5000;
/// How long the ready part is kept with no read and no packing.
const WARM_HOLD_MS: i64 = 3_600_000;
/// The timer's period (a look at two numbers), so pages asked for are made ready soon.
pub const TICK_MS: i64 = 100;
/// The timer's period while pages are being made ready.
const WARM_TICK_MS: i64 = 10;

/// Keys of this many member slots or more have their sums' accumulators made ready ahead (16
/// KB of them: fewer pages fault in a few microseconds).
const WARM_FROM: usize = 4096;

// All of it on the server's thread (reads, packing and the timer run there).
thread_local! {
    static ACCUMULATOR: RefCell<Vec<i64>> = const { RefCell::new(Vec::new()) };
    static ACCUMULATOR_32: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// Reads that used a kept accumulator, and packings that asked for one, for [`tend`].
    static USES: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// `USES` at the last look of [`tend`], when that was, and when a look last saw either.
    static SEEN: Cell<((u64, u64), i64, i64)> = const { Cell::new(((0, 0), i64::MIN, i64::MIN)) };
    /// Slots the 32-bit accumulator should have ready (the most asked, until `WARM_HOLD_MS`
    /// pass unused).
    static WANTED_32: Cell<usize> = const { Cell::new(0) };
}

fn note_read() {
    let (reads, asks) = USES.get();
    USES.set((reads + 1, asks));
}

/// A dense sum's accumulator: `i64`, whose additions report overflow, or `i32` for a sum
/// whose bounds show no total can leave its range (its additions never overflow, by that
/// check).
pub(super) trait Acc: Copy + Default + 'static {
    /// `self + x` (`self - x` with `NEGATE`) and whether it overflowed.
    fn apply<const NEGATE: bool>(self, x: i64) -> (Self, bool);
    fn get(self) -> i64;
    /// A total that fits (checked by the caller's bounds).
    fn of(total: i64) -> Self;
}

impl Acc for i64 {
    #[inline(always)]
    fn apply<const NEGATE: bool>(self, x: i64) -> (i64, bool) {
        match NEGATE {
            true => self.overflowing_sub(x),
            false => self.overflowing_add(x),
        }
    }
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
    #[inline(always)]
    fn of(total: i64) -> i64 {
        total
    }
}

impl Acc for i32 {
    #[inline(always)]
    fn apply<const NEGATE: bool>(self, x: i64) -> (i32, bool) {
        let x = x as i32;
        match NEGATE {
            true => (self.wrapping_sub(x), false),
            false => (self.wrapping_add(x), false),
        }
    }
    #[inline(always)]
    fn get(self) -> i64 {
        self.into()
    }
    #[inline(always)]
    fn of(total: i64) -> i32 {
        total as i32
    }
}

/// An accumulator type with its kept vector.
pub(super) trait Kept: Copy + Default + 'static {
    fn kept() -> &'static std::thread::LocalKey<RefCell<Vec<Self>>>;
}

impl Kept for i64 {
    fn kept() -> &'static std::thread::LocalKey<RefCell<Vec<i64>>> {
        &ACCUMULATOR
    }
}

impl Kept for i32 {
    fn kept() -> &'static std::thread::LocalKey<RefCell<Vec<i32>>> {
        &ACCUMULATOR_32
    }
}

/// `INFO recipes` `topn_read_buffer_bytes`: bytes of the kept accumulators.
pub static READ_BUFFER_BYTES: Stat = Stat::new("topn_read_buffer_bytes");

/// Runs `f` on `len` zeroed accumulators: the kept ones when free and small enough.
pub(super) fn with_accumulator<A: Kept, R>(len: usize, f: impl FnOnce(&mut [A]) -> R) -> R {
    A::kept().with(|kept| match kept.try_borrow_mut() {
        Ok(mut acc) if len <= KEPT_ACCUMULATOR => {
            note_read();
            let held = acc.capacity();
            acc.clear();
            acc.resize(len, A::default());
            READ_BUFFER_BYTES.add(((acc.capacity() - held) * std::mem::size_of::<A>()) as i64);
            f(&mut acc)
        }
        _ => f(&mut vec![A::default(); len]),
    })
}

/// A key of `slots` member slots whose sums will read sealed buckets (it seals one, or was
/// loaded or copied with them): the timer makes that many 32-bit accumulators ready, and an
/// eighth more for the members that come before the read (a read longer than the ready part
/// would grow it, new pages again), up to `KEPT_WARM`. Keys under `WARM_FROM` slots ask none.
pub(super) fn want_warm(slots: usize) {
    if slots < WARM_FROM {
        return;
    }
    let (reads, asks) = USES.get();
    USES.set((reads, asks + 1));
    let wanted = slots.saturating_add(slots / 8).min(KEPT_WARM);
    WANTED_32.with(|w| w.set(w.get().max(wanted)));
}

/// The server forked (a save, a replica's sync): the ready pages are shared with the child
/// until written, and the first read would take a copy-on-write fault on each. The timer
/// writes them again instead, a slice at a time (measured: a first flat `LAST 2` 0.67-0.89 ms
/// after a fork, 0.33 ms without).
pub fn forked() {
    ACCUMULATOR_32.with(|kept| {
        if let Ok(mut acc) = kept.try_borrow_mut() {
            acc.clear();
        }
    });
}

/// The module timer's step, at the server's time `now_ms`: once a period, if no read used
/// this thread's accumulators since the last look, frees the 64-bit one and the 32-bit one
/// beyond its ready part (one big read must not hold tens of megabytes for good; packings do
/// not keep them), and the ready part too once `WARM_HOLD_MS` passed with no read and no
/// packing; then makes up to `WARM_SLICE` more slots of the wanted 32-bit accumulator ready.
/// Returns when to run again (sooner while pages are owed).
pub fn tend(now_ms: i64) -> i64 {
    let (seen, looked, active) = SEEN.get();
    if now_ms.saturating_sub(looked) >= RELEASE_MS {
        let uses = USES.get();
        let active = if seen == uses { active } else { now_ms };
        SEEN.set((uses, now_ms, active));
        if seen.0 == uses.0 {
            if now_ms.saturating_sub(active) >= WARM_HOLD_MS {
                WANTED_32.set(0);
            }
            release::<i64>();
            if ACCUMULATOR_32.with(|k| k.try_borrow().is_ok_and(|a| a.capacity() > WANTED_32.get()))
            {
                release::<i32>();
            }
        }
    }
    match warm(WANTED_32.get()) {
        true => WARM_TICK_MS,
        false => TICK_MS,
    }
}

/// Frees `A`'s kept accumulator.
fn release<A: Kept>() {
    A::kept().with(|kept| {
        if let Ok(mut acc) = kept.try_borrow_mut() {
            let held = std::mem::take(&mut *acc).capacity();
            READ_BUFFER_BYTES.add(-((held * std::mem::size_of::<A>()) as i64));
        }
    });
}

/// Touches up to `WARM_SLICE` more of the first `wanted` slots of the 32-bit accumulator
/// (allocated at its whole size first, so growing never copies); true while more are owed.
fn warm(wanted: usize) -> bool {
    ACCUMULATOR_32.with(|kept| {
        let Ok(mut acc) = kept.try_borrow_mut() else {
            return false;
        };
        if acc.len() >= wanted {
            return false;
        }
        let held = acc.capacity();
        if held < wanted {
            *acc = Vec::with_capacity(wanted);
        }
        let ready = (acc.len() + WARM_SLICE).min(wanted);
        acc.resize(ready, 0);
        READ_BUFFER_BYTES.add(((acc.capacity() as i64) - held as i64) * 4);
        ready < wanted
    })
}

#[cfg(test)]
#[path = "accumulator_tests.rs"]
mod tests;
