//! The full layout of an exact TOPN key: every member of every bucket of its window, with
//! running sums that make the usual reads a walk of n index keys. Pure Rust, std only, no FFI.
//! How it works is TOPN's design text, `docs/design.md#topn`: state in three parts (`key.rs`:
//! what is encoded, the running sums derived from it, upkeep's state), a bucket's life in
//! three stages (open, sealing, sealed), each sum's reach, upkeep and reads.
//!
//! Files, lowest first (none uses a file above it): `accumulator.rs` (the sums'
//! accumulators), `entries.rs`, `sealed.rs` and `bucket.rs` (a bucket), `members.rs` (names
//! and their lookup), `graveyard.rs`, `key.rs` (the type and its three parts), then
//! `write.rs`, `upkeep.rs`, `read.rs`, `encoding.rs` and `defrag.rs`, each adding its
//! operations to [`Full`]; this file only declares them. Tests: `tests.rs` (helpers, the
//! invariants, reads), `model_tests.rs`, `rules_tests.rs`, `encoding_tests.rs`,
//! `align_tests.rs`, `views_tests.rs`, `boundary_tests.rs`, `defrag_tests.rs`; `seen.rs`
//! counts the paths they check they cover.

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

pub use accumulator::{
    forked as read_buffers_forked, tend as tend_read_buffers, READ_BUFFER_BYTES, TICK_MS,
};
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
