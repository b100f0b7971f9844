//! Shared helpers of the full layout's unit tests (the builders and reads of the whole window
//! they use, `check_invariants`, samples, answers compared) and the tests of its reads.

use super::key::*;
use super::members::Members;
use super::seen::{get, GAVE_UP, WALKS};
use crate::topn::shape::Shape;
use crate::topn::views::Views;
use crate::topn::window::Query;
use crate::topn::window::Upkept;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

pub(super) const H: i64 = 3_600_000;

/// Builders and whole-window reads, as the tests write them.
impl Full {
    pub fn new(bucket_ms: i64, window: u32) -> Full {
        Full::empty(Shape::new(bucket_ms, window, 0), Views::NONE)
    }

    /// The same empty key with its buckets shifted by `align_ms`.
    pub fn with_align(self, align_ms: i64) -> Full {
        let s = self.content.shape;
        Full::empty(
            Shape::new(s.bucket_ms, s.window, align_ms),
            self.content.views,
        )
    }

    /// The same empty key with `views` declared.
    pub fn with_views(self, views: &Views) -> Full {
        Full::empty(self.content.shape, *views)
    }

    pub fn bucket_ms(&self) -> i64 {
        self.content.shape.bucket_ms
    }

    pub fn align_ms(&self) -> i64 {
        self.content.shape.align_ms
    }

    pub fn window(&self) -> u32 {
        self.content.shape.window
    }

    pub fn clock(&self) -> Option<i64> {
        self.content.shape.clock
    }

    pub fn bucket_of(&self, at_ms: i64) -> i64 {
        self.content.shape.bucket_of(at_ms)
    }

    pub fn bucket_start(&self, idx: i64) -> i64 {
        self.content.shape.bucket_start(idx)
    }

    pub fn is_older_than_window(&self, at_ms: i64) -> bool {
        self.content.shape.landing(at_ms).is_none()
    }

    pub fn expire_at_ms(&self) -> Option<i64> {
        self.content.shape.expire_at_ms()
    }

    /// The exact top `n` over the `last` newest buckets of the window ending at `at_ms`.
    pub fn top_in(&self, n: usize, at_ms: i64, last: u32) -> Vec<(&[u8], i64)> {
        self.top_of(&Query { at_ms, last, n })
    }

    /// The member's count over the `last` newest buckets of the window ending at `at_ms`.
    pub fn count_in(&self, member: &[u8], at_ms: i64, last: u32) -> i64 {
        self.count_of(member, &Query { at_ms, last, n: 0 })
    }

    /// The exact top `n` over the window ending at `at_ms`.
    pub fn top(&self, n: usize, at_ms: i64) -> Vec<(&[u8], i64)> {
        self.top_in(n, at_ms, self.window())
    }

    /// The member's count over the window ending at `at_ms`.
    pub fn count(&self, member: &[u8], at_ms: i64) -> i64 {
        self.count_in(member, at_ms, self.window())
    }

    pub fn decode(bytes: &[u8]) -> Result<Full, crate::topn::error::Error> {
        Full::decode_at(bytes, None)
    }

    /// A member's id, if it has one.
    pub fn id_of(&self, member: &[u8]) -> Option<u32> {
        self.content.members.find(member, Members::hash(member))
    }

    /// A member's exact total in sum `s`.
    pub fn total_of(&self, s: usize, member: &[u8]) -> i128 {
        let id = self.id_of(member).expect("a member");
        self.sums.total(&self.content.members, s, id)
    }

    /// The sum a read of the `last` newest buckets at `at_ms` walks without a fix, if any.
    pub fn walked_sum(&self, at_ms: i64, last: u32) -> Option<usize> {
        let (s, fixes) = self.closest(&self.span(&Query { at_ms, last, n: 0 })?);
        (fixes == 0).then_some(s)
    }

    /// Each stored bucket: whether it is sealed.
    pub fn sealed(&self) -> Vec<bool> {
        self.content.buckets.iter().map(|b| b.is_sealed()).collect()
    }
}

