//! [`KernelSpec`]: what to run for a configuration (source, defines, sizes, arguments) and
//! how to time and validate it, as a consuming builder.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::checks::{KernelCheckFn, KernelChecks, KernelProps};
use super::host::{BufferArg, Element, HostArgs, HostData};
use super::validate::{Comparator, Reference, ReferenceKernel, Tolerance};
use crate::param::Kind;
use crate::space::{Config, Space};
use crate::Result;

/// A function of the configuration.
pub type ConfigFn<T> = Arc<dyn Fn(&Config) -> T + Send + Sync>;

pub(super) enum ArgSpec {
    Buffer(BufferArg),
    Scalar(ConfigFn<HostData>, Option<HostData>),
    Local(usize, ConfigFn<usize>),
}

impl fmt::Debug for ArgSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgSpec::Buffer(b) => write!(
                f,
                "Buffer({} x {}{})",
                b.data.len(),
                b.data.type_name(),
                if b.output { ", output" } else { "" }
            ),
            ArgSpec::Scalar(_, Some(v)) => write!(f, "Scalar({v:?})"),
            ArgSpec::Scalar(_, None) => f.write_str("Scalar(<expression>)"),
            ArgSpec::Local(b, _) => write!(f, "Local({b}-byte elements)"),
        }
    }
}

pub(super) enum Sizes {
    Global(ConfigFn<Vec<usize>>),
    Grid(ConfigFn<Vec<usize>>),
}

/// Everything the evaluator needs to run one configuration of a kernel: a consuming builder.
///
/// Sizes and argument values are closures of the [`Config`]; read parameters with
/// `c.get::<T>(slot)` where `slot` is the parameter's declaration index.
#[must_use]
pub struct KernelSpec {
    pub(super) source: String,
    pub(super) name: String,
    pub(super) defines: Vec<(String, String)>,
    pub(super) options: Vec<String>,
    pub(super) sizes: Option<Sizes>,
    pub(super) local: Option<ConfigFn<Vec<usize>>>,
    pub(super) round_up: bool,
    pub(super) dynamic_local: Option<ConfigFn<usize>>,
    pub(super) static_local: Option<ConfigFn<usize>>,
    pub(super) args: Vec<ArgSpec>,
    pub(super) constants: Vec<(String, BufferArg)>,
    pub(super) warmups: usize,
    pub(super) repetitions: usize,
    pub(super) launches_per_sample: usize,
    pub(super) reference: Option<Reference>,
    pub(super) tolerance: Tolerance,
    pub(super) comparator: Option<Comparator>,
    pub(super) cache_capacity: usize,
    pub(super) time_limit: Option<Duration>,
    pub(super) slow_factor: Option<f64>,
    pub(super) compile_limit: Option<Duration>,
    pub(super) checks: KernelChecks,
}

impl fmt::Debug for KernelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("KernelSpec");
        d.field("name", &self.name)
            .field("defines", &self.defines)
            .field("options", &self.options)
            .field("args", &self.args);
        if !self.constants.is_empty() {
            let names: Vec<&String> = self.constants.iter().map(|(n, _)| n).collect();
            d.field("constants", &names);
        }
        d.field("warmups", &self.warmups)
            .field("repetitions", &self.repetitions)
            .field("launches_per_sample", &self.launches_per_sample)
            .field("tolerance", &self.tolerance)
            .field("checks", &self.checks)
            .finish_non_exhaustive()
    }
}

