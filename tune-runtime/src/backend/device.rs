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
}

impl DeviceInfo {
    /// A one-line description: `"NVIDIA H100 80GB HBM3 (opencl, NVIDIA CUDA, driver 550.54)"`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, {}, driver {})",
            self.name, self.backend, self.platform, self.driver_version
        )
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

    /// Allocates a device buffer of `bytes` bytes (at least 1).
    fn alloc(&self, bytes: usize) -> Result<Self::Buffer>;

    /// Copies `data` to the start of `buffer` and waits until it is there.
    fn write(&self, buffer: &mut Self::Buffer, data: &[u8]) -> Result<()>;

    /// Copies the start of `buffer` into `out` and waits until it is there.
    fn read(&self, buffer: &Self::Buffer, out: &mut [u8]) -> Result<()>;

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

    /// Whether the device can still run work. `false` after an error that poisons the
    /// whole process (a CUDA sticky error); a backend running in a worker process then
    /// replaces the worker.
    fn healthy(&self) -> bool {
        true
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
