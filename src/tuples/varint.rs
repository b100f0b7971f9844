//! Variable-length integers for compact buffers (LEB128: 7 bits a byte, low
//! bits first, the high bit set on every byte but the last), and a packed
//! form of tuple encodings whose only element is a decimal number (how a
//! listpack stores `12345` in 3 bytes rather than 7). Pure Rust, no FFI.

use super::encoding;

/// Appends `n` as a varint (1 to 10 bytes).
pub fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
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
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits.len() > 1 && digits[0] == b'0' {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The tuple encoding of the one-element tuple holding `n` in decimal.
pub fn number_tuple(n: u64) -> Vec<u8> {
    let mut out = n.to_string().into_bytes();
    out.extend_from_slice(&encoding::END_OF_ELEMENT);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_roundtrip_at_every_length() {
        for n in [0, 1, 127, 128, 16_383, 16_384, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            put(&mut buf, n);
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
}
