//! A TOPN under active-defrag passes (`tuples::defrag`) with the model allocator, which moves
//! every block it is offered and zeroes the old one: an index key left pointing at a moved
//! name would read an empty name with id 0, so every read and invariant below would see it.
//! Passes run in one call and in many (stopped after every unit, with writes, upkeep and clock
//! jumps between two calls), at random points of a random workload that goes through every
//! incremental state (tables growing, sums walking out of buckets, sealing, late entries,
//! graveyards); a twin that gets the same operations and no defrag must answer the same.

use super::key::*;
use super::tests::{beyond_i64, check_invariants, same_answers};
use crate::topn::window::Upkept;
use crate::topn::window::Window;
use crate::tuples::defrag::model::{in_slices, MoveAll};
use crate::tuples::defrag::{Pass, Resume, REBUILD_MAX};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const BUCKET_MS: i64 = 1000;
const WINDOW: u32 = 4;
/// Members drawn from: more than a slot chunk (4,096), so names span chunks.
const POOL: usize = 9000;

fn name(i: usize) -> Vec<u8> {
    // Lengths from 25 to 60 bytes: name blocks of several size classes.
    let pad = "x".repeat(i % 36);
    format!("member-{i:05}-{pad}-long-name").into_bytes()
}

/// One operation, applied alike to the structure under defrag and to its twin.
#[derive(Clone, Copy, Debug)]
enum Op {
    Incr(usize, i64, i64),
    /// The server's time, then upkeep with a budget.
    Upkeep(i64, usize),
}

/// A random workload: skewed members, late writes, negative counts, the server's time
/// running ahead of the events (sums walking out of buckets), upkeep in slices (sealing),
/// rare jumps past the whole window (graveyards).
struct Workload {
    rng: StdRng,
    now: i64,
}

impl Workload {
    fn new(seed: u64) -> Workload {
        Workload {
            rng: StdRng::seed_from_u64(seed),
            now: 0,
        }
    }

    fn next(&mut self) -> Op {
        let rng = &mut self.rng;
        // About 2,500 events a bucket.
        if rng.gen_ratio(1, 40) {
            self.now += rng.gen_range(0..32);
        }
        if rng.gen_ratio(1, 3000) {
            self.now += (WINDOW as i64 + 2) * BUCKET_MS; // everything stored is buried
        }
        if rng.gen_ratio(1, 8) {
            // Now and then the server's time runs up to 2 buckets ahead of the events (it
            // never goes back: the events catch up a few thousand later).
            let lead = match rng.gen_ratio(1, 60) {
                true => rng.gen_range(0..2 * BUCKET_MS),
                false => 0,
            };
            return Op::Upkeep(self.now + lead, rng.gen_range(1..200));
        }
        // Half uniform (many members), half skewed (some with many counts).
        let x: f64 = rng.gen();
        let member = match rng.gen_bool(0.5) {
            true => rng.gen_range(0..POOL),
            false => ((x * x) * POOL as f64) as usize,
        };
        let by = match rng.gen_range(0..40) {
            0..=3 => -rng.gen_range(1..4),
            _ => rng.gen_range(1..5),
        };
        let at = if rng.gen_ratio(1, 20) {
            (self.now - rng.gen_range(0..3 * BUCKET_MS)).max(0)
        } else {
            self.now
        };
        Op::Incr(member, by, at)
    }
}

fn apply(t: &mut Full, op: Op) {
    match op {
        // An overflow changes nothing, alike on both.
        Op::Incr(member, by, at) => _ = t.incr(&name(member), by, at),
        Op::Upkeep(now, budget) => {
            t.observe_time(now);
            t.upkeep(budget);
        }
    }
}

/// With views: their index keys point at the names too, and must follow them.
fn topn() -> Full {
    let views = crate::topn::views::Views::new(&[2, 3], WINDOW).expect("views");
    let mut t = Full::new(BUCKET_MS, WINDOW).with_views(&views);
    t.set_retire_budget(4);
    t
}

/// The incremental states a pass met (each must be met for the test to mean something).
#[derive(Default, Debug)]
struct Seen {
    graveyard: bool,
    graveyard_index_partly_freed: bool,
    sealing: bool,
    sealed: bool,
    walking: bool,
    late: bool,
    negative: bool,
    two_chunks: bool,
}

impl Seen {
    fn note(&mut self, t: &Full) {
        let buckets = &t.content.buckets;
        self.graveyard |= !t.upkeep.graveyards.is_empty();
        self.graveyard_index_partly_freed |= t.upkeep.graveyards.iter().any(|g| {
            let m = &g.members;
            m.live > 0 && m.names.indexed(0) < m.live
        });
        self.sealing |= buckets.iter().any(|b| !b.is_open() && !b.is_sealed());
        self.sealed |= buckets.iter().any(|b| b.is_sealed());
        self.walking |= t.sums.reach.iter().any(|r| r.end != Reach::ALL);
        self.late |= buckets.iter().any(|b| !b.ids_unique());
        self.negative |= buckets.iter().any(|b| b.min < 0);
        self.two_chunks |= t.content.members.slots() > 4096;
    }

    fn all(&self) -> bool {
        let s = self;
        s.graveyard
            && s.graveyard_index_partly_freed
            && s.sealing
            && s.sealed
            && s.walking
            && s.late
            && s.negative
            && s.two_chunks
    }
}

