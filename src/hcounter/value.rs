//! The HCOUNTER module type: an [`HCounter`] in a key, with its persistence
//! callbacks.

use super::command::DECLARATION;
use super::counter::HCounter;
use crate::server::module_type::{type_methods, AofWriter, ModuleValue};
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::encoding;
use crate::tuples::schema::{DecodeError, Role};
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

    /// `HCOUNTER.CREATE` with the schema, then per partition its unique
    /// tuples (`HCOUNTER.SEEN`) and its cells (`HCOUNTER.SET`), each at the
    /// partition's latest AT.
    fn rewrite(&self, aof: &AofWriter) {
        let schema = self.schema();
        let mut create = schema.create_args(&DECLARATION);
        if let Some(s) = self.ttl_s() {
            create.extend([b"TTL".to_vec(), s.to_string().into_bytes()]);
        }
        if self.is_float() {
            create.push(b"FLOAT".to_vec());
        }
        aof.emit(
            c"HCOUNTER.CREATE",
            &create.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        );
        let partition_names = schema.of(Role::Partition);
        let tuple_names: Vec<u16> = [Role::Scope, Role::Unique]
            .iter()
            .flat_map(|&r| schema.of(r).iter().copied())
            .collect();
        for (key, last_at, cells, seen) in self.entries() {
            let partition = encoding::decode(key).unwrap_or_default();
            let at = last_at.to_string();
            // `names` with `values`, each name once (a name of two roles
            // has one value).
            let args_of = |names: &[u16], values: &[Vec<u8>]| {
                let mut pairs: Vec<(u16, Vec<u8>)> = partition_names
                    .iter()
                    .copied()
                    .zip(partition.iter().cloned())
                    .collect();
                for (&n, v) in names.iter().zip(values) {
                    if !pairs.iter().any(|(m, _)| *m == n) {
                        pairs.push((n, v.clone()));
                    }
                }
                let mut args = vec![b"AT".to_vec(), at.clone().into_bytes()];
                for (n, v) in pairs {
                    args.extend([schema.name(n).to_vec(), v]);
                }
                args
            };
            let emit = |cmd, args: Vec<Vec<u8>>| {
                aof.emit(cmd, &args.iter().map(Vec::as_slice).collect::<Vec<_>>());
            };
            for tuple in seen {
                let values = encoding::decode(tuple).unwrap_or_default();
                emit(c"HCOUNTER.SEEN", args_of(&tuple_names, &values));
            }
            for (cell, count) in cells {
                let values = encoding::decode(&cell).unwrap_or_default();
                let mut args = args_of(self.cell_names(), &values);
                args.insert(0, count.to_string().into_bytes());
                emit(c"HCOUNTER.SET", args);
            }
        }
    }

    fn next_due(&self) -> Option<i64> {
        HCounter::next_due(self)
    }

    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        HCounter::defrag(self, pass)
    }
}
