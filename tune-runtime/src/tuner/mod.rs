//! The tuning loop: ask → memoise → prepare (parallel) → measure (serial) → tell → record →
//! abort check.
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
//! Failures (compile errors, wrong results, timeouts, panics in user closures) are recorded
//! against their configuration and the search goes on. [`Tuner::run`] fails only when no
//! configuration was valid, or on I/O errors.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::io::IsTerminal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::abort::{AbortCondition, Progress, WholeSpace};
use crate::cost::Cost;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::param::Value;
use crate::results::database::{Entry, Fingerprint, Policy, Ranked};
use crate::results::export;
use crate::results::log::{self, LogWriter};
use crate::results::{timestamp, Database, Named, Record, Stamper};
use crate::search::Technique;
use crate::search::TechniqueKind;
use crate::space::{Config, Space};
use crate::{Error, Result};

impl<T: Technique + ?Sized> Technique for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn init(&mut self, space: &Space, seed: u64) {
        (**self).init(space, seed)
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        (**self).ask(space, n)
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        (**self).tell(space, index, cost)
    }
}

/// Proposes given configurations first, then those of the technique it wraps (which is told
/// every outcome).
struct StartFrom {
    queue: std::collections::VecDeque<u128>,
    inner: Box<dyn Technique>,
}

impl Technique for StartFrom {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.inner.init(space, seed)
    }
    fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let k = n.min(self.queue.len());
        let mut out: Vec<u128> = self.queue.drain(..k).collect();
        if out.len() < n {
            out.extend(self.inner.ask(space, n - out.len()));
        }
        out
    }
    fn tell(&mut self, space: &Space, index: u128, cost: Option<f64>) {
        self.inner.tell(space, index, cost)
    }
}

/// Mean preparation time (seconds) below which preparing ahead on other threads does not pay.
const POOL_MIN_PREPARE: f64 = 20e-6;

/// A fast hash for configuration indices (the memo is on the hot path of every proposal).
#[derive(Clone, Copy, Debug, Default)]
struct IndexHash;

impl BuildHasher for IndexHash {
    type Hasher = IndexHasher;
    fn build_hasher(&self) -> IndexHasher {
        IndexHasher(0)
    }
}

struct IndexHasher(u64);

