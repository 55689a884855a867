//! [`Devices`]: one evaluator per device, measuring at once in one tuning run.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::spread::{Done, Event, Job, Outcome, Spread};
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::space::{Config, Space};
use crate::tuner::{measure_checked, prepare_guarded};
use crate::{Error, Result};

/// Failures of a device in a row, each measured again and found fine on another device,
/// after which the device is dropped (see [`Devices::max_strikes`]).
const MAX_STRIKES: usize = 3;

/// A device dropped from a run, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The device's name in the run.
    pub name: String,
    /// Why it was dropped.
    pub why: String,
}

struct Unit<E> {
    name: Arc<str>,
    evaluator: E,
}

/// Several devices of one model that measure at once, each through its own evaluator: the
/// [`Tuner`](crate::Tuner) hands every configuration to whichever device is free, prepares
/// (compiles) the next one for each device while it measures, and records in
/// [`Record::measured_on`](crate::results::Record::measured_on) which device measured what.
/// See the [module docs](super).
///
/// A configuration that fails on one device with a launch error or an error of the
/// evaluator (a crashed worker, a device that is gone) is measured again on another; if it
/// is fine there, the first device gets a strike, and a device with
/// [`max_strikes`](Devices::max_strikes) strikes in a row is dropped from the run with a
/// message on standard error. With one device left, failures are recorded as they are.
///
/// As an [`Evaluator`] of its own (the tuner's finalists, baselines), it measures on its
/// first device that was not dropped.
pub struct Devices<E> {
    units: Vec<Unit<E>>,
    model: String,
    ahead: usize,
    max_strikes: usize,
    dropped: Mutex<Vec<(usize, String)>>,
}

impl<E> fmt::Debug for Devices<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Devices")
            .field("model", &self.model)
            .field("names", &self.names())
            .field("ahead", &self.ahead)
            .field("max_strikes", &self.max_strikes)
            .finish_non_exhaustive()
    }
}

impl<E: Evaluator> Devices<E> {
    /// One evaluator per device, named `0`, `1`, ... in the records.
    ///
    /// # Errors
    /// As [`Devices::named`].
    pub fn new(evaluators: impl IntoIterator<Item = E>) -> Result<Self> {
        Self::named(
            evaluators
                .into_iter()
                .enumerate()
                .map(|(k, e)| (k.to_string(), e)),
        )
    }

    /// One evaluator per device, each with the name it is recorded under (`cuda:1`).
    ///
    /// # Errors
    /// [`Error::DeviceNotFound`] when there is none; [`Error::MixedDevices`] when the
    /// evaluators' devices ([`Evaluator::device`]) are not all the same model: a cost is
    /// only comparable on the same hardware, so tune each model in a run of its own.
    pub fn named<S: Into<String>>(units: impl IntoIterator<Item = (S, E)>) -> Result<Self> {
        let units: Vec<Unit<E>> = units
            .into_iter()
            .map(|(name, evaluator)| Unit {
                name: Arc::from(name.into()),
                evaluator,
            })
            .collect();
        let Some(first) = units.first() else {
            return Err(Error::DeviceNotFound {
                backend: "scale".into(),
                query: "the devices of a run".into(),
                available: "none were given; give at least one evaluator".into(),
            });
        };
        let model = first.evaluator.device();
        if units.iter().any(|u| u.evaluator.device() != model) {
            return Err(Error::MixedDevices {
                devices: units
                    .iter()
                    .map(|u| format!("{}: {}", u.name, u.evaluator.device()))
                    .collect(),
            });
        }
        // Together the devices prepare on about one thread per core, as one device's tuner
        // does (`Tuner::batch`): compilation must keep up with every device measuring.
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let ahead = (cores / units.len()).clamp(1, 8);
        Ok(Devices {
            units,
            model,
            ahead,
            max_strikes: MAX_STRIKES,
            dropped: Mutex::new(Vec::new()),
        })
    }
}

impl<E> Devices<E> {
    /// How many configurations each device prepares (compiles) ahead while it measures,
    /// each on a thread of its own (default: the CPU cores shared among the devices, 1 to 8;
    /// 0 prepares each right before measuring it).
    #[must_use]
    pub fn ahead(mut self, n: usize) -> Self {
        self.ahead = n;
        self
    }

    /// After how many failures in a row that another device contradicted a device is
    /// dropped (default 3; at least 1).
    #[must_use]
    pub fn max_strikes(mut self, n: usize) -> Self {
        self.max_strikes = n.max(1);
        self
    }

    /// How many devices.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether there are none (never: construction refuses an empty list).
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// The devices' names, as recorded.
    pub fn names(&self) -> Vec<String> {
        self.units.iter().map(|u| u.name.to_string()).collect()
    }

    /// The model every device is (the [`Evaluator::device`] of each).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The evaluators, in order.
    pub fn evaluators(&self) -> impl Iterator<Item = &E> {
        self.units.iter().map(|u| &u.evaluator)
    }

