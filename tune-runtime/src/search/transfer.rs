//! Transfer: a search that starts from what recordings of the same kernel on other devices
//! (or other inputs) say about the space, for short runs on a new device.

use std::collections::HashMap;
use std::sync::Arc;

use super::util::ranks;
use super::{StartDesign, Surrogate, Technique};
use crate::space::Space;

/// What one source (a recording of the kernel elsewhere) says about the configurations of
/// the target space: `ln(time / the source's optimum)` by target index, 0 at the source's
/// optimum. Failures and configurations the source lacks are absent.
/// [`crate::simulate::source_view`] builds one from a recording.
pub type SourceView = HashMap<u128, f64>;

/// How far from a source's optimum a configuration counts when the source has no time for
/// it (a failure, or not recorded): a hundredth of the optimum, as [`crate::simulate::prior`].
const MISSING: f64 = 4.605_170_185_988_091; // ln(100)

/// Pooled sources ([`Transfer::pooled`]): rows taken from each source, the best by its own
/// times and as many at random from the rest, and the weight of one of the target's own
/// measurements in rows of a source. Fixed before the cross-validation that tried them.
const POOL_BEST: usize = 50;
const POOL_RANDOM: usize = 50;
const POOL_WEIGHT: usize = 10;

/// Transfer from other devices: first the configurations that were near-best on the
/// sources, spread out, then a random-forest model ([`Surrogate`]) of the target.
///
/// - **Prior**: per configuration, the mean over sources of `ln(time / optimum)` on that
///   source (the geometric mean of the fraction of each source's optimum, as a cost;
///   capped at a hundredth of it). Normalising per source makes fast and slow devices
///   count alike.
/// - **Start** (a tenth of the budget, at least 5 and at most 10, as [`super::WarmStart`]):
///   round-robin over the consensus ranking and each source's own ranking, each time the
///   best configuration of that ranking not chosen yet that differs from every chosen one
///   in at least `diversity` parameters (default 3). So each source's near-best region is
///   covered (the devices disagree most at the top of their rankings), and several
///   regions of one source rather than one.
/// - **Model**: then [`Surrogate`] (expected improvement over the log cost), by default
///   after its own space-filling design, so that it also sees the space beyond the
///   sources' favourites (a device can differ from all of them). With
///   [`Transfer::prior_feature`] the model also has the prior as a feature, leaning on it
///   only as far as the target's measurements follow it; in leave-one-GPU-out simulation
///   that did not help, so it is off by default.
///
/// The defaults were chosen by leave-one-GPU-out cross-validation on recorded spaces
/// (`bench/simulate/RESULTS.md`, "Transfer"). Without sources it is [`Surrogate`] alone.
pub struct Transfer {
    sources: Vec<Arc<SourceView>>,
    diversity: usize,
    min: usize,
    max: usize,
    budget: Option<u64>,
    model: Surrogate,
    queue: Vec<u128>,
    prior_feature: bool,
    space_filling: bool,
    weighted: bool,
    /// The start configurations still to come from the weighted consensus.
    pending: usize,
    /// The target's measurements: index and log cost (`None`: failed).
    measured: Vec<(u128, Option<f64>)>,
    /// Measurements the weights were last computed from.
    weighed: usize,
    weights: Vec<f64>,
    /// Every start configuration proposed, for the diversity of the next.
    chosen: Vec<u128>,
    exploit: Option<f64>,
    prior_mean: bool,
    /// Pooled sources: off, or on with (true) or without the target flag feature.
    pooled: Option<bool>,
    /// The model's start design and alignment features ([`Transfer::default_model`]).
    design: StartDesign,
    alignment: bool,
    /// The model's trust region ([`Transfer::local_share`]).
    local: f64,
}

impl std::fmt::Debug for Transfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transfer")
            .field("sources", &self.sources.len())
            .field("diversity", &self.diversity)
            .finish()
    }
}

