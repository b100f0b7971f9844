//! Unit and model tests of `counter.rs`.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) fn counter(decl: &[&str], ttl_s: Option<i64>, float: bool) -> HCounter {
    HCounter::new(Schema::declared(decl, &DECLARATION), ttl_s, float)
}

pub(crate) fn place(partition: &[&[u8]], cell: &[&[u8]], seen: &[&[u8]]) -> Place {
    let mut place = Place {
        partition: Default::default(),
        cell: Default::default(),
        seen: Default::default(),
    };
    partition
        .iter()
        .for_each(|v| encoding::push_element(&mut place.partition, v));
    cell.iter()
        .for_each(|v| encoding::push_element(&mut place.cell, v));
    seen.iter()
        .for_each(|v| encoding::push_element(&mut place.seen, v));
    place
}

/// A DATA row: partition values, cell values, count.
type TestRow = (Vec<Vec<u8>>, Vec<Vec<u8>>, String);

/// DATA as rows of strings.
fn data(c: &HCounter, filter: &[Option<&[u8]>], now: i64) -> Vec<TestRow> {
    c.data(filter, now)
        .into_iter()
        .map(|r| {
            (
                encoding::decode(r.partition).unwrap(),
                encoding::decode(&r.cell).unwrap(),
                r.count.to_string(),
            )
        })
        .collect()
}

