//! The [`Backend`] trait and what it exchanges with the evaluator: the device's identity and
//! limits, a compile request, the launch geometry and the launch arguments.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::evaluate::Failure;
use crate::Result;

/// What a backend tells about its device: identity (for the results database and the program
/// cache) and the limits the evaluator checks before compiling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The backend's name: `"opencl"`, `"cuda"`, ...
    pub backend: String,
    /// The platform (OpenCL) or driver family (CUDA).
    pub platform: String,
    /// The device's name, as the driver reports it.
    pub name: String,
    /// The device's vendor.
    pub vendor: String,
    /// The driver's version (part of the program cache key).
    pub driver_version: String,
    /// Most work-items (threads) in one work-group (block).
    pub max_work_group_size: usize,
    /// Most work-items per dimension of a work-group.
    pub max_work_item_sizes: [usize; 3],
    /// Local (shared) memory per work-group, bytes.
    pub local_mem_bytes: usize,
    /// Global memory, bytes.
    pub global_mem_bytes: u64,
    /// Compute units (OpenCL) or multiprocessors (CUDA).
    pub compute_units: u32,
    /// Work-items that execute in lock-step: the warp (NVIDIA) or wavefront (AMD) width;
    /// 0 when the driver does not say.
    #[serde(default)]
    pub warp_width: u32,
    /// 32-bit registers of one compute unit; 0 when unknown.
    #[serde(default)]
    pub registers_per_compute_unit: u32,
    /// 32-bit registers one work-group may use; 0 when unknown.
    #[serde(default)]
    pub registers_per_work_group: u32,
    /// Local (shared) memory of one compute unit, shared by its resident work-groups,
    /// bytes; 0 when unknown.
    #[serde(default)]
    pub local_mem_per_compute_unit: usize,
    /// Most resident work-items per compute unit; 0 when unknown.
    #[serde(default)]
    pub max_threads_per_compute_unit: u32,
    /// Most resident work-groups per compute unit; 0 when unknown.
    #[serde(default)]
    pub max_work_groups_per_compute_unit: u32,
    /// The highest core clock, MHz; 0 when unknown.
    #[serde(default)]
    pub clock_mhz: u32,
    /// Single-precision fused multiply-adds per clock of one compute unit (128 on
    /// NVIDIA Hopper and Ada, 64 on Ampere A100 and Volta); 0 when unknown.
    #[serde(default)]
    pub fp32_lanes_per_compute_unit: u32,
}

impl DeviceInfo {
    /// A one-line description: `"NVIDIA H100 80GB HBM3 (opencl, NVIDIA CUDA, driver 550.54)"`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, {}, driver {})",
            self.name, self.backend, self.platform, self.driver_version
        )
    }

    /// The single-precision peak in FLOP/s (a fused multiply-add counts two): compute
    /// units x FP32 lanes x 2 x clock; `None` when a factor is unknown.
    pub fn fp32_peak_flops(&self) -> Option<f64> {
        let lanes = self.fp32_lanes_per_compute_unit;
        (self.compute_units > 0 && lanes > 0 && self.clock_mhz > 0).then(|| {
            f64::from(self.compute_units) * f64::from(lanes) * 2.0 * f64::from(self.clock_mhz) * 1e6
        })
    }

    /// How many work-groups of `work_group_size` work-items, each using
    /// `registers_per_item` registers (when known) and `local_bytes` of local memory, fit
    /// on one compute unit at once, and what limits it (see [`Occupancy::estimate`]).
    /// Written for constraints in a space, BEAST's "at least 2 active work-groups per
    /// compute unit":
    ///
    /// ```
    /// # use tune_runtime::backend::DeviceInfo;
    /// let dev = DeviceInfo { local_mem_per_compute_unit: 48 * 1024, max_threads_per_compute_unit: 2048,
    ///                        ..DeviceInfo::default() };
    /// let space = tune_runtime::SpaceBuilder::new()
    ///     .param(tune_runtime::Param::<usize>::values("TILE", [16, 32, 64]))
    ///     .constraint(&[0], |b| {
    ///         let tile = b.get::<usize>(0);
    ///         dev.work_groups_per_cu(256, None, 2 * 4 * tile * tile).is_none_or(|o| o.work_groups >= 2)
    ///     })
    ///     .build()?;
    /// assert_eq!(space.len(), 2); // two 64 x 64 float tiles (32 KiB): one group in 48 KiB
    /// # Ok::<(), tune_runtime::Error>(())
    /// ```
    pub fn work_groups_per_cu(
        &self,
        work_group_size: usize,
        registers_per_item: Option<usize>,
        local_bytes: usize,
    ) -> Option<Occupancy> {
        Occupancy::estimate(self, work_group_size, registers_per_item, local_bytes)
    }
}

