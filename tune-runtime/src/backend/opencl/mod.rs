//! The OpenCL backend, on the `opencl3` crate. The OpenCL library (`libOpenCL.so`, the ICD
//! loader) is loaded at run time, so tune builds without it; a machine without it, or
//! without any platform, gets [`Error::BackendUnavailable`].
//!
//! Choose a device by platform and device name (substrings, case-insensitive) or by index:
//!
//! ```no_run
//! use tune_runtime::backend::opencl::OpenCl;
//! # fn main() -> tune_runtime::Result<()> {
//! for d in OpenCl::devices()? {
//!     println!("{d}");
//! }
//! let gpu = OpenCl::select("nvidia")?;       // platform or device name contains "nvidia"
//! let cpu = OpenCl::select("portable/cpu")?; // platform / device substrings
//! let second = OpenCl::select("1")?;         // index in the list above
//! let explicit = OpenCl::by_index(0, 0)?;    // platform 0, its device 0
//! # Ok(())
//! # }
//! ```
//!
//! Kernels are timed with profiling events (`CL_QUEUE_PROFILING_ENABLE`): the time between
//! the start and the end of the kernel's execution on the device.
//!
//! NVIDIA's driver builds one program at a time per process, however many threads ask; on
//! its platform (Linux) programs are therefore built in builder processes, this executable
//! started again as an [`isolated`](super::isolated) worker (one per core, up to 8; each
//! holds a context on the device), and loaded here from their binaries.
//! [`OpenCl::build_processes`] or the environment variable `TUNE_OPENCL_BUILD_PROCESSES`
//! sets how many (0: build in this process, the default on other platforms).

mod build;
mod timing;

use std::ffi::c_void;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::ClError;
use opencl3::kernel::{set_kernel_arg, Kernel};
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::platform::{get_platforms, Platform};
use opencl3::program::Program;
use opencl3::types::{cl_device_id, cl_event, cl_mem, CL_BLOCKING};

use super::{Backend, CompileRequest, DeviceInfo, KernelLimits, LaunchArg, LaunchDims};
use crate::evaluate::Failure;
use crate::{Error, Result};
pub use build::BUILD_PROCESSES_ENV;

/// Error code of `cl3` when the OpenCL library cannot be loaded.
const DLOPEN_RUNTIME_LOAD_FAILED: i32 = -2000;
/// `CL_PLATFORM_NOT_FOUND_KHR`: the ICD loader found no platform.
const CL_PLATFORM_NOT_FOUND_KHR: i32 = -1001;
/// `CL_DEVICE_NOT_FOUND`: a platform without devices (of the type asked for).
const CL_DEVICE_NOT_FOUND: i32 = -1;

const HOW_TO_GET_ONE: &str = "install an OpenCL driver, e.g. `apt-get install pocl-opencl-icd` \
     (CPU) or the GPU vendor's driver, and check with `clinfo -l`";

fn cl_err(what: &str, source: ClError) -> Error {
    Error::OpenCl {
        context: what.into(),
        source,
    }
}

/// One OpenCL device, as listed by [`OpenCl::devices`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceEntry {
    /// Position in the flat list of all devices.
    pub index: usize,
    /// The platform's index.
    pub platform_index: usize,
    /// The device's index in its platform.
    pub device_index: usize,
    /// The platform's name.
    pub platform: String,
    /// The device's name.
    pub name: String,
    /// The OpenCL version the device reports.
    pub version: String,
    /// The driver's version.
    pub driver_version: String,
    id: usize,
}

impl fmt::Display for DeviceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}:{}): {} / {} [{}, driver {}]",
            self.index,
            self.platform_index,
            self.device_index,
            self.platform,
            self.name,
            self.version,
            self.driver_version
        )
    }
}