impl KernelSpec {
    /// Kernel `name` in `source` (embed files of `kernels/` with `include_str!`).
    pub fn new(source: impl Into<String>, name: impl Into<String>) -> Self {
        KernelSpec {
            source: source.into(),
            name: name.into(),
            defines: Vec::new(),
            options: Vec::new(),
            sizes: None,
            local: None,
            round_up: false,
            dynamic_local: None,
            static_local: None,
            args: Vec::new(),
            constants: Vec::new(),
            warmups: 1,
            repetitions: 5,
            launches_per_sample: 1,
            reference: None,
            tolerance: Tolerance::default(),
            comparator: None,
            cache_capacity: 256,
            time_limit: None,
            slow_factor: None,
            compile_limit: None,
            checks: KernelChecks::default(),
        }
    }
    /// Rejects a compiled configuration whose kernel uses more than `n` registers per
    /// work-item (`invalid: registers`), before it runs. Backends that cannot tell the
    /// registers (OpenCL without a vendor extension) skip the check. Independently, a
    /// work-group that needs more registers than the device has per work-group is always
    /// rejected where the registers are known.
    pub fn max_registers(mut self, n: usize) -> Self {
        self.checks.max_registers = Some(n);
        self
    }
    /// Rejects a compiled configuration with more than `bytes` of private memory per
    /// work-item (`invalid: spills`): CUDA's local memory (spilled registers, stack),
    /// OpenCL's `CL_KERNEL_PRIVATE_MEM_SIZE`. `0` rejects every spill.
    pub fn max_spill_bytes(mut self, bytes: usize) -> Self {
        self.checks.max_spill_bytes = Some(bytes);
        self
    }
    /// Rejects a compiled configuration of which fewer than `work_groups` work-groups fit
    /// on one compute unit at once (`invalid: occupancy`; BEAST asks for 2): CUDA's
    /// occupancy calculator, else an estimate from the device's and the kernel's registers,
    /// local memory and work-item limits ([`Occupancy::estimate`](super::Occupancy::estimate)).
    /// Skipped where nothing is known.
    pub fn min_occupancy(mut self, work_groups: u32) -> Self {
        self.checks.min_occupancy = Some(work_groups);
        self
    }
    /// Rejects a work-group size that is not a multiple of the compiled kernel's preferred
    /// multiple (`CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE`, the warp size on CUDA):
    /// `invalid: preferred_multiple`.
    pub fn whole_warps(mut self, yes: bool) -> Self {
        self.checks.preferred_multiple = yes;
        self
    }
    /// A check of the compiled kernel of the user's: `Err(reason)` rejects the
    /// configuration before it runs, recorded as `invalid: NAME`.
    pub fn kernel_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&Config, &KernelProps<'_>) -> std::result::Result<(), String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        let f: KernelCheckFn = Arc::new(check);
        self.checks.custom.push((name.into(), f));
        self
    }
    /// A fixed define besides the tuning parameters (`-DNAME=value`).
    pub fn define(mut self, name: impl Into<String>, value: impl fmt::Display) -> Self {
        self.defines.push((name.into(), value.to_string()));
        self
    }
    /// An extra compiler option, e.g. `-cl-mad-enable`.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }
    /// The global size (total work-items per dimension, 1 to 3 dimensions) as an expression of
    /// the configuration.
    pub fn global<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.sizes = Some(Sizes::Global(sizes(f)));
        self
    }
    /// The number of work-groups (CUDA's grid) per dimension, instead of [`KernelSpec::global`]:
    /// the global size is `grid * local`.
    pub fn grid<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.sizes = Some(Sizes::Grid(sizes(f)));
        self
    }
    /// The local size (work-group, CUDA's block) as an expression of the configuration. Without
    /// it the driver chooses (OpenCL only).
    pub fn local<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.local = Some(sizes(f));
        self
    }
    /// Rounds the global size up to a multiple of the local size (the kernel must then check
    /// its bounds). Otherwise a global size that the local size does not divide is invalid.
    pub fn round_up_global(mut self, yes: bool) -> Self {
        self.round_up = yes;
        self
    }
    /// Dynamic local (shared) memory per work-group in bytes (CUDA's dynamic shared memory).
    pub fn dynamic_local_memory(
        mut self,
        f: impl Fn(&Config) -> usize + Send + Sync + 'static,
    ) -> Self {
        self.dynamic_local = Some(Arc::new(f));
        self
    }
    /// The local memory the kernel declares itself (`__local` arrays sized by parameters), in
    /// bytes: checked against the device limit before compilation.
    pub fn static_local_memory(
        mut self,
        f: impl Fn(&Config) -> usize + Send + Sync + 'static,
    ) -> Self {
        self.static_local = Some(Arc::new(f));
        self
    }
    /// Fills the module-scope `__constant__` array `name` with `data` before the kernel
    /// runs (CUDA: Kernel Tuner's `cmem_args`). The data must fit the array; a backend
    /// without such symbols (OpenCL, where constant memory is a kernel argument) fails the
    /// configuration saying so.
    pub fn constant(mut self, name: impl Into<String>, data: BufferArg) -> Self {
        self.constants.push((name.into(), data));
        self
    }
    /// The next argument: a buffer.
    pub fn buffer(mut self, buffer: BufferArg) -> Self {
        self.args.push(ArgSpec::Buffer(buffer));
        self
    }
    /// The next argument: a scalar.
    pub fn scalar<T: Element>(mut self, value: T) -> Self {
        let d = T::wrap(vec![value]);
        let d2 = d.clone();
        self.args
            .push(ArgSpec::Scalar(Arc::new(move |_| d2.clone()), Some(d)));
        self
    }
    /// The next argument: a scalar computed from the configuration.
    pub fn scalar_with<T: Element>(
        mut self,
        f: impl Fn(&Config) -> T + Send + Sync + 'static,
    ) -> Self {
        self.args.push(ArgSpec::Scalar(
            Arc::new(move |c| T::wrap(vec![f(c)])),
            None,
        ));
        self
    }
    /// The next argument: a local-memory buffer of `f(config)` elements of `T` (an OpenCL
    /// `__local T*` parameter).
    pub fn local_buffer<T: Element>(
        mut self,
        f: impl Fn(&Config) -> usize + Send + Sync + 'static,
    ) -> Self {
        self.args
            .push(ArgSpec::Local(std::mem::size_of::<T>(), Arc::new(f)));
        self
    }
    /// Untimed runs before the timed ones (default 1, after the validation run).
    pub fn warmups(mut self, n: usize) -> Self {
        self.warmups = n;
        self
    }
    /// Timed runs; the cost is their median (default 5, at least 1).
    pub fn repetitions(mut self, n: usize) -> Self {
        self.repetitions = n.max(1);
        self
    }
    /// Launches per timed sample (default 1): each sample launches the kernel back to back
    /// and divides the device time of the whole sequence by the count. For kernels of a few
    /// microseconds, where a single launch's device time is mostly launch latency: back to
    /// back (on CUDA, replayed from a graph), what is left is the kernel and the gap between
    /// two kernels, as in an application that calls it in a loop. Validation checks the
    /// output of the first run only.
    ///
    /// The count is chosen once per evaluator (one kernel and input), so that every
    /// configuration is timed alike: on the first valid configuration measured, as many
    /// launches as fit in about a millisecond of one warm launch of it, at most `n`
    /// ([`KernelEvaluator::launches_per_sample`](super::KernelEvaluator::launches_per_sample)
    /// tells the choice). A configuration much slower than that first one then takes
    /// proportionally longer to measure; [`KernelSpec::slower_than_best`] stops hopeless ones
    /// after their first run.
    ///
    /// A runtime whose enqueue is slower than the kernel does not slow the sample down: on
    /// OpenCL the launches wait behind a user event until all are enqueued, and the time is
    /// the union of their own intervals (`backend/opencl/timing.rs`; NVIDIA's OpenCL takes
    /// about 14 us of host time per enqueue). Each of NVIDIA's OpenCL launches still costs
    /// 4-6 us more device time than CUDA's graph-replayed ones (benches/GPU-REPORT-trust.md).
    pub fn launches_per_sample(mut self, n: usize) -> Self {
        self.launches_per_sample = n.max(1);
        self
    }
    /// Validates every configuration against the outputs this closure computes on the host:
    /// one [`HostData`] per output buffer, in argument order.
    pub fn reference(
        mut self,
        f: impl Fn(&HostArgs<'_>) -> Result<Vec<HostData>> + Send + Sync + 'static,
    ) -> Self {
        self.reference = Some(Reference::Closure(Arc::new(f)));
        self
    }
    /// Validates every configuration against the outputs of a reference kernel.
    pub fn reference_kernel(mut self, kernel: ReferenceKernel) -> Self {
        self.reference = Some(Reference::Kernel(kernel));
        self
    }
    /// How close outputs must be (default: per element, 1e-4 absolute + 1e-4 relative).
    pub fn tolerance(mut self, tolerance: Tolerance) -> Self {
        self.tolerance = tolerance;
        self
    }
    /// A custom comparison of each output with its reference, replacing the tolerance.
    pub fn comparator(
        mut self,
        f: impl Fn(&HostData, &HostData) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.comparator = Some(Arc::new(f));
        self
    }
    /// How many compiled kernels the program cache keeps (default 256; 0 turns it off).
    pub fn cache_capacity(mut self, n: usize) -> Self {
        self.cache_capacity = n;
        self
    }

    /// A hard limit: a configuration whose first run takes longer than `limit` is recorded as
    /// [`Failure::Timeout`](crate::Failure::Timeout), without validation, warm-ups or repetitions (see also
    /// [`KernelEvaluator::set_time_limit`](super::KernelEvaluator::set_time_limit)). To stop
    /// measuring configurations that are merely far slower than the best, use
    /// [`KernelSpec::slower_than_best`], which records them as valid.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Stops measuring a configuration whose first run takes more than `factor` times the
    /// best median measured so far by this evaluator: its output is still validated, and a
    /// right one is recorded as valid with the first run's time as its cost and
    /// [`Measured::stopped_early`](crate::Measured::stopped_early) set, without warm-ups and
    /// repetitions. Saves the repetitions of hopeless configurations (a work-item doing a
    /// whole vector) while techniques still learn that they are slow, not failed; `factor`
    /// is clamped to at least 1.
    pub fn slower_than_best(mut self, factor: f64) -> Self {
        self.slow_factor = Some(factor.max(1.0));
        self
    }

    /// Stops waiting for a compilation after `limit`: the configuration is recorded as
    /// [`Failure::Timeout`](crate::Failure::Timeout) (a kernel unrolled into tens of thousands of instructions can
    /// keep a driver's compiler busy for minutes). Compilers cannot be interrupted, so the
    /// compilation finishes on a thread of its own and its result is dropped.
    pub fn compile_time_limit(mut self, limit: Duration) -> Self {
        self.compile_limit = Some(limit);
        self
    }

    /// The defines of `config`: every tuning parameter as `NAME=value` (bool as 0/1; an enum
    /// as its variant index, plus `NAME_Variant=index` for each of its variants), then the
    /// fixed defines.
    pub fn defines_of(&self, space: &Space, config: &Config) -> Vec<(String, String)> {
        let mut out = config_defines(space, config);
        out.extend(self.defines.iter().cloned());
        out
    }
}

