//! Reads in pages, SCAN-style: a cursor in, at most COUNT rows and the next
//! cursor out. Rows come in ascending order of a key; a cursor is the key of
//! the last row looked at, so a step goes on after it whatever was written
//! meanwhile: every row present throughout is returned once, a row added
//! behind the cursor is not. `0` starts, and comes back once the rows are
//! done.
//!
//! Each step is bounded: rows that live in groups (a scope's values, a
//! partition's cells) sort by group, then by their place in the group's hash
//! table (`table::place_of`), then by their bytes, so a step reads a table
//! one shard at a time from the cursor's place; and it stops after looking
//! at [`Step`]'s budget of entries, with fewer rows than COUNT if the ones
//! it looked at were filtered out (as SCAN may).

use super::table::PLACES;
use crate::args::CmdError;
use std::borrow::Cow;

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

    /// Takes `CURSOR c` and `COUNT n` out of a read's `name value` tokens;
    /// returns the rest, and the page when CURSOR was given. A token that
    /// `is_name` (a name the key declares, exact bytes) stays a name: a key
    /// declared before CURSOR or COUNT became keywords filters on them.
    pub fn split<'a>(
        tokens: &[&'a [u8]],
        is_name: impl Fn(&[u8]) -> bool,
    ) -> Result<(Vec<&'a [u8]>, Option<Page>), CmdError> {
        let (mut cursor, mut count, mut rest) = (None, None, Vec::new());
        for pair in tokens.chunks(2) {
            let (slot, name) = if is_name(pair[0]) {
                rest.extend_from_slice(pair);
                continue;
            } else if pair[0].eq_ignore_ascii_case(b"CURSOR") {
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
}

/// Entries a step looks at before it stops short, besides a page's rows.
const LOOK_AT_LEAST: usize = 1024;

/// The key a row of a group sorts by: its group (a tuple encoding), its
/// place, then its bytes (`ROW` sorts it before the `PAST` cursor of its
/// place).
const ROW: u8 = 1;
const PAST: u8 = 2;

fn row_key(group: &[u8], place: u32, bytes: &[u8]) -> Vec<u8> {
    [group, &place.to_be_bytes(), &[ROW], bytes].concat()
}

/// One step of a paged read over groups offered in ascending order, each
/// one shard at a time: takes the rows after the cursor until the page is
/// full or the step has looked at its budget of entries.
pub struct Step<'p, R> {
    page: &'p Page,
    rows: Vec<R>,
    /// The key of the last row taken.
    last: Option<Vec<u8>>,
    looked: usize,
    budget: usize,
    /// Set once the step is over before the rows are.
    next: Option<Vec<u8>>,
}

/// An entry of a shard: its place, its bytes (what rows of one place sort
/// by) and what makes its row.
pub type Entry<'a, H> = (u32, Cow<'a, [u8]>, H);

impl<'p, R> Step<'p, R> {
    pub fn new(page: &'p Page) -> Self {
        Step {
            page,
            rows: Vec::new(),
            last: None,
            looked: 0,
            budget: (page.count * 4).max(LOOK_AT_LEAST),
            next: None,
        }
    }

