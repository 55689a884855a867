//! Evaluators: how a configuration is turned into a cost.
//!
//! Evaluation has two steps so that the tuner can keep the CPU and the device busy at once:
//! [`Evaluator::prepare`] (compile, build inputs) runs for upcoming candidates in parallel on
//! CPU threads, while [`Evaluator::measure`] runs one configuration at a time on the device.
//! Every failure is typed ([`Failure`]) and recorded against its configuration; the search
//! goes on.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cost::Cost;
use crate::space::{Config, Space};

mod cause;
pub use cause::Cause;

/// Why a configuration has no cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Failure {
    /// Rejected before running: breaks a constraint or the launch geometry is unusable
    /// (a size of zero, a local size that does not divide the global size).
    Invalid(String),
    /// Rejected before running by a device limit (before compiling) or a property of the
    /// compiled kernel (after compiling): registers, spills, local memory, work-group size,
    /// occupancy. Recorded as `invalid: CAUSE`, counted by cause in summaries; its
    /// [`kind`](Failure::kind) is `invalid`, as for [`Failure::Invalid`].
    Rejected {
        /// What rejected it.
        cause: Cause,
        /// The numbers: what the configuration needs and what the limit is.
        detail: String,
    },
    /// The kernel or program did not compile; the build log.
    Compile(String),
    /// Launch or run-time error.
    Launch(String),
    /// The output did not match the reference.
    WrongResult(String),
    /// The run exceeded its time limit and was stopped.
    Timeout(Duration),
    /// The evaluator yielded no usable cost: none was found in its output, or the cost (or
    /// a sample time) is NaN, infinite, or a negative time. Such a value can neither rank
    /// configurations nor be recorded.
    InvalidCost(String),
    /// Anything else the evaluator reports.
    Other(String),
}

impl Failure {
    /// A short name of the failure kind, as recorded: `invalid`, `compile`, `launch`,
    /// `wrong_result`, `timeout`, `invalid_cost` or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Invalid(_) | Failure::Rejected { .. } => "invalid",
            Failure::Compile(_) => "compile",
            Failure::Launch(_) => "launch",
            Failure::WrongResult(_) => "wrong_result",
            Failure::Timeout(_) => "timeout",
            Failure::InvalidCost(_) => "invalid_cost",
            Failure::Other(_) => "other",
        }
    }

    /// A rejection for `cause`.
    pub fn rejected(cause: Cause, detail: impl Into<String>) -> Failure {
        Failure::Rejected {
            cause,
            detail: detail.into(),
        }
    }

    /// Whether it was rejected before running: [`Failure::Invalid`] or
    /// [`Failure::Rejected`].
    pub fn is_invalid(&self) -> bool {
        matches!(self, Failure::Invalid(_) | Failure::Rejected { .. })
    }

    /// The cause of a [`Failure::Rejected`].
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            Failure::Rejected { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// The status recorded for it: [`kind`](Failure::kind), or `invalid: CAUSE` for a
    /// rejection.
    pub fn status(&self) -> String {
        match self {
            Failure::Rejected { cause, .. } => cause.status(),
            other => other.kind().to_string(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Invalid(s) => write!(f, "invalid configuration: {s}"),
            Failure::Rejected { cause, detail } => {
                write!(f, "invalid configuration ({cause}): {detail}")
            }
            Failure::Compile(s) => write!(f, "compile error: {s}"),
            Failure::Launch(s) => write!(f, "launch error: {s}"),
            Failure::WrongResult(s) => write!(f, "wrong result: {s}"),
            Failure::Timeout(d) => write!(f, "timed out after {d:?}"),
            Failure::InvalidCost(s) => write!(f, "invalid cost: {s}"),
            Failure::Other(s) => f.write_str(s),
        }
    }
}

/// A successful measurement.
#[derive(Clone, Debug)]
pub struct Measured<C> {
    /// The cost the tuner ranks by.
    pub cost: C,
    /// Every repetition's time in seconds (may be empty for costs that are not times).
    pub samples: Vec<f64>,
    /// Time spent validating the output, if the evaluator validated it.
    pub validation: Option<Duration>,
    /// Whether measuring stopped early because the configuration was far slower than the
    /// best so far; `cost` is then what was measured until it stopped. Such a configuration
    /// is valid and the techniques see it as slow, but it is never the best while another
    /// configuration was measured in full.
    pub stopped_early: bool,
}

impl<C> Measured<C> {
    /// A measurement with only a cost.
    pub fn new(cost: C) -> Self {
        Measured {
            cost,
            samples: Vec::new(),
            validation: None,
            stopped_early: false,
        }
    }
}

impl Measured<Duration> {
    /// Timed samples: their median is the cost (of an even count, the mean of the middle
    /// two), the samples are kept in seconds.
    pub fn from_samples(samples: &[Duration], validation: Option<Duration>) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let cost = match sorted.len() {
            0 => Duration::ZERO,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
        };
        Measured {
            cost,
            samples: samples.iter().map(Duration::as_secs_f64).collect(),
            validation,
            stopped_early: false,
        }
    }

    /// A configuration stopped after its first run, far slower than the best so far: that
    /// run is its cost, so that techniques learn "slow", not "failed".
    pub fn stopped_after(first: Duration, validation: Option<Duration>) -> Self {
        Measured {
            cost: first,
            samples: vec![first.as_secs_f64()],
            validation,
            stopped_early: true,
        }
    }
}

