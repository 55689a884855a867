//! Compositions: several kernels and the host code that launches them, tuned as one unit
//! (KTT's tuning manipulator and kernel compositions, as plain Rust).
//!
//! A [`Composition`] declares
//! - its kernels ([`KernelSource`]): every tuning parameter becomes a define of every kernel
//!   (or of the ones [`KernelSource::params`] names), plus fixed and computed defines;
//! - its buffers: [`inputs`](Composition::input) (read by the kernels, restored before
//!   every configuration), [`outputs`](Composition::output) (overwritten by the kernels,
//!   validated), [`buffers`](Composition::buffer) that kernels read and write (restored
//!   before every run; validated when marked `.output()`), [`scratch`](Composition::scratch)
//!   buffers sized by the configuration;
//! - its host code: a closure that gets a [`Run`] and launches the kernels with sizes and
//!   arguments of its choosing, as often as it likes (until one element remains, for a
//!   configuration-dependent number of passes), swaps buffers between iterations, reads and
//!   writes them, and does host work in between; tuning parameters may change what it does
//!   (the algorithm, the number of passes);
//! - a reference: a host closure over the inputs, this composition run with a trusted
//!   configuration, or another composition; and a [`Tolerance`] or comparator.
//!
//! [`CompositionEvaluator`] makes it an [`Evaluator`](crate::Evaluator), so the
//! [`Tuner`](crate::Tuner), its techniques, the log and the database work unchanged:
//! `prepare` compiles every kernel for the configuration (on CPU threads, ahead of the
//! device, with a program cache), `measure` restores the buffers, runs the host code once
//! and validates the outputs, then times warm-ups and repetitions. The cost of a run is the
//! device time of its launches ([`Timing::Device`], the default), or with the host code's
//! own time ([`Timing::DeviceAndHost`], for parameters that move work to the host), or the
//! wall time ([`Timing::Wall`]). A kernel that fails to compile or launch fails the
//! configuration (recorded, and the search goes on).
//!
//! It runs on every [`Backend`]: OpenCL, CUDA, and [`Isolated`](super::isolated::Isolated),
//! where the host code stays in this process and every launch crosses to the worker.
//!
//! KTT's reduction, as a composition (the kernel's source is elided):
//!
//! ```no_run
//! # #[cfg(feature = "opencl")]
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::backend::composition::{Composition, CompositionEvaluator, KernelSource};
//! use tune_runtime::backend::opencl::OpenCl;
//! use tune_runtime::backend::{BufferArg, HostData, Tolerance};
//! use tune_runtime::{Param, SpaceBuilder, Tuner};
//!
//! # const REDUCE: &str = "";
//! let n = 1 << 20;
//! let space = SpaceBuilder::new()
//!     .param(Param::<usize>::values("WG", [64, 128, 256]))
//!     .param(Param::<usize>::values("VW", [1, 2, 4]))
//!     .build()?;
//! let mut c = Composition::<OpenCl>::new();
//! let reduce = c.kernel(KernelSource::new(REDUCE, "reduce"));
//! let x = c.input(BufferArg::random_in::<f32>(n, 1, 0.0, 1.0));
//! // Partial sums, one per work-group, of two passes in turn.
//! let parts = [
//!     c.scratch::<f32>(move |cfg| n / cfg.get::<usize>(0) + 1),
//!     c.scratch::<f32>(move |cfg| n / cfg.get::<usize>(0) + 1),
//! ];
//! let sum = c.buffer(BufferArg::zeros::<f32>(1).output());
//! c.host(move |run| {
//!     let (wg, vw) = (run.value::<usize>("WG")?, run.value::<usize>("VW")?);
//!     // One pass per launch, until one element remains.
//!     let (mut len, mut from, mut pass) = (n, x, 0);
//!     loop {
//!         let groups = len.div_ceil(wg * vw);
//!         let to = if groups == 1 { sum } else { parts[pass % 2] };
//!         run.launch(reduce)
//!             .global([groups * wg])
//!             .local([wg])
//!             .arg(from)
//!             .arg(to)
//!             .scalar(len as u32)
//!             .run()?;
//!         if groups == 1 {
//!             return Ok(());
//!         }
//!         (len, from, pass) = (groups, to, pass + 1);
//!     }
//! });
//! c.reference(move |inputs| {
//!     let s: f64 = inputs.get::<f32>(x)?.iter().map(|&v| f64::from(v)).sum();
//!     Ok(vec![HostData::from(vec![s as f32])])
//! });
//! c.tolerance(Tolerance::Relative(1e-5));
//! let evaluator = CompositionEvaluator::new(OpenCl::first()?, &space, c)?;
//! let result = Tuner::new(space, evaluator).run()?;
//! println!("{}", result.summary());
//! # Ok(()) }
//! # #[cfg(not(feature = "opencl"))]
//! # fn main() {}
//! ```
//!
//! For host code written by hand outside a composition (the body of a `#[tunable]`
//! function), [`Queue`] compiles and launches kernels with the same [`Launch`] builder.

