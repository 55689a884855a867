//! What a run has seen: the memo of measured configurations, the best few, failures by
//! kind, the records and the log they go to.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::time::{Duration, Instant};

use super::bar::Bar;
use super::result::Best;
use crate::abort::Progress;
use crate::cost::Cost;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::results::log::LogWriter;
use crate::results::{Named, Record, Stamper};
use crate::search::Technique;
use crate::space::{Config, Space};
use crate::{Error, Result};

/// What happened to one fresh configuration: the checked measurement and how long
/// measuring took, or why there is no cost.
pub(crate) type Outcome<C> = std::result::Result<(Measured<C>, Duration), Failure>;

/// A fast hash for configuration indices (the memo is on the hot path of every proposal).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct IndexHash;

impl BuildHasher for IndexHash {
    type Hasher = IndexHasher;
    fn build_hasher(&self) -> IndexHasher {
        IndexHasher(0)
    }
}

pub(super) struct IndexHasher(u64);

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

/// What the loop does with one proposal of the technique.
pub(super) enum Proposal {
    /// New: prepare and measure it.
    Measure(Config),
    /// Already on its way: tell the technique its outcome when it is measured.
    Repeat,
    /// Answered at once, from the memo or as a failure (not an index of the space).
    Answered,
}

/// The mutable state of a run.
pub(super) struct State<C> {
    pub(super) space: Space,
    pub(super) progress: Progress,
    pub(super) memo: HashMap<u128, Option<f64>, IndexHash>,
    stamper: Stamper,
    pub(super) records: Vec<Record>,
    /// The best configurations measured in full, best first, at most `keep` of them.
    pub(super) top: Vec<Best<C>>,
    keep: usize,
    /// The best of those whose measurement stopped early: the best only if nothing else is
    /// valid.
    pub(super) stopped: Option<Best<C>>,
    pub(super) failures: BTreeMap<String, u64>,
    pub(super) log: Option<LogWriter>,
    pub(super) start: Instant,
    pub(super) base_elapsed: Duration,
    /// The simulated clock, once the evaluator charged a time.
    pub(super) simulated: Option<Duration>,
    pub(super) resumed: u64,
    pub(super) waited: Duration,
    /// The run time when the search ended (before re-measurement).
    pub(super) ended: Option<Duration>,
    pub(super) bar: Bar,
    pub(super) template: Record,
}

impl<C: Cost> State<C> {
    /// A fresh state that keeps the best `keep` configurations (at least 1).
    pub(super) fn new(space: Space, keep: usize, bar: Bar, template: Record) -> Self {
        State {
            progress: Progress::new(space.len()),
            space,
            memo: HashMap::with_hasher(IndexHash),
            stamper: Stamper::default(),
            records: Vec::new(),
            top: Vec::new(),
            keep: keep.max(1),
            stopped: None,
            failures: BTreeMap::new(),
            log: None,
            start: Instant::now(),
            base_elapsed: Duration::ZERO,
            simulated: None,
            resumed: 0,
            waited: Duration::ZERO,
            ended: None,
            bar,
            template,
        }
    }

    /// Sorts one proposal: one measured before is told its memoised outcome, one already
    /// on its way (`pending`) is a repeat, an index outside the space is told a failure (a
    /// bug of the technique), and a new one is to be measured.
    pub(super) fn sort(
        &self,
        technique: &mut dyn Technique,
        space: &Space,
        index: u128,
        pending: impl Fn(u128) -> bool,
    ) -> Proposal {
        if let Some(&cost) = self.memo.get(&index) {
            technique.tell(space, index, cost);
            Proposal::Answered
        } else if pending(index) {
            Proposal::Repeat
        } else if let Some(config) = space.get(index) {
            Proposal::Measure(config)
        } else {
            technique.tell(space, index, None);
            Proposal::Answered
        }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.base_elapsed + self.simulated.unwrap_or_else(|| self.start.elapsed())
    }

    /// The best so far: the best measured in full, else the best stopped early.
    pub(super) fn best(&self) -> Option<&Best<C>> {
        self.top.first().or(self.stopped.as_ref())
    }

    /// Where a valid configuration would go among the best few: `Some(k)` for the k-th
    /// place (a configuration stopped early has one place of its own), `None` for nowhere.
    /// Asked first, so that most evaluations clone nothing.
    fn place(
        &self,
        cost: Option<&C>,
        objectives: &Named<f64>,
        stopped_early: bool,
    ) -> Option<usize> {
        if stopped_early {
            let beats = self
                .stopped
                .as_ref()
                .is_none_or(|b| b.beaten_by(cost, objectives));
            return beats.then_some(0);
        }
        let at = self
            .top
            .iter()
            .position(|b| b.beaten_by(cost, objectives))
            .unwrap_or(self.top.len());
        (at < self.keep).then_some(at)
    }

    /// Puts a configuration at the place [`State::place`] found for it.
    fn put(&mut self, at: usize, best: Best<C>) {
        if best.stopped_early {
            self.stopped = Some(best);
        } else {
            self.top.insert(at, best);
            self.top.truncate(self.keep);
        }
    }

