//! Threshold merges (Fagin's threshold algorithm) for reads of a few buckets, such as `LAST 2`:
//! the buckets' entries are read in descending count order, each member seen is counted over
//! the whole read window by one lookup per bucket, and the merge stops as soon as the n-th
//! best count is above the most any member not seen yet can have: the sum of the lists'
//! next counts. On skewed data that is a few dozen entries, where a sum reads every entry of
//! the buckets and a slot per member.
//!
//! A sealed bucket's order is its packed copy's prefix (`packed.rs`, made by the upkeep
//! timer); another bucket's (the newest, still taking writes) is selected at read time from
//! its cells, which costs a scan of them. Members whose count is not positive in a bucket are
//! not in its list: an unseen member's count there is at most the list's next count (or the
//! bound of the entries a list left out, or 0). A merge that finds fewer than n positive
//! counts, or would read past a list's end, or past its budget, gives up (the caller sums).

use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use super::bucket::Bucket;
use super::key::Full;
use super::members::IdHasher;
use super::packed::{packable, word, word_count, PrefixBuilder};
use super::read::{Best, Span, LOOKUP_COST};
use crate::topn::select::Rows;

/// Entries of a list selected at read time (from a bucket without a prefix).
const READ_PREFIX_LEN: usize = 256;

#[cfg(test)]
thread_local! {
    /// Test-only: lists selected from a bucket's cells at read time (a scan each).
    pub(super) static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One bucket's positive entries, highest count first, as far as known: words
/// `id << 32 | count`; the entries left out have a count of at most `rest`.
pub(super) struct List<'a> {
    words: Cow<'a, [u64]>,
    rest: i64,
    pos: usize,
    /// The most a count of the list can be (a stand-in's: its bucket's maximum).
    max: i64,
}

impl List<'_> {
    /// The first `n` entries (words), highest count first.
    pub(super) fn head(&self, n: usize) -> &[u64] {
        &self.words[..n.min(self.words.len())]
    }

    /// The most a member not read from this list yet can count in its bucket.
    #[inline]
    fn frontier(&self) -> i64 {
        self.words
            .get(self.pos)
            .map_or(self.rest, |w| word_count(*w))
            .min(self.max)
    }
}

impl Bucket {
    /// Whether the bucket's order is known without a scan (a packed copy and no `extra`).
    #[inline]
    pub(super) fn has_prefix(&self) -> bool {
        self.packed.is_some() && self.extra.is_none()
    }

    /// The bucket's list: its packed prefix, or one selected from its cells now.
    fn list(&self) -> List<'_> {
        if let (Some(p), None) = (&self.packed, &self.extra) {
            let prefix = p.prefix();
            return List {
                words: Cow::Borrowed(&prefix.words),
                rest: prefix.rest,
                pos: 0,
                max: i64::MAX,
            };
        }
        #[cfg(test)]
        SCANNED.with(|c| c.set(c.get() + 1));
        let mut builder = PrefixBuilder::new(READ_PREFIX_LEN);
        // Internal iteration: the cells are a chain of runs, which a `for` loop would step
        // through one state check at a time.
        self.cell_counts().for_each(|(count, cell)| {
            if count > 0 {
                builder.push(word(cell, count));
            }
        });
        let prefix = builder.finish();
        let words = prefix
            .words
            .iter()
            .map(|&w| word(self.any_cell((w >> 32) as usize).0, word_count(w)))
            .collect();
        List {
            words: Cow::Owned(words),
            rest: prefix.rest,
            pos: 0,
            max: i64::MAX,
        }
    }
}

impl Full {
    /// The model's cost of starting a merge over `sp`: a scan of the cells of each bucket
    /// without a prefix. `None` when a bucket cannot take part (a count beyond an i32).
    pub(super) fn merge_setup_cost(&self, sp: &Span) -> Option<usize> {
        let mut cost = 0;
        for b in self.buckets.range(sp.i0..sp.i1) {
            if !b.has_prefix() {
                if !packable(b.min_val, b.max_val) {
                    return None;
                }
                cost += b.scan_cost();
            }
        }
        Some(cost)
    }

