//! Unit tests of the full layout's tables: lazy cells, bucket tables and the member table
//! growing by incremental migration.

use super::bucket::{Bucket, EMPTY, MOVED};
use super::graveyard::Graveyard;
use super::key::*;
use super::members::Members;
use super::tests::*;
use crate::topn::select::clamp_i64;
use crate::topn::storage::Cells;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::collections::VecDeque;

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