pub(super) fn top_owned(t: &Full, n: usize, at: i64) -> Vec<(Vec<u8>, i64)> {
    t.top(n, at)
        .into_iter()
        .map(|(m, c)| (m.to_vec(), c))
        .collect()
}

pub(super) fn row(m: &str, c: i64) -> (Vec<u8>, i64) {
    (m.as_bytes().to_vec(), c)
}

/// Checks the invariants: every sum's totals are the entries it holds, each member's refs its
/// entries, each index holds the members of a total other than 0 in its sum, the lookup every
/// member, the buckets' bounds hold their counts, and no walk goes past its bucket's end.
pub(super) fn check_invariants(t: &Full) {
    let c = &t.content;
    let m = &c.members;
    let sums = t.sums.reach.len();
    let mut totals: HashMap<u32, Vec<i128>> = HashMap::new();
    let mut refs: HashMap<u32, u32> = HashMap::new();
    let mut entries = 0;
    for (i, b) in c.buckets.iter().enumerate() {
        let stale = c.shape.is_stale(b.idx);
        assert!(!stale || i == 0 || c.shape.is_stale(c.buckets[i - 1].idx));
        let freed = if i == 0 && stale { t.upkeep.freed } else { 0 };
        let mut members: HashMap<u32, i64> = HashMap::new();
        for pos in 0..b.len() {
            let (id, count) = b.at(pos);
            let held = members.entry(id).or_default();
            assert!(
                *held == 0 || count == 0,
                "member {id} in two entries of {}",
                b.idx
            );
            *held += count;
            assert!((b.min..=b.max).contains(&count), "bucket {} bounds", b.idx);
            if pos + freed >= b.len() {
                continue; // freed already (from the last position down)
            }
            assert!(m.names.slot(id).is_live(), "an entry of a freed member");
            *refs.entry(id).or_default() += 1;
            let held = totals.entry(id).or_insert_with(|| vec![0; sums]);
            for (s, r) in t.sums.reach.iter().enumerate() {
                if r.holds(b.idx, pos) {
                    held[s] += i128::from(count);
                }
            }
        }
        for (id, count) in members {
            assert!(
                (b.min..=b.max).contains(&count),
                "bucket {} member bounds",
                b.idx
            );
            assert_eq!(b.get(id), count);
        }
        for r in &t.sums.reach {
            if r.lo == b.idx && r.end != Reach::ALL {
                assert!(r.end <= b.len(), "a walk past its bucket's end");
            }
        }
        entries += b.len();
    }
    assert!(c
        .buckets
        .iter()
        .zip(c.buckets.iter().skip(1))
        .all(|(a, b)| a.idx < b.idx));
    assert_eq!(c.entries, entries);
    let unsealed = c.buckets.iter().filter(|b| !b.is_sealed()).count();
    assert_eq!(c.unsealed, unsealed);
    let (mut live, mut keyed) = (0, vec![0; sums]);
    for id in m.ids() {
        live += 1;
        assert_eq!(
            m.refs(id),
            refs.get(&id).copied().unwrap_or(0),
            "refs of {id}"
        );
        assert!(m.refs(id) > 0, "member {id} kept without refs");
        let name = m.name(id);
        assert_eq!(m.find(name, Members::hash(name)), Some(id));
        let held = totals.get(&id).cloned().unwrap_or_else(|| vec![0; sums]);
        for (s, want) in held.iter().enumerate() {
            assert_eq!(t.sums.total(m, s, id), *want, "total of {id} in sum {s}");
            let indexed = s < t.sums.ks.len() && *want != 0;
            assert_eq!(m.names.index_contains(s, id), indexed, "index {s} of {id}");
            keyed[s] += usize::from(indexed);
        }
    }
    assert_eq!(live, m.live);
    for (s, &keyed) in keyed.iter().enumerate() {
        assert_eq!(m.names.indexed(s), keyed, "keys of index {s}");
    }
    // The clock's sum holds every live bucket.
    let clock = &t.sums.reach[t.sums.clock_sum()];
    let front = c.buckets.iter().find(|b| !c.shape.is_stale(b.idx));
    assert!(
        front.is_none_or(|b| clock.holds_whole(b)),
        "the clock's sum"
    );
    assert!(m.names.keys_point_at_names());
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
        let Some(sp) = t.span(&Query {
            at_ms: at,
            last: k,
            n: 0,
        }) else {
            assert!(t.top_in(10, at, k).is_empty());
            continue;
        };
        for n in [1, 3, 10] {
            let want = t.top_direct(n, &sp);
            assert_eq!(t.top_in(n, at, k), want, "top_in({n}, {at}, {k})");
        }
        for (name, count) in t.top_direct(5, &sp) {
            assert_eq!(t.count_in(name, at, k), count);
        }
    }
}

