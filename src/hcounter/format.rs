//! A counter's bytes in RDB and DUMP, by encoding version. Pure Rust, no
//! FFI; `value.rs` picks the version.
//!
//! Both versions hold the same fields in the same order, a function of the
//! content only (so a replica writes its master's bytes): the schema, the
//! flags (1 float, 2 TTL), the TTL, then the partitions ascending, each with
//! the latest AT of its writes, its cells ascending with their counts, and
//! the unique tuples first counted in it.
//! - **v1**: fixed-width fields: `u8 flags, i64 ttl_s, u32 partitions x
//!   (u32 len, key, i64 last_at, u32 cells x (u32 len, cell, i64 count),
//!   u32 tuples x (u32 len, tuple))`.
//! - **v2**: the same with varints (times and integer counts zigzagged; a
//!   float count keeps its 8 bytes) and cells and tuples packed as ULIST's
//!   compact layout packs values (`varint::put_tuple`). A cell of a 20-cell
//!   partition takes about 5 bytes rather than 22.

use super::counter::{HCounter, Loading};
use crate::tuples::schema::{put_blob, DecodeError, Reader, Schema};
use crate::tuples::varint::{self, get_tuple, put_tuple, unzigzag, zigzag};
use crate::tuples::version::Version;

/// What new data is written with.
pub const CURRENT: Version = Version::V2;

pub fn encode(counter: &HCounter, version: Version) -> Vec<u8> {
    let mut out = Vec::new();
    counter.schema().encode(&mut out);
    let float = counter.is_float();
    out.push(float as u8 | (counter.ttl_s().is_some() as u8) << 1);
    let ttl_s = counter.ttl_s().unwrap_or(0);
    let partitions = counter.partition_count();
    match version {
        Version::V1 => {
            out.extend_from_slice(&ttl_s.to_le_bytes());
            out.extend_from_slice(&(partitions as u32).to_le_bytes());
        }
        Version::V2 => {
            varint::put(&mut out, ttl_s as u64);
            varint::put(&mut out, partitions as u64);
        }
    }
    for (key, last_at, cells, seen) in counter.entries() {
        match version {
            Version::V1 => {
                put_blob(&mut out, key);
                out.extend_from_slice(&last_at.to_le_bytes());
                out.extend_from_slice(&(cells.len() as u32).to_le_bytes());
                for (cell, count) in &cells {
                    put_blob(&mut out, cell);
                    out.extend_from_slice(&count.bits().to_le_bytes());
                }
                out.extend_from_slice(&(seen.len() as u32).to_le_bytes());
                seen.iter().for_each(|tuple| put_blob(&mut out, tuple));
            }
            Version::V2 => {
                varint::put(&mut out, key.len() as u64);
                out.extend_from_slice(key);
                varint::put(&mut out, zigzag(last_at));
                varint::put(&mut out, cells.len() as u64);
                for (cell, count) in &cells {
                    put_tuple(&mut out, cell);
                    match float {
                        true => out.extend_from_slice(&count.bits().to_le_bytes()),
                        false => varint::put(&mut out, zigzag(count.bits())),
                    }
                }
                varint::put(&mut out, seen.len() as u64);
                seen.iter().for_each(|tuple| put_tuple(&mut out, tuple));
            }
        }
    }
    out
}

/// The inverse of [`encode`], packing up to `compact_max` cells a
/// partition; an error saying what is wrong for bytes it cannot trust.
pub fn decode(bytes: &[u8], version: Version, compact_max: usize) -> Result<HCounter, DecodeError> {
    let mut r = Reader { buf: bytes };
    let schema = Schema::decode(&mut r)?;
    let flags = r.u8()?;
    if flags & !3 != 0 {
        return Err(DecodeError::Invalid("unknown flags"));
    }
    let ttl_s = match version {
        Version::V1 => r.i64()?,
        Version::V2 => i64::try_from(r.varint()?).map_err(|_| DecodeError::Invalid("TTL"))?,
    };
    let ttl_s = match (flags & 2 != 0, ttl_s) {
        (false, 0) => None,
        (true, s) if s != 0 => Some(s),
        _ => return Err(DecodeError::Invalid("TTL")),
    };
    let mut counter = HCounter::loading(schema, ttl_s, flags & 1 != 0, compact_max)?;
    match version {
        Version::V1 => decode_v1(&mut r, &mut counter)?,
        Version::V2 => decode_v2(&mut r, &mut counter)?,
    }
    match r.is_empty() {
        true => Ok(counter.finish()),
        false => Err(DecodeError::Invalid("bytes after the last partition")),
    }
}

