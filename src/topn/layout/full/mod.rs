//! The full layout of an exact TOPN key: every member of every bucket of its window, with
//! running sums that make the usual reads a walk of n index keys. Pure Rust, std only, no FFI.
//! The design text of TOPN (`docs/design.md#topn` points here).
//!
//! **The window.** Time is cut into buckets (`Shape`, which owns the rules: which bucket a time
//! is in, the key's window, what a read covers, when a bucket is sealed). The key's *clock* is
//! the newest bucket ever written; its window is the WINDOW buckets up to it. A bucket older
//! than that is *stale*: no read sees it, and upkeep frees it.
//!
//! **State, in three parts by type** ([`Full`], `key.rs`):
//! - [`Content`], what the encoding writes: the shape and clock, the declared views, the member
//!   names and each stored bucket's entries. Compared, copied and encoded as such.
//! - [`Sums`], derived: running sums of the members' counts, each over the newest k buckets
//!   at the key's newest time (the server's time, or the clock when later), with an order index
//!   of the members by total (`storage::NameTable`): the *window*'s (k = WINDOW; the running
//!   total), then one a declared view (`VIEWS k`). A load or a copy rebuilds them from the
//!   content; no answer depends on how far upkeep moved them.
//! - [`Upkeep`]: the server's time seen, the stale bucket being freed, graveyards of states
//!   the clock jumped past, counters for INFO. A copy starts without any.
//!
//! **A bucket's life** (`bucket.rs`): open while it takes the usual writes (entries in the order
//! they came, found by id), sealing once a newer bucket exists or the server's time has been
//! past its end a second (frozen while upkeep sorts it in slices), then sealed (sorted by id, 12
//! bytes an entry). Later writes go to its late entries, or update a sealed entry in place.
//!
//! **A sum's reach.** A sum holds every stored bucket newer than its `lo`, and of bucket `lo` the
//! entries from position `pos` on ([`Reach`]). A write adds to each sum that holds the entry it
//! writes. When the server's time (or the clock) moves, a sum walks out of its oldest buckets, a
//! bounded slice at a time, by position (so writes may land meanwhile: an entry left behind
//! is never counted again, one ahead is counted until the walk reaches it); the walk waits for
//! the bucket to be sealed. Freeing a stale bucket walks it the same way for every sum at once,
//! and releases its members (a member is freed with its last entry). When the clock jumps past
//! the whole window, the old state moves to a graveyard freed piecewise. All of it runs in
//! bounded slices: a budget of work units per write, and the upkeep timer (`upkeep.rs`).
//!
//! **Reads** (`read.rs`) are exact in every state: the read window's counts are one sum's
//! totals corrected by *fixes* (the buckets it holds outside the window, subtracted; those of
//! the window it does not hold, added). With no fix, a read is a walk of n index keys: every
//! read at the server's time once upkeep caught up, and a view's window. Otherwise a walk that
//! corrects each candidate with lookups, taken only when the first keys prove it stops within
//! a quarter of the cheapest sum; else that sum, into dense accumulators (`accumulator.rs`).
//!
//! Files, lowest first (none uses a file above it): `accumulator.rs` (the sums' accumulators),
//! `entries.rs`, `sealed.rs` and `bucket.rs` (a bucket), `members.rs` (names and their
//! lookup), `graveyard.rs`, `key.rs` (the type and its three parts), then `write.rs`,
//! `upkeep.rs`, `read.rs`, `encoding.rs` and `defrag.rs`, each adding its operations to
//! [`Full`]; this file only declares them.

mod accumulator;
mod bucket;
mod defrag;
mod encoding;
mod entries;
mod graveyard;
mod key;
mod members;
mod read;
mod sealed;
#[cfg(test)]
mod seen;
mod upkeep;
mod write;

pub use accumulator::{tend as tend_read_buffers, READ_BUFFER_BYTES, TICK_MS};
pub use key::Full;

#[cfg(test)]
mod align_tests;
#[cfg(test)]
mod boundary_tests;
#[cfg(test)]
mod defrag_tests;
#[cfg(test)]
mod encoding_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod views_tests;
