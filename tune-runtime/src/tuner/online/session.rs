//! One input of an online tuner: its space, technique and progress; which configuration a
//! call runs while exploring; what is recorded; when it settles.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::workers::{Prepared, Workers};
use super::{Input, PrepareFn, Settings, Stats, Trial};
use crate::abort::Progress;
use crate::evaluate::Failure;
use crate::results::database::{Entry, Fingerprint, Policy, Ranked};
use crate::results::log::LogWriter;
use crate::results::{timestamp, Named, Record, Stamper};
use crate::search::Technique;
use crate::space::{Config, Space};
use crate::{Error, Result};

/// Compares the trusted output with a candidate's.
pub(super) type Same<'a, O> = dyn Fn(&O, &O) -> std::result::Result<(), String> + 'a;

/// A configuration whose preparation is under way.
struct Pending<P> {
    index: u128,
    config: Config,
    rx: mpsc::Receiver<Prepared<P>>,
    /// Needs no validation (trusted, or validated offline).
    trusted: bool,
}

/// The configuration being measured: one sample per call.
struct Candidate<P> {
    index: u128,
    config: Config,
    prepared: P,
    samples: Vec<Duration>,
    /// Its output was validated (or needs no validation).
    checked: bool,
    prepare_time: Duration,
}

/// The best configuration so far, ready to run when it was prepared in this process.
struct Best<P> {
    config: Config,
    cost: f64,
    prepared: Option<P>,
}

pub(super) struct Session<P> {
    pub(super) key: String,
    pub(super) device: String,
    pub(super) space: Space,
    prepare: PrepareFn<P>,
    only: Option<HashSet<u128>>,
    start_from: VecDeque<u128>,
    trusted: Option<u128>,
    trusted_prepared: Option<(Config, P)>,
    technique: Box<dyn Technique>,
    memo: HashMap<u128, Option<f64>>,
    progress: Progress,
    started: Instant,
    base_elapsed: Duration,
    pending: VecDeque<Pending<P>>,
    candidate: Option<Candidate<P>>,
    best: Option<Best<P>>,
    /// The preparation of a best taken from the log, under way.
    best_job: Option<mpsc::Receiver<Prepared<P>>>,
    /// The configuration it settled on.
    pub(super) settled: Option<(Config, P)>,
    /// Settled without any valid configuration.
    pub(super) dead: bool,
    exhausted: bool,
    stuck: usize,
    failures: BTreeMap<String, u64>,
    valid: Vec<(f64, u128)>,
    evaluation: u64,
    pub(super) stats: Stats,
}

/// Consecutive proposals answered from memory before the technique counts as exhausted.
const STUCK_LIMIT: usize = 10_000;