    /// The devices dropped from runs so far, and why.
    pub fn dropped_devices(&self) -> Vec<Dropped> {
        self.dropped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, why)| Dropped {
                name: self.units[*k].name.to_string(),
                why: why.clone(),
            })
            .collect()
    }

    /// The first device not dropped.
    fn serial(&self) -> usize {
        let dropped = self.dropped.lock().unwrap_or_else(PoisonError::into_inner);
        (0..self.units.len())
            .find(|k| !dropped.iter().any(|(d, _)| d == k))
            .unwrap_or(0)
    }
}

/// Serves one device, `unit`, with `ev`: the jobs that arrive on `jobs` are prepared up
/// to `ahead` at a time before the one being measured (on `ahead` threads), then measured
/// as they are ready; what became of each goes to `events`.
pub(crate) fn serve_unit<E: Evaluator>(
    ev: &E,
    unit: usize,
    ahead: usize,
    space: &Space,
    jobs: Receiver<Job>,
    events: Sender<Event<E::Cost>>,
    stop: &AtomicBool,
) {
    let measure = |job: Job, (prepared, prep): (Result<E::Prepared, Failure>, Duration)| {
        if events.send(Event::Started { unit, id: job.id }).is_err() {
            return false;
        }
        let outcome = prepared.and_then(|p| measure_checked(ev, space, &job.config, p));
        let done = Done {
            id: job.id,
            unit,
            prep,
            outcome,
        };
        events.send(Event::Done(done)).is_ok()
    };
    if ahead == 0 {
        for job in jobs {
            if stop.load(Ordering::Relaxed) {
                continue;
            }
            let prepared = prepare_guarded(ev, space, &job.config);
            if !measure(job, prepared) {
                return;
            }
        }
        return;
    }
    let jobs = Mutex::new(jobs);
    let jobs = &jobs;
    std::thread::scope(|s| {
        // Each preparing thread holds at most one prepared job until the device takes it.
        let (ready_tx, ready) = mpsc::sync_channel(0);
        for _ in 0..ahead {
            let ready_tx = ready_tx.clone();
            s.spawn(move || loop {
                // The lock is held only to take the next job, not while preparing it.
                let next = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
                let Ok(job) = next else { return };
                if stop.load(Ordering::Relaxed) {
                    continue;
                }
                let prepared = prepare_guarded(ev, space, &job.config);
                if ready_tx.send((job, prepared)).is_err() {
                    return;
                }
            });
        }
        drop(ready_tx);
        for (job, prepared) in ready {
            if stop.load(Ordering::Relaxed) {
                continue;
            }
            if !measure(job, prepared) {
                return;
            }
        }
    });
}

impl<E: Evaluator> Spread<E::Cost> for Devices<E> {
    fn units(&self) -> Vec<Arc<str>> {
        self.units.iter().map(|u| u.name.clone()).collect()
    }

    fn depth(&self) -> usize {
        self.ahead + 1
    }

    fn max_strikes(&self) -> usize {
        self.max_strikes
    }

    fn serve(
        &self,
        space: &Space,
        jobs: Vec<Receiver<Job>>,
        events: Sender<Event<E::Cost>>,
        stop: &AtomicBool,
    ) {
        std::thread::scope(|s| {
            for (k, rx) in jobs.into_iter().enumerate().take(self.units.len()) {
                let events = events.clone();
                let ev = &self.units[k].evaluator;
                s.spawn(move || serve_unit(ev, k, self.ahead, space, rx, events, stop));
            }
        });
    }

    fn simulated(&self, space: &Space) -> bool {
        space
            .get(0)
            .is_some_and(|c| self.units[0].evaluator.charged_time(space, &c).is_some())
    }

    fn evaluate_now(
        &self,
        unit: usize,
        space: &Space,
        config: &Config,
    ) -> (Duration, Outcome<E::Cost>, Duration) {
        let ev = &self.units[unit].evaluator;
        let (prepared, prep) = prepare_guarded(ev, space, config);
        let outcome = prepared.and_then(|p| measure_checked(ev, space, config, p));
        let charge = ev.charged_time(space, config).unwrap_or(prep);
        (prep, outcome, charge)
    }

    fn dropped(&self, unit: usize, why: &str) {
        self.dropped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((unit, why.to_string()));
    }

    fn serial_unit(&self) -> Option<Arc<str>> {
        Some(self.units[self.serial()].name.clone())
    }
}

/// On its own, the first device that was not dropped measures.
impl<E: Evaluator> Evaluator for Devices<E> {
    type Cost = E::Cost;
    type Prepared = (usize, E::Prepared);

    fn prepare(&self, space: &Space, config: &Config) -> Result<Self::Prepared, Failure> {
        let k = self.serial();
        Ok((k, self.units[k].evaluator.prepare(space, config)?))
    }

    fn measure(
        &self,
        space: &Space,
        config: &Config,
        (k, prepared): Self::Prepared,
    ) -> Result<Measured<E::Cost>, Failure> {
        match self.units.get(k) {
            Some(u) => u.evaluator.measure(space, config, prepared),
            None => Err(Failure::Other(format!("no device {k}"))),
        }
    }

    fn charged_time(&self, space: &Space, config: &Config) -> Option<Duration> {
        self.units[0].evaluator.charged_time(space, config)
    }

    fn device(&self) -> String {
        self.model.clone()
    }

    fn spread(&self) -> Option<&dyn Spread<E::Cost>> {
        Some(self)
    }
}
