//! Particle swarm optimisation, CLTune's discrete variant.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::util::{dom_of, finite, repair, Visited};
use super::Technique;
use crate::space::Space;

#[derive(Debug, Clone)]
struct Particle {
    at: Option<u128>,
    best: Option<(u128, f64)>,
}

/// Discrete particle swarm (CLTune).
///
/// Each particle moves parameter by parameter: with probability `alpha` a parameter takes
/// the value of the particle's own best configuration, with `beta` the swarm's best, with
/// `gamma` a random value, and otherwise keeps its value. A move that breaks a constraint is
/// repaired to a nearby valid configuration (a greedy walk through valid neighbours towards
/// it); one that lands on a configuration already seen is nudged to an unseen neighbour.
#[derive(Debug, Clone)]
pub struct Pso {
    size: usize,
    alpha: f64,
    beta: f64,
    gamma: f64,
    rng: SmallRng,
    visited: Visited,
    swarm: Vec<Particle>,
    global: Option<(u128, f64)>,
    turn: usize,
    pending: HashMap<u128, usize>,
}

impl Default for Pso {
    fn default() -> Self {
        Self::new()
    }
}

impl Pso {
    /// A swarm of 8 particles with `alpha = 0.3`, `beta = 0.3`, `gamma = 0.1`.
    pub fn new() -> Self {
        Pso {
            size: 8,
            alpha: 0.3,
            beta: 0.3,
            gamma: 0.1,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            swarm: Vec::new(),
            global: None,
            turn: 0,
            pending: HashMap::new(),
        }
    }
    /// The number of particles.
    #[must_use]
    pub fn swarm_size(mut self, size: usize) -> Self {
        self.size = size.max(1);
        self
    }
    /// Per-parameter probabilities of taking the particle's best value (`alpha`), the
    /// swarm's best value (`beta`) and a random value (`gamma`). Their sum should be at most 1.
    #[must_use]
    pub fn influence(mut self, alpha: f64, beta: f64, gamma: f64) -> Self {
        self.alpha = alpha.max(0.0);
        self.beta = beta.max(0.0);
        self.gamma = gamma.max(0.0);
        self
    }

    fn propose(&mut self, space: &Space, p: usize) -> Option<u128> {
        let part = &self.swarm[p];
        let Some(at) = part.at else {
            return self.visited.random_unseen(space, &mut self.rng);
        };
        let here = dom_of(space, &space.get(at)?);
        let own = part
            .best
            .and_then(|b| space.get(b.0))
            .map(|c| dom_of(space, &c));
        let glob = self
            .global
            .and_then(|b| space.get(b.0))
            .map(|c| dom_of(space, &c));
        let mut target = here.clone();
        for (k, t) in target.iter_mut().enumerate() {
            let r: f64 = self.rng.random();
            if r < self.alpha {
                if let Some(o) = &own {
                    *t = o[k];
                }
            } else if r < self.alpha + self.beta {
                if let Some(g) = &glob {
                    *t = g[k];
                }
            } else if r < self.alpha + self.beta + self.gamma {
                let len = space.params()[k].domain_len().max(1);
                *t = self.rng.random_range(0..len) as u32;
            }
        }
        let i = repair(space, at, &target, &mut self.rng);
        self.visited.unseen_near(space, i, &mut self.rng)
    }
}

impl Technique for Pso {
    fn name(&self) -> &str {
        "pso"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.swarm = vec![
            Particle {
                at: None,
                best: None
            };
            self.size
        ];
        self.global = None;
        self.turn = 0;
        self.pending.clear();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let p = self.turn % self.swarm.len().max(1);
            self.turn += 1;
            if self.swarm.is_empty() {
                break;
            }
            let Some(i) = self.propose(space, p) else {
                break;
            };
            self.visited.insert(i);
            self.pending.insert(i, p);
            out.push(i);
        }
        out
    }
    fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
        let Some(p) = self.pending.remove(&index) else {
            return;
        };
        let Some(part) = self.swarm.get_mut(p) else {
            return;
        };
        let Some(c) = finite(cost) else {
            // A failed move: the particle stays where it was (or starts elsewhere).
            return;
        };
        part.at = Some(index);
        if part.best.is_none_or(|b| c < b.1) {
            part.best = Some((index, c));
        }
        if self.global.is_none_or(|g| c < g.1) {
            self.global = Some((index, c));
        }
    }
}
