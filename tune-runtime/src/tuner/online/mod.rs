//! Online tuning: the application keeps computing with its own data while configurations
//! are tried, then settles on the best and stays there (KTT's online tuning).
//!
//! [`Online`] is a handle that production code calls in its loop. Each [`Online::call`]
//! runs the application's closure with one configuration ([`Trial`]) and returns the
//! closure's output:
//! - while exploring, the next configuration the search technique proposes, prepared
//!   (compiled) ahead on background threads; when it is not ready yet, the best so far runs
//!   instead, so the caller never waits for a compilation (except for the very first);
//! - each configuration is measured on [`runs_per_config`](Online::runs_per_config) calls
//!   (one when it is far slower than the best), the median of the times the closure reports
//!   is its cost, and the technique learns it;
//! - when the exploration condition holds (default: 50 configurations), it settles on the
//!   best and every later call runs it, with no more bookkeeping than a branch.
//!
//! The application never receives an unvalidated output: the first run of every
//! configuration has [`Trial::validate`] set, and the closure checks its output then
//! (returning [`Failure::WrongResult`] when it is wrong); or [`Online::call_compared`]
//! compares it with the output of a trusted configuration on the same data; or the input
//! lists the configurations validated offline ([`Input::only`]). A configuration that
//! fails (to compile, to run, to validate) is recorded and the call runs another one: the
//! best so far, else the next candidate.
//!
//! Progress is appended to a JSON-lines log ([`Online::log`], the tuner's format): an
//! application restarted with the same log does not try measured configurations again,
//! continues the search where it stopped, and settles at once if it had settled. Each input
//! key ([`Online::select`]) is tuned on its own: when the key changes, a new search starts
//! (or the one of that key continues).
//!
//! ```
//! # fn main() -> tune_runtime::Result<()> {
//! use std::time::Instant;
//! use tune_runtime::abort::Evaluations;
//! use tune_runtime::tuner::online::{Input, Online};
//! use tune_runtime::{Failure, Param, SpaceBuilder};
//!
//! let space = SpaceBuilder::new()
//!     .param(Param::<usize>::values("BLOCK", [1, 2, 4, 8, 16, 32, 64]))
//!     .build()?;
//! // Nothing to compile here: the preparation is a no-op.
//! let mut online = Online::<()>::new("blocked_sum").explore(Evaluations(7));
//! let data: Vec<f64> = (0..4096).map(f64::from).collect();
//! let expected: f64 = data.iter().sum();
//! online.select("n=4096", || Ok(Input::new(space.clone(), |_, _| Ok(()))))?;
//! for _ in 0..100 {
//!     let sum = online.call(|t| {
//!         let block = t.config().get::<usize>(0);
//!         let start = Instant::now();
//!         let s: f64 = data.chunks(block).map(|c| c.iter().sum::<f64>()).sum();
//!         let time = start.elapsed();
//!         if t.validate() && (s - expected).abs() > 1e-6 {
//!             return Err(Failure::WrongResult(format!("{s} instead of {expected}")));
//!         }
//!         Ok((s, time))
//!     })?;
//!     assert_eq!(sum, expected);
//! }
//! // Calls this short may outrun the preparation thread: those run the best so far.
//! println!("{:?}", online.stats());
//! # Ok(()) }
//! ```
//!
//! For a [`Composition`](crate::backend::composition::Composition), prepare with
//! [`CompositionEvaluator::prepare`](crate::Evaluator::prepare) and run with
//! [`CompositionEvaluator::call`](crate::backend::composition::CompositionEvaluator::call);
//! `#[tunable(online)]` generates a typed handle over a tunable function.

mod cost;
mod session;
mod workers;

pub use cost::OnlineCost;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use self::session::{failed, Session};
use self::workers::Workers;
use crate::abort::{AbortCondition, Evaluations};
use crate::evaluate::Failure;
use crate::param::ParamType;
use crate::results::log::{self, LogWriter};
use crate::results::Database;
use crate::search::{Technique, TechniqueKind};
use crate::space::{Config, Space};
use crate::{Error, Result};

/// How a configuration is prepared (compiled) for a call, on a background thread.
pub type PrepareFn<P> = Arc<dyn Fn(&Space, &Config) -> Result<P, Failure> + Send + Sync>;