/// Everything a read or a later write can see, checked on `t` against its twin.
fn reads_alike(t: &Full, twin: &Full) {
    assert!(
        t.content.members.names.keys_point_at_names(),
        "an index key was not re-pointed"
    );
    check_invariants(t);
    let names: Vec<Vec<u8>> = (0..POOL).step_by(97).map(name).collect();
    same_answers(t, twin, &names);
    assert_eq!(t.encode(), twin.encode());
    assert_eq!(t.members(), twin.members());
}

/// One pass over `t` in calls stopped after `checks` checks each, with up to `between`
/// operations (on both) between two calls. Returns the calls made.
fn pass_with_writes(
    t: &mut Full,
    twin: &mut Full,
    work: &mut Workload,
    checks: usize,
    between: usize,
    seen: &mut Seen,
) -> usize {
    let mut resume = Resume::new();
    for calls in 1.. {
        seen.note(t);
        let mut mover = MoveAll::stopping_after(checks);
        let mut pass = Pass::new(&mut mover, std::mem::take(&mut resume));
        t.defrag(&mut pass);
        let stopped = pass.finish();
        assert!(
            t.content.members.names.keys_point_at_names(),
            "call {calls}: a key dangles"
        );
        let Some(at) = stopped else {
            return calls;
        };
        resume = at;
        for _ in 0..work.rng.gen_range(0..=between) {
            let op = work.next();
            apply(t, op);
            apply(twin, op);
        }
        assert!(calls < 100_000, "the pass never ends");
    }
    unreachable!()
}

#[test]
fn passes_with_writes_between_calls_keep_every_answer() {
    let mut seen = Seen::default();
    for seed in 0..3 {
        let (mut t, mut twin) = (topn(), topn());
        let mut work = Workload::new(seed);
        for round in 0..80 {
            for _ in 0..250 {
                let op = work.next();
                apply(&mut t, op);
                apply(&mut twin, op);
            }
            let checks = [0, 1, 5, usize::MAX][round % 4];
            let calls = pass_with_writes(&mut t, &mut twin, &mut work, checks, 3, &mut seen);
            if checks == 0 && t.members() > 1000 {
                assert!(calls > t.members() / 128, "{calls} calls");
            }
            reads_alike(&t, &twin);
        }
        // The moved structure keeps working: more of the workload, then the same answers.
        for _ in 0..3000 {
            let op = work.next();
            apply(&mut t, op);
            apply(&mut twin, op);
        }
        reads_alike(&t, &twin);
    }
    assert!(seen.all(), "some states were never met by a pass: {seen:?}");
}

#[test]
fn a_pass_moves_every_name_once_in_bounded_units() {
    let mut t = topn();
    for i in 0..20_000 {
        t.incr(&name(i % POOL), 1 + i as i64 % 3, i as i64 / 8)
            .unwrap();
    }
    t.observe_time(2_500);
    while !t.is_settled() {
        t.upkeep(100);
    }
    let members = t.members();
    assert!(members > 4096, "{members} members");
    let twin = t.clone();
    let (whole, calls) = in_slices(usize::MAX, |pass| t.defrag(pass));
    assert_eq!(calls, 1);
    // Every name, and each bucket's tables, once each (plus the other blocks).
    assert!(
        whole.len() > members + 2 * t.content.buckets.len(),
        "{} moved",
        whole.len()
    );
    reads_alike(&t, &twin);

    // One unit a call: as many blocks moved over all calls, a run of names at most a call.
    let mut most = 0;
    let mut resume = Resume::new();
    let mut moved = 0;
    let mut calls = 0;
    loop {
        let mut mover = MoveAll::stopping_after(0);
        let mut pass = Pass::new(&mut mover, std::mem::take(&mut resume));
        t.defrag(&mut pass);
        let stopped = pass.finish();
        most = most.max(mover.moved.len());
        moved += mover.moved.len();
        calls += 1;
        match stopped {
            Some(at) => resume = at,
            None => break,
        }
    }
    assert_eq!(moved, whole.len());
    assert!(most <= 128, "{most} blocks moved in one call");
    assert!(calls > members / 128, "{calls} calls");
    reads_alike(&t, &twin);
}

/// A key whose indexes are small (rebuilt into fresh nodes: `storage/names_tests.rs` counts
/// them) or big (kept) reads alike after a pass.
#[test]
fn small_and_big_indexes_read_alike_after_a_pass() {
    for members in [10, REBUILD_MAX + 1] {
        let mut t = topn();
        for i in 0..members {
            t.incr(&name(i), 1 + i as i64 % 5, 0).unwrap();
        }
        let twin = t.clone();
        let mut mover = MoveAll::default();
        let mut pass = Pass::new(&mut mover, Resume::new());
        t.defrag(&mut pass);
        assert!(pass.finish().is_none());
        reads_alike(&t, &twin);
    }
}

#[test]
fn totals_beyond_i64_keep_their_side_table() {
    let mut t = beyond_i64();
    // Bucket 0 leaves.
    t.incr(b"z", 1, 3000).unwrap();
    while !t.is_settled() {
        t.incr(b"z", 1, 3000).unwrap();
    }
    assert!(t.sums.big.iter().any(|b| !b.is_empty()));
    let twin = t.clone();
    let (_, calls) = in_slices(0, |pass| t.defrag(pass));
    assert!(calls > 1);
    reads_alike(&t, &twin);
    assert_eq!(t.total_of(0, b"a"), i64::MAX as i128 + 5);
}
