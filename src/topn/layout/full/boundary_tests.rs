//! Writes at bucket boundaries: every write's work stays bounded on a big key, whatever
//! retirement, aging, view subtraction or growth is in progress.

use super::key::*;
use super::seen::{get, INDEX_OPS};
use super::tests::check_invariants;
use crate::topn::views::Views;
use crate::topn::window::Upkept;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const H: i64 = 3_600_000;

fn name(i: u32) -> Vec<u8> {
    format!("user:{i:08}").into_bytes()
}

/// A key written as a server would: the server's time observed before each write, upkeep in
/// slices now and then; every write's work is checked against a bound that does not depend on
/// the key's size.
struct Writer {
    t: Full,
    rng: StdRng,
    members: u32,
    writes: usize,
}

impl Writer {
    fn new(views: &[i64], members: u32) -> Writer {
        let mut t = Full::new(H, 24);
        if !views.is_empty() {
            t = t.with_views(&Views::new(views, 24).unwrap());
        }
        Writer {
            t,
            rng: StdRng::seed_from_u64(11),
            members,
            writes: 0,
        }
    }

    /// One write of a random member at `at`, the server's time being `now`.
    fn write(&mut self, at: i64, now: i64) {
        let m = name(self.rng.gen_range(0..self.members));
        self.t.observe_time(now);
        let cost = |t: &Full| t.content.members.index_op_cost();
        let (indexes, cost_before) = (self.t.sums.reach.len(), cost(&self.t));
        let before = get(&INDEX_OPS);
        self.t.incr(&m, 1, at).unwrap();
        let ops = get(&INDEX_OPS) - before;
        let work = self.t.last_retire_work();
        // Fewer members, shallower searches: the cheapest cost the slice could have seen.
        let cost = cost_before.min(cost(&self.t));
        // Its own: an insertion or a repositioning in each index (the window's sum's and each
        // view's); then a slice of upkeep within the budget, of which a step (a member out of
        // every index) always fits.
        assert!(
            work <= DEFAULT_RETIRE_BUDGET,
            "write {}: {work} units of retirement",
            self.writes
        );
        let bound = 2 * indexes + (DEFAULT_RETIRE_BUDGET / cost).max(indexes);
        assert!(
            ops <= bound,
            "write {} at bucket {}: {ops} index operations (bound {bound})",
            self.writes,
            at.div_euclid(H)
        );
        self.writes += 1;
        if self.writes.is_multiple_of(100) {
            self.t.upkeep(300);
        }
    }

    /// `per` writes spread over bucket `b`, at the server's time.
    fn bucket(&mut self, b: i64, per: i64) {
        for i in 0..per {
            let now = b * H + i * (H / per);
            self.write(now, now);
        }
    }
}

/// Across bucket boundaries (each freeing the bucket that left the window and subtracting the
/// ones that left the views), an idle spell (buckets leaving the window's sum at the server's
/// time), late writes into them, and a jump past the whole window (a graveyard): no write does
/// more than a fixed number of index operations, and its slice of upkeep stays within the
/// budget, on a key of 20,000 members in buckets of about 4,000.
#[test]
fn writes_across_boundaries_do_bounded_work() {
    for views in [&[][..], &[6i64, 12][..]] {
        let mut w = Writer::new(views, 20_000);
        for b in 0..28 {
            w.bucket(b, 5_000);
        }
        // Idle for 3 buckets: upkeep walks the window's sum out of them.
        let now = 31 * H;
        w.t.observe_time(now);
        while w.t.upkeep(300).0 >= 300 {}
        // Late writes at the clock, then at the server's time again.
        for i in 0..2_000 {
            w.write(27 * H + i, now + i);
        }
        w.bucket(31, 5_000);
        w.bucket(32, 5_000);
        // Past the whole window: the state goes to a graveyard, freed by later writes.
        for b in 60..62 {
            w.bucket(b, 5_000);
        }
        check_invariants(&w.t);
        while w.t.upkeep(1_000).0 >= 1_000 {}
        assert!(w.t.is_settled(), "views {views:?}");
        check_invariants(&w.t);
    }
}

fn thread_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a plain clock read into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn drop_later(value: Box<dyn Send>) {
    static BIN: std::sync::OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Box<dyn Send>>>> =
        std::sync::OnceLock::new();
    let bin = BIN.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Box<dyn Send>>();
        std::thread::spawn(move || rx.into_iter().for_each(drop));
        std::sync::Mutex::new(tx)
    });
    let _ = bin.lock().map(|tx| tx.send(value));
}

/// Crosses `crossings` bucket boundaries after filling a window, writing `per` events a bucket
/// over `members` members as a server would (time observed, upkeep every `tick` writes).
#[test]
#[ignore]
fn time_boundary_writes() {
    // As the server does: big arrays are freed on another thread.
    crate::topn::storage::set_disposer(drop_later);
    for views in [&[][..], &[6i64, 12][..]] {
        let (per, members, window) = (50_000u32, 200_000u32, 24i64);
        let mut t = Full::new(H, window as u32);
        if !views.is_empty() {
            t = t.with_views(&Views::new(views, window as u32).unwrap());
        }
        let mut rng = StdRng::seed_from_u64(7);
        let mut worst: Vec<(i64, i64, u32, usize)> = Vec::new();
        let mut all = Vec::new();
        for b in 0..window + 6 {
            for i in 0..per {
                let now = b * H + (i as i64) * (H / per as i64);
                let m = name(rng.gen_range(0..members));
                t.observe_time(now);
                let s = thread_ns();
                t.incr(&m, 1, now).unwrap();
                let d = thread_ns() - s;
                if b >= window {
                    all.push(d);
                    worst.push((d, b, i, t.last_retire_work()));
                }
                if i % 100 == 99 {
                    t.upkeep(2000);
                }
            }
        }
        worst.sort_by_key(|w| -w.0);
        all.sort();
        eprintln!(
            "views {views:?}: writes {} median {} ns p99.9 {} ns max {} ns",
            all.len(),
            all[all.len() / 2],
            all[all.len() * 999 / 1000],
            all[all.len() - 1]
        );
        for w in worst.iter().take(5) {
            eprintln!(
                "  {} ns bucket {} write {} retire work {}",
                w.0, w.1, w.2, w.3
            );
        }
    }
}