/// What one input key is tuned over: its space, how to prepare a configuration, and
/// optionally which configurations are known to be right.
pub struct Input<P> {
    space: Space,
    prepare: PrepareFn<P>,
    only: Option<Vec<Config>>,
    start: Vec<Config>,
    trusted: Option<Config>,
}

impl<P> fmt::Debug for Input<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("space", &self.space)
            .field("only", &self.only.as_ref().map(Vec::len))
            .field("start", &self.start.len())
            .field("trusted", &self.trusted)
            .finish_non_exhaustive()
    }
}

impl<P> Input<P> {
    /// An input tuned over `space`, whose configurations `prepare` makes ready to run (e.g.
    /// [`Evaluator::prepare`](crate::Evaluator::prepare): compiles the kernels).
    #[must_use]
    pub fn new(
        space: Space,
        prepare: impl Fn(&Space, &Config) -> Result<P, Failure> + Send + Sync + 'static,
    ) -> Self {
        Input {
            space,
            prepare: Arc::new(prepare),
            only: None,
            start: Vec::new(),
            trusted: None,
        }
    }

    /// Tries only these configurations, validated offline (e.g. the valid ones of an
    /// offline tuning run's log): their outputs are not checked again.
    #[must_use]
    pub fn only(mut self, validated: impl IntoIterator<Item = Config>) -> Self {
        self.only = Some(validated.into_iter().collect());
        self
    }

    /// Tries these configurations first (the best of another input, the shipped default).
    #[must_use]
    pub fn start_from(mut self, configs: impl IntoIterator<Item = Config>) -> Self {
        self.start.extend(configs);
        self
    }

    /// A configuration known to be right (what the application ran before it was tuned):
    /// tried first, its outputs are not checked, and [`Online::call_compared`] compares the
    /// first output of every other configuration with its output on the same data.
    #[must_use]
    pub fn trusted(mut self, config: Config) -> Self {
        self.trusted = Some(config);
        self
    }
}

/// The configuration one call runs, handed to the application's closure.
pub struct Trial<'a, P> {
    config: &'a Config,
    prepared: &'a P,
    space: &'a Space,
    validate: bool,
}

impl<P> fmt::Debug for Trial<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trial")
            .field("config", &self.space.describe(self.config))
            .field("validate", &self.validate)
            .finish_non_exhaustive()
    }
}

impl<'a, P> Trial<'a, P> {
    fn new(config: &'a Config, prepared: &'a P, space: &'a Space, validate: bool) -> Self {
        Trial {
            config,
            prepared,
            space,
            validate,
        }
    }
    /// The configuration.
    pub fn config(&self) -> &'a Config {
        self.config
    }
    /// What the preparation made of it (compiled kernels).
    pub fn prepared(&self) -> &'a P {
        self.prepared
    }
    /// The space of the current input.
    pub fn space(&self) -> &'a Space {
        self.space
    }
    /// The value of parameter `slot`.
    pub fn get<T: ParamType>(&self, slot: usize) -> T {
        self.config.get(slot)
    }
    /// Whether this run's output is checked: the configuration's first run. In
    /// [`Online::call`], check it and return [`Failure::WrongResult`] if it is wrong (it is
    /// then not handed to the application); in [`Online::call_compared`], produce it in full
    /// (it is compared with the trusted configuration's, which runs with this set too).
    pub fn validate(&self) -> bool {
        self.validate
    }
}

/// What an online tuner did for the current input.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Calls served.
    pub calls: u64,
    /// Of which before it settled.
    pub exploring_calls: u64,
    /// Configurations measured or failed (resumed ones included).
    pub evaluations: u64,
    /// Of which taken from the log of an earlier run.
    pub resumed: u64,
    /// Configurations that failed (compile, launch, wrong result).
    pub failures: u64,
    /// Calls that ran the best so far because the next configuration was not prepared yet.
    pub fallback_runs: u64,
    /// Runs whose output the application did not get: failed configurations, and the
    /// trusted configuration's runs for [`Online::call_compared`].
    pub extra_runs: u64,
    /// The number of calls after which it settled.
    pub settled_after: Option<u64>,
    /// The best configuration and its cost in seconds.
    pub best: Option<(Config, f64)>,
    /// Why the settled configuration could not be recorded in the database.
    pub database_error: Option<String>,
}