mod evaluator;
mod kernel;
mod launch;
mod queue;
mod run;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use evaluator::{CompositionEvaluator, PreparedComposition};
pub use kernel::{Kernel, KernelSource};
pub use launch::{BufferArgument, Launch};
pub use queue::{Buffer, Queue};
pub use run::Run;

use super::validate::Comparator;
use super::{Backend, BufferArg, ConfigFn, Element, HostData, Tolerance};
use crate::evaluate::Failure;
use crate::space::{Config, Space};
use crate::{Error, Result};

/// A kernel of a [`Composition`], as [`Composition::kernel`] returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId(pub(super) usize);

/// A buffer of a [`Composition`], as [`Composition::input`], [`Composition::buffer`] or
/// [`Composition::scratch`] returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub(super) usize);

/// What the cost of one run of a composition is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Timing {
    /// The sum of its launches' device times (profiling events, CUDA events). Host work and
    /// copies are free: right when every tuning parameter changes only kernels.
    #[default]
    Device,
    /// Its launches at their device time, and everything else the host code does (host
    /// work, copies, waiting) at wall-clock time: right when a parameter moves work between
    /// the device and the host.
    DeviceAndHost,
    /// The wall-clock time of the host code, launches included (with their launch latency).
    Wall,
}

/// How a buffer is kept between runs.
pub(super) enum Role {
    /// Read by the kernels: restored before every configuration.
    Input,
    /// Overwritten by the kernels: restored before every configuration.
    Output,
    /// Written by the kernels: restored before every run.
    Restored,
    /// Sized by the configuration; contents undefined at the start of a run.
    Scratch(ConfigFn<usize>),
}

/// A declared buffer: its role, initial contents (for a scratch buffer, an empty vector of
/// its element type) and whether it is an output.
pub(super) struct Decl {
    pub(super) role: Role,
    pub(super) data: HostData,
    pub(super) output: bool,
}

/// The host code of a composition.
pub type HostCode<B> = Arc<dyn Fn(&mut Run<'_, B>) -> Result<(), Failure> + Send + Sync>;

/// A reference closure of a composition: the expected outputs, in declaration order, from
/// the initial contents of the buffers.
pub type CompositionReferenceFn = Arc<dyn Fn(&Inputs<'_>) -> Result<Vec<HostData>> + Send + Sync>;

pub(super) enum Reference<B: Backend> {
    Closure(CompositionReferenceFn),
    Config(Config),
    Composition(Box<Composition<B>>, Space, Config),
}

/// The initial contents of a composition's buffers, for a reference closure.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    pub(super) decls: &'a [Decl],
}

impl fmt::Debug for Inputs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Inputs({} buffers)", self.decls.len())
    }
}

impl<'a> Inputs<'a> {
    /// The initial contents of buffer `id` (empty for a scratch buffer).
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when `id` is not a buffer of `T` of this composition.
    pub fn get<T: Element>(&self, id: BufferId) -> Result<&'a [T]> {
        let d = self.decls.get(id.0).ok_or_else(|| {
            Error::KernelSpec(format!(
                "buffer {} is not a buffer of this composition",
                id.0
            ))
        })?;
        T::slice(&d.data).ok_or_else(|| {
            Error::KernelSpec(format!(
                "buffer {} holds `{}`, not `{}`",
                id.0,
                d.data.type_name(),
                T::C_NAME
            ))
        })
    }
}

/// Kernels, buffers and host code tuned as one unit; see the [module docs](self).
///
/// Declared like a graph: [`Composition::kernel`] and the buffer methods return ids that the
/// host code launches and passes, so they take `&mut self`; so do the settings, for one
/// style throughout.
pub struct Composition<B: Backend> {
    pub(super) kernels: Vec<KernelSource>,
    pub(super) decls: Vec<Decl>,
    pub(super) host: Option<HostCode<B>>,
    pub(super) reference: Option<Reference<B>>,
    pub(super) tolerance: Tolerance,
    pub(super) comparator: Option<Comparator>,
    pub(super) timing: Timing,
    pub(super) warmups: usize,
    pub(super) repetitions: usize,
    pub(super) time_limit: Option<Duration>,
    pub(super) slow_factor: Option<f64>,
    pub(super) cache_capacity: usize,
}

