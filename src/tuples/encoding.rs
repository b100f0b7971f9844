//! Tuple encoding: a tuple of byte strings as one byte string, binary-safe
//! and order-preserving.
//!
//! Each element is written with every 0x00 byte escaped as `00 FF`, then
//! closed by `00 01`. So no byte inside a value (`:`, NUL, 0xFF, anything)
//! can end an element early, and comparing two encodings bytewise compares
//! the tuples element by element, each bytewise, a shorter element first.
//! The encoding of a tuple's first k elements is a prefix of the whole
//! tuple's encoding, which is what prefix range scans rely on.

use smallvec::SmallVec;

const ESCAPE: u8 = 0x00;
const ESCAPED_NUL: u8 = 0xFF;
const END: u8 = 0x01;
/// What closes every element.
pub const END_OF_ELEMENT: [u8; 2] = [ESCAPE, END];

/// Where encodings are written: bytes appended a slice at a time (a
/// `SmallVec` extended byte by byte checks its capacity for every byte, and
/// commands encode their values on every call).
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl<const N: usize> Sink for SmallVec<[u8; N]> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Elements up to this long are checked byte by byte (a vectorized search
/// costs more for so few) and written with their end in one piece.
const SHORT: usize = 30;

/// Appends the encoding of one element to `out`.
pub fn push_element(out: &mut impl Sink, element: &[u8]) {
    let len = element.len();
    if len <= SHORT && element.iter().all(|&b| b != ESCAPE) {
        // The usual element.
        let mut short = [0u8; SHORT + 2];
        short[..len].copy_from_slice(element);
        short[len..len + 2].copy_from_slice(&END_OF_ELEMENT);
        out.put(&short[..len + 2]);
        return;
    }
    if memchr::memchr(ESCAPE, element).is_none() {
        out.put(element);
    } else {
        for &b in element {
            out.put(&[b]);
            if b == ESCAPE {
                out.put(&[ESCAPED_NUL]);
            }
        }
    }
    out.put(&END_OF_ELEMENT);
}

/// The encoding of `elements`, in order.
pub fn encode<'a>(elements: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for element in elements {
        push_element(&mut out, element);
    }
    out
}

/// Why bytes are not a tuple encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// Whether `bytes` are a well-formed encoding of exactly `n` elements (what
/// a loader checks of every tuple it reads).
pub fn is_tuple_of(bytes: &[u8], n: usize) -> bool {
    decode(bytes).is_ok_and(|e| e.len() == n)
}

/// The elements of an encoding, in order; `Malformed` for bytes `encode`
/// cannot have produced (a stray escape or an unterminated element).
pub fn decode(bytes: &[u8]) -> Result<Vec<Vec<u8>>, Malformed> {
    let mut elements = Vec::new();
    let mut current = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != ESCAPE {
            current.push(b);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(&ESCAPED_NUL) => current.push(ESCAPE),
            Some(&END) => elements.push(std::mem::take(&mut current)),
            _ => return Err(Malformed),
        }
        i += 2;
    }
    if current.is_empty() && (bytes.is_empty() || bytes.ends_with(&[ESCAPE, END])) {
        Ok(elements)
    } else {
        Err(Malformed)
    }
}

/// The elements of a valid encoding (as `encode` made it), in order,
/// borrowed from `bytes` unless they hold an escaped NUL. For replies: no
/// allocation for the usual element.
pub fn elements(bytes: &[u8]) -> impl Iterator<Item = std::borrow::Cow<'_, [u8]>> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.len() < 2 {
            return None;
        }
        let mut i = 0;
        let mut escaped = false;
        while i + 1 < rest.len() {
            if rest[i] == ESCAPE {
                if rest[i + 1] == END {
                    break;
                }
                escaped = true;
                i += 2;
            } else {
                i += 1;
            }
        }
        let (raw, tail) = (&rest[..i], &rest[(i + 2).min(rest.len())..]);
        rest = tail;
        Some(if escaped {
            let mut element = Vec::with_capacity(raw.len());
            let mut j = 0;
            while j < raw.len() {
                element.push(raw[j]);
                j += if raw[j] == ESCAPE { 2 } else { 1 };
            }
            std::borrow::Cow::Owned(element)
        } else {
            std::borrow::Cow::Borrowed(raw)
        })
    })
}

