//! Kernel backends: one [`Backend`] trait (device, compile, launch, timer), implemented for
//! OpenCL (`opencl` feature) and CUDA (`cuda` feature), and the backend-independent
//! [`KernelEvaluator`] that turns a [`KernelSpec`] into an [`Evaluator`].
//!
//! A [`KernelSpec`] says what to run for a configuration: the kernel source and name, the
//! tuning parameters (every one becomes a preprocessor define `-DNAME=value`), the global and
//! local sizes as expressions of the configuration, the arguments, how to time and how to
//! validate. The evaluator
//! - rejects configurations over the device's limits before compiling them
//!   ([`Failure::Invalid`]),
//! - compiles in [`Evaluator::prepare`] (called from several CPU threads at once) with a
//!   program cache keyed by source, defines, options, device and driver version,
//! - in [`Evaluator::measure`] restores every buffer to its initial contents, launches once and
//!   validates the output, then runs the warm-ups and the timed repetitions; the cost is the
//!   median device time, and every repetition is kept in [`Measured::samples`].
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

#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub mod cuda;
#[cfg(unix)]
#[cfg_attr(docsrs, doc(cfg(unix)))]
pub mod isolated;
#[cfg(feature = "opencl")]
#[cfg_attr(docsrs, doc(cfg(feature = "opencl")))]
pub mod opencl;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::evaluate::{Evaluator, Failure, Measured};
use crate::param::Kind;
use crate::space::{Config, Space};
use crate::{Error, Result};

// ---------------------------------------------------------------------------------------------
// The backend trait
// ---------------------------------------------------------------------------------------------

/// What a backend tells about its device: identity (for the results database and the program
/// cache) and the limits the evaluator checks before compiling.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
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
/// All methods take `&self`: [`KernelEvaluator`] calls [`Backend::compile`] from several
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

// ---------------------------------------------------------------------------------------------
// Host data
// ---------------------------------------------------------------------------------------------

mod sealed {
    pub trait Sealed {}
}

/// An element type of kernel buffers and scalars: the fixed-size integers and floats.
pub trait Element: sealed::Sealed + Copy + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The OpenCL C / CUDA C name of the type (`float`, `int`, ...).
    const C_NAME: &'static str;
    /// The value as `f64` (for tolerances).
    fn to_f64(self) -> f64;
    /// A value from an `f64` (rounded/saturated for integers).
    fn from_f64(v: f64) -> Self;
    /// Wraps a vector as [`HostData`].
    fn wrap(v: Vec<Self>) -> HostData;
    /// The elements of `data`, if it holds this type.
    fn slice(data: &HostData) -> Option<&[Self]>;
}

macro_rules! elements {
    ($($t:ty => $var:ident, $cname:literal;)*) => {
        /// Typed host data: the contents of a buffer or a scalar.
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        #[allow(missing_docs)]
        pub enum HostData { $($var(Vec<$t>),)* }

        impl HostData {
            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(HostData::$var(v) => v.len(),)* }
            }
            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Bytes per element.
            pub fn elem_bytes(&self) -> usize {
                match self { $(HostData::$var(_) => std::mem::size_of::<$t>(),)* }
            }
            /// The element type's C name.
            pub fn type_name(&self) -> &'static str {
                match self { $(HostData::$var(_) => $cname,)* }
            }
            /// The contents as bytes in native byte order.
            pub fn to_bytes(&self) -> Vec<u8> {
                match self {
                    $(HostData::$var(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),)*
                }
            }
            /// Data of the same type and length as `self`, read from `bytes`.
            pub fn from_bytes_like(&self, bytes: &[u8]) -> HostData {
                match self {
                    $(HostData::$var(_) => HostData::$var(
                        bytes
                            .chunks_exact(std::mem::size_of::<$t>())
                            .map(|c| {
                                let mut a = [0u8; std::mem::size_of::<$t>()];
                                a.copy_from_slice(c);
                                <$t>::from_ne_bytes(a)
                            })
                            .collect(),
                    ),)*
                }
            }
            /// Element `i` as `f64`.
            pub fn get_f64(&self, i: usize) -> Option<f64> {
                match self { $(HostData::$var(v) => v.get(i).map(|&x| x as f64),)* }
            }
        }

        $(
            impl sealed::Sealed for $t {}
            impl Element for $t {
                const C_NAME: &'static str = $cname;
                fn to_f64(self) -> f64 { self as f64 }
                fn from_f64(v: f64) -> Self { v as $t }
                fn wrap(v: Vec<Self>) -> HostData { HostData::$var(v) }
                fn slice(data: &HostData) -> Option<&[Self]> {
                    match data { HostData::$var(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
                }
            }
            impl From<Vec<$t>> for HostData {
                fn from(v: Vec<$t>) -> Self { HostData::$var(v) }
            }
        )*
    };
}

elements! {
    f32 => F32, "float";
    f64 => F64, "double";
    i8 => I8, "char";
    u8 => U8, "uchar";
    i16 => I16, "short";
    u16 => U16, "ushort";
    i32 => I32, "int";
    u32 => U32, "uint";
    i64 => I64, "long";
    u64 => U64, "ulong";
}

/// A buffer argument: its initial contents (restored before every configuration) and
/// whether it is an output that validation checks.
#[derive(Clone, Debug)]
#[must_use]
pub struct BufferArg {
    data: HostData,
    output: bool,
}

