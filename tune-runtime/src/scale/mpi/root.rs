//! Rank 0: its own devices and those of every other rank, as one set of devices for the
//! tuner's loop; a thread of the search talks to the other ranks.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::wire::{decode, from_wire, FromRoot, ToRoot, FROM_ROOT, TO_ROOT};
use super::{Cluster, Hello, Link, ALIVE_EVERY, IDLE};
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::scale::devices::serve_unit;
use crate::scale::{Done, Event, Job, Outcome, Spread};
use crate::space::{Config, Space};
use crate::tuner::{measure_checked, prepare_guarded};

/// A device of another rank.
struct Remote {
    rank: usize,
    unit: u32,
    name: Arc<str>,
}

/// Rank 0's evaluator, with the other ranks' devices added to its own.
pub(super) struct Root<E> {
    inner: E,
    /// Rank 0's own devices, named for the records.
    local: Vec<Arc<str>>,
    prefix: String,
    remote: Vec<Remote>,
    ranks: Vec<usize>,
    silence: Duration,
}

impl<E: Evaluator> Root<E> {
    pub(super) fn new(inner: E, cluster: &Cluster, ranks: &[(usize, Hello)]) -> Self {
        let prefix = format!("rank 0 ({}) ", cluster.host);
        let local = match inner.spread() {
            Some(s) => s.units(),
            None => vec![Arc::from("0")],
        }
        .into_iter()
        .map(|n| Arc::from(format!("{prefix}{n}")))
        .collect();
        let mut remote = Vec::new();
        for (r, hello) in ranks {
            for (k, n) in hello.units.iter().enumerate() {
                remote.push(Remote {
                    rank: *r,
                    unit: u32::try_from(k).unwrap_or(u32::MAX),
                    name: Arc::from(format!("rank {r} ({}) {n}", hello.host)),
                });
            }
        }
        Root {
            inner,
            local,
            prefix,
            remote,
            ranks: ranks.iter().map(|(r, _)| *r).collect(),
            silence: cluster.silence,
        }
    }
}

impl<E> Root<E>
where
    E: Evaluator,
    E::Cost: Serialize + DeserializeOwned,
{
    /// Hands the other ranks' jobs to them and their outcomes to the dispatcher, until the
    /// dispatcher closes every job channel; then tells every rank still there to stop.
    fn talk(&self, jobs: Vec<Receiver<Job>>, events: Sender<Event<E::Cost>>) {
        let link = Link::world();
        let offset = self.local.len();
        let started = Instant::now();
        let mut heard: HashMap<usize, Instant> = self.ranks.iter().map(|&r| (r, started)).collect();
        let mut lost: Vec<usize> = Vec::new();
        // Job id -> (device, whether it is being measured).
        let mut held: HashMap<u64, (usize, bool)> = HashMap::new();
        let mut open = vec![true; jobs.len()];
        let global = |rank: usize, unit: u32| {
            self.remote
                .iter()
                .position(|d| d.rank == rank && d.unit == unit)
                .map(|k| k + offset)
        };
        let mut said = started;
        'run: while open.iter().any(|&o| o) {
            let mut busy = false;
            // Ranks stop serving when rank 0 goes silent (killed, its machine gone).
            if said.elapsed() >= ALIVE_EVERY {
                for &r in self.ranks.iter().filter(|r| !lost.contains(r)) {
                    link.send(r, FROM_ROOT, &FromRoot::Alive);
                }
                said = Instant::now();
            }
            for (k, rx) in jobs.iter().enumerate() {
                while open[k] {
                    match rx.try_recv() {
                        Ok(job) => {
                            busy = true;
                            let d = &self.remote[k];
                            held.insert(job.id, (k + offset, false));
                            if !lost.contains(&d.rank) {
                                let msg = FromRoot::Job {
                                    unit: d.unit,
                                    id: job.id,
                                    index: job.index,
                                };
                                link.send(d.rank, FROM_ROOT, &msg);
                            }
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => open[k] = false,
                    }
                }
            }
            while let Some((from, bytes)) = link.poll(TO_ROOT) {
                busy = true;
                if lost.contains(&from) {
                    continue;
                }
                heard.insert(from, Instant::now());
                let event = match decode::<ToRoot<E::Cost>>(&bytes) {
                    Ok(ToRoot::Started { id, .. }) => {
                        if let Some(h) = held.get_mut(&id) {
                            h.1 = true;
                        }
                        continue;
                    }
                    Ok(ToRoot::Done {
                        unit,
                        id,
                        prep,
                        outcome,
                    }) => {
                        held.remove(&id);
                        let Some(unit) = global(from, unit) else {
                            continue;
                        };
                        Event::Done(Done {
                            id,
                            unit,
                            prep,
                            outcome: from_wire(outcome),
                        })
                    }
                    Ok(ToRoot::Alive | ToRoot::Hello { .. }) => continue,
                    Ok(ToRoot::Quit(why)) => {
                        lost.push(from);
                        if !self.gone(from, &why, &mut held, &events) {
                            break 'run;
                        }
                        continue;
                    }
                    Err(why) => {
                        eprintln!("tune: rank {from}: {why}");
                        continue;
                    }
                };
                if events.send(event).is_err() {
                    break 'run;
                }
            }
            for &r in &self.ranks {
                let silent = heard.get(&r).map_or(Duration::ZERO, Instant::elapsed);
                if !lost.contains(&r) && silent > self.silence {
                    lost.push(r);
                    let why = format!("rank {r} sent nothing for {:.1?}", silent);
                    if !self.gone(r, &why, &mut held, &events) {
                        break 'run;
                    }
                }
            }
            if !busy {
                std::thread::sleep(IDLE);
            }
        }
        for &r in &self.ranks {
            if !lost.contains(&r) {
                link.send(r, FROM_ROOT, &FromRoot::Stop(None));
            }
        }
    }

    /// Rank `rank` is gone: each of its devices, with the jobs it was measuring.
    fn gone(
        &self,
        rank: usize,
        why: &str,
        held: &mut HashMap<u64, (usize, bool)>,
        events: &Sender<Event<E::Cost>>,
    ) -> bool {
        let offset = self.local.len();
        for (k, d) in self.remote.iter().enumerate() {
            if d.rank != rank {
                continue;
            }
            let unit = k + offset;
            let mut measuring: Vec<u64> = held
                .iter()
                .filter(|(_, (u, started))| *u == unit && *started)
                .map(|(id, _)| *id)
                .collect();
            measuring.sort_unstable();
            held.retain(|_, (u, _)| *u != unit);
            let gone = Event::Gone {
                unit,
                why: why.to_string(),
                measuring,
            };
            if events.send(gone).is_err() {
                return false;
            }
        }
        true
    }
}

