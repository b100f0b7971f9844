//! The hashing the full layout's tables share.

pub(super) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A strong 64-bit mixer (MurmurHash3's finalizer).
#[inline]
pub(super) fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Maps a hash onto `[0, cap)` (Lemire's multiply-shift on the high 32 bits).
#[inline]
pub(super) fn reduce(h: u64, cap: usize) -> usize {
    (((h >> 32) * cap as u64) >> 32) as usize
}
