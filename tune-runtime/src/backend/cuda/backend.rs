//! [`Backend`] for CUDA: NVRTC compilation, buffers, launches timed with CUDA events.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use cudarc::driver::sys::{
    CUevent_flags, CUfunction_attribute as FnAttr, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DriverError,
};
use cudarc::nvrtc::Ptx;

use super::compile::{self, Arch, Compiled};
use super::device::{CudaDevice, CudaProps, DeviceSelector};
use super::disk::DiskCache;
use super::launch::{check_device_limits, check_kernel_limits, Geometry, KernelAttributes};
use crate::backend::{
    check_fits, Backend, CompileRequest, DeviceInfo, KernelLimits, LaunchArg, LaunchDims,
    Occupancy, OccupancyLimit, Transfer,
};
use crate::{Error, Failure, Result};

fn backend_err(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: "cuda".into(),
        message: message.into(),
    }
}

fn drv(what: &str, e: DriverError) -> Failure {
    Failure::Launch(format!("{what}: {e:?}"))
}

type Slot = Arc<Mutex<Option<CudaSlice<u8>>>>;

/// A device buffer of the CUDA backend. After a sticky error the backend re-allocates it in
/// the new context (the evaluator restores its contents before every configuration).
pub struct CudaBuffer {
    slot: Slot,
    bytes: usize,
}

impl CudaBuffer {
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// A compiled kernel: NVRTC's image, loaded into the backend's current context on demand.
pub struct CudaKernel {
    compiled: Compiled,
    name: String,
    attrs: KernelAttributes,
    /// The function as loaded in the context of that generation, with its module (where
    /// its `__constant__` arrays live).
    loaded: Mutex<Option<Loaded>>,
    /// `__constant__` arrays to fill whenever the module is loaded ([`Backend::set_constants`]).
    constants: Mutex<Vec<(String, Vec<u8>)>>,
}

/// A kernel's module loaded in the context of one generation.
type Loaded = (u64, Arc<CudaModule>, CudaFunction);

impl CudaKernel {
    /// NVRTC's output (image, architecture, log, compile seconds).
    pub fn compiled(&self) -> &Compiled {
        &self.compiled
    }

    /// The kernel's function attributes (registers, threads per block, shared and local
    /// memory).
    pub fn attributes(&self) -> &KernelAttributes {
        &self.attrs
    }
}

struct State {
    dev: CudaDevice,
    generation: u64,
    poisoned: bool,
    /// Why the device is lost to this process: set when a rebuild after a sticky error
    /// failed.
    lost: Option<String>,
    flush: Option<CudaSlice<u8>>,
    buffers: Vec<Weak<Mutex<Option<CudaSlice<u8>>>>>,
}

/// The CUDA backend: one device, one context and stream, NVRTC for compilation.
///
/// ```no_run
/// # fn main() -> tune_runtime::Result<()> {
/// use tune_runtime::backend::{BufferArg, KernelEvaluator, KernelSpec};
/// use tune_runtime::cuda::Cuda;
/// use tune_runtime::{Param, SpaceBuilder};
///
/// let n = 1 << 20;
/// let space = SpaceBuilder::new()
///     .param(Param::<usize>::values("BS", [64, 128, 256]))
///     .build()?;
/// let spec = KernelSpec::new(
///     r#"extern "C" __global__ void twice(float* x) { x[blockIdx.x * BS + threadIdx.x] *= 2.0f; }"#,
///     "twice",
/// )
/// .global(move |_| [n])
/// .local(|c| [c.get::<usize>(0)])
/// .buffer(BufferArg::random::<f32>(n, 1).output());
/// let evaluator = KernelEvaluator::new(Cuda::open(0)?, &space, spec)?;
/// # let _ = evaluator;
/// # Ok(()) }
/// ```
pub struct Cuda {
    info: DeviceInfo,
    props: CudaProps,
    arch: Arch,
    flush_l2: bool,
    disk: Option<DiskCache>,
    state: Mutex<State>,
    ctx: Mutex<(u64, Arc<CudaContext>)>,
    compile_nanos: AtomicU64,
    compiles: AtomicU64,
}

impl Cuda {
    /// Opens a device by index or by (part of) its name, case-insensitive.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] when `libcuda` or `libnvrtc` is missing or the driver
    /// sees no device; [`Error::DeviceNotFound`] when none matches.
    pub fn open(selector: impl Into<DeviceSelector>) -> Result<Self> {
        let dev = CudaDevice::open(selector)?;
        let props = dev.info().clone();
        let mut driver = 0;
        // SAFETY: the driver library is loaded (probed by `open`); plain out-parameter.
        let _ = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
        let info = DeviceInfo {
            backend: "cuda".into(),
            platform: format!(
                "CUDA {}.{}, sm_{}{}",
                driver / 1000,
                (driver % 1000) / 10,
                props.compute_capability.0,
                props.compute_capability.1
            ),
            name: props.name.clone(),
            vendor: "NVIDIA".into(),
            driver_version: driver.to_string(),
            max_work_group_size: props.max_threads_per_block as usize,
            max_work_item_sizes: props.max_block_dim.map(|d| d as usize),
            local_mem_bytes: props
                .max_shared_per_block_optin
                .max(props.max_shared_per_block) as usize,
            global_mem_bytes: props.total_memory,
            compute_units: props.multiprocessors,
            warp_width: props.warp_size,
            registers_per_compute_unit: props.max_registers_per_multiprocessor,
            registers_per_work_group: props.max_registers_per_block,
            local_mem_per_compute_unit: props.max_shared_per_multiprocessor as usize,
            max_threads_per_compute_unit: props.max_threads_per_multiprocessor,
            max_work_groups_per_compute_unit: props.max_blocks_per_multiprocessor,
            clock_mhz: props.clock_mhz,
            fp32_lanes_per_compute_unit: props.fp32_lanes_per_multiprocessor(),
        };
        let arch = Arch::for_device(&props);
        let ctx = dev.ctx().clone();
        Ok(Cuda {
            info,
            props,
            arch,
            flush_l2: false,
            disk: None,
            state: Mutex::new(State {
                dev,
                generation: 0,
                poisoned: false,
                lost: None,
                flush: None,
                buffers: Vec::new(),
            }),
            ctx: Mutex::new((0, ctx)),
            compile_nanos: AtomicU64::new(0),
            compiles: AtomicU64::new(0),
        })
    }

