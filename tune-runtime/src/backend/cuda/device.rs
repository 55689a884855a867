//! Finding CUDA, choosing a device and reading its limits.

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream};

use crate::{Error, Result};

pub(crate) fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: "cuda".into(),
        reason: reason.into(),
    }
}

/// Checks that the CUDA driver library (`libcuda`) and NVRTC (`libnvrtc`) can be loaded, that
/// the driver initialises and that it sees at least one device.
///
/// # Errors
/// [`Error::BackendUnavailable`] saying what is missing; never panics.
pub fn probe() -> Result<()> {
    probe_driver()?;
    probe_nvrtc()?;
    let count = crate::backend::driver_env::loading(CudaContext::device_count)
        .map_err(|e| unavailable(format!("the CUDA driver did not initialise: {e}")))?;
    if count <= 0 {
        return Err(unavailable(
            "the CUDA driver sees no device; check `nvidia-smi` and `CUDA_VISIBLE_DEVICES`",
        ));
    }
    Ok(())
}

/// Checks only that the CUDA driver library can be loaded.
pub(crate) fn probe_driver() -> Result<()> {
    // SAFETY: only tries to dlopen the library; no CUDA function is called.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(unavailable(
            "the CUDA driver library (libcuda.so) was not found; install the NVIDIA driver or \
             add its folder to `LD_LIBRARY_PATH`",
        ))
    }
}

/// Checks only that NVRTC can be loaded.
pub(crate) fn probe_nvrtc() -> Result<()> {
    // SAFETY: only tries to dlopen the library; no NVRTC function is called.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(unavailable(
            "NVRTC (libnvrtc.so.13) was not found; install the CUDA toolkit (or the \
             `nvidia-cuda-nvrtc` wheel) and add its `lib` folder to `LD_LIBRARY_PATH`",
        ))
    }
}

/// Which device to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The device with this ordinal (0 is the first).
    Index(usize),
    /// The first device whose name contains this text (case-insensitive).
    Name(String),
}

impl Default for DeviceSelector {
    fn default() -> Self {
        DeviceSelector::Index(0)
    }
}

impl From<usize> for DeviceSelector {
    fn from(i: usize) -> Self {
        DeviceSelector::Index(i)
    }
}

impl From<&str> for DeviceSelector {
    fn from(s: &str) -> Self {
        DeviceSelector::Name(s.to_owned())
    }
}

/// A device's properties and limits, read once when it is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaProps {
    /// The ordinal.
    pub ordinal: usize,
    /// The device name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Most threads in a block.
    pub max_threads_per_block: u32,
    /// Most threads per block dimension.
    pub max_block_dim: [u32; 3],
    /// Most blocks per grid dimension.
    pub max_grid_dim: [u32; 3],
    /// Shared memory per block without opting in (usually 48 KiB).
    pub max_shared_per_block: u32,
    /// Shared memory per block after opting in with the function attribute.
    pub max_shared_per_block_optin: u32,
    /// 32-bit registers available to one block.
    pub max_registers_per_block: u32,
    /// L2 cache size in bytes.
    pub l2_bytes: u64,
    /// Threads per warp.
    pub warp_size: u32,
    /// Global memory in bytes.
    pub total_memory: u64,
    /// 32-bit registers of one multiprocessor.
    pub max_registers_per_multiprocessor: u32,
    /// Shared memory of one multiprocessor, bytes.
    pub max_shared_per_multiprocessor: u32,
    /// Most resident threads per multiprocessor.
    pub max_threads_per_multiprocessor: u32,
    /// Most resident blocks per multiprocessor.
    pub max_blocks_per_multiprocessor: u32,
    /// The peak SM clock, MHz (0 when the driver does not report it).
    pub clock_mhz: u32,
}

impl CudaProps {
    /// A device of the given compute capability with Hopper-like limits; for unit tests of the
    /// limit logic and for offline compilation.
    pub fn hypothetical(name: &str, compute_capability: (u32, u32)) -> Self {
        CudaProps {
            ordinal: 0,
            name: name.into(),
            compute_capability,
            multiprocessors: 132,
            max_threads_per_block: 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
            max_shared_per_block: 48 * 1024,
            max_shared_per_block_optin: 227 * 1024,
            max_registers_per_block: 65536,
            l2_bytes: 50 * 1024 * 1024,
            warp_size: 32,
            total_memory: 80 << 30,
            max_registers_per_multiprocessor: 65536,
            max_shared_per_multiprocessor: 228 * 1024,
            max_threads_per_multiprocessor: 2048,
            max_blocks_per_multiprocessor: 32,
            clock_mhz: 1980,
        }
    }

    /// FP32 fused multiply-adds per clock of one multiprocessor, by compute capability
    /// (the CUDA programming guide's arithmetic-throughput table); 0 when unknown.
    pub fn fp32_lanes_per_multiprocessor(&self) -> u32 {
        match self.compute_capability {
            (5, _) | (6, 1) | (6, 2) | (8, 6..) | (9, _) | (10, _) | (12, _) => 128,
            (6, 0) | (7, _) | (8, 0) => 64,
            _ => 0,
        }
    }

    /// `"NVIDIA H200 (CUDA, sm_90)"`, as recorded in results.
    pub fn describe(&self) -> String {
        let (ma, mi) = self.compute_capability;
        format!("{} (CUDA, sm_{ma}{mi})", self.name)
    }