/// What limits the resident work-groups of a compute unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OccupancyLimit {
    /// The compute unit's work-items.
    Threads,
    /// The compute unit's work-group slots.
    WorkGroups,
    /// The compute unit's registers.
    Registers,
    /// The compute unit's local memory.
    LocalMemory,
    /// The driver's occupancy calculator (CUDA), which weighs all of them.
    Driver,
}

/// Work-groups resident at once on one compute unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Work-groups per compute unit (0: the work-group does not fit at all).
    pub work_groups: u32,
    /// The resource that allows no more.
    pub limited_by: OccupancyLimit,
}

impl Occupancy {
    /// An estimate from the device's per-compute-unit resources: the fewest work-groups
    /// that its work-items, work-group slots, registers (work-group size rounded up to the
    /// warp width, registers per work-item to a multiple of 8, as NVIDIA allocates them)
    /// and local memory allow. Resources the device does not report are left out; `None`
    /// when it reports none of them. The CUDA backend asks the driver instead.
    pub fn estimate(
        dev: &DeviceInfo,
        work_group_size: usize,
        registers_per_item: Option<usize>,
        local_bytes: usize,
    ) -> Option<Occupancy> {
        let wg = work_group_size.max(1);
        let mut best: Option<Occupancy> = None;
        let mut limit = |n: usize, by: OccupancyLimit| {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            if best.is_none_or(|b| n < b.work_groups) {
                best = Some(Occupancy {
                    work_groups: n,
                    limited_by: by,
                });
            }
        };
        if dev.max_threads_per_compute_unit > 0 {
            limit(
                dev.max_threads_per_compute_unit as usize / wg,
                OccupancyLimit::Threads,
            );
        }
        if dev.max_work_groups_per_compute_unit > 0 {
            limit(
                dev.max_work_groups_per_compute_unit as usize,
                OccupancyLimit::WorkGroups,
            );
        }
        if let (Some(r), true) = (registers_per_item, dev.registers_per_compute_unit > 0) {
            let warp = (dev.warp_width as usize).max(1);
            let per_group = wg.div_ceil(warp) * warp * r.div_ceil(8) * 8;
            if let Some(n) = (dev.registers_per_compute_unit as usize).checked_div(per_group) {
                limit(n, OccupancyLimit::Registers);
            }
        }
        let local_per_cu = match dev.local_mem_per_compute_unit {
            0 => dev.local_mem_bytes,
            n => n,
        };
        if local_bytes > 0 && local_per_cu > 0 {
            limit(local_per_cu / local_bytes, OccupancyLimit::LocalMemory);
        }
        best
    }
}

/// Limits of one compiled kernel, which the evaluator checks after compilation (a kernel that
/// uses many registers allows fewer work-items per work-group than the device).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelLimits {
    /// Most work-items per work-group for this kernel (`CL_KERNEL_WORK_GROUP_SIZE`,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub max_work_group_size: Option<usize>,
    /// Local (shared) memory the kernel allocates statically, bytes.
    pub local_mem_bytes: Option<usize>,
    /// Registers per work-item, where the backend knows them.
    pub registers: Option<usize>,
    /// Private memory per work-item, bytes: OpenCL's `CL_KERNEL_PRIVATE_MEM_SIZE`, CUDA's
    /// local memory (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: spilled registers and stack).
    #[serde(default)]
    pub private_mem_bytes: Option<usize>,
    /// The work-group size should be a multiple of this
    /// (`CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE`; on CUDA the warp size).
    #[serde(default)]
    pub preferred_multiple: Option<usize>,
}

