//! What a key keeps of a state the clock has entirely passed, until later writes have
//! freed it piecewise.

use std::collections::VecDeque;

use super::bucket::Bucket;
use super::members::Members;
use crate::topn::storage::dispose_value;

/// Everything of a state the clock has entirely passed, freed piecewise by later writes.
pub(super) struct Graveyard {
    pub(super) members: Members,
    pub(super) buckets: VecDeque<Bucket>,
}

impl Graveyard {
    pub(super) fn is_empty(&self) -> bool {
        self.buckets.is_empty() && self.members.is_freed()
    }

    /// Frees up to `budget` items; returns the work done.
    pub(super) fn step(&mut self, budget: usize) -> usize {
        let mut done = 0;
        while done < budget {
            if let Some(b) = self.buckets.front() {
                let cost = b.drop_cost();
                if done > 0 && done + cost > budget {
                    break;
                }
                if let Some(gone) = self.buckets.pop_front() {
                    let bytes = gone.heap_bytes();
                    dispose_value(gone, bytes);
                }
                done = (done + cost).min(budget);
            } else {
                done += self.members.free_step(budget - done);
                break;
            }
        }
        if self.buckets.is_empty() && self.buckets.capacity() > 0 {
            self.buckets = VecDeque::new();
        }
        done
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.members.heap_bytes()
            + self
                .buckets
                .iter()
                .map(|b| b.heap_bytes() + std::mem::size_of::<Bucket>())
                .sum::<usize>()
    }

    pub(super) fn effort(&self) -> usize {
        self.members.effort() + self.buckets.len() * 2
    }
}
