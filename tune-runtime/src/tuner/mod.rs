//! The tuning loop: ask → memoise → prepare (parallel) → measure (serial) → tell → record →
//! abort check; then the finalists are measured again and the best re-measured one wins.
//!
//! ```
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::abort::Evaluations;
//! use tune_runtime::evaluate::closure::Closure;
//! use tune_runtime::tuner::Tuner;
//! use tune_runtime::{Config, Failure, Param, SpaceBuilder};
//!
//! let space = SpaceBuilder::new()
//!     .param(Param::<u32>::range("X", 0..100))
//!     .param(Param::<u32>::values("Y", [1, 2, 4, 8]))
//!     .build()?;
//! let eval = Closure::new(|c: &Config| -> Result<f64, Failure> {
//!     let (x, y): (u32, u32) = (c.get(0), c.get(1));
//!     Ok((x as f64 - 42.0).abs() + y as f64)
//! });
//! let result = Tuner::new(space, eval)
//!     .abort(Evaluations(400))
//!     .name("toy")
//!     .progress(false)
//!     .run()?;
//! assert_eq!(result.best_values()[0].1.to_string(), "42");
//! # Ok(()) }
//! ```
//!
//! Failures (compile errors, wrong results, timeouts, invalid costs, panics in user
//! closures) are recorded against their configuration and the search goes on.
//! [`Tuner::run`] fails only when no configuration was valid, or on I/O errors.
//!
//! The files: `run` (the search loop), `spread` (the search loop on several devices at
//! once, [`crate::scale`]), `pool` (preparation ahead on CPU threads), `stream` (the
//! search loop that keeps the preparation threads busy, [`Tuner::asynchronous`]), `state`
//! (what a run has seen), `finish` (re-measuring the finalists, the database), `result`
//! ([`TuningResult`], [`Best`]) and `bar` (the progress bar).

use std::path::PathBuf;

use crate::abort::AbortCondition;
use crate::evaluate::closure::IntoMeasured;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::measure::Remeasure;
use crate::results::database::Policy;
use crate::results::Database;
use crate::search::Technique;
use crate::space::{Config, Space};
use crate::Result;

mod bar;
mod finish;
pub mod online;
mod polish;
mod pool;
mod result;
mod run;
mod spread;
mod state;
mod stream;
pub mod testing;

pub(crate) use pool::prepare as prepare_guarded;
pub use result::{Best, TuningResult};
pub(crate) use run::measure as measure_checked;

/// The most configurations asked for at once by default: more threads than this prepare
/// in parallel only when asked, so that techniques hear back often.
const MAX_DEFAULT_BATCH: usize = 8;

/// Something the finalists are compared with at the end of a run.
pub(crate) enum Baseline<C> {
    /// A closure that runs the reference (a vendor library, the untuned kernel).
    Closure {
        name: String,
        run: Box<dyn FnMut() -> std::result::Result<Measured<C>, Failure> + Send>,
    },
    /// A configuration of the space, measured through the evaluator.
    Config { name: String, config: Config },
}

/// A tuning run, configured with a consuming builder and started with [`Tuner::run`].
#[must_use = "a tuner does nothing until `.run()`"]
pub struct Tuner<E: Evaluator> {
    space: Space,
    evaluator: E,
    technique: Option<Box<dyn Technique>>,
    start: Vec<Config>,
    abort: Option<Box<dyn AbortCondition>>,
    seed: u64,
    batch: usize,
    threads: usize,
    asynchronous: bool,
    log: Option<PathBuf>,
    resume: bool,
    progress: bool,
    name: String,
    input_key: String,
    database: Option<Database>,
    policy: Policy,
    remeasure: Remeasure,
    polish: u64,
    baselines: Vec<Baseline<E::Cost>>,
    fingerprint: Option<String>,
}