    /// Overwrites a buffer twice the size of the L2 cache before every timed launch, so that
    /// each repetition starts with a cold cache (off by default).
    ///
    /// # Errors
    /// [`Error::Backend`] when the flush buffer cannot be allocated.
    pub fn flush_l2(mut self, yes: bool) -> Result<Self> {
        self.flush_l2 = yes;
        let st = self
            .state
            .get_mut()
            .map_err(|_| backend_err("state lock poisoned"))?;
        st.flush = if yes {
            Some(Self::flush_buffer(&st.dev).map_err(|f| backend_err(f.to_string()))?)
        } else {
            None
        };
        Ok(self)
    }

    fn flush_buffer(dev: &CudaDevice) -> Result<CudaSlice<u8>, Failure> {
        let n = (dev.info().l2_bytes as usize).max(1 << 20) * 2;
        dev.strm()
            .alloc_zeros::<u8>(n)
            .map_err(|e| drv("allocating the L2 flush buffer", e))
    }

    /// Keeps NVRTC's outputs in `dir` (created when needed) and reuses them in later runs:
    /// a configuration compiled before is loaded without compiling, one NVRTC refused is
    /// refused again with the same log (delete the folder after changing the compiler's
    /// headers; the source, options, architecture and NVRTC version are part of the key).
    /// Off by default; `tune run` keeps one in the user's cache folder.
    pub fn compile_cache(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.disk = Some(DiskCache::new(dir));
        self
    }

    /// The folder of [`Cuda::compile_cache`], if any.
    pub fn compile_cache_dir(&self) -> Option<&std::path::Path> {
        self.disk.as_ref().map(DiskCache::dir)
    }

    /// The CUDA properties and limits of the device.
    pub fn props(&self) -> &CudaProps {
        &self.props
    }

    /// The architecture NVRTC compiles for.
    pub fn arch(&self) -> &Arch {
        &self.arch
    }

    /// Seconds spent in NVRTC so far (summed over threads) and the number of compilations.
    pub fn compile_stats(&self) -> (f64, u64) {
        (
            self.compile_nanos.load(Ordering::Relaxed) as f64 * 1e-9,
            self.compiles.load(Ordering::Relaxed),
        )
    }

