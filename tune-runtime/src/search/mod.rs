//! Search techniques behind one ask/tell trait.
//!
//! A technique proposes configurations by their index in the [`Space`] (so it only ever
//! proposes valid ones) and is told the outcome of each. The tuner memoises: a technique may
//! propose an index again and is then told the recorded outcome without a new measurement.
//! The techniques here avoid proposing an index twice where it is cheap to.
//!
//! The default, [`TechniqueKind::Hybrid`] (chosen by cross-validation on recorded spaces),
//! spends the first 100 evaluations on [`Surrogate`], a random-forest model of the cost
//! that proposes where the expected improvement is largest (started from configurations
//! balanced over each parameter's values, with the power-of-two alignment of integer sizes
//! as features, the two proposals of a batch kept apart, and in the last tenth of those 100
//! or of a smaller budget where the predicted cost is lowest), then hands over to [`Bandit`],
//! which shares the budget among two iterated local searches, a genetic algorithm,
//! simulated annealing and the model-guided local search [`Guided`].
//! `bench/simulate/RESULTS.md` compares every technique with Kernel Tuner's strategies on
//! recorded spaces. Techniques may plan with the budget
//! ([`Technique::budget`]); [`Phased`] and [`WarmStart`] combine techniques; [`Transfer`]
//! starts from recordings of the kernel on other devices. [`Bayes`] suits expensive evaluations
//! (each of its steps costs milliseconds).
//!
//! Every technique is seeded by [`Technique::init`]: the same seed and the same answers give
//! the same proposals. Pick one by name with [`technique_by_name`] or [`TechniqueKind`], or
//! construct one to set its hyper-parameters:
//!
//! ```
//! use tune_runtime::search::{Annealing, Technique};
//! let mut sa = Annealing::new().temperature(0.2).cooling(0.99);
//! # let _ = sa.name();
//! ```
//!
//! # Your own technique
//!
//! Implement [`Technique`]. Proposals are indices into the space; use
//! [`Space::sample_index`], [`Space::neighbour_indices`], [`Space::get`] and
//! [`Space::index_of`] to move around it. A greedy walk that always moves to the best
//! neighbour seen so far:
//!
//! ```
//! use rand::{rngs::SmallRng, SeedableRng};
//! use tune_runtime::param::Param;
//! use tune_runtime::search::Technique;
//! use tune_runtime::space::{Neighbourhood, Space, SpaceBuilder};
//!
//! struct Greedy {
//!     rng: SmallRng,
//!     best: Option<(u128, f64)>,
//!     asked: std::collections::HashSet<u128>,
//! }
//!
//! impl Technique for Greedy {
//!     fn name(&self) -> &str {
//!         "greedy"
//!     }
//!     fn init(&mut self, _space: &Space, seed: u64) {
//!         self.rng = SmallRng::seed_from_u64(seed);
//!         self.best = None;
//!         self.asked.clear();
//!     }
//!     fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
//!         let mut pool = match self.best.and_then(|(i, _)| space.get(i)) {
//!             Some(cfg) => space.neighbour_indices(&cfg, Neighbourhood::Any),
//!             None => space.sample_index(&mut self.rng).into_iter().collect(),
//!         };
//!         pool.retain(|i| !self.asked.contains(i));
//!         pool.truncate(n);
//!         self.asked.extend(&pool);
//!         pool // empty: nothing new to try, the run ends
//!     }
//!     fn tell(&mut self, _space: &Space, index: u128, cost: Option<f64>) {
//!         if let Some(c) = cost {
//!             if self.best.is_none_or(|(_, b)| c < b) {
//!                 self.best = Some((index, c));
//!             }
//!         }
//!     }
//! }
//!
//! let space = SpaceBuilder::new().param(Param::<u32>::range("X", 0..100)).build()?;
//! let mut t = Greedy { rng: SmallRng::seed_from_u64(0), best: None, asked: Default::default() };
//! t.init(&space, 7);
//! // A tiny driver: minimise (X - 42)^2.
//! loop {
//!     let batch = t.ask(&space, 1);
//!     if batch.is_empty() {
//!         break;
//!     }
//!     for i in batch {
//!         let x = space.get(i).unwrap().get::<u32>(0) as f64;
//!         t.tell(&space, i, Some((x - 42.0).powi(2)));
//!     }
//! }
//! assert_eq!(space.get(t.best.unwrap().0).unwrap().get::<u32>(0), 42);
//! # Ok::<(), tune_runtime::Error>(())
//! ```

