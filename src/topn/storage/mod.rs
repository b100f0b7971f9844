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
#[path = "storage_tests.rs"]
mod tests;
