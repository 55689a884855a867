//! The search loop: ask → memoise → prepare (ahead, on the pool) → measure → tell →
//! record → abort check.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::bar::Bar;
use super::finish::{self, Finish};
use super::polish::Polish;
use super::pool::{prepare, Pool, Prepared, Wait};
use super::spread;
use super::state::{Outcome, Proposal, State};
use super::stream;
use super::{Tuner, TuningResult};
use crate::abort::{AbortCondition, Evaluations, WholeSpace};
use crate::error::panic_message;
use crate::evaluate::{Evaluator, Failure};
use crate::measure::admit;
use crate::results::log::{self, LogWriter};
use crate::results::{Named, Record};
use crate::search::{Technique, TechniqueKind};
use crate::space::{Config, Space};
use crate::Result;

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
    fn budget(&mut self, evaluations: u64) {
        (**self).budget(evaluations)
    }
}

/// Proposes given configurations first, then those of the technique it wraps (which is told
/// every outcome).
struct StartFrom {
    queue: VecDeque<u128>,
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
    fn budget(&mut self, evaluations: u64) {
        self.inner.budget(evaluations)
    }
}

/// Mean preparation time (seconds) below which preparing ahead on other threads does not pay.
const POOL_MIN_PREPARE: f64 = 20e-6;

impl<E: Evaluator> Tuner<E> {
    /// Runs the search, then re-measures its finalists (see [`Tuner::remeasure`]) and
    /// records the winner.
    ///
    /// # Errors
    /// [`Error::NoValidConfiguration`](crate::Error::NoValidConfiguration) when no
    /// configuration yielded a cost (with the failures by kind);
    /// [`Error::NotInSpace`](crate::Error::NotInSpace) for a baseline configuration outside
    /// the space; [`Error::Io`](crate::Error::Io) / [`Error::Format`](crate::Error::Format)
    /// for the log or database.
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
            asynchronous,
            log: log_path,
            resume,
            progress: show_progress,
            name,
            input_key,
            database,
            policy,
            remeasure,
            polish,
            mut baselines,
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
        finish::check_baselines(&space, &baselines)?;
        // Read before tuning, so that an unreadable database fails the run before it starts.
        let recorded = finish::recorded_best(
            database.as_ref(),
            policy,
            &name,
            &device,
            &input_key,
            &space,
            fingerprint.as_deref(),
        )?;
        let template = Record {
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
            stopped_early: false,
            remeasured: None,
            measured_on: None,
        };
        let mut state = State::new(
            space.clone(),
            remeasure.finalists,
            Bar::new(show_progress),
            template,
        );
        if let Some(path) = &log_path {
            if resume {
                state.resume_from(&log::read(path)?, path)?;
            }
            state.log = Some(LogWriter::append(path)?);
        }

        if let Some(limit) = abort.evaluation_limit() {
            // What is left of it after the resumed evaluations.
            technique.budget(limit.saturating_sub(state.progress.evaluations));
        }
        technique.init(&space, seed);
        state.bar.update(&state.progress, abort.as_ref(), true);
        // Preparation runs ahead on a pool of CPU threads when batches allow it; even one
        // thread overlaps a compilation with the device's measurement.
        let workers = threads.min(batch);
        let finalists = std::thread::scope(|scope| {
            let pool = (batch > 1).then(|| Pool::start(scope, &evaluator, &space, workers));
            if let Some(devices) = evaluator.spread() {
                // Several devices measure at once (crate::scale); the finalists are then
                // measured on one of them.
                spread::search(
                    &mut state,
                    devices,
                    &space,
                    technique.as_mut(),
                    abort.as_ref(),
                )?;
                state.template.measured_on = devices.serial_unit();
            } else {
                // Asynchronously when asked, there are preparation threads, and the evaluator
                // measures for real (simulation stays reproducible).
                let streaming = match pool.as_ref() {
                    Some(p) if asynchronous && !simulated(&evaluator, &space) => Some(p),
                    _ => None,
                };
                let run = |state: &mut State<E::Cost>,
                           technique: &mut dyn Technique,
                           abort: &dyn AbortCondition| match streaming {
                    Some(p) => {
                        stream::search(state, &evaluator, &space, technique, abort, p, batch)
                    }
                    None => search(
                        state,
                        &evaluator,
                        &space,
                        technique,
                        abort,
                        pool.as_ref(),
                        batch,
                    ),
                };
                state.waited = run(&mut state, technique.as_mut(), abort.as_ref())?;
                if polish > 0 {
                    let mut climb = Polish::new(state.memo.iter().map(|(&i, &c)| (i, c)));
                    let until = Evaluations(state.progress.evaluations.saturating_add(polish));
                    let waited = run(&mut state, &mut climb, &until)?;
                    state.waited += waited;
                }
            }
            state.bar.finish(&state.progress);
            finish::remeasure(
                &mut state,
                &evaluator,
                &space,
                pool.as_ref(),
                remeasure,
                recorded.as_ref(),
                &mut baselines,
            )
        })?;
        let technique_name = technique.name().to_string();
        finish::into_result(
            state,
            finalists,
            Finish {
                space,
                name,
                input_key,
                device,
                seed,
                technique: technique_name,
                log: log_path,
                database: database.map(|db| (db, policy)),
                recorded,
                fingerprint,
            },
        )
    }
}

/// Whether the evaluator replays recorded data (it charges a simulated time).
fn simulated<E: Evaluator>(evaluator: &E, space: &Space) -> bool {
    space
        .get(0)
        .is_some_and(|c| evaluator.charged_time(space, &c).is_some())
}