fn platforms() -> Result<Vec<Platform>> {
    match get_platforms() {
        Ok(p) if p.is_empty() => Err(Error::BackendUnavailable {
            backend: "opencl".into(),
            reason: format!("no OpenCL platform is installed; {HOW_TO_GET_ONE}"),
        }),
        Ok(p) => Ok(p),
        Err(e) if e.0 == DLOPEN_RUNTIME_LOAD_FAILED => Err(Error::BackendUnavailable {
            backend: "opencl".into(),
            reason: format!(
                "the OpenCL library (libOpenCL.so) could not be loaded; install the ICD \
                 loader (`apt-get install ocl-icd-libopencl1`) and {HOW_TO_GET_ONE}"
            ),
        }),
        Err(e) if e.0 == CL_PLATFORM_NOT_FOUND_KHR => Err(Error::BackendUnavailable {
            backend: "opencl".into(),
            reason: format!("no OpenCL platform is installed; {HOW_TO_GET_ONE}"),
        }),
        Err(e) => Err(cl_err("listing platforms", e)),
    }
}

/// An OpenCL device with its context and a profiling command queue: the OpenCL [`Backend`].
pub struct OpenCl {
    info: DeviceInfo,
    device: Device,
    context: Context,
    queue: CommandQueue,
    /// The device as a query `P:D` that finds it again (for builder processes).
    query: String,
    /// Builder processes, when programs are built there.
    #[cfg(target_os = "linux")]
    farm: Option<std::sync::Arc<super::isolated::BuildFarm>>,
}

impl fmt::Debug for OpenCl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenCl").field("info", &self.info).finish()
    }
}

impl OpenCl {
    /// Every device of every platform.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when there is no OpenCL library or no platform.
    pub fn devices() -> Result<Vec<DeviceEntry>> {
        Self::listing().map(|(devices, _)| devices)
    }

    /// Every device of every platform, and the platforms that listed none, with why.
    fn listing() -> Result<(Vec<DeviceEntry>, Vec<String>)> {
        // Drivers initialise (and rewrite the environment) while they list their devices.
        super::driver_env::loading(Self::listing_loaded)
    }

    fn listing_loaded() -> Result<(Vec<DeviceEntry>, Vec<String>)> {
        let mut out = Vec::new();
        let mut silent = Vec::new();
        for (pi, p) in platforms()?.iter().enumerate() {
            let pname = p.name().unwrap_or_default();
            // A platform without devices reports CL_DEVICE_NOT_FOUND: skip it, but say so
            // (a driver that cannot reach its device lists none, or fails).
            let ids = match p.get_devices(CL_DEVICE_TYPE_ALL) {
                Ok(ids) => ids,
                Err(e) if e.0 == CL_DEVICE_NOT_FOUND => Vec::new(),
                Err(e) => {
                    silent.push(format!(
                        "platform {pi} ({}): listing its devices failed: {e}",
                        pname.trim()
                    ));
                    continue;
                }
            };
            if ids.is_empty() {
                silent.push(format!("platform {pi} ({}): no devices", pname.trim()));
            }
            for (di, id) in ids.into_iter().enumerate() {
                let d = Device::new(id);
                out.push(DeviceEntry {
                    index: out.len(),
                    platform_index: pi,
                    device_index: di,
                    platform: pname.trim().to_string(),
                    name: d.name().unwrap_or_default().trim().to_string(),
                    version: d.version().unwrap_or_default().trim().to_string(),
                    driver_version: d.driver_version().unwrap_or_default().trim().to_string(),
                    id: id as usize,
                });
            }
        }
        if out.is_empty() {
            return Err(Error::BackendUnavailable {
                backend: "opencl".into(),
                reason: format!(
                    "the OpenCL platforms have no devices ({}); {HOW_TO_GET_ONE}",
                    silent.join("; ")
                ),
            });
        }
        Ok((out, silent))
    }

    /// The first device of the first platform.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when there is no device.
    pub fn first() -> Result<Self> {
        Self::select("")
    }

    /// Device `device` of platform `platform`.
    ///
    /// # Errors
    /// [`Error::DeviceNotFound`] listing the devices when there is no such device.
    pub fn by_index(platform: usize, device: usize) -> Result<Self> {
        Self::select(&format!("{platform}:{device}"))
    }