    /// The group the cursor is in (its first `names` elements), where the
    /// walk starts: groups before it are done. Empty at the start.
    pub fn first_group(&self, names: usize) -> &'p [u8] {
        let after = self.page.after.as_deref().unwrap_or_default();
        &after[..super::encoding::prefix_len(after, names)]
    }

    /// Whether the step is over (the caller stops offering).
    pub fn done(&self) -> bool {
        self.next.is_some()
    }

    /// Offers a group keyed `group`: `shard_at(place)` gives the entries of
    /// the shard holding `place` and the end of its places (a small group is
    /// one shard, ending at `PLACES`); `row` makes an entry's row from its
    /// bytes and handle, or `None` when the read's filter leaves it out.
    pub fn group<'e, H>(
        &mut self,
        group: &[u8],
        mut shard_at: impl FnMut(u32) -> (Vec<Entry<'e, H>>, u64),
        mut row: impl FnMut(&Cow<'e, [u8]>, H) -> Option<R>,
    ) {
        if self.done() {
            return;
        }
        // Where in this group the cursor is: (place, bytes of the last row
        // there, or None when the place is past).
        let mut from: Option<(u32, Option<&[u8]>)> = None;
        if let Some(after) = self.page.after.as_deref() {
            match after.strip_prefix(group) {
                Some(rest) if rest.len() >= 5 => {
                    let place = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
                    from = Some((place, (rest[4] == ROW).then(|| &rest[5..])));
                }
                _ if group <= after => return,
                _ => {}
            }
        }
        let mut place = from.map_or(0, |(p, _)| u64::from(p));
        self.looked += 1;
        while place < PLACES {
            let (mut entries, end) = shard_at(place as u32);
            self.looked += entries.len();
            if let Some((at, last)) = from {
                entries.retain(|(p, bytes, _)| {
                    *p > at || (*p == at && last.is_some_and(|l| **bytes > *l))
                });
            }
            entries.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            for (p, bytes, handle) in entries {
                let Some(r) = row(&bytes, handle) else {
                    continue;
                };
                if self.rows.len() == self.page.count {
                    self.next = self.last.take();
                    return;
                }
                self.rows.push(r);
                self.last = Some(row_key(group, p, &bytes));
            }
            place = end;
            if self.looked >= self.budget {
                let past = (place - 1) as u32;
                self.next = Some([group, &past.to_be_bytes(), &[PAST]].concat());
                return;
            }
        }
    }

    /// The rows taken, and the next cursor (`0` once the rows are done).
    pub fn finish(self) -> (Vec<R>, Vec<u8>) {
        let next = self.next.map_or_else(|| b"0".to_vec(), |k| to_hex(&k));
        (self.rows, next)
    }
}

