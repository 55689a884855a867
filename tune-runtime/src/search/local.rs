//! Iterated local search: first-improvement hill climbing with perturbation.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::util::{finite, mutate, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// Iterated local search (Kernel Tuner's greedy ILS, done on the space's valid neighbours).
///
/// Moves to the first neighbour that improves on the current configuration; at a local
/// optimum (every neighbour seen), it kicks the best configuration found by a few random
/// neighbour steps and climbs again from there.
#[derive(Debug, Clone)]
pub struct LocalSearch {
    hood: Neighbourhood,
    kick: usize,
    initial: usize,
    warm_asked: usize,
    warm_told: usize,
    rng: SmallRng,
    visited: Visited,
    current: Option<(u128, f64)>,
    best: Option<(u128, f64)>,
    queue: Vec<u128>,
    expand: f64,
    /// Every success, for best-first expansion.
    results: Vec<(u128, f64)>,
    /// Configurations whose neighbourhood is spent.
    spent: std::collections::HashSet<u128>,
    /// Configurations it is told about count as visited ([`LocalSearch::skip_told`]).
    skip_told: bool,
}

impl Default for LocalSearch {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalSearch {
    /// Local search over [`Neighbourhood::Any`] from the best of 20 random configurations,
    /// with kicks of 3 steps.
    pub fn new() -> Self {
        LocalSearch {
            hood: Neighbourhood::Any,
            kick: 3,
            initial: 20,
            warm_asked: 0,
            warm_told: 0,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            current: None,
            best: None,
            queue: Vec::new(),
            expand: 0.0,
            results: Vec::new(),
            spent: std::collections::HashSet::new(),
            skip_told: false,
        }
    }
    /// Which neighbours a step may move to.
    #[must_use]
    pub fn neighbourhood(mut self, hood: Neighbourhood) -> Self {
        self.hood = hood;
        self
    }
    /// The probability that, at a local optimum, the search continues from the best
    /// configuration whose neighbourhood is not spent yet (best-first) rather than kicking.
    #[must_use]
    pub fn expand(mut self, p: f64) -> Self {
        self.expand = p.clamp(0.0, 1.0);
        self
    }
    /// Random configurations evaluated first; the climb starts from the best of them.
    #[must_use]
    pub fn initial(mut self, n: usize) -> Self {
        self.initial = n;
        self
    }
    /// Configurations it is told about that it did not propose (another technique's, as the
    /// second phase of [`super::Phased`]) count as visited, so it never proposes them again.
    /// Off by default: in [`super::Bandit`] the arms keep the behaviour they were chosen with.
    #[must_use]
    pub fn skip_told(mut self, on: bool) -> Self {
        self.skip_told = on;
        self
    }
    /// Random steps taken from the best configuration after a local optimum.
    #[must_use]
    pub fn kick(mut self, steps: usize) -> Self {
        self.kick = steps.max(1);
        self
    }

    /// Moves to the best configuration seen that still has unseen neighbours.
    fn expand_best(&mut self, space: &Space) -> bool {
        self.results
            .sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        for k in 0..self.results.len() {
            let (i, c) = self.results[k];
            if self.spent.contains(&i) {
                continue;
            }
            let Some(cfg) = space.get(i) else { continue };
            let mut q = self.visited.unseen_neighbours(space, &cfg, self.hood);
            if q.is_empty() {
                self.spent.insert(i);
                continue;
            }
            q.shuffle(&mut self.rng);
            self.current = Some((i, c));
            self.queue = q;
            return true;
        }
        false
    }
}

impl Technique for LocalSearch {
    fn name(&self) -> &str {
        "local"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.current = None;
        self.best = None;
        self.queue.clear();
        self.warm_asked = 0;
        self.warm_told = 0;
        self.results.clear();
        self.spent.clear();
    }

    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        let mut kicks = 0;
        while out.len() < n && !self.visited.exhausted(space) {
            let next = if self.warm_asked < self.initial {
                self.warm_asked += 1;
                self.visited.random_unseen(space, &mut self.rng)
            } else if self.current.is_none() {
                self.visited.random_unseen(space, &mut self.rng)
            } else if let Some(i) = self.queue.pop() {
                if self.visited.contains(i) {
                    continue;
                }
                Some(i)
            } else if self.rng.random::<f64>() < self.expand && self.expand_best(space) {
                continue;
            } else {
                // A local optimum: kick the best one.
                kicks += 1;
                let mut x = self.best.or(self.current).map_or(0, |b| b.0);
                for _ in 0..self.kick {
                    x = mutate(space, x, &self.visited, self.hood, &mut self.rng);
                }
                self.current = None;
                if self.visited.contains(x) || kicks > 4 {
                    self.visited.random_unseen(space, &mut self.rng)
                } else {
                    Some(x)
                }
            };
            let Some(i) = next else { break };
            self.visited.insert(i);
            out.push(i);
        }
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        if self.skip_told {
            self.visited.insert(index);
        }
        let c = finite(cost);
        if let Some(c) = c {
            self.results.push((index, c));
            if self.best.is_none_or(|b| c < b.1) {
                self.best = Some((index, c));
            }
        }
        let climb_from = if self.warm_told < self.initial {
            self.warm_told += 1;
            if self.warm_told < self.initial {
                return;
            }
            self.best
        } else {
            c.map(|c| (index, c))
        };
        let Some((index, c)) = climb_from else { return };
        if self.current.is_none_or(|cur| c < cur.1) {
            self.current = Some((index, c));
            self.queue = match space.get(index) {
                Some(cfg) => self.visited.unseen_neighbours(space, &cfg, self.hood),
                None => Vec::new(),
            };
            self.queue.shuffle(&mut self.rng);
        }
    }
}