    fn read(ctx: &Arc<CudaContext>) -> Result<Self> {
        let e = |what: &str, err: cudarc::driver::DriverError| {
            unavailable(format!(
                "could not read {what} of device {}: {err}",
                ctx.ordinal()
            ))
        };
        let a = |attr: Attr| -> Result<u32> {
            ctx.attribute(attr)
                .map(|v| v.max(0) as u32)
                .map_err(|err| e("an attribute", err))
        };
        let (ma, mi) = ctx
            .compute_capability()
            .map_err(|err| e("the compute capability", err))?;
        Ok(CudaProps {
            ordinal: ctx.ordinal(),
            name: ctx.name().map_err(|err| e("the name", err))?,
            compute_capability: (ma.max(0) as u32, mi.max(0) as u32),
            multiprocessors: a(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_per_block: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_per_block_optin: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            max_registers_per_block: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
            l2_bytes: u64::from(a(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?),
            warp_size: a(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            total_memory: ctx.total_mem().map_err(|err| e("the memory size", err))? as u64,
            max_registers_per_multiprocessor: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            )?,
            max_shared_per_multiprocessor: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            )?,
            max_threads_per_multiprocessor: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?,
            max_blocks_per_multiprocessor: a(
                Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
            )?,
            // Reported in kHz; deprecated in recent drivers, so 0 rather than an error.
            clock_mhz: a(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0) / 1000,
        })
    }
}

/// Lists the devices the driver sees.
///
/// # Errors
/// [`Error::BackendUnavailable`] when CUDA is missing.
pub fn list_devices() -> Result<Vec<CudaProps>> {
    probe()?;
    let count = CudaContext::device_count()
        .map_err(|e| unavailable(format!("cuDeviceGetCount failed: {e}")))?;
    let mut out = Vec::new();
    for i in 0..count.max(0) as usize {
        let ctx = CudaContext::new(i)
            .map_err(|e| unavailable(format!("could not open device {i}: {e}")))?;
        out.push(CudaProps::read(&ctx)?);
    }
    Ok(out)
}

/// An open CUDA device: its (primary) context, one stream, and its limits.
#[derive(Clone, Debug)]
pub struct CudaDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: CudaProps,
}

impl CudaDevice {
    /// Opens a device.
    ///
    /// ```no_run
    /// # fn main() -> tune_runtime::Result<()> {
    /// use tune_runtime::cuda::CudaDevice;
    /// let gpu = CudaDevice::open("H200")?; // or CudaDevice::open(0)
    /// println!("{}", gpu.info().describe());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when CUDA is missing or no device matches (the message
    /// lists the devices there are).
    pub fn open(selector: impl Into<DeviceSelector>) -> Result<Self> {
        probe()?;
        let ordinal = match selector.into() {
            DeviceSelector::Index(i) => {
                let count = CudaContext::device_count().unwrap_or(0).max(0) as usize;
                if i >= count {
                    let known: Vec<String> = list_devices()?
                        .iter()
                        .map(|d| format!("{}: {}", d.ordinal, d.name))
                        .collect();
                    return Err(Error::DeviceNotFound {
                        backend: "cuda".into(),
                        query: i.to_string(),
                        available: known.join(", "),
                    });
                }
                i
            }
            DeviceSelector::Name(name) => {
                let devices = list_devices()?;
                let wanted = name.to_lowercase();
                match devices
                    .iter()
                    .find(|d| d.name.to_lowercase().contains(&wanted))
                {
                    Some(d) => d.ordinal,
                    None => {
                        let known: Vec<String> = devices
                            .iter()
                            .map(|d| format!("{}: {}", d.ordinal, d.name))
                            .collect();
                        return Err(Error::DeviceNotFound {
                            backend: "cuda".into(),
                            query: name,
                            available: known.join(", "),
                        });
                    }
                }
            }
        };
        Self::open_ordinal(ordinal)
    }

    /// Opens a context of its own on device `ordinal` (not the primary one, so that after a
    /// sticky error it can be destroyed and replaced without touching other users').
    pub(crate) fn open_ordinal(ordinal: usize) -> Result<Self> {
        let ctx = CudaContext::new_non_primary(ordinal, 0)
            .map_err(|e| unavailable(format!("could not open CUDA device {ordinal}: {e}")))?;
        // One stream, used in order: cudarc's cross-stream event tracking is not needed (and
        // its events would be captured into the graphs of repeated launches).
        // SAFETY: every buffer of this backend is used on the one stream made here; the
        // context and stream leave this type only through `unsafe` accessors whose callers
        // promise the same.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| unavailable(format!("could not create a CUDA stream: {e}")))?;
        let info = CudaProps::read(&ctx)?;
        Ok(CudaDevice { ctx, stream, info })
    }

    /// The device's properties and limits.
    pub fn info(&self) -> &CudaProps {
        &self.info
    }

    /// The cudarc context, for work outside tune (cuBLAS, own kernels).
    ///
    /// # Safety
    /// The context has cudarc's event tracking disabled, so cudarc does not order the uses
    /// of a buffer on different streams. Use every buffer allocated through this context
    /// only on [`CudaDevice::stream`], or synchronise the streams yourself.
    pub unsafe fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream tune launches on.
    ///
    /// # Safety
    /// As for [`CudaDevice::context`], which the stream leads to (`CudaStream::context`).
    pub unsafe fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The context, inside the backend (which uses the one stream only).
    pub(super) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream, inside the backend.
    pub(super) fn strm(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}