impl BufferArg {
    /// A buffer with the given contents.
    pub fn from_vec<T: Element>(data: Vec<T>) -> Self {
        BufferArg {
            data: T::wrap(data),
            output: false,
        }
    }
    /// `len` zeros.
    pub fn zeros<T: Element>(len: usize) -> Self {
        Self::from_vec(vec![T::from_f64(0.0); len])
    }
    /// `len` seeded random values: uniform in [-1, 1) for floats, in [0, 16) for integers.
    pub fn random<T: Element>(len: usize, seed: u64) -> Self {
        let is_float = matches!(T::wrap(Vec::new()), HostData::F32(_) | HostData::F64(_));
        if is_float {
            Self::random_in::<T>(len, seed, -1.0, 1.0)
        } else {
            Self::random_in::<T>(len, seed, 0.0, 16.0)
        }
    }
    /// `len` seeded random values uniform in [`lo`, `hi`) (truncated for integers).
    pub fn random_in<T: Element>(len: usize, seed: u64, lo: f64, hi: f64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let span = hi - lo;
        Self::from_vec(
            (0..len)
                .map(|_| T::from_f64((lo + span * rng.random::<f64>()).floor_if_int::<T>()))
                .collect(),
        )
    }
    /// Marks the buffer as an output: validation compares it with the reference.
    pub fn output(mut self) -> Self {
        self.output = true;
        self
    }
    /// The initial contents.
    pub fn data(&self) -> &HostData {
        &self.data
    }
}

trait FloorIfInt {
    fn floor_if_int<T: Element>(self) -> f64;
}
impl FloorIfInt for f64 {
    fn floor_if_int<T: Element>(self) -> f64 {
        match T::wrap(Vec::new()) {
            HostData::F32(_) | HostData::F64(_) => self,
            _ => self.floor(),
        }
    }
}

impl<T: Element> From<Vec<T>> for BufferArg {
    fn from(v: Vec<T>) -> Self {
        BufferArg::from_vec(v)
    }
}

/// A function of the configuration.
pub type ConfigFn<T> = Arc<dyn Fn(&Config) -> T + Send + Sync>;

enum ArgSpec {
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

/// The host-side arguments handed to a reference closure.
#[derive(Debug)]
pub struct HostArgs<'a> {
    args: Vec<HostArg<'a>>,
}

#[derive(Debug)]
enum HostArg<'a> {
    Data(&'a HostData),
    Scalar(Option<HostData>),
    Local,
}

