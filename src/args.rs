//! Argument parsing shared by every command: pure, no FFI, unit-tested.
//!
//! A command is `NAME key positional... [OPTION value | FLAG]...`. Options may
//! come in any order; each may appear once. Every error names the argument.

use std::fmt;

/// Why a command was refused. Replied as an error; the command changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    /// Wrong number of arguments: the standard Redis arity error.
    Arity,
    /// The key holds a value of another type.
    WrongType,
    /// Anything else: the text after `ERR `.
    Invalid(String),
}

impl CmdError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        CmdError::Invalid(msg.into())
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdError::Arity => f.write_str("ERR wrong number of arguments"),
            CmdError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            CmdError::Invalid(msg) => write!(f, "ERR {msg}"),
        }
    }
}

/// How a keyword is used: followed by one value, or alone.
#[derive(Clone, Copy)]
pub enum Takes {
    Value,
    Nothing,
}

/// A keyword a command accepts, e.g. `("MAXLEN", Takes::Value)`.
pub type OptionSpec = (&'static str, Takes);

/// The options found in a call: slot `i` holds the value of the `i`th spec.
pub type Found<'a, const N: usize> = [Option<&'a [u8]>; N];

/// Options found so far among a command's tokens, for parsers that mix
/// options with other tokens (schema names, `name value` pairs).
pub struct OptionSet<'a, 's, const N: usize> {
    specs: &'s [OptionSpec; N],
    found: [Option<&'a [u8]>; N],
}

impl<'a, 's, const N: usize> OptionSet<'a, 's, N> {
    pub fn new(specs: &'s [OptionSpec; N]) -> Self {
        OptionSet {
            specs,
            found: [None; N],
        }
    }

    /// If `tokens[i]` is one of the options, records it with its value and
    /// returns the index after it; `None` if it is not an option.
    /// Whether `token` is one of the options (any case).
    pub fn is_option(&self, token: &[u8]) -> bool {
        self.specs
            .iter()
            .any(|(name, _)| token.eq_ignore_ascii_case(name.as_bytes()))
    }

    pub fn take(&mut self, tokens: &[&'a [u8]], i: usize) -> Result<Option<usize>, CmdError> {
        let token = tokens[i];
        let Some(slot) = self
            .specs
            .iter()
            .position(|(name, _)| token.eq_ignore_ascii_case(name.as_bytes()))
        else {
            return Ok(None);
        };
        let (name, takes) = self.specs[slot];
        if self.found[slot].is_some() {
            return Err(CmdError::invalid(format!("{name} given more than once")));
        }
        let (value, next) = match takes {
            Takes::Nothing => (&[][..], i + 1),
            Takes::Value => {
                let value = *tokens
                    .get(i + 1)
                    .ok_or_else(|| CmdError::invalid(format!("{name} needs a value")))?;
                (value, i + 2)
            }
        };
        self.found[slot] = Some(value);
        Ok(Some(next))
    }

    /// Slot `i` holds the value of `specs[i]` (an empty slice for a flag
    /// that is present).
    pub fn finish(self) -> [Option<&'a [u8]>; N] {
        self.found
    }
}

/// Parses `tokens` as options against `specs`. Slot `i` of the result holds the
/// value of `specs[i]` (an empty slice for a flag that is present).
pub fn parse_options<'a, const N: usize>(
    tokens: &[&'a [u8]],
    specs: &[OptionSpec; N],
) -> Result<[Option<&'a [u8]>; N], CmdError> {
    let mut options = OptionSet::new(specs);
    let mut i = 0;
    while i < tokens.len() {
        i = options.take(tokens, i)?.ok_or_else(|| {
            CmdError::invalid(format!("unknown option '{}'", printable(tokens[i])))
        })?;
    }
    Ok(options.finish())
}

/// A decimal integer in `min..=max`, written as Redis writes integers (an
/// optional `-`, then digits; no spaces, no `+`).
pub fn int_in(name: &str, value: &[u8], min: i64, max: i64) -> Result<i64, CmdError> {
    match parse_i64(value) {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(CmdError::invalid(format!(
            "{name} must be an integer between {min} and {max}"
        ))),
    }
}

/// Strict decimal i64 (hot path: every numeric option goes through here).
/// Accumulates negatively so `i64::MIN` parses without overflow.
pub fn parse_i64(value: &[u8]) -> Option<i64> {
    let (negative, digits) = match value.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, value),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_sub((d - b'0') as i64)?;
    }
    if negative {
        Some(n)
    } else {
        n.checked_neg()
    }
}