impl Transfer {
    /// A transfer from `sources` (one view per other recording) with the defaults chosen by
    /// leave-one-GPU-out cross-validation: diversity 3, the model's own space-filling
    /// design, no prior feature.
    pub fn new(sources: Vec<SourceView>) -> Self {
        Transfer {
            sources: sources.into_iter().map(Arc::new).collect(),
            diversity: 3,
            min: 5,
            max: 10,
            budget: None,
            model: Surrogate::new(),
            queue: Vec::new(),
            prior_feature: false,
            space_filling: true,
            weighted: false,
            pending: 0,
            measured: Vec::new(),
            weighed: 0,
            weights: Vec::new(),
            chosen: Vec::new(),
            exploit: None,
            prior_mean: false,
            pooled: None,
            design: StartDesign::MaxMin,
            alignment: false,
            local: 0.0,
        }
    }
    /// The share of the model's proposals taken from the neighbours of the best
    /// configuration so far ([`Surrogate::local_share`]; default 0): where a source ranks
    /// the target's fast region well but not its exact optimum, the optimum is often one
    /// parameter away from the best start configuration.
    #[must_use]
    pub fn local_share(mut self, share: f64) -> Self {
        self.local = share;
        self
    }
    /// Gives the model the cold default's settings (`hybrid`'s surrogate, round 8): a
    /// start design balanced over each parameter's values and the power-of-two alignment
    /// of integer sizes as features ([`Surrogate::start_design`], [`Surrogate::alignment`];
    /// default: off, the max-min design without alignment that round 3's choice had).
    #[must_use]
    pub fn default_model(mut self, on: bool) -> Self {
        (self.design, self.alignment) = if on {
            (StartDesign::Balanced, true)
        } else {
            (StartDesign::MaxMin, false)
        };
        self
    }
    /// Trains the model on the sources' records pooled with the target's own measurements
    /// (default: off). Each source gives its 50 best configurations and 50 others at
    /// random, as `ln(time / its optimum)`; the target's measurements enter as
    /// `ln(cost / the best so far)`, each weighing as 10 source rows, so the target's first
    /// measurements steer. With `flag` the model has a feature that tells the target's
    /// rows from the sources', and can split the target off where it differs. The start
    /// from the sources' rankings is unchanged; combine with
    /// [`Transfer::space_filling`]`(false)`, since the sources' rows already show the
    /// model the space beyond their favourites. In leave-one-GPU-out simulation it did not
    /// beat the default (it helps where the sources rank the target well, and misleads
    /// where they do not; `bench/simulate/RESULTS.md`, "Transfer", round 5).
    #[must_use]
    pub fn pooled(mut self, on: bool, flag: bool) -> Self {
        self.pooled = on.then_some(flag);
        self
    }
    /// The share of a known budget, at its end, that the model spends on the lowest
    /// predicted costs ([`Surrogate::exploit`]; default: the surrogate's own, a tenth).
    #[must_use]
    pub fn exploit(mut self, share: f64) -> Self {
        self.exploit = Some(share);
        self
    }
    /// Gives the model the consensus (weighted, with [`Transfer::weigh_sources`]) as its
    /// mean: a least-squares line in the consensus plus the forest's model of the rest
    /// ([`Surrogate::prior_mean`]; default: off; in leave-one-GPU-out simulation it did
    /// not help, see `bench/simulate/RESULTS.md`).
    #[must_use]
    pub fn prior_mean(mut self, on: bool) -> Self {
        self.prior_mean = on;
        self
    }
    /// Weighs the sources by how well each one ranks the target's own measurements
    /// (default: off). Each source's weight is its Spearman rank correlation with the
    /// measured costs (failures ranked last), 0 where negative, recomputed after every
    /// measurement (equal weights before 3). The start takes one configuration from each
    /// ranking (the consensus and each source's) as without weights, then the rest of
    /// the start from the weighted consensus ranking; the model then has the weighted
    /// consensus as a feature. So a source that ranks this device's configurations like
    /// the device does steers, and one that does not drops out. No parameter is tuned. In
    /// leave-one-GPU-out simulation it did not beat the unweighted default (it helps where
    /// one source fits, and misleads where none does; `bench/simulate/RESULTS.md`).
    #[must_use]
    pub fn weigh_sources(mut self, on: bool) -> Self {
        self.weighted = on;
        self
    }
    /// Whether the model has the sources' verdict as a feature (default: no; it did not
    /// help in leave-one-GPU-out simulation, see `bench/simulate/RESULTS.md`).
    #[must_use]
    pub fn prior_feature(mut self, on: bool) -> Self {
        self.prior_feature = on;
        self
    }
    /// Whether the model also measures its own space-filling start design (its default
    /// size for the budget) after the sources' start, so that it sees the space beyond the
    /// sources' favourites (default: yes).
    #[must_use]
    pub fn space_filling(mut self, on: bool) -> Self {
        self.space_filling = on;
        self
    }
    /// Each start configuration differs from every earlier one in at least this many
    /// parameters (0: simply the best of each ranking in turn).
    #[must_use]
    pub fn diversity(mut self, parameters: usize) -> Self {
        self.diversity = parameters;
        self
    }
    /// Bounds on the number of start configurations taken from the sources.
    #[must_use]
    pub fn tries(mut self, min: usize, max: usize) -> Self {
        self.min = min;
        self.max = max.max(min);
        self
    }