/// Turns configurations into costs. Implemented by the closure, process, simulation,
/// OpenCL and CUDA evaluators, and by users.
pub trait Evaluator: Send + Sync {
    /// What a measurement yields.
    type Cost: Cost;
    /// The result of preparation (a compiled kernel, a built binary), handed to `measure`.
    type Prepared: Send;

    /// Prepares a configuration. Called from several CPU threads at once, ahead of
    /// measurement.
    fn prepare(&self, space: &Space, config: &Config) -> Result<Self::Prepared, Failure>;

    /// Measures a prepared configuration. The tuner calls it for one configuration at a time,
    /// and checks what it returns with [`measure::admit`](crate::measure::admit): a cost
    /// that is NaN or infinite becomes [`Failure::InvalidCost`].
    fn measure(
        &self,
        space: &Space,
        config: &Config,
        prepared: Self::Prepared,
    ) -> Result<Measured<Self::Cost>, Failure>;

    /// In simulation mode, the time this configuration's evaluation took when it was
    /// recorded (compile + verification + benchmark). When it is `Some`, the tuner charges it
    /// to a simulated clock that the duration-based abort conditions read, instead of wall
    /// time. Real evaluators return `None` (the default).
    fn charged_time(&self, _space: &Space, _config: &Config) -> Option<Duration> {
        None
    }

    /// Why the device can no longer measure in this process, if it cannot (a CUDA context
    /// poisoned by a sticky error that the driver will not let the process replace). The
    /// tuner checks it after a failed evaluation and then stops the run with
    /// [`Error::DeviceLost`](crate::Error::DeviceLost). The default: never lost.
    fn lost(&self) -> Option<String> {
        None
    }

    /// Names the device measured on, for the results database (e.g. `"NVIDIA H100 (CUDA)"`).
    fn device(&self) -> String {
        "cpu".into()
    }

    /// Several devices that measure at once ([`crate::scale::Devices`]); the tuner then
    /// hands configurations to whichever is free. The default, `None`, measures on one.
    #[doc(hidden)]
    fn spread(&self) -> Option<&dyn crate::scale::Spread<Self::Cost>> {
        None
    }
}

/// A borrowed evaluator evaluates too (so it can be inspected after a run).
impl<E: Evaluator> Evaluator for &E {
    type Cost = E::Cost;
    type Prepared = E::Prepared;
    fn prepare(&self, s: &Space, c: &Config) -> Result<E::Prepared, Failure> {
        (**self).prepare(s, c)
    }
    fn measure(&self, s: &Space, c: &Config, p: E::Prepared) -> Result<Measured<E::Cost>, Failure> {
        (**self).measure(s, c, p)
    }
    fn lost(&self) -> Option<String> {
        (**self).lost()
    }
    fn charged_time(&self, s: &Space, c: &Config) -> Option<Duration> {
        (**self).charged_time(s, c)
    }
    fn device(&self) -> String {
        (**self).device()
    }
    fn spread(&self) -> Option<&dyn crate::scale::Spread<E::Cost>> {
        (**self).spread()
    }
}

pub mod closure;
#[cfg(unix)]
pub mod process;
