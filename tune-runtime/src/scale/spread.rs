//! What the tuner's loop and a set of devices exchange: jobs to measure, and what became of
//! them. Not public API: the tuner reaches a set of devices through
//! [`Evaluator::spread`](crate::Evaluator::spread), and the types in that hook's signature
//! are public only for that.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use crate::evaluate::{Failure, Measured};
use crate::space::{Config, Space};

/// What measuring one configuration gave: the checked measurement and how long measuring
/// took, or why there is no cost.
pub type Outcome<C> = Result<(Measured<C>, Duration), Failure>;

/// One configuration handed to a device.
#[derive(Clone, Debug)]
pub struct Job {
    /// Unique within a run: ties the outcome to the hand-out.
    pub id: u64,
    /// The configuration's index in the space.
    pub index: u128,
    /// The configuration.
    pub config: Config,
}

/// A measured job.
#[derive(Debug)]
pub struct Done<C> {
    /// The job's id.
    pub id: u64,
    /// The device (its position in [`Spread::units`]) that measured it.
    pub unit: usize,
    /// Time spent preparing (compiling).
    pub prep: Duration,
    /// The outcome.
    pub outcome: Outcome<C>,
}

/// What a set of devices reports while it serves jobs.
#[derive(Debug)]
pub enum Event<C> {
    /// A device began to measure a job (it was prepared).
    Started {
        /// The device.
        unit: usize,
        /// The job's id.
        id: u64,
    },
    /// A job was measured.
    Done(Done<C>),
    /// A device is gone (an MPI rank stopped answering): the jobs it held are handed to the
    /// others, but for those it was measuring, which are lost.
    Gone {
        /// The device.
        unit: usize,
        /// Why, for the message.
        why: String,
        /// The jobs it was measuring when it went.
        measuring: Vec<u64>,
    },
}

/// Several devices that measure at once: what [`crate::scale::Devices`] (and, under MPI,
/// the devices of every rank) offers the tuner's loop.
#[doc(hidden)]
pub trait Spread<C>: Sync {
    /// The devices' names, as recorded in [`crate::results::Record::measured_on`].
    fn units(&self) -> Vec<Arc<str>>;
    /// How many jobs one device holds at once: the one it measures and those it prepares
    /// ahead.
    fn depth(&self) -> usize;
    /// After how many failures in a row that another device contradicted (it measured the
    /// same configuration) a device is dropped.
    fn max_strikes(&self) -> usize;
    /// Serves every device until its job channel closes: each job is prepared (ahead) and
    /// measured on the device whose channel it came through, and its outcome sent to
    /// `events`. Jobs that arrive once `stop` is set are passed over.
    fn serve(
        &self,
        space: &Space,
        jobs: Vec<Receiver<Job>>,
        events: Sender<Event<C>>,
        stop: &AtomicBool,
    );
    /// Whether the devices replay recorded data (simulation): jobs are then evaluated at
    /// once by [`Spread::evaluate_now`] and completed in the order of a simulated clock.
    fn simulated(&self, space: &Space) -> bool;
    /// Prepares and measures on device `unit` now, on the calling thread; with the time it
    /// charges to the simulated clock.
    fn evaluate_now(
        &self,
        unit: usize,
        space: &Space,
        config: &Config,
    ) -> (Duration, Outcome<C>, Duration);
    /// Takes note that device `unit` was dropped from the run, and why.
    fn dropped(&self, unit: usize, why: &str);
    /// The device that measures alone after the search (the finalists, the baselines).
    fn serial_unit(&self) -> Option<Arc<str>>;
}
