//! The order indexes against a model: whatever the totals do (small steps that keep a key
//! between its neighbours, written in place, and steps that pass others or tie with them,
//! which move it), each index lists its slots by (total desc, name asc).

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

/// (total, name) of every slot, best first.
fn expected(totals: &[i64], names: &[Vec<u8>]) -> Vec<(i64, Vec<u8>)> {
    let mut rows: Vec<(i64, Vec<u8>)> = totals.iter().copied().zip(names.iter().cloned()).collect();
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
        let mut t: NameTable<()> = NameTable::new();
        t.add_views(2);
        let n = 1 + rng.below(300) as usize;
        let names: Vec<Vec<u8>> = (0..n).map(name).collect();
        for name in &names {
            let id = t.push(name, ());
            t.index_insert(id);
        }
        t.rebuild_clock_index();
        // [order, clock, view 0, view 1] totals per slot.
        let mut totals = vec![vec![0i64; n]; 4];
        // Narrow ranges make ties (a move by name); wide ones mostly keep the order.
        let spread = [3, 1_000, 1 << 40][seed as usize % 3];
        for _ in 0..2_000 {
            let id = rng.below(n as u64) as u32;
            let which = rng.below(4) as usize;
            let step = rng.below(spread) as i64 - (spread as i64) / 3;
            let total = totals[which][id as usize].saturating_add(step);
            totals[which][id as usize] = total;
            match which {
                0 => t.set_total(id, total),
                1 => t.set_clock_total(id, total),
                v => t.set_view_total(v - 2, id, total),
            }
        }
        let index = listed(t.index_iter());
        assert_eq!(
            index,
            expected(&totals[0], &names),
            "order index, seed {seed}"
        );
        let clock = listed(t.clock_index_iter().expect("built"));
        assert_eq!(
            clock,
            expected(&totals[1], &names),
            "clock index, seed {seed}"
        );
        for v in 0..2 {
            let view = listed(t.view_iter(v));
            assert_eq!(
                view,
                expected(&totals[2 + v], &names),
                "view {v}, seed {seed}"
            );
        }
        assert!(t.keys_point_at_names());
    }
}

#[test]
fn a_slot_out_of_the_index_stays_out() {
    let mut t: NameTable<()> = NameTable::new();
    let a = t.push(b"a", ());
    let b = t.push(b"b", ());
    t.index_insert(a);
    t.set_total(a, 3);
    // `b` was never indexed: its total changes, no key appears (nor moves `a`'s).
    t.set_total(b, 5);
    t.set_total(b, 1);
    assert_eq!(listed(t.index_iter()), vec![(3, b"a".to_vec())]);
    assert!(!t.index_contains(b));
    assert_eq!(t.slot(b).total(), 1);
}