    /// Takes over what the log at `path` recorded for this tunable, input key and device.
    /// Re-measurement records are not evaluations of the search and are passed over.
    ///
    /// # Errors
    /// [`Error::Format`] for a record whose time cannot be a duration.
    pub(super) fn resume_from(&mut self, recorded: &[Record], path: &Path) -> Result<()> {
        let t = self.template.clone();
        let mut last = 0;
        for r in recorded {
            if r.tunable != t.tunable || r.input_key != t.input_key || r.device != t.device {
                continue;
            }
            last = last.max(r.evaluation);
            if r.remeasured.is_some() {
                continue;
            }
            let Some((index, config)) = r.locate(&self.space) else {
                continue;
            };
            if self.memo.contains_key(&index) {
                continue;
            }
            let elapsed =
                Duration::try_from_secs_f64(r.elapsed_s.max(0.0)).map_err(|_| Error::Format {
                    path: path.display().to_string(),
                    reason: format!(
                        "evaluation {}: `elapsed_s` is {:?}, which is not a run time in seconds; \
                         fix or remove that line to resume from this log",
                        r.evaluation, r.elapsed_s
                    ),
                })?;
            let cost = if r.is_ok() { r.cost } else { None };
            self.memo.insert(index, cost);
            self.progress.record(elapsed, cost);
            self.base_elapsed = self.base_elapsed.max(elapsed);
            self.resumed += 1;
            self.count(r);
            if let Some(c) = cost {
                if let Some(at) = self.place(None, &r.objectives, r.stopped_early) {
                    let best = Best {
                        config,
                        index,
                        cost: None,
                        scalar: c,
                        objectives: r.objectives.clone(),
                        stopped_early: r.stopped_early,
                        remeasured: None,
                    };
                    self.put(at, best);
                }
            }
            self.records.push(r.clone());
        }
        self.template.evaluation = last;
        Ok(())
    }

    fn count(&mut self, r: &Record) {
        if !r.is_ok() {
            *self.failures.entry(r.status.clone()).or_insert(0) += 1;
        }
    }

    /// A record of the configuration `index`, completed at `elapsed`, from the run's
    /// template.
    pub(super) fn record_of(&mut self, index: u128, config: &Config, elapsed: Duration) -> Record {
        self.template.evaluation += 1;
        Record {
            index,
            config: Named::of(&self.space, config),
            elapsed_s: elapsed.as_secs_f64(),
            timestamp: self.stamper.now(),
            ..self.template.clone()
        }
    }

    /// Appends a record to the log, if there is one.
    pub(super) fn write(&mut self, r: &Record) -> Result<()> {
        match self.log.as_mut() {
            Some(log) => log.write(r),
            None => Ok(()),
        }
    }

    /// Records one evaluation; returns the scalar cost to tell the technique (a
    /// configuration stopped early is valid, and slow).
    pub(super) fn finish<E: Evaluator<Cost = C>>(
        &mut self,
        evaluator: &E,
        index: u128,
        config: &Config,
        prep_time: Duration,
        outcome: Outcome<C>,
    ) -> Result<Option<f64>> {
        let charge = evaluator.charged_time(&self.space, config);
        let cost = self.finish_on(charge, None, index, config, prep_time, outcome)?;
        // A device lost to the process would fail every later configuration: stop here,
        // with this evaluation in the log, so that a new process can resume.
        if cost.is_none() {
            if let Some(reason) = evaluator.lost() {
                self.bar.finish(&self.progress);
                return Err(Error::DeviceLost {
                    device: evaluator.device(),
                    reason,
                });
            }
        }
        Ok(cost)
    }

    /// [`State::finish`] with the simulated time to charge given (in runs on several
    /// devices, how far the simulated clock moved since the last completion) and the device
    /// that measured it.
    pub(super) fn finish_on(
        &mut self,
        charge: Option<Duration>,
        measured_on: Option<std::sync::Arc<str>>,
        index: u128,
        config: &Config,
        prep_time: Duration,
        outcome: Outcome<C>,
    ) -> Result<Option<f64>> {
        if let Some(charge) = charge {
            *self.simulated.get_or_insert(Duration::ZERO) += charge;
        }
        let elapsed = self.elapsed();
        let mut r = self.record_of(index, config, elapsed);
        r.measured_on = measured_on;
        r.prepare_s = prep_time.as_secs_f64();
        let cost = match outcome {
            Ok((m, run_time)) => {
                let scalar = m.cost.scalar();
                r.status = "ok".into();
                r.cost = Some(scalar);
                r.objectives = Named(m.cost.objectives());
                r.samples = m.samples;
                r.run_s = run_time.as_secs_f64();
                r.validation_s = m.validation.map(|d| d.as_secs_f64());
                r.stopped_early = m.stopped_early;
                if let Some(at) = self.place(Some(&m.cost), &r.objectives, m.stopped_early) {
                    let best = Best {
                        config: config.clone(),
                        index,
                        scalar,
                        cost: Some(m.cost),
                        objectives: r.objectives.clone(),
                        stopped_early: m.stopped_early,
                        remeasured: None,
                    };
                    self.put(at, best);
                }
                Some(scalar)
            }
            Err(f) => {
                let (status, detail) = Record::status_of(&f);
                r.status = status;
                r.detail = Some(detail);
                None
            }
        };
        self.memo.insert(index, cost);
        self.progress.record(elapsed, cost);
        self.count(&r);
        self.write(&r)?;
        self.records.push(r);
        Ok(cost)
    }
}
