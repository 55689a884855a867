//! Differential evolution on the parameters' domain positions.

use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::util::{dom_of, finite, mutate, repair, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// Differential evolution (DE/rand/1/bin) on each parameter's position among its candidate
/// values: `trial = a + F (b - c)`, crossed over with the target at rate `CR`, rounded,
/// clamped and repaired to a valid configuration. A trial replaces its target when better.
#[derive(Debug, Clone)]
pub struct DiffEvo {
    size: usize,
    f: f64,
    cr: f64,
    rng: SmallRng,
    visited: Visited,
    pop: Vec<(u128, f64)>,
    turn: usize,
    pending: HashMap<u128, usize>,
}

impl Default for DiffEvo {
    fn default() -> Self {
        Self::new()
    }
}

impl DiffEvo {
    /// Population 15, `F = 0.8`, `CR = 0.9`.
    pub fn new() -> Self {
        DiffEvo {
            size: 15,
            f: 0.8,
            cr: 0.9,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            pop: Vec::new(),
            turn: 0,
            pending: HashMap::new(),
        }
    }
    /// The population size (at least 4).
    #[must_use]
    pub fn population(mut self, size: usize) -> Self {
        self.size = size.max(4);
        self
    }
    /// The differential weight `F` and the crossover rate `CR`.
    #[must_use]
    pub fn weights(mut self, f: f64, cr: f64) -> Self {
        self.f = f.max(0.0);
        self.cr = cr.clamp(0.0, 1.0);
        self
    }

    fn trial(&mut self, space: &Space) -> Option<(u128, Option<usize>)> {
        let np = self.pop.len();
        if np < self.size.min(space.len().min(usize::MAX as u128) as usize) || np < 4 {
            return self
                .visited
                .random_unseen(space, &mut self.rng)
                .map(|i| (i, None));
        }
        let t = self.turn % np;
        self.turn += 1;
        let pick = |rng: &mut SmallRng, not: &[usize]| loop {
            let k = rng.random_range(0..np);
            if !not.contains(&k) {
                return k;
            }
        };
        let a = pick(&mut self.rng, &[t]);
        let b = pick(&mut self.rng, &[t, a]);
        let c = pick(&mut self.rng, &[t, a, b]);
        let dom = |i: u128| space.get(i).map(|cfg| dom_of(space, &cfg));
        let (dt, da, db, dc) = (
            dom(self.pop[t].0)?,
            dom(self.pop[a].0)?,
            dom(self.pop[b].0)?,
            dom(self.pop[c].0)?,
        );
        let forced = self.rng.random_range(0..dt.len().max(1));
        let target: Vec<u32> = (0..dt.len())
            .map(|k| {
                if k == forced || self.rng.random::<f64>() < self.cr {
                    let v = da[k] as f64 + self.f * (db[k] as f64 - dc[k] as f64);
                    let hi = space.params()[k].domain_len().saturating_sub(1) as f64;
                    v.round().clamp(0.0, hi) as u32
                } else {
                    dt[k]
                }
            })
            .collect();
        let mut i = repair(space, self.pop[t].0, &target, &mut self.rng);
        for _ in 0..4 {
            if !self.visited.contains(i) {
                return Some((i, Some(t)));
            }
            i = mutate(space, i, &self.visited, Neighbourhood::Any, &mut self.rng);
        }
        if self.visited.contains(i) {
            self.visited
                .random_unseen(space, &mut self.rng)
                .map(|i| (i, Some(t)))
        } else {
            Some((i, Some(t)))
        }
    }
}

impl Technique for DiffEvo {
    fn name(&self) -> &str {
        "diff_evo"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.pop.clear();
        self.turn = 0;
        self.pending.clear();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some((i, t)) = self.trial(space) else {
                break;
            };
            self.visited.insert(i);
            if let Some(t) = t {
                self.pending.insert(i, t);
            }
            out.push(i);
        }
        out
    }
    fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
        let target = self.pending.remove(&index);
        let Some(c) = finite(cost) else { return };
        if self.pop.iter().any(|m| m.0 == index) {
            return;
        }
        match target {
            Some(t) if t < self.pop.len() => {
                if c < self.pop[t].1 {
                    self.pop[t] = (index, c);
                }
            }
            _ if self.pop.len() < self.size => self.pop.push((index, c)),
            _ => {
                // An initial member arriving late: replace the worst if better.
                let worst =
                    (0..self.pop.len()).max_by(|&x, &y| self.pop[x].1.total_cmp(&self.pop[y].1));
                if let Some(w) = worst {
                    if c < self.pop[w].1 {
                        self.pop[w] = (index, c);
                    }
                }
            }
        }
    }
}