    /// The first device whose platform contains `platform` and whose name contains `device`
    /// (case-insensitive; empty matches anything).
    ///
    /// # Errors
    /// [`Error::DeviceNotFound`] listing the devices when none matches.
    pub fn by_name(platform: &str, device: &str) -> Result<Self> {
        Self::select(&format!("{platform}/{device}"))
    }

    /// A device by query: empty (the first device), `N` (index in [`OpenCl::devices`]),
    /// `P:D` (platform P, device D), `platform/device` (name substrings), or one substring
    /// matched against platform and device names; all case-insensitive.
    ///
    /// # Errors
    /// [`Error::DeviceNotFound`] listing the devices when none matches;
    /// [`Error::BackendUnavailable`] when OpenCL is missing.
    pub fn select(query: &str) -> Result<Self> {
        let (all, silent) = Self::listing()?;
        let q = query.trim().to_lowercase();
        let found = if q.is_empty() {
            all.first()
        } else if let Ok(i) = q.parse::<usize>() {
            all.get(i)
        } else if let Some((p, d)) = q
            .split_once(':')
            .and_then(|(p, d)| Some((p.parse::<usize>().ok()?, d.parse::<usize>().ok()?)))
        {
            all.iter()
                .find(|e| e.platform_index == p && e.device_index == d)
        } else if let Some((p, d)) = q.split_once('/') {
            let (p, d) = (p.trim(), d.trim());
            all.iter().find(|e| {
                e.platform.to_lowercase().contains(p) && e.name.to_lowercase().contains(d)
            })
        } else {
            all.iter().find(|e| {
                e.platform.to_lowercase().contains(&q) || e.name.to_lowercase().contains(&q)
            })
        };
        match found {
            Some(e) => Self::open(e),
            None => Err(Error::DeviceNotFound {
                backend: "opencl".into(),
                query: query.into(),
                available: all
                    .iter()
                    .map(ToString::to_string)
                    .chain(silent)
                    .collect::<Vec<_>>()
                    .join("; "),
            }),
        }
    }

    /// The device named by the environment variable `var` (see [`OpenCl::select`]), or the
    /// first device when it is unset.
    ///
    /// # Errors
    /// As [`OpenCl::select`].
    pub fn from_env(var: &str) -> Result<Self> {
        Self::select(&std::env::var(var).unwrap_or_default())
    }

    fn open(e: &DeviceEntry) -> Result<Self> {
        super::driver_env::loading(|| Self::open_loaded(e))
    }

    fn open_loaded(e: &DeviceEntry) -> Result<Self> {
        let device = Device::new(e.id as cl_device_id);
        let context = Context::from_device(&device).map_err(|x| cl_err("creating a context", x))?;
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
            .map_err(|x| cl_err("creating a profiling command queue", x))?;
        let sizes = device.max_work_item_sizes().unwrap_or_default();
        let mut max_work_item_sizes = [0usize; 3];
        for (d, s) in max_work_item_sizes.iter_mut().zip(sizes) {
            *d = s;
        }
        let info = DeviceInfo {
            backend: "opencl".into(),
            platform: e.platform.clone(),
            name: e.name.clone(),
            vendor: device.vendor().unwrap_or_default().trim().to_string(),
            driver_version: e.driver_version.clone(),
            max_work_group_size: device.max_work_group_size().unwrap_or(0),
            max_work_item_sizes,
            local_mem_bytes: device.local_mem_size().unwrap_or(0) as usize,
            global_mem_bytes: device.global_mem_size().unwrap_or(0),
            compute_units: device.max_compute_units().unwrap_or(0),
            clock_mhz: device.max_clock_frequency().unwrap_or(0),
            ..vendor_properties(&device)
        };
        let builders = build::default_processes(&e.platform)?;
        Ok(OpenCl {
            info,
            device,
            context,
            queue,
            query: format!("{}:{}", e.platform_index, e.device_index),
            #[cfg(target_os = "linux")]
            farm: None,
        }
        .build_processes(builders))
    }
}

