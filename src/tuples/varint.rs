//! Variable-length integers for compact buffers (LEB128: 7 bits a byte, low
//! bits first, the high bit set on every byte but the last), and tuple
//! encodings packed for them: `u8 tag, bytes`, a tag up to [`MAX_RAW`] being
//! the length of the encoding that follows, tag [`NUMBER`] saying the tuple
//! is one decimal number, which follows as a varint (how a listpack stores
//! `12345` in 3 bytes rather than 7). Pure Rust, no FFI.

use super::encoding;
use smallvec::SmallVec;
use std::borrow::Cow;

/// The longest tuple encoding a packed tuple holds as it is.
pub const MAX_RAW: usize = 250;
/// The tag of a tuple that is one decimal number.
const NUMBER: u8 = 251;
/// The tag of a tuple longer than [`MAX_RAW`], in [`put_tuple`]: its length
/// follows as a varint, then its encoding.
const LONG: u8 = 252;

/// A packed tuple (tag and bytes).
pub type Packed = SmallVec<[u8; 24]>;

/// Appends `n` as a varint (1 to 10 bytes).
pub fn put(out: &mut impl Extend<u8>, n: u64) {
    if n < 0x80 {
        // The usual case (a count, a zero for "never"), without the loop.
        out.extend([n as u8]);
        return;
    }
    // Built aside, then added at once (one capacity check, not one a byte).
    let mut bytes = [0u8; 10];
    let len = write(&mut bytes, n);
    out.extend(bytes[..len].iter().copied());
}

/// Writes `n` as a varint at the start of `out` (10 bytes at least);
/// returns its length.
fn write(out: &mut [u8], mut n: u64) -> usize {
    let mut len = 0;
    while n >= 0x80 {
        out[len] = n as u8 | 0x80;
        n >>= 7;
        len += 1;
    }
    out[len] = n as u8;
    len + 1
}

/// The bytes [`put`] writes for `n`.
pub fn len(n: u64) -> usize {
    (64 - (n | 1).leading_zeros() as usize).div_ceil(7)
}

/// The varint at the start of `buf` and its length in bytes; `None` if
/// `buf` ends inside it or it is longer than a u64.
pub fn get(buf: &[u8]) -> Option<(u64, usize)> {
    let mut n = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        n |= ((b & 0x7f) as u64) << (7 * i);
        if b < 0x80 {
            return Some((n, i + 1));
        }
    }
    None
}

/// Zigzag: small negative numbers stay short (0, -1, 1, -2 ... -> 0, 1, 2, 3).
pub fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

pub fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// The number a tuple encoding of one element holds, if that element is a
/// decimal number written the one way `u64::to_string` writes it (so the
/// bytes come back exactly).
pub fn as_number(tuple: &[u8]) -> Option<u64> {
    let digits = tuple.strip_suffix(&encoding::END_OF_ELEMENT)?;
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    if digits.len() < 20 {
        // Below 10^19: no overflow to check.
        return digits.iter().try_fold(0u64, |n, &d| {
            let digit = d.wrapping_sub(b'0');
            (digit <= 9).then_some(n * 10 + digit as u64)
        });
    }
    digits.iter().try_fold(0u64, |n, &d| {
        let digit = d.checked_sub(b'0').filter(|&d| d <= 9)?;
        n.checked_mul(10)?.checked_add(digit as u64)
    })
}

/// The tuple encoding of the one-element tuple holding `n` in decimal.
pub fn number_tuple(n: u64) -> Vec<u8> {
    let mut out = n.to_string().into_bytes();
    out.extend_from_slice(&encoding::END_OF_ELEMENT);
    out
}

/// The packed form of the tuple encoding `tuple`; `None` for one too long
/// to pack.
pub fn pack_tuple(tuple: &[u8]) -> Option<Packed> {
    let mut out = Packed::new();
    if let Some(n) = as_number(tuple) {
        // Written in place: commands pack a value on every call.
        let mut buf = [0u8; 24];
        buf[0] = NUMBER;
        let len = 1 + write(&mut buf[1..], n);
        return Some(Packed::from_buf_and_len(buf, len));
    } else if tuple.len() <= MAX_RAW {
        out.push(tuple.len() as u8);
        out.extend_from_slice(tuple);
    } else {
        return None;
    }
    Some(out)
}

/// The length of the packed tuple at the start of `buf`; `None` if `buf`
/// ends inside it.
pub fn packed_len(buf: &[u8]) -> Option<usize> {
    let tag = *buf.first()?;
    let len = if tag == NUMBER {
        1 + get(&buf[1..])?.1
    } else {
        1 + tag as usize
    };
    (len <= buf.len()).then_some(len)
}

