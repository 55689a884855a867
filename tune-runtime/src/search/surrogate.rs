//! Model-based search with a random-forest surrogate (in the manner of SMAC), built for
//! discrete, constrained spaces with failures.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::bayes::expected_improvement;
use super::forest::{Forest, Growth};
use super::util::{finite, ranks, Visited};
use super::Technique;
use crate::space::{Neighbourhood, Space};

/// Sequential model-based search: a random forest over the parameters' values models the
/// log cost, and each proposal maximises the expected improvement over the best cost seen.
///
/// - **Features**: one per parameter, its value (the logarithm when every candidate value
///   is positive: sizes and factors act multiplicatively), or its position among the
///   candidate values when it is not a number. Trees split on thresholds, so features need
///   no further scaling.
/// - **Failures** (compile errors, launch failures, wrong results) count as the worst cost
///   seen, so the model learns to avoid the regions where they happen.
/// - **Start**: a design among a pool of random valid configurations
///   ([`Surrogate::start_design`]): by default space-filling, each configuration the one
///   farthest (in normalised features) from those chosen before.
/// - **Candidates**: only valid configurations are ever scored, so constraints hold by
///   construction: every unmeasured configuration when the space is small (up to 20,000 by
///   default: the exact maximum), else random unmeasured ones, the unmeasured neighbours
///   of the best few, and a short local search on the expected improvement from the most
///   promising of them.
/// - **Exploitation at the end**: in the last tenth of a known budget (see
///   [`Technique::budget`]), proposals minimise the predicted cost instead.
///
/// Each proposal refits the forest (on at most 250 evaluations: the best half and the most
/// recent) and costs milliseconds: negligible next to compiling and timing a kernel. For a
/// long run, hand over to a local search after a while ([`super::Phased`]).
#[derive(Debug, Clone)]
pub struct Surrogate {
    initial: Option<usize>,
    growth: Growth,
    samples: usize,
    exhaustive: u128,
    starts: usize,
    xi: f64,
    max_train: usize,
    exploit: f64,
    budget: Option<u64>,
    rng: SmallRng,
    visited: Visited,
    /// (index, features, log cost or failure), in the order told.
    data: Vec<(u128, Vec<f64>, Option<f64>)>,
    design: Vec<u128>,
    designed: bool,
    /// Per parameter: whether its feature is the logarithm of the value.
    log: Vec<bool>,
    /// Features of every configuration, for small spaces.
    all: Vec<Vec<f64>>,
    asked: usize,
    /// An extra feature from outside the run (what other devices' recordings say about
    /// each configuration) and its value where it says nothing.
    prior: Option<(Arc<HashMap<u128, f64>>, f64)>,
    spread: usize,
    feasibility: bool,
    local: f64,
    prior_mean: bool,
    thompson: bool,
    rank_costs: bool,
    /// Rows from other devices trained on beside the run's own ([`Surrogate::pool`]).
    pool: Option<pool::Pool>,
    interactions: bool,
    /// The pairs of size parameters whose log product and log ratio are features.
    pairs: Vec<(usize, usize)>,
    start: StartDesign,
    alignment: bool,
    /// The integer parameters whose power-of-two alignment is a feature.
    aligned: Vec<usize>,
}

impl Default for Surrogate {
    fn default() -> Self {
        Self::new()
    }
}

