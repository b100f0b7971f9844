//! Tests of `summary.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Space-Saving at its plainest: a list, the smallest (count, member)
/// found by a scan.
#[derive(Default)]
struct Naive {
    counters: Vec<(Vec<u8>, i64, i64)>,
    evicted: bool,
}

impl Naive {
    fn min(&self) -> Option<usize> {
        (0..self.counters.len()).min_by(|&a, &b| {
            let (x, y) = (&self.counters[a], &self.counters[b]);
            x.1.cmp(&y.1).then_with(|| x.0.cmp(&y.0))
        })
    }

    fn add(&mut self, member: &[u8], by: i64, capacity: usize) -> Result<i64, Overflow> {
        if let Some(c) = self.counters.iter_mut().find(|c| c.0 == member) {
            c.1 = c.1.checked_add(by).ok_or(Overflow)?;
            return Ok(c.1);
        }
        if self.counters.len() < capacity {
            self.counters.push((member.to_vec(), by, 0));
            return Ok(by);
        }
        let i = self.min().unwrap();
        let min = self.counters[i].1;
        let new = min.checked_add(by).ok_or(Overflow)?;
        self.counters[i] = (member.to_vec(), new, min);
        self.evicted = true;
        Ok(new)
    }

    fn set(
        &mut self,
        member: &[u8],
        (count, error): (i64, i64),
        evicted: bool,
        capacity: usize,
    ) -> bool {
        let full = self.counters.len() >= capacity;
        match self.counters.iter_mut().find(|c| c.0 == member) {
            Some(c) => (c.1, c.2) = (count, error),
            None if full => return false,
            None => self.counters.push((member.to_vec(), count, error)),
        }
        self.evicted |= evicted;
        true
    }

    fn sorted(&self) -> Vec<(&[u8], i64, i64)> {
        let mut v: Vec<_> = self
            .counters
            .iter()
            .map(|(m, c, e)| (&m[..], *c, *e))
            .collect();
        v.sort_unstable();
        v
    }
}

/// The layout's invariants: the heap's order and places, every slot
/// found through the table, the arena's holes.
fn check(s: &Summary) {
    let n = s.len();
    assert_eq!(s.links.len(), n);
    for i in 0..n {
        let h = s.links[i].heap;
        assert_eq!(s.links[h as usize].pos as usize, i);
        if i > 0 {
            assert!(s.less(s.links[(i - 1) / 2].heap, h), "heap order");
        }
    }
    assert_eq!(s.table.iter().filter(|&&c| c != EMPTY).count(), n);
    for &c in s.table.iter().filter(|&&c| c != EMPTY) {
        let slot = (c & SLOT_BITS) as usize;
        assert_eq!(c, cell(slot, hash(s.name(slot))), "a cell's tag");
    }
    assert!(n == 0 || 4 * n <= 3 * s.table.len());
    for (i, (m, ..)) in s.iter().enumerate() {
        assert_eq!(s.find(m, hash(m)), Some(i));
    }
    let live: usize = s.slots.iter().map(|x| x.len as usize).sum();
    assert_eq!(s.name_bytes, live);
    for (g, arena) in s.arenas.iter().enumerate() {
        let group = g * GROUP_SLOTS..n.min((g + 1) * GROUP_SLOTS);
        let short = s.slots[group].iter().map(|x| x.len as usize);
        let live: usize = short.filter(|&len| len <= SHORT_MOST).sum();
        assert_eq!(arena.bytes.len() - arena.holes as usize, live, "arena {g}");
        assert!(
            arena.holes as usize <= live,
            "arena {g}: holes {}",
            arena.holes
        );
    }
    let long = s
        .slots
        .iter()
        .filter(|x| x.len as usize > SHORT_MOST)
        .count();
    assert_eq!(s.long.len(), long);
    for (i, l) in s.long.iter().enumerate() {
        let slot = &s.slots[l.slot as usize];
        assert_eq!((slot.off as usize, slot.len as usize), (i, l.name.len()));
        assert_eq!(l.hash, hash(&l.name));
    }
}

fn member(rng: &mut StdRng, distinct: u32) -> Vec<u8> {
    let i = rng.gen_range(0..distinct);
    match i % 7 {
        0 => Vec::new(),
        1 => format!("long-member-{i}-{}", "x".repeat((i % 40) as usize)).into_bytes(),
        // Past an arena's members (`SHORT_MOST`), and just within.
        2 => format!("{i}-{}", "y".repeat(250 + (i % 12) as usize)).into_bytes(),
        _ => format!("m{i}").into_bytes(),
    }
}

