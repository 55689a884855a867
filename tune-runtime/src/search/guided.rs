//! Model-guided iterated local search that plans with the budget.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::util::{dom_of, finite, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// Iterated local search whose steps are ranked by a nearest-neighbour model of the costs
/// seen so far, with restarts when progress stalls and a budget-aware schedule.
///
/// - **Start**: a few random configurations (a twentieth of the budget, 5 to 20; 10 when
///   the budget is unknown), the climb starts from the best.
/// - **Guided steps**: the unseen valid neighbours of the current configuration (one
///   parameter changed, so constraints are always respected) are ranked by the mean
///   log-cost of their `k` nearest evaluated configurations (positions of parameter
///   values, scaled to `0..1`; failures count as twice the worst cost); the most promising
///   one is measured first. The walk moves on improvement.
/// - **Restarts**: at a local optimum, a kick of a few random steps from the best; when the
///   best has not improved for `patience` evaluations (an eighth of the budget, at least
///   15), a fresh start from the best of a few random configurations ranked by the model
///   (diversification).
/// - **Endgame**: in the last tenth of the budget, only the best configurations'
///   neighbourhoods are searched (best first).
#[derive(Debug, Clone)]
pub struct Guided {
    k: usize,
    patience: Option<usize>,
    initial: Option<usize>,
    explore: f64,
    budget: Option<u64>,
    rng: SmallRng,
    visited: Visited,
    /// Evaluated configurations: scaled coordinates and cost (`None`: failed).
    seen: Vec<(Vec<f32>, Option<f64>)>,
    current: Option<(u128, f64)>,
    best: Option<(u128, f64)>,
    queue: Vec<u128>,
    told: usize,
    warm: usize,
    last_gain: usize,
    worst: f64,
    /// The best evaluated configurations (at most 16), for the endgame.
    top: Vec<(u128, f64)>,
}

impl Default for Guided {
    fn default() -> Self {
        Self::new()
    }
}

impl Guided {
    /// The defaults: 3 nearest neighbours, patience and start-up from the budget, a 10%
    /// chance of an unranked step.
    pub fn new() -> Self {
        Guided {
            k: 3,
            patience: None,
            initial: None,
            explore: 0.1,
            budget: None,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            seen: Vec::new(),
            current: None,
            best: None,
            queue: Vec::new(),
            told: 0,
            warm: 10,
            last_gain: 0,
            worst: 0.0,
            top: Vec::new(),
        }
    }
    /// Nearest neighbours the model averages.
    #[must_use]
    pub fn neighbours(mut self, k: usize) -> Self {
        self.k = k.max(1);
        self
    }
    /// Evaluations without a new best before a restart (default: from the budget).
    #[must_use]
    pub fn patience(mut self, n: usize) -> Self {
        self.patience = Some(n.max(1));
        self
    }
    /// Random configurations measured first (default: from the budget).
    #[must_use]
    pub fn initial(mut self, n: usize) -> Self {
        self.initial = Some(n);
        self
    }
    /// The probability that a step ignores the model (a random unseen neighbour).
    #[must_use]
    pub fn explore(mut self, p: f64) -> Self {
        self.explore = p.clamp(0.0, 1.0);
        self
    }

    fn coords(space: &Space, index: u128) -> Vec<f32> {
        let Some(cfg) = space.get(index) else {
            return Vec::new();
        };
        dom_of(space, &cfg)
            .iter()
            .zip(space.params())
            .map(|(&d, p)| {
                let n = p.domain_len().max(2) - 1;
                d as f32 / n as f32
            })
            .collect()
    }

    /// Predicted log-cost of `index` (lower is better).
    fn predict(&self, space: &Space, index: u128) -> f64 {
        let x = Self::coords(space, index);
        let fail = (2.0 * self.worst.max(f64::MIN_POSITIVE)).ln();
        // The k nearest among (at most) the last 400 evaluations: bounded work per step.
        let mut near: Vec<(f32, f64)> = Vec::with_capacity(self.k + 1);
        let start = self.seen.len().saturating_sub(400);
        for (c, cost) in &self.seen[start..] {
            let d: f32 = c.iter().zip(&x).map(|(a, b)| (a - b) * (a - b)).sum();
            let v = cost.map_or(fail, |c| c.max(f64::MIN_POSITIVE).ln());
            if near.len() < self.k || d < near[near.len() - 1].0 {
                let pos = near.partition_point(|n| n.0 <= d);
                near.insert(pos, (d, v));
                near.truncate(self.k);
            }
        }
        if near.is_empty() {
            return 0.0;
        }
        near.iter().map(|n| n.1).sum::<f64>() / near.len() as f64
    }

    fn patience_now(&self) -> usize {
        self.patience
            .unwrap_or_else(|| self.budget.map_or(50, |b| (b as usize / 8).max(15)))
    }

    fn endgame(&self) -> bool {
        self.budget
            .is_some_and(|b| self.told as f64 >= 0.9 * b as f64 && b >= 50)
    }

