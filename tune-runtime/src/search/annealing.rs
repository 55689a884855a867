//! Simulated annealing (CLTune, ATF).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::util::{finite, relative, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// Simulated annealing over the valid neighbours of the current configuration.
///
/// A worse neighbour is accepted with probability `exp(-delta / T)`, where `delta` is the
/// relative cost increase (`0.1` = 10% slower) and `T` the temperature, which cools
/// geometrically after every evaluation. After `patience` evaluations without improving the
/// best of the current descent (or when every neighbour has been seen) the search restarts
/// from a random configuration at the initial temperature.
#[derive(Debug, Clone)]
pub struct Annealing {
    t0: f64,
    cooling: f64,
    patience: usize,
    hood: Neighbourhood,
    rng: SmallRng,
    visited: Visited,
    current: Option<(u128, f64)>,
    temp: f64,
    stale: usize,
    run_best: f64,
}

impl Default for Annealing {
    fn default() -> Self {
        Self::new()
    }
}

impl Annealing {
    /// Annealing with the default schedule: `T0 = 0.5`, cooling `0.97`, patience 40.
    pub fn new() -> Self {
        Annealing {
            t0: 0.5,
            cooling: 0.97,
            patience: 40,
            hood: Neighbourhood::Any,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            current: None,
            temp: 0.5,
            stale: 0,
            run_best: f64::INFINITY,
        }
    }
    /// The initial temperature, on relative cost differences (ATF's temperature parameter).
    #[must_use]
    pub fn temperature(mut self, t0: f64) -> Self {
        self.t0 = t0.max(1e-12);
        self
    }
    /// The factor applied to the temperature after every evaluation (`0 < cooling <= 1`).
    #[must_use]
    pub fn cooling(mut self, cooling: f64) -> Self {
        self.cooling = cooling.clamp(1e-6, 1.0);
        self
    }
    /// Evaluations without improvement before a restart.
    #[must_use]
    pub fn patience(mut self, patience: usize) -> Self {
        self.patience = patience.max(1);
        self
    }
    /// Which neighbours a step may move to.
    #[must_use]
    pub fn neighbourhood(mut self, hood: Neighbourhood) -> Self {
        self.hood = hood;
        self
    }
    fn restart(&mut self) {
        self.current = None;
        self.temp = self.t0;
        self.stale = 0;
        self.run_best = f64::INFINITY;
    }
}

impl Technique for Annealing {
    fn name(&self) -> &str {
        "annealing"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.restart();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let next = match self.current.and_then(|(i, _)| space.get(i)) {
                None => self.visited.random_unseen(space, &mut self.rng),
                Some(cfg) => {
                    let nb = self.visited.unseen_neighbours(space, &cfg, self.hood);
                    if nb.is_empty() {
                        self.restart();
                        continue;
                    }
                    Some(nb[self.rng.random_range(0..nb.len())])
                }
            };
            let Some(i) = next else { break };
            self.visited.insert(i);
            out.push(i);
        }
        out
    }
    fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
        match (self.current, finite(cost)) {
            (None, Some(c)) => {
                self.current = Some((index, c));
                self.run_best = c;
                self.stale = 0;
            }
            (None, None) => {}
            (Some(_), None) => self.stale += 1,
            (Some((_, cur)), Some(c)) => {
                let d = relative(c, cur);
                if d <= 0.0 || self.rng.random::<f64>() < (-d / self.temp).exp() {
                    self.current = Some((index, c));
                }
                if c < self.run_best {
                    self.run_best = c;
                    self.stale = 0;
                } else {
                    self.stale += 1;
                }
            }
        }
        self.temp *= self.cooling;
        if self.stale > self.patience {
            self.restart();
        }
    }
}