impl Surrogate {
    /// A forest of 10 trees (bootstrap samples, every feature considered, nodes of fewer than
    /// 3 evaluations not split); the start design from the budget (a tenth of it, 5 to 10;
    /// 10 without a budget); 1000 random candidates per step in large spaces, local searches
    /// from the best 10.
    pub fn new() -> Self {
        Surrogate {
            initial: None,
            growth: Growth {
                trees: 10,
                min_split: 3,
                features: 1.0,
                bootstrap: true,
                random_cuts: false,
            },
            samples: 1000,
            exhaustive: 20_000,
            starts: 10,
            xi: 0.0,
            max_train: 250,
            exploit: 0.1,
            budget: None,
            rng: SmallRng::seed_from_u64(0),
            visited: Visited::default(),
            data: Vec::new(),
            design: Vec::new(),
            designed: false,
            log: Vec::new(),
            all: Vec::new(),
            asked: 0,
            prior: None,
            spread: 0,
            feasibility: false,
            local: 0.0,
            prior_mean: false,
            thompson: false,
            rank_costs: false,
            pool: None,
            interactions: false,
            pairs: Vec::new(),
            start: StartDesign::MaxMin,
            alignment: false,
            aligned: Vec::new(),
        }
    }
    /// How the start configurations are chosen (default [`StartDesign::MaxMin`]).
    #[must_use]
    pub fn start_design(mut self, design: StartDesign) -> Self {
        self.start = design;
        self
    }
    /// Adds, for every parameter of positive integer values that are not all powers of two,
    /// the power of two dividing its value as a feature (default: off): 4 for 16, 48 and 80,
    /// 5 for 32 and 96, 6 for 64. GPUs reward aligned sizes (whole warps, whole memory
    /// transactions, vector widths), so the fast values of a size are often a comb (32,
    /// 64, 128 fast; 48, 80, 96, 112 slow) that splits on the value itself, an ordered
    /// reading, can only cut into steps; one split on the alignment separates them.
    #[must_use]
    pub fn alignment(mut self, on: bool) -> Self {
        self.alignment = on;
        self
    }
    /// Grows extremely randomised trees (default: off): every tree sees all the
    /// measurements, and each split takes the best of one random cut per feature (drawn
    /// between the node's smallest and largest value) instead of the best cut of all,
    /// which falls midway between measured values in every tree alike. The forest's
    /// prediction then changes gradually between measurements, where the best cuts make
    /// it flat, with ties that expected improvement can only break at random, and the
    /// trees' spread grows with the distance from what was measured.
    #[must_use]
    pub fn extra_trees(mut self, on: bool) -> Self {
        self.growth.random_cuts = on;
        self.growth.bootstrap = !on;
        self
    }
    /// Adds the log product and the log ratio of every pair of size parameters (numbers,
    /// all positive, more than one value) as features (default: off). What a kernel's
    /// speed follows is often such a product or ratio (threads per block = block x times
    /// block y, the output tile = block size times tile size, work per thread = tile /
    /// threads), a diagonal in the parameters' logarithms that the trees' axis-aligned
    /// splits can only approximate in steps, so the model blurs the fastest region's
    /// configurations together; one split on the product tells them apart.
    #[must_use]
    pub fn interactions(mut self, on: bool) -> Self {
        self.interactions = on;
        self
    }
    /// Proposes by Thompson sampling (default: off): each proposal draws one tree of the
    /// forest and takes the configuration that tree predicts fastest (ties by expected
    /// improvement), instead of maximising the expected improvement of the whole forest.
    /// The endgame ([`Surrogate::exploit`]) still takes the forest's lowest predictions.
    /// Cross-validated on recorded spaces it did not beat expected improvement
    /// (`bench/simulate/RESULTS.md`, round 5).
    #[must_use]
    pub fn thompson(mut self, on: bool) -> Self {
        self.thompson = on;
        self
    }
    /// Fits the forest to the ranks of the measured costs (scaled to `0..=1`, failures
    /// last) instead of the log costs (default: off), so that a few very slow
    /// configurations do not dominate the splits and the fast region gets as fine a model
    /// as the rest. Cross-validated on recorded spaces it did not beat the log costs
    /// (`bench/simulate/RESULTS.md`, round 5).
    #[must_use]
    pub fn rank_costs(mut self, on: bool) -> Self {
        self.rank_costs = on;
        self
    }
    /// Models failures apart (default: off): the cost forest learns from valid
    /// measurements only, a second forest learns where configurations fail, and each
    /// proposal maximises the expected improvement times the chance of success (as in
    /// Bayesian optimisation with unknown constraints). Off, a failure counts as the worst
    /// cost seen, and a leaf mixing failures with good configurations looks uncertain,
    /// which expected improvement rewards.
    #[must_use]
    pub fn feasibility(mut self, on: bool) -> Self {
        self.feasibility = on;
        self
    }
    /// The share of proposals (`0..=1`, default 0) taken from the unmeasured valid
    /// neighbours of the best configuration so far (one parameter changed), by the same
    /// acquisition: a trust region around the incumbent, interleaved with the global
    /// proposals.
    #[must_use]
    pub fn local_share(mut self, share: f64) -> Self {
        self.local = share.clamp(0.0, 1.0);
        self
    }
    /// The proposals of one batch differ pairwise in at least this many parameters where
    /// the model's ranking allows (default 0: the batch is simply the best by the
    /// acquisition, often neighbours of each other when the forest is flat there).
    #[must_use]
    pub fn batch_spread(mut self, parameters: usize) -> Self {
        self.spread = parameters;
        self
    }
    /// Configurations of the space-filling start design (default: from the budget; 0 when
    /// another technique supplies the start, as [`super::Transfer`] does).
    #[must_use]
    pub fn initial(mut self, n: usize) -> Self {
        self.initial = Some(n);
        self
    }
    /// One more feature per configuration, by index: a score from outside the run, such
    /// as the configuration's distance from the optimum on other devices
    /// ([`super::Transfer`]); `missing` where `scores` has none. The forest uses it only as
    /// far as the measured costs follow it, so a prior that does not fit the device is
    /// outweighed as measurements arrive.
    #[must_use]
    pub fn prior_feature(mut self, scores: Arc<HashMap<u128, f64>>, missing: f64) -> Self {
        self.prior = Some((scores, missing));
        self
    }
    /// Uses the prior feature ([`Surrogate::prior_feature`]) as the model's mean too
    /// (default: off): the predicted log cost is a least-squares line in the prior plus
    /// the forest's model of what the line leaves, so a prior that fits the device guides
    /// the proposals from the first few measurements on.
    #[must_use]
    pub fn prior_mean(mut self, on: bool) -> Self {
        self.prior_mean = on;
        self
    }
    /// Trees in the forest.
    #[must_use]
    pub fn trees(mut self, n: usize) -> Self {
        self.growth.trees = n.max(1);
        self
    }
    /// The share of the features each split considers (`0..=1`).
    #[must_use]
    pub fn split_features(mut self, share: f64) -> Self {
        self.growth.features = share.clamp(0.0, 1.0);
        self
    }
    /// Spaces with at most this many configurations have every unmeasured one scored.
    #[must_use]
    pub fn exhaustive_up_to(mut self, n: u128) -> Self {
        self.exhaustive = n;
        self
    }
    /// The improvement margin of expected improvement (log-cost units; more: more
    /// exploration).
    #[must_use]
    pub fn margin(mut self, xi: f64) -> Self {
        self.xi = xi.max(0.0);
        self
    }
    /// The share of a known budget, at its end, spent on the lowest predicted costs.
    #[must_use]
    pub fn exploit(mut self, share: f64) -> Self {
        self.exploit = share.clamp(0.0, 1.0);
        self
    }

