//! Reads in pages, SCAN-style: a cursor in, at most COUNT rows and the next
//! cursor out. Rows come in ascending order of a key (the row's tuple
//! encoding); a cursor is the key of the last row returned, so a step goes
//! on after it whatever was written meanwhile: every row present
//! throughout is returned once, a row added behind the cursor is not.
//! `0` starts, and comes back once the rows are done.

use crate::args::CmdError;

/// Rows a page holds when COUNT is not given, and at most.
pub const DEFAULT_COUNT: usize = 10;
pub const MAX_COUNT: usize = 10_000;

/// Where a page starts: after `after` (`None`: from the first row).
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    pub after: Option<Vec<u8>>,
    pub count: usize,
}

impl Page {
    /// `CURSOR cursor [COUNT n]`: `None` when no CURSOR was given (the read
    /// answers whole, as before).
    pub fn parse(cursor: Option<&[u8]>, count: Option<&[u8]>) -> Result<Option<Page>, CmdError> {
        let Some(cursor) = cursor else {
            if count.is_some() {
                return Err(CmdError::invalid("COUNT needs CURSOR"));
            }
            return Ok(None);
        };
        let after = match cursor {
            b"0" => None,
            hex => Some(from_hex(hex).ok_or_else(|| {
                CmdError::invalid("invalid CURSOR (use 0, or a cursor a page returned)")
            })?),
        };
        let count = match count {
            None => DEFAULT_COUNT,
            Some(n) => std::str::from_utf8(n)
                .ok()
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=MAX_COUNT).contains(n))
                .ok_or_else(|| {
                    CmdError::invalid(format!(
                        "COUNT must be an integer between 1 and {MAX_COUNT}"
                    ))
                })?,
        };
        Ok(Some(Page { after, count }))
    }

    /// Takes `CURSOR c` and `COUNT n` out of a read's `name value` tokens
    /// (keywords are never names, so a pair is one or the other); returns
    /// the rest, and the page when CURSOR was given.
    pub fn split<'a>(tokens: &[&'a [u8]]) -> Result<(Vec<&'a [u8]>, Option<Page>), CmdError> {
        let (mut cursor, mut count, mut rest) = (None, None, Vec::new());
        for pair in tokens.chunks(2) {
            let (slot, name) = if pair[0].eq_ignore_ascii_case(b"CURSOR") {
                (&mut cursor, "CURSOR")
            } else if pair[0].eq_ignore_ascii_case(b"COUNT") {
                (&mut count, "COUNT")
            } else {
                rest.extend_from_slice(pair);
                continue;
            };
            let Some(&value) = pair.get(1) else {
                return Err(CmdError::invalid(format!("{name} needs a value")));
            };
            if slot.replace(value).is_some() {
                return Err(CmdError::invalid(format!("{name} given more than once")));
            }
        }
        Ok((rest, Page::parse(cursor, count)?))
    }

    /// The page of `rows` (ascending by `key`): the first `count` after the
    /// cursor, and the next cursor (`0` when no row is left).
    pub fn take<T>(
        &self,
        rows: impl IntoIterator<Item = T>,
        key: impl Fn(&T) -> Vec<u8>,
    ) -> (Vec<T>, Vec<u8>) {
        let mut out = Vec::new();
        let mut last = None;
        let mut more = false;
        for row in rows {
            let k = key(&row);
            if self.after.as_ref().is_some_and(|after| k <= *after) {
                continue;
            }
            if out.len() == self.count {
                more = true;
                break;
            }
            last = Some(k);
            out.push(row);
        }
        let next = match (more, last) {
            (true, Some(k)) => to_hex(&k),
            _ => b"0".to_vec(),
        };
        (out, next)
    }
}

fn to_hex(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .flat_map(|b| format!("{b:02x}").into_bytes())
        .collect()
}

fn from_hex(hex: &[u8]) -> Option<Vec<u8>> {
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(cursor: &str, count: Option<&str>) -> Page {
        Page::parse(Some(cursor.as_bytes()), count.map(str::as_bytes))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn pages_go_on_after_the_cursor() {
        let rows = |keys: &[&str]| {
            keys.iter()
                .map(|k| k.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let all = rows(&["a", "b", "c", "d", "e"]);
        let (first, next) = page("0", Some("2")).take(all.clone(), |r| r.clone());
        assert_eq!((first, next.clone()), (rows(&["a", "b"]), b"62".to_vec()));
        // "a" goes and "bb" comes meanwhile: "bb" is after the cursor.
        let changed = rows(&["b", "bb", "c", "d", "e"]);
        let cursor = String::from_utf8(next).unwrap();
        let (second, next) = page(&cursor, Some("2")).take(changed.clone(), |r| r.clone());
        assert_eq!(second, rows(&["bb", "c"]));
        let cursor = String::from_utf8(next).unwrap();
        let (third, next) = page(&cursor, Some("5")).take(changed, |r| r.clone());
        assert_eq!((third, next), (rows(&["d", "e"]), b"0".to_vec()));
        assert_eq!(page("0", None).count, DEFAULT_COUNT);
    }

    #[test]
    fn cursor_and_count_split_off_the_names() {
        let toks: Vec<&[u8]> = vec![b"day", b"d1", b"cursor", b"0", b"COUNT", b"3"];
        let (rest, page) = Page::split(&toks).unwrap();
        assert_eq!(rest, [&b"day"[..], b"d1"]);
        assert_eq!(
            page,
            Some(Page {
                after: None,
                count: 3
            })
        );
        let toks: Vec<&[u8]> = vec![b"day", b"d1"];
        assert_eq!(Page::split(&toks).unwrap().1, None);
        let toks: Vec<&[u8]> = vec![b"CURSOR", b"0", b"CURSOR", b"0"];
        assert!(Page::split(&toks)
            .unwrap_err()
            .to_string()
            .contains("more than once"));
        let toks: Vec<&[u8]> = vec![b"CURSOR"];
        assert!(Page::split(&toks)
            .unwrap_err()
            .to_string()
            .contains("needs a value"));
    }

    #[test]
    fn bad_cursors_and_counts_are_refused() {
        let err = |c: Option<&str>, n: Option<&str>| {
            Page::parse(c.map(str::as_bytes), n.map(str::as_bytes))
                .unwrap_err()
                .to_string()
        };
        assert!(err(Some("xyz"), None).contains("invalid CURSOR"));
        assert!(err(Some("abc"), None).contains("invalid CURSOR"));
        assert!(err(Some("0"), Some("0")).contains("COUNT must be"));
        assert!(err(Some("0"), Some("10001")).contains("COUNT must be"));
        assert_eq!(err(None, Some("5")), "ERR COUNT needs CURSOR");
        assert_eq!(Page::parse(None, None), Ok(None));
    }
}
