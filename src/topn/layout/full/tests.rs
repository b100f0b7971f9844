//! Unit tests of the window: tables, members, retirement, reads, encoding; and
//! `check_invariants`, which the model tests use too.

use super::bucket::{Bucket, MOVED};
use super::members::{cell_id, Members, EMPTY_CELL, TOMB};
use super::retire::Graveyard;
use super::*;
use crate::topn::encoding::{DecodeError, ENCODING_VERSION};
use crate::topn::select::clamp_i64;
use crate::topn::storage::Cells;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, HashMap, VecDeque};

const H: i64 = 3_600_000;

pub(super) fn top_owned(t: &Full, n: usize, at: i64) -> Vec<(Vec<u8>, i64)> {
    t.top(n, at)
        .into_iter()
        .map(|(m, c)| (m.to_vec(), c))
        .collect()
}

fn row(m: &str, c: i64) -> (Vec<u8>, i64) {
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

#[test]
fn lazy_cells() {
    for len in [0usize, 1, 511, 512, 513, 4096, 4097, 5000, 70_000] {
        let mut c = Cells::new(len, 7u32);
        let mut model = vec![7u32; len];
        let mut rng = StdRng::seed_from_u64(len as u64);
        for _ in 0..len / 3 {
            let i = rng.gen_range(0..len);
            let v = rng.gen();
            c.set(i, v);
            model[i] = v;
        }
        assert!((0..len).all(|i| c.get(i) == model[i]));
        let d = c.clone();
        assert!((0..len).all(|i| d.get(i) == model[i]));
    }
}

#[test]
fn bucket_table_incremental_growth() {
    let mut rng = StdRng::seed_from_u64(8);
    let mut b = Bucket::new(3);
    let mut model: HashMap<u32, i64> = HashMap::new();
    let mut mid = 0;
    for step in 0..50_000 {
        let id = rng.gen_range(0..20_000u32);
        assert_eq!(b.get(id), model.get(&id).copied().unwrap_or(0));
        let (c, inserted) = b.entry(id);
        assert_eq!(inserted, !model.contains_key(&id));
        assert_eq!(b.cell(c).0, id);
        let v = model.get(&id).copied().unwrap_or(0) + rng.gen_range(-2..5);
        b.set(c, v);
        model.insert(id, v);
        mid += b.old.is_some() as usize;
        if step % 997 == 0 {
            assert_eq!(b.len, model.len());
            let mut got: Vec<(u32, i64)> = b.iter().collect();
            got.sort();
            let mut want: Vec<(u32, i64)> = model.iter().map(|(k, v)| (*k, *v)).collect();
            want.sort();
            assert_eq!(got, want);
            let cells = (0..b.cells())
                .filter(|c| !matches!(b.cell(*c).0, EMPTY | MOVED))
                .count();
            assert_eq!(cells, model.len());
            for (k, v) in &model {
                assert_eq!(b.cell(b.find(*k).unwrap()).1, *v);
            }
            assert!(b.min_val <= *model.values().min().unwrap().min(&0));
        }
    }
    assert!(mid > 1000, "growth was never caught in progress ({mid})");
}

#[test]
fn growth_finishes_without_writes_to_the_bucket() {
    let mut t = Full::new(1000, 4);
    let mut i = 0u32;
    // Stop writing bucket 0 right after a growth started.
    loop {
        t.incr(&i.to_le_bytes(), 1, 0).unwrap();
        i += 1;
        if i > 5000 && t.buckets[0].old.is_some() {
            break;
        }
    }
    for k in 0..10_000u32 {
        t.incr(&k.to_be_bytes(), 1, 1000).unwrap();
    }
    assert!(
        t.buckets[0].old.is_none(),
        "bucket 0 still holds its previous table"
    );
    assert!(t.growing.iter().all(|&idx| idx == 1));
    check_invariants(&t);
}

#[test]
fn member_table_incremental_rehash() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut m = Members::new();
    let mut model: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut saw_old = 0;
    for step in 0..60_000 {
        let name = format!("n{}", rng.gen_range(0..5000)).into_bytes();
        let h = m.hash_name(&name);
        let found = m.find(&name, h);
        assert_eq!(found, model.get(&name).copied(), "step {step}");
        match found {
            None => {
                let id = m.intern(&name, h);
                m.meta_mut(id).refs = 1;
                model.insert(name, id);
            }
            Some(id) => {
                if rng.gen_ratio(1, 2) {
                    m.release(id);
                    model.remove(&name);
                } else {
                    let t = m.total(id) + rng.gen_range(-3..4);
                    m.set_total(id, t);
                }
            }
        }
        if m.old.len() > 0 {
            saw_old += 1;
        }
        if step % 1000 == 0 {
            assert_eq!(m.live, model.len());
            assert_eq!(m.names.index_len(), model.len());
            let mut keys: Vec<(i64, Vec<u8>)> = model
                .iter()
                .map(|(n, id)| (-clamp_i64(m.total(*id)), n.clone()))
                .collect();
            keys.sort();
            let got: Vec<(i64, Vec<u8>)> = m
                .names
                .index_iter()
                .map(|k| (-k.total(), k.bytes().to_vec()))
                .collect();
            assert_eq!(got, keys);
            let c = m.clone();
            for (n, id) in &model {
                assert_eq!(c.find(n, c.hash_name(n)), Some(*id));
                assert_eq!(c.name(*id), &n[..]);
            }
        }
    }
    assert!(saw_old > 100, "the old table was never live ({saw_old})");
    let mut g = Graveyard {
        members: m,
        buckets: VecDeque::new(),
    };
    let mut steps = 0;
    while !g.is_empty() {
        assert!(g.step(7) <= 7);
        steps += 1;
    }
    assert!(steps > 100);
}

