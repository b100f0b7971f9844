//! Expiry queues: items ordered by when they are due, so the next due item
//! is found in O(log n) and due items are popped a bounded number at a time.

use super::defrag::{rebuild, Mover, Pass};
use std::collections::{BTreeMap, BTreeSet};

/// Items, each due at a time (Unix ms); an item may be queued at several
/// times only if the caller queues it so (it removes with the time it used).
#[derive(Clone, Debug)]
pub struct ExpiryQueue<T: Ord> {
    queue: BTreeSet<(i64, T)>,
}

impl<T: Ord> Default for ExpiryQueue<T> {
    fn default() -> Self {
        ExpiryQueue {
            queue: BTreeSet::new(),
        }
    }
}

impl<T: Ord + Clone> ExpiryQueue<T> {
    pub fn push(&mut self, due: i64, item: T) {
        self.queue.insert((due, item));
    }

    /// Removes `item` queued at `due`; true if it was there.
    pub fn remove(&mut self, due: i64, item: T) -> bool {
        self.queue.remove(&(due, item))
    }

    /// When the first item is due.
    pub fn next_due(&self) -> Option<i64> {
        self.queue.first().map(|(due, _)| *due)
    }

    /// The first item, with when it is due.
    pub fn first(&self) -> Option<(i64, T)> {
        self.queue.first().cloned()
    }

    /// Pops up to `budget` items due at or before `now`, earliest first.
    pub fn pop_due(&mut self, now: i64, budget: usize) -> Vec<(i64, T)> {
        let mut out = Vec::new();
        while out.len() < budget && self.next_due().is_some_and(|due| due <= now) {
            out.extend(self.queue.pop_first());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Offers its nodes to a defrag pass, rebuilt when few ([`rebuild`]).
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        let len = self.queue.len();
        rebuild(pass, &mut self.queue, len, |_, _| {});
    }
}

/// Ids (`u32`) by the second they are due in: 8 bytes an entry (the second
/// and the id in one `u64`), where a queue by the millisecond takes 16. An id
/// counts as due once its whole second is over, so whoever pops it may be up
/// to a second late, never early; whoever needs the exact time keeps it
/// beside the id (reads stay exact to the millisecond).
#[derive(Clone, Debug, Default)]
pub struct SecondQueue {
    queue: BTreeSet<u64>,
}

/// The entry of `id` due at `due` (Unix ms): its second (clamped to what a
/// `u32` holds: 2106) above the id.
fn second_entry(due: i64, id: u32) -> u64 {
    let second = due.div_euclid(1000).clamp(0, u32::MAX as i64) as u64;
    second << 32 | id as u64
}

impl SecondQueue {
    pub fn push(&mut self, due: i64, id: u32) {
        self.queue.insert(second_entry(due, id));
    }

    /// Removes `id` queued at `due`; true if it was there.
    pub fn remove(&mut self, due: i64, id: u32) -> bool {
        self.queue.remove(&second_entry(due, id))
    }

    /// When the first id's second is over: it is due by then.
    pub fn next_due(&self) -> Option<i64> {
        self.queue.first().map(|e| ((e >> 32) as i64 + 1) * 1000)
    }

    /// The first id, if its second is over at `now`.
    pub fn first_due(&self, now: i64) -> Option<u32> {
        self.queue
            .first()
            .filter(|&&e| ((e >> 32) as i64 + 1) * 1000 <= now)
            .map(|&e| e as u32)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Offers its nodes to a defrag pass, rebuilt when few ([`rebuild`]).
    pub fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        let len = self.queue.len();
        rebuild(pass, &mut self.queue, len, |_, _| {});
    }
}

/// Keys each due at one time, for an owner: an opaque tag of the caller's
/// (the value a key name holds), 0 for "whoever holds the key now".
/// Scheduling a key again for the same owner, or for 0, keeps the earlier of
/// its two times (a visit finds the real next time and schedules that);
/// for another owner it is that owner's time.
#[derive(Debug)]
pub struct Schedule<K: Ord + Clone> {
    due: BTreeMap<K, (i64, u64)>,
    queue: ExpiryQueue<K>,
    /// The keys' bytes, for [`Schedule::heap_bytes`].
    key_bytes: usize,
}

impl<K: Ord + Clone + AsRef<[u8]>> Default for Schedule<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone + AsRef<[u8]>> Schedule<K> {
    pub const fn new() -> Self {
        Schedule {
            due: BTreeMap::new(),
            queue: ExpiryQueue {
                queue: BTreeSet::new(),
            },
            key_bytes: 0,
        }
    }

    /// About the heap bytes held: each key twice (by key and by time), with
    /// its time (and owner), in B-tree nodes about two-thirds full. O(1).
    pub fn heap_bytes(&self) -> usize {
        let entry = std::mem::size_of::<K>() + std::mem::size_of::<i64>();
        (2 * self.key_bytes + self.len() * (2 * entry + 8) * 3 / 2) as usize
    }

