//! Bayesian optimisation with a Gaussian process, for expensive evaluations.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::util::{finite, Visited};
use super::Technique;
use crate::space::{Config, Neighbourhood, Space};

/// Bayesian optimisation: a Gaussian process (Matérn 5/2 kernel) over the parameters'
/// normalised domain positions models the log cost; each proposal maximises the expected
/// improvement over a few hundred candidates (random unseen configurations and the unseen
/// neighbours of the best ones). Failed configurations count as the worst cost seen.
///
/// Each step costs milliseconds, which is negligible next to compiling and running a kernel
/// but not next to a closure: use it for expensive evaluations.
#[derive(Debug, Clone)]
pub struct Bayes {
    initial: usize,
    candidates: usize,
    max_train: usize,
    xi: f64,
    rng: SmallRng,
    visited: Visited,
    /// (index, features, log cost or failure), in the order told.
    data: Vec<(u128, Vec<f64>, Option<f64>)>,
    scale: f64,
    fitted_at: usize,
}

impl Default for Bayes {
    fn default() -> Self {
        Self::new()
    }
}

fn features(space: &Space, cfg: &Config) -> Vec<f64> {
    space
        .params()
        .iter()
        .zip(cfg.raw())
        .map(|(p, &r)| {
            let len = p.domain_len();
            if len <= 1 {
                0.0
            } else {
                p.domain_index(r).unwrap_or(0) as f64 / (len - 1) as f64
            }
        })
        .collect()
}

fn matern(a: &[f64], b: &[f64], scale: f64) -> f64 {
    let d2: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let r = 5f64.sqrt() * d2.sqrt() / scale;
    (1.0 + r + r * r / 3.0) * (-r).exp()
}

/// Lower Cholesky factor of a symmetric positive definite matrix (row-major), or `None`.
fn cholesky(k: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = k[i * n + j];
            for m in 0..j {
                s -= l[i * n + m] * l[j * n + m];
            }
            if i == j {
                if s <= 0.0 {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Solves `L x = b` in place.
fn forward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let mut s = b[i];
        for m in 0..i {
            s -= l[i * n + m] * b[m];
        }
        b[i] = s / l[i * n + i];
    }
}

/// Solves `L^T x = b` in place.
fn backward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in (0..n).rev() {
        let mut s = b[i];
        for m in i + 1..n {
            s -= l[m * n + i] * b[m];
        }
        b[i] = s / l[i * n + i];
    }
}

struct Gp {
    x: Vec<Vec<f64>>,
    l: Vec<f64>,
    alpha: Vec<f64>,
    scale: f64,
}

const NOISE: f64 = 1e-3;

/// Features, standardised targets and indices of the training points.
type Training = (Vec<Vec<f64>>, Vec<f64>, Vec<u128>);

impl Gp {
    /// Fits a GP; returns it with its log marginal likelihood.
    fn fit(x: &[Vec<f64>], y: &[f64], scale: f64) -> Option<(Gp, f64)> {
        let n = x.len();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                let v = matern(&x[i], &x[j], scale) + if i == j { NOISE } else { 0.0 };
                k[i * n + j] = v;
                k[j * n + i] = v;
            }
        }
        let l = cholesky(&k, n)?;
        let mut alpha = y.to_vec();
        forward(&l, n, &mut alpha);
        let fit: f64 = alpha.iter().map(|a| a * a).sum();
        backward(&l, n, &mut alpha);
        let logdet: f64 = (0..n).map(|i| l[i * n + i].ln()).sum();
        let gp = Gp {
            x: x.to_vec(),
            l,
            alpha,
            scale,
        };
        Some((gp, -0.5 * fit - logdet))
    }
    fn predict(&self, q: &[f64]) -> (f64, f64) {
        let n = self.x.len();
        let mut kq: Vec<f64> = self.x.iter().map(|x| matern(x, q, self.scale)).collect();
        let mean: f64 = kq.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        forward(&self.l, n, &mut kq);
        let var = (1.0 + NOISE - kq.iter().map(|v| v * v).sum::<f64>()).max(1e-12);
        (mean, var.sqrt())
    }
}

/// Expected improvement (for minimisation) over `best` of a normal `(mean, sd)`.
pub(super) fn expected_improvement(mean: f64, sd: f64, best: f64, xi: f64) -> f64 {
    let z = (best - mean - xi) / sd;
    let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let cdf = 0.5 * erfc(-z / std::f64::consts::SQRT_2);
    (best - mean - xi) * cdf + sd * pdf
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, 1.2e-7 accuracy).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

impl Bayes {
    /// 10 random initial configurations, 200 random candidates per step (besides the
    /// neighbours of the best 3), at most 80 training points.
    pub fn new() -> Self {
        Bayes {
            initial: 10,
            candidates: 200,
            max_train: 80,
            xi: 0.01,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            data: Vec::new(),
            scale: 0.0,
            fitted_at: 0,
        }
    }
    /// Random configurations evaluated before the model steers.
    #[must_use]
    pub fn initial(mut self, n: usize) -> Self {
        self.initial = n.max(1);
        self
    }
    /// Candidates scored by expected improvement per step.
    #[must_use]
    pub fn candidates(mut self, n: usize) -> Self {
        self.candidates = n.max(1);
        self
    }
    /// The most evaluations the model is fitted on (the best half and the most recent).
    #[must_use]
    pub fn max_train(mut self, n: usize) -> Self {
        self.max_train = n.max(4);
        self
    }