/// The server's time runs ahead of the clock: the window's sum walks out of buckets that left
/// the window at that time, a slice at a time, while writes land in them (new members and
/// old); reads stay exact at every step, and at the clock they correct the sum by those
/// buckets.
#[test]
fn sums_walk_out_of_buckets_while_writes_land() {
    let mut t = Full::new(1000, 4);
    t.set_retire_budget(3);
    for i in 0..3000i64 {
        let name = format!("m{}", (i * 7) % 700);
        t.incr(name.as_bytes(), 1 + i % 5, (i / 1000) * 1000 + 1)
            .unwrap();
    }
    // The server's time runs 3 buckets ahead of the clock (2): buckets 0 and 1 leave.
    t.observe_time(5_500);
    let (mut walked, mut i) = (0, 0);
    while !t.is_settled() {
        t.upkeep(5);
        if t.sums.reach[0].end != Reach::ALL {
            walked += 1;
            // Writes while a bucket is half walked: new members and old.
            t.incr(format!("m{}", i % 900).as_bytes(), 2, 1_500)
                .unwrap();
            t.incr(format!("n{i}").as_bytes(), 1, 500).unwrap();
            i += 1;
        }
        check_invariants(&t);
        if walked % 16 == 1 {
            reads_exact(&t, 2_001);
        }
    }
    assert!(walked > 20, "buckets were half walked {walked} times");
    reads_exact(&t, 2_001);
    reads_exact(&t, 5_500);
    // The clock moves past them: the sum is the window again.
    t.incr(b"x", 1, 5_000).unwrap();
    while !t.is_settled() {
        t.upkeep(7);
        check_invariants(&t);
    }
    reads_exact(&t, 5_000);
}

/// Flat weighted counts (every member near every other): a walk with fixes would not stop
/// early, and the reads know it before trying: every read sums at once, the first as the later
/// ones, of any `k`; every answer stays exact.
#[test]
fn reads_that_have_to_sum_sum_at_once() {
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
    for k in [6u32, 5] {
        let mut want: HashMap<&str, i64> = HashMap::new();
        for ((m, b), c) in &exact {
            if *b > 11 - i64::from(k) {
                *want.entry(m).or_default() += c;
            }
        }
        let mut want: Vec<(&[u8], i64)> =
            want.into_iter().map(|(m, c)| (m.as_bytes(), c)).collect();
        want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        want.truncate(10);
        for _ in 0..3 {
            let (walks, gave_up) = (get(&WALKS), get(&GAVE_UP));
            assert_eq!(t.top_in(10, 11_999, k), want, "LAST {k}");
            assert_eq!(
                (get(&WALKS), get(&GAVE_UP)),
                (walks, gave_up),
                "LAST {k}: a sum"
            );
        }
    }
}

