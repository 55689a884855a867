//! Hands jobs to devices and collects what became of them: a device is chosen when a job is
//! handed out (the least loaded one), a failure that may be the device's is measured again
//! on another, and a device that keeps failing where others succeed is dropped. In
//! simulation the devices are clocks: a job takes the time its recording charges, and jobs
//! complete in the order of their simulated end.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::Scope;
use std::time::Duration;

use super::spread::{Done, Event, Job, Outcome, Spread};
use crate::evaluate::Failure;
use crate::space::{Config, Space};

/// A measured configuration, as the tuner records it.
#[derive(Debug)]
pub(crate) struct Completed<C> {
    pub(crate) index: u128,
    pub(crate) config: Config,
    /// The device that measured it.
    pub(crate) unit: Arc<str>,
    pub(crate) prep: Duration,
    pub(crate) outcome: Outcome<C>,
    /// In simulation, the simulated time it completed at.
    pub(crate) at: Option<Duration>,
}

/// A job handed out and not yet back.
struct Pending {
    unit: usize,
    index: u128,
    config: Config,
    /// When this measures again what failed on another device: that device.
    again_for: Option<usize>,
}

struct Unit {
    name: Arc<str>,
    live: bool,
    held: usize,
    strikes: usize,
    /// When it was last handed a job (spreads ties).
    last: u64,
    jobs: Option<Sender<Job>>,
    /// In simulation, when it is free.
    free_at: Duration,
}

/// The dispatcher of one search.
pub(crate) struct Dispatch<'a, C> {
    spread: &'a dyn Spread<C>,
    space: &'a Space,
    units: Vec<Unit>,
    depth: usize,
    max_strikes: usize,
    pending: HashMap<u64, Pending>,
    events: Option<Receiver<Event<C>>>,
    /// Completions decided here (jobs lost with their device).
    ready: VecDeque<Completed<C>>,
    next_id: u64,
    seq: u64,
    simulated: bool,
    clock: Duration,
    /// In simulation: jobs by simulated end time.
    timeline: BinaryHeap<Reverse<(Duration, u64)>>,
    finished: HashMap<u64, Done<C>>,
}

/// Failures that a device may cause rather than the configuration: measured again on
/// another device before they are recorded.
fn device_may_cause(f: &Failure) -> bool {
    matches!(f, Failure::Launch(_) | Failure::Other(_))
}

