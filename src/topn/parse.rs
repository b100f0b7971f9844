//! Parsing of TOPN arguments (pure).

use super::error::{Error, MAX_BUCKET_S, MAX_CAPACITY, MAX_WINDOW};
use crate::args::{
    int_in, opt_int_in, parse_i64, parse_options, printable, CmdError, Takes, MAX_TIME_MS,
};
use smallvec::SmallVec;

/// What `create_options` finds: (BUCKET s, WINDOW, ALIGN s, CAPACITY, VIEWS), `None` =
/// default (CAPACITY: none, exact), no VIEWS = none.
pub type CreateOptions = (Option<i64>, Option<i64>, Option<i64>, Option<i64>, Vec<i64>);

/// CREATE's keywords: a VIEWS list runs to the next one.
const CREATE_KEYWORDS: [&str; 5] = ["BUCKET", "WINDOW", "ALIGN", "CAPACITY", "VIEWS"];

/// `TOPN.CREATE key [BUCKET s] [WINDOW buckets] [ALIGN s] [CAPACITY m] [VIEWS k [k ...]]`.
/// ALIGN is checked against the bucket by `align_within`, VIEWS against the window by
/// `Views::new`.
pub fn create_options(tokens: &[&[u8]]) -> Result<CreateOptions, CmdError> {
    let (tokens, views) = views_option(tokens)?;
    let [bucket, window, align, capacity] = parse_options(
        &tokens,
        &[
            ("BUCKET", Takes::Value),
            ("WINDOW", Takes::Value),
            ("ALIGN", Takes::Value),
            ("CAPACITY", Takes::Value),
        ],
    )?;
    Ok((
        opt_int_in("BUCKET", bucket, 1, MAX_BUCKET_S)?,
        opt_int_in("WINDOW", window, 1, MAX_WINDOW.into())?,
        opt_int_in("ALIGN", align, 0, MAX_BUCKET_S - 1)?,
        opt_int_in("CAPACITY", capacity, 1, i64::from(MAX_CAPACITY))?,
        views,
    ))
}

/// `VIEWS k [k ...]` taken out of CREATE's options (its values run to the next keyword or the
/// end): the other tokens, and the views' k.
fn views_option<'a>(tokens: &[&'a [u8]]) -> Result<(Vec<&'a [u8]>, Vec<i64>), CmdError> {
    let keyword = |t: &[u8]| {
        CREATE_KEYWORDS
            .iter()
            .position(|k| t.eq_ignore_ascii_case(k.as_bytes()))
    };
    let mut rest = Vec::with_capacity(tokens.len());
    let mut views: Option<Vec<i64>> = None;
    let mut i = 0;
    while i < tokens.len() {
        if keyword(tokens[i]) != Some(4) {
            // An option and its value (`parse_options` judges both).
            rest.extend(tokens.iter().skip(i).take(2));
            i += 2;
            continue;
        }
        if views.is_some() {
            return Err(Error::ViewsTwice.into());
        }
        let ks = tokens[i + 1..]
            .iter()
            .take_while(|t| keyword(t).is_none())
            .map(|k| parse_i64(k).ok_or_else(|| Error::ViewsNotInteger(printable(k)).into()))
            .collect::<Result<Vec<i64>, CmdError>>()?;
        if ks.is_empty() {
            return Err(Error::ViewsEmpty.into());
        }
        i += 1 + ks.len();
        views = Some(ks);
    }
    Ok((rest, views.unwrap_or_default()))
}

/// ALIGN (seconds, default 0) once the bucket width is known: `0 <= ALIGN < BUCKET`.
pub fn align_within(align_s: Option<i64>, bucket_s: i64) -> Result<i64, CmdError> {
    match align_s.unwrap_or(0) {
        a if a < bucket_s => Ok(a),
        align_s => Err(Error::AlignPastBucket { bucket_s, align_s }.into()),
    }
}

/// `TOPN.INCR key member [BY n] [AT ms]`: (by, at).
pub fn incr_options(tokens: &[&[u8]]) -> Result<(i64, Option<i64>), CmdError> {
    let [by, at] = parse_options(tokens, &[("BY", Takes::Value), ("AT", Takes::Value)])?;
    Ok((
        opt_int_in("BY", by, i64::MIN, i64::MAX)?.unwrap_or(1),
        opt_int_in("AT", at, 0, MAX_TIME_MS)?,
    ))
}

/// One `increment member` pair of `TOPN.INCRBY`.
pub type Pair<'a> = (i64, &'a [u8]);

/// A call's pairs: on the stack up to 16 (a batch of up to 16 events
/// allocates nothing for them).
pub type Pairs<'a> = SmallVec<[Pair<'a>; 16]>;

/// `TOPN.INCRBY key [AT ms] increment member [increment member ...]`: (AT, pairs), the
/// increment first as in ZADD (`AT` is never an increment, so a leading `AT` is the option).
/// Every increment is named by its place in the call when it is not an integer. One pass,
/// each increment read once: the usual one (up to 18 digits) directly.
pub fn incrby_args<'a>(tokens: &[&'a [u8]]) -> Result<(Option<i64>, Pairs<'a>), CmdError> {
    let (at, rest) = match tokens {
        [first, value, rest @ ..] if first.eq_ignore_ascii_case(b"AT") => {
            (Some(int_in("AT", value, 0, MAX_TIME_MS)?), rest)
        }
        _ => (None, tokens),
    };
    if rest.is_empty() || rest.len() % 2 != 0 {
        return Err(CmdError::Arity);
    }
    let mut pairs = Pairs::with_capacity(rest.len() / 2);
    for pair in rest.chunks_exact(2) {
        let Some(by) = increment(pair[0]) else {
            // Argument 0 is the command's name, 1 the key.
            let place = 2 + tokens.len() - rest.len() + 2 * pairs.len();
            return Err(Error::IncrementNotInteger(place).into());
        };
        pairs.push((by, pair[1]));
    }
    Ok((at, pairs))
}