impl IndexHasher {
    fn mix(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for IndexHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(b));
        }
    }
    fn write_u128(&mut self, i: u128) {
        self.mix(i as u64);
        self.mix((i >> 64) as u64);
    }
    fn finish(&self) -> u64 {
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }
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
    log: Option<PathBuf>,
    resume: bool,
    progress: bool,
    name: String,
    input_key: String,
    database: Option<Database>,
    policy: Policy,
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
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl<E: Evaluator> Tuner<E> {
    /// A tuner for `space`, measured by `evaluator`. Defaults: every configuration in index
    /// order, until the whole space is measured; seed 0; batch 1; no log; a progress bar
    /// on a terminal.
    pub fn new(space: Space, evaluator: E) -> Self {
        Tuner {
            space,
            evaluator,
            technique: None,
            start: Vec::new(),
            abort: None,
            seed: 0,
            batch: 1,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            log: None,
            resume: false,
            progress: true,
            name: "unnamed".into(),
            input_key: String::new(),
            database: None,
            policy: Policy::KeepBetter,
            fingerprint: None,
        }
    }

    /// The search technique (a `Box<dyn Technique>` works too).
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
    /// `&` and `|`.
    pub fn abort(mut self, condition: impl AbortCondition + 'static) -> Self {
        self.abort = Some(Box::new(condition));
        self
    }

    /// The seed handed to the technique (default 0): same seed, same run.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many configurations to ask the technique for at once (default 1). With more,
    /// the next ones are prepared (compiled) in parallel while one is measured, as long as
    /// preparing takes long enough (tens of microseconds) to gain from other threads.
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n.max(1);
        self
    }

    /// CPU threads preparing ahead (default: the available parallelism).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Appends every evaluation to this JSON-lines log as it completes.
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
    /// [`Policy::KeepBetter`]).
    pub fn database_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
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
    /// configuration gave a wrong result. Same as
    /// [`testing::tune_test`].
    ///
    /// # Errors
    /// See [`testing::tune_test`].
    pub fn run_test(self) -> Result<TuningResult<E::Cost>> {
        testing::tune_test(self)
    }

    /// Runs the search.
    ///
    /// # Errors
    /// [`Error::NoValidConfiguration`] when no configuration yielded a cost (with the
    /// failures by kind); [`Error::Io`] / [`Error::Format`] for the log or database.
    pub fn run(self) -> Result<TuningResult<E::Cost>> {
        let Tuner {
            space,
            evaluator,
            technique,
            start,
            abort,
            seed,
            batch,
            threads,
            log: log_path,
            resume,
            progress: show_progress,
            name,
            input_key,
            database,
            policy,
            fingerprint,
        } = self;
        let mut technique = technique.unwrap_or_else(|| TechniqueKind::default().build());
        let start: Vec<u128> = start.iter().filter_map(|c| space.index_of(c)).collect();
        if !start.is_empty() {
            technique = Box::new(StartFrom {
                queue: start.into(),
                inner: technique,
            });
        }
        let abort = abort.unwrap_or_else(|| Box::new(WholeSpace));
        let device = evaluator.device();
        if let Some(db) = &database {
            db.check_writable(&name, &device)?;
        }
        let mut state = State {
            space: space.clone(),
            progress: Progress::new(space.len()),
            memo: HashMap::with_hasher(IndexHash),
            stamper: Stamper::default(),
            records: Vec::new(),
            best: None,
            failures: BTreeMap::new(),
            wrong: Vec::new(),
            log: None,
            start: Instant::now(),
            base_elapsed: Duration::ZERO,
            simulated: None,
            resumed: 0,
            waited: Duration::ZERO,
            bar: Bar::new(show_progress),
            template: Record {
                tunable: name.as_str().into(),
                input_key: input_key.as_str().into(),
                device: device.as_str().into(),
                evaluation: 0,
                index: 0,
                config: Named::default(),
                status: String::new(),
                detail: None,
                cost: None,
                objectives: Named::default(),
                samples: Vec::new(),
                prepare_s: 0.0,
                run_s: 0.0,
                validation_s: None,
                elapsed_s: 0.0,
                seed,
                technique: technique.name().into(),
                timestamp: String::new(),
            },
        };
        if let Some(path) = &log_path {
            if resume {
                state.resume_from(&log::read(path)?);
            }
            state.log = Some(LogWriter::append(path)?);
        }

        technique.init(&space, seed);
        state.bar.update(&state.progress, abort.as_ref(), true);
        // Consecutive proposals answered from memory: a technique that only re-proposes
        // measured configurations is stopped after this many.
        let stuck_limit = 100_000 + state.memo.len();
        let mut stuck = 0usize;
        let mut fresh: Vec<(u128, Config)> = Vec::with_capacity(batch);
        let mut waited = Duration::ZERO;
        let mut repeats: Vec<u128> = Vec::new();
        // Preparation runs ahead on a pool of CPU threads when batches allow it; the
        // threads live as long as the run, so a batch costs channel messages, not spawns.
        let workers = threads.min(batch);
        std::thread::scope(|scope| -> Result<()> {
            let pool = (workers > 1).then(|| Pool::start(scope, &evaluator, &space, workers));
            let mut prep_mean: Option<f64> = None;
            'search: while !abort.done(&state.progress) {
                let asked = technique.ask(&space, batch);
                if asked.is_empty() {
                    break;
                }
                fresh.clear();
                repeats.clear();
                for index in asked {
                    if let Some(&cost) = state.memo.get(&index) {
                        technique.tell(&space, index, cost);
                        stuck += 1;
                    } else if fresh.iter().any(|(i, _)| *i == index) {
                        repeats.push(index);
                    } else if let Some(config) = space.get(index) {
                        fresh.push((index, config));
                    } else {
                        // Not an index of the space: a bug of the technique; tell it so.
                        technique.tell(&space, index, None);
                        stuck += 1;
                    }
                }
                if fresh.is_empty() {
                    if stuck > stuck_limit {
                        break;
                    }
                    continue;
                }
                stuck = 0;
                let mut stop = false;
                // Hand preparation to the pool only when it takes long enough to gain from
                // it (a compile, not a no-op): a thread hop costs a few microseconds.
                let ahead = pool
                    .as_ref()
                    .filter(|_| prep_mean.is_none_or(|m| m >= POOL_MIN_PREPARE));
                // While the measuring thread waits for a slow compilation, a time budget can
                // run out: check it then too (in real time; a simulated clock stands still).
                // Only once something valid was found: a run never ends empty-handed because
                // its first compilations were slow.
                // Waits happen only when preparation runs ahead on the pool.
                let watch = state.simulated.is_none() && ahead.is_some();
                let live = std::cell::RefCell::new(
                    (watch && state.progress.valid > 0).then(|| state.progress.clone()),
                );
                let (start, base) = (state.start, state.base_elapsed);
                let out_of_time = || {
                    live.borrow().as_ref().is_some_and(|p| {
                        let mut p = p.clone();
                        p.elapsed = base + start.elapsed();
                        abort.done(&p)
                    })
                };
                let finished = evaluate_batch(
                    &evaluator,
                    &space,
                    &fresh,
                    ahead,
                    &mut waited,
                    &out_of_time,
                    |index, config, prep, outcome| -> Result<bool> {
                        let p = prep.as_secs_f64();
                        prep_mean = Some(prep_mean.map_or(p, |m| 0.8 * m + 0.2 * p));
                        let cost = state.finish(&evaluator, index, config, prep, outcome)?;
                        technique.tell(&space, index, cost);
                        state.bar.update(&state.progress, abort.as_ref(), false);
                        stop = abort.done(&state.progress);
                        if watch && state.progress.valid > 0 {
                            *live.borrow_mut() = Some(state.progress.clone());
                        }
                        Ok(stop)
                    },
                )?;
                for &index in &repeats {
                    if let Some(&cost) = state.memo.get(&index) {
                        technique.tell(&space, index, cost);
                    }
                }
                if stop || !finished {
                    state.progress.elapsed = state.progress.elapsed.max(state.elapsed());
                    break 'search;
                }
            }
            Ok(())
        })?;
        state.bar.finish(&state.progress);
        state.waited = waited;
        let technique_name = technique.name().to_string();
        state.into_result(
            space,
            RunInfo {
                name,
                input_key,
                device,
                seed,
                technique: technique_name,
                log: log_path,
                database: database.map(|db| (db, policy)),
                fingerprint,
            },
        )
    }
}

