//! The commands that rebuild a list, for AOF rewrite: pure argument
//! building (`value.rs` hands them to the server).

use super::list::{UList, NEVER};
use crate::tuples::schema::Role;
use std::ffi::CStr;

/// `ULIST.CREATE` with the schema, then one `ULIST.ADD ... AT 0` per
/// stored value with its absolute expiry (`PXAT`) or `NEVER`.
pub fn commands(list: &UList, emit: &mut dyn FnMut(&CStr, &[&[u8]])) {
    let create = list.declaration();
    emit(
        c"ULIST.CREATE",
        &create.iter().map(Vec::as_slice).collect::<Vec<_>>(),
    );
    let schema = list.schema();
    for (scope, partition, value, expire_at) in list.entries() {
        let expiry = expire_at.to_string();
        let mut args: Vec<&[u8]> = vec![b"AT", b"0"];
        if expire_at == NEVER {
            args.push(b"NEVER");
        } else {
            args.extend([&b"PXAT"[..], expiry.as_bytes()]);
        }
        let named = [
            (schema.of(Role::Value), &value),
            (schema.of(Role::Scope), &scope),
            (schema.of(Role::Partition), &partition),
        ];
        for (names, values) in named {
            for (&name, value) in names.iter().zip(values.iter()) {
                args.push(schema.name(name));
                args.push(value);
            }
        }
        emit(c"ULIST.ADD", &args);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuples::schema::Schema;
    use crate::ulist::list::{ValueKeys, DECLARATION};

    fn rewritten(list: &UList) -> Vec<String> {
        let mut out = Vec::new();
        commands(list, &mut |cmd, args| {
            let mut line = cmd.to_string_lossy().into_owned();
            for a in args {
                line.push(' ');
                line.push_str(&String::from_utf8_lossy(a));
            }
            out.push(line);
        });
        out
    }

    #[test]
    fn a_list_is_rebuilt_by_create_then_one_add_per_value() {
        let schema = Schema::declared(
            &["VALUE", "user", "SCOPE", "month", "PARTITION", "day"],
            &DECLARATION,
        );
        let mut list = UList::new(schema, Some(60));
        let add = |list: &mut UList, user: &[u8], expire_at| {
            let keys = ValueKeys::new([&b"2024-05"[..]], [&b"d1"[..]], [user]);
            assert!(list.add(&keys, 0, expire_at));
        };
        add(&mut list, b"u1", NEVER);
        add(&mut list, b"u2", 5_000);
        assert_eq!(
            rewritten(&list),
            [
                "ULIST.CREATE VALUE user SCOPE month PARTITION day EXPIRE 60",
                "ULIST.ADD AT 0 NEVER user u1 month 2024-05 day d1",
                "ULIST.ADD AT 0 PXAT 5000 user u2 month 2024-05 day d1",
            ]
        );
    }
}
