//! Every refusal of TOPN, worded in one place ([`Error`]), and every limit a declaration, a
//! write or an encoding is held to. A refused command or payload changes nothing. Pure Rust,
//! no FFI.

use crate::args::CmdError;
use crate::tuples::schema::newer_release;
use std::fmt;

/// Bucket width, in seconds, at most (a year).
pub const MAX_BUCKET_S: i64 = 31_536_000;
/// Buckets a window holds at most.
pub const MAX_WINDOW: u32 = 100_000;
/// Counters a CAPACITY key keeps at most a bucket, whatever CAPACITY asks.
pub const MAX_CAPACITY: u32 = 10_000;
/// Views a key declares at most.
pub const MAX_VIEWS: usize = 8;
/// Member bytes a bucket of a CAPACITY key holds at most: a write past it is refused as an
/// overflow, a function of the content like every refusal.
pub const MAX_NAME_BYTES: usize = 1 << 30;

/// A layout's refusal of an increment: a count or a window total would pass the range of an
/// i64 (or a bucket's member bytes their limit); nothing was changed. The command words it
/// ([`Refused::Overflow`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// Why a write refused an increment (the first it refused: then nothing changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// See [`Overflow`].
    Overflow,
    /// An increment below 1 on a key with CAPACITY.
    NotPositive,
}

/// What TOPN refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    // Declarations.
    AlignPastBucket {
        bucket_s: i64,
        align_s: i64,
    },
    ViewsTwice,
    ViewsEmpty,
    ViewsNotInteger(String),
    ViewsTooMany,
    ViewsSmallWindow(u32),
    ViewsOutside {
        window: u32,
        k: i64,
    },
    ViewsRepeated(i64),
    ViewsWithCapacity,
    OtherShape {
        has: String,
        asked: String,
    },
    // Writes: `TOPN.INCR`'s refusal, or `TOPN.INCRBY`'s with the argument of the pair.
    Incr(Refused),
    Incrby {
        argument: usize,
        refused: Refused,
    },
    IncrementNotInteger(usize),
    NotCreated,
    // Reads.
    LastNotInteger(String),
    LastOutside {
        window: Option<u32>,
        k: i64,
    },
    LastOnTop24,
    Top24Window,
    NoSuchKey,
    // `TOPN.SETCOUNTER` (an AOF rewrite's counters of a CAPACITY key; its encoding's too).
    SetCounterFromClient,
    EvictedOrKept,
    NoCapacity,
    CounterRange,
    CounterOutside,
    PastCapacity,
    MembersPastLimit,
    // Payloads.
    Truncated,
    UnknownVersion(i64),
    Invalid(&'static str),
    /// A payload holds what a command would refuse (a CAPACITY key's counter).
    Payload(Box<Error>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let positive = "must be a positive integer on a key with CAPACITY";
        match self {
            Error::AlignPastBucket { bucket_s, align_s } => write!(
                f,
                "ALIGN must be less than BUCKET ({bucket_s} s), got {align_s}"
            ),
            Error::ViewsTwice => f.write_str("VIEWS given more than once"),
            Error::ViewsEmpty => f.write_str("VIEWS needs a value"),
            Error::ViewsNotInteger(got) => write!(
                f,
                "VIEWS must be integers between 2 and the key's WINDOW - 1, got '{got}'"
            ),
            Error::ViewsTooMany => write!(f, "VIEWS takes at most {MAX_VIEWS} windows"),
            Error::ViewsSmallWindow(window) => write!(
                f,
                "VIEWS needs a WINDOW of at least 3 (the key's WINDOW is {window})"
            ),
            Error::ViewsOutside { window, k } => write!(
                f,
                "VIEWS must be integers between 2 and the key's WINDOW - 1 ({}), got {k}",
                i64::from(*window) - 1
            ),
            Error::ViewsRepeated(k) => write!(f, "VIEWS names {k} twice"),
            Error::ViewsWithCapacity => f.write_str(
                "VIEWS does not apply to a key with CAPACITY (its reads sum bounded counters)",
            ),
            Error::OtherShape { has, asked } => write!(
                f,
                "the key exists with another shape: {has} (asked: {asked})"
            ),
            Error::Incr(Refused::Overflow) => f.write_str("increment or decrement would overflow"),
            Error::Incr(Refused::NotPositive) => write!(f, "BY {positive}"),
            Error::Incrby { argument, refused } => match refused {
                Refused::Overflow => write!(
                    f,
                    "increment (argument {argument}) would overflow its member's count"
                ),
                Refused::NotPositive => {
                    write!(f, "increment (argument {argument}) {positive}")
                }
            },
            Error::IncrementNotInteger(argument) => {
                write!(f, "increment (argument {argument}) must be an integer")
            }
            Error::NotCreated => f.write_str("could not create the key"),
            Error::LastNotInteger(got) => write!(
                f,
                "LAST must be an integer between 1 and the key's WINDOW, got '{got}'"
            ),
            Error::LastOutside { window, k } => {
                let shown = window.map_or(String::new(), |w| format!(" ({w})"));
                write!(
                    f,
                    "LAST must be an integer between 1 and the key's WINDOW{shown}, got {k}"
                )
            }
            Error::LastOnTop24 => f.write_str("unknown option 'LAST'"),
            Error::Top24Window => {
                f.write_str("TOP24 needs a window covering 24 hours in whole buckets")
            }
            Error::NoSuchKey => f.write_str("no such key"),
            Error::SetCounterFromClient => {
                f.write_str("TOPN.SETCOUNTER only replays an AOF; write with TOPN.INCR")
            }
            Error::EvictedOrKept => f.write_str("the last argument is EVICTED or KEPT"),
            Error::NoCapacity => f.write_str("the key has no CAPACITY"),
            Error::CounterRange => {
                f.write_str("a counter's count must be positive and its error within it")
            }
            Error::CounterOutside => f.write_str("a counter outside the window"),
            Error::PastCapacity => f.write_str("more counters than the capacity"),
            Error::MembersPastLimit => f.write_str("a bucket's members past 1 GiB"),
            Error::Truncated => f.write_str("truncated TOPN encoding"),
            Error::UnknownVersion(v) => write!(f, "TOPN {}", newer_release(*v)),
            Error::Invalid(why) => write!(f, "invalid TOPN encoding: {why}"),
            Error::Payload(e) => write!(f, "invalid TOPN encoding: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for CmdError {
    fn from(e: Error) -> CmdError {
        CmdError::invalid(e.to_string())
    }
}