/// What happened to one fresh configuration: preparation time, then the outcome.
type Outcome<C> = std::result::Result<(Measured<C>, Duration), Failure>;

type Prepared<E> = (
    std::result::Result<<E as Evaluator>::Prepared, Failure>,
    Duration,
);

fn prepare<E: Evaluator>(evaluator: &E, space: &Space, config: &Config) -> Prepared<E> {
    let t = Instant::now();
    let p = guard(|| evaluator.prepare(space, config));
    (p, t.elapsed())
}

/// CPU threads that prepare configurations ahead of measurement. A job carries the
/// generation of its batch; jobs of an abandoned batch are skipped.
struct Pool<E: Evaluator> {
    jobs: mpsc::Sender<(u64, usize, Config)>,
    done: mpsc::Receiver<(u64, usize, Prepared<E>)>,
    generation: std::sync::Arc<AtomicU64>,
}

impl<E: Evaluator> Pool<E> {
    fn start<'scope, 'env>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        evaluator: &'env E,
        space: &'env Space,
        workers: usize,
    ) -> Self {
        let (jobs, job_rx) = mpsc::channel::<(u64, usize, Config)>();
        let (done_tx, done) = mpsc::channel();
        let job_rx = std::sync::Arc::new(std::sync::Mutex::new(job_rx));
        let generation = std::sync::Arc::new(AtomicU64::new(0));
        for _ in 0..workers {
            let (job_rx, done_tx, generation) =
                (job_rx.clone(), done_tx.clone(), generation.clone());
            scope.spawn(move || loop {
                let job = match job_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok((g, k, config)) = job else {
                    return; // the run is over
                };
                if g != generation.load(Ordering::Acquire) {
                    continue;
                }
                if done_tx
                    .send((g, k, prepare(evaluator, space, &config)))
                    .is_err()
                {
                    return;
                }
            });
        }
        Pool {
            jobs,
            done,
            generation,
        }
    }
}

