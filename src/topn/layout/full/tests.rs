//! Shared helpers of the full layout's unit tests (`check_invariants`, which the model tests
//! use too, samples, answers compared) and the tests of its reads.

use super::bucket::EMPTY;
use super::bucket::MOVED;
use super::key::*;
use super::members::{cell_id, EMPTY_CELL, TOMB};
use super::paths::PATHS;
use crate::topn::storage::Cells;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::collections::HashMap;

pub(super) const H: i64 = 3_600_000;

pub(super) fn top_owned(t: &Full, n: usize, at: i64) -> Vec<(Vec<u8>, i64)> {
    t.top(n, at)
        .into_iter()
        .map(|(m, c)| (m.to_vec(), c))
        .collect()
}

pub(super) fn row(m: &str, c: i64) -> (Vec<u8>, i64) {
    (m.as_bytes().to_vec(), c)
}

/// Checks internal invariants: totals (over the aggregate's part of each bucket), clock
/// totals, refs, `extra`s, the aggregate bounds, index, clock index and lookup consistency.
pub(super) fn check_invariants(t: &Full) {
    let mut totals: HashMap<u32, (i128, u32)> = HashMap::new();
    let mut seen_agg_bucket = false;
    for (bi, b) in t.buckets.iter().enumerate() {
        let mut n = 0;
        let skip = if bi == 0 && t.is_stale(b.idx) {
            t.retire_pos
        } else {
            0
        };
        let cells = b.cells();
        let mut table_ids = std::collections::HashSet::new();
        for pos in 0..cells {
            let (id, v) = b.cell(pos);
            if id == EMPTY || id == MOVED {
                assert_eq!(v, 0, "an empty or moved cell holds a count");
                continue;
            }
            n += 1;
            if pos < skip {
                assert_eq!(v, 0, "freed entry keeps a count");
                continue;
            }
            table_ids.insert(id);
            let e = totals.entry(id).or_insert((0, 0));
            e.1 += 1;
            if t.cell_in_agg(b.idx, pos) {
                e.0 += v as i128;
            }
            assert!(v >= b.min_val && v <= b.max_val);
            assert!(t.m.names.slot(id).is_live(), "entry of a freed member");
        }
        assert_eq!(n, b.len);
        if let Some(p) = &b.packed {
            let mut want: Vec<(u32, i64)> = b.table_iter().filter(|e| e.1 != 0).collect();
            want.sort_unstable();
            assert_eq!(
                p.entries().collect::<Vec<_>>(),
                want,
                "packed copy of {}",
                b.idx
            );
        }
        if let Some(x) = &b.extra {
            assert!(b.idx <= t.agg_lo, "extra on a bucket of the aggregate");
            assert!(x.extra.is_none());
            let mut nx = 0;
            for (xpos, (id, v)) in (0..x.cells()).map(|c| (c, x.cell(c))) {
                if id == EMPTY || id == MOVED {
                    continue;
                }
                nx += 1;
                if skip > cells && xpos < skip - cells {
                    assert_eq!(v, 0, "freed extra entry keeps a count");
                    continue;
                }
                assert!(!table_ids.contains(&id), "member in a table and its extra");
                totals.entry(id).or_insert((0, 0)).1 += 1;
                assert!(v >= b.min_val && v <= b.max_val);
            }
            assert_eq!(nx, x.len);
        }
        if b.idx == t.agg_lo {
            seen_agg_bucket = true;
        }
    }
    if t.agg_pos > 0 {
        assert!(seen_agg_bucket, "aging cursor on a bucket that is gone");
    }
    // Clock totals: every stored count (freed cells hold 0).
    let mut clock: HashMap<u32, i128> = HashMap::new();
    for b in &t.buckets {
        b.for_each(&mut |id, v| *clock.entry(id).or_insert(0) += v as i128);
    }
    let mut live = 0;
    let mut name_bytes = 0;
    for id in t.m.ids() {
        let s = t.m.meta(id);
        live += 1;
        name_bytes += t.m.name(id).len();
        let (sum, refs) = totals.get(&id).copied().unwrap_or((0, 0));
        assert_eq!(t.m.total(id), sum, "total of member {id}");
        assert_eq!(s.refs, refs, "refs of member {id}");
        assert!(refs > 0, "member {id} kept without refs");
        assert_eq!(s.hash, t.m.hash_name(t.m.name(id)));
        assert_eq!(t.m.find(t.m.name(id), s.hash), Some(id));
        assert!(t.m.names.index_contains(id));
        let want = clock.get(&id).copied().unwrap_or(0);
        assert_eq!(t.m.clock_total(id), want, "clock total of member {id}");
        assert!(
            t.m.names.clock_index_consistent(id),
            "clock index entry of member {id}"
        );
    }
    if t.m.names.clock_index_ready() {
        assert_eq!(t.m.names.clock_index_len(), live);
    }
    assert_eq!(live, t.m.live);
    assert_eq!(name_bytes, t.m.name_bytes);
    assert_eq!(t.m.names.index_len(), live);
    assert_eq!(t.m.nslots, t.m.names.slots());
    assert_eq!(t.m.free_ids.len() + live, t.m.nslots);
    let cells = |tb: &Cells<u64>| {
        (0..tb.len())
            .map(|i| tb.get(i))
            .filter(|c| *c != EMPTY_CELL && cell_id(*c) != TOMB)
            .count()
    };
    assert_eq!(cells(&t.m.table) + cells(&t.m.old), live);
    assert!((0..t.m.table.len()).all(|i| cell_id(t.m.table.get(i)) != TOMB));
    assert_eq!(
        t.total_entries,
        t.buckets.iter().map(|b| b.entries()).sum::<usize>()
    );
    let neg: BTreeSet<i64> = t
        .buckets
        .iter()
        .filter(|b| b.min_val < 0)
        .map(|b| b.idx)
        .collect();
    assert_eq!(t.neg, neg);
    for w in t.buckets.iter().collect::<Vec<_>>().windows(2) {
        assert!(w[0].idx < w[1].idx);
    }
}