/// What to compile: source, kernel name, defines and extra options.
#[derive(Clone, Debug)]
pub struct CompileRequest<'a> {
    /// The kernel source (OpenCL C or CUDA C).
    pub source: &'a str,
    /// The kernel function's name.
    pub kernel: &'a str,
    /// Preprocessor defines, `(NAME, value)`; a backend passes them as `-DNAME=value`.
    pub defines: &'a [(String, String)],
    /// Further compiler options, passed through unchanged.
    pub options: &'a [String],
}

impl CompileRequest<'_> {
    /// The defines and options as one list of compiler flags (`-DNAME=value` first).
    pub fn flags(&self) -> Vec<String> {
        self.defines
            .iter()
            .map(|(k, v)| format!("-D{k}={v}"))
            .chain(self.options.iter().cloned())
            .collect()
    }
}

/// The launch geometry, in OpenCL terms: `global` work-items in total per dimension, grouped
/// into work-groups of `local`. CUDA backends use [`LaunchDims::grid`] and `local` as the
/// block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchDims {
    /// Number of dimensions used (1 to 3); unused dimensions are 1.
    pub dims: usize,
    /// Total work-items per dimension.
    pub global: [usize; 3],
    /// Work-group size per dimension; `None` lets the driver choose (OpenCL only).
    pub local: Option<[usize; 3]>,
    /// Dynamic local (shared) memory for the launch, bytes (CUDA's dynamic shared memory;
    /// OpenCL passes local memory as [`LaunchArg::Local`] arguments instead).
    pub dynamic_local_bytes: usize,
}

impl LaunchDims {
    /// The number of work-groups (CUDA's grid) per dimension, when `local` is given.
    pub fn grid(&self) -> Option<[usize; 3]> {
        let l = self.local?;
        Some([
            self.global[0].div_ceil(l[0].max(1)),
            self.global[1].div_ceil(l[1].max(1)),
            self.global[2].div_ceil(l[2].max(1)),
        ])
    }
    /// Work-items per work-group (1 when `local` is not given).
    pub fn local_len(&self) -> usize {
        self.local.map_or(1, |l| l.iter().product())
    }
}

/// One kernel argument at launch.
pub enum LaunchArg<'a, B: Backend + ?Sized> {
    /// A device buffer.
    Buffer(&'a B::Buffer),
    /// A scalar, as its bytes in native byte order.
    Scalar(&'a [u8]),
    /// A local (shared) memory buffer of this many bytes (OpenCL `__local` pointer
    /// argument; a CUDA backend adds it to the dynamic shared memory).
    Local(usize),
}

impl<B: Backend + ?Sized> fmt::Debug for LaunchArg<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchArg::Buffer(_) => f.write_str("Buffer"),
            LaunchArg::Scalar(b) => write!(f, "Scalar({} bytes)", b.len()),
            LaunchArg::Local(n) => write!(f, "Local({n} bytes)"),
        }
    }
}