fn v(s: &[&str]) -> Vec<Vec<u8>> {
    s.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// The gem's UniqueHashCounter example: unique users per company per
/// month, counted into daily partitions.
#[test]
fn gem_unique_users_by_month() {
    let mut c = counter(
        &[
            "PARTITION",
            "date",
            "GROUP",
            "company_id",
            "UNIQUE",
            "company_id",
            "user_id",
            "SCOPE",
            "start_month_date",
        ],
        None,
        false,
    );
    let events = [
        (2, "1", "11", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-08-10", "2013-08-01"),
        (3, "1", "22", "2013-09-05", "2013-09-01"),
        (3, "2", "11", "2013-08-10", "2013-08-01"),
        (1, "2", "22", "2013-08-11", "2013-08-01"),
    ];
    for (times, company, user, date, month) in events {
        for i in 0..times {
            let p = place(
                &[date.as_bytes()],
                &[],
                &[month.as_bytes(), company.as_bytes(), user.as_bytes()],
            );
            // The cell key holds no name: company_id is also... a
            // GROUP name only, so it is the cell.
            let p = Place {
                cell: place(&[], &[company.as_bytes()], &[]).cell,
                ..p
            };
            let out = c.incr(&p, Count::Int(1), 0).unwrap();
            assert_eq!(out.counted, i == 0);
        }
    }
    assert_eq!(
        data(&c, &[None], 0),
        [
            (v(&["2013-08-10"]), v(&["1"]), "2".into()),
            (v(&["2013-08-10"]), v(&["2"]), "1".into()),
            (v(&["2013-08-11"]), v(&["2"]), "1".into()),
            (v(&["2013-09-05"]), v(&["1"]), "1".into()),
        ]
    );
    // Deleting the partition forgets the tuples first counted there.
    assert_eq!(c.delete(&[Some(b"2013-08-10")], 0), (1, 1));
    let again = place(&[b"2013-08-12"], &[b"1"], &[b"2013-08-01", b"1", b"11"]);
    assert!(c.incr(&again, Count::Int(1), 0).unwrap().counted);
    let kept = place(&[b"2013-08-12"], &[b"2"], &[b"2013-08-01", b"2", b"22"]);
    assert!(!c.incr(&kept, Count::Int(1), 0).unwrap().counted);
    assert_eq!(c.get(&kept, 0), Count::Int(0));
}

/// HCOUNTER's declaration lets a name hold two roles where it says so.
#[test]
fn names_share_roles_only_where_declared() {
    let parse = |decl: &[&str]| {
        let t: Vec<&[u8]> = decl.iter().map(|s| s.as_bytes()).collect();
        Schema::parse::<0>(
            &t,
            &DECLARATION,
            &[],
            crate::tuples::schema::Declarer::Client,
        )
        .map(|(s, _)| s)
    };
    let schema = parse(&[
        "PARTITION",
        "company",
        "GROUP",
        "company",
        "UNIQUE",
        "company",
        "user",
    ])
    .unwrap();
    let names = |role| -> Vec<&[u8]> { schema.of(role).iter().map(|&i| schema.name(i)).collect() };
    assert_eq!(schema.len(), 2);
    assert_eq!(names(Role::Group), [b"company"]);
    assert_eq!(names(Role::Unique), [&b"company"[..], b"user"]);
    assert!(parse(&["UNIQUE", "u", "SCOPE", "u"]).is_err());
    let e = parse(&["GROUP", "Value"]).unwrap_err().to_string();
    assert!(e.contains("keyword"), "{e}");
}

#[test]
fn float_counts_format_as_redis_does() {
    let mut c = counter(&[], None, true);
    let p = place(&[], &[], &[]);
    let mut add = |by: f64| c.incr(&p, Count::Float(by), 0).map(|o| o.count.to_string());
    assert_eq!(add(10.5).unwrap(), "10.5");
    assert_eq!(add(0.1).unwrap(), "10.6");
    assert_eq!(add(-5.0).unwrap(), "5.6");
    assert_eq!(add(5194.4).unwrap(), "5200");
    assert_eq!(add(-5200.0).unwrap(), "0");
    assert_eq!(add(1e21).unwrap(), "1000000000000000000000");
    assert!(add(f64::MAX).is_ok());
    assert_eq!(add(f64::MAX), Err(OutOfRange));
    let mut c = counter(&[], None, true);
    let mut add = |by: f64| c.incr(&p, Count::Float(by), 0).map(|o| o.count.to_string());
    add(0.1).unwrap();
    assert_eq!(add(0.2).unwrap(), "0.30000000000000004");
    assert_eq!(
        Count::Float(-0.0).plus(Count::Float(0.0)),
        Ok(Count::Float(0.0))
    );
    assert_eq!(Count::Int(i64::MAX).plus(Count::Int(1)), Err(OutOfRange));
}

#[test]
fn ttl_runs_from_the_latest_write() {
    let mut c = counter(&["PARTITION", "d"], Some(10), false);
    let p = place(&[b"x"], &[], &[]);
    c.incr(&p, Count::Int(1), 1_000).unwrap();
    c.incr(&p, Count::Int(1), 5_000).unwrap();
    // An older AT does not shorten its life.
    c.incr(&p, Count::Int(1), 2_000).unwrap();
    assert_eq!(c.get(&p, 14_999), Count::Int(3));
    assert_eq!(c.get(&p, 15_000), Count::Int(0));
    // Queued at 11_000; visiting then finds the real time.
    assert_eq!(c.next_due(), Some(11_000));
    assert_eq!(c.reclaim(11_000, 10).0.len(), 0);
    assert_eq!(c.next_due(), Some(15_000));
    // A write after expiry starts afresh.
    let out = c.incr(&p, Count::Int(1), 15_000).unwrap();
    assert_eq!((out.count, out.expired), (Count::Int(1), 1));
    let (gone, _) = c.reclaim(25_000, 10);
    assert_eq!(gone, [p.partition.to_vec().into_boxed_slice()]);
    assert_eq!(c.next_due(), None);
}

#[test]
fn cells_past_the_linear_scan_are_hashed() {
    let mut c = counter(&["GROUP", "g"], None, false);
    for round in 1..=3 {
        for i in 0..200u32 {
            let key = i.to_string();
            let p = place(&[], &[key.as_bytes()], &[]);
            assert_eq!(
                c.incr(&p, Count::Int(1), 0).unwrap().count,
                Count::Int(round)
            );
        }
    }
    let rows = data(&c, &[], 0);
    assert_eq!(rows.len(), 200);
    assert!(rows.windows(2).all(|w| w[0].1 < w[1].1));
}

#[test]
fn encoding_roundtrips_and_refuses_truncation() {
    let mut c = counter(
        &["PARTITION", "d", "GROUP", "g", "UNIQUE", "u", "SCOPE", "s"],
        Some(60),
        true,
    );
    for i in 0..30u8 {
        let p = place(&[&[i % 3, 0]], &[&[b':', i % 5]], &[b"m", &[i]]);
        c.incr(&p, Count::Float(0.1 * i as f64), 1000 + i as i64)
            .unwrap();
    }
    let bytes = c.encode();
    let back = HCounter::decode(&bytes, DEFAULT_COMPACT_MAX).unwrap();
    assert_eq!(back.encode(), bytes);
    assert_eq!(data(&back, &[None], 0), data(&c, &[None], 0));
    // Loaded partitions are queued at their real time (the original may
    // hold earlier entries, requeued when visited).
    assert!(back.next_due() >= c.next_due());
    for cut in 0..bytes.len() {
        assert!(
            HCounter::decode(&bytes[..cut], DEFAULT_COMPACT_MAX).is_err(),
            "cut at {cut}"
        );
    }
}

/// A TTL no TTL option can give would overflow a partition's expiry.
#[test]
fn decode_refuses_a_ttl_beyond_the_limit() {
    let c = counter(&["PARTITION", "p"], Some(MAX_TTL_S + 1), false);
    let refused = HCounter::decode(&c.encode(), DEFAULT_COMPACT_MAX).err();
    assert_eq!(refused, Some(DecodeError::Invalid("TTL")));
}

#[derive(Clone, Default, Debug)]
struct ModelPart {
    last_at: i64,
    cells: BTreeMap<Vec<u8>, i64>,
    seen: BTreeSet<(Vec<u8>, Vec<u8>)>,
}

/// Random increments (unique tuples, ATs in the past), deletes by any
/// filter, reclaims and reloads against a model of maps.
/// Every remembered tuple is in the table under its own bytes, once;
/// the table holds nothing else but tuples of partitions torn down.
fn check_tuples(c: &HCounter) {
    let mut remembered = 0;
    for (slot, p) in c.slots.iter().enumerate() {
        let Some(p) = p else { continue };
        for (index, tuple) in p.seen().enumerate() {
            let hash = c.hasher.hash_one(&**tuple);
            let found = c.seen.find(hash, |r| seen_tuple(&c.slots, *r) == &**tuple);
            if !c.dying.contains(&(slot as u32)) {
                let r = found.expect("a live tuple is in the table");
                assert_eq!((r.slot, r.index), (slot as u32, index as u32));
            }
            remembered += 1;
        }
    }
    assert!(c.seen.len() <= remembered);
    let mut distinct = BTreeSet::new();
    for r in c.seen.iter() {
        let p = c.slots.get(r.slot as usize).and_then(Option::as_ref);
        assert!(p.is_some_and(|p| (r.index as usize) < p.seen_len()));
        let once = distinct.insert(seen_tuple(&c.slots, *r));
        assert!(once, "a tuple is in the table twice");
    }
}

/// A partition too big to free at once leaves every read and write at
/// once, and its tuples count as new while it is torn down in slices.
#[test]
fn big_partitions_are_torn_down_in_slices() {
    let mut c = counter(
        &["PARTITION", "day", "GROUP", "day", "city", "UNIQUE", "user"],
        None,
        false,
    );
    let n = 3 * TEAR_DOWN_AT_ONCE + 200;
    for i in 0..n {
        let user = i.to_string();
        let p = place(&[b"d1"], &[user.as_bytes()], &[user.as_bytes()]);
        assert!(c.incr(&p, Count::Int(1), 0).unwrap().counted);
    }
    assert_eq!(c.delete(&[Some(b"d1")], 0), (1, 1));
    assert!(c.tearing_down());
    assert_eq!(c.partitions(&[None], 0).count(), 0);
    // A user counted again while its old partition is torn down counts.
    let p = place(&[b"d2"], &[b"x"], &[b"7"]);
    assert!(c.incr(&p, Count::Int(1), 0).unwrap().counted);
    assert!(!c.incr(&p, Count::Int(1), 0).unwrap().counted);
    let mut steps = 0;
    while c.tear_down(50) > 0 {
        check_tuples(&c);
        steps += 1;
    }
    assert!(steps > 5, "torn down in {steps} steps");
    assert_eq!(c.cells, 1);
    assert!(!c.incr(&p, Count::Int(1), 0).unwrap().counted);
    assert_eq!(c.seen.len(), 1);
    assert_eq!(data(&c, &[None], 0).len(), 1);
}

#[test]
fn matches_a_model() {
    const TTL: i64 = 100;
    let mut rng = StdRng::seed_from_u64(11);
    let mut c = counter(
        &[
            "PARTITION",
            "day",
            "company",
            "GROUP",
            "company",
            "city",
            "UNIQUE",
            "user",
            "SCOPE",
            "month",
        ],
        Some(TTL),
        false,
    );
    let days: [&[u8]; 4] = [b"d1", b"d2", b"d1:", b"d\x00"];
    let companies: [&[u8]; 3] = [b"c", b"c:1", b""];
    let cities: [&[u8]; 3] = [b"x", b"y", b"\xff"];
    let months: [&[u8]; 2] = [b"m1", b"m2"];
    let mut model: BTreeMap<(Vec<u8>, Vec<u8>), ModelPart> = BTreeMap::new();
    let live = |p: &ModelPart, t: i64| p.last_at + TTL * 1000 > t;
    let mut now = 1_000_000i64;
    for step in 0..30_000 {
        now += rng.gen_range(0..3_000);
        let pick = |rng: &mut StdRng, from: &[&[u8]]| from[rng.gen_range(0..from.len())].to_vec();
        let (day, company) = (pick(&mut rng, &days), pick(&mut rng, &companies));
        match rng.gen_range(0..10) {
            0..=5 => {
                let city = pick(&mut rng, &cities);
                let month = pick(&mut rng, &months);
                let user = vec![rng.gen_range(0..12u8)];
                let at = now - rng.gen_range(0..(TTL * 1500)) * (rng.gen_range(0..4) / 3);
                let by = rng.gen_range(-3..10);
                let p = place(&[&day, &company], &[&city], &[&month, &user]);
                let out = c.incr(&p, Count::Int(by), at).unwrap();
                // The model.
                let key = (day.clone(), company.clone());
                let mut expired = 0;
                if model.get(&key).is_some_and(|m| !live(m, at)) {
                    model.remove(&key);
                    expired += 1;
                }
                let tuple = (month.clone(), user.clone());
                let owner = model
                    .iter()
                    .find(|(_, m)| m.seen.contains(&tuple))
                    .map(|(k, m)| (k.clone(), live(m, at)));
                let current = model.get(&key).and_then(|m| m.cells.get(&city)).copied();
                let counted = match owner {
                    Some((_, true)) => false,
                    Some((owner, false)) => {
                        model.remove(&owner);
                        expired += 1;
                        true
                    }
                    None => true,
                };
                let count = if counted {
                    let m = model.entry(key).or_default();
                    m.last_at = m.last_at.max(at);
                    let cell = m.cells.entry(city).or_insert(0);
                    *cell += by;
                    m.seen.insert(tuple);
                    *cell
                } else {
                    current.unwrap_or(0)
                };
                let want = Outcome {
                    counted,
                    count: Count::Int(count),
                    expired,
                };
                assert_eq!(out, want, "step {step}");
            }
            6 => {
                let fd = rng.gen_bool(0.5).then_some(day.as_slice());
                let fc = rng.gen_bool(0.5).then_some(company.as_slice());
                let (removed, live_removed) = c.delete(&[fd, fc], now);
                let doomed: Vec<_> = model
                    .keys()
                    .filter(|(d, k)| fd.is_none_or(|f| f == d) && fc.is_none_or(|f| f == k))
                    .cloned()
                    .collect();
                let want_live = doomed.iter().filter(|k| live(&model[*k], now)).count();
                doomed.iter().for_each(|k| drop(model.remove(k)));
                assert_eq!(
                    (removed, live_removed),
                    (doomed.len(), want_live),
                    "step {step}"
                );
            }
            7 => {
                let (gone, _) = c.reclaim(now, rng.gen_range(1..20));
                for key in gone {
                    let parts = encoding::decode(&key).unwrap();
                    let m = model.remove(&(parts[0].clone(), parts[1].clone())).unwrap();
                    assert!(!live(&m, now), "step {step}: reclaimed a live partition");
                }
            }
            8 => c = HCounter::decode(&c.encode(), rng.gen_range(0..6)).unwrap(),
            9 if rng.gen_bool(0.3) => {
                c.tear_down(rng.gen_range(1..10));
                check_tuples(&c);
            }
            _ => {
                let city = pick(&mut rng, &cities);
                let p = place(&[&day, &company], &[&city], &[]);
                let want = model
                    .get(&(day.clone(), company.clone()))
                    .filter(|m| live(m, now))
                    .and_then(|m| m.cells.get(&city))
                    .copied()
                    .unwrap_or(0);
                assert_eq!(c.get(&p, now), Count::Int(want), "step {step}");
            }
        }
        let want: Vec<_> = model
            .iter()
            .filter(|(_, m)| live(m, now))
            .flat_map(|((d, k), m)| {
                m.cells.iter().map(move |(city, n)| {
                    (
                        vec![d.clone(), k.clone()],
                        vec![city.clone()],
                        n.to_string(),
                    )
                })
            })
            .collect();
        assert_eq!(data(&c, &[None, None], now), want, "step {step}");
    }
    // Everything expired goes; nothing live does.
    while !c.reclaim(now, 1000).0.is_empty() {}
    check_tuples(&c);
    while c.tear_down(7) > 0 {}
    assert!(!c.tearing_down());
    let live_parts = model.values().filter(|m| live(m, now)).count();
    assert_eq!(c.partitions(&[None, None], now).count(), live_parts);
    assert_eq!(c.index.len(), live_parts);
    assert_eq!(
        c.seen.len(),
        model
            .values()
            .filter(|m| live(m, now))
            .map(|m| m.seen.len())
            .sum::<usize>()
    );
}