    /// The prior cost of every configuration some source knows: the mean over sources of
    /// its capped distance from that source's optimum.
    fn consensus(&self) -> HashMap<u128, f64> {
        let mut sum: HashMap<u128, f64> = HashMap::new();
        for s in &self.sources {
            for &i in s.keys() {
                sum.entry(i).or_insert(0.0);
            }
        }
        let n = self.sources.len() as f64;
        for (i, v) in sum.iter_mut() {
            *v = self
                .sources
                .iter()
                .map(|s| s.get(i).map_or(MISSING, |g| g.clamp(0.0, MISSING)))
                .sum::<f64>()
                / n;
        }
        sum
    }

    /// The sources' weights from the target's measurements so far (see
    /// [`Transfer::weigh_sources`]), and the model's prior feature from them.
    fn reweigh(&mut self) {
        if self.measured.len() == self.weighed {
            return;
        }
        self.weighed = self.measured.len();
        if self.measured.len() < 3 {
            return;
        }
        let y: Vec<f64> = self
            .measured
            .iter()
            .map(|m| m.1.unwrap_or(f64::INFINITY))
            .collect();
        self.weights = self
            .sources
            .iter()
            .map(|s| {
                let x: Vec<f64> = self
                    .measured
                    .iter()
                    .map(|m| s.get(&m.0).map_or(MISSING, |g| g.clamp(0.0, MISSING)))
                    .collect();
                spearman(&x, &y).unwrap_or(0.0).max(0.0)
            })
            .collect();
        self.model.update_prior(Arc::new(self.weighted_consensus()));
    }

    /// The prior by the current weights; constant (all 0) when every weight is 0.
    fn weighted_consensus(&self) -> HashMap<u128, f64> {
        let total: f64 = self.weights.iter().sum();
        let mut out: HashMap<u128, f64> = HashMap::new();
        for s in &self.sources {
            for &i in s.keys() {
                out.entry(i).or_insert(0.0);
            }
        }
        if total <= 0.0 {
            return out;
        }
        for (i, v) in out.iter_mut() {
            *v = self
                .sources
                .iter()
                .zip(&self.weights)
                .filter(|(_, &w)| w > 0.0)
                .map(|(s, &w)| w * s.get(i).map_or(MISSING, |g| g.clamp(0.0, MISSING)))
                .sum::<f64>()
                / total;
        }
        out
    }

