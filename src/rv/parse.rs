//! Parsing of RV arguments (pure).

use crate::args::{
    expiry_option, opt_int_in, parse_options, CmdError, Expiry, Takes, MAX_LEN, MAX_TIME_MS,
};

/// Options of `RV.ADD key member [AT ms] [MAXLEN n] [TTL s | PXAT ms]`.
#[derive(Debug, PartialEq, Eq)]
pub struct AddOptions {
    pub at: Option<i64>,
    /// 0 = no limit.
    pub maxlen: Option<i64>,
    pub expiry: Option<Expiry>,
}

pub fn add_options(tokens: &[&[u8]]) -> Result<AddOptions, CmdError> {
    let [at, maxlen, ttl, pxat] = parse_options(
        tokens,
        &[
            ("AT", Takes::Value),
            ("MAXLEN", Takes::Value),
            ("TTL", Takes::Value),
            ("PXAT", Takes::Value),
        ],
    )?;
    Ok(AddOptions {
        at: opt_int_in("AT", at, 0, MAX_TIME_MS)?,
        maxlen: opt_int_in("MAXLEN", maxlen, 0, MAX_LEN)?,
        expiry: expiry_option(ttl, pxat)?,
    })
}

/// Options of `RV.GET key [LIMIT n] [SINCE ms] [WITHSCORES]`.
#[derive(Debug, PartialEq, Eq)]
pub struct GetOptions {
    pub limit: Option<i64>,
    pub since: Option<i64>,
    pub with_scores: bool,
}

pub fn get_options(tokens: &[&[u8]]) -> Result<GetOptions, CmdError> {
    let [limit, since, with_scores] = parse_options(
        tokens,
        &[
            ("LIMIT", Takes::Value),
            ("SINCE", Takes::Value),
            ("WITHSCORES", Takes::Nothing),
        ],
    )?;
    Ok(GetOptions {
        limit: opt_int_in("LIMIT", limit, 0, i64::MAX)?,
        since: opt_int_in("SINCE", since, -MAX_TIME_MS, MAX_TIME_MS)?,
        with_scores: with_scores.is_some(),
    })
}

/// When a list should expire after an add at `at_ms` with a TTL, given the
/// newest entry time later than `at_ms`, if any: TTL seconds after the newest
/// entry, never before this add's own time + TTL (recipe data may hold times
/// in seconds).
pub fn expiry_ms(at_ms: i64, newest_ms: Option<f64>, ttl_s: i64) -> i64 {
    let newest = newest_ms.map_or(at_ms, |n| {
        if n.is_finite() && n > at_ms as f64 && n <= MAX_TIME_MS as f64 {
            n as i64
        } else {
            at_ms
        }
    });
    newest + ttl_s * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks<'a>(s: &'a [&'a str]) -> Vec<&'a [u8]> {
        s.iter().map(|t| t.as_bytes()).collect()
    }

    #[test]
    fn add_options_parse_and_validate() {
        assert_eq!(
            add_options(&toks(&["ttl", "60", "AT", "1000", "maxlen", "3"])).unwrap(),
            AddOptions {
                at: Some(1000),
                maxlen: Some(3),
                expiry: Some(Expiry::Ttl(60))
            }
        );
        assert_eq!(
            add_options(&[]).unwrap(),
            AddOptions {
                at: None,
                maxlen: None,
                expiry: None
            }
        );
        let err = |s: &[&str]| add_options(&toks(s)).unwrap_err().to_string();
        assert!(err(&["MAXLEN", "-1"]).contains("MAXLEN"));
        assert!(err(&["MAXLEN", "1000000001"]).contains("MAXLEN"));
        assert!(err(&["TTL", "0"]).contains("TTL"));
        assert!(err(&["AT", "-5"]).contains("AT"));
        assert!(err(&["AT", "9007199254740993"]).contains("AT"));
        assert!(err(&["AT"]).contains("AT needs a value"));
        assert!(err(&["LIMIT", "1"]).contains("unknown option 'LIMIT'"));
    }

    #[test]
    fn get_options_parse() {
        assert_eq!(
            get_options(&toks(&["WITHSCORES", "since", "5", "LIMIT", "0"])).unwrap(),
            GetOptions {
                limit: Some(0),
                since: Some(5),
                with_scores: true
            }
        );
        assert!(get_options(&toks(&["LIMIT", "-1"]))
            .unwrap_err()
            .to_string()
            .contains("LIMIT"));
        assert!(get_options(&toks(&["WITHSCORES", "WITHSCORES"])).is_err());
    }

    #[test]
    fn expiry_follows_the_newest_entry() {
        assert_eq!(expiry_ms(1_000, None, 10), 11_000);
        assert_eq!(expiry_ms(1_000, Some(5_000.0), 10), 15_000);
        // An older add does not pull the expiry back.
        assert_eq!(expiry_ms(1_000, Some(500.0), 10), 11_000);
        // Recipe data in seconds: the add's own time wins.
        assert_eq!(
            expiry_ms(1_700_000_000_000, Some(1_700_000_000.0), 1),
            1_700_000_001_000
        );
    }
}
