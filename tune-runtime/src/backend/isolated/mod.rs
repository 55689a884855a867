//! A process-isolated backend: [`Isolated`] runs a real backend (OpenCL or CUDA) in a child
//! worker process and replaces the worker when it dies, hangs or reports its device unusable.
//!
//! Use it when kernels of the search space may
//! - hang (an endless loop for some parameters): a launch that runs past
//!   [`Isolated::hang_timeout`] is recorded as [`Failure::Timeout`](crate::Failure::Timeout) and the worker is killed;
//! - crash the process (an out-of-bounds write on a CPU OpenCL device segfaults the program
//!   that runs it): the launch is a [`Failure::Launch`](crate::Failure::Launch) that names the signal;
//! - poison the CUDA context (`CUDA_ERROR_ILLEGAL_ADDRESS` and the other "sticky" errors leave
//!   the whole process unable to use the GPU, even through a new context): the launch is the
//!   backend's own [`Failure::Launch`](crate::Failure::Launch), and the worker exits after reporting it.
//!
//! In each case the next request starts a fresh worker on the same device and the tuning run
//! goes on. [`Isolated`] implements [`Backend`](crate::backend::Backend), so a
//! [`KernelEvaluator<Isolated>`](super::KernelEvaluator) evaluates a
//! [`KernelSpec`](super::KernelSpec) unchanged: sizes, references and comparators stay
//! closures in the parent; only kernel sources, buffer contents and launch geometry cross the
//! process boundary. The parent never touches the device itself.
//!
//! Costs: one process start (and the recompilation of the kernels still in use) per failure,
//! and a round trip over a Unix socket per operation (tens of microseconds; nothing next to a
//! kernel's compilation). Buffer contents are copied through the socket once: the worker keeps
//! the contents it was sent (up to 2 GiB, oldest dropped first), so the evaluator's restore of
//! unchanged inputs before every measurement sends only a hash.
//!
//! ```no_run
//! # #[cfg(feature = "opencl")]
//! # fn main() -> tune_runtime::Result<()> {
//! use std::time::Duration;
//! use tune_runtime::backend::isolated::Isolated;
//! use tune_runtime::backend::{BufferArg, KernelEvaluator, KernelSpec};
//! use tune_runtime::{Param, SpaceBuilder, Tuner};
//!
//! let n = 1 << 20;
//! let space = SpaceBuilder::new()
//!     .param(Param::<usize>::values("LS", [32, 64, 128, 256]))
//!     .build()?;
//! let spec = KernelSpec::new("__kernel void copy(/* .. */) {}", "copy")
//!     .global(move |_| [n])
//!     .local(|c| [c.get::<usize>(0)])
//!     .buffer(BufferArg::random::<f32>(n, 1))
//!     .buffer(BufferArg::zeros::<f32>(n).output())
//!     .reference(|a| Ok(vec![a.buffer::<f32>(0)?.to_vec().into()]));
//! // The first OpenCL device, in a worker process; a launch may take 10 s at most.
//! let device = Isolated::opencl("")?.hang_timeout(Duration::from_secs(10));
//! let evaluator = KernelEvaluator::new(device, &space, spec)?;
//! let result = Tuner::new(space, evaluator).run()?;
//! println!("{}", result.summary());
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "opencl"))]
//! # fn main() {}
//! ```
//!
//! # How the worker starts
//! The parent runs its own executable again (`std::env::current_exe`) with the environment
//! variable `TUNE_ISOLATED_WORKER` naming a Unix socket, standard input and output closed,
//! standard error shared. A static constructor of this crate (an ELF `.init_array` entry)
//! sees the variable before `main` runs, connects, serves the backend and exits: examples,
//! benchmarks and test binaries need no change to their `main`. The socket accepts only the
//! process the parent started (its process id is checked with `SO_PEERCRED`).
//!
//! The constructor's limits:
//! - Linux only (ELF `.init_array` and `SO_PEERCRED`); elsewhere [`Isolated::new`] returns
//!   [`Error::BackendUnavailable`](crate::Error::BackendUnavailable).
//! - It runs before `main`, in the order the linker put the program's static constructors:
//!   those before it run in the worker too, those after it never do, and `main` never does.
//!   It starts threads, opens a socket and removes `TUNE_ISOLATED_WORKER` from the
//!   environment there; that is sound while no other static constructor has started a thread
//!   that reads the environment (tune and its dependencies start none).
//! - The worker is the current executable: a library loaded by another program (a Python
//!   extension) would start `python` instead.
//!
//! Where it cannot serve, start workers with [`Isolated::with_worker_main`], which runs a
//! program of your choice whose `main` calls [`worker_main`] first; the constructor then
//! leaves the process alone.

mod backend;
#[cfg(all(target_os = "linux", feature = "opencl"))]
mod farm;
mod process;
mod shared;
#[cfg(target_os = "linux")]
mod spawn;
mod wire;
mod worker;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;

use std::sync::{Mutex, MutexGuard, PoisonError};

pub use self::backend::{Isolated, IsolatedBuffer, IsolatedKernel};
#[cfg(all(target_os = "linux", feature = "opencl"))]
pub(crate) use self::farm::BuildFarm;
use self::wire::TargetSpec;
pub use self::worker::worker_main;

/// The environment variable that makes a program a worker (the path of the parent's socket).
const WORKER_ENV: &str = "TUNE_ISOLATED_WORKER";

/// The environment variable that tells the static constructor to leave a worker to
/// [`worker_main`], with the value [`ENTRY_MAIN`].
const ENTRY_ENV: &str = "TUNE_ISOLATED_ENTRY";
const ENTRY_MAIN: &str = "main";

/// Most bytes of written contents a worker keeps to avoid resending them.
const CACHE_BYTES: u64 = 2 << 30;

/// Most content hashes the parent remembers per worker (beyond, it forgets them all).
const MAX_KNOWN_CONTENTS: usize = 1 << 16;

/// The backend that an [`Isolated`] worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// An OpenCL device, by a query of
    /// [`OpenCl::select`](crate::backend::opencl::OpenCl::select) (empty: the first device).
    #[cfg(feature = "opencl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "opencl")))]
    OpenCl(String),
    /// A CUDA device, by index (`"0"`) or by (part of) its name.
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    Cuda(String),
}

impl Target {
    fn spec(&self) -> TargetSpec {
        match *self {
            #[cfg(feature = "opencl")]
            Target::OpenCl(ref q) => TargetSpec::OpenCl(q.clone()),
            #[cfg(feature = "cuda")]
            Target::Cuda(ref s) => TargetSpec::Cuda(s.clone()),
        }
    }
}

/// A mutex's guard, also after a panic elsewhere (the data stays consistent: no code here
/// panics while holding one).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
