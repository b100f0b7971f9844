//! Parsing of TOPN arguments (pure).

use crate::args::{int_in, opt_int_in, parse_options, CmdError, Takes, MAX_TIME_MS};

/// Bucket width limits, in seconds (up to a year).
pub const MAX_BUCKET_S: i64 = 31_536_000;
/// Window length limit, in buckets.
pub const MAX_WINDOW: i64 = 100_000;

/// `TOPN.CREATE key [BUCKET s] [WINDOW buckets]`: (bucket s, window), `None` = default.
pub fn create_options(tokens: &[&[u8]]) -> Result<(Option<i64>, Option<i64>), CmdError> {
    let [bucket, window] = parse_options(
        tokens,
        &[("BUCKET", Takes::Value), ("WINDOW", Takes::Value)],
    )?;
    Ok((
        opt_int_in("BUCKET", bucket, 1, MAX_BUCKET_S)?,
        opt_int_in("WINDOW", window, 1, MAX_WINDOW)?,
    ))
}

/// `TOPN.INCR key member [BY n] [AT ms]`: (by, at).
pub fn incr_options(tokens: &[&[u8]]) -> Result<(i64, Option<i64>), CmdError> {
    let [by, at] = parse_options(tokens, &[("BY", Takes::Value), ("AT", Takes::Value)])?;
    Ok((
        opt_int_in("BY", by, i64::MIN, i64::MAX)?.unwrap_or(1),
        opt_int_in("AT", at, 0, MAX_TIME_MS)?,
    ))
}

/// `TOPN.TOP key [N] [AT ms] [WITHCOUNTS]`: N is positional when present.
#[derive(Debug, PartialEq, Eq)]
pub struct TopOptions {
    pub n: usize,
    pub at: Option<i64>,
    pub with_counts: bool,
}

pub fn top_options(tokens: &[&[u8]]) -> Result<TopOptions, CmdError> {
    let is_keyword =
        |t: &[u8]| t.eq_ignore_ascii_case(b"AT") || t.eq_ignore_ascii_case(b"WITHCOUNTS");
    let (n, rest) = match tokens.split_first() {
        Some((first, rest)) if !is_keyword(first) => {
            (int_in("N", first, 0, i64::MAX)? as usize, rest)
        }
        _ => (10, tokens),
    };
    let [at, with_counts] = parse_options(
        rest,
        &[("AT", Takes::Value), ("WITHCOUNTS", Takes::Nothing)],
    )?;
    Ok(TopOptions {
        n,
        at: opt_int_in("AT", at, 0, MAX_TIME_MS)?,
        with_counts: with_counts.is_some(),
    })
}

/// `TOPN.COUNT key member [member ...] [AT ms]`: the members run to the end,
/// except that a final `AT ms` pair is the option.
pub fn count_args<'a>(tokens: &'a [&'a [u8]]) -> Result<(&'a [&'a [u8]], Option<i64>), CmdError> {
    let n = tokens.len();
    if n >= 3 && tokens[n - 2].eq_ignore_ascii_case(b"AT") {
        let at = int_in("AT", tokens[n - 1], 0, MAX_TIME_MS)?;
        return Ok((&tokens[..n - 2], Some(at)));
    }
    Ok((tokens, None))
}

/// The number of buckets covering 24 hours, if 24 h is a whole number of
/// buckets that fits in the window.
pub fn buckets_in_24h(bucket_ms: i64, window: u32) -> Option<u32> {
    const DAY_MS: i64 = 86_400_000;
    let buckets = DAY_MS / bucket_ms;
    (DAY_MS % bucket_ms == 0 && buckets <= window as i64).then_some(buckets as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks<'a>(s: &'a [&'a str]) -> Vec<&'a [u8]> {
        s.iter().map(|t| t.as_bytes()).collect()
    }

    #[test]
    fn top_takes_an_optional_leading_n() {
        assert_eq!(
            top_options(&[]).unwrap(),
            TopOptions {
                n: 10,
                at: None,
                with_counts: false
            }
        );
        assert_eq!(
            top_options(&toks(&["3", "withcounts", "AT", "5"])).unwrap(),
            TopOptions {
                n: 3,
                at: Some(5),
                with_counts: true
            }
        );
        assert_eq!(
            top_options(&toks(&["at", "7"])).unwrap(),
            TopOptions {
                n: 10,
                at: Some(7),
                with_counts: false
            }
        );
        assert!(top_options(&toks(&["-1"]))
            .unwrap_err()
            .to_string()
            .contains("N must"));
        assert!(top_options(&toks(&["x"]))
            .unwrap_err()
            .to_string()
            .contains("N must"));
        assert!(top_options(&toks(&["3", "4"]))
            .unwrap_err()
            .to_string()
            .contains("unknown option"));
    }

    #[test]
    fn count_takes_a_final_at_pair_only() {
        let t = toks(&["a", "b", "AT", "5"]);
        let (members, at) = count_args(&t).unwrap();
        assert_eq!(members, &toks(&["a", "b"])[..]);
        assert_eq!(at, Some(5));
        let t = toks(&["AT", "b"]);
        assert_eq!(count_args(&t).unwrap(), (&t[..], None));
        let t = toks(&["a", "at", "x"]);
        assert!(count_args(&t).unwrap_err().to_string().contains("AT"));
    }

    #[test]
    fn create_and_incr_options() {
        assert_eq!(
            create_options(&toks(&["WINDOW", "6", "BUCKET", "60"])).unwrap(),
            (Some(60), Some(6))
        );
        assert!(create_options(&toks(&["BUCKET", "0"]))
            .unwrap_err()
            .to_string()
            .contains("BUCKET"));
        assert!(create_options(&toks(&["WINDOW", "100001"]))
            .unwrap_err()
            .to_string()
            .contains("WINDOW"));
        assert_eq!(incr_options(&[]).unwrap(), (1, None));
        assert_eq!(
            incr_options(&toks(&["BY", "-4", "AT", "9"])).unwrap(),
            (-4, Some(9))
        );
        assert!(incr_options(&toks(&["BY", "1.5"]))
            .unwrap_err()
            .to_string()
            .contains("BY"));
    }

    #[test]
    fn twenty_four_hours_in_whole_buckets() {
        assert_eq!(buckets_in_24h(3_600_000, 24), Some(24));
        assert_eq!(buckets_in_24h(3_600_000, 48), Some(24));
        assert_eq!(buckets_in_24h(3_600_000, 23), None);
        assert_eq!(buckets_in_24h(7_000_000, 100), None);
        assert_eq!(buckets_in_24h(60_000, 1440), Some(1440));
    }
}