#[test]
fn bucket_arithmetic_and_window_bounds() {
    let mut t = Full::new(1000, 3);
    assert_eq!(t.bucket_of(0), 0);
    assert_eq!(t.bucket_of(999), 0);
    assert_eq!(t.bucket_of(1000), 1);
    assert_eq!(t.incr(b"a", 1, 999).unwrap(), 1); // bucket 0
    assert_eq!(t.incr(b"a", 10, 1000).unwrap(), 11); // bucket 1
    assert_eq!(t.incr(b"a", 100, 2999).unwrap(), 111); // bucket 2
                                                       // Window ending in bucket 2 = buckets 0..=2.
    assert_eq!(t.count(b"a", 2000), 111);
    assert_eq!(t.count(b"a", 2999), 111);
    // Bucket 3: buckets 1..=3.
    assert_eq!(t.count(b"a", 3000), 110);
    assert_eq!(t.count(b"a", 3999), 110);
    assert_eq!(t.count(b"a", 4000), 100);
    assert_eq!(t.count(b"a", 5000), 0);
    // Before the clock: windows ending in bucket 1 and 0.
    assert_eq!(t.count(b"a", 1999), 11);
    assert_eq!(t.count(b"a", 0), 1);
    assert_eq!(t.top(10, 3500), vec![(&b"a"[..], 110)]);
    assert_eq!(t.expire_at_ms(), Some(5000));
    assert_eq!(t.buckets_in_use(), 3);
    // Default sizes: one hour x 24.
    let mut d = Full::new(H, 24);
    d.incr(b"x", 1, 5 * H + 1).unwrap();
    assert_eq!(d.count(b"x", 5 * H + 23 * H + H - 1), 1);
    assert_eq!(d.count(b"x", 5 * H + 24 * H), 0);
    assert_eq!(d.expire_at_ms(), Some(29 * H));
    assert_eq!(Full::new(H, 24).expire_at_ms(), None);
}

