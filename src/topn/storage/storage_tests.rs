//! Tests of `storage/mod.rs`.

use super::*;

#[test]
fn name_table_keys_follow_slots() {
    let mut t: NameTable<u8> = NameTable::new(1, 0);
    let a = t.push(b"a", 1);
    let b = t.push(b"bb", 2);
    t.set_total(0, a, 1);
    t.set_total(0, b, 5);
    let order: Vec<(i64, u32, Vec<u8>)> = t
        .iter(0)
        .map(|k| (k.total(), k.id(), k.bytes().to_vec()))
        .collect();
    assert_eq!(order, vec![(5, b, b"bb".to_vec()), (1, a, b"a".to_vec())]);
    assert_eq!(t.free(b), 2);
    assert_eq!(t.indexed(0), 1);
    t.refill(b, b"c", 3);
    assert!(!t.index_contains(0, b));
    t.suspend_indexes();
    t.set_total(0, b, 4);
    assert!(!t.index_contains(0, b));
    t.rebuild_indexes();
    assert!(t.index_contains(0, a) && t.index_contains(0, b));
    let mut c = t.copy_names();
    drop(t);
    assert_eq!(c.name(b), b"c");
    assert_eq!((c.total(0, b), c.indexed(0)), (0, 0));
    c.suspend_indexes();
    c.set_total(0, b, 4);
    c.rebuild_indexes();
    assert!(c.index_contains(0, b));
    while c.pop_step() {}
    assert_eq!(c.indexed(0), 0);
    c.release();
    assert!(c.is_freed());
}