/// What only vendor extensions tell: NVIDIA's `cl_nv_device_attribute_query` (warp size,
/// registers per block, compute capability) and AMD's `cl_amd_device_attribute_query`
/// (wavefront width, local memory per compute unit). Unknown stays 0.
fn vendor_properties(device: &Device) -> DeviceInfo {
    let extensions = device.extensions().unwrap_or_default();
    let mut info = DeviceInfo::default();
    if extensions.contains("cl_nv_device_attribute_query") {
        info.warp_width = device.wrap_size_nv().unwrap_or(0);
        let regs = device.registers_per_block_nv().unwrap_or(0);
        info.registers_per_work_group = regs;
        // Since Kepler a multiprocessor has as many registers as one block may use.
        info.registers_per_compute_unit = regs;
        let cc = (
            device.compute_capability_major_nv().unwrap_or(0),
            device.compute_capability_minor_nv().unwrap_or(0),
        );
        info.fp32_lanes_per_compute_unit = match cc {
            (5, _) | (6, 1) | (6, 2) | (8, 6..) | (9, _) | (10, _) | (12, _) => 128,
            (6, 0) | (7, _) | (8, 0) => 64,
            _ => 0,
        };
        info.max_threads_per_compute_unit = match cc {
            (0..=4, _) => 0,
            (7, 5) => 1024,
            (8, 6) | (8, 9) | (12, _) => 1536,
            _ => 2048,
        };
    }
    if extensions.contains("cl_amd_device_attribute_query") {
        info.warp_width = device.wavefront_width_amd().unwrap_or(0);
        info.local_mem_per_compute_unit =
            device.local_mem_size_per_compute_unit_amd().unwrap_or(0) as usize;
    }
    info
}

/// A compiled OpenCL kernel (and its program).
pub struct ClKernel {
    kernel: Mutex<Kernel>,
    _program: Program,
    limits: KernelLimits,
}

impl fmt::Debug for ClKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClKernel")
            .field("limits", &self.limits)
            .finish()
    }
}

impl Backend for OpenCl {
    type Buffer = Buffer<u8>;
    type Kernel = ClKernel;

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn compile(&self, r: &CompileRequest<'_>) -> Result<ClKernel, Failure> {
        let options = r.flags().join(" ");
        if options.contains('\0') || r.source.contains('\0') {
            return Err(Failure::Compile(
                "the source or an option contains a NUL byte".into(),
            ));
        }
        let program = self.build_program(r.source, &options)?;
        let kernel = Kernel::create(&program, r.kernel).map_err(|e| {
            Failure::Compile(format!(
                "no kernel `{}` in the program ({e}); it has: {}",
                r.kernel,
                program.kernel_names()
            ))
        })?;
        let id = self.device.id();
        let limits = KernelLimits {
            max_work_group_size: kernel.get_work_group_size(id).ok(),
            local_mem_bytes: kernel.get_local_mem_size(id).ok().map(|b| b as usize),
            // Standard OpenCL does not tell a kernel's registers.
            registers: None,
            private_mem_bytes: kernel.get_private_mem_size(id).ok().map(|b| b as usize),
            preferred_multiple: kernel.get_work_group_size_multiple(id).ok(),
        };
        Ok(ClKernel {
            kernel: Mutex::new(kernel),
            _program: program,
            limits,
        })
    }

    fn kernel_limits(&self, kernel: &ClKernel) -> KernelLimits {
        kernel.limits.clone()
    }

    fn builds_at_once(&self) -> Option<usize> {
        OpenCl::builds_at_once(self)
    }