#[test]
fn ties_zero_and_negative() {
    let mut t = Full::new(1000, 5);
    for m in [&b"b"[..], b"ab", b"a", b"a\0", b"\xff", b""] {
        t.incr(m, 2, 10).unwrap();
    }
    t.incr(b"z", 3, 10).unwrap();
    let top = top_owned(&t, 10, 10);
    let expect: Vec<(Vec<u8>, i64)> = vec![
        (b"z".to_vec(), 3),
        (b"".to_vec(), 2),
        (b"a".to_vec(), 2),
        (b"a\0".to_vec(), 2),
        (b"ab".to_vec(), 2),
        (b"b".to_vec(), 2),
        (b"\xff".to_vec(), 2),
    ];
    assert_eq!(top, expect);
    assert_eq!(top_owned(&t, 3, 10), expect[..3].to_vec());
    // Zero counts are hidden; negatives listed last.
    assert_eq!(t.incr(b"z", -3, 10).unwrap(), 0);
    assert_eq!(t.incr(b"neg", -4, 1010).unwrap(), -4);
    assert_eq!(t.incr(b"neg2", -1, 1010).unwrap(), -1);
    let top = top_owned(&t, 100, 1010);
    assert_eq!(top.len(), 8);
    assert_eq!(top[6], row("neg2", -1));
    assert_eq!(top[7], row("neg", -4));
    assert!(top.iter().all(|(m, _)| m != b"z"));
    assert_eq!(t.count(b"z", 1010), 0);
    // Cancel across buckets: +5 in bucket 1, -5 in bucket 2.
    t.incr(b"c", 5, 1500).unwrap();
    t.incr(b"c", -5, 2500).unwrap();
    assert_eq!(t.count(b"c", 2500), 0);
    assert!(top_owned(&t, 100, 2500).iter().all(|(m, _)| m != b"c"));
    // Read ending in bucket 1 sees +5 only.
    assert!(top_owned(&t, 100, 1500).contains(&row("c", 5)));
    check_invariants(&t);
}

#[test]
fn overflow_rejected_and_nothing_changed() {
    let mut t = Full::new(1000, 3);
    t.incr(b"a", i64::MAX, 0).unwrap();
    let before = t.encode();
    assert_eq!(t.incr(b"a", 1, 0), Err(Overflow));
    // Window total overflows although the new bucket would not.
    assert_eq!(t.incr(b"a", 1, 1000), Err(Overflow));
    assert_eq!(t.encode(), before, "clock must not advance either");
    assert_eq!(t.count(b"a", 1000), i64::MAX);
    assert_eq!(t.incr(b"a", -1, 1000).unwrap(), i64::MAX - 1);
    assert_eq!(t.incr(b"b", i64::MIN, 1000).unwrap(), i64::MIN);
    assert_eq!(t.incr(b"b", -1, 1000), Err(Overflow));
    assert_eq!(t.incr(b"b", -1, 2000), Err(Overflow));
    assert_eq!(t.count(b"b", 2000), i64::MIN);
    // Once bucket 0 has left the window, a = MAX-1 ... only bucket 1 (-1) remains.
    assert_eq!(t.incr(b"a", i64::MAX, 3000).unwrap(), i64::MAX - 1);
    assert_eq!(t.count(b"a", 3000), i64::MAX - 1);
    assert_eq!(t.top(1, 3000), vec![(&b"a"[..], i64::MAX - 1)]);
    check_invariants(&t);
    for _ in 0..10 {
        t.incr(b"q", 1, 3000).unwrap();
    }
    assert!(t.is_settled());
    check_invariants(&t);
}

#[test]
fn aggregate_overflow_with_stale_bucket_pending() {
    // The stale bucket still counts in the aggregate: the write must purge it, not fail.
    let mut t = Full::new(1000, 2);
    t.set_retire_budget(1);
    for i in 0..50 {
        t.incr(format!("m{i}").as_bytes(), 1, 0).unwrap();
    }
    t.incr(b"a", i64::MAX, 0).unwrap();
    t.incr(b"b", 1, 1000).unwrap();
    // Bucket 0 becomes stale, bucket 1 stays live: not a full reset.
    assert_eq!(t.incr(b"a", i64::MAX, 2000).unwrap(), i64::MAX);
    assert!(!t.is_settled());
    assert_eq!(t.count(b"a", 2000), i64::MAX);
    assert_eq!(t.top(1, 2000), vec![(&b"a"[..], i64::MAX)]);
    check_invariants(&t);
    while !t.is_settled() {
        t.incr(b"b", 1, 2000).unwrap();
        check_invariants(&t);
    }
    assert_eq!(t.count(b"a", 2000), i64::MAX);
}