impl<E: Evaluator> std::fmt::Debug for Tuner<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuner")
            .field("name", &self.name)
            .field("input_key", &self.input_key)
            .field("space", &self.space)
            .field("abort", &self.abort)
            .field("seed", &self.seed)
            .field("batch", &self.batch)
            .field("threads", &self.threads)
            .field("asynchronous", &self.asynchronous)
            .field("remeasure", &self.remeasure)
            .field("polish", &self.polish)
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl<E: Evaluator> Tuner<E> {
    /// A tuner for `space`, measured by `evaluator`. Defaults: the default technique
    /// ([`TechniqueKind::Hybrid`](crate::TechniqueKind)), until the whole space is measured;
    /// seed 0; one CPU thread per available core preparing ahead, with batches of that many
    /// configurations (at least 2, at most 8); the best 3 configurations measured again in
    /// 5 rounds at the end ([`Remeasure`]); no log; a progress bar on a terminal.
    pub fn new(space: Space, evaluator: E) -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Tuner {
            space,
            evaluator,
            technique: None,
            start: Vec::new(),
            abort: None,
            seed: 0,
            batch: threads.clamp(2, MAX_DEFAULT_BATCH),
            threads,
            asynchronous: false,
            log: None,
            resume: false,
            progress: true,
            name: "unnamed".into(),
            input_key: String::new(),
            database: None,
            policy: Policy::KeepBetter,
            remeasure: Remeasure::default(),
            polish: 0,
            baselines: Vec::new(),
            fingerprint: None,
        }
    }

    /// The search technique (a `Box<dyn Technique>` works too). Default:
    /// [`TechniqueKind::default`](crate::TechniqueKind).
    pub fn technique(mut self, technique: impl Technique + 'static) -> Self {
        self.technique = Some(Box::new(technique));
        self
    }

    /// Configurations to measure first, before the technique proposes any (a known good
    /// configuration, the best of a neighbouring input size); the technique is told their
    /// costs. Configurations outside the space are passed over.
    pub fn start_from(mut self, configs: impl IntoIterator<Item = Config>) -> Self {
        self.start.extend(configs);
        self
    }

    /// When to stop (default: when the whole space is measured). Combine conditions with
    /// `&` and `|`. A run measures exactly as many configurations as the condition allows:
    /// what was prepared ahead beyond it is dropped unmeasured.
    pub fn abort(mut self, condition: impl AbortCondition + 'static) -> Self {
        self.abort = Some(Box::new(condition));
        self
    }

    /// The seed handed to the technique (default 0): same seed, same run.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// After the search (when its abort condition or the technique ends it), measure up to
    /// `evaluations` more: the unmeasured one-parameter neighbours of the best so far, and
    /// of a better one when a neighbour is better (a hill climb), until none is left
    /// (default 0: no polish). These come on top of the abort condition's budget; they are
    /// logged like any evaluation, before the final re-measurement. Not with several
    /// devices measuring at once ([`crate::scale`]).
    pub fn polish(mut self, evaluations: u64) -> Self {
        self.polish = evaluations;
        self
    }

    /// How many configurations to ask the technique for at once (default: the available
    /// cores, at least 2 and at most 8). With more than one, the next ones are prepared
    /// (compiled) on other threads while one is measured, as long as preparing takes long
    /// enough (tens of microseconds) to gain from it. A batch of 1 prepares and measures
    /// one configuration after the other on the calling thread.
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }

    /// CPU threads preparing ahead (default: the available parallelism). Up to
    /// `min(threads, batch)` preparations run at once.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Keeps the preparation threads busy (default `false`): up to `batch` configurations
    /// are in flight, a new one is asked for as soon as one is measured, and they are
    /// measured in the order their preparations finish. Faster than batches when
    /// preparation times vary (compilations of seconds, the slowest of a batch holding up
    /// the rest), at the price of reproducibility: the order in which the technique hears
    /// the outcomes depends on timing, so the same seed may give another run. Without
    /// effect with a batch of 1, on several devices, or when the evaluator replays
    /// recorded data (simulation stays reproducible).
    pub fn asynchronous(mut self, on: bool) -> Self {
        self.asynchronous = on;
        self
    }

    /// Appends every evaluation to this JSON-lines log as it completes (and, after the
    /// search, one record per re-measured finalist).
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// Resume from the log: configurations it records for this tunable, input key and
    /// device are not measured again; the technique is told their recorded outcome.
    pub fn resume(mut self, on: bool) -> Self {
        self.resume = on;
        self
    }

    /// Show a progress bar on standard error when it is a terminal (default `true`).
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// The tunable's name, as recorded (e.g. `"saxpy"`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The input key, as recorded (e.g. `"n=1048576"`): what the best configuration was
    /// tuned for.
    pub fn input_key(mut self, key: impl Into<String>) -> Self {
        self.input_key = key.into();
        self
    }

    /// Records the best configuration in this tuning database when the run ends (keeping
    /// the recorded one if it is better; see [`Tuner::database_policy`]).
    pub fn database(mut self, db: Database) -> Self {
        self.database = Some(db);
        self
    }

    /// Whether a new result replaces a better recorded one (default
    /// [`Policy::KeepBetter`]). Under `KeepBetter`, the configuration recorded for this
    /// tunable, device and input key is measured again beside the finalists, and the
    /// faster of them is kept; without re-measurement, the recorded costs are compared.
    pub fn database_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// How the best configurations are measured again when the search ends (default: the
    /// best 3, in 5 interleaved rounds; [`Remeasure::off`] to skip it). The best
    /// re-measured median wins. Evaluators that replay recorded data (simulation) are
    /// never re-measured.
    pub fn remeasure(mut self, plan: Remeasure) -> Self {
        self.remeasure = plan;
        self
    }

    /// A baseline measured in every round of the re-measurement, beside the finalists, for
    /// comparison (a vendor library, the untuned code): `run` returns its cost as the
    /// evaluator would (or a [`Failure`]). It never wins; see [`TuningResult::speedup`].
    /// Several baselines may be given. Nothing is measured when re-measurement is off.
    pub fn baseline<R, F>(mut self, name: impl Into<String>, mut run: F) -> Self
    where
        F: FnMut() -> std::result::Result<R, Failure> + Send + 'static,
        R: IntoMeasured<Cost = E::Cost>,
    {
        self.baselines.push(Baseline::Closure {
            name: name.into(),
            run: Box::new(move || run().map(IntoMeasured::into_measured)),
        });
        self
    }

    /// A configuration of the space used as a baseline (e.g. the declared default),
    /// measured through the evaluator in every round of the re-measurement. Like
    /// [`Tuner::baseline`], it never wins.
    pub fn baseline_config(mut self, name: impl Into<String>, config: Config) -> Self {
        self.baselines.push(Baseline::Config {
            name: name.into(),
            config,
        });
        self
    }

    /// The code fingerprint recorded with the result: a short string that changes when the
    /// code being tuned changes (`#[tunable]` passes a hash of its declaration; for a
    /// kernel, [`fingerprint::of`](crate::results::fingerprint::of) of its source and
    /// defines). A later lookup with another fingerprint
    /// ([`Database::choose_with_code`]) passes the result over.
    pub fn fingerprint(mut self, code: impl Into<String>) -> Self {
        self.fingerprint = Some(code.into());
        self
    }

    /// Runs the search as a cargo test: a short budget unless `TUNE_FULL=1`, results in
    /// the tuning database (a short run's only when asked), and an error if any
    /// configuration gave a wrong result. Same as [`testing::tune_test`].
    ///
    /// # Errors
    /// See [`testing::tune_test`].
    pub fn run_test(self) -> Result<TuningResult<E::Cost>> {
        testing::tune_test(self)
    }

    /// The space and the evaluator, for the MPI ranks that measure for rank 0
    /// ([`crate::scale::mpi`]).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn parts(&self) -> (&Space, &E) {
        (&self.space, &self.evaluator)
    }

    /// The same run with its evaluator wrapped (rank 0 under MPI adds the other ranks'
    /// devices to its own).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn map_evaluator<F: Evaluator<Cost = E::Cost>>(
        self,
        wrap: impl FnOnce(E) -> F,
    ) -> Tuner<F> {
        Tuner {
            space: self.space,
            evaluator: wrap(self.evaluator),
            technique: self.technique,
            start: self.start,
            abort: self.abort,
            seed: self.seed,
            batch: self.batch,
            threads: self.threads,
            asynchronous: self.asynchronous,
            log: self.log,
            resume: self.resume,
            progress: self.progress,
            name: self.name,
            input_key: self.input_key,
            database: self.database,
            policy: self.policy,
            remeasure: self.remeasure,
            polish: self.polish,
            baselines: self.baselines,
            fingerprint: self.fingerprint,
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_costs;
#[cfg(test)]
mod tests_lost;
#[cfg(test)]
mod tests_polish;
#[cfg(test)]
mod tests_remeasure;
#[cfg(test)]
mod tests_stream;