impl HostArgs<'_> {
    /// The initial contents of buffer argument `index` (0-based kernel parameter position).
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when argument `index` is not a buffer of `T`.
    pub fn buffer<T: Element>(&self, index: usize) -> Result<&[T]> {
        match self.args.get(index) {
            Some(HostArg::Data(d)) => T::slice(d).ok_or_else(|| {
                Error::KernelSpec(format!(
                    "argument {index} is a buffer of `{}`, not of `{}`",
                    d.type_name(),
                    T::C_NAME
                ))
            }),
            _ => Err(Error::KernelSpec(format!(
                "argument {index} is not a buffer"
            ))),
        }
    }
    /// The value of scalar argument `index`.
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when argument `index` is not a scalar of `T` with a fixed value.
    pub fn scalar<T: Element>(&self, index: usize) -> Result<T> {
        match self.args.get(index) {
            Some(HostArg::Scalar(Some(d))) => {
                T::slice(d).and_then(|s| s.first().copied()).ok_or_else(|| {
                    Error::KernelSpec(format!(
                        "argument {index} is a `{}`, not a `{}`",
                        d.type_name(),
                        T::C_NAME
                    ))
                })
            }
            _ => Err(Error::KernelSpec(format!(
                "argument {index} is not a scalar with a fixed value"
            ))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// How close an output must be to the reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit-for-bit equal values.
    Exact,
    /// Every element: `|actual - expected| <= eps`.
    Absolute(f64),
    /// Every element: `|actual - expected| <= eps * |expected|`.
    Relative(f64),
    /// Every element: `|actual - expected| <= abs + rel * |expected|` (numpy's `allclose`).
    PerElement {
        /// Absolute part.
        abs: f64,
        /// Relative part.
        rel: f64,
    },
    /// The whole buffer: `||actual - expected||_2 <= eps * ||expected||_2`.
    Norm(f64),
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance::PerElement {
            abs: 1e-4,
            rel: 1e-4,
        }
    }
}

impl Tolerance {
    /// Compares `actual` with `expected`; the error says where and by how much they differ.
    ///
    /// # Errors
    /// A description of the first mismatch (or of the norm) when they are not close enough.
    pub fn check(&self, expected: &HostData, actual: &HostData) -> Result<(), String> {
        if expected.len() != actual.len() || expected.type_name() != actual.type_name() {
            return Err(format!(
                "output has {} x {}, the reference {} x {}",
                actual.len(),
                actual.type_name(),
                expected.len(),
                expected.type_name()
            ));
        }
        let n = expected.len();
        let pairs = (0..n).filter_map(|i| Some((i, expected.get_f64(i)?, actual.get_f64(i)?)));
        match *self {
            Tolerance::Norm(eps) => {
                let (mut diff, mut norm) = (0.0f64, 0.0f64);
                for (i, e, a) in pairs {
                    if !a.is_finite() && e.is_finite() {
                        return Err(format!("element {i}: {a} where {e} was expected"));
                    }
                    diff += (a - e) * (a - e);
                    norm += e * e;
                }
                let (diff, norm) = (diff.sqrt(), norm.sqrt());
                if diff <= eps * norm || diff == 0.0 {
                    Ok(())
                } else {
                    Err(format!(
                        "relative error norm {:.3e} exceeds {eps:.1e}",
                        diff / norm.max(f64::MIN_POSITIVE)
                    ))
                }
            }
            _ => {
                let (abs, rel, exact) = match *self {
                    Tolerance::Exact => (0.0, 0.0, true),
                    Tolerance::Absolute(a) => (a, 0.0, false),
                    Tolerance::Relative(r) => (0.0, r, false),
                    Tolerance::PerElement { abs, rel } => (abs, rel, false),
                    Tolerance::Norm(_) => (0.0, 0.0, false),
                };
                let mut bad = 0usize;
                let mut first = None;
                for (i, e, a) in pairs {
                    let ok = if exact {
                        a == e || (a.is_nan() && e.is_nan())
                    } else {
                        (a - e).abs() <= abs + rel * e.abs()
                    };
                    if !ok {
                        bad += 1;
                        first.get_or_insert((i, e, a));
                    }
                }
                match first {
                    None => Ok(()),
                    Some((i, e, a)) => Err(format!(
                        "{bad} of {n} elements differ; first at {i}: {a} where {e} was expected"
                    )),
                }
            }
        }
    }
}

/// A user comparator: `(expected, actual) -> Ok(())` or a description of the mismatch.
pub type Comparator = Arc<dyn Fn(&HostData, &HostData) -> Result<(), String> + Send + Sync>;

/// A reference closure: computes the expected contents of every output buffer, in argument
/// order, from the initial arguments.
pub type ReferenceFn = Arc<dyn Fn(&HostArgs<'_>) -> Result<Vec<HostData>> + Send + Sync>;

/// A reference kernel run once with a fixed configuration; its outputs are the expected ones.
/// It takes the same arguments as the tuned kernel.
#[derive(Clone, Debug)]
#[must_use]
pub struct ReferenceKernel {
    source: Option<String>,
    name: Option<String>,
    config: Option<Config>,
    defines: Vec<(String, String)>,
    options: Vec<String>,
    global: Option<Vec<usize>>,
    local: Option<Vec<usize>>,
}

impl ReferenceKernel {
    /// Kernel `name` in `source` (usually a simple, obviously right implementation).
    pub fn new(source: impl Into<String>, name: impl Into<String>) -> Self {
        ReferenceKernel {
            source: Some(source.into()),
            name: Some(name.into()),
            config: None,
            defines: Vec::new(),
            options: Vec::new(),
            global: None,
            local: None,
        }
    }
    /// The tuned kernel itself, run with a configuration known to be right.
    pub fn same_kernel(config: Config) -> Self {
        ReferenceKernel {
            source: None,
            name: None,
            config: Some(config),
            defines: Vec::new(),
            options: Vec::new(),
            global: None,
            local: None,
        }
    }
    /// The configuration that defines, argument expressions and (unless given) sizes are
    /// evaluated with.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }
    /// A fixed define.
    pub fn define(mut self, name: impl Into<String>, value: impl fmt::Display) -> Self {
        self.defines.push((name.into(), value.to_string()));
        self
    }
    /// A compiler option.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }
    /// The global size (1 to 3 dimensions).
    pub fn global(mut self, global: impl Into<Vec<usize>>) -> Self {
        self.global = Some(global.into());
        self
    }
    /// The local size (1 to 3 dimensions).
    pub fn local(mut self, local: impl Into<Vec<usize>>) -> Self {
        self.local = Some(local.into());
        self
    }
}

#[derive(Clone)]
enum Reference {
    Closure(ReferenceFn),
    Kernel(ReferenceKernel),
}

// ---------------------------------------------------------------------------------------------
// The kernel spec
// ---------------------------------------------------------------------------------------------

enum Sizes {
    Global(ConfigFn<Vec<usize>>),
    Grid(ConfigFn<Vec<usize>>),
}

/// Everything the evaluator needs to run one configuration of a kernel: a consuming builder.
///
/// Sizes and argument values are closures of the [`Config`]; read parameters with
/// `c.get::<T>(slot)` where `slot` is the parameter's declaration index.
#[must_use]
pub struct KernelSpec {
    source: String,
    name: String,
    defines: Vec<(String, String)>,
    options: Vec<String>,
    sizes: Option<Sizes>,
    local: Option<ConfigFn<Vec<usize>>>,
    round_up: bool,
    dynamic_local: Option<ConfigFn<usize>>,
    static_local: Option<ConfigFn<usize>>,
    args: Vec<ArgSpec>,
    warmups: usize,
    repetitions: usize,
    launches_per_sample: usize,
    reference: Option<Reference>,
    tolerance: Tolerance,
    comparator: Option<Comparator>,
    cache_capacity: usize,
    time_limit: Option<Duration>,
    slow_factor: Option<f64>,
    compile_limit: Option<Duration>,
}

impl fmt::Debug for KernelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelSpec")
            .field("name", &self.name)
            .field("defines", &self.defines)
            .field("options", &self.options)
            .field("args", &self.args)
            .field("warmups", &self.warmups)
            .field("repetitions", &self.repetitions)
            .field("launches_per_sample", &self.launches_per_sample)
            .field("tolerance", &self.tolerance)
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
        }
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
        self.sizes = Some(Sizes::Global(Arc::new(move |c| f(c).to_vec())));
        self
    }
    /// The number of work-groups (CUDA's grid) per dimension, instead of [`KernelSpec::global`]:
    /// the global size is `grid * local`.
    pub fn grid<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.sizes = Some(Sizes::Grid(Arc::new(move |c| f(c).to_vec())));
        self
    }
    /// The local size (work-group, CUDA's block) as an expression of the configuration. Without
    /// it the driver chooses (OpenCL only).
    pub fn local<const D: usize>(
        mut self,
        f: impl Fn(&Config) -> [usize; D] + Send + Sync + 'static,
    ) -> Self {
        self.local = Some(Arc::new(move |c| f(c).to_vec()));
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
    /// Launches per timed sample (default 1): each sample launches the kernel `n` times back
    /// to back and divides the device time of the whole sequence by `n`. For kernels of a few
    /// microseconds, where a single launch's device time is mostly launch latency: back to
    /// back (on CUDA, replayed from a graph), what is left is the kernel and the gap between
    /// two kernels, as in an application that calls it in a loop. Fewer launches are made
    /// when the first run shows that `n` of them would take more than about a millisecond
    /// (a slow configuration is then measured as usual). Validation checks the output of
    /// the first run only.
    ///
    /// Where the runtime's enqueue is slower than the kernel, back-to-back launches measure
    /// the runtime instead: NVIDIA's OpenCL (driver 580) takes about 10 us per enqueue,
    /// twice its 4.6 us single-launch floor, so single launches are the better measure there.
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

    /// Stops measuring a configuration whose first run takes longer than `limit`: it is
    /// recorded as [`Failure::Timeout`] without its warm-ups and repetitions (see also
    /// [`KernelEvaluator::set_time_limit`], which a tuner can tighten as it finds faster
    /// configurations).
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Stops measuring a configuration whose first run takes more than `factor` times the
    /// best median measured so far by this evaluator: it is recorded as
    /// [`Failure::Timeout`] without repetitions. Saves the repetitions of hopeless
    /// configurations (a work-item doing a whole vector); `factor` is clamped to at least 1.
    pub fn slower_than_best(mut self, factor: f64) -> Self {
        self.slow_factor = Some(factor.max(1.0));
        self
    }

    /// Stops waiting for a compilation after `limit`: the configuration is recorded as
    /// [`Failure::Timeout`] (a kernel unrolled into tens of thousands of instructions can
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

// ---------------------------------------------------------------------------------------------
// The evaluator
// ---------------------------------------------------------------------------------------------

/// A configuration compiled and sized, ready to measure.
pub struct PreparedKernel<B: Backend> {
    kernel: Arc<B::Kernel>,
    dims: LaunchDims,
    scalars: Vec<Option<Vec<u8>>>,
    locals: Vec<usize>,
    /// Wall time spent compiling (zero on a cache hit).
    pub compile_time: Duration,
}

impl<B: Backend> fmt::Debug for PreparedKernel<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedKernel")
            .field("dims", &self.dims)
            .field("compile_time", &self.compile_time)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> PreparedKernel<B> {
    /// The launch geometry.
    pub fn dims(&self) -> &LaunchDims {
        &self.dims
    }
}

/// Source hash, kernel name, defines, options, device name and driver version.
type CacheKey = (u64, String, Vec<(String, String)>, Vec<String>, String);

/// Evaluates configurations of a [`KernelSpec`] on a [`Backend`]: an [`Evaluator`] whose cost
/// is the median device time.
pub struct KernelEvaluator<B: Backend> {
    backend: Arc<B>,
    spec: KernelSpec,
    source_hash: u64,
    buffers: Mutex<Vec<B::Buffer>>,
    expected: Option<Vec<HostData>>,
    cache: Mutex<HashMap<CacheKey, Arc<B::Kernel>>>,
    time_limit_ns: AtomicU64,
    /// Best median so far in nanoseconds (`u64::MAX` before the first), for `slow_factor`.
    best_ns: AtomicU64,
}

impl<B: Backend> fmt::Debug for KernelEvaluator<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelEvaluator")
            .field("device", &self.backend.device().describe())
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

fn hash_str(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn backend_err(backend: &DeviceInfo, message: impl fmt::Display) -> Error {
    Error::Backend {
        backend: backend.backend.clone(),
        message: message.to_string(),
    }
}

fn to_dims(v: &[usize], what: &str) -> Result<[usize; 3], Failure> {
    if v.is_empty() || v.len() > 3 {
        return Err(Failure::Invalid(format!(
            "the {what} size has {} dimensions; give 1 to 3",
            v.len()
        )));
    }
    let mut d = [1usize; 3];
    d[..v.len()].copy_from_slice(v);
    Ok(d)
}

impl<B: Backend> KernelEvaluator<B> {
    /// Allocates the buffers on the device and computes the reference outputs (running the
    /// reference closure or kernel once).
    ///
    /// `backend` is a backend or an `Arc` of one (to share a device between evaluators); with
    /// an `Arc`, name the type: `KernelEvaluator::<OpenCl>::new(arc.clone(), ..)`.
    ///
    /// # Errors
    /// [`Error::KernelSpec`] when the spec has no global size or an output without a
    /// reference; [`Error::Backend`] when the device cannot hold the buffers or the reference
    /// kernel fails.
    pub fn new(backend: impl Into<Arc<B>>, space: &Space, spec: KernelSpec) -> Result<Self> {
        let backend = backend.into();
        if spec.sizes.is_none() {
            return Err(Error::KernelSpec(format!(
                "kernel `{}` has no global size; call `.global(|c| [..])` or `.grid(|c| [..])`",
                spec.name
            )));
        }
        let mut buffers = Vec::new();
        for a in &spec.args {
            if let ArgSpec::Buffer(b) = a {
                let bytes = b.data.len() * b.data.elem_bytes();
                let mut buf = backend.alloc(bytes.max(1))?;
                backend.write(&mut buf, &b.data.to_bytes())?;
                buffers.push(buf);
            }
        }
        let mut ev = KernelEvaluator {
            source_hash: hash_str(&spec.source),
            backend,
            spec,
            buffers: Mutex::new(buffers),
            expected: None,
            cache: Mutex::new(HashMap::new()),
            time_limit_ns: AtomicU64::new(0),
            best_ns: AtomicU64::new(u64::MAX),
        };
        ev.set_time_limit(ev.spec.time_limit);
        ev.expected = match ev.spec.reference.clone() {
            None => None,
            Some(Reference::Closure(f)) => {
                let args = ev.host_args();
                let expected = f(&args)?;
                let outputs = ev.outputs().count();
                if expected.len() != outputs {
                    return Err(Error::KernelSpec(format!(
                        "the reference returned {} buffers; the kernel has {outputs} outputs",
                        expected.len()
                    )));
                }
                Some(expected)
            }
            Some(Reference::Kernel(r)) => Some(ev.run_reference_kernel(space, &r)?),
        };
        Ok(ev)
    }

    /// Sets (or clears) the time limit of a configuration's first run; a slower configuration
    /// is recorded as [`Failure::Timeout`] without repetitions. A tuner may set it to a
    /// multiple of the best time so far.
    pub fn set_time_limit(&self, limit: Option<Duration>) {
        let ns = limit.map_or(0, |d| {
            u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
        });
        self.time_limit_ns.store(ns, Ordering::Relaxed);
    }

    /// The longest first run that is measured further (nanoseconds): the tighter of the
    /// time limit and `slow_factor` times the best median so far.
    fn first_run_limit_ns(&self) -> u128 {
        let mut limit = match self.time_limit_ns.load(Ordering::Relaxed) {
            0 => u128::MAX,
            ns => u128::from(ns),
        };
        let best = self.best_ns.load(Ordering::Relaxed);
        if let (Some(f), true) = (self.spec.slow_factor, best < u64::MAX) {
            limit = limit.min((best as f64 * f) as u128);
        }
        limit
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The spec.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }

    /// The reference outputs, when the spec has a reference.
    pub fn expected(&self) -> Option<&[HostData]> {
        self.expected.as_deref()
    }

    fn outputs(&self) -> impl Iterator<Item = &BufferArg> {
        self.spec.args.iter().filter_map(|a| match a {
            ArgSpec::Buffer(b) if b.output => Some(b),
            _ => None,
        })
    }

    fn host_args(&self) -> HostArgs<'_> {
        HostArgs {
            args: self
                .spec
                .args
                .iter()
                .map(|a| match a {
                    ArgSpec::Buffer(b) => HostArg::Data(&b.data),
                    ArgSpec::Scalar(_, v) => HostArg::Scalar(v.clone()),
                    ArgSpec::Local(..) => HostArg::Local,
                })
                .collect(),
        }
    }

    fn run_reference_kernel(&self, space: &Space, r: &ReferenceKernel) -> Result<Vec<HostData>> {
        let dev = self.backend.device();
        let fail = |f: Failure| backend_err(dev, format!("reference kernel: {f}"));
        let source = r.source.as_deref().unwrap_or(&self.spec.source);
        let name = r.name.as_deref().unwrap_or(&self.spec.name);
        let mut defines = match &r.config {
            Some(c) if r.source.is_none() => self.spec.defines_of(space, c),
            Some(c) => config_defines(space, c),
            None => Vec::new(),
        };
        defines.extend(r.defines.iter().cloned());
        let mut options = r.options.clone();
        if r.source.is_none() {
            options.extend(self.spec.options.iter().cloned());
        }
        let kernel = self
            .backend
            .compile(&CompileRequest {
                source,
                kernel: name,
                defines: &defines,
                options: &options,
            })
            .map_err(fail)?;
        let needs_config = || {
            Error::KernelSpec(
                "the reference kernel needs a configuration for its sizes or arguments; \
                 give one with `ReferenceKernel::config`"
                    .into(),
            )
        };
        let dims = match (&r.global, &r.config) {
            (Some(g), _) => {
                let global = to_dims(g, "global").map_err(fail)?;
                let local = match &r.local {
                    Some(l) => Some(to_dims(l, "local").map_err(fail)?),
                    None => None,
                };
                LaunchDims {
                    dims: g.len(),
                    global,
                    local,
                    dynamic_local_bytes: 0,
                }
            }
            (None, Some(c)) => self.launch_dims(c).map_err(fail)?,
            (None, None) => return Err(needs_config()),
        };
        let mut scalars = Vec::new();
        let mut locals = Vec::new();
        for a in &self.spec.args {
            match a {
                ArgSpec::Scalar(f, v) => scalars.push(Some(match (v, &r.config) {
                    (Some(v), _) => v.to_bytes(),
                    (None, Some(c)) => f(c).to_bytes(),
                    (None, None) => return Err(needs_config()),
                })),
                ArgSpec::Local(b, f) => locals.push(match &r.config {
                    Some(c) => b * f(c),
                    None => return Err(needs_config()),
                }),
                ArgSpec::Buffer(_) => {}
            }
        }
        let prepared = PreparedKernel::<B> {
            kernel: Arc::new(kernel),
            dims,
            scalars: vec![],
            locals,
            compile_time: Duration::ZERO,
        };
        let mut buffers = self
            .buffers
            .lock()
            .map_err(|_| backend_err(dev, "buffer lock poisoned"))?;
        self.restore(&mut buffers).map_err(fail)?;
        let scalar_bytes: Vec<Vec<u8>> = scalars.into_iter().flatten().collect();
        self.launch_with(&buffers, &prepared, Some(&scalar_bytes), 1)
            .map_err(fail)?;
        self.read_outputs(&buffers).map_err(fail)
    }

    /// Compiles on a thread of its own and waits at most `limit` for it.
    fn compile_within(
        &self,
        limit: Duration,
        defines: &[(String, String)],
    ) -> Result<B::Kernel, Failure> {
        let (tx, rx) = std::sync::mpsc::channel();
        let backend = self.backend.clone();
        let (source, name) = (self.spec.source.clone(), self.spec.name.clone());
        let (defines, options) = (defines.to_vec(), self.spec.options.clone());
        std::thread::Builder::new()
            .name("tune-compile".into())
            .spawn(move || {
                let r = backend.compile(&CompileRequest {
                    source: &source,
                    kernel: &name,
                    defines: &defines,
                    options: &options,
                });
                let _ = tx.send(r);
            })
            .map_err(|e| Failure::Other(format!("starting a compile thread: {e}")))?;
        match rx.recv_timeout(limit) {
            Ok(r) => r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Failure::Timeout(limit)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Failure::Other(
                "the compile thread ended without a result".into(),
            )),
        }
    }

    /// The launch geometry of `config`, checked against the device's limits.
    ///
    /// # Errors
    /// [`Failure::Invalid`] when a size is zero, has more than 3 dimensions, the local size
    /// does not divide the global size (without rounding), or a device limit is exceeded.
    pub fn launch_dims(&self, config: &Config) -> Result<LaunchDims, Failure> {
        let dev = self.backend.device();
        let local_v = self.spec.local.as_ref().map(|f| f(config));
        let local = match &local_v {
            Some(l) => Some(to_dims(l, "local")?),
            None => None,
        };
        let (global_v, from_grid) = match &self.spec.sizes {
            Some(Sizes::Global(f)) => (f(config), false),
            Some(Sizes::Grid(f)) => (f(config), true),
            None => return Err(Failure::Invalid("no global size".into())),
        };
        let n = global_v.len();
        let mut global = to_dims(&global_v, "global")?;
        if let Some(lv) = &local_v {
            if lv.len() != n {
                return Err(Failure::Invalid(format!(
                    "the global size has {n} dimensions, the local size {}",
                    lv.len()
                )));
            }
        }
        if global.contains(&0) || local.is_some_and(|l| l.contains(&0)) {
            return Err(Failure::Invalid(format!(
                "a size is zero: global {global_v:?}, local {local_v:?}"
            )));
        }
        if let Some(l) = local {
            for d in 0..3 {
                if from_grid {
                    global[d] = global[d].saturating_mul(l[d]);
                } else if global[d] % l[d] != 0 {
                    if self.spec.round_up {
                        global[d] = global[d].div_ceil(l[d]) * l[d];
                    } else {
                        return Err(Failure::Invalid(format!(
                            "local size {l:?} does not divide global size {global:?}; \
                             constrain the parameters or call `.round_up_global(true)`"
                        )));
                    }
                }
                if dev.max_work_item_sizes[d] > 0 && l[d] > dev.max_work_item_sizes[d] {
                    return Err(Failure::Invalid(format!(
                        "local size {} in dimension {d} exceeds the device limit {}",
                        l[d], dev.max_work_item_sizes[d]
                    )));
                }
            }
            let total: usize = l.iter().product();
            if dev.max_work_group_size > 0 && total > dev.max_work_group_size {
                return Err(Failure::Invalid(format!(
                    "work-group of {total} work-items exceeds the device limit {}",
                    dev.max_work_group_size
                )));
            }
        } else if from_grid {
            return Err(Failure::Invalid(
                "a grid needs a local (block) size; call `.local(|c| [..])`".into(),
            ));
        }
        Ok(LaunchDims {
            dims: n,
            global,
            local,
            dynamic_local_bytes: self.spec.dynamic_local.as_ref().map_or(0, |f| f(config)),
        })
    }

    fn restore(&self, buffers: &mut [B::Buffer]) -> Result<(), Failure> {
        let inputs = self.spec.args.iter().filter_map(|a| match a {
            ArgSpec::Buffer(b) => Some(b),
            _ => None,
        });
        for (buf, b) in buffers.iter_mut().zip(inputs) {
            self.backend
                .write(buf, &b.data.to_bytes())
                .map_err(|e| Failure::Other(format!("restoring inputs: {e}")))?;
        }
        Ok(())
    }

    fn read_outputs(&self, buffers: &[B::Buffer]) -> Result<Vec<HostData>, Failure> {
        let mut out = Vec::new();
        let mut bi = 0;
        for a in &self.spec.args {
            if let ArgSpec::Buffer(b) = a {
                if b.output {
                    let mut bytes = vec![0u8; b.data.len() * b.data.elem_bytes()];
                    if let Some(buf) = buffers.get(bi) {
                        self.backend
                            .read(buf, &mut bytes)
                            .map_err(|e| Failure::Launch(format!("reading outputs: {e}")))?;
                    }
                    out.push(b.data.from_bytes_like(&bytes));
                }
                bi += 1;
            }
        }
        Ok(out)
    }

    fn launch_with(
        &self,
        buffers: &[B::Buffer],
        p: &PreparedKernel<B>,
        scalar_override: Option<&[Vec<u8>]>,
        count: usize,
    ) -> Result<Duration, Failure> {
        let mut args = Vec::with_capacity(self.spec.args.len());
        let (mut bi, mut si, mut li) = (0, 0, 0);
        for a in &self.spec.args {
            match a {
                ArgSpec::Buffer(_) => {
                    let b = buffers
                        .get(bi)
                        .ok_or_else(|| Failure::Other("missing buffer".into()))?;
                    args.push(LaunchArg::Buffer(b));
                    bi += 1;
                }
                ArgSpec::Scalar(..) => {
                    let bytes = match scalar_override {
                        Some(s) => s.get(si).map(|v| v.as_slice()),
                        None => p.scalars.get(si).and_then(|v| v.as_deref()),
                    }
                    .ok_or_else(|| Failure::Other("missing scalar".into()))?;
                    args.push(LaunchArg::Scalar(bytes));
                    si += 1;
                }
                ArgSpec::Local(..) => {
                    args.push(LaunchArg::Local(p.locals.get(li).copied().unwrap_or(0)));
                    li += 1;
                }
            }
        }
        if count > 1 {
            self.backend
                .launch_repeated(&p.kernel, &p.dims, &args, count)
        } else {
            self.backend.launch(&p.kernel, &p.dims, &args)
        }
    }

    fn validate(&self, actual: &[HostData]) -> Result<(), Failure> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        for (k, (e, a)) in expected.iter().zip(actual).enumerate() {
            let r = match &self.spec.comparator {
                Some(c) => c(e, a),
                None => self.spec.tolerance.check(e, a),
            };
            r.map_err(|m| Failure::WrongResult(format!("output {k}: {m}")))?;
        }
        Ok(())
    }
}

