//! A TOPN key's declared views (`TOPN.CREATE ... VIEWS k [k ...]`): windows of the k newest
//! buckets whose per-member totals a full key keeps running beside the whole window's
//! (`layout/full/key.rs`'s `Sums`). Part of the declaration, kept as a set (ascending, each k once), so
//! `VIEWS 12 6` and `VIEWS 6 12` declare the same key. Pure Rust, no FFI.

use super::error::{Error, MAX_VIEWS};
use std::fmt;

/// The declared views: each k ascending, `2 <= k < WINDOW`, at most `MAX_VIEWS`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Views {
    ks: [u32; MAX_VIEWS],
    len: u8,
}

impl Views {
    /// No views (every key before VIEWS existed).
    pub const NONE: Views = Views {
        ks: [0; MAX_VIEWS],
        len: 0,
    };

    /// The views `ks` (any order) of a key of `window` buckets, or why they are refused.
    pub fn new(ks: &[i64], window: u32) -> Result<Views, Error> {
        if ks.len() > MAX_VIEWS {
            return Err(Error::ViewsTooMany);
        }
        let mut views = Views::NONE;
        if !ks.is_empty() && window < 3 {
            return Err(Error::ViewsSmallWindow(window));
        }
        for &k in ks {
            if k < 2 || k >= i64::from(window) {
                return Err(Error::ViewsOutside { window, k });
            }
            if views.iter().any(|v| i64::from(v) == k) {
                return Err(Error::ViewsRepeated(k));
            }
            views.ks[views.len as usize] = k as u32;
            views.len += 1;
        }
        views.ks[..views.len as usize].sort_unstable();
        Ok(views)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// The k of each view, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ks[..self.len as usize].iter().copied()
    }
}

impl fmt::Display for Views {
    /// `VIEWS 6 12`, or nothing without views (the declaration's words).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.is_empty() {
            f.write_str("VIEWS")?;
        }
        for k in self.iter() {
            write!(f, " {k}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