    /// The best configuration by the weighted consensus not measured or chosen yet that
    /// differs from every start configuration in `diversity` parameters (the best not
    /// measured when none does); `None` when no source has weight.
    fn next_weighted(&self, space: &Space, batch: &[u128]) -> Option<u128> {
        if self.weights.iter().sum::<f64>() <= 0.0 {
            return None;
        }
        let mut ranked: Vec<(u128, f64)> = self
            .weighted_consensus()
            .into_iter()
            .filter(|&(i, _)| i < space.len())
            .collect();
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let taken = |i: u128| {
            batch.contains(&i) || self.chosen.contains(&i) || self.measured.iter().any(|m| m.0 == i)
        };
        let raws: Vec<Vec<u64>> = self
            .chosen
            .iter()
            .chain(batch)
            .filter_map(|&i| space.get(i).map(|c| c.raw().to_vec()))
            .collect();
        let far = |i: u128| {
            space.get(i).is_some_and(|c| {
                raws.iter().all(|r| {
                    r.iter().zip(c.raw()).filter(|(a, b)| a != b).count() >= self.diversity
                })
            })
        };
        let free: Vec<u128> = ranked.iter().map(|r| r.0).filter(|&i| !taken(i)).collect();
        free.iter()
            .copied()
            .find(|&i| far(i))
            .or(free.first().copied())
    }

    /// The pooled rows ([`Transfer::pooled`]): from each source, its best configurations
    /// and others at random (by `seed`), `(target index, ln(time / the source's optimum))`.
    fn pool_rows(&self, space: &Space, seed: u64) -> Vec<(u128, f64)> {
        use rand::seq::IndexedRandom;
        use rand::SeedableRng;
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x706f_6f6c);
        let mut rows = Vec::new();
        for s in &self.sources {
            let mut v: Vec<(u128, f64)> = s
                .iter()
                .filter(|(&i, g)| i < space.len() && g.is_finite())
                .map(|(&i, &g)| (i, g.max(0.0)))
                .collect();
            v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let rest = v.split_off(POOL_BEST.min(v.len()));
            rows.extend(v);
            rows.extend(rest.choose_multiple(&mut rng, POOL_RANDOM).copied());
        }
        rows
    }

    /// The start: round-robin over the rankings, best first, spread by `diversity`.
    fn plan_start(&self, space: &Space, consensus: &HashMap<u128, f64>, n: usize) -> Vec<u128> {
        let ranked = |m: &HashMap<u128, f64>| -> Vec<u128> {
            let mut v: Vec<(u128, f64)> = m.iter().map(|(&i, &g)| (i, g)).collect();
            v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            v.into_iter()
                .map(|x| x.0)
                .filter(|&i| i < space.len())
                .collect()
        };
        let mut lists = vec![ranked(consensus)];
        if self.sources.len() > 1 {
            lists.extend(self.sources.iter().map(|s| ranked(s)));
        }
        let mut cursor = vec![0usize; lists.len()];
        let mut chosen: Vec<(u128, Vec<u64>)> = Vec::new();
        while chosen.len() < n {
            let mut progressed = false;
            for (l, list) in lists.iter().enumerate() {
                if chosen.len() >= n {
                    break;
                }
                while let Some(&i) = list.get(cursor[l]) {
                    cursor[l] += 1;
                    let Some(cfg) = space.get(i) else { continue };
                    let differs = |(j, raw): &(u128, Vec<u64>)| {
                        *j != i
                            && raw.iter().zip(cfg.raw()).filter(|(a, b)| a != b).count()
                                >= self.diversity
                    };
                    if chosen.iter().all(differs) {
                        chosen.push((i, cfg.raw().to_vec()));
                        progressed = true;
                        break;
                    }
                }
            }
            if !progressed {
                break;
            }
        }
        chosen.into_iter().map(|c| c.0).collect()
    }
}