impl<B: Backend> Evaluator for KernelEvaluator<B> {
    type Cost = Duration;
    type Prepared = PreparedKernel<B>;

    fn prepare(&self, space: &Space, config: &Config) -> Result<Self::Prepared, Failure> {
        let dev = self.backend.device();
        let dims = self.launch_dims(config)?;
        let mut locals = Vec::new();
        let mut scalars = Vec::new();
        for a in &self.spec.args {
            match a {
                ArgSpec::Local(b, f) => locals.push(b * f(config)),
                ArgSpec::Scalar(f, v) => scalars.push(Some(match v {
                    Some(v) => v.to_bytes(),
                    None => f(config).to_bytes(),
                })),
                ArgSpec::Buffer(_) => {}
            }
        }
        let local_mem = locals.iter().sum::<usize>()
            + dims.dynamic_local_bytes
            + self.spec.static_local.as_ref().map_or(0, |f| f(config));
        if dev.local_mem_bytes > 0 && local_mem > dev.local_mem_bytes {
            return Err(Failure::Invalid(format!(
                "needs {local_mem} bytes of local memory; the device has {}",
                dev.local_mem_bytes
            )));
        }
        let defines = self.spec.defines_of(space, config);
        let key: CacheKey = (
            self.source_hash,
            self.spec.name.clone(),
            defines.clone(),
            self.spec.options.clone(),
            format!("{}|{}", dev.name, dev.driver_version),
        );
        let cached = self.cache.lock().ok().and_then(|c| c.get(&key).cloned());
        let (kernel, compile_time) = match cached {
            Some(k) => (k, Duration::ZERO),
            None => {
                let t = Instant::now();
                let k = Arc::new(match self.spec.compile_limit {
                    None => self.backend.compile(&CompileRequest {
                        source: &self.spec.source,
                        kernel: &self.spec.name,
                        defines: &defines,
                        options: &self.spec.options,
                    })?,
                    Some(limit) => self.compile_within(limit, &defines)?,
                });
                let dt = t.elapsed();
                if self.spec.cache_capacity > 0 {
                    if let Ok(mut c) = self.cache.lock() {
                        if c.len() >= self.spec.cache_capacity {
                            c.clear();
                        }
                        c.insert(key, k.clone());
                    }
                }
                (k, dt)
            }
        };
        let limits = self.backend.kernel_limits(&kernel);
        if let Some(max) = limits.max_work_group_size {
            if dims.local.is_some() && dims.local_len() > max {
                return Err(Failure::Invalid(format!(
                    "work-group of {} work-items exceeds this kernel's limit {max} \
                     (registers or local memory)",
                    dims.local_len()
                )));
            }
        }
        if let Some(stat) = limits.local_mem_bytes {
            let total = stat + locals.iter().sum::<usize>() + dims.dynamic_local_bytes;
            if dev.local_mem_bytes > 0 && total > dev.local_mem_bytes {
                return Err(Failure::Invalid(format!(
                    "kernel needs {total} bytes of local memory; the device has {}",
                    dev.local_mem_bytes
                )));
            }
        }
        Ok(PreparedKernel {
            kernel,
            dims,
            scalars,
            locals,
            compile_time,
        })
    }

