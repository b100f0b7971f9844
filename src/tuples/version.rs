//! The encoding versions of the ULIST and HCOUNTER payloads in RDB and DUMP
//! (each family's `format.rs` says what a version holds and which it writes).

/// An encoding version, as the RDB names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1 = 1,
    V2 = 2,
}

impl Version {
    pub fn from_number(n: i32) -> Option<Version> {
        match n {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            _ => None,
        }
    }
}
