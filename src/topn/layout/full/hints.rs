//! What recent reads of a key learnt about their fast plans (internal state: no answer
//! depends on it), kept apart from the reads so the key type can hold it without a circle.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// What a read tries before it sums.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    /// The fast plans, each with its whole cap.
    Full,
    /// The fast plans with a quarter of their caps, and a merge only of lists made already: a
    /// read that checks whether counts that were flat still are costs the sum and a little.
    Retry,
    /// The sum at once.
    Skip,
}

/// Reads of one `LAST k` whose fast plans (walk, merge) both gave up: on flat counts (many
/// members of near counts, weighted events) they spend their caps and then sum anyway. A
/// key remembers, per `k`, how many reads in a row did; the next reads of that `k` go
/// straight to the sum, trying the fast plans again (with smaller caps) every `RETRY_EVERY`th
/// read, so a dashboard repeating a read pays the sum, not the sum and the attempts. A `k`
/// not read yet follows the key's last attempt of another `k`: after one that gave up it tries
/// with a retry's smaller caps (flat counts are flat for every window, while another window
/// of skewed counts may still prune).
/// Internal state (answers never depend on it); atomics so a read stays `&self`.
#[derive(Default)]
pub(super) struct PlanHints {
    misses: [AtomicU8; PlanHints::SLOTS],
    /// Whether the key's last attempt (of any `k`) gave up.
    last_missed: AtomicBool,
}

impl PlanHints {
    const SLOTS: usize = 32;
    const RETRY_EVERY: u8 = 8;

    fn slot(&self, k: u32) -> &AtomicU8 {
        &self.misses[(k as usize).min(Self::SLOTS - 1)]
    }

    /// How a read of `LAST k` treats the fast plans.
    pub(super) fn attempt(&self, k: u32) -> Attempt {
        match self.slot(k).load(Ordering::Relaxed) {
            0 if self.last_missed.load(Ordering::Relaxed) => Attempt::Retry,
            0 => Attempt::Full,
            misses if misses.is_multiple_of(Self::RETRY_EVERY) => Attempt::Retry,
            _ => Attempt::Skip,
        }
    }

    /// A read of `LAST k` summed: after the fast plans gave up (`evidence`: a sign the key's
    /// counts are flat), or without them.
    pub(super) fn missed(&self, k: u32, evidence: bool) {
        let slot = self.slot(k);
        slot.store(
            slot.load(Ordering::Relaxed).wrapping_add(1).max(1),
            Ordering::Relaxed,
        );
        if evidence {
            self.last_missed.store(true, Ordering::Relaxed);
        }
    }

    /// A fast plan answered a read of `LAST k`.
    pub(super) fn hit(&self, k: u32) {
        self.slot(k).store(0, Ordering::Relaxed);
        self.last_missed.store(false, Ordering::Relaxed);
    }
}

impl Clone for PlanHints {
    fn clone(&self) -> Self {
        PlanHints {
            misses: std::array::from_fn(|i| AtomicU8::new(self.misses[i].load(Ordering::Relaxed))),
            last_missed: AtomicBool::new(self.last_missed.load(Ordering::Relaxed)),
        }
    }
}