#[test]
fn late_events_and_reads_around_the_clock() {
    let mut t = Full::new(10, 3);
    t.incr(b"a", 1, 100).unwrap(); // bucket 10 -> clock 10, live 8..=10
    assert_eq!(
        t.incr(b"a", 5, 79).unwrap(),
        1,
        "bucket 7 is older than the window"
    );
    assert_eq!(t.incr(b"b", 5, 79).unwrap(), 0);
    assert_eq!(t.members(), 1);
    assert_eq!(t.incr(b"a", 2, 80).unwrap(), 3, "bucket 8 is live");
    assert_eq!(t.count(b"a", 100), 3);
    assert_eq!(t.count(b"a", 80), 2);
    assert_eq!(t.count(b"a", 79), 0);
    assert_eq!(t.count(b"a", 119), 1); // window 10..=11... ends at 11: 9..=11
    assert_eq!(t.count(b"a", 120), 1);
    assert_eq!(t.count(b"a", 130), 0);
    assert_eq!(t.top(5, 95), vec![(&b"a"[..], 2)]);
    assert!(t.top(5, 79).is_empty());
    assert!(t.top(5, 1_000_000).is_empty());
    // A write far in the future resets everything.
    assert_eq!(t.incr(b"c", 1, 10_000).unwrap(), 1);
    assert_eq!(t.members(), 1);
    assert_eq!(t.count(b"a", 10_000), 0);
    assert_eq!(t.count(b"a", 100), 0, "old buckets are gone for all reads");
    assert!(t.top(5, 100).is_empty());
    assert_eq!(t.top(5, 10_000), vec![(&b"c"[..], 1)]);
    check_invariants(&t);
}

#[test]
fn by_zero_advances_clock_only() {
    let mut t = Full::new(10, 3);
    t.incr(b"a", 4, 0).unwrap();
    assert_eq!(t.incr(b"a", 0, 25).unwrap(), 4);
    assert_eq!(t.clock(), Some(2));
    assert_eq!(t.incr(b"new", 0, 25).unwrap(), 0);
    assert_eq!(t.members(), 1);
    assert_eq!(t.incr(b"a", 0, 30).unwrap(), 0);
    assert_eq!(t.expire_at_ms(), Some(60));
    let ev: Vec<_> = t.replay_events();
    assert_eq!(ev, vec![(&b""[..], 0, 30)]);
    let mut r = Full::new(10, 3);
    for (m, by, at) in ev {
        r.incr(m, by, at).unwrap();
    }
    assert_eq!(r.clock(), t.clock());
    assert_eq!(r.encode(), t.encode());
}

#[test]
fn outside_the_window_at_the_servers_time() {
    // One-minute buckets, 24 of them: at 12:00:30 the window is 11:37..12:00.
    let (m, now) = (60_000, 720 * 60_000 + 30_000);
    assert!(Full::outside_window_at(m, 0, 24, now - 41 * m, now));
    assert!(Full::outside_window_at(m, 0, 24, 696 * m + 59_999, now));
    assert!(!Full::outside_window_at(m, 0, 24, 697 * m, now));
    assert!(!Full::outside_window_at(m, 0, 24, now - 20 * m, now));
    assert!(
        !Full::outside_window_at(m, 0, 24, now + 100 * m, now),
        "the future is inside"
    );
    assert!(!Full::outside_window_at(m, 0, 1, now - 30_000, now));
    assert!(Full::outside_window_at(m, 0, 1, now - 30_001, now));
    assert!(!Full::outside_window_at(1, 0, 100_000, 0, 0));
    // The key's own window (at its clock) is the other rule.
    let mut t = Full::new(m, 3);
    assert!(!t.is_older_than_window(0));
    t.incr(b"a", 1, 10 * m).unwrap();
    assert!(t.is_older_than_window(8 * m - 1));
    assert!(!t.is_older_than_window(8 * m));
}