    /// The lists of the buckets of `sp`, for `merge_lists` (a scan of each bucket without a
    /// prefix: see `merge_setup_cost`).
    pub(super) fn lists(&self, sp: &Span) -> Vec<List<'_>> {
        self.buckets.range(sp.i0..sp.i1).map(Bucket::list).collect()
    }

    /// The lists of the buckets of `sp` known without a scan (their packed prefixes).
    pub(super) fn free_lists(&self, sp: &Span) -> Vec<List<'_>> {
        self.buckets
            .range(sp.i0..sp.i1)
            .filter(|b| b.has_prefix())
            .map(Bucket::list)
            .collect()
    }

    /// The planner's guess of the lists of `sp` before it pays the scans (`plan.rs`): the free
    /// lists, and for each bucket without a prefix a stand-in, the newest free list with its
    /// counts cut at that bucket's maximum (the buckets of one stream tend to look alike: on
    /// flat counts the newest bucket's list falls as slowly as the others'). With no free list,
    /// only the free lists (none): as if the others' counts were 0.
    pub(super) fn guessed_lists(&self, sp: &Span) -> Vec<List<'_>> {
        let span = || self.buckets.range(sp.i0..sp.i1);
        let Some(model) = span().rev().find(|b| b.has_prefix()) else {
            return Vec::new();
        };
        span()
            .map(|b| match b.has_prefix() {
                true => b.list(),
                false => List {
                    max: b.max_val,
                    ..model.list()
                },
            })
            .collect()
    }

    /// The top `want` over `sp` by a threshold merge of its buckets' lists, or `None` when the
    /// merge gives up: fewer than `want` positive counts, a list read to a cut end, or more
    /// than `cap` spent after the lists are made (a unit per entry read, `LOOKUP_COST` per
    /// bucket for each member seen).
    #[cfg(test)]
    pub(super) fn top_by_merge(&self, want: usize, sp: &Span, cap: usize) -> Option<Rows<'_>> {
        self.merge_lists(want, sp, self.lists(sp), cap)
    }

    /// `top_by_merge` over lists made already.
    pub(super) fn merge_lists<'a>(
        &'a self,
        want: usize,
        sp: &Span,
        mut lists: Vec<List<'a>>,
        cap: usize,
    ) -> Option<Rows<'a>> {
        let mut tally = Counted {
            span: self.buckets.range(sp.i0..sp.i1).collect(),
            best: Best::new(want),
            full: self,
        };
        threshold_merge(&mut lists, sp.i1 - sp.i0, cap, &mut tally)?;
        Some(tally.best.into_rows())
    }
}

/// What a threshold merge learns of the members it reads, and when it may stop.
trait Tally {
    /// The n-th best count known so far: the merge stops once no member not read yet can
    /// reach it.
    fn nth(&self) -> Option<i128>;
    /// A member read for the first time.
    fn seen(&mut self, id: u32);
}

/// The merge proper: each member seen counted over the read window.
struct Counted<'a> {
    span: Vec<&'a Bucket>,
    best: Best<'a>,
    full: &'a Full,
}

impl Tally for Counted<'_> {
    fn nth(&self) -> Option<i128> {
        self.best.nth().map(|(count, _)| count)
    }

    fn seen(&mut self, id: u32) {
        let count: i128 = self.span.iter().map(|b| b.get(id) as i128).sum();
        if count > 0 {
            self.best.offer(count, self.full.m.name(id));
        }
    }
}

/// The planner's rehearsal of a merge (`plan.rs`): no counts, only a floor of the read window's
/// n-th best count, which the merge's own n-th best reaches by the time this one stops.
struct Rehearsal(i128);

impl Tally for Rehearsal {
    fn nth(&self) -> Option<i128> {
        Some(self.0)
    }

    fn seen(&mut self, _id: u32) {}
}

/// The cost of a merge of `lists` that stops at the latest where the sum of the lists' next
/// counts falls below `floor`, if it stays within `cap` and its lists are long enough (the
/// lists are left as they were). Exact for the merge itself: it reads in the same order and
/// stops no later, since every member not read by then counts below `floor` (at most the lists'
/// next counts), so the n best were all read and its n-th best is at least `floor`.
/// `span` is the read window's bucket count (the lookups a member seen costs): more than the
/// lists' when some are left out, as if their next counts were 0 (a merge can stop no earlier).
pub(super) fn rehearse(
    lists: &mut [List<'_>],
    span: usize,
    cap: usize,
    floor: i128,
) -> Option<usize> {
    let cost = threshold_merge(lists, span, cap, &mut Rehearsal(floor));
    lists.iter_mut().for_each(|l| l.pos = 0);
    cost
}

/// The lists' entries in descending count order, each member `seen` once, until no member not
/// read yet can reach the tally's n-th best (then the cost spent), or `None` when a list is
/// read to a cut end first or more than `cap` is spent.
fn threshold_merge(
    lists: &mut [List<'_>],
    span: usize,
    cap: usize,
    tally: &mut impl Tally,
) -> Option<usize> {
    let mut seen: HashSet<u32, BuildHasherDefault<IdHasher>> = HashSet::default();
    let mut cost = 0usize;
    loop {
        let mut threshold: i128 = 0;
        let mut next: Option<(usize, i64)> = None;
        for (i, l) in lists.iter().enumerate() {
            let f = l.frontier();
            threshold += f as i128;
            if l.pos < l.words.len() && next.is_none_or(|(_, best)| f > best) {
                next = Some((i, f));
            }
        }
        if tally.nth().is_some_and(|worst| threshold < worst) {
            return Some(cost);
        }
        // Every list is read: a list cut short, or too few positive counts.
        let (i, _) = next?;
        let w = lists[i].words[lists[i].pos];
        lists[i].pos += 1;
        cost += 1;
        let id = (w >> 32) as u32;
        if !seen.insert(id) {
            continue;
        }
        cost += LOOKUP_COST * span;
        if cost > cap {
            return None;
        }
        tally.seen(id);
    }
}