impl Technique for Transfer {
    fn name(&self) -> &str {
        "transfer"
    }
    fn budget(&mut self, evaluations: u64) {
        self.budget = Some(evaluations);
    }
    fn init(&mut self, space: &Space, seed: u64) {
        let mut model = Surrogate::new()
            .start_design(self.design)
            .alignment(self.alignment)
            .local_share(self.local);
        self.queue.clear();
        self.pending = 0;
        self.measured.clear();
        self.weighed = 0;
        self.weights = vec![1.0; self.sources.len()];
        if !self.sources.is_empty() {
            let consensus = self.consensus();
            let n = self
                .budget
                .map_or(self.max, |b| (b as usize / 10).clamp(self.min, self.max));
            // Weighted: one from each ranking, the rest once the target has spoken.
            let first = if self.weighted {
                n.min(self.sources.len() + usize::from(self.sources.len() > 1))
            } else {
                n
            };
            self.queue = self.plan_start(space, &consensus, first);
            self.pending = n.saturating_sub(self.queue.len());
            self.queue.reverse();
            if !self.space_filling {
                model = model.initial(0);
            }
            if self.prior_feature || self.weighted || self.prior_mean {
                model = model
                    .prior_feature(Arc::new(consensus), MISSING)
                    .prior_mean(self.prior_mean);
            }
        }
        if let Some(flag) = self.pooled.filter(|_| !self.sources.is_empty()) {
            model = model.pool(self.pool_rows(space, seed), POOL_WEIGHT, flag);
        }
        if let Some(share) = self.exploit {
            model = model.exploit(share);
        }
        if let Some(b) = self.budget {
            model.budget(b);
        }
        model.init(space, seed);
        self.model = model;
        self.chosen = self.queue.clone();
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.queue.pop() {
                Some(i) => out.push(i),
                None => break,
            }
        }
        if self.weighted && out.len() < n && self.pending > 0 {
            self.reweigh();
            while out.len() < n && self.pending > 0 {
                match self.next_weighted(space, &out) {
                    Some(i) => {
                        out.push(i);
                        self.chosen.push(i);
                        self.pending -= 1;
                    }
                    // No source ranks the target's measurements: the model goes on.
                    None => self.pending = 0,
                }
            }
        }
        if out.len() < n {
            // The model has not been told of this batch's start configurations yet.
            for i in self.model.ask(space, n - out.len()) {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.measured.push((index, cost.filter(|c| c.is_finite())));
        if self.weighted {
            self.reweigh();
        }
        self.model.tell(space, index, cost);
    }
}

/// Spearman's rank correlation; `None` when either side is constant.
fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::param::Param;
    use crate::space::SpaceBuilder;

    fn space() -> Space {
        SpaceBuilder::new()
            .param(Param::<u32>::range("A", 0..10))
            .param(Param::<u32>::range("B", 0..10))
            .param(Param::<u32>::range("C", 0..4))
            .build()
            .unwrap()
    }

    /// A source whose optimum is at (a, b, c), distance growing with each parameter's gap.
    fn source(s: &Space, at: [u32; 3]) -> SourceView {
        s.iter()
            .enumerate()
            .map(|(i, c)| {
                let d: f64 = (0..3)
                    .map(|k| (c.get::<u32>(k) as f64 - at[k] as f64).abs())
                    .sum();
                (i as u128, 0.1 * d)
            })
            .collect()
    }

    fn drive(t: &mut Transfer, s: &Space, budget: usize, cost: impl Fn(u128) -> f64) -> Vec<u128> {
        t.budget(budget as u64);
        t.init(s, 1);
        let mut out = Vec::new();
        while out.len() < budget {
            let ask = t.ask(s, 2.min(budget - out.len()));
            if ask.is_empty() {
                break;
            }
            for i in ask {
                t.tell(s, i, Some(cost(i)));
                out.push(i);
            }
        }
        out
    }