    fn measure(
        &self,
        _space: &Space,
        _config: &Config,
        prepared: Self::Prepared,
    ) -> Result<Measured<Duration>, Failure> {
        let mut buffers = self
            .buffers
            .lock()
            .map_err(|_| Failure::Other("buffer lock poisoned".into()))?;
        self.restore(&mut buffers)?;
        let first = self.launch_with(&buffers, &prepared, None, 1)?;
        if first.as_nanos() > self.first_run_limit_ns() {
            return Err(Failure::Timeout(first));
        }
        let validation = if self.expected.is_some() {
            let t = Instant::now();
            let out = self.read_outputs(&buffers)?;
            self.validate(&out)?;
            Some(t.elapsed())
        } else {
            None
        };
        // Back-to-back launches only for short kernels: at most about a millisecond of them
        // per sample, so that a slow configuration costs no more than usual to measure.
        let per_sample = match first.as_nanos() {
            0 => self.spec.launches_per_sample,
            ns => (1_000_000 / ns).clamp(1, self.spec.launches_per_sample as u128) as usize,
        };
        for _ in 0..self.spec.warmups {
            self.launch_with(&buffers, &prepared, None, per_sample)?;
        }
        let mut samples = Vec::with_capacity(self.spec.repetitions);
        if self.spec.repetitions == 0 {
            samples.push(first);
        }
        for _ in 0..self.spec.repetitions {
            let t = self.launch_with(&buffers, &prepared, None, per_sample)?;
            samples.push(t / per_sample as u32);
        }
        let mut sorted = samples.clone();
        sorted.sort();
        let cost = median(&sorted);
        let ns = u64::try_from(cost.as_nanos()).unwrap_or(u64::MAX);
        self.best_ns.fetch_min(ns, Ordering::Relaxed);
        Ok(Measured {
            cost,
            samples: samples.iter().map(Duration::as_secs_f64).collect(),
            validation,
            stopped_early: false,
        })
    }