impl<'a, C: Send + 'a> Dispatch<'a, C> {
    /// Starts serving the devices of `spread` on a thread of `scope` (none in simulation).
    pub(crate) fn start<'scope>(
        scope: &'scope Scope<'scope, '_>,
        spread: &'a dyn Spread<C>,
        space: &'a Space,
        stop: &'a AtomicBool,
    ) -> Self
    where
        'a: 'scope,
    {
        let names = spread.units();
        let simulated = spread.simulated(space);
        let mut units: Vec<Unit> = names
            .into_iter()
            .map(|name| Unit {
                name,
                live: true,
                held: 0,
                strikes: 0,
                last: 0,
                jobs: None,
                free_at: Duration::ZERO,
            })
            .collect();
        let mut events = None;
        if !simulated {
            let (tx, rx) = mpsc::channel();
            let mut receivers = Vec::with_capacity(units.len());
            for u in &mut units {
                let (jtx, jrx) = mpsc::channel();
                u.jobs = Some(jtx);
                receivers.push(jrx);
            }
            scope.spawn(move || spread.serve(space, receivers, tx, stop));
            events = Some(rx);
        }
        Dispatch {
            spread,
            space,
            // In simulation a job's recorded time includes its compilation: nothing to
            // prepare ahead, so a device holds the one it measures.
            depth: if simulated { 1 } else { spread.depth().max(1) },
            max_strikes: spread.max_strikes().max(1),
            units,
            pending: HashMap::new(),
            events,
            ready: VecDeque::new(),
            next_id: 0,
            seq: 0,
            simulated,
            clock: Duration::ZERO,
            timeline: BinaryHeap::new(),
            finished: HashMap::new(),
        }
    }

    /// How many more jobs the devices take now.
    pub(crate) fn free(&self) -> usize {
        self.units
            .iter()
            .filter(|u| u.live)
            .map(|u| self.depth.saturating_sub(u.held))
            .sum()
    }

    /// Jobs handed out and not back yet.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.len() + self.ready.len()
    }

    /// Whether any device is left.
    pub(crate) fn any_live(&self) -> bool {
        self.units.iter().any(|u| u.live)
    }

    /// Hands a configuration to the least loaded device.
    pub(crate) fn submit(&mut self, index: u128, config: Config) {
        let id = self.next_id;
        self.next_id += 1;
        self.place(id, index, config, None);
    }

    /// The live device with the fewest jobs (the least recently served among equals), but
    /// `avoid`.
    fn pick(&self, avoid: Option<usize>) -> Option<usize> {
        (0..self.units.len())
            .filter(|&k| self.units[k].live && Some(k) != avoid)
            .min_by_key(|&k| (self.units[k].held, self.units[k].last))
    }

    fn place(&mut self, id: u64, index: u128, config: Config, again_for: Option<usize>) {
        let Some(k) = self.pick(again_for).or_else(|| self.pick(None)) else {
            self.ready.push_back(Completed {
                index,
                config,
                unit: Arc::from("none"),
                prep: Duration::ZERO,
                outcome: Err(Failure::Other(
                    "every device of the run was dropped before it was measured".into(),
                )),
                at: self.simulated.then_some(self.clock),
            });
            return;
        };
        self.seq += 1;
        let unit = &mut self.units[k];
        unit.held += 1;
        unit.last = self.seq;
        if self.simulated {
            let (prep, outcome, charge) = self.spread.evaluate_now(k, self.space, &config);
            let start = self.clock.max(unit.free_at);
            unit.free_at = start + charge;
            self.timeline.push(Reverse((unit.free_at, id)));
            self.finished.insert(
                id,
                Done {
                    id,
                    unit: k,
                    prep,
                    outcome,
                },
            );
        } else {
            let job = Job {
                id,
                index,
                config: config.clone(),
            };
            let sent = unit.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok());
            if !sent {
                // Its thread is gone: hand the job to another device.
                self.pending.insert(
                    id,
                    Pending {
                        unit: k,
                        index,
                        config,
                        again_for,
                    },
                );
                self.drop_unit(k, "it stopped taking configurations".into(), &[]);
                return;
            }
        }
        self.pending.insert(
            id,
            Pending {
                unit: k,
                index,
                config,
                again_for,
            },
        );
    }

    /// The next completed job: waits up to `wait` for one (in simulation, the next on the
    /// simulated clock, without waiting). `None` when nothing came.
    pub(crate) fn next(&mut self, wait: Duration) -> Option<Completed<C>> {
        loop {
            if let Some(c) = self.ready.pop_front() {
                return Some(c);
            }
            let event = if self.simulated {
                let Reverse((end, id)) = self.timeline.pop()?;
                self.clock = self.clock.max(end);
                Event::Done(self.finished.remove(&id)?)
            } else {
                match self.events.as_ref()?.recv_timeout(wait) {
                    Ok(e) => e,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
                }
            };
            match event {
                Event::Done(d) => {
                    if let Some(c) = self.done(d) {
                        return Some(c);
                    }
                }
                Event::Started { .. } => {}
                Event::Gone {
                    unit,
                    why,
                    measuring,
                } => self.drop_unit(unit, why, &measuring),
            }
        }
    }

    /// A job came back: recorded, or measured again elsewhere first.
    fn done(&mut self, d: Done<C>) -> Option<Completed<C>> {
        // A job handed to another device meanwhile (its device was dropped) is stale here.
        if self.pending.get(&d.id).is_none_or(|p| p.unit != d.unit) {
            return None;
        }
        let p = self.pending.remove(&d.id)?;
        let unit = &mut self.units[d.unit];
        unit.held = unit.held.saturating_sub(1);
        match (&d.outcome, p.again_for) {
            (Err(f), None) if device_may_cause(f) && self.pick(Some(d.unit)).is_some() => {
                self.place(d.id, p.index, p.config, Some(d.unit));
                return None;
            }
            (Ok(_), Some(first)) => {
                let u = &mut self.units[first];
                u.strikes += 1;
                if u.live && u.strikes >= self.max_strikes {
                    let why = format!(
                        "{} configurations in a row failed on it and measured fine on another \
                         device",
                        u.strikes
                    );
                    self.drop_unit(first, why, &[]);
                }
            }
            _ => {}
        }
        if d.outcome.is_ok() {
            self.units[d.unit].strikes = 0;
        }
        Some(Completed {
            index: p.index,
            config: p.config,
            unit: self.units[d.unit].name.clone(),
            prep: d.prep,
            outcome: d.outcome,
            at: self.simulated.then_some(self.clock),
        })
    }

    /// Drops a device: no more jobs for it; those it held go to the others, but for those
    /// it was measuring, which are recorded as failed.
    fn drop_unit(&mut self, k: usize, why: String, measuring: &[u64]) {
        let unit = &mut self.units[k];
        if !unit.live {
            return;
        }
        unit.live = false;
        unit.jobs = None;
        unit.held = 0;
        eprintln!("tune: device `{}` dropped from the run: {why}", unit.name);
        self.spread.dropped(k, &why);
        let mut held: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.unit == k)
            .map(|(id, _)| *id)
            .collect();
        held.sort_unstable();
        for id in held {
            let Some(p) = self.pending.remove(&id) else {
                continue;
            };
            if measuring.contains(&id) {
                self.ready.push_back(Completed {
                    index: p.index,
                    config: p.config,
                    unit: self.units[k].name.clone(),
                    prep: Duration::ZERO,
                    outcome: Err(Failure::Other(format!(
                        "device `{}` was lost while measuring it: {why}",
                        self.units[k].name
                    ))),
                    at: self.simulated.then_some(self.clock),
                });
            } else {
                self.place(id, p.index, p.config, p.again_for);
            }
        }
    }

    /// No more jobs: every device finishes what it is measuring and stops.
    pub(crate) fn close(&mut self) {
        for u in &mut self.units {
            u.jobs = None;
        }
    }
}
