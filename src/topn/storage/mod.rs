//! The only `unsafe` code of TOPN, behind a small safe API used by the layouts:
//!
//! - [`Cells`]: a fixed-size array of `Copy` cells initialized lazily, a chunk at a time
//!   (`MaybeUninit` storage).
//! - [`NameTable`]: the member slots (interned names, one heap block `[id][len][bytes]` each,
//!   plus a running total and caller data) together with the order index, whose 16-byte keys
//!   are non-owning pointers to those blocks. Keeping the names and the keys that point at them
//!   in one type lets this module uphold, by itself, the invariant that makes the key reads
//!   sound: a name block is freed only after its key (if any) has left the index. A second
//!   order index (the *clock* index, over a second total per slot) is built a slice at a time
//!   and kept to the same rule. Active defrag moves name blocks too, and re-points the keys
//!   that point at them within the same step ([`NameTable::defrag`]).
//!
//! Files: this one (disposal of big arrays), `cells.rs` ([`Cells`]), `names.rs`
//! ([`NameTable`] and the keys of its indexes; `Name` and `Key` are private to it, which is
//! what keeps the invariant in one place).

use std::sync::OnceLock;

mod cells;
mod names;
#[cfg(test)]
mod names_tests;

pub(in crate::topn) use cells::Cells;
pub(in crate::topn) use names::{Key, NameTable};

// ---------------------------------------------------------------------------------------------
// Disposal of big arrays.

/// Where big arrays that are no longer needed go (an old hash table once migrated): freeing
/// megabytes costs the thread that frees them about a millisecond (the pages go back to the
/// system), so the server layer sets a background dropper. Unset (unit tests), they are
/// dropped in place.
static DISPOSER: OnceLock<fn(Box<dyn Send>)> = OnceLock::new();

/// Arrays of at least this many bytes are disposed of through the disposer.
const DISPOSE_BYTES: usize = 256 << 10;

/// Sets the disposer (once; later calls are ignored).
pub fn set_disposer(f: fn(Box<dyn Send>)) {
    let _ = DISPOSER.set(f);
}

/// Drops `cells`, through the disposer when it is big.
pub(super) fn dispose<T: Copy + Send + 'static>(cells: Cells<T>) {
    let bytes = cells.heap_bytes();
    dispose_value(cells, bytes);
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
    fn init_runs_cover_every_written_cell() {
        for len in [0usize, 1, 100, 4096, 4097, 5000, 70_000] {
            let mut c = Cells::new(len, 0u32);
            for i in (0..len).step_by(977) {
                c.set(i, i as u32 + 1);
            }
            let mut seen = vec![0u32; len];
            let mut last_end = 0;
            for (lo, run) in c.init_runs() {
                assert!(lo >= last_end, "runs overlap or go backwards");
                last_end = lo + run.len();
                seen[lo..lo + run.len()].copy_from_slice(run);
            }
            assert!((0..len).all(|i| seen[i] == c.get(i)), "len {len}");
        }
    }

    #[test]
    fn name_table_keys_follow_slots() {
        let mut t: NameTable<u8> = NameTable::new();
        let a = t.push(b"a", 1);
        let b = t.push(b"bb", 2);
        t.index_insert(a);
        t.index_insert(b);
        t.set_total(b, 5);
        let order: Vec<(i64, u32, Vec<u8>)> = t
            .index_iter()
            .map(|k| (k.total(), k.id(), k.bytes().to_vec()))
            .collect();
        assert_eq!(order, vec![(5, b, b"bb".to_vec()), (0, a, b"a".to_vec())]);
        assert_eq!(t.free(b), 2);
        assert_eq!(t.index_len(), 1);
        t.refill(b, b"c", 3);
        assert!(!t.index_contains(b));
        t.set_total(b, 4);
        assert!(!t.index_contains(b));
        t.rebuild_index();
        assert!(t.index_contains(a) && t.index_contains(b));
        let c = t.clone();
        drop(t);
        assert_eq!(c.name(b), b"c");
        assert!(c.index_contains(b));
        let mut c = c;
        while c.pop_step() {}
        assert_eq!(c.index_len(), 0);
        c.release();
        assert!(c.is_freed());
    }
}
