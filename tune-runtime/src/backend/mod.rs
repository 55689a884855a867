//! Kernel backends: one [`Backend`] trait (device, compile, launch, timer), implemented for
//! OpenCL (`opencl` feature) and CUDA (`cuda` feature), and the backend-independent
//! [`KernelEvaluator`] that turns a [`KernelSpec`] into an [`Evaluator`](crate::Evaluator).
//!
//! A [`KernelSpec`] says what to run for a configuration: the kernel source and name, the
//! tuning parameters (every one becomes a preprocessor define `-DNAME=value`), the global and
//! local sizes as expressions of the configuration, the arguments, how to time and how to
//! validate. The evaluator
//! - rejects configurations over the device's limits before compiling them, and those whose
//!   compiled kernel breaks its own limits or the spec's kernel checks (registers, spills,
//!   occupancy: [`KernelSpec::max_registers`] and the like) right after compiling, each
//!   with its cause ([`Failure::Rejected`](crate::Failure::Rejected), recorded as
//!   `invalid: registers` and so on),
//! - compiles in [`Evaluator::prepare`](crate::Evaluator::prepare) (called from several CPU threads at once) with a
//!   program cache keyed by source, defines, options, device and driver version,
//! - in [`Evaluator::measure`](crate::Evaluator::measure) restores every buffer to its initial contents, launches once and
//!   validates the output, then runs the warm-ups and the timed repetitions; the cost is the
//!   median device time, and every repetition is kept in [`Measured::samples`](crate::Measured::samples).
//!
//! ```no_run
//! # #[cfg(feature = "opencl")]
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::backend::{BufferArg, KernelEvaluator, KernelSpec};
//! use tune_runtime::backend::opencl::OpenCl;
//! use tune_runtime::{Param, SpaceBuilder};
//!
//! let n = 1 << 20;
//! let space = SpaceBuilder::new()
//!     .param(Param::range("WPT", 1..=n).divides(&[], move |_| n))
//!     .build()?;
//! const WPT: usize = 0;
//! let spec = KernelSpec::new("__kernel void copy(/* .. */) {}", "copy")
//!     .global(move |c| [n / c.get::<usize>(WPT)])
//!     .local(|_| [64])
//!     .scalar(n as i32)
//!     .buffer(BufferArg::random::<f32>(n, 1))
//!     .buffer(BufferArg::zeros::<f32>(n).output());
//! let evaluator = KernelEvaluator::new(OpenCl::first()?, &space, spec)?;
//! # let _ = evaluator;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "opencl"))]
//! # fn main() {}
//! ```
//!
//! The module's pieces, one job each: [`Backend`] and what it exchanges with the evaluator
//! (`device`), typed host data and buffers (`host`), the [`KernelSpec`] builder (`spec`),
//! tolerances and references (`validate`), the [`KernelEvaluator`] (`evaluator`) and the
//! conformance suite every backend passes (`conformance`, [`testgen_backend!`](crate::testgen_backend)).
//! Several kernels and the host code launching them are tuned as one unit with
//! [`composition`].

#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub mod cuda;
#[cfg(unix)]
#[cfg_attr(docsrs, doc(cfg(unix)))]
pub mod isolated;
#[cfg(feature = "opencl")]
#[cfg_attr(docsrs, doc(cfg(feature = "opencl")))]
pub mod opencl;

mod checks;
mod compile_slots;
pub mod composition;
pub mod conformance;
mod device;
pub(crate) mod driver_env;
mod evaluator;
mod host;
mod overruns;
mod spec;
mod validate;

pub use checks::{KernelCheckFn, KernelProps, AFTER_COMPILING};
pub(crate) use device::{check_fits, Transfer};
pub use device::{
    Backend, CompileRequest, DeviceInfo, KernelLimits, LaunchArg, LaunchDims, Occupancy,
    OccupancyLimit,
};
pub use evaluator::{KernelEvaluator, PreparedKernel};
pub use host::{BufferArg, Element, HostArgs, HostData};
pub use spec::{config_defines, ConfigFn, KernelSpec};
pub use validate::{Comparator, ReferenceFn, ReferenceKernel, Tolerance};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests_validate;
