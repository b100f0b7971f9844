//! A ULIST under an active-defrag pass (`tuples::defrag`), with a model
//! allocator that moves every block it is offered: the list reads and
//! encodes the same afterwards, whether the pass ran in one call or was
//! stopped and resumed many times, and each slice offers each block once.

use super::list::{UList, ValueKeys, DECLARATION, NEVER};
use crate::tuples::defrag::model::in_slices;
use crate::tuples::schema::Schema;

/// `n` values over 7 scopes and 13 partitions; every third value long
/// enough to spill out of its record, every other one expiring.
fn list(n: usize) -> UList {
    let schema = Schema::declared(
        &["VALUE", "v", "SCOPE", "s", "PARTITION", "p"],
        &DECLARATION,
    );
    let mut list = UList::new(schema, None);
    for i in 0..n {
        let value = match i % 3 {
            0 => format!("a value long enough to spill {i}"),
            _ => i.to_string(),
        };
        let expire_at = if i % 2 == 0 { NEVER } else { 10_000 + i as i64 };
        let (scope, partition) = ((i % 7).to_string(), (i % 13).to_string());
        let keys = ValueKeys::new(
            [scope.as_bytes()],
            [partition.as_bytes()],
            [value.as_bytes()],
        );
        assert!(list.add(&keys, 1_000, expire_at));
    }
    list
}

#[test]
fn a_pass_moves_every_block_once_and_the_list_reads_the_same() {
    // Compact, hashed with small trees, hashed with big ones.
    for n in [5, 900, 5_000] {
        let mut whole = list(n);
        let before = whole.encode();
        let (moved, calls) = in_slices(usize::MAX, |pass| whole.defrag(pass));
        assert_eq!((calls, whole.encode()), (1, before.clone()), "{n} values");
        for checks in [0, 1, 7] {
            let mut sliced = list(n);
            let (moved_sliced, calls) = in_slices(checks, |pass| sliced.defrag(pass));
            assert_eq!(
                moved_sliced.len(),
                moved.len(),
                "{n} values, {checks} checks"
            );
            assert!(n < 100 || calls > 1, "{n} values: {calls} calls");
            assert_eq!(sliced.encode(), before, "{n} values, {checks} checks");
            // Still a working list: old values found, a new one added.
            let old = ValueKeys::new([b"1".as_slice()], [], [b"1".as_slice()]);
            assert!(sliced.has(&old, 2_000));
            let new = ValueKeys::new([b"1".as_slice()], [b"1".as_slice()], [b"new".as_slice()]);
            assert!(sliced.add(&new, 2_000, NEVER));
        }
    }
}