    /// The training set: features and standardised log costs.
    fn training(&self) -> Option<Training> {
        let worst = self
            .data
            .iter()
            .filter_map(|d| d.2)
            .fold(f64::NEG_INFINITY, f64::max);
        if !worst.is_finite() {
            return None;
        }
        let mut rows: Vec<(usize, f64)> = self
            .data
            .iter()
            .enumerate()
            .map(|(k, d)| (k, d.2.unwrap_or(worst)))
            .collect();
        if rows.len() > self.max_train {
            let mut by_cost = rows.clone();
            by_cost.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let mut keep: Vec<usize> = by_cost[..self.max_train / 2].iter().map(|r| r.0).collect();
            let chosen: HashSet<usize> = keep.iter().copied().collect();
            keep.extend(
                rows.iter()
                    .rev()
                    .map(|r| r.0)
                    .filter(|k| !chosen.contains(k))
                    .take(self.max_train - self.max_train / 2),
            );
            keep.sort_unstable();
            rows = keep
                .into_iter()
                .map(|k| (k, self.data[k].2.unwrap_or(worst)))
                .collect();
        }
        let n = rows.len() as f64;
        let mean = rows.iter().map(|r| r.1).sum::<f64>() / n;
        let sd = (rows.iter().map(|r| (r.1 - mean).powi(2)).sum::<f64>() / n)
            .sqrt()
            .max(1e-9);
        let x = rows.iter().map(|r| self.data[r.0].1.clone()).collect();
        let y = rows.iter().map(|r| (r.1 - mean) / sd).collect();
        let idx = rows.iter().map(|r| self.data[r.0].0).collect();
        Some((x, y, idx))
    }

    fn steer(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let Some((x, y, idx)) = self.training() else {
            return Vec::new();
        };
        let d = x.first().map_or(1, |f| f.len()).max(1) as f64;
        // Choose the length scale by marginal likelihood every few steps.
        let gp = if self.scale == 0.0 || self.data.len() >= self.fitted_at + 10 {
            self.fitted_at = self.data.len();
            let mut best: Option<(Gp, f64)> = None;
            for k in 0..5 {
                let s = 0.1 * d.sqrt() * 2f64.powi(k);
                if let Some((gp, ll)) = Gp::fit(&x, &y, s) {
                    if best.as_ref().is_none_or(|b| ll > b.1) {
                        best = Some((gp, ll));
                    }
                }
            }
            best.map(|b| {
                self.scale = b.0.scale;
                b.0
            })
        } else {
            Gp::fit(&x, &y, self.scale).map(|b| b.0)
        };
        let Some(gp) = gp else { return Vec::new() };
        let y_best = y.iter().copied().fold(f64::INFINITY, f64::min);
        // Candidates: unseen neighbours of the best few, then random unseen configurations.
        let mut order: Vec<usize> = (0..y.len()).collect();
        order.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
        let mut seen = HashSet::new();
        let mut cands = Vec::new();
        for &k in order.iter().take(3) {
            if let Some(cfg) = space.get(idx[k]) {
                let mut nb = self
                    .visited
                    .unseen_neighbours(space, &cfg, Neighbourhood::Any);
                // Large domains have many neighbours: score a random share of them.
                if nb.len() > self.candidates / 2 {
                    nb.shuffle(&mut self.rng);
                    nb.truncate(self.candidates / 2);
                }
                for i in nb {
                    if seen.insert(i) {
                        cands.push(i);
                    }
                }
            }
        }
        let want = cands.len() + self.candidates;
        let mut tries = 0;
        while cands.len() < want && tries < 4 * self.candidates {
            tries += 1;
            let Some(i) = self.visited.random_unseen(space, &mut self.rng) else {
                break;
            };
            if seen.insert(i) {
                cands.push(i);
            }
        }
        let mut scored: Vec<(f64, usize, u128)> = cands
            .iter()
            .enumerate()
            .filter_map(|(k, &i)| {
                let f = features(space, &space.get(i)?);
                let (m, s) = gp.predict(&f);
                Some((expected_improvement(m, s, y_best, self.xi), k, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(n).map(|s| s.2).collect()
    }
}

impl Technique for Bayes {
    fn name(&self) -> &str {
        "bayes"
    }
    fn init(&mut self, _space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.data.clear();
        self.scale = 0.0;
        self.fitted_at = 0;
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let valid = self.data.iter().filter(|d| d.2.is_some()).count();
        let mut out = if valid >= self.initial.clamp(1, 2) && self.visited.len() >= self.initial {
            self.steer(space, n)
        } else {
            Vec::new()
        };
        for &i in &out {
            self.visited.insert(i);
        }
        while out.len() < n {
            let Some(i) = self.visited.random_unseen(space, &mut self.rng) else {
                break;
            };
            self.visited.insert(i);
            out.push(i);
        }
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        let Some(cfg) = space.get(index) else { return };
        let y = finite(cost).filter(|&c| c > 0.0).map(f64::ln).or_else(|| {
            // Non-positive costs cannot take a log: keep them on a linear scale.
            finite(cost).map(|c| c - 1.0)
        });
        self.data.push((index, features(space, &cfg), y));
    }
}
