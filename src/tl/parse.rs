//! Parsing and trimming rules of TL (pure).

use crate::args::{expiry_option, opt_int_in, parse_options, CmdError, Expiry, Takes, MAX_LEN};

/// Options of `TL.PUSH key item [MAXLEN n] [SLACK m] [TTL s | PXAT ms]`.
#[derive(Debug, PartialEq, Eq)]
pub struct PushOptions {
    /// 0 = no limit.
    pub maxlen: Option<i64>,
    pub slack: i64,
    pub expiry: Option<Expiry>,
}

pub fn push_options(tokens: &[&[u8]]) -> Result<PushOptions, CmdError> {
    let [maxlen, slack, ttl, pxat] = parse_options(
        tokens,
        &[
            ("MAXLEN", Takes::Value),
            ("SLACK", Takes::Value),
            ("TTL", Takes::Value),
            ("PXAT", Takes::Value),
        ],
    )?;
    Ok(PushOptions {
        maxlen: opt_int_in("MAXLEN", maxlen, 0, MAX_LEN)?,
        slack: opt_int_in("SLACK", slack, 0, MAX_LEN)?.unwrap_or(0),
        expiry: expiry_option(ttl, pxat)?,
    })
}

/// How many items to cut from the tail of a list of `len` items: none until
/// it reaches `maxlen + slack`, then back to `maxlen` (0 = no limit).
pub fn items_to_trim(len: usize, maxlen: usize, slack: usize) -> usize {
    if maxlen == 0 || len <= maxlen || len < maxlen.saturating_add(slack) {
        0
    } else {
        len - maxlen
    }
}

/// `TL.RANGE key [OFFSET o] [COUNT c]`: (offset, count), defaults 0 and 10.
pub fn range_options(tokens: &[&[u8]]) -> Result<(usize, usize), CmdError> {
    let [offset, count] =
        parse_options(tokens, &[("OFFSET", Takes::Value), ("COUNT", Takes::Value)])?;
    let offset = opt_int_in("OFFSET", offset, 0, i64::MAX)?.unwrap_or(0);
    let count = opt_int_in("COUNT", count, 0, i64::MAX)?.unwrap_or(10);
    Ok((offset as usize, count as usize))
}

/// `TL.REM key item [COUNT c]`: how many occurrences to remove (default 1;
/// 0 = all, as LREM).
pub fn rem_count(tokens: &[&[u8]]) -> Result<usize, CmdError> {
    let [count] = parse_options(tokens, &[("COUNT", Takes::Value)])?;
    Ok(
        match opt_int_in("COUNT", count, 0, i64::MAX)?.unwrap_or(1) {
            0 => usize::MAX,
            n => n as usize,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks<'a>(s: &'a [&'a str]) -> Vec<&'a [u8]> {
        s.iter().map(|t| t.as_bytes()).collect()
    }

    #[test]
    fn trimming_waits_for_the_high_water_mark() {
        // No limit.
        assert_eq!(items_to_trim(1_000, 0, 0), 0);
        // SLACK 0 keeps exactly n.
        assert_eq!(items_to_trim(3, 3, 0), 0);
        assert_eq!(items_to_trim(4, 3, 0), 1);
        // SLACK m: cut back to n once n+m is reached.
        assert_eq!(items_to_trim(12, 10, 3), 0);
        assert_eq!(items_to_trim(13, 10, 3), 3);
        // A list already far over (built by LPUSH) is cut at once.
        assert_eq!(items_to_trim(100, 10, 3), 90);
    }

    #[test]
    fn options() {
        assert_eq!(
            push_options(&toks(&["slack", "5", "MAXLEN", "10"])).unwrap(),
            PushOptions {
                maxlen: Some(10),
                slack: 5,
                expiry: None
            }
        );
        assert!(push_options(&toks(&["SLACK", "-1"]))
            .unwrap_err()
            .to_string()
            .contains("SLACK"));
        assert!(push_options(&toks(&["TTL", "0"]))
            .unwrap_err()
            .to_string()
            .contains("TTL"));
        assert_eq!(range_options(&[]).unwrap(), (0, 10));
        assert_eq!(
            range_options(&toks(&["COUNT", "3", "OFFSET", "2"])).unwrap(),
            (2, 3)
        );
        assert!(range_options(&toks(&["OFFSET", "x"]))
            .unwrap_err()
            .to_string()
            .contains("OFFSET"));
        assert_eq!(rem_count(&[]).unwrap(), 1);
        assert_eq!(rem_count(&toks(&["COUNT", "0"])).unwrap(), usize::MAX);
        assert!(rem_count(&toks(&["COUNT", "-2"]))
            .unwrap_err()
            .to_string()
            .contains("COUNT"));
    }
}