impl<B: Backend> fmt::Debug for Composition<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Composition")
            .field("kernels", &self.kernels)
            .field("buffers", &self.decls.len())
            .field("timing", &self.timing)
            .field("warmups", &self.warmups)
            .field("repetitions", &self.repetitions)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Default for Composition<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> Composition<B> {
    /// An empty composition: no kernels, no buffers, no host code; device time, one warm-up
    /// and five timed runs (the cost is their median), the default tolerance.
    pub fn new() -> Self {
        Composition {
            kernels: Vec::new(),
            decls: Vec::new(),
            host: None,
            reference: None,
            tolerance: Tolerance::default(),
            comparator: None,
            timing: Timing::default(),
            warmups: 1,
            repetitions: 5,
            time_limit: None,
            slow_factor: None,
            cache_capacity: 1024,
        }
    }

    /// Adds a kernel; the host code launches it by the returned id.
    pub fn kernel(&mut self, source: KernelSource) -> KernelId {
        self.kernels.push(source);
        KernelId(self.kernels.len() - 1)
    }

    fn declare(&mut self, role: Role, data: HostData, output: bool) -> BufferId {
        self.decls.push(Decl { role, data, output });
        BufferId(self.decls.len() - 1)
    }

    /// Adds a buffer the kernels only read (restored before every configuration, in case a
    /// faulty one wrote it). Writing it from the host code makes the next run restore it.
    pub fn input(&mut self, data: BufferArg) -> BufferId {
        self.declare(Role::Input, data.data, data.output)
    }

    /// Adds an output that the kernels overwrite completely: validated, restored to `data`
    /// before every configuration (so a configuration that writes nothing is caught), not
    /// between runs (an image, a matrix).
    pub fn output(&mut self, data: BufferArg) -> BufferId {
        self.declare(Role::Output, data.data, true)
    }

    /// Adds a buffer the kernels read and write (keys sorted in place, an accumulator, a
    /// buffer of an iteration): restored to `data` before every run. Mark the ones to
    /// validate `.output()`.
    pub fn buffer(&mut self, data: BufferArg) -> BufferId {
        self.declare(Role::Restored, data.data, data.output)
    }

    /// Adds a buffer of `len(config)` elements of `T` for intermediate results (per-group
    /// partial sums, histograms): allocated as large as the largest configuration so far
    /// needed; its contents are undefined at the start of a run.
    pub fn scratch<T: Element>(
        &mut self,
        len: impl Fn(&Config) -> usize + Send + Sync + 'static,
    ) -> BufferId {
        self.declare(Role::Scratch(Arc::new(len)), T::wrap(Vec::new()), false)
    }

    /// The host code: launches the kernels through the [`Run`] it gets. It runs once to
    /// validate a configuration, then for the warm-ups and timed repetitions.
    pub fn host(
        &mut self,
        f: impl Fn(&mut Run<'_, B>) -> Result<(), Failure> + Send + Sync + 'static,
    ) -> &mut Self {
        self.host = Some(Arc::new(f));
        self
    }

    /// Validates every configuration against the outputs this closure computes on the host
    /// from the buffers' initial contents: one [`HostData`] per output, in declaration order.
    pub fn reference(
        &mut self,
        f: impl Fn(&Inputs<'_>) -> Result<Vec<HostData>> + Send + Sync + 'static,
    ) -> &mut Self {
        self.reference = Some(Reference::Closure(Arc::new(f)));
        self
    }

    /// Validates every configuration against this composition run once with `config`, a
    /// configuration known to be right.
    pub fn reference_config(&mut self, config: Config) -> &mut Self {
        self.reference = Some(Reference::Config(config));
        self
    }

    /// Validates every configuration against `other` (a simple, obviously right
    /// composition with the same outputs in the same order) run once with `config` of its
    /// `space`.
    pub fn reference_composition(
        &mut self,
        other: Composition<B>,
        space: Space,
        config: Config,
    ) -> &mut Self {
        self.reference = Some(Reference::Composition(Box::new(other), space, config));
        self
    }

    /// How close outputs must be (default: per element, 1e-4 absolute + 1e-4 relative).
    pub fn tolerance(&mut self, tolerance: Tolerance) -> &mut Self {
        self.tolerance = tolerance;
        self
    }

    /// A custom comparison of each output with its reference, replacing the tolerance.
    pub fn comparator(
        &mut self,
        f: impl Fn(&HostData, &HostData) -> Result<(), String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.comparator = Some(Arc::new(f));
        self
    }

    /// What a run's cost is (default [`Timing::Device`]).
    pub fn timing(&mut self, timing: Timing) -> &mut Self {
        self.timing = timing;
        self
    }

    /// Untimed runs after the validation run (default 1).
    pub fn warmups(&mut self, n: usize) -> &mut Self {
        self.warmups = n;
        self
    }

    /// Timed runs; the cost is their median (default 5, at least 1).
    pub fn repetitions(&mut self, n: usize) -> &mut Self {
        self.repetitions = n.max(1);
        self
    }

    /// A configuration whose validation run costs more than `limit` is recorded as
    /// [`Failure::Timeout`] without further runs.
    pub fn time_limit(&mut self, limit: Duration) -> &mut Self {
        self.time_limit = Some(limit);
        self
    }

    /// A configuration whose validation run costs more than `factor` times the best median
    /// so far is recorded as valid with that run's cost, without warm-ups and repetitions
    /// ([`Measured::stopped_early`](crate::Measured::stopped_early)).
    pub fn slower_than_best(&mut self, factor: f64) -> &mut Self {
        self.slow_factor = Some(factor.max(1.0));
        self
    }

    /// How many compiled kernels the program cache keeps (default 1024; 0 turns it off).
    pub fn cache_capacity(&mut self, n: usize) -> &mut Self {
        self.cache_capacity = n;
        self
    }
}
