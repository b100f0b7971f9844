//! The HCOUNTER module type: an [`HCounter`] in a key, with its persistence
//! callbacks.

use super::counter::HCounter;
use crate::server::module_type::{type_methods, AofWriter, ModuleValue};
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::schema::DecodeError;
use redis_module::native_types::RedisType;
use std::os::raw::c_int;

/// Registered as `recipesHC` (Redis type names are exactly 9 characters).
pub static HCOUNTER_TYPE: RedisType = RedisType::new(
    HCounter::TYPE_NAME,
    HCounter::ENCODING_VERSION,
    type_methods::<HCounter>(),
);

/// The first encoding (`HCounter::encode`). Data written with it must always load.
pub const HCOUNTER_ENCODING_V1: c_int = 1;

impl ModuleValue for HCounter {
    const TYPE_NAME: &'static str = "recipesHC";
    const ENCODING_VERSION: c_int = HCOUNTER_ENCODING_V1;
    type DecodeError = DecodeError;

    fn encode(&self) -> Vec<u8> {
        HCounter::encode(self)
    }

    fn decode(bytes: &[u8], encver: c_int) -> Result<Self, DecodeError> {
        match encver {
            HCOUNTER_ENCODING_V1 => HCounter::decode(bytes, super::COMPACT_MAX.count()),
            _ => Err(DecodeError::Invalid("unknown encoding version")),
        }
    }

    fn mem_usage(&self) -> usize {
        HCounter::mem_usage(self, 0)
    }

    fn mem_usage_sampled(&self, samples: usize) -> usize {
        HCounter::mem_usage(self, samples)
    }

    fn free_effort(&self) -> usize {
        HCounter::free_effort(self)
    }

    fn rewrite(&self, aof: &AofWriter) {
        super::rewrite::commands(self, &mut |cmd, args| aof.emit(cmd, args));
    }

    fn next_due(&self) -> Option<i64> {
        HCounter::next_due(self)
    }

    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        HCounter::defrag(self, pass)
    }
}