    /// The current context and stream, for work beside tune (a cuBLAS baseline).
    ///
    /// # Errors
    /// [`Error::Backend`] when the state lock is poisoned.
    ///
    /// # Safety
    /// The context has cudarc's event tracking disabled (the backend uses one stream, and
    /// tracking events would be captured into its graphs of repeated launches), so cudarc
    /// does not order the uses of a buffer on different streams: use every buffer allocated
    /// through them only on the returned stream, or synchronise the streams yourself.
    pub unsafe fn context(&self) -> Result<(Arc<CudaContext>, Arc<CudaStream>)> {
        let st = self.lock().map_err(|f| backend_err(f.to_string()))?;
        Ok((st.dev.ctx().clone(), st.dev.strm().clone()))
    }

    /// Whether the last launch left the context unusable (it is rebuilt at the next launch).
    pub fn is_poisoned(&self) -> bool {
        self.state.lock().map(|s| s.poisoned).unwrap_or(true)
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, Failure> {
        self.state
            .lock()
            .map_err(|_| Failure::Other("the CUDA backend's state lock is poisoned".into()))
    }

    /// Replaces a context poisoned by a sticky error (illegal address, kernel fault): a new
    /// context, a new stream, every live buffer re-allocated (zeroed), modules reloaded lazily.
    /// Current drivers keep the whole process in the error state (seen on an H200 with driver
    /// 580: creating a new context fails with the same error), so this then reports a
    /// [`Failure::Launch`] that says to restart the process.
    fn rebuild(&self, st: &mut State) -> Result<(), Failure> {
        let ordinal = st.dev.info().ordinal;
        let slots: Vec<Slot> = st.buffers.iter().filter_map(Weak::upgrade).collect();
        let mut guards = Vec::with_capacity(slots.len());
        for s in &slots {
            let mut g = s
                .lock()
                .map_err(|_| Failure::Other("buffer lock poisoned".into()))?;
            let bytes = g.as_ref().map_or(1, CudaSlice::len);
            *g = None;
            guards.push((g, bytes));
        }
        st.flush = None;
        let fresh = match CudaDevice::open_ordinal(ordinal) {
            Ok(fresh) => fresh,
            Err(e) => {
                let why = format!(
                    "the CUDA context could not be rebuilt after a sticky error ({e}); the \
                     driver keeps a process in this state until it exits"
                );
                st.lost = Some(why.clone());
                return Err(Failure::Launch(format!(
                    "{why}: restart the process (a tuning run resumes from its log), or run \
                     kernels that may fault through `backend::isolated::Isolated`, which \
                     replaces its worker process"
                )));
            }
        };
        for (g, bytes) in guards.iter_mut() {
            **g = Some(
                fresh
                    .strm()
                    .alloc_zeros::<u8>(*bytes)
                    .map_err(|e| drv("re-allocating a buffer", e))?,
            );
        }
        if self.flush_l2 {
            st.flush = Some(Self::flush_buffer(&fresh)?);
        }
        st.generation += 1;
        if let Ok(mut c) = self.ctx.lock() {
            *c = (st.generation, fresh.ctx().clone());
        }
        st.dev = fresh;
        st.buffers = slots.iter().map(Arc::downgrade).collect();
        st.poisoned = false;
        Ok(())
    }

    fn load(
        ctx: &Arc<CudaContext>,
        compiled: &Compiled,
        name: &str,
    ) -> Result<(Arc<CudaModule>, CudaFunction), Failure> {
        let ptx = if compiled.arch.cubin {
            Ptx::from_binary(compiled.image.clone())
        } else {
            Ptx::from_src(String::from_utf8_lossy(&compiled.image).into_owned())
        };
        let module = ctx
            .load_module(ptx)
            .map_err(|e| Failure::Compile(format!("loading the module failed: {e:?}")))?;
        let f = module.load_function(name).map_err(|e| {
            Failure::Compile(format!(
                "no kernel `{name}` in the module ({e:?}); declare it `extern \"C\" __global__`"
            ))
        })?;
        Ok((module, f))
    }

    /// Copies each `(name, bytes)` into the module's `__constant__` array of that name.
    fn fill(
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
        constants: &[(String, Vec<u8>)],
    ) -> Result<(), Failure> {
        for (name, bytes) in constants {
            let mut symbol = module.get_global(name, stream).map_err(|e| {
                Failure::Compile(format!(
                    "no `__constant__` array `{name}` in the module ({e:?}); declare it at \
                     file scope, `extern \"C\"` if the source is C++"
                ))
            })?;
            if bytes.len() > symbol.len() {
                return Err(Failure::Other(format!(
                    "{} bytes do not fit the `__constant__` array `{name}` ({} bytes)",
                    bytes.len(),
                    symbol.len()
                )));
            }
            let mut view = symbol.slice_mut(0..bytes.len());
            stream
                .memcpy_htod(bytes.as_slice(), &mut view)
                .and_then(|()| stream.synchronize())
                .map_err(|e| drv("filling a `__constant__` array", e))?;
        }
        Ok(())
    }

    fn function(&self, st: &State, kernel: &CudaKernel) -> Result<CudaFunction, Failure> {
        let mut loaded = kernel
            .loaded
            .lock()
            .map_err(|_| Failure::Other("kernel lock poisoned".into()))?;
        if let Some((gen, _, f)) = loaded.as_ref() {
            if *gen == st.generation {
                return Ok(f.clone());
            }
        }
        let (module, f) = Self::load(st.dev.ctx(), &kernel.compiled, &kernel.name)?;
        // A module loaded again (in a rebuilt context) starts with its constants unset.
        let constants = kernel
            .constants
            .lock()
            .map_err(|_| Failure::Other("kernel lock poisoned".into()))?;
        Self::fill(&module, st.dev.strm(), &constants)?;
        *loaded = Some((st.generation, module, f.clone()));
        Ok(f)
    }

    /// Turns a driver error into a failure; a sticky error (the context no longer
    /// synchronises) marks the context for a rebuild before the next launch.
    fn launch_failure(st: &mut State, what: &str, e: DriverError) -> Failure {
        let sticky = st.dev.ctx().synchronize().is_err();
        if sticky {
            st.poisoned = true;
        }
        Failure::Launch(format!(
            "{what}: {e:?}{}",
            if sticky {
                " (sticky error: the context is unusable; the next launch tries to rebuild it, \
                 which current drivers refuse within the same process)"
            } else {
                ""
            }
        ))
    }
}

impl Backend for Cuda {
    type Buffer = CudaBuffer;
    type Kernel = CudaKernel;

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn healthy(&self) -> bool {
        !self.is_poisoned()
    }