    fn start_size(&self) -> usize {
        self.initial
            .unwrap_or_else(|| self.budget.map_or(10, |b| (b as usize / 10).clamp(5, 10)))
    }

    fn features_of(&self, space: &Space, index: u128) -> Option<Vec<f64>> {
        match self.all.get(usize::try_from(index).ok()?) {
            Some(f) => Some(f.clone()),
            None => space
                .get(index)
                .map(|c| self.with_prior(index, self.features(space, &c))),
        }
    }

    fn with_prior(&self, index: u128, mut f: Vec<f64>) -> Vec<f64> {
        if let Some((scores, missing)) = &self.prior {
            f.push(scores.get(&index).copied().unwrap_or(*missing));
        }
        if self.pool.as_ref().is_some_and(|p| p.flag) {
            // The run's own configurations; the pool's rows have 0 here.
            f.push(1.0);
        }
        f
    }

    /// The start design ([`StartDesign`]) among random valid configurations.
    fn plan_design(&mut self, space: &Space) {
        let n = self.start_size();
        if n == 0 {
            return;
        }
        let mut pool: Vec<(u128, Vec<f64>, Vec<u64>)> = Vec::new();
        let mut seen = HashSet::new();
        for _ in 0..(30 * n).max(60) {
            let Some(i) = self.visited.random_unseen(space, &mut self.rng) else {
                break;
            };
            if seen.insert(i) {
                if let (Some(f), Some(c)) = (self.features_of(space, i), space.get(i)) {
                    pool.push((i, f, c.raw().to_vec()));
                }
            }
        }
        let Some(d) = pool.first().map(|p| p.1.len()) else {
            return;
        };
        // Features scaled to 0..=1 over the pool, for the distances of the max-min design.
        let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
        for (_, f, _) in &pool {
            for k in 0..d {
                lo[k] = lo[k].min(f[k]);
                hi[k] = hi[k].max(f[k]);
            }
        }
        for (_, f, _) in &mut pool {
            for k in 0..d {
                let w = hi[k] - lo[k];
                f[k] = if w > 0.0 { (f[k] - lo[k]) / w } else { 0.0 };
            }
        }
        let chosen = design::choose(self.start, &pool, n, &mut self.rng);
        // Proposed from the end.
        self.design = chosen.into_iter().rev().collect();
    }