/// Counts whose totals go beyond i64 once bucket 0 (a: -5) leaves the window: a's total is
/// then MAX + 5, b's MAX - 1.
pub(super) fn beyond_i64() -> Full {
    let mut t = Full::new(1000, 3);
    t.set_retire_budget(1);
    t.incr(b"a", -5, 0).unwrap();
    t.incr(b"a", i64::MAX, 1000).unwrap();
    t.incr(b"a", 5, 2000).unwrap();
    t.incr(b"b", i64::MAX - 1, 2000).unwrap();
    t
}

pub(super) fn sample(seed: u64, members: usize, events: usize) -> Full {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = Full::new(1000, 4);
    let mut now = 0;
    for _ in 0..events {
        if rng.gen_ratio(1, 20) {
            now += rng.gen_range(0..1500);
        }
        let m = format!("m{}", rng.gen_range(0..members));
        let by = if rng.gen_ratio(1, 10) {
            -2
        } else {
            rng.gen_range(1..4)
        };
        let at = if rng.gen_ratio(1, 10) {
            (now - 2500).max(0)
        } else {
            now
        };
        t.incr(m.as_bytes(), by, at).unwrap();
    }
    t
}

pub(super) fn same_answers(a: &Full, b: &Full, names: &[Vec<u8>]) {
    let c = a.clock().unwrap_or(0);
    assert_eq!(a.clock(), b.clock());
    for k in -6..8 {
        let at = (c + k) * a.bucket_ms() + 1;
        assert_eq!(top_owned(a, 1000, at), top_owned(b, 1000, at), "at {at}");
        assert_eq!(top_owned(a, 3, at), top_owned(b, 3, at), "at {at}");
        for m in names {
            assert_eq!(a.count(m, at), b.count(m, at));
        }
    }
    assert_eq!(a.expire_at_ms(), b.expire_at_ms());
    assert_eq!(a.bucket_ms(), b.bucket_ms());
    assert_eq!(a.window(), b.window());
}

/// Every read of `t` at `at`, LAST 1 to the whole window, against sums of the buckets.
fn reads_exact(t: &Full, at: i64) {
    for k in 1..=t.window() {
        let Some(sp) = t.span(at, k) else {
            assert!(t.top_in(10, at, k).is_empty());
            continue;
        };
        for n in [1, 3, 10] {
            let want = t.top_direct(n, sp.i0, sp.i1);
            assert_eq!(t.top_in(n, at, k), want, "top_in({n}, {at}, {k})");
        }
        for (name, count) in t.top_direct(5, sp.i0, sp.i1) {
            assert_eq!(t.count_in(name, at, k), count);
        }
    }
}