impl<P: Clone + Send + 'static> Session<P> {
    pub(super) fn new(
        key: String,
        device: String,
        input: Input<P>,
        settings: &Settings,
        recorded: &[Record],
        name: &str,
    ) -> Self {
        let Input {
            space,
            prepare,
            only,
            start,
            trusted,
        } = input;
        let mut technique = settings.technique();
        technique.init(&space, settings.seed);
        let only = only.map(|o| o.iter().filter_map(|c| space.index_of(c)).collect());
        let trusted = trusted.and_then(|c| space.index_of(&c));
        let start_from = trusted
            .into_iter()
            .chain(start.iter().filter_map(|c| space.index_of(c)))
            .collect();
        let mut s = Session {
            progress: Progress::new(space.len()),
            key,
            device,
            space,
            prepare,
            only,
            start_from,
            trusted,
            trusted_prepared: None,
            technique,
            memo: HashMap::new(),
            started: Instant::now(),
            base_elapsed: Duration::ZERO,
            pending: VecDeque::new(),
            candidate: None,
            best: None,
            best_job: None,
            settled: None,
            dead: false,
            exhausted: false,
            stuck: 0,
            failures: BTreeMap::new(),
            valid: Vec::new(),
            evaluation: 0,
            stats: Stats::default(),
        };
        s.resume(recorded, name);
        s
    }

    /// Takes what an earlier run of the application recorded for this input and device:
    /// measured configurations are not tried again, and the best of them counts as
    /// validated (it was, when it was measured).
    fn resume(&mut self, recorded: &[Record], name: &str) {
        for r in recorded {
            if &*r.tunable != name || *r.input_key != *self.key || *r.device != *self.device {
                continue;
            }
            let Some((index, config)) = r.locate(&self.space) else {
                continue;
            };
            if self.memo.contains_key(&index) {
                continue;
            }
            let cost = if r.is_ok() { r.cost } else { None };
            self.memo.insert(index, cost);
            let elapsed = r.elapsed().unwrap_or_default();
            self.progress.record(elapsed, cost);
            self.base_elapsed = self.base_elapsed.max(elapsed);
            self.evaluation = self.evaluation.max(r.evaluation);
            self.stats.evaluations += 1;
            self.stats.resumed += 1;
            match cost {
                Some(c) => {
                    self.valid.push((c, index));
                    if self.best.as_ref().is_none_or(|b| c < b.cost) {
                        self.best = Some(Best {
                            config,
                            cost: c,
                            prepared: None,
                        });
                    }
                }
                None => {
                    *self.failures.entry(r.status.clone()).or_insert(0) += 1;
                    self.stats.failures += 1;
                }
            }
        }
        self.stats.best = self.best.as_ref().map(|b| (b.config.clone(), b.cost));
    }

    fn elapsed(&self) -> Duration {
        self.base_elapsed + self.started.elapsed()
    }

    fn in_flight(&self) -> usize {
        self.pending.len() + usize::from(self.candidate.is_some())
    }

    /// Prepares the best taken from the log first, so that calls can run it while the
    /// search goes on; takes its preparation when it is there.
    fn prepare_best(&mut self, workers: &Workers<P>, block: bool) {
        let Some(best) = self.best.as_mut().filter(|b| b.prepared.is_none()) else {
            return;
        };
        let rx = self.best_job.get_or_insert_with(|| {
            workers.submit(
                self.prepare.clone(),
                self.space.clone(),
                best.config.clone(),
            )
        });
        let got = if block {
            rx.recv().ok()
        } else {
            rx.try_recv().ok()
        };
        if let Some((r, _)) = got {
            self.best_job = None;
            match r {
                Ok(p) => best.prepared = Some(p),
                // It compiled in an earlier run: a failure now is this process's (a driver
                // change); the search goes on without it.
                Err(_) => self.best = None,
            }
        }
    }

    /// Asks the technique for more configurations until `ahead` are in flight.
    fn refill(&mut self, settings: &Settings, workers: &Workers<P>) {
        while self.in_flight() < settings.ahead && !self.exhausted {
            if self.exploration_over(settings) {
                return;
            }
            let index = match self.start_from.pop_front() {
                Some(i) => i,
                None => match self.technique.ask(&self.space, 1).first() {
                    Some(&i) => i,
                    None => {
                        self.exhausted = true;
                        return;
                    }
                },
            };
            if let Some(&cost) = self.memo.get(&index) {
                self.technique.tell(&self.space, index, cost);
                self.stuck += 1;
                if self.stuck > STUCK_LIMIT {
                    self.exhausted = true;
                }
                continue;
            }
            let busy = self.pending.iter().any(|p| p.index == index)
                || self.candidate.as_ref().is_some_and(|c| c.index == index);
            let Some(config) = self.space.get(index).filter(|_| !busy) else {
                // In flight already, or not an index of the space.
                self.stuck += 1;
                if self.stuck > STUCK_LIMIT {
                    self.exhausted = true;
                }
                continue;
            };
            let trusted = Some(index) == self.trusted
                || self.only.as_ref().is_some_and(|o| o.contains(&index));
            if self.only.as_ref().is_some_and(|o| !o.contains(&index)) && !trusted {
                // Not validated offline: never run; the technique learns it is out.
                self.memo.insert(index, None);
                self.technique.tell(&self.space, index, None);
                self.stuck += 1;
                if self.stuck > STUCK_LIMIT {
                    self.exhausted = true;
                }
                continue;
            }
            self.stuck = 0;
            let rx = workers.submit(self.prepare.clone(), self.space.clone(), config.clone());
            self.pending.push_back(Pending {
                index,
                config,
                rx,
                trusted,
            });
        }
    }

    /// What a failing call can run instead: the best so far, else the trusted
    /// configuration, once prepared.
    fn fallback(&self) -> Option<(&Config, &P)> {
        if let Some(Best {
            config,
            prepared: Some(p),
            ..
        }) = &self.best
        {
            return Some((config, p));
        }
        self.trusted_prepared.as_ref().map(|(c, p)| (c, p))
    }

    /// Makes the next prepared configuration the candidate. Waits for it only when `block`;
    /// preparations that failed are recorded on the way.
    fn take_ready(
        &mut self,
        settings: &Settings,
        log: &mut Option<LogWriter>,
        name: &str,
        block: bool,
    ) -> Result<()> {
        while self.candidate.is_none() {
            let Some(front) = self.pending.front() else {
                return Ok(());
            };
            let msg = if block {
                front.rx.recv().ok()
            } else {
                match front.rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(mpsc::TryRecvError::Empty) => return Ok(()),
                    Err(mpsc::TryRecvError::Disconnected) => None,
                }
            };
            let Some(p) = self.pending.pop_front() else {
                return Ok(());
            };
            match msg {
                None => {
                    let f = Failure::Other("the preparation thread ended".into());
                    self.finish(
                        settings,
                        log,
                        name,
                        p.index,
                        &p.config,
                        Err(f),
                        Duration::ZERO,
                    )?;
                }
                Some((Err(f), dt)) => {
                    self.finish(settings, log, name, p.index, &p.config, Err(f), dt)?;
                }
                Some((Ok(prepared), dt)) => {
                    if p.trusted && Some(p.index) == self.trusted {
                        self.trusted_prepared = Some((p.config.clone(), prepared.clone()));
                    }
                    self.candidate = Some(Candidate {
                        index: p.index,
                        config: p.config,
                        prepared,
                        samples: Vec::new(),
                        checked: p.trusted,
                        prepare_time: dt,
                    });
                }
            }
        }
        Ok(())
    }

    /// One call while exploring: runs the candidate when one is ready (validating its first
    /// output), else the best so far; a failed candidate is recorded and the call runs
    /// another configuration, so the application only ever gets a validated output.
    pub(super) fn explore<O>(
        &mut self,
        settings: &Settings,
        workers: &Workers<P>,
        log: &mut Option<LogWriter>,
        name: &str,
        mut run: impl FnMut(&Trial<'_, P>) -> std::result::Result<(O, Duration), Failure>,
        compare: Option<&Same<'_, O>>,
    ) -> Result<O> {
        self.stats.calls += 1;
        self.stats.exploring_calls += 1;
        let mut attempts = 0usize;
        loop {
            self.prepare_best(workers, false);
            self.refill(settings, workers);
            if self.candidate.is_none() {
                if self.fallback().is_none() && self.best_job.is_some() {
                    // The recorded best is what a call can run soonest.
                    self.prepare_best(workers, true);
                }
                let block = self.fallback().is_none();
                self.take_ready(settings, log, name, block)?;
                self.refill(settings, workers);
            }
            if self.settle_if_done(settings, workers, name)? {
                if let Some((config, prepared)) = &self.settled {
                    return run(&Trial::new(config, prepared, &self.space, false))
                        .map(|(o, _)| o)
                        .map_err(|f| failed(&self.space, config, f));
                }
            }
            let Some(cand) = self.candidate.as_mut() else {
                if self.fallback().is_some() {
                    self.stats.fallback_runs += 1;
                }
                if let Some((config, prepared)) = self.fallback() {
                    return run(&Trial::new(config, prepared, &self.space, false))
                        .map(|(o, _)| o)
                        .map_err(|f| failed(&self.space, config, f));
                }
                if self.pending.is_empty() {
                    return Err(self.no_valid());
                }
                continue;
            };
            let validate = !cand.checked;
            let outcome = match (validate, compare) {
                (true, Some(same)) => {
                    let Some((tc, tp)) = &self.trusted_prepared else {
                        return Err(Error::Online(
                            "`call_compared` compares new configurations with the trusted one: \
                             give it with `Input::trusted(config)`"
                                .into(),
                        ));
                    };
                    // The trusted output first: it is returned if the candidate differs.
                    let (expected, _) = run(&Trial::new(tc, tp, &self.space, true))
                        .map_err(|f| failed(&self.space, tc, f))?;
                    self.stats.extra_runs += 1;
                    match run(&Trial::new(&cand.config, &cand.prepared, &self.space, true)) {
                        Ok((o, t)) => match same(&expected, &o) {
                            Ok(()) => Ok((o, t)),
                            Err(m) => Err((Failure::WrongResult(m), Some(expected))),
                        },
                        Err(f) => Err((f, Some(expected))),
                    }
                }
                _ => run(&Trial::new(
                    &cand.config,
                    &cand.prepared,
                    &self.space,
                    validate,
                ))
                .map_err(|f| (f, None)),
            };
            match outcome {
                Ok((o, t)) => {
                    cand.checked = true;
                    cand.samples.push(t);
                    self.after_sample(settings, log, name)?;
                    return Ok(o);
                }
                Err((f, expected)) => {
                    self.stats.extra_runs += 1;
                    let Some(c) = self.candidate.take() else {
                        continue;
                    };
                    self.finish(
                        settings,
                        log,
                        name,
                        c.index,
                        &c.config,
                        Err(f),
                        c.prepare_time,
                    )?;
                    if let Some(o) = expected {
                        return Ok(o);
                    }
                    attempts += 1;
                    if attempts >= settings.attempts && self.fallback().is_none() {
                        return Err(self.no_valid());
                    }
                }
            }
        }
    }

    fn no_valid(&self) -> Error {
        Error::NoValidConfiguration {
            evaluated: self.progress.evaluations,
            failures: if self.failures.is_empty() {
                "nothing was evaluated".into()
            } else {
                self.failures
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        }
    }

    /// After a sample of the candidate: it is done after `runs_per_config` samples, or
    /// after one when it is far slower than the best.
    fn after_sample(
        &mut self,
        settings: &Settings,
        log: &mut Option<LogWriter>,
        name: &str,
    ) -> Result<()> {
        let Some(c) = &self.candidate else {
            return Ok(());
        };
        let first = c.samples[0].as_secs_f64();
        let hopeless = c.samples.len() == 1
            && self
                .best
                .as_ref()
                .is_some_and(|b| first > settings.slow_factor * b.cost);
        if c.samples.len() < settings.runs_per_config && !hopeless {
            return Ok(());
        }
        let Some(c) = self.candidate.take() else {
            return Ok(());
        };
        let mut sorted = c.samples.clone();
        sorted.sort();
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2
        };
        let cost = median.as_secs_f64();
        let better = self.best.as_ref().is_none_or(|b| cost < b.cost);
        self.finish(
            settings,
            log,
            name,
            c.index,
            &c.config,
            Ok((cost, &c.samples)),
            c.prepare_time,
        )?;
        if better {
            self.best = Some(Best {
                config: c.config,
                cost,
                prepared: Some(c.prepared),
            });
        }
        Ok(())
    }

    /// Records a finished configuration: log, memo, progress, technique.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        settings: &Settings,
        log: &mut Option<LogWriter>,
        name: &str,
        index: u128,
        config: &Config,
        outcome: std::result::Result<(f64, &[Duration]), Failure>,
        prepare_time: Duration,
    ) -> Result<()> {
        let elapsed = self.elapsed();
        self.evaluation += 1;
        self.stats.evaluations += 1;
        let mut r = Record {
            tunable: name.into(),
            input_key: self.key.as_str().into(),
            device: self.device.as_str().into(),
            evaluation: self.evaluation,
            index,
            config: Named::of(&self.space, config),
            status: "ok".into(),
            detail: None,
            cost: None,
            objectives: Named::default(),
            samples: Vec::new(),
            prepare_s: prepare_time.as_secs_f64(),
            run_s: 0.0,
            validation_s: None,
            elapsed_s: elapsed.as_secs_f64(),
            seed: settings.seed,
            technique: self.technique.name().into(),
            timestamp: String::new(),
            stopped_early: false,
            remeasured: None,
            measured_on: None,
        };
        let cost = match outcome {
            Ok((cost, samples)) => {
                r.cost = Some(cost);
                r.objectives = Named(vec![("time_s".into(), cost)]);
                r.samples = samples.iter().map(Duration::as_secs_f64).collect();
                r.run_s = r.samples.iter().sum();
                self.valid.push((cost, index));
                Some(cost)
            }
            Err(f) => {
                let (status, detail) = Record::status_of(&f);
                *self.failures.entry(status.clone()).or_insert(0) += 1;
                self.stats.failures += 1;
                r.status = status;
                r.detail = Some(detail);
                None
            }
        };
        self.memo.insert(index, cost);
        self.progress.record(elapsed, cost);
        self.technique.tell(&self.space, index, cost);
        if let Some(c) = cost {
            if self.stats.best.as_ref().is_none_or(|b| c < b.1) {
                self.stats.best = Some((config.clone(), c));
            }
        }
        if let Some(w) = log.as_mut() {
            r.timestamp = Stamper::default().now();
            w.write(&r)?;
        }
        Ok(())
    }

    /// Whether the exploration condition holds, or the calls allowed for exploring were
    /// made (this call included).
    fn exploration_over(&self, settings: &Settings) -> bool {
        settings.explore.done(&self.progress)
            || settings
                .max_calls
                .is_some_and(|m| self.stats.exploring_calls >= m)
    }

    /// Settles when the exploration is over: the best stays, everything else is dropped.
    /// Returns whether it settled (now or before).
    fn settle_if_done(
        &mut self,
        settings: &Settings,
        workers: &Workers<P>,
        name: &str,
    ) -> Result<bool> {
        self.progress.elapsed = self.progress.elapsed.max(self.elapsed());
        let over = self.exploration_over(settings)
            || (self.exhausted && self.pending.is_empty() && self.candidate.is_none());
        if self.settled.is_none() && over {
            // A best measured by an earlier run of the application: wait for its preparation.
            self.prepare_best(workers, true);
            self.pending.clear();
            self.candidate = None;
            self.stats.settled_after = Some(self.stats.calls);
            match self.best.take() {
                None => {
                    self.dead = true;
                    return Err(self.no_valid());
                }
                Some(b) => {
                    let prepared = match b.prepared {
                        Some(p) => p,
                        None => (self.prepare)(&self.space, &b.config)
                            .map_err(|f| failed(&self.space, &b.config, f))?,
                    };
                    self.record_best(settings, name, &b.config, b.cost);
                    self.settled = Some((b.config, prepared));
                }
            }
        }
        Ok(self.settled.is_some())
    }

    /// Records the settled configuration in the database, if there is one. A failure to
    /// write is reported on standard error: the application's computation goes on.
    fn record_best(&mut self, settings: &Settings, name: &str, config: &Config, cost: f64) {
        let Some(db) = &settings.database else {
            return;
        };
        self.valid.sort_by(|a, b| a.0.total_cmp(&b.0));
        let entry = Entry {
            input_key: self.key.clone(),
            best: Named::of(&self.space, config),
            cost,
            objectives: Named(vec![("time_s".into(), cost)]),
            technique: self.technique.name().to_string(),
            seed: settings.seed,
            evaluations: self.progress.evaluations,
            valid: self.progress.valid,
            failures: self.failures.clone(),
            space_len: self.space.len().to_string(),
            top: self
                .valid
                .iter()
                .take(5)
                .filter_map(|&(c, i)| {
                    Some(Ranked {
                        config: Named::of(&self.space, &self.space.get(i)?),
                        cost: c,
                    })
                })
                .collect(),
            timestamp: timestamp(),
            fingerprint: Some(Fingerprint::new(
                &self.space,
                settings.fingerprint.as_deref(),
            )),
            remeasured: None,
        };
        if let Err(e) = db.record(name, &self.device, entry, &self.space, Policy::KeepBetter) {
            eprintln!("tune: the online tuner of `{name}` could not record its result: {e}");
            self.stats.database_error = Some(e.to_string());
        }
    }
}

/// The error of a configuration that ran before (validated) and failed now.
pub(super) fn failed(space: &Space, config: &Config, f: Failure) -> Error {
    Error::Online(format!(
        "the configuration {} failed: {f}",
        space.describe(config)
    ))
}
