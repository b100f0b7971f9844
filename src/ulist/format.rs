//! A list's bytes in RDB and DUMP, by encoding version. Pure Rust, no FFI;
//! `value.rs` picks the version.
//!
//! Both versions hold the same fields in the same order, a function of the
//! content only (so a replica writes its master's bytes): the schema, the
//! default expiry, the partition keys ascending, then the values by scope
//! then value, each with its partition's number in that list and its expiry.
//! - **v1**: fixed-width fields: `u8 has_default, i64 default_expire_s,
//!   u32 partitions x (u32 len, key), u64 values x (u32 partition, u32 len,
//!   value, i64 expire_at)`.
//! - **v2**: the same as varints, with values packed as in the compact
//!   layout (`varint::put_tuple`: a number in a few bytes): `default_expire_s
//!   (0: none), partitions x (len, key), values x (partition, packed value,
//!   expiry)`, the expiry 0 for never, else 1 + its zigzag. A value of a
//!   small list takes about 8 bytes rather than 30.

use super::list::{Loading, UList, NEVER};
use crate::tuples::schema::{put_blob, DecodeError, Reader, Schema};
use crate::tuples::varint::{self, get_tuple, put_tuple, unzigzag, zigzag};
use crate::tuples::version::Version;

/// What new data is written with.
pub const CURRENT: Version = Version::V2;

pub fn encode(list: &UList, version: Version) -> Vec<u8> {
    let mut out = Vec::new();
    list.schema().encode(&mut out);
    let default_expire_s = list.default_expire_s();
    let (partitions, values) = list.sorted();
    match version {
        Version::V1 => {
            out.push(default_expire_s.is_some() as u8);
            out.extend_from_slice(&default_expire_s.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&(partitions.len() as u32).to_le_bytes());
            partitions.iter().for_each(|key| put_blob(&mut out, key));
            out.extend_from_slice(&(values.len() as u64).to_le_bytes());
            for (partition, value, expire_at) in &values {
                out.extend_from_slice(&partition.to_le_bytes());
                put_blob(&mut out, value);
                out.extend_from_slice(&expire_at.to_le_bytes());
            }
        }
        Version::V2 => {
            varint::put(&mut out, default_expire_s.unwrap_or(0) as u64);
            varint::put(&mut out, partitions.len() as u64);
            for key in &partitions {
                varint::put(&mut out, key.len() as u64);
                out.extend_from_slice(key);
            }
            varint::put(&mut out, values.len() as u64);
            for (partition, value, expire_at) in &values {
                varint::put(&mut out, *partition as u64);
                put_tuple(&mut out, value);
                varint::put(&mut out, expiry_v2(*expire_at));
            }
        }
    }
    out
}

/// A v2 expiry: 0 for never, else 1 + zigzag (a time before year -292
/// million, expired either way, is written as the earliest one that fits).
fn expiry_v2(expire_at: i64) -> u64 {
    if expire_at == NEVER {
        0
    } else {
        1 + zigzag(expire_at.max(i64::MIN + 1))
    }
}

/// The inverse of [`encode`], compact when it holds at most `compact_max`
/// values; an error saying what is wrong for bytes it cannot trust.
pub fn decode(bytes: &[u8], version: Version, compact_max: usize) -> Result<UList, DecodeError> {
    let mut r = Reader { buf: bytes };
    let schema = Schema::decode(&mut r)?;
    let list = match version {
        Version::V1 => {
            let default_expire_s = match (r.u8()?, r.i64()?) {
                (0, 0) => None,
                (1, s) => Some(s),
                _ => return Err(DecodeError::Invalid("default expiry")),
            };
            let mut list = UList::loading(schema, default_expire_s)?;
            for _ in 0..r.count("partition", 4, false)? {
                list.partition(r.blob()?)?;
            }
            for _ in 0..r.count("value", 16, true)? {
                let partition = r.u32()?;
                let value = r.blob()?;
                list.value(partition.into(), value, r.i64()?)?;
            }
            list
        }
        Version::V2 => decode_v2(&mut r, schema)?,
    };
    if !r.is_empty() {
        return Err(DecodeError::Invalid("bytes after the last value"));
    }
    Ok(list.finish(compact_max))
}

/// The inverse of [`expiry_v2`].
fn expire_at_v2(expiry: u64) -> i64 {
    match expiry {
        0 => NEVER,
        n => unzigzag(n - 1),
    }
}