/// What a call works with: the current input's session, the settings, the preparation
/// threads and the log.
type Parts<'a, P> = (
    &'a mut Session<P>,
    &'a Settings,
    &'a Workers<P>,
    &'a mut Option<LogWriter>,
);

/// A technique factory: every input gets a fresh technique.
type TechniqueFactory = Arc<dyn Fn() -> Box<dyn Technique> + Send + Sync>;

pub(super) struct Settings {
    technique: TechniqueFactory,
    seed: u64,
    explore: Box<dyn AbortCondition>,
    /// Settle after this many exploring calls at most.
    max_calls: Option<u64>,
    runs_per_config: usize,
    slow_factor: f64,
    ahead: usize,
    attempts: usize,
    database: Option<Database>,
    fingerprint: Option<String>,
}

impl Settings {
    fn technique(&self) -> Box<dyn Technique> {
        (self.technique)()
    }
}

/// An online tuner: see the [module docs](self).
///
/// `P` is what the preparation makes of a configuration (compiled kernels; `()` when
/// there is nothing to prepare); it is cloned once per configuration that becomes the
/// best.
#[must_use = "an online tuner does nothing until `.call(..)`"]
pub struct Online<P: Clone + Send + 'static> {
    name: String,
    device: String,
    settings: Settings,
    threads: usize,
    log_path: Option<PathBuf>,
    log: Option<LogWriter>,
    sessions: Vec<Session<P>>,
    current: Option<usize>,
    workers: Option<Workers<P>>,
}

