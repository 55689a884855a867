//! A steady-state genetic algorithm.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::util::{dom_of, finite, mutate, repair, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// A steady-state genetic algorithm: tournament selection, uniform crossover on the
/// parameters' values, mutation by moves to random valid neighbours, and repair of children
/// that break a constraint. A child replaces the worst member when it is better.
#[derive(Debug, Clone)]
pub struct Genetic {
    size: usize,
    tournament: usize,
    mutation: f64,
    rng: SmallRng,
    visited: Visited,
    pop: Vec<(u128, f64)>,
}

impl Default for Genetic {
    fn default() -> Self {
        Self::new()
    }
}

impl Genetic {
    /// Population 20, tournaments of 3, mutation probability 0.6.
    pub fn new() -> Self {
        Genetic {
            size: 20,
            tournament: 3,
            mutation: 0.6,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            pop: Vec::new(),
        }
    }
    /// The population size.
    #[must_use]
    pub fn population(mut self, size: usize) -> Self {
        self.size = size.max(2);
        self
    }
    /// The tournament size of parent selection.
    #[must_use]
    pub fn tournament(mut self, k: usize) -> Self {
        self.tournament = k.max(1);
        self
    }
    /// The probability that a child is mutated.
    #[must_use]
    pub fn mutation(mut self, p: f64) -> Self {
        self.mutation = p.clamp(0.0, 1.0);
        self
    }

    fn select(&mut self) -> (u128, f64) {
        let mut best = self.pop[self.rng.random_range(0..self.pop.len())];
        for _ in 1..self.tournament {
            let c = self.pop[self.rng.random_range(0..self.pop.len())];
            if c.1 < best.1 {
                best = c;
            }
        }
        best
    }

    fn child(&mut self, space: &Space) -> Option<u128> {
        if self.pop.len() < self.size.min(space.len().min(usize::MAX as u128) as usize)
            || self.pop.len() < 2
        {
            return self.visited.random_unseen(space, &mut self.rng);
        }
        let a = self.select();
        let b = self.select();
        let da = dom_of(space, &space.get(a.0)?);
        let db = dom_of(space, &space.get(b.0)?);
        let target: Vec<u32> = da
            .iter()
            .zip(&db)
            .map(|(&x, &y)| if self.rng.random::<bool>() { x } else { y })
            .collect();
        let mut i = repair(space, a.0, &target, &mut self.rng);
        if self.rng.random::<f64>() < self.mutation {
            i = mutate(space, i, &self.visited, Neighbourhood::Any, &mut self.rng);
        }
        self.visited.unseen_near(space, i, &mut self.rng)
    }
}

impl Technique for Genetic {
    fn name(&self) -> &str {
        "genetic"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.pop.clear();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(i) = self.child(space) else { break };
            self.visited.insert(i);
            out.push(i);
        }
        out
    }
    fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
        let Some(c) = finite(cost) else { return };
        if self.pop.iter().any(|m| m.0 == index) {
            return;
        }
        if self.pop.len() < self.size {
            self.pop.push((index, c));
            return;
        }
        let worst = (0..self.pop.len()).max_by(|&x, &y| self.pop[x].1.total_cmp(&self.pop[y].1));
        if let Some(w) = worst {
            if c < self.pop[w].1 {
                self.pop[w] = (index, c);
            }
        }
    }
}