    fn device(&self) -> String {
        self.backend.device().describe()
    }
}

fn median(sorted: &[Duration]) -> Duration {
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;

/// Generates the backend conformance tests for a [`Backend`] type: compile, launch, device
/// timing, build errors, wrong results and device limits, through [`KernelEvaluator`].
///
/// Arguments: the backend type; an expression giving `Option<Arc<Backend>>` (`None` skips the
/// tests, e.g. when no device is present); the source of a kernel
/// `scale(int n, const float* x, float* y)` that sets `y[i] = 2 * x[i]` for `i < n`, in the
/// backend's language; and a source that does not compile.
///
/// ```ignore
/// tune::testgen_backend!(OpenCl, device(), OPENCL_SCALE, "__kernel void scale( {");
/// ```
#[macro_export]
macro_rules! testgen_backend {
    ($backend:ty, $make:expr, $scale:expr, $broken:expr) => {
        mod backend_conformance {
            #![allow(
                clippy::unwrap_used,
                clippy::expect_used,
                clippy::panic,
                unused_imports
            )]
            use super::*;
            use $crate::backend::{Backend as _, BufferArg, KernelEvaluator, KernelSpec};
            use $crate::{Evaluator as _, Failure};

            const N: usize = 1000;

            fn make() -> ::core::option::Option<::std::sync::Arc<$backend>> {
                $make
            }

            fn space() -> $crate::Space {
                $crate::SpaceBuilder::new()
                    .param($crate::Param::<usize>::values("UNUSED", [1]))
                    .build()
                    .unwrap()
            }

            fn spec(source: &str, factor: f32) -> KernelSpec {
                KernelSpec::new(source, "scale")
                    .global(|_| [N])
                    .local(|_| [8])
                    .round_up_global(true)
                    .scalar(N as i32)
                    .buffer(BufferArg::random::<f32>(N, 5))
                    .buffer(BufferArg::zeros::<f32>(N).output())
                    .reference(move |a| {
                        let x = a.buffer::<f32>(1)?;
                        Ok(vec![x
                            .iter()
                            .map(|v| factor * v)
                            .collect::<Vec<f32>>()
                            .into()])
                    })
            }

            fn eval(
                b: ::std::sync::Arc<$backend>,
                spec: KernelSpec,
            ) -> ::core::result::Result<$crate::Measured<::std::time::Duration>, Failure> {
                let s = space();
                let ev = KernelEvaluator::<$backend>::new(b, &s, spec).unwrap();
                let c = s.get(0).unwrap();
                let p = ev.prepare(&s, &c)?;
                ev.measure(&s, &c, p)
            }

            #[test]
            fn conformance_compiles_launches_and_times() {
                let Some(b) = make() else { return };
                let m = eval(b.clone(), spec($scale, 2.0).repetitions(4)).unwrap();
                assert_eq!(m.samples.len(), 4);
                assert!(m.samples.iter().all(|&t| t > 0.0), "{:?}", m.samples);
                assert!(m.validation.is_some());
                // Inputs are restored: a second evaluation sees the same inputs.
                assert!(eval(b.clone(), spec($scale, 2.0)).is_ok());
                // Back-to-back launches: one device time per sample, divided per launch.
                let m = eval(b, spec($scale, 2.0).launches_per_sample(3).repetitions(2)).unwrap();
                assert_eq!(m.samples.len(), 2);
                assert!(m.samples.iter().all(|&t| t > 0.0), "{:?}", m.samples);
            }

            #[test]
            fn conformance_build_errors_are_compile_failures() {
                let Some(b) = make() else { return };
                match eval(b, spec($broken, 2.0)) {
                    Err(Failure::Compile(log)) => assert!(!log.is_empty()),
                    other => panic!("expected a compile failure, got {other:?}"),
                }
            }

            #[test]
            fn conformance_wrong_results_are_caught() {
                let Some(b) = make() else { return };
                assert!(matches!(
                    eval(b, spec($scale, 3.0)),
                    Err(Failure::WrongResult(_))
                ));
            }

            #[test]
            fn conformance_limits_are_invalid() {
                let Some(b) = make() else { return };
                let max = b.device().max_work_group_size.max(1);
                assert!(matches!(
                    eval(b.clone(), spec($scale, 2.0).local(move |_| [2 * max])),
                    Err(Failure::Invalid(_))
                ));
                let lm = b.device().local_mem_bytes;
                assert!(matches!(
                    eval(b, spec($scale, 2.0).static_local_memory(move |_| lm + 1)),
                    Err(Failure::Invalid(_))
                ));
            }
        }
    };
}