/// Random streams (ties, overflows, rewrites' counters, refusals)
/// against the naive summary: the same counters, floor and replies.
#[test]
fn matches_a_naive_space_saving() {
    for seed in 0..60u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let capacity = match seed % 4 {
            0 => rng.gen_range(1..4),
            1 | 2 => rng.gen_range(1..60),
            _ => rng.gen_range(100..400),
        };
        let distinct = rng.gen_range(1..(capacity as u32) * 4 + 2);
        let (mut s, mut naive) = (Summary::default(), Naive::default());
        for step in 0..3_000 {
            let m = member(&mut rng, distinct);
            if rng.gen_ratio(1, 25) {
                let count = rng.gen_range(1..50);
                let counter = (count, rng.gen_range(0..=count));
                let evicted = rng.gen_ratio(1, 5);
                let before = s.clone();
                let done = s.set(&m, counter, evicted, capacity);
                assert_eq!(done.is_ok(), naive.set(&m, counter, evicted, capacity));
                if done.is_err() {
                    assert_eq!(format!("{s:?}"), format!("{before:?}"));
                }
            } else {
                let by = match rng.gen_range(0..40) {
                    0 => i64::MAX - rng.gen_range(0..30),
                    1..=10 => rng.gen_range(1..4),
                    _ => 1,
                };
                let before = s.clone();
                let got = s.add(&m, hash(&m), s.find(&m, hash(&m)), by, capacity);
                assert_eq!(got, naive.add(&m, by, capacity), "seed {seed} step {step}");
                if got.is_err() {
                    assert_eq!(s, before);
                }
            }
            assert_eq!(s.iter().count(), naive.counters.len());
            let mut got: Vec<_> = s.iter().collect();
            got.sort_unstable();
            assert_eq!(got, naive.sorted(), "seed {seed} step {step}");
            assert_eq!(s.min(), naive.min().map(|i| naive.counters[i].1));
            assert_eq!(s.evicted, naive.evicted);
            if step % 97 == 0 {
                check(&s);
                assert_eq!(s.clone(), s);
            }
        }
        check(&s);
    }
}

/// Members compared as words order as their bytes do, wherever they sit
/// in the arena: prefixes, zero bytes, 8 bytes and past, the arena's end.
#[test]
fn members_order_as_their_bytes() {
    let names: Vec<&[u8]> = vec![
        b"",
        b"\0",
        b"\0\0",
        b"a",
        b"a\0",
        b"a\0\0",
        b"ab",
        b"b",
        b"\xff",
        b"\xff\xff",
        b"abcdefg",
        b"abcdefgh",
        b"abcdefgh\0",
        b"abcdefghi",
        b"abcdefgi",
        b"abcdefh",
        b"m1234567",
        b"m123456",
        b"m12345678",
        b"\xff\xff\xff\xff\xff\xff\xff\xff",
    ];
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..20 {
        let mut order = names.clone();
        rand::seq::SliceRandom::shuffle(&mut order[..], &mut rng);
        let mut s = Summary::default();
        for m in &order {
            s.set(m, (1, 0), false, 100).unwrap();
        }
        for a in 0..s.len() {
            for b in 0..s.len() {
                let (x, y) = (s.name(a), s.name(b));
                assert_eq!(s.less(a as u16, b as u16), x < y, "{x:?} {y:?}");
            }
        }
        check(&s);
    }
}

/// A full bucket of 8-byte members after many evictions: about 40
/// bytes a counter.
#[test]
fn a_counter_takes_about_40_bytes() {
    let mut rng = StdRng::seed_from_u64(7);
    for capacity in [28, 100, 1_000, 10_000] {
        let mut s = Summary::default();
        for _ in 0..capacity * 20 {
            let m = format!("m{:07}", rng.gen_range(0..10_000_000));
            s.add(
                m.as_bytes(),
                hash(m.as_bytes()),
                s.find(m.as_bytes(), hash(m.as_bytes())),
                1,
                capacity,
            )
            .unwrap();
        }
        check(&s);
        let per = s.heap_bytes() as f64 / s.len() as f64;
        assert!(per < 46.0, "capacity {capacity}: {per:.1} B a counter");
    }
}

/// Whatever the bucket's member bytes, a write copies and hashes about its own member's
/// bytes and at most a group's arena (or a table rebuild's `HASHED_MOST`): members of 1 KB and
/// of 200 bytes, 10,000 counters, filled then evicting, and the bucket given back its spare
/// room as a newer one starts. One arena for the bucket copied it whole (10 MB).
#[test]
fn a_write_works_on_a_bounded_share_of_the_member_bytes() {
    let capacity = 10_000;
    for len in [1_000, 200] {
        let mut s = Summary::default();
        let mut most = 0;
        for i in 0..3 * capacity {
            let m = format!("{i:0len$}");
            let before = WORK.with(|w| w.get());
            s.add(m.as_bytes(), hash(m.as_bytes()), None, 1, capacity)
                .unwrap();
            if i == 2 * capacity {
                s.shrink();
            }
            most = most.max(WORK.with(|w| w.get()) - before);
        }
        check(&s);
        assert_eq!(s.name_bytes(), capacity * len);
        assert!(
            most <= 192 << 10,
            "{len}-byte members: {most} bytes a write"
        );
    }
}
