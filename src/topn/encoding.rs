//! The encoding of an exact TOPN key (RDB, DUMP), whatever its layout: the version
//! bytes, the writer both exact layouts share (so their bytes agree), and the reader every
//! decoder uses. A CAPACITY key's encoding is its layout's own (`layout/capped`).

use super::error::Error;
use super::shape::Shape;
use super::views::Views;

/// Version byte that starts every encoding of a key without ALIGN (the first encoding).
pub const ENCODING_VERSION: u8 = 1;
/// Version byte of a key with a non-zero ALIGN: version 1 with `i64 align_ms` after the window.
pub const ENCODING_VERSION_ALIGNED: u8 = 2;
/// Version byte of a key with VIEWS: version 2 (`align_ms` may be 0) with `u8 nviews, nviews x
/// u32 k` (ascending) after the ALIGN.
pub const ENCODING_VERSION_VIEWS: u8 = 4;

/// The encoding of a content: its shape, the member names written (in byte
/// order) and the live buckets (ascending) with their nonzero entries, each
/// `(name's number, count)` by number. Both layouts write through it, so
/// their bytes agree.
pub(in crate::topn) fn write(
    shape: &Shape,
    views: &Views,
    names: &[&[u8]],
    buckets: &[(i64, Vec<(u32, i64)>)],
) -> Vec<u8> {
    let name_bytes: usize = names.iter().map(|n| 4 + n.len()).sum();
    let entries: usize = buckets.iter().map(|(_, e)| 12 + 12 * e.len()).sum();
    let mut out = Vec::with_capacity(42 + name_bytes + entries);
    let aligned = shape.align_ms != 0;
    out.push(match (views.is_empty(), aligned) {
        (false, _) => ENCODING_VERSION_VIEWS,
        (true, true) => ENCODING_VERSION_ALIGNED,
        (true, false) => ENCODING_VERSION,
    });
    out.extend_from_slice(&shape.bucket_ms.to_le_bytes());
    out.extend_from_slice(&shape.window.to_le_bytes());
    if aligned || !views.is_empty() {
        out.extend_from_slice(&shape.align_ms.to_le_bytes());
    }
    if !views.is_empty() {
        out.push(views.len() as u8);
        for k in views.iter() {
            out.extend_from_slice(&k.to_le_bytes());
        }
    }
    out.push(shape.clock.is_some() as u8);
    out.extend_from_slice(&shape.clock.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&(names.len() as u32).to_le_bytes());
    for n in names {
        out.extend_from_slice(&(n.len() as u32).to_le_bytes());
        out.extend_from_slice(n);
    }
    out.extend_from_slice(&(buckets.len() as u32).to_le_bytes());
    for (idx, entries) in buckets {
        out.extend_from_slice(&idx.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (r, v) in entries {
            out.extend_from_slice(&r.to_le_bytes());
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Reads an encoding front to back; every read past its end is `Truncated`.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { rest: bytes }
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.rest.len() < n {
            return Err(Error::Truncated);
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    pub fn take<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut out = [0; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take::<1>()?[0])
    }

    pub fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    pub fn i64(&mut self) -> Result<i64, Error> {
        Ok(i64::from_le_bytes(self.take()?))
    }
}
