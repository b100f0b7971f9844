//! What a key keeps of a state the clock has entirely passed, until upkeep has freed it
//! piecewise.

use std::collections::VecDeque;

use super::bucket::{boxed_bytes, Bucket};
use super::members::Members;
use crate::topn::storage::dispose_value;
use crate::tuples::defrag::{vec_deque, Mover, Pass};

/// Everything of a state the clock has entirely passed, freed piecewise by later upkeep.
pub(super) struct Graveyard {
    pub(super) members: Members,
    pub(super) buckets: VecDeque<Box<Bucket>>,
}

impl Graveyard {
    pub(super) fn is_empty(&self) -> bool {
        self.buckets.is_empty() && self.members.is_freed()
    }

    /// Frees up to about `budget` units; returns the work done.
    pub(super) fn step(&mut self, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            let Some(b) = self.buckets.front() else {
                done += self.members.free_step(budget - done);
                break;
            };
            let Some(charged) = charge(done, b.drop_cost(), budget) else {
                break;
            };
            if let Some(gone) = self.buckets.pop_front() {
                let bytes = gone.heap_bytes();
                dispose_value(gone, bytes);
            }
            done = charged;
        }
        if self.buckets.is_empty() && self.buckets.capacity() > 0 {
            self.buckets = VecDeque::new();
        }
        done
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.members.heap_bytes() + self.members.sums_heap_bytes() + boxed_bytes(&self.buckets)
    }

    pub(super) fn effort(&self) -> usize {
        self.members.effort() + self.buckets.len() * 3
    }

    /// What is left of a buried state (freed from its front meanwhile, so a resumed walk may
    /// visit a bucket twice or skip one: never a wrong move).
    pub(super) fn defrag<M: Mover>(&mut self, pass: &mut Pass<M>) {
        pass.work(|m| vec_deque(m, &mut self.buckets));
        self.members.defrag(pass);
        pass.each(self.buckets.iter_mut(), |b, pass| {
            pass.work(|m| m.boxed(b));
            b.defrag(pass)
        });
    }
}

/// The work done after a step of `cost` units, if the step fits in what is left of `budget`
/// (if not, `None`: the slice ends there). A step always fits in an empty slice, which then
/// reports at most the budget: every slice progresses, and none reports more than its budget.
#[inline]
pub(super) fn charge(done: usize, cost: usize, budget: usize) -> Option<usize> {
    (done == 0 || done + cost <= budget).then(|| (done + cost).min(budget))
}