/// The tuple encoding of a packed tuple (as [`pack_tuple`] made it).
pub fn unpack_tuple(packed: &[u8]) -> Cow<'_, [u8]> {
    if packed.first() == Some(&NUMBER) {
        let n = get(&packed[1..]).map_or(0, |(n, _)| n);
        Cow::Owned(number_tuple(n))
    } else {
        Cow::Borrowed(packed.get(1..).unwrap_or_default())
    }
}

/// Appends a tuple encoding of any length: packed ([`pack_tuple`]) when it
/// can be, else tag [`LONG`], its length, its bytes.
pub fn put_tuple(out: &mut Vec<u8>, tuple: &[u8]) {
    match pack_tuple(tuple) {
        Some(packed) => out.extend_from_slice(&packed),
        None => {
            out.push(LONG);
            put(out, tuple.len() as u64);
            out.extend_from_slice(tuple);
        }
    }
}

/// The tuple encoding [`put_tuple`] wrote at the start of `buf`, and the
/// bytes it took; `None` if `buf` ends inside it or starts with no tag.
pub fn get_tuple(buf: &[u8]) -> Option<(Cow<'_, [u8]>, usize)> {
    match *buf.first()? {
        LONG => {
            let (len, n) = get(&buf[1..])?;
            let end = (1 + n).checked_add(usize::try_from(len).ok()?)?;
            Some((Cow::Borrowed(buf.get(1 + n..end)?), end))
        }
        tag if tag == NUMBER || tag as usize <= MAX_RAW => {
            let len = packed_len(buf)?;
            Some((unpack_tuple(&buf[..len]), len))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tuples_of_any_length_roundtrip() {
        let tuples = [
            number_tuple(12345),
            vec![],
            b"abc".to_vec(),
            vec![b'x'; MAX_RAW + 1],
        ];
        for tuple in tuples {
            let mut buf = Vec::new();
            put_tuple(&mut buf, &tuple);
            buf.push(7);
            let (back, len) = get_tuple(&buf).unwrap();
            assert_eq!((&*back, len), (&tuple[..], buf.len() - 1));
            assert_eq!(get_tuple(&buf[..len - 1]), None);
        }
        assert_eq!(get_tuple(&[253]), None);
    }

    use super::*;

    #[test]
    fn varints_roundtrip_at_every_length() {
        for n in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            put(&mut buf, n);
            assert_eq!(len(n), buf.len());
            assert_eq!(get(&buf), Some((n, buf.len())));
            assert_eq!(get(&buf[..buf.len() - 1]), None);
        }
        assert_eq!(get(&[0xff; 11]), None);
        for n in [0, -1, 1, i64::MIN, i64::MAX, -300] {
            assert_eq!(unzigzag(zigzag(n)), n);
        }
        assert_eq!(zigzag(-1), 1);
    }

    #[test]
    fn only_canonical_numbers_are_packed() {
        let tuple = |s: &[u8]| encoding::encode([s]);
        assert_eq!(as_number(&tuple(b"12345")), Some(12345));
        assert_eq!(as_number(&tuple(b"0")), Some(0));
        assert_eq!(as_number(&tuple(b"18446744073709551615")), Some(u64::MAX));
        // 19 digits (the unchecked loop) and 20 (the checked one).
        let most_unchecked = 9_999_999_999_999_999_999;
        assert_eq!(
            as_number(&tuple(b"9999999999999999999")),
            Some(most_unchecked)
        );
        assert_eq!(as_number(&tuple(b"999999999999999999x")), None);
        assert_eq!(
            as_number(&tuple(b"10000000000000000000")),
            Some(most_unchecked + 1)
        );
        for refused in [
            &b"012"[..],
            b"",
            b"+1",
            b"-1",
            b"1 ",
            b"18446744073709551616",
            b"1\x00",
        ] {
            assert_eq!(as_number(&tuple(refused)), None, "{refused:?}");
        }
        assert_eq!(as_number(&encoding::encode([&b"1"[..], b"2"])), None);
        assert_eq!(number_tuple(12345), tuple(b"12345"));
    }

    #[test]
    fn packed_tuples_roundtrip() {
        for t in [
            encoding::encode([&b"12345"[..]]),
            encoding::encode([&b"012"[..]]),
            encoding::encode([&b"a"[..], b"7"]),
            Vec::new(),
            vec![b'k'; MAX_RAW],
        ] {
            let packed = pack_tuple(&t).unwrap();
            assert_eq!(packed_len(&packed), Some(packed.len()));
            assert_eq!(packed_len(&packed[..packed.len() - 1]), None);
            assert_eq!(unpack_tuple(&packed), &t[..]);
        }
        assert_eq!(
            pack_tuple(&encoding::encode([&b"12345"[..]]))
                .unwrap()
                .len(),
            3
        );
        assert!(pack_tuple(&[b'k'; MAX_RAW + 1]).is_none());
    }
}