mod alternate;
mod annealing;
mod bandit;
mod bayes;
mod diff_evo;
mod exhaustive;
mod forest;
mod genetic;
mod guided;
mod local;
mod mcmc;
mod phased;
mod pso;
mod random;
mod surrogate;
mod transfer;
mod util;
mod warm;

use std::fmt;
use std::str::FromStr;

pub use alternate::Alternate;
pub use annealing::Annealing;
pub use bandit::Bandit;
pub use bayes::Bayes;
pub use diff_evo::DiffEvo;
pub use exhaustive::Exhaustive;
pub use genetic::Genetic;
pub use guided::Guided;
pub use local::LocalSearch;
pub use mcmc::Mcmc;
pub use phased::Phased;
pub use pso::Pso;
pub use random::Random;
pub use surrogate::{StartDesign, Surrogate};
pub use transfer::{SourceView, Transfer};
pub use warm::WarmStart;

use crate::space::Space;
use crate::{Error, Result};

/// A search technique.
pub trait Technique: Send {
    /// A short name for logs and records, e.g. `"annealing"`.
    fn name(&self) -> &str;
    /// Called once, before the first [`Technique::ask`], with the run's seed.
    fn init(&mut self, space: &Space, seed: u64);
    /// Up to `n` indices to evaluate next. An empty answer means the technique has nothing
    /// left to propose (for example, exhaustive search is done) and ends the run.
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128>;
    /// The outcome of an index this technique proposed: its scalar cost (lower is better),
    /// or `None` if the configuration failed (compile error, wrong result, ...).
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>);
    /// A hint, before [`Technique::init`]: the run ends after at most this many distinct
    /// evaluations (the tuner passes it when its abort condition bounds the evaluations).
    /// A technique may use it to plan exploration; the default ignores it.
    fn budget(&mut self, _evaluations: u64) {}
}

/// The built-in techniques, by name. The default is [`TechniqueKind::Hybrid`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TechniqueKind {
    /// [`Exhaustive`]: every configuration in index order.
    Exhaustive,
    /// [`Random`]: uniformly random, without repetition.
    Random,
    /// [`Annealing`]: simulated annealing.
    Annealing,
    /// [`Pso`]: discrete particle swarm.
    Pso,
    /// [`Mcmc`]: Markov chain Monte Carlo.
    Mcmc,
    /// [`Genetic`]: a genetic algorithm.
    Genetic,
    /// [`DiffEvo`]: differential evolution.
    DiffEvo,
    /// [`Bandit`]: a bandit-driven ensemble of techniques.
    Bandit,
    /// [`Bayes`]: Bayesian optimisation, for expensive evaluations.
    Bayes,
    /// [`LocalSearch`]: iterated local search.
    Local,
    /// [`Surrogate`]: model-based search with a random-forest surrogate, for small budgets.
    Surrogate,
    /// The default: [`Surrogate`] (a start of 10 balanced over each parameter's values,
    /// [`StartDesign::Balanced`]; the power-of-two alignment of integer sizes as features,
    /// [`Surrogate::alignment`]; the proposals of a batch differ in at least 2 parameters;
    /// the last tenth of its share spent on the lowest predicted costs) for the first 100
    /// evaluations, or the whole budget when it is smaller, then [`Bandit`] ([`Phased`]).
    /// Chosen by cross-validation over 10 recorded spaces (`bench/simulate/RESULTS.md`,
    /// round 8) and chosen again over 11 in round 10.
    #[default]
    Hybrid,
}