    /// Makes `key` due at `at` for `owner` (see the type's doc).
    pub fn schedule(&mut self, key: K, at: i64, owner: u64) {
        match self.due.get_mut(&key) {
            Some((current, held)) => {
                let replaced = owner != 0 && *held != 0 && *held != owner;
                if owner != 0 {
                    *held = owner;
                }
                if *current <= at && !replaced {
                    return;
                }
                let was = std::mem::replace(current, at);
                self.queue.remove(was, key.clone());
                self.queue.push(at, key);
            }
            None => {
                self.key_bytes += key.as_ref().len();
                self.queue.push(at, key.clone());
                self.due.insert(key, (at, owner));
            }
        }
    }

    /// Takes up to `budget` keys due at or before `now` out of the schedule.
    pub fn pop_due(&mut self, now: i64, budget: usize) -> Vec<K> {
        let popped = self.queue.pop_due(now, budget);
        popped
            .into_iter()
            .map(|(_, key)| {
                self.due.remove(&key);
                self.key_bytes -= key.as_ref().len();
                key
            })
            .collect()
    }

    pub fn next_due(&self) -> Option<i64> {
        self.queue.next_due()
    }

    /// Takes `key` out of the schedule if `owned` says its owner's entry
    /// goes; true if it did.
    pub fn remove_if(&mut self, key: &K, owned: impl FnOnce(u64) -> bool) -> bool {
        match self.due.get(key) {
            Some(&(at, owner)) if owned(owner) => {
                self.due.remove(key);
                self.key_bytes -= key.as_ref().len();
                self.queue.remove(at, key.clone())
            }
            _ => false,
        }
    }

    /// The entry of `key` owned by `from` is owned by `to` from now on.
    pub fn reown(&mut self, key: &K, from: u64, to: u64) {
        if let Some((_, owner)) = self.due.get_mut(key).filter(|(_, o)| *o == from) {
            *owner = to;
        }
    }

    /// Visits up to `budget` keys in key order from `from` on, removing those
    /// `keep` refuses; returns where to go on, `None` once past the last key.
    pub fn retain_from(
        &mut self,
        from: Option<&K>,
        budget: usize,
        mut keep: impl FnMut(&K) -> bool,
    ) -> Option<K> {
        use std::ops::Bound;
        let start = from.map_or(Bound::Unbounded, Bound::Included);
        let mut visited = self
            .due
            .range((start, Bound::Unbounded))
            .map(|(key, &(at, _))| (key.clone(), at))
            .take(budget + 1)
            .collect::<Vec<_>>();
        let next = (visited.len() > budget).then(|| visited.pop().map(|(key, _)| key));
        for (key, at) in visited {
            if !keep(&key) {
                self.due.remove(&key);
                self.key_bytes -= key.as_ref().len();
                self.queue.remove(at, key);
            }
        }
        next.flatten()
    }

