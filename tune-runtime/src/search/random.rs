//! Random search without repetition.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::Technique;
use crate::space::Space;

/// Uniformly random configurations, never the same one twice.
///
/// A lazy Fisher-Yates shuffle of the index range: memory grows with the number of
/// proposals, not with the size of the space.
#[derive(Debug, Clone)]
pub struct Random {
    rng: SmallRng,
    /// Positions `0..taken` of the virtual permutation are used up.
    taken: u128,
    /// Entries of the virtual permutation that differ from the identity.
    swapped: HashMap<u128, u128>,
}

impl Default for Random {
    fn default() -> Self {
        Self::new()
    }
}

impl Random {
    /// A new random search (seeded by [`Technique::init`]).
    pub fn new() -> Self {
        Random {
            rng: SmallRng::seed_from_u64(0),
            taken: 0,
            swapped: HashMap::new(),
        }
    }

    /// The next index of the permutation, or `None` when the space is used up.
    pub(crate) fn next_index(&mut self, len: u128) -> Option<u128> {
        if self.taken >= len {
            return None;
        }
        let i = self.taken;
        let j = self.rng.random_range(i..len);
        let at_j = self.swapped.get(&j).copied().unwrap_or(j);
        let at_i = self.swapped.remove(&i).unwrap_or(i);
        if j != i {
            self.swapped.insert(j, at_i);
        }
        self.taken += 1;
        Some(at_j)
    }
}

impl Technique for Random {
    fn name(&self) -> &str {
        "random"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.taken = 0;
        self.swapped.clear();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        (0..n).map_while(|_| self.next_index(space.len())).collect()
    }
    fn tell(&mut self, _space: &Space, _index: u128, _cost: Option<f64>) {}
}