impl TechniqueKind {
    /// Every built-in technique.
    pub const ALL: [TechniqueKind; 12] = [
        TechniqueKind::Exhaustive,
        TechniqueKind::Random,
        TechniqueKind::Annealing,
        TechniqueKind::Pso,
        TechniqueKind::Mcmc,
        TechniqueKind::Genetic,
        TechniqueKind::DiffEvo,
        TechniqueKind::Bandit,
        TechniqueKind::Bayes,
        TechniqueKind::Local,
        TechniqueKind::Surrogate,
        TechniqueKind::Hybrid,
    ];

    /// The name it is selected by, e.g. `"annealing"`.
    pub fn name(self) -> &'static str {
        match self {
            TechniqueKind::Exhaustive => "exhaustive",
            TechniqueKind::Random => "random",
            TechniqueKind::Annealing => "annealing",
            TechniqueKind::Pso => "pso",
            TechniqueKind::Mcmc => "mcmc",
            TechniqueKind::Genetic => "genetic",
            TechniqueKind::DiffEvo => "diff_evo",
            TechniqueKind::Bandit => "bandit",
            TechniqueKind::Bayes => "bayes",
            TechniqueKind::Local => "local",
            TechniqueKind::Surrogate => "surrogate",
            TechniqueKind::Hybrid => "hybrid",
        }
    }

    /// A new technique of this kind with its default hyper-parameters.
    pub fn build(self) -> Box<dyn Technique> {
        match self {
            TechniqueKind::Exhaustive => Box::new(Exhaustive::new()),
            TechniqueKind::Random => Box::new(Random::new()),
            TechniqueKind::Annealing => Box::new(Annealing::new()),
            TechniqueKind::Pso => Box::new(Pso::new()),
            TechniqueKind::Mcmc => Box::new(Mcmc::new()),
            TechniqueKind::Genetic => Box::new(Genetic::new()),
            TechniqueKind::DiffEvo => Box::new(DiffEvo::new()),
            TechniqueKind::Bandit => Box::new(Bandit::new()),
            TechniqueKind::Bayes => Box::new(Bayes::new()),
            TechniqueKind::Local => Box::new(LocalSearch::new()),
            TechniqueKind::Surrogate => Box::new(Surrogate::new()),
            TechniqueKind::Hybrid => Box::new(
                Phased::of(
                    Box::new(
                        Surrogate::new()
                            .initial(10)
                            .batch_spread(2)
                            .start_design(StartDesign::Balanced)
                            .alignment(true),
                    ),
                    Box::new(Bandit::new()),
                )
                .switch(1.0, 10, 100)
                .named("hybrid"),
            ),
        }
    }
}

impl fmt::Display for TechniqueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TechniqueKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        let alias = match norm.as_str() {
            "brute_force" | "bruteforce" => "exhaustive",
            "random_sample" => "random",
            "simulated_annealing" | "sa" => "annealing",
            "particle_swarm" => "pso",
            "genetic_algorithm" | "ga" => "genetic",
            "differential_evolution" | "de" | "diffevo" => "diff_evo",
            "ensemble" | "auc_bandit" => "bandit",
            "bayes_opt" | "bayesian" => "bayes",
            "ils" | "local_search" | "greedy_ils" => "local",
            "smac" | "forest" | "random_forest" => "surrogate",
            other => other,
        };
        TechniqueKind::ALL
            .into_iter()
            .find(|k| k.name() == alias)
            .ok_or_else(|| Error::UnknownTechnique {
                name: s.into(),
                known: TechniqueKind::ALL.map(|k| k.name()).join(", "),
            })
    }
}

/// A built-in technique by name (`"exhaustive"`, `"random"`, `"annealing"`, `"pso"`,
/// `"mcmc"`, `"genetic"`, `"diff_evo"`, `"bandit"`, `"bayes"`, `"local"`, `"surrogate"`,
/// `"hybrid"`;
/// Kernel Tuner's names such as `"simulated_annealing"` are accepted too).
///
/// # Errors
/// [`Error::UnknownTechnique`] listing the valid names.
pub fn technique_by_name(name: &str) -> Result<Box<dyn Technique>> {
    name.parse::<TechniqueKind>().map(TechniqueKind::build)
}
