//! What makes a capped key's write reply cheap while its buckets are not
//! folded (`folded.rs`): for each slot of the newest bucket, its member's
//! count over the other buckets of the window (`sums`), and a filter of the
//! members those buckets may hold. A member that takes a slot by an
//! eviction is usually in none of them: the filter says so, and its count
//! there is their floors' sum (one per bucket), not a lookup a bucket.
//! Derived state: never encoded, rebuilt when needed; no answer depends on
//! it. Pure Rust, no FFI.
//!
//! The filter holds every member of the older buckets and may hold more
//! (members since gone, false positives: then the buckets are looked up):
//! two bits of 4 a member set, about 15% false positives, half a byte a
//! counter. Built on the first eviction after a bucket joins or leaves
//! (O(counters)); a late event adds its member.

use super::folded::Buckets;
use super::summary::{hash, MAX_COUNTERS};

/// An entry of `sums` not summed yet (sums are never negative).
const UNSUMMED: i64 = -1;

/// Filter bits a member of the older buckets.
const BITS_A_MEMBER: usize = 4;

#[derive(Clone, Debug, Default)]
pub struct Older {
    /// For each slot of the newest bucket, its member's count over the
    /// other buckets (`UNSUMMED`: not known yet).
    sums: Vec<i64>,
    /// The members of the other buckets, if built since they changed.
    filter: Option<Box<[u64]>>,
}

impl Older {
    /// Slot `s`'s member's count over the older buckets, if summed.
    pub fn sum(&self, s: usize) -> Option<i64> {
        self.sums.get(s).copied().filter(|&v| v != UNSUMMED)
    }

    /// Keeps slot `s`'s sum (of a bucket of at most `capacity` slots).
    pub fn keep(&mut self, s: usize, sum: i64, capacity: usize) {
        if self.sums.len() <= s {
            // Sized once for a full bucket (its slots are at most that).
            let slots = capacity.min(MAX_COUNTERS);
            self.sums.reserve_exact(slots.max(s + 1) - self.sums.len());
            self.sums.resize(s + 1, UNSUMMED);
        }
        self.sums[s] = sum;
    }

    /// Before a bucket changes (`newest`: the window's newest) in slot
    /// `slot` to another member (`h`: its hash), or in counts only: a change
    /// to the newest bucket forgets that slot's sum; to any other, every
    /// sum, and the filter learns the member.
    pub fn changing(&mut self, newest: bool, slot: Option<usize>, h: u64) {
        if newest {
            if let Some(x) = slot.and_then(|s| self.sums.get_mut(s)) {
                *x = UNSUMMED;
            }
            return;
        }
        self.sums.clear();
        if let (Some(bits), Some(_)) = (self.filter.as_mut(), slot) {
            set(bits, h);
        }
    }

    /// After buckets joined or left the window: nothing is known.
    pub fn forget(&mut self) {
        self.sums.clear();
        self.filter = None;
    }

    /// Whether no bucket but the newest holds the member of hash `h` (the
    /// filter built first if needed). False when unsure.
    pub fn surely_absent(&mut self, buckets: &Buckets, h: u64) -> bool {
        let older = buckets.range(..buckets.len().saturating_sub(1));
        let bits = self.filter.get_or_insert_with(|| {
            let members: usize = older.clone().map(|b| b.summary.len()).sum();
            let words = (members * BITS_A_MEMBER).div_ceil(64).max(1);
            let mut bits = vec![0u64; words].into_boxed_slice();
            for b in older {
                for (member, ..) in b.summary.iter() {
                    set(&mut bits, hash(member));
                }
            }
            bits
        });
        let (i, j) = places(bits.len(), h);
        bits[i / 64] & (1 << (i % 64)) == 0 || bits[j / 64] & (1 << (j % 64)) == 0
    }

    pub fn heap_bytes(&self) -> usize {
        self.sums.capacity() * std::mem::size_of::<i64>()
            + self.filter.as_ref().map_or(0, |b| b.len() * 8)
    }
}

fn set(bits: &mut [u64], h: u64) {
    let (i, j) = places(bits.len(), h);
    bits[i / 64] |= 1 << (i % 64);
    bits[j / 64] |= 1 << (j % 64);
}

/// A member's two bits among `words` words: from its hash mixed again (the
/// tables use its high and low bits).
fn places(words: usize, h: u64) -> (usize, usize) {
    let mixed = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let n = (words * 64) as u64;
    let at = |half: u64| ((half * n) >> 32) as usize;
    (at(mixed >> 32), at(mixed & 0xFFFF_FFFF))
}

#[cfg(test)]
#[path = "older_tests.rs"]
mod tests;
