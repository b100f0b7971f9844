//! The only `unsafe` code of TOPN, behind a small safe API used by the full layout:
//! [`NameTable`], the member slots (interned names, one heap block `[id][len][bytes]` each,
//! plus caller data) together with the order index of each running sum, whose 16-byte keys
//! are non-owning pointers to those blocks. Keeping the names and the keys that point at them
//! in one type lets this module uphold, by itself, the invariant that makes the key reads
//! sound: a name block is freed only after its keys have left every index. Active defrag moves
//! name blocks too, and re-points the keys that point at them within the same step
//! ([`NameTable::defrag`]).
//!
//! Files: this one (disposal of big values), `names.rs` ([`NameTable`] and the keys of its
//! indexes; `Name` and `Key` are private to it, which is what keeps the invariant in one
//! place).

use std::sync::OnceLock;

mod names;
#[cfg(test)]
mod names_tests;

pub(in crate::topn) use names::{Key, NameTable};

/// Where big values that are no longer needed go (a bucket freed, a graveyard's pieces):
/// freeing megabytes costs the thread that frees them about a millisecond (the pages go back
/// to the system), so the server layer sets a background dropper. Unset (unit tests), they are
/// dropped in place.
static DISPOSER: OnceLock<fn(Box<dyn Send>)> = OnceLock::new();

/// Values of at least this many heap bytes are disposed of through the disposer.
const DISPOSE_BYTES: usize = 256 << 10;

/// Sets the disposer (once; later calls are ignored).
pub fn set_disposer(f: fn(Box<dyn Send>)) {
    let _ = DISPOSER.set(f);
}

/// Drops `value`, which holds `bytes` of heap, through the disposer when that is a lot.
pub(in crate::topn) fn dispose_value<T: Send + 'static>(value: T, bytes: usize) {
    if bytes >= DISPOSE_BYTES {
        if let Some(f) = DISPOSER.get() {
            return f(Box::new(value));
        }
    }
    drop(value)
}

#[cfg(test)]
mod tests {
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
}