/// An optional integer option: `None` when the option was not given.
#[inline] // a write checks several, usually absent: a test, not a call
pub fn opt_int_in(
    name: &str,
    value: Option<&[u8]>,
    min: i64,
    max: i64,
) -> Result<Option<i64>, CmdError> {
    value.map(|v| int_in(name, v, min, max)).transpose()
}

/// When a write makes its key expire: `TTL s` (relative) or `PXAT ms`
/// (absolute, as SET's; also what replicas receive instead of a TTL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    Ttl(i64),
    At(i64),
}

/// Reads the `TTL` and `PXAT` options, at most one of them.
pub fn expiry_option(ttl: Option<&[u8]>, pxat: Option<&[u8]>) -> Result<Option<Expiry>, CmdError> {
    match (
        opt_int_in("TTL", ttl, 1, MAX_TTL_S)?,
        opt_int_in("PXAT", pxat, 1, MAX_EXPIRE_MS)?,
    ) {
        (Some(_), Some(_)) => Err(CmdError::invalid("TTL and PXAT cannot be used together")),
        (ttl, pxat) => Ok(ttl.map(Expiry::Ttl).or(pxat.map(Expiry::At))),
    }
}

/// Largest Unix time in ms we accept: times are sorted-set scores (doubles),
/// exact up to 2^53.
pub const MAX_TIME_MS: i64 = 1 << 53;

/// Largest TTL in seconds (about 31 years); keeps `time + ttl` far from overflow.
pub const MAX_TTL_S: i64 = 1_000_000_000;

/// Largest absolute expiry (PXAT): any time plus the largest TTL.
pub const MAX_EXPIRE_MS: i64 = MAX_TIME_MS + MAX_TTL_S * 1000;

/// A client's `AT` this close to the clock when read as seconds (ten years
/// either way) is a mistake: as milliseconds it would be January 1970.
const SECONDS_LOOKALIKE_MS: u64 = 10 * 365 * 86_400_000;

/// Checks a client's `AT` against the server's clock `now`: refused when it
/// can only be seconds, or when it is more than `max_future_ms` ahead (0: no
/// limit). Replicated and AOF-loaded calls are never checked: they replay as
/// written.
pub fn check_client_time(at: i64, now: i64, max_future_ms: i64) -> Result<(), CmdError> {
    if at.saturating_mul(1000).abs_diff(now) <= SECONDS_LOOKALIKE_MS {
        return Err(CmdError::invalid(format!(
            "AT is Unix time in milliseconds; {at} looks like seconds (did you mean {at}000?)"
        )));
    }
    if max_future_ms > 0 && at.saturating_sub(now) > max_future_ms {
        return Err(CmdError::invalid(format!(
            "AT {at} is further ahead of the server's clock than recipes.max-future-ms \
             ({max_future_ms}) allows"
        )));
    }
    Ok(())
}

/// Largest length cap (MAXLEN and its configs).
pub const MAX_LEN: i64 = 1_000_000_000;

