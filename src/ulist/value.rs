//! The ULIST module type: a [`UList`] in a key, with its persistence callbacks.

use super::command::DECLARATION;
use super::list::{UList, NEVER};
use crate::server::module_type::{type_methods, AofWriter, ModuleValue};
use crate::tuples::defrag::{Mover, Pass};
use crate::tuples::schema::DecodeError;
use redis_module::native_types::RedisType;
use std::os::raw::c_int;

/// Registered as `recipesUL` (Redis type names are exactly 9 characters).
pub static ULIST_TYPE: RedisType = RedisType::new(
    UList::TYPE_NAME,
    UList::ENCODING_VERSION,
    type_methods::<UList>(),
);

/// The first encoding (`UList::encode`). Data written with it must always load.
pub const ULIST_ENCODING_V1: c_int = 1;

impl ModuleValue for UList {
    const TYPE_NAME: &'static str = "recipesUL";
    const ENCODING_VERSION: c_int = ULIST_ENCODING_V1;
    type DecodeError = DecodeError;

    fn encode(&self) -> Vec<u8> {
        UList::encode(self)
    }

    fn decode(bytes: &[u8], encver: c_int) -> Result<Self, DecodeError> {
        match encver {
            ULIST_ENCODING_V1 => UList::decode(bytes, super::COMPACT_MAX.count()),
            _ => Err(DecodeError::Invalid("unknown encoding version")),
        }
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

    /// `ULIST.CREATE` with the schema, then one `ULIST.ADD ... AT 0` per
    /// stored value with its absolute expiry (`PXAT`) or `NEVER`.
    fn rewrite(&self, aof: &AofWriter) {
        let mut create = self.schema().create_args(&DECLARATION);
        if let Some(s) = self.default_expire_s() {
            create.push(b"EXPIRE".to_vec());
            create.push(s.to_string().into_bytes());
        }
        aof.emit(
            c"ULIST.CREATE",
            &create.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        );
        let schema = self.schema();
        for (scope, partition, value, expire_at) in self.entries() {
            let expiry = expire_at.to_string();
            let mut args: Vec<&[u8]> = vec![b"AT", b"0"];
            if expire_at == NEVER {
                args.push(b"NEVER");
            } else {
                args.extend([&b"PXAT"[..], expiry.as_bytes()]);
            }
            let named = [
                (schema.of(crate::tuples::schema::Role::Value), &value),
                (schema.of(crate::tuples::schema::Role::Scope), &scope),
                (
                    schema.of(crate::tuples::schema::Role::Partition),
                    &partition,
                ),
            ];
            for (names, values) in named {
                for (&name, value) in names.iter().zip(values.iter()) {
                    args.push(schema.name(name));
                    args.push(value);
                }
            }
            aof.emit(c"ULIST.ADD", &args);
        }
    }

    fn next_due(&self) -> Option<i64> {
        UList::next_due(self)
    }

    fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        UList::defrag(self, pass)
    }
}
