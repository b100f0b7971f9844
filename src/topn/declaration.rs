//! What `TOPN.CREATE` declares, its defaults filled in ([`Declaration`]): what a key compares
//! a second CREATE with, and what its creation replicates and its AOF rewrite writes. Pure
//! Rust, no FFI.

use super::views::Views;
use std::fmt;

/// A key's declaration: its shape in the commands' units, its CAPACITY, its views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Declaration {
    pub bucket_s: i64,
    pub window: u32,
    pub align_s: i64,
    pub capacity: Option<u32>,
    pub views: Views,
}

/// An option of `TOPN.CREATE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyword {
    Bucket,
    Window,
    Align,
    Capacity,
    Views,
}

/// A word of a declaration spelled out: an option's name or a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    Keyword(Keyword),
    Int(i64),
}

impl Keyword {
    pub fn name(self) -> &'static str {
        match self {
            Keyword::Bucket => "BUCKET",
            Keyword::Window => "WINDOW",
            Keyword::Align => "ALIGN",
            Keyword::Capacity => "CAPACITY",
            Keyword::Views => "VIEWS",
        }
    }
}

impl Declaration {
    /// The options of a `TOPN.CREATE` that declares it whatever the defaults: BUCKET and
    /// WINDOW, ALIGN only when not 0 (so a key without it replicates as before ALIGN
    /// existed), CAPACITY and VIEWS when it has them.
    pub fn tokens(&self) -> Vec<Token> {
        let mut out = vec![
            Token::Keyword(Keyword::Bucket),
            Token::Int(self.bucket_s),
            Token::Keyword(Keyword::Window),
            Token::Int(self.window.into()),
        ];
        if self.align_s != 0 {
            out.extend([Token::Keyword(Keyword::Align), Token::Int(self.align_s)]);
        }
        if let Some(c) = self.capacity {
            out.extend([Token::Keyword(Keyword::Capacity), Token::Int(c.into())]);
        }
        if !self.views.is_empty() {
            out.push(Token::Keyword(Keyword::Views));
            out.extend(self.views.iter().map(|k| Token::Int(k.into())));
        }
        out
    }
}

impl fmt::Display for Declaration {
    /// `BUCKET b WINDOW w ALIGN a [CAPACITY m] [VIEWS k ...]`: how a refused CREATE shows
    /// the key's declaration and the one it asked for.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, w, a) = (self.bucket_s, self.window, self.align_s);
        write!(f, "BUCKET {b} WINDOW {w} ALIGN {a}")?;
        if let Some(c) = self.capacity {
            write!(f, " CAPACITY {c}")?;
        }
        if !self.views.is_empty() {
            write!(f, " {}", self.views)?;
        }
        Ok(())
    }
}