/// Sizes of 1 to 3 dimensions as a function of the configuration.
fn sizes<const D: usize>(
    f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
) -> ConfigFn<Vec<usize>> {
    Arc::new(move |c| f(c).to_vec())
}

/// The preprocessor defines of a configuration: `NAME=value` per parameter (bool as 0/1, enum
/// as variant index, plus `NAME_Variant=index` for each variant).
pub fn config_defines(space: &Space, config: &Config) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (info, &raw) in space.params().iter().zip(config.raw()) {
        let name = info.name();
        match info.kind() {
            Kind::Bool => out.push((name.to_string(), u64::from(raw != 0).to_string())),
            Kind::Enum => {
                out.push((name.to_string(), raw.to_string()));
                for i in 0..info.domain_len() {
                    if let Some(v) = info.domain_value(i) {
                        if let Some(r) = info.raw_of_value(&v) {
                            out.push((format!("{name}_{v}"), r.to_string()));
                        }
                    }
                }
            }
            Kind::Float => {
                let v = info.value_of_raw(raw);
                let s = match v {
                    crate::Value::Float(x) => format!("{x:?}"),
                    other => other.to_string(),
                };
                out.push((name.to_string(), s));
            }
            Kind::Int | Kind::UInt => {
                out.push((name.to_string(), info.value_of_raw(raw).to_string()))
            }
        }
    }
    out
}