/// Prepares a batch (ahead, on the pool, if there is one) and measures each configuration
/// in order, handing every outcome to `done`, which returns whether to stop. Returns
/// `false` when it gave up waiting for a preparation because `out_of_time` said so.
fn evaluate_batch<E: Evaluator>(
    evaluator: &E,
    space: &Space,
    batch: &[(u128, Config)],
    pool: Option<&Pool<E>>,
    waited: &mut Duration,
    out_of_time: &dyn Fn() -> bool,
    mut done: impl FnMut(u128, &Config, Duration, Outcome<E::Cost>) -> Result<bool>,
) -> Result<bool> {
    let measure = |config: &Config, prepared: E::Prepared| -> Outcome<E::Cost> {
        let t = Instant::now();
        let m = guard(|| evaluator.measure(space, config, prepared))?;
        Ok((m, t.elapsed()))
    };
    let pool = match pool {
        Some(p) if batch.len() > 1 => p,
        _ => {
            for (index, config) in batch {
                let (prepared, prep_time) = prepare(evaluator, space, config);
                *waited += prep_time;
                let outcome = prepared.and_then(|p| measure(config, p));
                if done(*index, config, prep_time, outcome)? {
                    break;
                }
            }
            return Ok(true);
        }
    };
    let generation = pool.generation.fetch_add(1, Ordering::AcqRel) + 1;
    for (k, (_, config)) in batch.iter().enumerate() {
        if pool.jobs.send((generation, k, config.clone())).is_err() {
            break;
        }
    }
    let mut ready: Vec<Option<Prepared<E>>> = (0..batch.len()).map(|_| None).collect();
    let result = (|| {
        for (k, (index, config)) in batch.iter().enumerate() {
            let wait = Instant::now();
            while ready[k].is_none() {
                match pool.done.recv_timeout(Duration::from_millis(50)) {
                    Ok((g, j, p)) if g == generation => ready[j] = Some(p),
                    Ok(_) => {}
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if out_of_time() {
                            *waited += wait.elapsed();
                            return Ok(false);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        // The workers are gone (cannot happen while the pool lives);
                        // prepare here instead.
                        ready[k] = Some(prepare(evaluator, space, config));
                    }
                }
            }
            *waited += wait.elapsed();
            let Some((prepared, prep_time)) = ready[k].take() else {
                return Ok(true);
            };
            let outcome = prepared.and_then(|p| measure(config, p));
            if done(*index, config, prep_time, outcome)? {
                return Ok(true);
            }
        }
        Ok(true)
    })();
    // Abandon what was not measured: workers skip the rest of this batch.
    pool.generation.fetch_add(1, Ordering::AcqRel);
    result
}

/// Runs user code, turning a panic into [`Failure::Other`] so the search goes on.
fn guard<T>(
    f: impl FnOnce() -> std::result::Result<T, Failure>,
) -> std::result::Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Failure::Other(format!("the evaluator panicked: {msg}")))
        }
    }
}

struct RunInfo {
    name: String,
    input_key: String,
    device: String,
    seed: u64,
    technique: String,
    log: Option<PathBuf>,
    database: Option<(Database, Policy)>,
    fingerprint: Option<String>,
}

/// The best configuration of a run.
#[derive(Clone, Debug)]
pub struct Best<C> {
    /// The configuration.
    pub config: Config,
    /// Its index in the space.
    pub index: u128,
    /// Its typed cost; `None` only when it was measured by an earlier run (resumed from
    /// the log, which keeps the objectives, not the typed cost).
    pub cost: Option<C>,
    /// Its scalar cost.
    pub scalar: f64,
    /// Its named objectives.
    pub objectives: Named<f64>,
}