    /// Unseen neighbours of `index`, the most promising last (popped first).
    fn ranked_neighbours(&mut self, space: &Space, index: u128) -> Vec<u128> {
        let Some(cfg) = space.get(index) else {
            return Vec::new();
        };
        let q = self
            .visited
            .unseen_neighbours(space, &cfg, Neighbourhood::Any);
        let mut scored: Vec<(f64, u128)> = q
            .into_iter()
            .map(|i| (self.predict(space, i) + 1e-9 * self.rng.random::<f64>(), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().map(|s| s.1).collect()
    }

    /// A fresh start: the most promising of a few unseen random configurations.
    fn restart(&mut self, space: &Space) -> Option<u128> {
        let mut best: Option<(f64, u128)> = None;
        for _ in 0..8 {
            let Some(i) = self.visited.random_unseen(space, &mut self.rng) else {
                break;
            };
            let p = self.predict(space, i);
            if best.is_none_or(|b| p < b.0) {
                best = Some((p, i));
            }
        }
        best.map(|b| b.1)
    }

    /// The best evaluated configuration with an unseen neighbour, with its neighbours.
    fn best_open(&mut self, space: &Space) -> Option<(u128, f64, Vec<u128>)> {
        for (i, c) in self.top.clone() {
            let q = self.ranked_neighbours(space, i);
            if !q.is_empty() {
                return Some((i, c, q));
            }
        }
        None
    }
}

impl Technique for Guided {
    fn name(&self) -> &str {
        "guided"
    }
    fn budget(&mut self, evaluations: u64) {
        self.budget = Some(evaluations);
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.seen.clear();
        self.current = None;
        self.best = None;
        self.queue.clear();
        self.told = 0;
        self.last_gain = 0;
        self.worst = 0.0;
        self.top.clear();
        self.warm = self
            .initial
            .unwrap_or_else(|| self.budget.map_or(10, |b| (b as usize / 20).clamp(5, 20)));
    }

    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        let mut guard = 0;
        while out.len() < n && !self.visited.exhausted(space) && guard < 64 {
            guard += 1;
            let asked = self.visited.len();
            let next = if asked < self.warm || self.best.is_none() {
                self.visited.random_unseen(space, &mut self.rng)
            } else if self.endgame() && self.queue.is_empty() {
                match self.best_open(space) {
                    Some((i, c, q)) => {
                        self.current = Some((i, c));
                        self.queue = q;
                        continue;
                    }
                    None => self.visited.random_unseen(space, &mut self.rng),
                }
            } else if self.told.saturating_sub(self.last_gain) > self.patience_now() {
                // Stalled: start afresh elsewhere; what was learnt stays in the model.
                self.last_gain = self.told;
                self.current = None;
                self.queue.clear();
                self.restart(space)
            } else if let Some(i) = self.queue.pop() {
                if self.visited.contains(i) {
                    continue;
                }
                if self.explore > 0.0 && self.rng.random::<f64>() < self.explore {
                    // Now and then an unranked neighbour: the model may be wrong.
                    let k = self.rng.random_range(0..=self.queue.len());
                    if k < self.queue.len() {
                        let j = self.queue.swap_remove(k);
                        self.queue.push(i);
                        if self.visited.contains(j) {
                            continue;
                        }
                        Some(j)
                    } else {
                        Some(i)
                    }
                } else {
                    Some(i)
                }
            } else {
                // A local optimum: kick the best by a few random steps, or restart.
                let from = self.best.or(self.current).map(|b| b.0);
                self.current = None;
                let mut x = from;
                for _ in 0..2 {
                    x = x.and_then(|i| {
                        let cfg = space.get(i)?;
                        let nb = space.neighbour_indices(&cfg, Neighbourhood::Any);
                        (!nb.is_empty()).then(|| nb[self.rng.random_range(0..nb.len())])
                    });
                }
                match x.filter(|&i| !self.visited.contains(i)) {
                    Some(i) => Some(i),
                    None => self.restart(space),
                }
            };
            let Some(i) = next else { break };
            if !self.visited.insert(i) {
                continue;
            }
            out.push(i);
        }
        out
    }

    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.told += 1;
        let c = finite(cost);
        if let Some(c) = c {
            self.worst = self.worst.max(c);
            let pos = self.top.partition_point(|t| t.1 <= c);
            if pos < 16 {
                self.top.insert(pos, (index, c));
                self.top.truncate(16);
            }
            if self.best.is_none_or(|b| c < b.1) {
                self.best = Some((index, c));
                self.last_gain = self.told;
            }
        }
        self.seen.push((Self::coords(space, index), c));
        if self.visited.len() < self.warm {
            return;
        }
        // Climb: move to an improvement of the current configuration (or start from the
        // best once the start-up sample is in).
        let from = match (self.current, c) {
            (None, _) => self.best,
            (Some(cur), Some(c)) if c < cur.1 => Some((index, c)),
            _ => None,
        };
        if let Some((i, c)) = from {
            self.current = Some((i, c));
            self.queue = self.ranked_neighbours(space, i);
        }
    }
}