/// A compute device that compiles, launches and times kernels: implemented in the `opencl`
/// and `cuda` modules, and by fakes in tests.
///
/// All methods take `&self`: [`KernelEvaluator`](super::KernelEvaluator) calls [`Backend::compile`] from several
/// threads at once, and the other methods from one thread at a time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel backend",
    note = "use `tune::backend::opencl::OpenCl` (feature `opencl`) or `tune::backend::cuda::Cuda` (feature `cuda`), or implement `Backend`"
)]
pub trait Backend: Send + Sync + 'static {
    /// A device buffer.
    type Buffer: Send + Sync;
    /// A compiled kernel, ready to launch.
    type Kernel: Send + Sync;

    /// The device: identity and limits.
    fn device(&self) -> &DeviceInfo;

    /// Compiles `request.kernel` from `request.source`. A failed build returns
    /// [`Failure::Compile`] with the build log.
    fn compile(&self, request: &CompileRequest<'_>) -> Result<Self::Kernel, Failure>;

    /// The compiled kernel's own limits (none by default).
    fn kernel_limits(&self, _kernel: &Self::Kernel) -> KernelLimits {
        KernelLimits::default()
    }

    /// Work-groups of `work_group_size` work-items with `dynamic_local_bytes` of local
    /// memory (besides the kernel's static) that are resident at once on one compute unit,
    /// as the driver computes it (CUDA's occupancy calculator). `None` (the default) lets
    /// the evaluator estimate it from the device's and the kernel's properties
    /// ([`Occupancy::estimate`]).
    fn occupancy(
        &self,
        _kernel: &Self::Kernel,
        _work_group_size: usize,
        _dynamic_local_bytes: usize,
    ) -> Option<Occupancy> {
        None
    }

    /// Allocates a device buffer of `bytes` bytes (at least 1).
    fn alloc(&self, bytes: usize) -> Result<Self::Buffer>;

    /// Copies `data` to the start of `buffer` and waits until it is there.
    fn write(&self, buffer: &mut Self::Buffer, data: &[u8]) -> Result<()>;

    /// Copies the start of `buffer` into `out` and waits until it is there.
    fn read(&self, buffer: &Self::Buffer, out: &mut [u8]) -> Result<()>;

    /// Fills module-scope constant arrays of the compiled `kernel` (`__constant__` in CUDA),
    /// `(name, bytes)` each, now and whenever the kernel is loaded again. The default has no
    /// such symbols: an error naming them (OpenCL passes constant memory as an argument).
    fn set_constants(
        &self,
        _kernel: &Self::Kernel,
        constants: &[(String, Vec<u8>)],
    ) -> Result<(), Failure> {
        if constants.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = constants.iter().map(|(n, _)| n.as_str()).collect();
        Err(Failure::Other(format!(
            "the {} backend cannot fill module-scope constant memory ({}); pass the data as a \
             kernel argument instead",
            self.device().backend,
            names.join(", ")
        )))
    }

    /// Launches `kernel` once with `args` (in the kernel's parameter order), waits for it and
    /// returns its run time measured on the device (profiling events, CUDA events).
    /// Failures are [`Failure::Launch`].
    fn launch(
        &self,
        kernel: &Self::Kernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure>;

    /// Launches `kernel` `count` times back to back and returns the device time from the
    /// start of the first launch to the end of the last. For kernels of a few microseconds,
    /// whose single-launch time is mostly launch latency. The default sums `count` single
    /// launches; the OpenCL backend enqueues them all before waiting, the CUDA backend
    /// captures them in a graph and replays it.
    fn launch_repeated(
        &self,
        kernel: &Self::Kernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
        count: usize,
    ) -> Result<Duration, Failure> {
        let mut total = Duration::ZERO;
        for _ in 0..count.max(1) {
            total += self.launch(kernel, dims, args)?;
        }
        Ok(total)
    }

    /// How many compilations this backend's compiler runs at once in this process (`None`:
    /// as many as are asked for). The evaluator queues compilations beyond it itself, so that
    /// a compile time limit ([`KernelSpec::compile_time_limit`](super::KernelSpec::compile_time_limit))
    /// counts the compiler's time and not the wait for it.
    fn builds_at_once(&self) -> Option<usize> {
        None
    }

    /// Whether the device can still run work. `false` after an error that poisons the
    /// whole process (a CUDA sticky error); a backend running in a worker process then
    /// replaces the worker.
    fn healthy(&self) -> bool {
        true
    }

    /// Why the device can no longer run work in this process, once it cannot: after an
    /// error that poisons the process (a CUDA sticky error) and a failed attempt to replace
    /// the context. The default: never.
    fn lost(&self) -> Option<String> {
        None
    }
}

/// A copy between the host and a device buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Transfer {
    /// Host to device.
    Write,
    /// Device to host.
    Read,
}

/// Checks that a copy of `len` bytes fits a buffer of `capacity` bytes (backends check it
/// before they touch the device); the error says what did not fit.
pub(crate) fn check_fits(t: Transfer, len: usize, capacity: usize) -> Result<(), String> {
    if len <= capacity {
        return Ok(());
    }
    Err(match t {
        Transfer::Write => format!("writing {len} bytes into a buffer of {capacity}"),
        Transfer::Read => format!("reading {len} bytes from a buffer of {capacity}"),
    })
}