fn decode_v1(r: &mut Reader, counter: &mut Loading) -> Result<(), DecodeError> {
    for _ in 0..r.count("partition", 20, false)? {
        let key = r.blob()?;
        counter.partition(key, r.i64()?)?;
        for _ in 0..r.count("cell", 12, false)? {
            let cell = r.blob()?;
            counter.cell(cell, r.i64()?)?;
        }
        for _ in 0..r.count("unique tuple", 4, false)? {
            counter.unique(r.blob()?)?;
        }
    }
    Ok(())
}

/// The packed tuple at the reader's position.
fn tuple<'a>(
    r: &mut Reader<'a>,
    what: &'static str,
) -> Result<std::borrow::Cow<'a, [u8]>, DecodeError> {
    let (tuple, len) = get_tuple(r.buf).ok_or(DecodeError::Invalid(what))?;
    r.buf = &r.buf[len..];
    Ok(tuple)
}

fn decode_v2(r: &mut Reader, counter: &mut Loading) -> Result<(), DecodeError> {
    for _ in 0..r.varint_count("partition", 4)? {
        let len = usize::try_from(r.varint()?).map_err(|_| DecodeError::Truncated)?;
        let key = r.bytes(len)?;
        counter.partition(key, unzigzag(r.varint()?))?;
        for _ in 0..r.varint_count("cell", 2)? {
            let cell = tuple(r, "cell: bad packing")?;
            let bits = match counter.is_float() {
                true => r.i64()?,
                false => unzigzag(r.varint()?),
            };
            counter.cell(&cell, bits)?;
        }
        for _ in 0..r.varint_count("unique tuple", 1)? {
            counter.unique(&tuple(r, "unique tuple: bad packing")?)?;
        }
    }
    Ok(())
}

/// The tests' shorthand for the current encoding.
#[cfg(test)]
impl HCounter {
    pub fn encode(&self) -> Vec<u8> {
        encode(self, CURRENT)
    }

    pub fn decode(bytes: &[u8], compact_max: usize) -> Result<HCounter, DecodeError> {
        decode(bytes, CURRENT, compact_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hcounter::counter::tests::{counter, place};
    use crate::hcounter::counter::{Count, DEFAULT_COMPACT_MAX};

    /// 3 partitions of 20 cells, and unique tuples when UNIQUE.
    fn filled(float: bool) -> HCounter {
        let decl = ["PARTITION", "day", "GROUP", "city", "UNIQUE", "user"];
        let mut c = counter(&decl, Some(60), float);
        for i in 0..60u32 {
            let (day, city, user) = ((i % 3).to_string(), (i % 20).to_string(), i.to_string());
            let p = place(&[day.as_bytes()], &[city.as_bytes()], &[user.as_bytes()]);
            let by = if float {
                Count::Float(0.5)
            } else {
                Count::Int(-3)
            };
            c.incr(&p, by, 1_700_000_000_000 + i as i64).unwrap();
        }
        c
    }

    #[test]
    fn both_versions_roundtrip_and_read_the_same() {
        for float in [false, true] {
            let c = filled(float);
            for version in [Version::V1, Version::V2] {
                let bytes = encode(&c, version);
                for compact_max in [0, DEFAULT_COMPACT_MAX] {
                    let back = decode(&bytes, version, compact_max).unwrap();
                    assert_eq!(encode(&back, version), bytes, "{version:?}");
                    assert_eq!(encode(&back, Version::V1), encode(&c, Version::V1));
                }
                for cut in 0..bytes.len() {
                    assert!(
                        decode(&bytes[..cut], version, 8).is_err(),
                        "{version:?} cut {cut}"
                    );
                }
            }
            let (v1, v2) = (encode(&c, Version::V1), encode(&c, Version::V2));
            assert!(
                v2.len() * 5 < v1.len() * 3,
                "v2 {} bytes, v1 {}",
                v2.len(),
                v1.len()
            );
            assert!(decode(&v2, Version::V1, 8).is_err());
            assert!(decode(&v1, Version::V2, 8).is_err());
        }
    }
}
