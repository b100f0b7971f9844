//! The commands that rebuild a counter, for AOF rewrite: pure argument
//! building (`value.rs` hands them to the server).

use super::counter::HCounter;
use crate::tuples::encoding;
use crate::tuples::schema::Role;
use std::ffi::CStr;

fn emit_owned(emit: &mut dyn FnMut(&CStr, &[&[u8]]), cmd: &CStr, args: Vec<Vec<u8>>) {
    emit(cmd, &args.iter().map(Vec::as_slice).collect::<Vec<_>>());
}

/// `HCOUNTER.CREATE` with the schema, then per partition its unique
/// tuples (`HCOUNTER.SEEN`) and its cells (`HCOUNTER.SET`), each at the
/// partition's latest AT.
pub fn commands(counter: &HCounter, emit: &mut dyn FnMut(&CStr, &[&[u8]])) {
    let schema = counter.schema();
    let create = counter.declaration();
    emit(
        c"HCOUNTER.CREATE",
        &create.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    let partition_names = schema.of(Role::Partition);
    let tuple_names: Vec<u16> = [Role::Scope, Role::Unique]
        .iter()
        .flat_map(|&r| schema.of(r).iter().copied())
        .collect();
    for (key, last_at, cells, seen) in counter.entries() {
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
        for tuple in seen {
            let values = encoding::decode(tuple).unwrap_or_default();
            emit_owned(emit, c"HCOUNTER.SEEN", args_of(&tuple_names, &values));
        }
        for (cell, count) in cells {
            let values = encoding::decode(&cell).unwrap_or_default();
            let mut args = args_of(counter.cell_names(), &values);
            args.insert(0, count.to_string().into_bytes());
            emit_owned(emit, c"HCOUNTER.SET", args);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hcounter::counter::{Count, Place, DECLARATION};
    use crate::tuples::schema::Schema;

    fn encoded(values: &[&str]) -> smallvec::SmallVec<[u8; 64]> {
        let mut out = smallvec::SmallVec::new();
        values
            .iter()
            .for_each(|v| encoding::push_element(&mut out, v.as_bytes()));
        out
    }

    #[test]
    fn a_counter_is_rebuilt_by_create_then_its_tuples_and_cells() {
        let schema = Schema::declared(
            &["PARTITION", "day", "GROUP", "page", "UNIQUE", "user"],
            &DECLARATION,
        );
        let mut counter = HCounter::new(schema, Some(60), false);
        let place = Place {
            partition: encoded(&["d1"]),
            cell: encoded(&["home"]).into_iter().collect(),
            seen: encoded(&["u1"]),
        };
        assert!(counter.incr(&place, Count::Int(3), 1_000).unwrap().counted);
        let mut lines = Vec::new();
        commands(&counter, &mut |cmd, args| {
            let words = args.iter().map(|a| String::from_utf8_lossy(a).into_owned());
            let words: Vec<String> = std::iter::once(cmd.to_string_lossy().into_owned())
                .chain(words)
                .collect();
            lines.push(words.join(" "));
        });
        assert_eq!(
            lines,
            [
                "HCOUNTER.CREATE PARTITION day GROUP page UNIQUE user TTL 60",
                "HCOUNTER.SEEN AT 1000 day d1 user u1",
                "HCOUNTER.SET 3 AT 1000 day d1 page home",
            ]
        );
    }
}
