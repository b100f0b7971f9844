//! The order indexes against a model: whatever the totals do (small steps that keep a key
//! between its neighbours, written in place, steps that pass others or tie with them, which
//! move it, and steps to and from 0), each index lists its slots of a total other than 0 by
//! (total desc, name asc).

use super::NameTable;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) % n
    }
}

/// (total, name) of every slot of a total other than 0, best first.
fn expected(totals: &[i64], names: &[Vec<u8>]) -> Vec<(i64, Vec<u8>)> {
    let mut rows: Vec<(i64, Vec<u8>)> = (totals.iter().copied().zip(names.iter().cloned()))
        .filter(|r| r.0 != 0)
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    rows
}

fn listed<'a>(keys: impl Iterator<Item = &'a super::Key>) -> Vec<(i64, Vec<u8>)> {
    keys.map(|k| (k.total(), k.bytes().to_vec())).collect()
}

/// Unique names, in another order than the ids: short ones, long ones sharing their first 8
/// bytes, ones that are prefixes of others, zero bytes.
fn name(i: usize) -> Vec<u8> {
    let j = i ^ 0x55;
    match i % 4 {
        0 => format!("m{j}").into_bytes(),
        1 => format!("member:{j}").into_bytes(),
        2 => [&b"member:\0"[..], &j.to_be_bytes()[6..]].concat(),
        _ => [&b"m\0"[..], &j.to_be_bytes()[6..]].concat(),
    }
}

#[test]
fn indexes_follow_totals_in_place_and_moved() {
    for seed in 1..=20u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut t: NameTable<()> = NameTable::new(3, 0);
        let n = 1 + rng.below(300) as usize;
        let names: Vec<Vec<u8>> = (0..n).map(name).collect();
        for name in &names {
            t.push(name, ());
        }
        // Each sum's totals per slot.
        let mut totals = vec![vec![0i64; n]; 3];
        // Narrow ranges make ties (a move by name); wide ones mostly keep the order.
        let spread = [3, 1_000, 1 << 40][seed as usize % 3];
        for _ in 0..2_000 {
            let id = rng.below(n as u64) as u32;
            let s = rng.below(3) as usize;
            let step = rng.below(spread) as i64 - (spread as i64) / 3;
            let total = totals[s][id as usize].saturating_add(step);
            totals[s][id as usize] = total;
            t.set_total(s, id, total);
        }
        for (s, totals) in totals.iter().enumerate() {
            let index = listed(t.iter(s));
            assert_eq!(index, expected(totals, &names), "sum {s}, seed {seed}");
        }
        assert!(t.keys_point_at_names());
    }
}

/// A slot is in an index while its total there is not 0; while the indexes wait (totals set in
/// bulk, as a load does), no key comes or goes until they are rebuilt.
#[test]
fn a_slot_is_indexed_while_its_total_is_not_zero() {
    let mut t: NameTable<()> = NameTable::new(1, 0);
    let a = t.push(b"a", ());
    let b = t.push(b"b", ());
    assert_eq!(t.indexed(0), 0);
    t.set_total(0, a, 3);
    t.set_total(0, b, -2);
    assert_eq!(
        listed(t.iter(0)),
        vec![(3, b"a".to_vec()), (-2, b"b".to_vec())]
    );
    t.set_total(0, b, 0);
    assert_eq!(listed(t.iter(0)), vec![(3, b"a".to_vec())]);
    t.suspend_indexes();
    t.set_total(0, b, 5);
    t.set_total(0, a, 0);
    assert_eq!(listed(t.iter(0)), vec![(3, b"a".to_vec())]);
    t.rebuild_indexes();
    assert_eq!(listed(t.iter(0)), vec![(5, b"b".to_vec())]);
    assert!(!t.index_contains(0, a) && t.index_contains(0, b));
}

/// A defrag pass rebuilds each small index into fresh nodes (one unit each) and keeps a big
/// one's, and every key follows its name.
#[test]
fn small_indexes_are_rebuilt_big_ones_keep_their_nodes() {
    use crate::tuples::defrag::model::MoveAll;
    use crate::tuples::defrag::{Pass, Resume, REBUILD_MAX};
    for slots in [10, REBUILD_MAX + 1] {
        let mut t: NameTable<()> = NameTable::new(3, 0);
        for i in 0..slots {
            let id = t.push(&name(i), ());
            (0..3).for_each(|s| t.set_total(s, id, 1 + i as i64 % 7));
        }
        let mut mover = MoveAll::default();
        let mut pass = Pass::new(&mut mover, Resume::new());
        t.defrag(&mut pass);
        assert!(pass.finish().is_none());
        assert_eq!(mover.rebuilt, 3 * usize::from(slots <= REBUILD_MAX));
        assert!(t.keys_point_at_names());
    }
}

/// Growing never moves what is stored: once the first chunk is full, a new slot copies no slot,
/// no name and no sum's total (a `Vec` of totals doubling copies them all in one write).
#[test]
fn new_slots_move_no_slot_nor_total() {
    let mut t: NameTable<u32> = NameTable::new(2, 1);
    let first = super::names::CHUNK as u32;
    let place = |t: &NameTable<u32>| {
        let totals: Vec<*const i64> = (0..3).map(|s| t.totals(s)[0].as_ptr()).collect();
        (t.slot(0) as *const _, t.slot(first - 1) as *const _, totals)
    };
    let mut at_first = None;
    for i in 0..10 * first {
        let id = t.push(&name(i as usize), i);
        t.set_total(0, id, 1);
        if i + 1 == first {
            at_first = Some(place(&t));
        }
    }
    assert_eq!(Some(place(&t)), at_first);
    assert_eq!((t.slots(), *t.data(first)), (10 * first as usize, first));
}
