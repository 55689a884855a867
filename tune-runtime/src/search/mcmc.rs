//! Markov chain Monte Carlo (KTT).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::util::{finite, relative, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// A random walk over valid neighbours with Metropolis acceptance at a constant
/// temperature, with occasional jumps to a random configuration (as KTT's MCMC searcher).
#[derive(Debug, Clone)]
pub struct Mcmc {
    temp: f64,
    jump: f64,
    hood: Neighbourhood,
    rng: SmallRng,
    visited: Visited,
    current: Option<(u128, f64)>,
}

impl Default for Mcmc {
    fn default() -> Self {
        Self::new()
    }
}

impl Mcmc {
    /// MCMC with temperature `0.05` and jump probability `0.02`.
    pub fn new() -> Self {
        Mcmc {
            temp: 0.05,
            jump: 0.02,
            hood: Neighbourhood::Any,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            current: None,
        }
    }
    /// The temperature, on relative cost differences.
    #[must_use]
    pub fn temperature(mut self, t: f64) -> Self {
        self.temp = t.max(1e-12);
        self
    }
    /// The probability of proposing a random configuration instead of a neighbour.
    #[must_use]
    pub fn jump(mut self, p: f64) -> Self {
        self.jump = p.clamp(0.0, 1.0);
        self
    }
    /// Which neighbours a step may move to.
    #[must_use]
    pub fn neighbourhood(mut self, hood: Neighbourhood) -> Self {
        self.hood = hood;
        self
    }
}

impl Technique for Mcmc {
    fn name(&self) -> &str {
        "mcmc"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.current = None;
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let here = self.current.and_then(|(i, _)| space.get(i));
            let nb = match here {
                Some(cfg) if self.rng.random::<f64>() >= self.jump => {
                    self.visited.unseen_neighbours(space, &cfg, self.hood)
                }
                _ => Vec::new(),
            };
            let next = if nb.is_empty() {
                self.visited.random_unseen(space, &mut self.rng)
            } else {
                Some(nb[self.rng.random_range(0..nb.len())])
            };
            let Some(i) = next else { break };
            self.visited.insert(i);
            out.push(i);
        }
        out
    }
    fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
        let Some(c) = finite(cost) else { return };
        let accept = match self.current {
            None => true,
            Some((_, cur)) => {
                let d = relative(c, cur);
                d <= 0.0 || self.rng.random::<f64>() < (-d / self.temp).exp()
            }
        };
        if accept {
            self.current = Some((index, c));
        }
    }
}