    fn alloc(&self, bytes: usize) -> Result<Buffer<u8>> {
        // SAFETY: no host pointer is passed; the size is at least 1.
        unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                bytes.max(1),
                std::ptr::null_mut(),
            )
        }
        .map_err(|e| cl_err(&format!("allocating {bytes} bytes"), e))
    }

    fn write(&self, buffer: &mut Buffer<u8>, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: blocking write of `data`, which outlives the call; the evaluator allocates
        // buffers at least as large as their data.
        unsafe {
            self.queue
                .enqueue_write_buffer(buffer, CL_BLOCKING, 0, data, &[])
        }
        .map_err(|e| cl_err("writing a buffer", e))?;
        Ok(())
    }

    fn read(&self, buffer: &Buffer<u8>, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: blocking read into `out`, which outlives the call.
        unsafe {
            self.queue
                .enqueue_read_buffer(buffer, CL_BLOCKING, 0, out, &[])
        }
        .map_err(|e| cl_err("reading a buffer", e))?;
        Ok(())
    }

    fn launch(
        &self,
        kernel: &ClKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        self.launch_repeated(kernel, dims, args, 1)
    }

    fn launch_repeated(
        &self,
        kernel: &ClKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
        count: usize,
    ) -> Result<Duration, Failure> {
        let k = kernel
            .kernel
            .lock()
            .map_err(|_| Failure::Other("kernel lock poisoned".into()))?;
        for (i, a) in args.iter().enumerate() {
            let i = i as u32;
            // SAFETY: each pointer is valid for the size passed with it during the call.
            let r = unsafe {
                match a {
                    LaunchArg::Buffer(b) => {
                        let mem: cl_mem = b.get();
                        set_kernel_arg(
                            k.get(),
                            i,
                            std::mem::size_of::<cl_mem>(),
                            &mem as *const cl_mem as *const c_void,
                        )
                    }
                    LaunchArg::Scalar(bytes) => {
                        set_kernel_arg(k.get(), i, bytes.len(), bytes.as_ptr() as *const c_void)
                    }
                    LaunchArg::Local(n) => {
                        set_kernel_arg(k.get(), i, (*n).max(1), std::ptr::null())
                    }
                }
            };
            r.map_err(|e| {
                Failure::Launch(format!(
                    "setting argument {i} ({a:?}): {}",
                    opencl3::error_codes::ClError(e)
                ))
            })?;
        }
        let n = dims.dims.clamp(1, 3);
        let local = dims.local.map(|l| l[..n].to_vec());
        // Back-to-back launches on the in-order queue, held behind a gate until all are
        // enqueued; the device time is the time the device was busy with them (timing.rs
        // says why).
        let mut gate = timing::Gate::new(&self.context)
            .map_err(|e| Failure::Launch(format!("creating the launches' gate: {e}")))?;
        let mut events = Vec::with_capacity(count.max(1));
        for i in 0..count.max(1) {
            let wait = [gate.event()];
            let wait: &[cl_event] = if i == 0 { &wait } else { &[] };
            // SAFETY: the sizes point to `n` elements that live through the call.
            let event = unsafe {
                self.queue.enqueue_nd_range_kernel(
                    k.get(),
                    n as u32,
                    std::ptr::null(),
                    dims.global[..n].as_ptr(),
                    local.as_ref().map_or(std::ptr::null(), |l| l.as_ptr()),
                    wait,
                )
            }
            .map_err(|e| {
                Failure::Launch(format!(
                    "enqueueing with global {:?}, local {:?}: {e}",
                    &dims.global[..n],
                    local
                ))
            })?;
            events.push(event);
        }
        gate.open()
            .map_err(|e| Failure::Launch(format!("opening the launches' gate: {e}")))?;
        drop(k);
        let last = events
            .last()
            .ok_or_else(|| Failure::Other("no launch".into()))?;
        last.wait()
            .map_err(|e| Failure::Launch(format!("kernel execution: {e}")))?;
        let profiling =
            |e: opencl3::error_codes::ClError| Failure::Other(format!("profiling: {e}"));
        let intervals = events
            .iter()
            .map(|e| {
                Ok((
                    e.profiling_command_start().map_err(profiling)?,
                    e.profiling_command_end().map_err(profiling)?,
                ))
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        Ok(Duration::from_nanos(timing::busy_ns(intervals)))
    }
}