/// The length of the encoding of the first `n` elements of `bytes` (a valid
/// encoding with at least `n` elements), i.e. where element `n` starts.
pub fn prefix_len(bytes: &[u8], n: usize) -> usize {
    let mut seen = 0;
    let mut i = 0;
    while seen < n && i + 1 < bytes.len() {
        if bytes[i] == ESCAPE {
            if bytes[i + 1] == END {
                seen += 1;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn tuple(parts: &[&[u8]]) -> Vec<u8> {
        encode(parts.iter().copied())
    }

    #[test]
    fn roundtrip_with_awkward_bytes() {
        let cases: Vec<Vec<&[u8]>> = vec![
            vec![],
            vec![b""],
            vec![b"", b""],
            vec![b"a:b", b":"],
            vec![b"\x00", b"\x00\x01", b"\x00\xff", b"\xff\x00"],
            vec![b"\x01\x00\x00"],
        ];
        for parts in cases {
            let enc = tuple(&parts);
            let dec = decode(&enc).unwrap();
            assert_eq!(dec, parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn colons_and_nuls_never_mix_values_up() {
        // The gem's ':' join makes these two equal; the encoding does not.
        assert_ne!(tuple(&[b"a:b", b"c"]), tuple(&[b"a", b"b:c"]));
        assert_ne!(tuple(&[b"a\x00", b"b"]), tuple(&[b"a", b"\x00b"]));
        assert_ne!(tuple(&[b"a\x00\x01", b""]), tuple(&[b"a", b"", b""]));
    }

    #[test]
    fn malformed_bytes_are_refused() {
        for bad in [
            &b"\x00"[..],
            b"a\x00\x02",
            b"abc",
            b"a\x00\x01b",
            b"\x00\xff",
        ] {
            assert_eq!(decode(bad), Err(Malformed), "{bad:?}");
        }
    }

    #[test]
    fn prefixes_are_prefixes() {
        let enc = tuple(&[b"x\x00", b"", b"yz"]);
        assert_eq!(prefix_len(&enc, 0), 0);
        assert_eq!(&enc[..prefix_len(&enc, 1)], &tuple(&[b"x\x00"])[..]);
        assert_eq!(&enc[..prefix_len(&enc, 2)], &tuple(&[b"x\x00", b""])[..]);
        assert_eq!(prefix_len(&enc, 3), enc.len());
    }

    fn random_element(rng: &mut StdRng) -> Vec<u8> {
        let alphabet = [0x00u8, 0x01, b':', b'a', 0xfe, 0xff];
        (0..rng.gen_range(0..4))
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
            .collect()
    }

    #[test]
    fn elements_borrow_what_needs_no_unescaping() {
        let mut rng = StdRng::seed_from_u64(9);
        for _ in 0..5_000 {
            let n = rng.gen_range(0..4);
            let parts: Vec<Vec<u8>> = (0..n).map(|_| random_element(&mut rng)).collect();
            let enc = encode(parts.iter().map(|v| v.as_slice()));
            let got: Vec<Vec<u8>> = elements(&enc).map(|e| e.into_owned()).collect();
            assert_eq!(got, parts);
            for (e, p) in elements(&enc).zip(&parts) {
                assert_eq!(matches!(e, std::borrow::Cow::Borrowed(_)), !p.contains(&0));
            }
        }
    }

    /// Bytewise order of encodings = element-wise bytewise order of tuples.
    #[test]
    fn order_is_preserved() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let n = rng.gen_range(0..4);
            let a: Vec<Vec<u8>> = (0..n).map(|_| random_element(&mut rng)).collect();
            let b: Vec<Vec<u8>> = (0..n).map(|_| random_element(&mut rng)).collect();
            let (ea, eb) = (
                encode(a.iter().map(|v| v.as_slice())),
                encode(b.iter().map(|v| v.as_slice())),
            );
            assert_eq!(ea.cmp(&eb), a.cmp(&b), "{a:?} vs {b:?}");
            assert_eq!(decode(&ea).unwrap(), a);
        }
    }
}