    #[test]
    fn the_start_covers_the_best_of_every_source() {
        let s = space();
        let at = |v: [u32; 3]| {
            s.iter()
                .position(|c| (0..3).all(|k| c.get::<u32>(k) == v[k]))
                .map(|p| p as u128)
        };
        let (a, b) = (at([2, 2, 0]), at([8, 7, 3]));
        let mut t = Transfer::new(vec![source(&s, [2, 2, 0]), source(&s, [8, 7, 3])]).diversity(0);
        let asked = drive(&mut t, &s, 50, |_| 1.0);
        // Five from the sources: both optima among them, then the model.
        assert!(asked[..5].contains(&a.unwrap()), "{asked:?}");
        assert!(asked[..5].contains(&b.unwrap()), "{asked:?}");
        let distinct: std::collections::HashSet<_> = asked.iter().collect();
        assert_eq!(distinct.len(), 50, "a configuration proposed twice");
    }

    #[test]
    fn a_start_from_one_source_is_spread_by_the_diversity() {
        let s = space();
        let mut t = Transfer::new(vec![source(&s, [5, 5, 1])]).diversity(2);
        let asked = drive(&mut t, &s, 50, |_| 1.0);
        let raws: Vec<Vec<u64>> = asked[..5]
            .iter()
            .map(|&i| s.get(i).unwrap().raw().to_vec())
            .collect();
        for (x, a) in raws.iter().enumerate() {
            for b in &raws[x + 1..] {
                let differ = a.iter().zip(b).filter(|(p, q)| p != q).count();
                assert!(differ >= 2, "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn a_misleading_source_is_outweighed_by_the_measurements() {
        // The source puts the optimum at (0, 0, 0); on the target it is at (9, 9, 3).
        let s = space();
        let cost = |i: u128| {
            let c = s.get(i).unwrap();
            1.0 + (9.0 - c.get::<u32>(0) as f64)
                + (9.0 - c.get::<u32>(1) as f64)
                + (3.0 - c.get::<u32>(2) as f64)
        };
        for feature in [false, true] {
            let mut t = Transfer::new(vec![source(&s, [0, 0, 0])]).prior_feature(feature);
            let asked = drive(&mut t, &s, 60, cost);
            let best = asked.iter().map(|&i| cost(i)).fold(f64::INFINITY, f64::min);
            assert!(
                best <= 3.0,
                "prior feature {feature}: best {best} after 60 of 400"
            );
        }
    }

    #[test]
    fn pooled_sources_with_the_flag_are_outweighed_when_they_mislead() {
        // As above: the source's optimum is the target's worst corner.
        let s = space();
        let cost = |i: u128| {
            let c = s.get(i).unwrap();
            1.0 + (9.0 - c.get::<u32>(0) as f64)
                + (9.0 - c.get::<u32>(1) as f64)
                + (3.0 - c.get::<u32>(2) as f64)
        };
        for seed in 0..3 {
            let mut t = Transfer::new(vec![source(&s, [0, 0, 0])])
                .space_filling(false)
                .pooled(true, true);
            t.budget(60);
            t.init(&s, seed);
            let mut best = f64::INFINITY;
            for _ in 0..30 {
                for i in t.ask(&s, 2) {
                    t.tell(&s, i, Some(cost(i)));
                    best = best.min(cost(i));
                }
            }
            assert!(best <= 3.0, "seed {seed}: best {best} after 60 of 400");
        }
    }

    #[test]
    fn pooled_sources_that_fit_find_the_target_optimum_early() {
        // Two sources agree with the target's ranking; 50 evaluations of 400.
        let s = space();
        let cost = |i: u128| {
            let c = s.get(i).unwrap();
            1.0 + (c.get::<u32>(0) as f64 - 6.0).abs()
                + (c.get::<u32>(1) as f64 - 3.0).abs()
                + (c.get::<u32>(2) as f64 - 2.0).abs()
        };
        for flag in [false, true] {
            let mut t = Transfer::new(vec![source(&s, [6, 3, 2]), source(&s, [6, 3, 2])])
                .space_filling(false)
                .pooled(true, flag);
            let asked = drive(&mut t, &s, 20, cost);
            let best = asked.iter().map(|&i| cost(i)).fold(f64::INFINITY, f64::min);
            assert_eq!(best, 1.0, "flag {flag}");
            let distinct: std::collections::HashSet<_> = asked.iter().collect();
            assert_eq!(distinct.len(), 20, "a configuration proposed twice");
        }
    }

    #[test]
    fn ranks_share_ties_and_spearman_reads_the_order() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
        let up = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(spearman(&up, &[10.0, 20.0, 30.0, 40.0]), Some(1.0));
        // Ranks 3, 2, 1, 4 (a failure last): 1 - 6 * 8 / (4 * 15).
        let r = spearman(&up, &[4.0, 3.0, 2.0, f64::INFINITY]).unwrap();
        assert!((r - 0.2).abs() < 1e-12, "{r}");
        assert_eq!(spearman(&up, &[4.0, 3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&up, &[1.0, 1.0, 1.0, 1.0]), None);
    }

    #[test]
    fn weighted_sources_follow_the_one_that_ranks_the_target() {
        // The target's optimum is where source A says; source B says the opposite.
        let s = space();
        let cost = |i: u128| {
            let c = s.get(i).unwrap();
            1.0 + (c.get::<u32>(0) as f64 - 8.0).abs()
                + (c.get::<u32>(1) as f64 - 7.0).abs()
                + (c.get::<u32>(2) as f64 - 3.0).abs()
        };
        let (a, b) = (source(&s, [8, 7, 3]), source(&s, [1, 1, 0]));
        let mut t = Transfer::new(vec![a, b]).diversity(0).weigh_sources(true);
        t.budget(50);
        t.init(&s, 3);
        let mut asked = Vec::new();
        for _ in 0..6 {
            let i = t.ask(&s, 1)[0];
            t.tell(&s, i, Some(cost(i)));
            asked.push(i);
        }
        assert_eq!(t.weights[1], 0.0, "{:?}", t.weights);
        assert!(t.weights[0] > 0.5, "{:?}", t.weights);
        // One from each ranking (consensus, A, B), then the rest of the start (5) from A.
        for &i in &asked[3..5] {
            assert!(cost(i) <= 2.0, "{:?}", s.get(i).unwrap().raw());
        }
    }

    #[test]
    fn without_sources_it_is_the_surrogate() {
        let s = space();
        let mut a = Transfer::new(Vec::new());
        let mut b = Surrogate::new();
        a.budget(30);
        b.budget(30);
        a.init(&s, 4);
        b.init(&s, 4);
        assert_eq!(a.ask(&s, 5), b.ask(&s, 5));
    }

    #[test]
    fn the_default_model_keeps_the_start_and_then_designs_like_the_default() {
        let s = space();
        let src = || vec![source(&s, [2, 2, 0]), source(&s, [8, 7, 3])];
        let (mut plain, mut dm) = (
            Transfer::new(src()),
            Transfer::new(src()).default_model(true),
        );
        let a = drive(&mut plain, &s, 30, |_| 1.0);
        let b = drive(&mut dm, &s, 30, |_| 1.0);
        assert_eq!(
            a[..3],
            b[..3],
            "the sources' start does not depend on the model"
        );
        // After the start, the model's design is the default's (balanced), as the cold
        // surrogate with those settings proposes it.
        let mut cold = Surrogate::new()
            .start_design(StartDesign::Balanced)
            .alignment(true);
        let mut none = Transfer::new(Vec::new()).default_model(true);
        cold.budget(30);
        none.budget(30);
        cold.init(&s, 4);
        none.init(&s, 4);
        assert_eq!(none.ask(&s, 5), cold.ask(&s, 5));
        let distinct: std::collections::HashSet<_> = b.iter().collect();
        assert_eq!(distinct.len(), 30, "a configuration proposed twice");
    }
}