    /// Every key with its time, in key order (for tests of the caller's).
    pub fn entries(&self) -> impl Iterator<Item = (&K, i64)> + '_ {
        self.due.iter().map(|(key, &(at, _))| (key, at))
    }

    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_due_once_their_second_is_over() {
        let mut q = SecondQueue::default();
        q.push(2_500, 7);
        q.push(1_999, 9);
        q.push(1_000, 3);
        q.push(-5, 1);
        q.push(i64::MAX - 1, 2);
        assert_eq!(q.next_due(), Some(1_000), "clamped to second 0");
        assert_eq!(q.first_due(999), None);
        assert_eq!(q.first_due(1_000), Some(1));
        assert!(q.remove(-5, 1));
        assert!(!q.remove(-5, 1));
        assert_eq!(q.next_due(), Some(2_000));
        assert_eq!(q.first_due(1_999), None);
        assert_eq!(q.first_due(2_000), Some(3));
        q.remove(1_000, 3);
        assert_eq!(q.first_due(2_000), Some(9));
        q.remove(1_999, 9);
        assert_eq!(q.first_due(2_999), None);
        assert_eq!(q.first_due(3_000), Some(7));
        q.remove(2_500, 7);
        assert_eq!(q.next_due(), Some((u32::MAX as i64 + 1) * 1000));
        assert_eq!(q.len(), 1);
    }
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn pops_due_items_in_order_under_a_budget() {
        let mut q = ExpiryQueue::default();
        for (due, item) in [(30, "c"), (10, "a"), (20, "b"), (10, "z"), (40, "d")] {
            q.push(due, item);
        }
        assert_eq!(q.next_due(), Some(10));
        assert_eq!(q.pop_due(25, 2), [(10, "a"), (10, "z")]);
        assert_eq!(q.pop_due(25, 10), [(20, "b")]);
        assert_eq!(q.pop_due(25, 10), []);
        assert!(q.remove(40, "d"));
        assert!(!q.remove(40, "d"));
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_due(i64::MAX, 0), []);
    }

    /// Random pushes, removes and pops against a sorted vector.
    #[test]
    fn matches_a_sorted_model() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut q = ExpiryQueue::default();
        let mut model: Vec<(i64, u32)> = Vec::new();
        for _ in 0..20_000 {
            match rng.gen_range(0..4) {
                0 | 1 => {
                    let (due, item) = (rng.gen_range(0..1000), rng.gen_range(0..200));
                    if !model.contains(&(due, item)) {
                        model.push((due, item));
                    }
                    q.push(due, item);
                }
                2 => {
                    let (due, item) = (rng.gen_range(0..1000), rng.gen_range(0..200));
                    let was = model.iter().position(|&e| e == (due, item));
                    if let Some(i) = was {
                        model.remove(i);
                    }
                    assert_eq!(q.remove(due, item), was.is_some());
                }
                _ => {
                    let (now, budget) = (rng.gen_range(0..1000), rng.gen_range(0..5));
                    model.sort();
                    let n = model.iter().take_while(|e| e.0 <= now).count().min(budget);
                    let want: Vec<_> = model.drain(..n).collect();
                    assert_eq!(q.pop_due(now, budget), want);
                }
            }
            model.sort();
            assert_eq!(q.next_due(), model.first().map(|e| e.0));
            assert_eq!(q.len(), model.len());
        }
    }

    #[test]
    fn schedule_keeps_the_earliest_time() {
        let mut s = Schedule::default();
        s.schedule("k", 50, 0);
        s.schedule("k", 70, 0);
        assert_eq!(s.next_due(), Some(50));
        s.schedule("k", 20, 0);
        s.schedule("j", 30, 0);
        assert_eq!(s.len(), 2);
        assert_eq!(s.pop_due(25, 10), ["k"]);
        assert_eq!(s.pop_due(25, 10), Vec::<&str>::new());
        s.schedule("i", 40, 0);
        for (key, at) in [("a", 1), ("b", 2), ("c", 3), ("d", 4)] {
            s.schedule(key, at, 0);
        }
        // In steps of two keys, dropping the vowels.
        let vowel = |k: &&str| "aeiou".contains(*k);
        let next = s.retain_from(None, 2, |k| !vowel(k));
        assert_eq!(next, Some("c"));
        assert_eq!(s.retain_from(next.as_ref(), 2, |k| !vowel(k)), Some("i"));
        assert_eq!(s.retain_from(Some(&"i"), 2, |k| !vowel(k)), None);
        assert_eq!(s.pop_due(4, 10), ["b", "c", "d"]);
        assert!(s.remove_if(&"j", |_| true));
        assert!(!s.remove_if(&"j", |_| true));
        assert_eq!(s.pop_due(100, 10), Vec::<&str>::new(), "i was dropped");
        assert!(s.is_empty());
        assert_eq!(s.heap_bytes(), 0);
        s.schedule("abc", 1, 0);
        s.schedule("abc", 0, 0);
        let one = s.heap_bytes();
        assert!(one >= 6, "{one}");
        s.schedule("de", 1, 0);
        assert!(s.heap_bytes() > one);
        s.remove_if(&"de", |_| true);
        assert_eq!(s.heap_bytes(), one);
    }

    /// An owner's entry is its own: another owner's schedule replaces it
    /// (time included), owner 0 keeps it, and removal can ask for it.
    #[test]
    fn entries_belong_to_their_owner() {
        let mut s = Schedule::default();
        s.schedule("k", 50, 0);
        // An owner over "whoever holds it": the earlier time, now its own.
        s.schedule("k", 70, 7);
        assert_eq!(s.next_due(), Some(50));
        assert!(!s.remove_if(&"k", |o| o == 8));
        // Another owner: its own time, even a later one.
        s.schedule("k", 90, 8);
        assert_eq!(s.next_due(), Some(90));
        // Owner 0 keeps the owner and the earlier time.
        s.schedule("k", 95, 0);
        assert_eq!(s.entries().collect::<Vec<_>>(), [(&"k", 90)]);
        assert!(!s.remove_if(&"k", |o| o == 7));
        assert!(s.remove_if(&"k", |o| o == 8));
        assert!(s.is_empty());
    }

    /// An owner's entry passes to another owner (its value moved in
    /// memory); entries of other owners stay theirs.
    #[test]
    fn an_entry_changes_owner_only_from_its_own() {
        let mut s = Schedule::default();
        s.schedule("a", 10, 7);
        s.schedule("b", 20, 0);
        s.reown(&"a", 8, 9);
        s.reown(&"b", 7, 9);
        s.reown(&"c", 7, 9);
        assert!(!s.remove_if(&"a", |o| o == 9));
        s.reown(&"a", 7, 9);
        assert!(!s.remove_if(&"a", |o| o == 7));
        assert!(s.remove_if(&"b", |o| o == 0));
        assert!(s.remove_if(&"a", |o| o == 9));
        assert!(s.is_empty());
    }
}