impl<P: Clone + Send + 'static> fmt::Debug for Online<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Online")
            .field("name", &self.name)
            .field("device", &self.device)
            .field("explore", &self.settings.explore)
            .field("runs_per_config", &self.settings.runs_per_config)
            .field("log", &self.log_path)
            .field("inputs", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl<P: Clone + Send + 'static> Online<P> {
    /// An online tuner of the tunable `name` (as recorded in the log and database).
    /// Defaults: the default technique, `hybrid` (seed 0): on the 10 recorded spaces of
    /// `bench/simulate/RESULTS.md` it reaches 0.919 of the optimum within 50 evaluations on
    /// average (MCMC, KTT's online technique, 0.887); settle after 50
    /// configurations; 3 calls per
    /// configuration, 1 when its first is over twice the best; preparation on every core but
    /// one, with one configuration more in flight than threads; device `"cpu"`; no log, no
    /// database.
    ///
    /// The 50 configurations follow from the goal of settling within about 200 calls
    /// (50 x 3, plus the fast rejections of slow ones); 3 calls give a median that one
    /// outlying call cannot move. Where compilations take longer than that many calls, the
    /// calls that run the best so far meanwhile add up: [`Online::settle_within`] bounds
    /// the calls themselves. Preparation (compilation) takes far longer than a call of
    /// most kernels, and calls run the best so far meanwhile: the more configurations are
    /// compiled at once, the sooner the search is over. One core is left to the caller.
    pub fn new(name: impl Into<String>) -> Self {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get().saturating_sub(1))
            .max(1);
        Online {
            name: name.into(),
            device: "cpu".into(),
            settings: Settings {
                technique: Arc::new(|| TechniqueKind::default().build()),
                seed: 0,
                explore: Box::new(Evaluations(50)),
                max_calls: None,
                runs_per_config: 3,
                slow_factor: 2.0,
                ahead: threads + 1,
                attempts: 8,
                database: None,
                fingerprint: None,
            },
            threads,
            log_path: None,
            log: None,
            sessions: Vec::new(),
            current: None,
            workers: None,
        }
    }

    /// The search technique (a fresh one per input).
    pub fn technique(mut self, kind: TechniqueKind) -> Self {
        self.settings.technique = Arc::new(move || kind.build());
        self
    }

    /// The search technique, made by `factory` (a fresh one per input).
    pub fn technique_with(
        mut self,
        factory: impl Fn() -> Box<dyn Technique> + Send + Sync + 'static,
    ) -> Self {
        self.settings.technique = Arc::new(factory);
        self
    }

    /// The seed handed to the technique (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// When to stop exploring and settle on the best (default: 50 configurations). The
    /// elapsed time the conditions see is wall time since the input was first selected (plus
    /// the time recorded in the log).
    pub fn explore(mut self, condition: impl AbortCondition + 'static) -> Self {
        self.settings.explore = Box::new(condition);
        self
    }

    /// Settles after at most `calls` calls of this process while exploring (and before,
    /// when the [`explore`](Online::explore) condition holds): the calls that run
    /// configurations being measured, and those that run the best so far while the next
    /// one is compiled. For an application that must run at full speed within a number of
    /// calls (KTT's online tuning: a stream of work of known length): the search then
    /// measures as many configurations as fit. Default: no limit (short calls would be over
    /// before the first compilations are).
    pub fn settle_within(mut self, calls: u64) -> Self {
        self.settings.max_calls = Some(calls.max(1));
        self
    }

    /// Calls that measure each configuration (default 3; the cost is their median).
    pub fn runs_per_config(mut self, n: usize) -> Self {
        self.settings.runs_per_config = n.max(1);
        self
    }

    /// A configuration whose first call takes more than `factor` times the best cost so far
    /// is not measured again (default 2; at least 1).
    pub fn slower_than_best(mut self, factor: f64) -> Self {
        self.settings.slow_factor = factor.max(1.0);
        self
    }

    /// Configurations in flight: prepared or being prepared ahead, and the one being
    /// measured (default: one more than the preparation threads).
    pub fn ahead(mut self, n: usize) -> Self {
        self.settings.ahead = n.max(1);
        self
    }

    /// Background threads preparing configurations (default: every core but one). Also
    /// sets [`Online::ahead`] to one more.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self.settings.ahead = self.threads + 1;
        self
    }

    /// New configurations one call may try when nothing validated is there to fall back
    /// on, before it fails (default 8).
    pub fn attempts(mut self, n: usize) -> Self {
        self.settings.attempts = n.max(1);
        self
    }

    /// Appends every finished configuration to this JSON-lines log, and continues from what
    /// it holds for this tunable, input key and device.
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.log_path = Some(path.into());
        self
    }

    /// Records the configuration each input settles on in this tuning database (keeping a
    /// better recorded one).
    pub fn database(mut self, db: Database) -> Self {
        self.settings.database = Some(db);
        self
    }

    /// The code fingerprint recorded with the database entry (see
    /// [`Tuner::fingerprint`](crate::Tuner::fingerprint)).
    pub fn fingerprint(mut self, code: impl Into<String>) -> Self {
        self.settings.fingerprint = Some(code.into());
        self
    }

    /// The device name recorded (default `"cpu"`), e.g. `evaluator.device()`.
    pub fn device(mut self, name: impl Into<String>) -> Self {
        self.device = name.into();
        self
    }

    /// The tunable's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Makes `key` the current input on the tuner's device. A key seen before continues
    /// where it was; a new one calls `make` for its space and preparation and starts its
    /// search (from the log, if it holds records of the key). Cheap when the key is the
    /// current one: call it before every call when inputs may change.
    ///
    /// # Errors
    /// `make`'s error; reading or opening the log; starting the preparation thread.
    pub fn select(&mut self, key: &str, make: impl FnOnce() -> Result<Input<P>>) -> Result<()> {
        if let Some(s) = self.current.and_then(|i| self.sessions.get(i)) {
            if s.key == key && s.device == self.device {
                return Ok(());
            }
        }
        let device = self.device.clone();
        self.select_on(&device, key, make)
    }

    /// [`Online::select`] with the device named here (for a device chosen per call).
    ///
    /// # Errors
    /// See [`Online::select`].
    pub fn select_on(
        &mut self,
        device: &str,
        key: &str,
        make: impl FnOnce() -> Result<Input<P>>,
    ) -> Result<()> {
        if let Some(i) = self
            .sessions
            .iter()
            .position(|s| s.key == key && s.device == device)
        {
            self.current = Some(i);
            return Ok(());
        }
        let input = make()?;
        let recorded = match &self.log_path {
            Some(p) => log::read(p)?,
            None => Vec::new(),
        };
        if let (Some(p), None) = (&self.log_path, &self.log) {
            self.log = Some(LogWriter::append(p)?);
        }
        if self.workers.is_none() {
            self.workers = Some(Workers::start(self.threads).map_err(|e| Error::Io {
                path: "<the preparation thread>".into(),
                source: e,
            })?);
        }
        self.sessions.push(Session::new(
            key.to_string(),
            device.to_string(),
            input,
            &self.settings,
            &recorded,
            &self.name,
        ));
        self.current = Some(self.sessions.len() - 1);
        Ok(())
    }

    fn parts(&mut self) -> Result<Parts<'_, P>> {
        let no_input =
            || Error::Online("no input is selected; call `select(key, ..)` before `call`".into());
        let i = self.current.ok_or_else(no_input)?;
        let s = self.sessions.get_mut(i).ok_or_else(no_input)?;
        let w = self.workers.as_ref().ok_or_else(no_input)?;
        Ok((s, &self.settings, w, &mut self.log))
    }

    /// Runs the application's closure once with the configuration of this call and returns
    /// its output. The closure gets a [`Trial`] and returns its output and the time to
    /// count as this configuration's cost (device time, or wall time it measures); on
    /// [`Trial::validate`] it checks the output first. A failure is recorded, and the call
    /// runs another configuration (so the closure may run more than once per call).
    ///
    /// # Errors
    /// No input selected; no configuration could be validated yet within the
    /// [`attempts`](Online::attempts); the settled (validated) configuration failed; the
    /// log could not be written.
    pub fn call<O>(
        &mut self,
        run: impl FnMut(&Trial<'_, P>) -> Result<(O, Duration), Failure>,
    ) -> Result<O> {
        self.serve(run, None)
    }

    /// [`Online::call`] where the first output of every configuration is compared with the
    /// output of the trusted configuration ([`Input::trusted`]) on the same data by `same`
    /// (`Err` says how they differ), instead of a check inside the closure. When they
    /// differ, the application gets the trusted output.
    ///
    /// # Errors
    /// As [`Online::call`]; and when the input has no trusted configuration.
    pub fn call_compared<O>(
        &mut self,
        run: impl FnMut(&Trial<'_, P>) -> Result<(O, Duration), Failure>,
        same: impl Fn(&O, &O) -> Result<(), String>,
    ) -> Result<O> {
        self.serve(run, Some(&same))
    }

    /// One call: the settled configuration once there is one, else the next step of the
    /// exploration (compared with the trusted output where `same` is given).
    fn serve<O>(
        &mut self,
        mut run: impl FnMut(&Trial<'_, P>) -> Result<(O, Duration), Failure>,
        same: Option<&session::Same<'_, O>>,
    ) -> Result<O> {
        if let Some(s) = self.current.and_then(|i| self.sessions.get_mut(i)) {
            if let Some((c, p)) = &s.settled {
                s.stats.calls += 1;
                return match run(&Trial::new(c, p, &s.space, false)) {
                    Ok((o, _)) => Ok(o),
                    Err(f) => Err(failed(&s.space, c, f)),
                };
            }
        }
        let name = self.name.clone();
        let (s, settings, workers, log) = self.parts()?;
        if s.dead {
            return Err(Error::NoValidConfiguration {
                evaluated: s.stats.evaluations,
                failures: format!("{} failed", s.stats.failures),
            });
        }
        s.explore(settings, workers, log, &name, &mut run, same)
    }

    /// What the tuner did for the current input (default stats before any input).
    pub fn stats(&self) -> Stats {
        self.current
            .and_then(|i| self.sessions.get(i))
            .map(|s| s.stats.clone())
            .unwrap_or_default()
    }

    /// Whether the current input settled.
    pub fn is_settled(&self) -> bool {
        self.current
            .and_then(|i| self.sessions.get(i))
            .is_some_and(|s| s.settled.is_some())
    }

    /// The configuration the current input settled on.
    pub fn settled(&self) -> Option<&Config> {
        self.current
            .and_then(|i| self.sessions.get(i))
            .and_then(|s| s.settled.as_ref().map(|(c, _)| c))
    }

    /// The space of the current input.
    pub fn space(&self) -> Option<&Space> {
        self.current
            .and_then(|i| self.sessions.get(i))
            .map(|s| &s.space)
    }
}
