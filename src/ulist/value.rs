//! The ULIST module type: a [`UList`] in a key, with its persistence callbacks.

use super::format;
use super::list::UList;
use crate::server::module_type::{type_methods, AofWriter, ModuleValue};
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::schema::{DecodeError, Schema};
use crate::tuples::version::Version;
use redis_module::native_types::RedisType;
use std::os::raw::c_int;

/// Registered as `recipesUL` (Redis type names are exactly 9 characters).
pub static ULIST_TYPE: RedisType = RedisType::new(
    UList::TYPE_NAME,
    UList::ENCODING_VERSION,
    type_methods::<UList>(),
);

impl ModuleValue for UList {
    const TYPE_NAME: &'static str = "recipesUL";
    /// New data is written with the current version (`format.rs`); data
    /// written with any earlier one must always load.
    const ENCODING_VERSION: c_int = format::CURRENT as c_int;
    type DecodeError = DecodeError;

    fn encode(&self) -> Vec<u8> {
        format::encode(self, format::CURRENT)
    }

    fn decode(bytes: &[u8], encver: c_int) -> Result<Self, DecodeError> {
        let version =
            Version::from_number(encver).ok_or(DecodeError::UnknownVersion(encver.into()))?;
        format::decode(bytes, version, super::config::COMPACT_MAX.count())
    }

    fn placeholder() -> Self {
        UList::new(Schema::default(), None)
    }

    fn mem_usage(&self) -> usize {
        UList::mem_usage(self, 0)
    }

    fn mem_usage_sampled(&self, samples: usize) -> usize {
        UList::mem_usage(self, samples)
    }

    fn free_effort(&self) -> usize {
        UList::free_effort(self)
    }

    fn rewrite(&self, aof: &AofWriter) {
        super::rewrite::commands(self, &mut |cmd, args| aof.emit(cmd, args));
    }

    fn next_due(&self) -> Option<i64> {
        UList::next_due(self)
    }

    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        UList::defrag(self, pass)
    }
}
