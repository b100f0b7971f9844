//! What both layouts of a list (`compact.rs`, `hashed.rs`) and the commands
//! share: a value's encoded keys, a stored value, a reply row. Pure Rust.

use crate::tuples::encoding;
use smallvec::SmallVec;
use std::borrow::Cow;

/// Encoded bytes, inline up to 16 (most values need no allocation).
pub type Bytes = SmallVec<[u8; 16]>;

/// The expiry of a value that never expires.
pub const NEVER: i64 = i64::MAX;

/// The encodings a value is found and kept under, made once per call.
pub struct ValueKeys {
    /// SCOPE then PARTITION values; the first `scope_len` bytes are the scope.
    pub(super) place: SmallVec<[u8; 64]>,
    pub(super) scope_len: usize,
    pub(super) value: Bytes,
}

impl ValueKeys {
    /// The keys of a value given the values of its SCOPE, PARTITION (none
    /// for a lookup) and VALUE names, each in declared order. Inlined: made
    /// in place in its caller's frame, not copied there (over 100 bytes).
    #[inline]
    pub fn new<'a>(
        scope: impl IntoIterator<Item = &'a [u8]>,
        partition: impl IntoIterator<Item = &'a [u8]>,
        value: impl IntoIterator<Item = &'a [u8]>,
    ) -> Self {
        let mut place = SmallVec::new();
        scope
            .into_iter()
            .for_each(|e| encoding::push_element(&mut place, e));
        let scope_len = place.len();
        partition
            .into_iter()
            .for_each(|e| encoding::push_element(&mut place, e));
        let mut encoded = Bytes::new();
        value
            .into_iter()
            .for_each(|e| encoding::push_element(&mut encoded, e));
        ValueKeys {
            place,
            scope_len,
            value: encoded,
        }
    }

    pub(super) fn scope(&self) -> &[u8] {
        &self.place[..self.scope_len]
    }
}

/// One live value: the values of the schema's VALUE, SCOPE and PARTITION
/// names, in that order, each in declared order.
pub type Row = Vec<Vec<u8>>;

/// A stored value: its place (SCOPE then PARTITION encodings), its value's
/// encoding and its expiry.
pub type Stored<'a> = (&'a [u8], Cow<'a, [u8]>, i64);