impl<C: Cost> Best<C> {
    /// Whether `cost` (with its objectives) is better than this one.
    fn beaten_by(&self, cost: Option<&C>, objectives: &Named<f64>) -> bool {
        match (cost, &self.cost) {
            (Some(new), Some(old)) => new.compare(old).is_lt(),
            _ => {
                let a = objectives.0.iter().map(|o| o.1);
                let b = self.objectives.0.iter().map(|o| o.1);
                a.partial_cmp(b).is_some_and(|o| o.is_lt())
            }
        }
    }
}

/// What a tuning run found.
#[derive(Clone, Debug)]
pub struct TuningResult<C> {
    /// The best configuration.
    pub best: Best<C>,
    /// Every evaluation, resumed ones first, in the order they completed.
    pub records: Vec<Record>,
    /// Configurations evaluated (resumed ones included).
    pub evaluations: u64,
    /// Of which valid.
    pub valid: u64,
    /// How many were taken from the log instead of measured.
    pub resumed: u64,
    /// Time the measuring thread waited for preparation (compilation): the part of it that
    /// was not hidden behind measurement. With a batch of 1 it is all of it.
    pub waiting_for_preparation: Duration,
    /// Failures by kind (`compile`, `wrong_result`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Time taken: wall time, or simulated time in simulation mode.
    pub elapsed: Duration,
    /// Whether `elapsed` is simulated (the evaluator charged recorded times).
    pub simulated: bool,
    /// The space searched.
    pub space: Space,
    /// The tunable's name.
    pub tunable: String,
    /// The input key.
    pub input_key: String,
    /// The device.
    pub device: String,
    /// The technique.
    pub technique: String,
    /// The seed.
    pub seed: u64,
    /// The log written, if any.
    pub log: Option<PathBuf>,
    /// The database file written, if a database was given and it changed.
    pub database: Option<PathBuf>,
}

impl<C: Cost> TuningResult<C> {
    /// The best configuration's named values.
    pub fn best_values(&self) -> Vec<(&str, Value)> {
        self.space.values(&self.best.config)
    }

    /// The records of configurations whose output did not validate.
    pub fn wrong_results(&self) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(|r| r.status == "wrong_result")
    }

    /// Every evaluation as CSV (see [`export::to_csv`]).
    pub fn to_csv(&self) -> String {
        export::to_csv(&self.records)
    }

    /// Every evaluation in the community T4 format (see [`export::T4`]).
    pub fn to_t4(&self) -> export::T4 {
        export::T4::from_records(&self.records)
    }

    /// A few lines for a terminal: best configuration and cost, counts, files written.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{}{}: best {} with cost {:.6e} ({})\n  {} evaluations ({} valid{}) in {:.2?}{} by {} (seed {})",
            self.tunable,
            if self.input_key.is_empty() {
                String::new()
            } else {
                format!(" [{}]", self.input_key)
            },
            self.space.describe(&self.best.config),
            self.best.scalar,
            self.best
                .objectives
                .0
                .iter()
                .map(|(n, v)| format!("{n} = {v:.6e}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.evaluations,
            self.valid,
            if self.resumed > 0 {
                format!(", {} resumed from the log", self.resumed)
            } else {
                String::new()
            },
            self.elapsed,
            if self.simulated { " (simulated)" } else { "" },
            self.technique,
            self.seed,
        );
        if !self.failures.is_empty() {
            s.push_str(&format!("\n  failures: {}", counts(&self.failures)));
        }
        if let Some(p) = &self.log {
            s.push_str(&format!("\n  log: {}", p.display()));
        }
        if let Some(p) = &self.database {
            s.push_str(&format!("\n  database: {}", p.display()));
        }
        s
    }
}