impl<E> Spread<E::Cost> for Root<E>
where
    E: Evaluator,
    E::Cost: Serialize + DeserializeOwned,
{
    fn units(&self) -> Vec<Arc<str>> {
        self.local
            .iter()
            .cloned()
            .chain(self.remote.iter().map(|d| d.name.clone()))
            .collect()
    }

    fn depth(&self) -> usize {
        self.inner.spread().map_or(2, |s| s.depth())
    }

    fn max_strikes(&self) -> usize {
        self.inner.spread().map_or(3, |s| s.max_strikes())
    }

    fn serve(
        &self,
        space: &Space,
        mut jobs: Vec<Receiver<Job>>,
        events: Sender<Event<E::Cost>>,
        stop: &AtomicBool,
    ) {
        let remote = jobs.split_off(self.local.len().min(jobs.len()));
        std::thread::scope(|s| {
            let local_events = events.clone();
            s.spawn(move || match self.inner.spread() {
                Some(devices) => devices.serve(space, jobs, local_events, stop),
                None => {
                    if let Some(rx) = jobs.into_iter().next() {
                        serve_unit(&self.inner, 0, 1, space, rx, local_events, stop);
                    }
                }
            });
            self.talk(remote, events);
        });
    }

    fn simulated(&self, _space: &Space) -> bool {
        // The simulated clock is rank 0's own: recorded data is replayed in real time here.
        false
    }

    fn evaluate_now(
        &self,
        _unit: usize,
        space: &Space,
        config: &Config,
    ) -> (Duration, Outcome<E::Cost>, Duration) {
        let (prepared, prep) = prepare_guarded(&self.inner, space, config);
        let outcome = prepared.and_then(|p| measure_checked(&self.inner, space, config, p));
        (prep, outcome, prep)
    }

    fn dropped(&self, unit: usize, why: &str) {
        if let Some(devices) = self.inner.spread().filter(|_| unit < self.local.len()) {
            devices.dropped(unit, why);
        }
    }

    fn serial_unit(&self) -> Option<Arc<str>> {
        match self.inner.spread() {
            Some(devices) => devices
                .serial_unit()
                .map(|n| Arc::from(format!("{}{n}", self.prefix))),
            None => self.local.first().cloned(),
        }
    }
}

/// Rank 0's own devices measure alone after the search (the finalists).
impl<E> Evaluator for Root<E>
where
    E: Evaluator,
    E::Cost: Serialize + DeserializeOwned,
{
    type Cost = E::Cost;
    type Prepared = E::Prepared;

    fn prepare(&self, space: &Space, config: &Config) -> Result<E::Prepared, Failure> {
        self.inner.prepare(space, config)
    }

    fn measure(
        &self,
        space: &Space,
        config: &Config,
        prepared: E::Prepared,
    ) -> Result<Measured<E::Cost>, Failure> {
        self.inner.measure(space, config, prepared)
    }

    fn charged_time(&self, space: &Space, config: &Config) -> Option<Duration> {
        self.inner.charged_time(space, config)
    }

    fn device(&self) -> String {
        self.inner.device()
    }

    fn spread(&self) -> Option<&dyn Spread<E::Cost>> {
        Some(self)
    }
}