/// The search, until the abort condition or the technique says so. Returns the time the
/// measuring thread waited for preparations.
fn search<E: Evaluator>(
    state: &mut State<E::Cost>,
    evaluator: &E,
    space: &Space,
    technique: &mut dyn Technique,
    abort: &dyn AbortCondition,
    pool: Option<&Pool<E>>,
    batch: usize,
) -> Result<Duration> {
    // Consecutive proposals answered from memory: a technique that only re-proposes
    // measured configurations is stopped after this many.
    let stuck_limit = 100_000 + state.memo.len();
    let mut stuck = 0usize;
    let mut fresh: Vec<(u128, Config)> = Vec::with_capacity(batch);
    let mut waited = Duration::ZERO;
    let mut repeats: Vec<u128> = Vec::new();
    let mut prep_mean: Option<f64> = None;
    while !abort.done(&state.progress) {
        let asked = technique.ask(space, batch);
        if asked.is_empty() {
            break;
        }
        fresh.clear();
        repeats.clear();
        for index in asked {
            match state.sort(technique, space, index, |i| {
                fresh.iter().any(|(j, _)| *j == i)
            }) {
                Proposal::Measure(config) => fresh.push((index, config)),
                Proposal::Repeat => repeats.push(index),
                Proposal::Answered => stuck += 1,
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
        // Hand preparation to the pool only when it takes long enough to gain from it (a
        // compile, not a no-op): a thread hop costs a few microseconds.
        let ahead = pool.filter(|_| prep_mean.is_none_or(|m| m >= POOL_MIN_PREPARE));
        // While the measuring thread waits for a slow compilation, a time budget can run
        // out: check it then too (in real time; a simulated clock stands still). Only once
        // something valid was found: a run never ends empty-handed because its first
        // compilations were slow. Waits happen only when preparation runs ahead.
        let watch = state.simulated.is_none() && ahead.is_some();
        let live =
            RefCell::new((watch && state.progress.valid > 0).then(|| state.progress.clone()));
        let (start, base) = (state.start, state.base_elapsed);
        let out_of_time = || {
            live.borrow().as_ref().is_some_and(|p| {
                let mut p = p.clone();
                p.elapsed = base + start.elapsed();
                abort.done(&p)
            })
        };
        let finished = evaluate_batch(
            evaluator,
            space,
            &fresh,
            ahead,
            &mut waited,
            &out_of_time,
            |index, config, prep, outcome| -> Result<bool> {
                let p = prep.as_secs_f64();
                prep_mean = Some(prep_mean.map_or(p, |m| 0.8 * m + 0.2 * p));
                let cost = state.finish(evaluator, index, config, prep, outcome)?;
                technique.tell(space, index, cost);
                state.bar.update(&state.progress, abort, false);
                stop = abort.done(&state.progress);
                if watch && state.progress.valid > 0 {
                    *live.borrow_mut() = Some(state.progress.clone());
                }
                Ok(stop)
            },
        )?;
        for &index in &repeats {
            if let Some(&cost) = state.memo.get(&index) {
                technique.tell(space, index, cost);
            }
        }
        if stop || !finished {
            state.progress.elapsed = state.progress.elapsed.max(state.elapsed());
            break;
        }
    }
    Ok(waited)
}

/// Measures a prepared configuration and checks the measurement ([`admit`]): the one path
/// from every evaluator to the tuner's records.
pub(crate) fn measure<E: Evaluator>(
    evaluator: &E,
    space: &Space,
    config: &Config,
    prepared: E::Prepared,
) -> Outcome<E::Cost> {
    let t = Instant::now();
    let m = guard(|| evaluator.measure(space, config, prepared))?;
    let run_time = t.elapsed();
    Ok((admit(m)?, run_time))
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
    let pool = match pool {
        Some(p) if batch.len() > 1 => p,
        _ => {
            for (index, config) in batch {
                let (prepared, prep_time) = prepare(evaluator, space, config);
                *waited += prep_time;
                let outcome = prepared.and_then(|p| measure(evaluator, space, config, p));
                if done(*index, config, prep_time, outcome)? {
                    break;
                }
            }
            return Ok(true);
        }
    };
    let generation = pool.submit(batch.iter().map(|(_, c)| c));
    let mut ready: Vec<Option<Prepared<E>>> = (0..batch.len()).map(|_| None).collect();
    let result = (|| {
        for (k, (index, config)) in batch.iter().enumerate() {
            let wait = Instant::now();
            let fallback = || prepare(evaluator, space, config);
            let got = pool.collect(generation, k, &mut ready, fallback, out_of_time);
            *waited += wait.elapsed();
            let Wait::Ready((prepared, prep_time)) = got else {
                return Ok(false);
            };
            let outcome = prepared.and_then(|p| measure(evaluator, space, config, p));
            if done(*index, config, prep_time, outcome)? {
                return Ok(true);
            }
        }
        Ok(true)
    })();
    // Abandon what was not measured: workers skip the rest of this batch.
    pool.abandon();
    result
}

/// Runs user code, turning a panic into [`Failure::Other`] so the search goes on.
pub(super) fn guard<T>(
    f: impl FnOnce() -> std::result::Result<T, Failure>,
) -> std::result::Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(Failure::Other(format!(
            "the evaluator panicked: {}",
            panic_message(&*payload)
        ))),
    }
}