/// A client's bytes made safe to quote in an error line.
pub fn printable(bytes: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(64)
        .collect();
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: [OptionSpec; 3] = [
        ("AT", Takes::Value),
        ("MAXLEN", Takes::Value),
        ("WITHSCORES", Takes::Nothing),
    ];

    fn toks<'a>(s: &'a [&'a str]) -> Vec<&'a [u8]> {
        s.iter().map(|t| t.as_bytes()).collect()
    }

    #[test]
    fn options_any_order_and_case() {
        let t = toks(&["withscores", "maxlen", "5", "At", "10"]);
        let got = parse_options(&t, &SPECS).unwrap();
        assert_eq!(got[0], Some(&b"10"[..]));
        assert_eq!(got[1], Some(&b"5"[..]));
        assert_eq!(got[2], Some(&b""[..]));
        let none = parse_options(&[], &SPECS).unwrap();
        assert_eq!(none, [None, None, None]);
    }

    #[test]
    fn options_errors_name_the_argument() {
        let err = |s: &[&str]| parse_options(&toks(s), &SPECS).unwrap_err().to_string();
        assert_eq!(err(&["AT"]), "ERR AT needs a value");
        assert_eq!(err(&["AT", "1", "at", "2"]), "ERR AT given more than once");
        assert_eq!(err(&["BOGUS"]), "ERR unknown option 'BOGUS'");
        assert_eq!(err(&["MAXLEN", "1", "x\r\n"]), "ERR unknown option 'x??'");
    }

    #[test]
    fn integers_are_strict_and_bounded() {
        assert_eq!(int_in("N", b"42", 0, 100), Ok(42));
        assert_eq!(int_in("N", b"-3", -5, 5), Ok(-3));
        assert_eq!(int_in("N", b"0", 0, 0), Ok(0));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"1.5",
            b"nan",
            b"inf",
            b"0x10",
            b"101",
            b"-6",
            b"99999999999999999999",
            b"\x001",
        ] {
            let e = int_in("MAXLEN", bad, -5, 100).unwrap_err();
            assert_eq!(
                e.to_string(),
                "ERR MAXLEN must be an integer between -5 and 100"
            );
        }
        assert_eq!(
            int_in("N", b"9223372036854775807", 0, i64::MAX),
            Ok(i64::MAX)
        );
        assert_eq!(opt_int_in("N", None, 0, 1), Ok(None));
    }

    #[test]
    fn expiry_is_ttl_or_pxat_not_both() {
        assert_eq!(expiry_option(None, None), Ok(None));
        assert_eq!(expiry_option(Some(b"5"), None), Ok(Some(Expiry::Ttl(5))));
        assert_eq!(expiry_option(None, Some(b"7")), Ok(Some(Expiry::At(7))));
        assert!(expiry_option(Some(b"5"), Some(b"7"))
            .unwrap_err()
            .to_string()
            .contains("TTL and PXAT"));
        assert!(expiry_option(None, Some(b"0"))
            .unwrap_err()
            .to_string()
            .contains("PXAT"));
        assert!(expiry_option(Some(b"0"), None)
            .unwrap_err()
            .to_string()
            .contains("TTL"));
    }
}

#[cfg(test)]
mod time_tests {
    use super::check_client_time;

    const NOW: i64 = 1_795_564_511_000;

    fn err(at: i64, max_future: i64) -> String {
        check_client_time(at, NOW, max_future)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn client_times_that_can_only_be_seconds_or_too_far_ahead_are_refused() {
        for ok in [
            NOW,
            NOW - 86_400_000 * 365 * 30,
            NOW + 3_600_000,
            0,
            1000,
            5,
        ] {
            assert_eq!(check_client_time(ok, NOW, 3_600_000), Ok(()), "{ok}");
        }
        assert_eq!(
            err(1_795_564_511, 0),
            "ERR AT is Unix time in milliseconds; 1795564511 looks like seconds \
             (did you mean 1795564511000?)"
        );
        assert!(err(NOW / 1000 - 86_400 * 365 * 9, 0).contains("looks like seconds"));
        assert_eq!(
            err(NOW + 3_600_001, 3_600_000),
            "ERR AT 1795568111001 is further ahead of the server's clock than \
             recipes.max-future-ms (3600000) allows"
        );
        assert_eq!(check_client_time(9_007_199_254_740_000, NOW, 0), Ok(()));
        assert!(err(9_007_199_254_740_000, 86_400_000).contains("further ahead"));
    }
}