/// A step over rows that are keys themselves (partitions), ascending from
/// the cursor; each costs one entry of the budget, taken or not.
impl<'p, R> Step<'p, R> {
    /// Where the walk starts: rows at or before it are done.
    pub fn after(&self) -> &'p [u8] {
        self.page.after.as_deref().unwrap_or_default()
    }

    /// Offers the row keyed `key` (`None`: filtered out).
    pub fn key(&mut self, key: &[u8], row: Option<R>) {
        if self.done() || self.page.after.as_deref().is_some_and(|a| key <= a) {
            return;
        }
        self.looked += 1;
        if let Some(r) = row {
            if self.rows.len() == self.page.count {
                self.next = self.last.take();
                return;
            }
            self.rows.push(r);
            self.last = Some(key.to_vec());
        }
        if self.looked >= self.budget && !self.done() {
            self.next = Some(key.to_vec());
        }
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

    /// Key rows: pages go on after the cursor's row whatever changed.
    #[test]
    fn pages_go_on_after_the_cursor() {
        let walk = |cursor: &str, count: &str, keys: &[&str]| {
            let page = page(cursor, Some(count));
            let mut step = Step::new(&page);
            for k in keys {
                step.key(k.as_bytes(), Some(k.to_string()));
            }
            let (rows, next) = step.finish();
            (rows, String::from_utf8(next).unwrap())
        };
        let (first, next) = walk("0", "2", &["a", "b", "c", "d", "e"]);
        assert_eq!((first, next.as_str()), (vec!["a".into(), "b".into()], "62"));
        // "a" goes and "bb" comes meanwhile: "bb" is after the cursor.
        let changed = ["b", "bb", "c", "d", "e"];
        let (second, next) = walk(&next, "2", &changed);
        assert_eq!(second, ["bb", "c"]);
        let (third, next) = walk(&next, "5", &changed);
        assert_eq!((third, next.as_str()), (vec!["d".into(), "e".into()], "0"));
        assert_eq!(page("0", None).count, DEFAULT_COUNT);
    }

    /// Groups of hashed entries, most filtered out: every kept entry comes
    /// once across the steps, no page is over COUNT, and no step looks at
    /// much more than its budget, also while the tables grow between steps.
    #[test]
    fn group_walks_are_bounded_and_see_each_row_once() {
        use crate::tuples::encoding;
        use crate::tuples::table::{place_of, Table};
        use std::hash::BuildHasher;
        let hasher = hashbrown::DefaultHashBuilder::default();
        let h = |k: &u64| hasher.hash_one(k.to_be_bytes());
        let groups: Vec<Vec<u8>> = ["g1", "g2", "g3"]
            .iter()
            .map(|g| encoding::encode([g.as_bytes()]))
            .collect();
        let mut tables: Vec<Table<u64>> = vec![Table::new(), Table::new(), Table::new()];
        for k in 0..30_000u64 {
            tables[(k % 3) as usize].insert_unique(h(&k), k, h);
        }
        let kept = |k: u64| k.is_multiple_of(10);
        let (mut cursor, mut seen, mut steps) = ("0".to_string(), Vec::new(), 0);
        let mut added = 30_000u64;
        loop {
            let page = page(&cursor, Some("25"));
            let mut step = Step::new(&page);
            let mut looked = 0;
            for (g, table) in groups.iter().zip(&tables) {
                if g.as_slice() < step.first_group(1) {
                    continue;
                }
                step.group(
                    g,
                    |place| {
                        let (shard, end) = table.shard_at(place);
                        let entries: Vec<_> = shard
                            .map(|&k| (place_of(h(&k)), k.to_be_bytes().to_vec().into(), k))
                            .collect();
                        looked += entries.len();
                        (entries, end)
                    },
                    |_, k| kept(k).then_some(k),
                );
            }
            let (rows, next) = step.finish();
            assert!(rows.len() <= 25);
            assert!(looked <= 1024 + 3 * SHARD_MOST, "a step looked at {looked}");
            seen.extend(rows);
            steps += 1;
            // Rows come meanwhile (some seen, some not: either is right).
            for _ in 0..50 {
                tables[(added % 3) as usize].insert_unique(h(&added), added, h);
                added += 1;
            }
            cursor = String::from_utf8(next).unwrap();
            if cursor == "0" {
                break;
            }
        }
        let mut once = seen.clone();
        once.sort_unstable();
        once.dedup();
        assert_eq!(once.len(), seen.len(), "a row came twice");
        let present: Vec<u64> = (0..30_000).filter(|&k| kept(k)).collect();
        assert!(present.iter().all(|k| once.binary_search(k).is_ok()));
        assert!(steps > 30_000 / 1024, "{steps} steps");
    }

    /// Entries a shard of a table holds at most (twice the average).
    const SHARD_MOST: usize = 2 * crate::tuples::table::SHARD_ENTRIES;

    #[test]
    fn cursor_and_count_split_off_the_names() {
        let toks: Vec<&[u8]> = vec![b"day", b"d1", b"cursor", b"0", b"COUNT", b"3"];
        let (rest, page) = Page::split(&toks, |_| false).unwrap();
        assert_eq!(rest, [&b"day"[..], b"d1"]);
        assert_eq!(
            page,
            Some(Page {
                after: None,
                count: 3
            })
        );
        let toks: Vec<&[u8]> = vec![b"day", b"d1"];
        assert_eq!(Page::split(&toks, |_| false).unwrap().1, None);
        let toks: Vec<&[u8]> = vec![b"CURSOR", b"0", b"CURSOR", b"0"];
        assert!(Page::split(&toks, |_| false)
            .unwrap_err()
            .to_string()
            .contains("more than once"));
        let toks: Vec<&[u8]> = vec![b"CURSOR"];
        assert!(Page::split(&toks, |_| false)
            .unwrap_err()
            .to_string()
            .contains("needs a value"));
    }

    #[test]
    fn declared_names_are_never_cursor_or_count() {
        let toks: Vec<&[u8]> = vec![b"count", b"x", b"CURSOR", b"0", b"COUNT", b"2"];
        let (rest, page) = Page::split(&toks, |t| t == b"count").unwrap();
        assert_eq!(rest, [&b"count"[..], b"x"]);
        assert_eq!(page.map(|p| p.count), Some(2));
        let toks: Vec<&[u8]> = vec![b"count", b"x"];
        assert_eq!(Page::split(&toks, |t| t == b"count").unwrap().1, None);
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
