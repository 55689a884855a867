//! Scale-out: one tuning run on every device of a machine, and across machines through MPI.
//!
//! [`Devices`] is a set of evaluators, one per device, of the same model: given to a
//! [`Tuner`](crate::Tuner) as its evaluator, it measures on all of them at once. The
//! technique is asked for as many configurations as the devices take; each goes to the
//! least loaded device, which prepares (compiles) the next one while it measures; every
//! outcome is recorded (with the device in
//! [`Record::measured_on`](crate::results::Record::measured_on)) and told to the technique
//! as soon as it comes back. The finalists are then measured again on one device, so that
//! they are compared on the same hardware. A log resumes as in a run on one device.
//!
//! ```
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::abort::Evaluations;
//! use tune_runtime::evaluate::closure::Closure;
//! use tune_runtime::scale::Devices;
//! use tune_runtime::{Config, Failure, Param, SpaceBuilder, Tuner};
//!
//! let space = SpaceBuilder::new()
//!     .param(Param::<u32>::range("X", 0..64))
//!     .build()?;
//! // Four "devices": closures that each measure one configuration at a time.
//! let device = |_k| Closure::new(|c: &Config| -> Result<f64, Failure> {
//!     std::thread::sleep(std::time::Duration::from_millis(1));
//!     Ok((c.get::<u32>(0) as f64 - 42.0).abs())
//! });
//! let devices = Devices::new((0..4).map(device))?;
//! let result = Tuner::new(space, &devices)
//!     .abort(Evaluations(64))
//!     .progress(false)
//!     .run()?;
//! assert_eq!(result.best_values()[0].1.to_string(), "42");
//! // Every record says which device measured it.
//! assert!(result.records.iter().all(|r| r.measured_on.is_some()));
//! # Ok(()) }
//! ```
//!
//! The kernel devices of a machine, one isolated worker process each (so that a device
//! that crashes or hangs takes down only its worker, which is replaced), are chosen with
//! [`pick`] (`pick::cuda`, `pick::opencl`, with their backends' features): by a list, or every device of a model
//! ([`Pick`]); [`Devices::kernels`] gives each a
//! [`KernelEvaluator`](crate::backend::KernelEvaluator) of the same kernel spec.
//!
//! A failure that a device may cause rather than the configuration (a launch error, an
//! error of the evaluator) is measured again on another device; a device whose failures
//! other devices contradict [`Devices::max_strikes`] times in a row is dropped from the run,
//! with a message on standard error ([`Devices::dropped_devices`]).
//!
//! In simulation ([`crate::simulate`]), a set of simulated evaluators is a set of clocks:
//! each configuration takes the time its recording charges on the device it goes to, and
//! outcomes come back in the order of their simulated completion, so that runs with 1, 8 or
//! 64 devices are compared at equal simulated wall time.

mod devices;
mod dispatch;
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub mod mpi;
#[cfg(unix)]
#[cfg_attr(docsrs, doc(cfg(unix)))]
pub mod pick;
mod spread;

pub use devices::{Devices, Dropped};
pub(crate) use dispatch::Dispatch;
#[cfg(unix)]
pub use pick::Pick;
#[doc(hidden)]
pub use spread::{Done, Event, Job, Outcome, Spread};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