    /// Training rows: features and log costs, failures at the worst cost seen (or left
    /// out, when failures are modelled apart).
    fn training(&self) -> Option<(Vec<Vec<f64>>, Vec<f64>)> {
        let worst = self
            .data
            .iter()
            .filter_map(|d| d.2)
            .fold(f64::NEG_INFINITY, f64::max);
        if !worst.is_finite() {
            return None;
        }
        let mut rows: Vec<usize> = (0..self.data.len())
            .filter(|&k| !self.feasibility || self.data[k].2.is_some())
            .collect();
        if rows.len() > self.max_train {
            let y = |k: usize| self.data[k].2.unwrap_or(worst);
            let mut by_cost = rows.clone();
            by_cost.sort_by(|&a, &b| y(a).total_cmp(&y(b)).then(a.cmp(&b)));
            let mut keep: Vec<usize> = by_cost[..self.max_train / 2].to_vec();
            let chosen: HashSet<usize> = keep.iter().copied().collect();
            keep.extend(
                rows.iter()
                    .rev()
                    .copied()
                    .filter(|k| !chosen.contains(k))
                    .take(self.max_train - self.max_train / 2),
            );
            keep.sort_unstable();
            rows = keep;
        }
        let x = rows.iter().map(|&k| self.data[k].1.clone()).collect();
        let mut y: Vec<f64> = rows
            .iter()
            .map(|&k| self.data[k].2.unwrap_or(worst))
            .collect();
        if self.rank_costs {
            // Failures (at the worst cost) tie with it, last.
            let n = y.len().max(2) as f64;
            y = ranks(&y)
                .into_iter()
                .map(|r| (r - 1.0) / (n - 1.0))
                .collect();
        }
        Some(self.pooled(x, y))
    }