fn counts(m: &BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The mutable state of a run.
struct State<C> {
    space: Space,
    progress: Progress,
    memo: HashMap<u128, Option<f64>, IndexHash>,
    stamper: Stamper,
    records: Vec<Record>,
    best: Option<Best<C>>,
    failures: BTreeMap<String, u64>,
    wrong: Vec<String>,
    log: Option<LogWriter>,
    start: Instant,
    base_elapsed: Duration,
    /// The simulated clock, once the evaluator charged a time.
    simulated: Option<Duration>,
    resumed: u64,
    waited: Duration,
    bar: Bar,
    template: Record,
}

impl<C: Cost> State<C> {
    fn elapsed(&self) -> Duration {
        self.base_elapsed + self.simulated.unwrap_or_else(|| self.start.elapsed())
    }

    fn resume_from(&mut self, recorded: &[Record]) {
        let t = self.template.clone();
        for r in recorded {
            if r.tunable != t.tunable || r.input_key != t.input_key || r.device != t.device {
                continue;
            }
            let Some(index) = r
                .config
                .config(&self.space)
                .ok()
                .and_then(|c| self.space.index_of(&c).map(|i| (i, c)))
            else {
                continue;
            };
            let (index, config) = index;
            if self.memo.contains_key(&index) {
                continue;
            }
            let cost = if r.is_ok() { r.cost } else { None };
            self.memo.insert(index, cost);
            let elapsed = Duration::from_secs_f64(r.elapsed_s.max(0.0));
            self.progress.record(elapsed, cost);
            self.base_elapsed = self.base_elapsed.max(elapsed);
            self.resumed += 1;
            self.count(r);
            if let Some(c) = cost {
                if self
                    .best
                    .as_ref()
                    .is_none_or(|b| b.beaten_by(None, &r.objectives))
                {
                    self.best = Some(Best {
                        config,
                        index,
                        cost: None,
                        scalar: c,
                        objectives: r.objectives.clone(),
                    });
                }
            }
            self.records.push(r.clone());
        }
        self.template.evaluation = self.records.iter().map(|r| r.evaluation).max().unwrap_or(0);
    }

    fn count(&mut self, r: &Record) {
        if !r.is_ok() {
            *self.failures.entry(r.status.clone()).or_insert(0) += 1;
            if r.status == "wrong_result" {
                self.wrong.push(format!(
                    "{}: {}",
                    r.config,
                    r.detail.as_deref().unwrap_or("")
                ));
            }
        }
    }

    /// Records one evaluation; returns the scalar cost to tell the technique.
    fn finish<E: Evaluator<Cost = C>>(
        &mut self,
        evaluator: &E,
        index: u128,
        config: &Config,
        prep_time: Duration,
        outcome: Outcome<C>,
    ) -> Result<Option<f64>> {
        if let Some(charge) = evaluator.charged_time(&self.space, config) {
            *self.simulated.get_or_insert(Duration::ZERO) += charge;
        }
        let elapsed = self.elapsed();
        self.template.evaluation += 1;
        let mut r = Record {
            index,
            config: Named::of(&self.space, config),
            prepare_s: prep_time.as_secs_f64(),
            elapsed_s: elapsed.as_secs_f64(),
            timestamp: self.stamper.now(),
            ..self.template.clone()
        };
        let (cost, typed) = match outcome {
            Ok((m, run_time)) => {
                let scalar = m.cost.scalar();
                r.status = "ok".into();
                r.cost = Some(scalar);
                r.objectives = Named(m.cost.objectives());
                r.samples = m.samples;
                r.run_s = run_time.as_secs_f64();
                r.validation_s = m.validation.map(|d| d.as_secs_f64());
                (Some(scalar), Some(m.cost))
            }
            Err(f) => {
                let (status, detail) = Record::status_of(&f);
                r.status = status;
                r.detail = Some(detail);
                (None, None)
            }
        };
        if let Some(c) = typed {
            if self
                .best
                .as_ref()
                .is_none_or(|b| b.beaten_by(Some(&c), &r.objectives))
            {
                self.best = Some(Best {
                    config: config.clone(),
                    index,
                    scalar: c.scalar(),
                    cost: Some(c),
                    objectives: r.objectives.clone(),
                });
            }
        }
        self.memo.insert(index, cost);
        self.progress.record(elapsed, cost);
        self.count(&r);
        if let Some(log) = self.log.as_mut() {
            log.write(&r)?;
        }
        self.records.push(r);
        Ok(cost)
    }

    fn into_result(self, space: Space, info: RunInfo) -> Result<TuningResult<C>> {
        let elapsed = self.elapsed();
        let Some(best) = self.best else {
            return Err(Error::NoValidConfiguration {
                evaluated: self.progress.evaluations,
                failures: if space.is_empty() {
                    "the search space is empty".into()
                } else if self.failures.is_empty() {
                    "nothing was evaluated".into()
                } else {
                    counts(&self.failures)
                },
            });
        };
        let mut database_path = None;
        if let Some((db, policy)) = info.database {
            let mut valid: Vec<&Record> = self.records.iter().filter(|r| r.is_ok()).collect();
            valid.sort_by(|a, b| {
                let a = a.objectives.0.iter().map(|o| o.1);
                let b = b.objectives.0.iter().map(|o| o.1);
                a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
            });
            let entry = Entry {
                input_key: info.input_key.clone(),
                best: Named::of(&space, &best.config),
                cost: best.scalar,
                objectives: best.objectives.clone(),
                technique: info.technique.clone(),
                seed: info.seed,
                evaluations: self.progress.evaluations,
                valid: self.progress.valid,
                failures: self.failures.clone(),
                space_len: space.len().to_string(),
                top: valid
                    .iter()
                    .take(5)
                    .map(|r| Ranked {
                        config: r.config.clone(),
                        cost: r.cost.unwrap_or(f64::NAN),
                    })
                    .collect(),
                timestamp: timestamp(),
                fingerprint: Some(Fingerprint::new(&space, info.fingerprint.as_deref())),
            };
            if db.record(&info.name, &info.device, entry, &space, policy)? {
                database_path = Some(db.path(&info.name, &info.device));
            }
        }
        Ok(TuningResult {
            best,
            records: self.records,
            evaluations: self.progress.evaluations,
            valid: self.progress.valid,
            resumed: self.resumed,
            waiting_for_preparation: self.waited,
            failures: self.failures,
            elapsed,
            simulated: self.simulated.is_some(),
            space,
            tunable: info.name,
            input_key: info.input_key,
            device: info.device,
            technique: info.technique,
            seed: info.seed,
            log: info.log,
            database: database_path,
        })
    }
}

/// The progress bar: drawn only on a terminal, redrawn at most 10 times a second.
struct Bar {
    bar: Option<ProgressBar>,
    last: Instant,
    with_fraction: bool,
}

const BAR_STEPS: u64 = 10_000;

impl Bar {
    fn new(on: bool) -> Bar {
        let bar = (on && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(BAR_STEPS), ProgressDrawTarget::stderr());
            b.set_style(spinner_style());
            b
        });
        Bar {
            bar,
            last: Instant::now(),
            with_fraction: false,
        }
    }

    fn update(&mut self, p: &Progress, abort: &dyn AbortCondition, force: bool) {
        let Some(bar) = &self.bar else {
            return;
        };
        if !force && self.last.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.last = Instant::now();
        let fraction = abort.fraction(p);
        if fraction.is_some() != self.with_fraction {
            self.with_fraction = fraction.is_some();
            bar.set_style(if self.with_fraction {
                bar_style()
            } else {
                spinner_style()
            });
        }
        if let Some(f) = fraction {
            bar.set_position((f * BAR_STEPS as f64) as u64);
        } else {
            bar.tick();
        }
        bar.set_message(message(p));
    }

    fn finish(&mut self, p: &Progress) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            eprintln!("{} in {:.2?}", message(p), p.elapsed);
        }
    }
}

fn message(p: &Progress) -> String {
    let secs = p.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        p.evaluations as f64 / secs
    } else {
        0.0
    };
    format!(
        "{} evaluated ({} valid), best {}, {rate:.1}/s",
        p.evaluations,
        p.valid,
        p.best.map_or("-".into(), |b| format!("{b:.4e}"))
    )
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} eta {eta} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

pub mod online;
pub mod testing;

#[cfg(test)]
mod tests;