fn decode_v2<'a>(r: &mut Reader<'a>, schema: Schema) -> Result<Loading<'a>, DecodeError> {
    let default_expire_s = match r.varint()? {
        0 => None,
        s => Some(i64::try_from(s).map_err(|_| DecodeError::Invalid("default expiry"))?),
    };
    let mut list = UList::loading(schema, default_expire_s)?;
    for _ in 0..r.varint_count("partition", 1)? {
        let len = r.varint()?;
        let len = usize::try_from(len).map_err(|_| DecodeError::Truncated)?;
        list.partition(r.bytes(len)?)?;
    }
    for _ in 0..r.varint_count("value", 3)? {
        let partition = r.varint()?;
        let (value, len) = get_tuple(r.buf).ok_or(DecodeError::Invalid("value: bad packing"))?;
        r.buf = &r.buf[len..];
        list.value(partition, &value, expire_at_v2(r.varint()?))?;
    }
    Ok(list)
}

/// The tests' shorthand for the current encoding.
#[cfg(test)]
impl UList {
    /// Its bytes in the current encoding (`format.rs`).
    pub fn encode(&self) -> Vec<u8> {
        encode(self, CURRENT)
    }

    /// The inverse of `encode` (see [`decode`]).
    pub fn decode(bytes: &[u8], compact_max: usize) -> Result<UList, DecodeError> {
        decode(bytes, CURRENT, compact_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulist::list::{ValueKeys, DECLARATION};

    fn list() -> UList {
        let tokens: Vec<&[u8]> = ["VALUE", "v", "SCOPE", "s", "PARTITION", "p", "EXPIRE", "60"]
            .iter()
            .map(|t| t.as_bytes())
            .collect();
        let (schema, _) = Schema::parse(
            &tokens,
            &DECLARATION,
            &[("EXPIRE", crate::args::Takes::Value)],
            crate::tuples::schema::Declarer::Client,
        )
        .unwrap();
        let mut l = UList::new(schema, Some(60));
        let long = "x".repeat(300);
        let adds: [(&str, &str, &str, i64); 5] = [
            ("s1", "p1", "12345", NEVER),
            ("s1", "p2", "abc", 4_102_444_800_000),
            ("s2", "p1", "12345", 1),
            ("s2", "p3", &long, NEVER),
            ("s1", "p1", "nul\0byte", -5),
        ];
        for (s, p, v, expire_at) in adds {
            let keys = ValueKeys::new([s.as_bytes()], [p.as_bytes()], [v.as_bytes()]);
            assert!(l.add(&keys, i64::MIN, expire_at));
        }
        l
    }

    #[test]
    fn both_versions_roundtrip_in_both_layouts() {
        for version in [Version::V1, Version::V2] {
            let bytes = encode(&list(), version);
            for compact_max in [0, 512] {
                let back = decode(&bytes, version, compact_max).unwrap();
                assert_eq!(encode(&back, version), bytes, "{version:?}");
                // Either version reads back the same content.
                assert_eq!(encode(&back, Version::V1), encode(&list(), Version::V1));
            }
        }
    }

    #[test]
    fn v2_is_smaller_and_refuses_what_it_never_writes() {
        // Ten 9-digit ids that never expire, in one partition.
        let mut ids = list();
        for id in 100_000_000..100_000_010u64 {
            let id = id.to_string();
            let keys = ValueKeys::new([&b"s3"[..]], [&b"p"[..]], [id.as_bytes()]);
            ids.add(&keys, 0, NEVER);
        }
        let grown = |version| encode(&ids, version).len() - encode(&list(), version).len();
        let (v1, v2) = (grown(Version::V1), grown(Version::V2));
        assert!(v2 * 3 < v1, "ten values: v2 {v2} bytes, v1 {v1}");
        let (v1, v2) = (encode(&list(), Version::V1), encode(&list(), Version::V2));
        for cut in 0..v2.len() {
            assert!(
                decode(&v2[..cut], Version::V2, 512).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = v2.clone();
        longer.push(0);
        assert!(decode(&longer, Version::V2, 512).is_err());
        // Read as the other version, the bytes are refused, not misread.
        assert!(decode(&v2, Version::V1, 512).is_err());
        assert!(decode(&v1, Version::V2, 512).is_err());
    }

    #[test]
    fn expiries_keep_their_exact_value() {
        for t in [
            NEVER,
            i64::MAX - 1,
            0,
            1,
            -1,
            4_102_444_800_123,
            i64::MIN + 1,
        ] {
            let mut buf = Vec::new();
            varint::put(&mut buf, expiry_v2(t));
            assert_eq!(expire_at_v2(varint::get(&buf).unwrap().0), t);
        }
    }
}