/// The clock index: built by upkeep while a live bucket is aged (reads exact while it is half
/// built, with writes landing in it), walked by whole-window reads at the clock, dropped once
/// the clock passes the aged buckets.
#[test]
fn clock_index_follows_aging_and_the_clock() {
    let mut t = Full::new(1000, 4);
    for i in 0..3000i64 {
        let name = format!("m{}", (i * 7) % 700);
        t.incr(name.as_bytes(), 1 + i % 5, (i / 1000) * 1000 + 1)
            .unwrap();
    }
    // The server's time runs 3 buckets ahead of the clock (2): buckets 0 and 1 age out.
    t.observe_time(5_500);
    assert!(!t.m.names.has_clock_index());
    let mut half_built = 0;
    let mut i = 0;
    while !t.is_settled() {
        t.upkeep(5);
        if t.m.names.has_clock_index() && !t.m.names.clock_index_ready() {
            half_built += 1;
            // Writes while it is half built: into an aged bucket, and a new member.
            t.incr(format!("m{}", i % 900).as_bytes(), 2, 1_500)
                .unwrap();
            t.incr(format!("n{i}").as_bytes(), 1, 2_500).unwrap();
            i += 1;
        }
        check_invariants(&t);
        if half_built % 16 == 1 {
            reads_exact(&t, 2_001);
        }
    }
    assert!(
        half_built > 20,
        "the clock index was half built {half_built} times"
    );
    assert!(t.m.names.clock_index_ready());
    reads_exact(&t, 2_001);
    reads_exact(&t, 5_500);
    PATHS.with(|p| p.set([0; 14]));
    let whole = t.top(10, 2_001);
    assert_eq!(PATHS.with(|p| p.get())[11], 1, "a walk of the clock index");
    let sp = t.span(2_001, 4).unwrap();
    assert_eq!(whole, t.top_direct(10, sp.i0, sp.i1));
    // Writes with the index built keep it exact.
    for j in 0..500 {
        t.incr(format!("m{}", j % 300).as_bytes(), 3, 2_001)
            .unwrap();
    }
    check_invariants(&t);
    reads_exact(&t, 2_001);
    // The clock moves past the aged buckets: one index serves again.
    t.incr(b"x", 1, 5_000).unwrap();
    while !t.is_settled() {
        t.upkeep(7);
        check_invariants(&t);
    }
    assert!(!t.m.names.has_clock_index());
    reads_exact(&t, 5_000);
}

/// Flat weighted counts (every member near every other): the fast plans of a `LAST k` read
/// would give up, and the planner (`plan.rs`) knows it before trying: every read sums at once,
/// the first as the later ones, of any `k`; every answer stays exact.
#[test]
fn reads_that_had_to_sum_sum_at_once() {
    let mut t = Full::new(1_000, 12);
    let mut rng = StdRng::seed_from_u64(5);
    let mut exact: HashMap<(String, i64), i64> = HashMap::new();
    for b in 0..12i64 {
        for _ in 0..6_000 {
            let m = format!("m{}", rng.gen_range(0..20_000));
            let by = rng.gen_range(1..100);
            t.incr(m.as_bytes(), by, b * 1_000).unwrap();
            *exact.entry((m, b)).or_default() += by;
        }
    }
    while !t.is_settled() {
        t.upkeep(1_000);
    }
    let mut expected: HashMap<&str, i64> = HashMap::new();
    for ((m, b), c) in &exact {
        if *b >= 6 {
            *expected.entry(m).or_default() += c;
        }
    }
    let mut expected: Vec<(Vec<u8>, i64)> = expected
        .into_iter()
        .map(|(m, c)| (m.as_bytes().to_vec(), c))
        .collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    expected.truncate(10);
    let tried = |t: &Full| {
        PATHS.with(|p| p.set([0; 14]));
        let rows: Vec<(Vec<u8>, i64)> = t
            .top_in(10, 11_999, 6)
            .into_iter()
            .map(|(m, c)| (m.to_vec(), c))
            .collect();
        assert_eq!(rows, expected);
        let p = PATHS.with(|p| p.get());
        (p[1] + p[12] > 0, p[2] > 0)
    };
    for _ in 0..9 {
        assert_eq!(tried(&t), (false, true), "every read sums at once");
    }
    PATHS.with(|p| p.set([0; 14]));
    let rows = t.top_in(10, 11_999, 5);
    let p = PATHS.with(|p| p.get());
    assert_eq!((p[1] + p[12], p[2]), (0, 1), "LAST 5 sums at once");
    let mut last5: HashMap<&str, i64> = HashMap::new();
    for ((m, b), c) in &exact {
        if *b >= 7 {
            *last5.entry(m).or_default() += c;
        }
    }
    let mut last5: Vec<(&[u8], i64)> = last5.into_iter().map(|(m, c)| (m.as_bytes(), c)).collect();
    last5.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    last5.truncate(10);
    assert_eq!(rows, last5);
}

/// A load packs the sealed buckets at once (a replica's first reads sum packed copies).
#[test]
fn a_load_packs_sealed_buckets() {
    let mut t = Full::new(1_000, 4);
    for b in 0..3i64 {
        for i in 0..5_000 {
            t.incr(format!("m{i}").as_bytes(), 1 + i % 7, b * 1_000)
                .unwrap();
        }
    }
    let d = Full::decode_at(&t.encode(), Some(2_500)).unwrap();
    let packed: Vec<bool> = d.buckets.iter().map(|b| b.packed.is_some()).collect();
    assert_eq!(
        packed,
        [true, true, false],
        "the two sealed buckets, not the newest"
    );
    assert_eq!(d.top_in(5, 2_999, 2), t.top_in(5, 2_999, 2));
}
