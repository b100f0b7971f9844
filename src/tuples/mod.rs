//! The core ULIST and HCOUNTER share, pure Rust without FFI: schemas of
//! named values, the order-preserving tuple encoding, the partition index,
//! expiry queues, and the containers that never move much at once (a chunked
//! vector, a hash table grown by linear hashing).
//!
//! Uses only the pure helpers (`args`, `stats`, `release`): never `server`
//! nor a family (`tests/import_circles.rs` holds it to that).

pub mod chunked;
pub mod defrag;
pub mod encoding;
pub mod expiry;
pub mod index;
pub mod keywords;
pub mod ordered;
pub mod page;
pub mod prefetch;
pub mod sample;
pub mod schema;
mod shards;
pub mod table;
pub mod varint;
pub mod version;