    fn lost(&self) -> Option<String> {
        match self.state.lock() {
            Ok(st) => st.lost.clone(),
            Err(_) => Some("the CUDA backend's state lock is poisoned".into()),
        }
    }

    fn compile(&self, request: &CompileRequest<'_>) -> Result<CudaKernel, Failure> {
        let name = format!("{}.cu", request.kernel);
        let (compiled, ran) = match &self.disk {
            Some(disk) => disk.compile(
                request.source,
                &name,
                &self.arch,
                request.defines,
                request.options,
            ),
            None => (
                compile::compile(
                    request.source,
                    &name,
                    &self.arch,
                    request.defines,
                    request.options,
                ),
                true,
            ),
        };
        let compiled = compiled?;
        if ran {
            self.compile_nanos
                .fetch_add((compiled.seconds * 1e9) as u64, Ordering::Relaxed);
            self.compiles.fetch_add(1, Ordering::Relaxed);
        }
        // A context poisoned by a sticky error cannot load it: replace the context first
        // (or say the device is lost), so that later configurations do not all fail here.
        {
            let mut st = self.lock()?;
            if st.poisoned {
                self.rebuild(&mut st)?;
            }
        }
        // Load it once here, on the compiling thread, to read the kernel's own limits.
        let (gen, ctx) = self
            .ctx
            .lock()
            .map(|c| c.clone())
            .map_err(|_| Failure::Other("context lock poisoned".into()))?;
        let (module, func) = Self::load(&ctx, &compiled, request.kernel)?;
        let a = |attr| {
            func.get_attribute(attr)
                .map(|v| v.max(0) as u32)
                .map_err(|e| drv("reading a function attribute", e))
        };
        let attrs = KernelAttributes {
            max_threads_per_block: a(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            registers: a(FnAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_shared_bytes: a(FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: a(FnAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        };
        Ok(CudaKernel {
            compiled,
            name: request.kernel.to_owned(),
            attrs,
            loaded: Mutex::new(Some((gen, module, func))),
            constants: Mutex::new(Vec::new()),
        })
    }

    fn set_constants(
        &self,
        kernel: &CudaKernel,
        constants: &[(String, Vec<u8>)],
    ) -> Result<(), Failure> {
        if constants.is_empty() {
            return Ok(());
        }
        let poisoned = || Failure::Other("kernel lock poisoned".into());
        *kernel.constants.lock().map_err(|_| poisoned())? = constants.to_vec();
        let st = self.lock()?;
        let loaded = kernel.loaded.lock().map_err(|_| poisoned())?;
        match loaded.as_ref() {
            // Loaded in this context: fill it now. Otherwise loading it fills it.
            Some((gen, module, _)) if *gen == st.generation => {
                Self::fill(module, st.dev.strm(), constants)
            }
            _ => Ok(()),
        }
    }

    fn kernel_limits(&self, kernel: &CudaKernel) -> KernelLimits {
        KernelLimits {
            max_work_group_size: Some(kernel.attrs.max_threads_per_block as usize),
            local_mem_bytes: Some(kernel.attrs.static_shared_bytes as usize),
            registers: Some(kernel.attrs.registers as usize),
            private_mem_bytes: Some(kernel.attrs.local_bytes as usize),
            preferred_multiple: Some(self.props.warp_size.max(1) as usize),
        }
    }

    /// The driver's occupancy calculator (`cuOccupancyMaxActiveBlocksPerMultiprocessor`),
    /// on the function as loaded when it was compiled; `None` (an estimate instead) when
    /// that context is gone or the driver refuses.
    fn occupancy(
        &self,
        kernel: &CudaKernel,
        work_group_size: usize,
        dynamic_local_bytes: usize,
    ) -> Option<Occupancy> {
        let func = kernel.loaded.lock().ok()?.as_ref()?.2.clone();
        let block = u32::try_from(work_group_size).ok()?;
        let total = dynamic_local_bytes + kernel.attrs.static_shared_bytes as usize;
        if total > self.props.max_shared_per_block as usize {
            // As at launch: opt in to more than the default shared memory per block.
            func.set_attribute(
                FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                i32::try_from(dynamic_local_bytes).ok()?,
            )
            .ok()?;
        }
        let n = func
            .occupancy_max_active_blocks_per_multiprocessor(block, dynamic_local_bytes, None)
            .ok()?;
        Some(Occupancy {
            work_groups: n,
            limited_by: OccupancyLimit::Driver,
        })
    }

    fn alloc(&self, bytes: usize) -> Result<CudaBuffer> {
        let mut st = self.lock().map_err(|f| backend_err(f.to_string()))?;
        if st.poisoned {
            self.rebuild(&mut st)
                .map_err(|f| backend_err(f.to_string()))?;
        }
        let slice = st
            .dev
            .strm()
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(|source| Error::Cuda {
                context: format!("allocating {bytes} bytes"),
                source,
            })?;
        let slot: Slot = Arc::new(Mutex::new(Some(slice)));
        st.buffers.retain(|w| w.strong_count() > 0);
        st.buffers.push(Arc::downgrade(&slot));
        Ok(CudaBuffer {
            slot,
            bytes: bytes.max(1),
        })
    }

    fn write(&self, buffer: &mut CudaBuffer, data: &[u8]) -> Result<()> {
        let mut st = self.lock().map_err(|f| backend_err(f.to_string()))?;
        if st.poisoned {
            self.rebuild(&mut st)
                .map_err(|f| backend_err(f.to_string()))?;
        }
        check_fits(Transfer::Write, data.len(), buffer.bytes).map_err(backend_err)?;
        if data.is_empty() {
            return Ok(());
        }
        let mut g = buffer
            .slot
            .lock()
            .map_err(|_| backend_err("buffer lock poisoned"))?;
        let slice = g
            .as_mut()
            .ok_or_else(|| backend_err("buffer lost with its context"))?;
        let stream = st.dev.strm();
        let mut view = slice.slice_mut(0..data.len());
        stream
            .memcpy_htod(data, &mut view)
            .and_then(|()| stream.synchronize())
            .map_err(|source| Error::Cuda {
                context: "copy to device".into(),
                source,
            })
    }

    fn read(&self, buffer: &CudaBuffer, out: &mut [u8]) -> Result<()> {
        let st = self.lock().map_err(|f| backend_err(f.to_string()))?;
        check_fits(Transfer::Read, out.len(), buffer.bytes).map_err(backend_err)?;
        if out.is_empty() {
            return Ok(());
        }
        let g = buffer
            .slot
            .lock()
            .map_err(|_| backend_err("buffer lock poisoned"))?;
        let slice = g
            .as_ref()
            .ok_or_else(|| backend_err("buffer lost with its context"))?;
        let stream = st.dev.strm();
        let view = slice.slice(0..out.len());
        stream
            .memcpy_dtoh(&view, out)
            .and_then(|()| stream.synchronize())
            .map_err(|source| Error::Cuda {
                context: "copy from device".into(),
                source,
            })
    }

    fn launch(
        &self,
        kernel: &CudaKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        self.launch_repeated(kernel, dims, args, 1)
    }

    fn launch_repeated(
        &self,
        kernel: &CudaKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
        count: usize,
    ) -> Result<Duration, Failure> {
        let extra_shared: usize = args
            .iter()
            .map(|a| match a {
                LaunchArg::Local(n) => *n,
                _ => 0,
            })
            .sum();
        let g = Geometry::from_dims(dims, extra_shared)?;
        check_device_limits(&self.props, &g)?;
        check_kernel_limits(&self.props, &kernel.attrs, &g)?;

        let mut st = self.lock()?;
        if st.poisoned {
            self.rebuild(&mut st)?;
        }
        let func = self.function(&st, kernel)?;
        if g.shared_bytes + kernel.attrs.static_shared_bytes > self.props.max_shared_per_block {
            func.set_attribute(
                FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                g.shared_bytes as i32,
            )
            .map_err(|e| {
                Failure::rejected(
                    crate::evaluate::Cause::LocalMemory,
                    format!(
                        "{} bytes of dynamic shared memory refused: {e:?}",
                        g.shared_bytes
                    ),
                )
            })?;
        }
        let stream = st.dev.strm().clone();
        let mut storage: Vec<Vec<u8>> = Vec::with_capacity(args.len());
        for a in args {
            match a {
                LaunchArg::Buffer(b) => {
                    let guard = b
                        .slot
                        .lock()
                        .map_err(|_| Failure::Other("buffer lock poisoned".into()))?;
                    let s = guard
                        .as_ref()
                        .ok_or_else(|| Failure::Other("buffer lost with its context".into()))?;
                    let (ptr, _sync) = s.device_ptr(&stream);
                    storage.push(ptr.to_ne_bytes().to_vec());
                }
                LaunchArg::Scalar(bytes) => storage.push(bytes.to_vec()),
                LaunchArg::Local(_) => {}
            }
        }
        let mut params: Vec<*mut c_void> = storage
            .iter_mut()
            .map(|v| v.as_mut_ptr() as *mut c_void)
            .collect();
        if let Some(f) = st.flush.as_mut() {
            stream
                .memset_zeros(f)
                .map_err(|e| drv("flushing the L2 cache", e))?;
        }
        let ctx = st.dev.ctx().clone();
        let start = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| drv("creating an event", e))?;
        let end = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| drv("creating an event", e))?;
        let launch_once = |stream: &CudaStream, params: &mut Vec<*mut c_void>| {
            // SAFETY: `params` point into `storage`, alive across the call (the driver
            // copies them); buffer pointers belong to live allocations of this context; the
            // argument types follow the spec, which the user matched with the kernel's
            // signature.
            unsafe {
                cudarc::driver::result::launch_kernel(
                    func.cu_function(),
                    (g.grid[0], g.grid[1], g.grid[2]),
                    (g.block[0], g.block[1], g.block[2]),
                    g.shared_bytes,
                    stream.cu_stream(),
                    params,
                )
            }
        };
        // Repeated launches are captured into a CUDA graph and replayed between the events:
        // the kernels then run back to back with the gaps of a graph, whatever the host's
        // launch overhead (which would otherwise set the pace for kernels of microseconds).
        let graph = if count > 1 {
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .map_err(|e| drv("starting a graph capture", e))?;
            let mut captured = Ok(());
            for _ in 0..count {
                captured = launch_once(&stream, &mut params);
                if captured.is_err() {
                    break;
                }
            }
            let graph = stream.end_capture(CUgraphInstantiate_flags(0));
            if let Err(e) = captured {
                return Err(Self::launch_failure(&mut st, "launch (graph capture)", e));
            }
            let graph = graph
                .map_err(|e| drv("instantiating the graph", e))?
                .ok_or_else(|| Failure::Other("the graph capture was empty".into()))?;
            graph.upload().map_err(|e| drv("uploading the graph", e))?;
            Some(graph)
        } else {
            None
        };
        start.record(&stream).map_err(|e| drv("recording", e))?;
        let launched = match &graph {
            Some(graph) => graph.launch(),
            None => launch_once(&stream, &mut params),
        };
        if let Err(e) = launched {
            return Err(Self::launch_failure(&mut st, "launch", e));
        }
        end.record(&stream).map_err(|e| drv("recording", e))?;
        if let Err(e) = stream.synchronize() {
            return Err(Self::launch_failure(&mut st, "kernel execution", e));
        }
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| drv("reading the events", e))?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) * 1e-3))
    }
}