#[test]
fn upkeep_follows_the_servers_time() {
    let mut t = Full::new(1000, 3);
    assert_eq!(t.upkeep_due_ms(), None);
    for i in 0..300 {
        t.incr(format!("m{i}").as_bytes(), 1, 10_000).unwrap();
        t.incr(format!("m{i}").as_bytes(), 2, 11_000).unwrap();
    }
    t.observe_time(11_500);
    // Bucket 10 leaves the window at 13 000 (window 11..13).
    assert_eq!(t.upkeep_due_ms(), Some(13_000));
    assert!(t.is_settled());
    t.observe_time(13_000);
    assert_eq!(t.upkeep_due_ms(), Some(0), "bucket 10 is due now");
    assert!(!t.is_settled());
    let before = top_owned(&t, 5, 11_000);
    let mut steps = 0;
    while t.upkeep(16) == 16 {
        steps += 1;
        check_invariants(&t);
        // Exact in every state, at the server's time and before.
        assert_eq!(t.count(b"m7", 13_000), 2);
        assert_eq!(t.count(b"m7", 11_000), 3);
        assert_eq!(top_owned(&t, 5, 11_000), before);
    }
    assert!(steps >= 300 / 16, "aging was not spread: {steps} steps");
    assert!(t.is_settled());
    assert_eq!(t.take_aged_buckets(), 1);
    assert_eq!(t.upkeep_due_ms(), Some(14_000));
    assert_eq!(t.members(), 300, "aging keeps the data");
    // A read at the server's time now walks a plain index.
    assert_eq!(t.top(2, 13_000), vec![(&b"m0"[..], 2), (&b"m1"[..], 2)]);
    // Time going backwards changes nothing; past the whole window nothing is owed.
    t.observe_time(0);
    assert_eq!(t.upkeep_due_ms(), Some(14_000));
    t.observe_time(100_000);
    while t.upkeep(64) == 64 {}
    assert_eq!(t.upkeep_due_ms(), None);
    assert_eq!(
        t.count(b"m7", 11_000),
        3,
        "data stays until the key's clock moves"
    );
    check_invariants(&t);
}