/// An increment: up to 18 digits (below `i64::MAX` whatever they are) summed
/// directly, anything else as any integer argument is read (no message built
/// for a refusal: the caller names the argument).
#[inline]
fn increment(token: &[u8]) -> Option<i64> {
    if token.len() <= 18 && !token.is_empty() && token.iter().all(u8::is_ascii_digit) {
        return Some(
            token
                .iter()
                .fold(0i64, |n, &d| n * 10 + i64::from(d - b'0')),
        );
    }
    parse_i64(token)
}

/// `TOPN.TOP key [N] [AT ms] [LAST k] [WITHCOUNTS] [WITHERRORS]` (TOP24: no LAST): N is
/// positional when present. LAST is checked against the key's WINDOW by the command.
/// WITHERRORS gives each count and its error (and so implies WITHCOUNTS).
#[derive(Debug, PartialEq, Eq)]
pub struct TopOptions {
    pub n: usize,
    pub at: Option<i64>,
    pub last: Option<i64>,
    pub with_counts: bool,
    pub with_errors: bool,
}

pub fn top_options(tokens: &[&[u8]], allow_last: bool) -> Result<TopOptions, CmdError> {
    let is_keyword = |t: &[u8]| {
        [&b"AT"[..], b"LAST", b"WITHCOUNTS", b"WITHERRORS"]
            .iter()
            .any(|k| t.eq_ignore_ascii_case(k))
    };
    let (n, rest) = match tokens.split_first() {
        Some((first, rest)) if !is_keyword(first) => {
            (int_in("count", first, 0, i64::MAX)? as usize, rest)
        }
        _ => (10, tokens),
    };
    let [at, last, with_counts, with_errors] = parse_options(
        rest,
        &[
            ("AT", Takes::Value),
            ("LAST", Takes::Value),
            ("WITHCOUNTS", Takes::Nothing),
            ("WITHERRORS", Takes::Nothing),
        ],
    )?;
    if last.is_some() && !allow_last {
        return Err(Error::LastOnTop24.into());
    }
    Ok(TopOptions {
        n,
        at: opt_int_in("AT", at, 0, MAX_TIME_MS)?,
        last: last.map(last_in).transpose()?,
        with_counts: with_counts.is_some() || with_errors.is_some(),
        with_errors: with_errors.is_some(),
    })
}

/// `LAST k` as an integer; its range is checked by [`last_within`] once the
/// key's WINDOW is known.
fn last_in(k: &[u8]) -> Result<i64, CmdError> {
    parse_i64(k).ok_or_else(|| Error::LastNotInteger(printable(k)).into())
}

/// `LAST k` checked against the key's `window` (`None`: no key, so only
/// against the largest WINDOW there is): the number of buckets a read covers.
pub fn last_within(k: i64, window: Option<u32>) -> Result<u32, CmdError> {
    let most = window.unwrap_or(MAX_WINDOW);
    match (1..=i64::from(most)).contains(&k) {
        true => Ok(k as u32),
        false => Err(Error::LastOutside { window, k }.into()),
    }
}

/// What `count_args` finds: (members, AT, LAST, WITHERRORS).
pub type CountArgs<'a> = (&'a [&'a [u8]], Option<i64>, Option<i64>, bool);

/// `TOPN.COUNT key member [member ...] [AT ms] [LAST k] [WITHERRORS]`: the members run to
/// the end, except that a final `WITHERRORS`, then final `AT ms` / `LAST k` pairs (in either
/// order, each once) are options; at least one member stays a member.
pub fn count_args<'a>(tokens: &'a [&'a [u8]]) -> Result<CountArgs<'a>, CmdError> {
    let mut members = tokens;
    let with_errors = members.len() >= 2
        && members
            .last()
            .is_some_and(|t| t.eq_ignore_ascii_case(b"WITHERRORS"));
    if with_errors {
        members = &members[..members.len() - 1];
    }
    let (mut at, mut last) = (None, None);
    while members.len() >= 3 {
        let n = members.len();
        let (keyword, value) = (members[n - 2], members[n - 1]);
        if at.is_none() && keyword.eq_ignore_ascii_case(b"AT") {
            at = Some(int_in("AT", value, 0, MAX_TIME_MS)?);
        } else if last.is_none() && keyword.eq_ignore_ascii_case(b"LAST") {
            last = Some(last_in(value)?);
        } else {
            break;
        }
        members = &members[..n - 2];
    }
    Ok((members, at, last, with_errors))
}

/// The number of buckets covering 24 hours, if 24 h is a whole number of
/// buckets that fits in the window.
pub fn buckets_in_24h(bucket_ms: i64, window: u32) -> Option<u32> {
    const DAY_MS: i64 = 86_400_000;
    let buckets = DAY_MS / bucket_ms;
    (DAY_MS % bucket_ms == 0 && buckets <= window as i64).then_some(buckets as u32)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