    /// The least-squares line `a + b * prior` through the training rows' log costs, when
    /// [`Surrogate::prior_mean`] is on and there are 3 rows or more; `b` at least 0 (a prior
    /// that ranks the device the wrong way adds nothing).
    fn prior_line(&self, x: &[Vec<f64>], y: &[f64]) -> Option<(f64, f64)> {
        if !self.prior_mean || self.prior.is_none() || y.len() < 3 {
            return None;
        }
        let n = y.len() as f64;
        let p: Vec<f64> = x.iter().map(|f| f.last().copied().unwrap_or(0.0)).collect();
        let (mp, my) = (p.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
        let (mut spy, mut spp) = (0.0, 0.0);
        for (pi, yi) in p.iter().zip(y) {
            spy += (pi - mp) * (yi - my);
            spp += (pi - mp) * (pi - mp);
        }
        let b = if spp > 0.0 { (spy / spp).max(0.0) } else { 0.0 };
        Some((my - b * mp, b))
    }

    /// Where configurations fail: every measurement, 1 for success and 0 for failure;
    /// `None` while nothing has failed (or failures are not modelled apart).
    fn validity(&self) -> Option<(Vec<Vec<f64>>, Vec<f64>)> {
        if !self.feasibility || self.data.iter().all(|d| d.2.is_some()) {
            return None;
        }
        let x = self.data.iter().map(|d| d.1.clone()).collect();
        let z = self
            .data
            .iter()
            .map(|d| if d.2.is_some() { 1.0 } else { 0.0 })
            .collect();
        Some((x, z))
    }

    /// Replaces the values of the prior feature (set by [`Surrogate::prior_feature`]
    /// before [`Technique::init`]) for every configuration, measured ones included: for a
    /// prior that learns from the run, as [`super::Transfer`]'s weighted sources.
    pub(crate) fn update_prior(&mut self, scores: Arc<HashMap<u128, f64>>) {
        let Some((old, missing)) = &mut self.prior else {
            return;
        };
        *old = scores;
        let (scores, missing) = (old.clone(), *missing);
        let at = |i: u128| scores.get(&i).copied().unwrap_or(missing);
        for (i, f) in self.all.iter_mut().enumerate() {
            if let Some(last) = f.last_mut() {
                *last = at(i as u128);
            }
        }
        for (i, f, _) in &mut self.data {
            if let Some(last) = f.last_mut() {
                *last = at(*i);
            }
        }
    }

    /// The most promising unmeasured configurations by the model, best first.
    fn steer(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let Some((x, y)) = self.training() else {
            return Vec::new();
        };
        let best = y.iter().copied().fold(f64::INFINITY, f64::min);
        // With a prior mean, the forest models what the prior's line does not explain.
        let line = self.prior_line(&x, &y);
        let at = |f: &[f64]| line.map_or(0.0, |(a, b)| a + b * f.last().copied().unwrap_or(0.0));
        let y: Vec<f64> = x.iter().zip(&y).map(|(f, v)| v - at(f)).collect();
        let forest = Forest::fit(&x, &y, &self.growth, &mut self.rng);
        let exploit = self.budget.is_some_and(|b| {
            let left = b.saturating_sub(self.asked as u64) as f64;
            left < self.exploit * b as f64
        });
        let xi = self.xi;
        let valid = self
            .validity()
            .map(|(x, z)| Forest::fit(&x, &z, &self.growth, &mut self.rng));
        let score = |f: &[f64]| -> f64 {
            let (m, v) = forest.predict(f);
            let m = m + at(f);
            let ok = valid
                .as_ref()
                .map_or(1.0, |g| g.predict(f).0.clamp(0.0, 1.0));
            if exploit {
                // The lowest prediction among those more likely to work than not.
                return if ok >= 0.5 { -m } else { -m - 1e6 };
            }
            let sd = v.sqrt();
            let ei = if sd < 1e-12 {
                (best - m - xi).max(0.0)
            } else {
                expected_improvement(m, sd, best, xi)
            };
            ei * ok
        };
        let mut scored: Vec<(f64, u128)> = Vec::new();
        if !self.all.is_empty() {
            for (i, f) in self.all.iter().enumerate() {
                if !self.visited.contains(i as u128) {
                    scored.push((score(f), i as u128));
                }
            }
        } else {
            let mut seen: HashSet<u128> = HashSet::new();
            let mut cands: Vec<u128> = Vec::new();
            // Neighbours of the best few measured configurations.
            let mut order: Vec<usize> = (0..self.data.len())
                .filter(|&k| self.data[k].2.is_some())
                .collect();
            order.sort_by(|&a, &b| {
                let y = |k: usize| self.data[k].2.unwrap_or(f64::INFINITY);
                y(a).total_cmp(&y(b))
            });
            for &k in order.iter().take(5) {
                if let Some(cfg) = space.get(self.data[k].0) {
                    for i in self
                        .visited
                        .unseen_neighbours(space, &cfg, Neighbourhood::Any)
                    {
                        if seen.insert(i) {
                            cands.push(i);
                        }
                    }
                }
            }
            let want = cands.len() + self.samples;
            for _ in 0..2 * self.samples {
                if cands.len() >= want {
                    break;
                }
                let Some(i) = self.visited.random_unseen(space, &mut self.rng) else {
                    break;
                };
                if seen.insert(i) {
                    cands.push(i);
                }
            }
            for i in cands {
                if let Some(f) = self.features_of(space, i) {
                    scored.push((score(&f), i));
                }
            }
            // Local search on the acquisition from the most promising candidates.
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            let starts: Vec<(f64, u128)> = scored.iter().take(self.starts).copied().collect();
            for (mut s, mut i) in starts {
                for _ in 0..8 {
                    let Some(cfg) = space.get(i) else { break };
                    let mut step: Option<(f64, u128)> = None;
                    for j in self
                        .visited
                        .unseen_neighbours(space, &cfg, Neighbourhood::Any)
                    {
                        if !seen.insert(j) {
                            continue;
                        }
                        let Some(f) = self.features_of(space, j) else {
                            continue;
                        };
                        let sj = score(&f);
                        scored.push((sj, j));
                        if sj > step.map_or(s, |t| t.0) {
                            step = Some((sj, j));
                        }
                    }
                    match step {
                        Some((sj, j)) => (s, i) = (sj, j),
                        None => break,
                    }
                }
            }
        }
        // Ties (common: flat regions of the forest) broken at random.
        scored.shuffle(&mut self.rng);
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        if self.thompson && !exploit {
            let tree = |k: usize, f: &[f64]| forest.tree_mean(k, f) + at(f);
            let feasible = |f: &[f64]| valid.as_ref().is_none_or(|g| g.predict(f).0 >= 0.5);
            let mut out: Vec<u128> = Vec::with_capacity(n);
            let feats: Vec<(u128, Vec<f64>)> = scored
                .iter()
                .filter_map(|&(_, i)| self.features_of(space, i).map(|f| (i, f)))
                .filter(|(_, f)| feasible(f))
                .collect();
            for _ in 0..n {
                let k = self.rng.random_range(0..forest.len().max(1));
                // `feats` is in the order of the expected improvement: the first of equal
                // draws is the better one by it.
                let pick = feats
                    .iter()
                    .filter(|(i, _)| !out.contains(i))
                    .map(|(i, f)| (tree(k, f), *i))
                    .fold(None, |b: Option<(f64, u128)>, c| match b {
                        Some(b) if b.0 <= c.0 => Some(b),
                        _ => Some(c),
                    });
                match pick {
                    Some((_, i)) => out.push(i),
                    None => break,
                }
            }
            for &(_, i) in &scored {
                if out.len() >= n {
                    break;
                }
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            return out;
        }
        if self.local > 0.0 {
            return self.interleave_local(space, &scored, n);
        }
        if self.spread == 0 || n < 2 {
            return scored.into_iter().take(n).map(|s| s.1).collect();
        }
        // Spread the batch; where too few are far enough apart, the next best fill it.
        let mut out: Vec<u128> = Vec::with_capacity(n);
        let mut raws: Vec<Vec<u64>> = Vec::with_capacity(n);
        for &(_, i) in &scored {
            if out.len() >= n {
                break;
            }
            let Some(cfg) = space.get(i) else { continue };
            let far = raws
                .iter()
                .all(|r| r.iter().zip(cfg.raw()).filter(|(a, b)| a != b).count() >= self.spread);
            if far {
                out.push(i);
                raws.push(cfg.raw().to_vec());
            }
        }
        for &(_, i) in &scored {
            if out.len() >= n {
                break;
            }
            if !out.contains(&i) {
                out.push(i);
            }
        }
        out
    }
}

impl Surrogate {
    /// `n` proposals from `scored` (best first), the share [`Surrogate::local_share`] of
    /// them (spread evenly over the run) the best-scored valid neighbours of the best
    /// configuration so far.
    fn interleave_local(&self, space: &Space, scored: &[(f64, u128)], n: usize) -> Vec<u128> {
        let incumbent = self
            .data
            .iter()
            .filter_map(|d| d.2.map(|y| (d.0, y)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .and_then(|(i, _)| space.get(i));
        let near: HashSet<u128> = incumbent.map_or_else(HashSet::new, |c| {
            self.visited
                .unseen_neighbours(space, &c, Neighbourhood::Any)
                .into_iter()
                .collect()
        });
        let mut out: Vec<u128> = Vec::with_capacity(n);
        for j in 0..n {
            let t = (self.asked + j) as f64;
            let local = ((t + 1.0) * self.local).floor() > (t * self.local).floor();
            let pick = scored
                .iter()
                .map(|s| s.1)
                .filter(|i| !out.contains(i))
                .find(|i| !local || near.contains(i))
                .or_else(|| scored.iter().map(|s| s.1).find(|i| !out.contains(i)));
            match pick {
                Some(i) => out.push(i),
                None => break,
            }
        }
        out
    }
}

impl Technique for Surrogate {
    fn name(&self) -> &str {
        "surrogate"
    }
    fn budget(&mut self, evaluations: u64) {
        self.budget = Some(evaluations);
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.rng = SmallRng::seed_from_u64(seed);
        self.visited.clear();
        self.data.clear();
        self.design.clear();
        self.designed = false;
        self.asked = 0;
        // The logarithm for parameters whose candidate values are all positive numbers.
        self.log = space
            .params()
            .iter()
            .map(|p| {
                let len = p.domain_len();
                let positive = |i: u64| {
                    p.domain_value(i)
                        .and_then(|v| v.as_f64())
                        .is_some_and(|x| x > 0.0)
                };
                if len <= 4096 {
                    (0..len).all(positive)
                } else {
                    // Large domains are integer ranges: monotone in position.
                    positive(0) && positive(len - 1)
                }
            })
            .collect();
        self.pairs = Vec::new();
        if self.interactions {
            let sized: Vec<usize> = (0..self.log.len())
                .filter(|&k| self.log[k] && space.params()[k].domain_len() > 1)
                .collect();
            for (a, &i) in sized.iter().enumerate() {
                for &j in &sized[a + 1..] {
                    self.pairs.push((i, j));
                }
            }
        }
        self.aligned = if self.alignment {
            (0..space.params().len())
                .filter(|&k| aligns(&space.params()[k]))
                .collect()
        } else {
            Vec::new()
        };
        self.all = if space.len() <= self.exhaustive {
            space
                .iter()
                .enumerate()
                .map(|(i, c)| self.with_prior(i as u128, self.features(space, &c)))
                .collect()
        } else {
            Vec::new()
        };
        self.place_pool(space);
    }

    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        if !self.designed {
            self.designed = true;
            self.plan_design(space);
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(i) = self.design.pop() else { break };
            if self.visited.insert(i) {
                out.push(i);
            }
        }
        let valid = self.data.iter().filter(|d| d.2.is_some()).count();
        if out.len() < n && valid >= 2 {
            for i in self.steer(space, n - out.len()) {
                if self.visited.insert(i) {
                    out.push(i);
                }
            }
        }
        while out.len() < n {
            // Nothing valid yet to learn from (or the model had nothing to say).
            let Some(i) = self.visited.random_unseen(space, &mut self.rng) else {
                break;
            };
            self.visited.insert(i);
            out.push(i);
        }
        self.asked += out.len();
        out
    }

    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        // Results of configurations another technique proposed count as measured too.
        if self.visited.insert(index) {
            self.asked += 1;
        }
        let Some(f) = self.features_of(space, index) else {
            return;
        };
        let y = finite(cost)
            .filter(|&c| c > 0.0)
            .map(f64::ln)
            .or_else(|| finite(cost).map(|c| c - 1.0));
        self.data.push((index, f, y));
    }
}

mod design;
mod features;
mod pool;

pub use design::StartDesign;
#[cfg(test)]
use features::alignment;
use features::aligns;

#[cfg(test)]
mod tests;