#[test]
fn decode_at_loads_buckets_already_aged() {
    let t = sample(5, 40, 600);
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    let c = t.clock().unwrap();
    for ahead in 0..6 {
        let d = Full::decode_at(&t.encode(), Some((c + ahead) * 1000 + 1)).unwrap();
        check_invariants(&d);
        assert!(
            !d.aging_pending(),
            "no aging owed after a load ({ahead} ahead)"
        );
        same_answers(&t, &d, &names);
        // The clock index (wanted once a live bucket is aged) is built at the load.
        assert_eq!(d.m.names.clock_index_ready(), d.wants_clock_index());
        let mut d = d;
        while !d.is_settled() {
            d.upkeep(3);
            check_invariants(&d);
        }
        same_answers(&t, &d, &names);
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

#[test]
fn totals_beyond_i64_stay_exact() {
    let mut t = beyond_i64();
    assert_eq!(t.count(b"a", 2000), i64::MAX);
    // Bucket 0 leaves: a's window count is MAX + 5 (replies clamp), b's MAX - 1.
    t.incr(b"z", 1, 3000).unwrap();
    while !t.is_settled() {
        t.incr(b"z", 1, 3000).unwrap();
    }
    check_invariants(&t);
    assert_eq!(
        t.m.total(t.m.find(b"a", t.m.hash_name(b"a")).unwrap()),
        i64::MAX as i128 + 5
    );
    assert_eq!(t.count(b"a", 3000), i64::MAX);
    assert_eq!(
        t.top(2, 3000),
        vec![(&b"a"[..], i64::MAX), (&b"b"[..], i64::MAX - 1)],
        "a (MAX + 5) ranks above b (MAX - 1)"
    );
    let z = t.count(b"z", 3000);
    assert_eq!(t.top_in(1, 3000, 1), vec![(&b"z"[..], z)]);
    assert_eq!(t.count_in(b"a", 3000, 2), 5);
    // Aging by time goes through the same exact totals.
    t.observe_time(4000);
    while t.upkeep(1) == 1 {}
    check_invariants(&t);
    assert_eq!(t.top(1, 4000), vec![(&b"b"[..], i64::MAX - 1)]);
    assert_eq!(t.count(b"a", 4000), 5);
    assert_eq!(t.top(1, 3000), vec![(&b"a"[..], i64::MAX)]);
}

fn sample(seed: u64, members: usize, events: usize) -> Full {
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

#[test]
fn encode_decode_roundtrip() {
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    for seed in 0..5 {
        let t = sample(seed, 40, 400);
        let enc = t.encode();
        assert_eq!(enc[0], ENCODING_VERSION);
        let d = Full::decode(&enc).unwrap();
        check_invariants(&d);
        same_answers(&t, &d, &names);
        same_answers(&t, &Full::decode(&d.encode()).unwrap(), &names);
        assert_eq!(d.buckets_in_use(), t.buckets_in_use());
    }
    let empty = Full::new(5000, 7);
    let d = Full::decode(&empty.encode()).unwrap();
    assert_eq!((d.bucket_ms(), d.window(), d.clock()), (5000, 7, None));
    let mut bin = Full::new(1, 1);
    bin.incr(&[0, 255, 0], -3, 5).unwrap();
    bin.incr(b"", 2, 5).unwrap();
    let d = Full::decode(&bin.encode()).unwrap();
    assert_eq!(d.top(5, 5), vec![(&b""[..], 2), (&[0u8, 255, 0][..], -3)]);
}

/// The bytes follow the content alone: the same events in other orders, through other
/// table states (grown, aged, with writes into a bucket being aged), encode the same.
#[test]
fn encoding_is_a_function_of_the_content() {
    let mut rng = StdRng::seed_from_u64(21);
    let events: Vec<(Vec<u8>, i64, i64)> = (0..3000)
        .map(|_| {
            let m = format!("m{}", rng.gen_range(0..700)).into_bytes();
            (m, rng.gen_range(-2..6), rng.gen_range(0..6) * 1000 + 7)
        })
        .collect();
    let build = |order: &[usize], upkeep_at: Option<i64>| {
        let mut t = Full::new(1000, 8);
        t.set_retire_budget(3);
        // The newest bucket first, so every later event is inside the window.
        t.incr(b"m0", 1, 5007).unwrap();
        for (n, &i) in order.iter().enumerate() {
            if let (Some(now), 0) = (upkeep_at, n % 50) {
                t.observe_time(now);
                t.upkeep(7);
            }
            let (m, by, at) = &events[i];
            t.incr(m, *by, *at).unwrap();
        }
        t
    };
    let mut order: Vec<usize> = (0..events.len()).collect();
    let a = build(&order, None);
    order.reverse();
    let b = build(&order, Some(12_000));
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let c = build(&order, Some(10_500));
    assert_eq!(a.encode(), b.encode());
    assert_eq!(a.encode(), c.encode());
    assert_eq!(a.encode(), Full::decode(&c.encode()).unwrap().encode());
}

#[test]
fn decode_rejects_truncated_and_garbage() {
    let mut t = sample(7, 10, 60);
    t.incr(b"", 1, 1_000_000).unwrap();
    t.incr(b"x", 2, 999_999).unwrap();
    let enc = t.encode();
    for len in 0..enc.len() {
        assert!(
            Full::decode(&enc[..len]).is_err(),
            "truncation to {len} accepted"
        );
    }
    let mut long = enc.clone();
    long.push(0);
    assert!(Full::decode(&long).is_err());
    let mut v = enc.clone();
    v[0] = 5;
    assert_eq!(
        Full::decode(&v).unwrap_err(),
        DecodeError::UnknownVersion(5)
    );
    // Random garbage and single-byte corruptions never panic.
    let mut rng = StdRng::seed_from_u64(99);
    for _ in 0..20_000 {
        let len = rng.gen_range(0..80);
        let mut g: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if !g.is_empty() {
            g[0] = 1;
        }
        let _ = Full::decode(&g);
    }
    for i in 0..enc.len() {
        for x in [0u8, 1, 0x7f, 0x80, 0xff] {
            let mut c = enc.clone();
            c[i] ^= x;
            if let Ok(d) = Full::decode(&c) {
                check_invariants(&d);
                let _ = d.top(10, 1_000_000);
            }
        }
    }
    // Hand-made invalid inputs.
    let mut dup = Full::new(10, 2);
    dup.incr(b"a", 1, 0).unwrap();
    dup.incr(b"b", 1, 0).unwrap();
    let mut e = dup.encode();
    // Rename member 1 to member 0's name ("a"/"b" are the last byte of each name record).
    let pos = e.iter().rposition(|&c| c == b'b' || c == b'a').unwrap();
    let other = if e[pos] == b'a' { b'b' } else { b'a' };
    let _ = other;
    let first = e.iter().position(|&c| c == b'a' || c == b'b').unwrap();
    e[pos] = e[first];
    assert_eq!(
        Full::decode(&e).unwrap_err(),
        DecodeError::Invalid("duplicate member")
    );
}

#[test]
fn replay_rebuilds_equal_structure() {
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    for seed in 0..5 {
        let t = sample(seed + 100, 40, 500);
        let mut r = Full::new(t.bucket_ms(), t.window());
        for (m, by, at) in t.replay_events() {
            r.incr(m, by, at).unwrap();
        }
        same_answers(&t, &r, &names);
        let dec = Full::decode(&t.encode()).unwrap();
        let mut a = dec.replay_events();
        let mut b = r.replay_events();
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}

#[test]
fn clone_is_independent() {
    let names: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    let mut t = sample(3, 40, 300);
    let c = t.clone();
    same_answers(&t, &c, &names);
    let before = top_owned(&c, 100, 0);
    let at = (t.clock().unwrap() + 1) * 1000;
    t.incr(b"m1", 1000, at).unwrap();
    assert_eq!(top_owned(&c, 100, 0), before);
    check_invariants(&c);
    check_invariants(&t);
}

#[test]
fn retirement_is_bounded_and_completes() {
    let mut t = Full::new(1000, 2);
    t.set_retire_budget(64);
    for i in 0..100_000u32 {
        t.incr(&i.to_le_bytes(), 1, 0).unwrap();
    }
    t.incr(b"one", 1, 1000).unwrap();
    assert_eq!(t.members(), 100_001);
    // Bucket 2: bucket 0 falls out while bucket 1 stays.
    assert_eq!(t.incr(b"one", 1, 2000).unwrap(), 2);
    assert!(t.last_retire_work() <= 64 && t.last_retire_work() > 0);
    assert!(!t.is_settled());
    assert_eq!(t.top(3, 2000), vec![(&b"one"[..], 2)]);
    assert_eq!(t.count(&7u32.to_le_bytes(), 2000), 0);
    assert_eq!(t.count(&7u32.to_le_bytes(), 1000), 1 - 1); // bucket 0 is no longer live
    let mut calls = 1;
    while !t.is_settled() {
        t.incr(b"two", 1, 2000).unwrap();
        assert!(t.last_retire_work() <= 64);
        calls += 1;
    }
    // 100k entries plus empty cells at 1/8: a few thousand calls.
    assert!(
        calls > 100_000 / 64 && calls < 4 * 100_000 / 64,
        "calls {calls}"
    );
    assert_eq!(t.members(), 2);
    check_invariants(&t);

    // Whole-window jump: the state goes to the graveyard, freed piecewise.
    let mut t = Full::new(1000, 2);
    t.set_retire_budget(64);
    for i in 0..100_000u32 {
        t.incr(&i.to_le_bytes(), 1, 0).unwrap();
    }
    t.incr(b"x", 1, 10_000).unwrap();
    assert!(t.last_retire_work() <= 64);
    assert_eq!(t.members(), 1);
    assert!(!t.is_settled());
    let mem_before = t.mem_usage();
    let mut calls = 1;
    while !t.is_settled() {
        t.incr(b"x", 1, 10_000).unwrap();
        assert!(t.last_retire_work() <= 64);
        calls += 1;
    }
    assert!(calls < 10_000, "calls {calls}");
    assert!(t.mem_usage() < mem_before / 10);
    check_invariants(&t);
}

#[test]
fn mem_usage_and_free_effort_grow() {
    let mut t = Full::new(1000, 4);
    let m0 = t.mem_usage();
    let f0 = t.free_effort();
    for i in 0..1000 {
        t.incr(format!("member-{i}").as_bytes(), 1, 0).unwrap();
    }
    assert!(t.mem_usage() > m0 + 1000 * 40);
    assert!(t.free_effort() > f0 + 1000);
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
/// give up and the read sums. The key remembers: the next reads of that `k` sum at once,
/// trying the fast plans again every eighth read (as a `k` not read yet does, with smaller
/// caps); every answer stays exact.
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
    assert_eq!(tried(&t), (true, true), "the first read tries, then sums");
    for _ in 1..8 {
        assert_eq!(tried(&t), (false, true), "then it sums at once");
    }
    assert_eq!(tried(&t), (true, true), "and tries again on the eighth");
    // Another window of the same flat counts follows the key's last attempt: it tries with
    // the retry's smaller caps, then sums.
    PATHS.with(|p| p.set([0; 14]));
    let rows = t.top_in(10, 11_999, 5);
    let p = PATHS.with(|p| p.get());
    assert_eq!(p[2], 1, "LAST 5 sums");
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
