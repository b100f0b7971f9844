//! The core ULIST and HCOUNTER share, pure Rust without FFI: schemas of
//! named values, the order-preserving tuple encoding, the partition index
//! and expiry queues.

pub mod encoding;
pub mod expiry;
pub mod index;
pub mod schema;