/// A load seals the buckets older than the clock, and the newest once the server's time has
/// sealed it.
#[test]
fn a_load_seals_sealed_buckets() {
    let mut t = Full::new(1_000, 4);
    for b in 0..3i64 {
        for i in 0..5_000 {
            t.incr(format!("m{i}").as_bytes(), 1 + i % 7, b * 1_000)
                .unwrap();
        }
    }
    let d = Full::decode_at(&t.encode(), Some(2_500)).unwrap();
    assert_eq!(d.sealed(), [true, true, false]);
    assert_eq!(d.top_in(5, 2_999, 2), t.top_in(5, 2_999, 2));
    let d = Full::decode_at(&t.encode(), Some(4_000)).unwrap();
    assert_eq!(d.sealed(), [true; 3]);
    check_invariants(&d);
    assert_eq!(d.encode(), t.encode());
}

/// The newest bucket is sealed once the server's time has been past its end a while (a key
/// idle since reads it sealed), not while events may still land in it: late events into it
/// delay its sealing until they stop; they land in it, sealed or not, and every read stays
/// exact.
#[test]
fn the_newest_bucket_is_sealed_once_the_time_has_left_it() {
    let mut t = Full::new(1000, 24);
    for b in 0..4i64 {
        for m in 0..300 {
            let by = 1 + (m * 7 + b) % 13;
            t.incr(format!("m{m}").as_bytes(), by, b * 1000 + 1)
                .unwrap();
        }
    }
    let settle = |t: &mut Full| {
        while !t.is_settled() {
            t.upkeep(50);
            check_invariants(t);
        }
    };
    for now in [3500, 4999] {
        t.observe_time(now);
        settle(&mut t);
        assert_eq!(t.sealed(), [true, true, true, false], "at {now}");
        assert_eq!(t.upkeep_due_ms(), Some(5000), "at {now}");
    }
    // Late events into the newest bucket, the server's time past its end: it waits.
    for (i, now) in (5000..5900).step_by(3).enumerate() {
        t.observe_time(now);
        t.incr(format!("m{}", i % 500).as_bytes(), 1, 3999).unwrap();
        settle(&mut t);
    }
    assert_eq!(t.sealed(), [true, true, true, false]);
    assert_eq!(t.upkeep_due_ms(), Some(6897));
    t.observe_time(6897);
    settle(&mut t);
    assert_eq!(t.sealed(), [true; 4]);
    // Later ones land in it sealed, new members and old.
    for i in 0..300 {
        t.incr(format!("m{}", i % 500).as_bytes(), 2, 3999).unwrap();
    }
    check_invariants(&t);
    reads_exact(&t, 3999);
    reads_exact(&t, 7000);
}

/// What a write grows, it grows without moving what is stored: buckets as they come (the key
/// holds them boxed; a deque of buckets doubling copied 200 bytes a bucket in one write), the
/// ids of freed members as a stale bucket is freed (in fixed chunks), the members' slots and
/// their sums' totals (`storage::names_tests`).
#[test]
fn writes_move_no_bucket_nor_freed_id() {
    let mut t = Full::new(1000, 20_000);
    t.incr(b"first", 1, 0).unwrap();
    let first = &*t.content.buckets[0] as *const _;
    for b in 1..9_000i64 {
        t.incr(format!("m{b}").as_bytes(), 1, b * 1000).unwrap();
    }
    assert_eq!(&*t.content.buckets[0] as *const _, first);
    // 20,000 members of one bucket freed as it goes stale, a slice of upkeep at a time.
    let mut t = Full::new(1000, 2);
    for i in 0..20_000 {
        t.incr(format!("m{i}").as_bytes(), 1, 0).unwrap();
    }
    t.incr(b"later", 1, 1_000).unwrap();
    t.incr(b"later", 1, 2_000).unwrap();
    let mut kept = None;
    while !t.is_settled() {
        t.upkeep(1_000);
        let at = t.content.members.first_free_id();
        if kept.is_none() && t.content.members.live < 20_000 - crate::tuples::chunked::CHUNK {
            kept = at;
        }
        assert!(kept.is_none() || at == kept, "a freed id moved");
    }
    assert!(kept.is_some());
    check_invariants(&t);
}
