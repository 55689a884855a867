//! The parent's side: [`Isolated`] implements [`Backend`] by forwarding every operation to
//! the current worker process, and its buffers and kernels are handles into that worker,
//! rebuilt in a new one after a replacement.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::process::{CallError, Worker};
use super::shared::{nanos, write_timeout, Launcher, Shared};
use super::wire::{self, Arg, Bytes, Handle, Reply, Request, TargetSpec};
use super::{lock, Target, CACHE_BYTES, MAX_KNOWN_CONTENTS};
use crate::backend::{
    check_fits, Backend, CompileRequest, DeviceInfo, KernelLimits, LaunchArg, LaunchDims, Transfer,
};
use crate::evaluate::Failure;
use crate::{Error, Result};

/// A [`Backend`] that forwards every operation to a real backend in a worker process, and
/// replaces the worker when it dies, hangs or reports its device unusable. See the
/// [module docs](super).
///
/// After a worker is replaced, the state of the old one is rebuilt lazily: a kernel compiled
/// by it is compiled again before its next launch, a buffer is allocated again (zeroed) at its
/// next use; [`KernelEvaluator`](crate::backend::KernelEvaluator) restores input buffers before every measurement anyway.
pub struct Isolated {
    pub(super) shared: Arc<Shared>,
    info: DeviceInfo,
}

impl fmt::Debug for Isolated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Isolated")
            .field("target", &self.shared.target)
            .field("device", &self.info.describe())
            .field("worker_pid", &self.worker_pid())
            .field("restarts", &self.restarts())
            .finish()
    }
}

impl Isolated {
    /// Starts a worker process that opens `target`, and waits until its device is open.
    ///
    /// # Errors
    /// The worker's own error when it cannot open the device
    /// ([`Error::BackendUnavailable`], [`Error::DeviceNotFound`]);
    /// [`Error::BackendUnavailable`] on systems other than Linux; [`Error::Io`] when the
    /// socket cannot be created or the program cannot be started again; [`Error::Backend`]
    /// when the worker exits or does not answer.
    pub fn new(target: Target) -> Result<Self> {
        Self::from_spec(target.spec(), Launcher::Constructor)
    }

    /// Like [`Isolated::new`], but each worker process runs `program`, whose `main` calls
    /// [`worker_main`](super::worker_main) before anything else. For programs where the
    /// static constructor cannot serve: the isolated backend used from a library loaded by
    /// another program (a Python extension: the current executable is `python`), or programs
    /// whose own static constructors must not run in a copy without arguments. `program`
    /// must be built with the same version of tune (it speaks the same protocol).
    ///
    /// ```no_run
    /// # #[cfg(feature = "opencl")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use tune_runtime::backend::isolated::{worker_main, Isolated, Target};
    ///
    /// // In the worker program (here the program itself), first thing in `main`:
    /// worker_main();
    /// let device = Isolated::with_worker_main(
    ///     Target::OpenCl("".into()),
    ///     std::env::current_exe()?,
    /// )?;
    /// # let _ = device;
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "opencl"))]
    /// # fn main() {}
    /// ```
    ///
    /// # Errors
    /// As [`Isolated::new`]; [`Error::Backend`] when `program` does not connect within 60 s
    /// (it does not call `worker_main`).
    pub fn with_worker_main(target: Target, program: impl Into<PathBuf>) -> Result<Self> {
        Self::from_spec(target.spec(), Launcher::Main(program.into()))
    }

    /// An OpenCL device chosen by `query` (see
    /// [`OpenCl::select`](crate::backend::opencl::OpenCl::select); empty: the first device),
    /// in a worker process.
    ///
    /// # Errors
    /// As [`Isolated::new`].
    #[cfg(feature = "opencl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "opencl")))]
    pub fn opencl(query: impl Into<String>) -> Result<Self> {
        Self::new(Target::OpenCl(query.into()))
    }

    /// A CUDA device chosen by index (`"0"`) or by (part of) its name, in a worker process.
    ///
    /// # Errors
    /// As [`Isolated::new`]; without a CUDA driver, the worker's
    /// [`Error::BackendUnavailable`].
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    pub fn cuda(selector: impl Into<String>) -> Result<Self> {
        Self::new(Target::Cuda(selector.into()))
    }

    pub(super) fn from_spec(target: TargetSpec, launcher: Launcher) -> Result<Self> {
        if !cfg!(target_os = "linux") {
            return Err(Error::BackendUnavailable {
                backend: target.backend().into(),
                reason: "isolated workers need Linux (the parent checks the worker's process \
                         id on its socket with SO_PEERCRED)"
                    .into(),
            });
        }
        let shared = Arc::new(Shared::new(target, launcher));
        let info = shared.open()?;
        Ok(Isolated { shared, info })
    }

    /// How long a launch, read or write may take before the worker is killed and the request
    /// fails (a launch with [`Failure::Timeout`]); default 60 s. It covers one request: for
    /// [`Backend::launch_repeated`], all repetitions together.
    #[must_use]
    pub fn hang_timeout(self, limit: Duration) -> Self {
        self.shared.hang_ns.store(nanos(limit), Ordering::Relaxed);
        if let Some(w) = self.shared.live() {
            let _ = lock(&w.writer)
                .get_ref()
                .0
                .set_write_timeout(Some(write_timeout(limit)));
        }
        self
    }

    /// How long a compilation may take; default 600 s. A compilation that takes longer
    /// returns [`Failure::Timeout`], but the worker is not killed: other compilations and the
    /// measurements share it.
    #[must_use]
    pub fn compile_timeout(self, limit: Duration) -> Self {
        self.shared.set_compile_timeout(limit);
        self
    }

    /// The process id of the current worker, if one is running.
    pub fn worker_pid(&self) -> Option<u32> {
        self.shared.live().map(|w| w.pid)
    }

    /// How many times the worker was replaced (after a crash, a hang or an unusable device).
    pub fn restarts(&self) -> u64 {
        self.shared
            .started
            .load(Ordering::Relaxed)
            .saturating_sub(1)
    }

    fn err(&self, message: impl Into<String>) -> Error {
        self.shared.err(message)
    }

    /// A worker for a launch or an input/output call: the current one, or a new one.
    fn worker_for_launch(&self) -> Result<Arc<Worker>, Failure> {
        self.shared
            .worker()
            .map_err(|e| Failure::Launch(format!("starting a worker process: {e}")))
    }

    /// A request with the hang timeout; on expiry the worker is killed.
    fn call_io(&self, w: &Arc<Worker>, req: &Request<'_>) -> Result<Reply> {
        let limit = self.shared.hang_timeout();
        match w.call(req, limit) {
            Ok(r) => Ok(r),
            Err(CallError::Timeout(d)) => {
                self.shared.retire(w, hung(limit));
                Err(self.err(format!(
                    "the worker process did not answer within {d:.1?} and was killed; a new \
                     one is started"
                )))
            }
            Err(CallError::Died(m)) => Err(self.err(m)),
        }
    }

    fn alloc_in(&self, w: &Arc<Worker>, b: &IsolatedBuffer, zeroed: bool) -> Result<()> {
        let req = Request::Alloc {
            buffer: b.handle,
            bytes: b.bytes as u64,
            zeroed,
        };
        match self.call_io(w, &req)? {
            Reply::Done => {
                lock(&w.buffers).insert(b.handle);
                Ok(())
            }
            Reply::Error(e) => Err(e.into()),
            other => Err(self.err(unexpected(&other))),
        }
    }

    /// Allocates `b` (zeroed) in `w` if `w` does not have it: a buffer of an earlier worker.
    fn ensure_buffer(&self, w: &Arc<Worker>, b: &IsolatedBuffer) -> Result<()> {
        if lock(&w.buffers).contains(&b.handle) {
            return Ok(());
        }
        self.alloc_in(w, b, true)
    }

    /// Compiles `k` in `w` if `w` does not have it: a kernel of an earlier worker.
    fn ensure_kernel(&self, w: &Arc<Worker>, k: &IsolatedKernel) -> Result<(), Failure> {
        if lock(&w.kernels).contains(&k.handle) {
            return Ok(());
        }
        let req = k.source.request(k.handle);
        match w.call(&req, self.shared.compile_timeout()) {
            Ok(Reply::Compiled(_)) => {
                lock(&w.kernels).insert(k.handle);
                Ok(())
            }
            Ok(Reply::Failed(f)) => Err(f),
            Ok(other) => Err(Failure::Other(unexpected(&other))),
            Err(CallError::Timeout(d)) => {
                w.notify(&Request::Free(Handle::Kernel(k.handle)));
                Err(Failure::Timeout(d))
            }
            Err(CallError::Died(m)) => Err(Failure::Launch(m)),
        }
    }

    fn launch_n(
        &self,
        kernel: &IsolatedKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
        count: usize,
    ) -> Result<Duration, Failure> {
        let w = self.worker_for_launch()?;
        self.ensure_kernel(&w, kernel)?;
        let mut wire_args = Vec::with_capacity(args.len());
        for a in args {
            wire_args.push(match a {
                LaunchArg::Buffer(b) => {
                    self.ensure_buffer(&w, b)
                        .map_err(|e| Failure::Launch(e.to_string()))?;
                    Arg::Buffer(b.handle)
                }
                LaunchArg::Scalar(s) => Arg::Scalar(Bytes(Cow::Borrowed(s))),
                LaunchArg::Local(n) => Arg::Local(*n as u64),
            });
        }
        let req = Request::Launch {
            kernel: kernel.handle,
            dims: dims.clone(),
            args: wire_args,
            count: count as u64,
        };
        let limit = self.shared.hang_timeout();
        match w.call(&req, limit) {
            Ok(Reply::Time(t)) => Ok(t),
            Ok(Reply::Failed(f)) => Err(f),
            Ok(other) => Err(Failure::Other(unexpected(&other))),
            Err(CallError::Timeout(d)) => {
                self.shared.retire(&w, hung(limit));
                Err(Failure::Timeout(d))
            }
            Err(CallError::Died(m)) => Err(Failure::Launch(m)),
        }
    }
}

fn hung(limit: Duration) -> String {
    format!("killed after a request ran past the hang timeout of {limit:.1?}")
}

fn unexpected(r: &Reply) -> String {
    format!("the worker process answered `{}` unexpectedly", r.name())
}

/// A device buffer of [`Isolated`]: a handle to a buffer in the worker process.
pub struct IsolatedBuffer {
    pub(super) handle: u64,
    bytes: usize,
    shared: Weak<Shared>,
}

impl IsolatedBuffer {
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl fmt::Debug for IsolatedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IsolatedBuffer")
            .field("handle", &self.handle)
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Drop for IsolatedBuffer {
    fn drop(&mut self) {
        free(&self.shared, Handle::Buffer(self.handle));
    }
}

/// Frees `handle` in the current worker, if that worker has it (an earlier worker's handles
/// went with it).
fn free(shared: &Weak<Shared>, handle: Handle) {
    let Some(w) = shared.upgrade().and_then(|s| s.live()) else {
        return;
    };
    let held = match handle {
        Handle::Buffer(h) => lock(&w.buffers).remove(&h),
        Handle::Kernel(h) => lock(&w.kernels).remove(&h),
    };
    if held {
        w.notify(&Request::Free(handle));
    }
}

/// What a kernel was compiled from, kept to compile it again in a new worker.
struct Source {
    source: Arc<str>,
    name: String,
    defines: Vec<(String, String)>,
    options: Vec<String>,
}

impl Source {
    fn request(&self, handle: u64) -> Request<'_> {
        Request::Compile {
            kernel: handle,
            source: Cow::Borrowed(&self.source),
            name: Cow::Borrowed(&self.name),
            defines: Cow::Borrowed(&self.defines),
            options: Cow::Borrowed(&self.options),
        }
    }
}

/// A compiled kernel of [`Isolated`]: a handle to a kernel in the worker process, and what it
/// was compiled from.
pub struct IsolatedKernel {
    pub(super) handle: u64,
    source: Source,
    limits: KernelLimits,
    shared: Weak<Shared>,
}

impl IsolatedKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.source.name
    }
}

impl fmt::Debug for IsolatedKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IsolatedKernel")
            .field("handle", &self.handle)
            .field("name", &self.source.name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Drop for IsolatedKernel {
    fn drop(&mut self) {
        free(&self.shared, Handle::Kernel(self.handle));
    }
}

impl Backend for Isolated {
    type Buffer = IsolatedBuffer;
    type Kernel = IsolatedKernel;

    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn compile(&self, r: &CompileRequest<'_>) -> Result<IsolatedKernel, Failure> {
        let handle = self.shared.handle();
        let source = Source {
            source: self.shared.intern(r.source),
            name: r.kernel.to_owned(),
            defines: r.defines.to_vec(),
            options: r.options.to_vec(),
        };
        let mut death = String::new();
        // A worker that dies during the compilation was most likely killed by a launch (a
        // crash, a hang): compile again in the next one. Twice is the compiler's fault.
        for _ in 0..2 {
            let w = self
                .shared
                .worker()
                .map_err(|e| Failure::Other(format!("starting a worker process: {e}")))?;
            match w.call(&source.request(handle), self.shared.compile_timeout()) {
                Ok(Reply::Compiled(limits)) => {
                    lock(&w.kernels).insert(handle);
                    return Ok(IsolatedKernel {
                        handle,
                        source,
                        limits,
                        shared: Arc::downgrade(&self.shared),
                    });
                }
                Ok(Reply::Failed(f)) => return Err(f),
                Ok(other) => return Err(Failure::Other(unexpected(&other))),
                Err(CallError::Timeout(d)) => {
                    w.notify(&Request::Free(Handle::Kernel(handle)));
                    return Err(Failure::Timeout(d));
                }
                Err(CallError::Died(m)) => death = m,
            }
        }
        Err(Failure::Compile(format!("while compiling: {death}")))
    }

    fn kernel_limits(&self, kernel: &IsolatedKernel) -> KernelLimits {
        kernel.limits.clone()
    }

    fn alloc(&self, bytes: usize) -> Result<IsolatedBuffer> {
        let w = self.shared.worker()?;
        let buffer = IsolatedBuffer {
            handle: self.shared.handle(),
            bytes: bytes.max(1),
            shared: Arc::downgrade(&self.shared),
        };
        self.alloc_in(&w, &buffer, false)?;
        Ok(buffer)
    }

    fn write(&self, buffer: &mut IsolatedBuffer, data: &[u8]) -> Result<()> {
        check_fits(Transfer::Write, data.len(), buffer.bytes).map_err(|m| self.err(m))?;
        let w = self.shared.worker()?;
        self.ensure_buffer(&w, buffer)?;
        let hash = wire::content_hash(data);
        let keep = data.len() as u64 <= CACHE_BYTES;
        let mut send = !(keep && lock(&w.contents).contains(&hash));
        loop {
            #[cfg(test)]
            if send {
                self.shared.data_writes.fetch_add(1, Ordering::Relaxed);
            }
            let req = Request::Write {
                buffer: buffer.handle,
                hash,
                data: send.then_some(Bytes(Cow::Borrowed(data))),
            };
            match self.call_io(&w, &req)? {
                Reply::Done => {
                    if send && keep {
                        let mut known = lock(&w.contents);
                        if known.len() >= MAX_KNOWN_CONTENTS {
                            known.clear();
                        }
                        known.insert(hash);
                    }
                    return Ok(());
                }
                Reply::Missing if !send => {
                    lock(&w.contents).remove(&hash);
                    send = true;
                }
                Reply::Error(e) => return Err(e.into()),
                other => return Err(self.err(unexpected(&other))),
            }
        }
    }

    fn read(&self, buffer: &IsolatedBuffer, out: &mut [u8]) -> Result<()> {
        check_fits(Transfer::Read, out.len(), buffer.bytes).map_err(|m| self.err(m))?;
        if out.is_empty() {
            return Ok(());
        }
        let w = self.shared.worker()?;
        self.ensure_buffer(&w, buffer)?;
        let req = Request::Read {
            buffer: buffer.handle,
            len: out.len() as u64,
        };
        match self.call_io(&w, &req)? {
            Reply::Data(d) if d.len() == out.len() => {
                out.copy_from_slice(&d);
                Ok(())
            }
            Reply::Data(d) => Err(self.err(format!(
                "the worker process read {} bytes; {} were asked for",
                d.len(),
                out.len()
            ))),
            Reply::Error(e) => Err(e.into()),
            other => Err(self.err(unexpected(&other))),
        }
    }

    fn set_constants(
        &self,
        _kernel: &IsolatedKernel,
        constants: &[(String, Vec<u8>)],
    ) -> Result<(), Failure> {
        if constants.is_empty() {
            return Ok(());
        }
        Err(Failure::Other(
            "an isolated backend does not pass `__constant__` arrays to its worker yet; \
             use the backend in process for kernels that need them"
                .into(),
        ))
    }

    fn launch(
        &self,
        kernel: &IsolatedKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        self.launch_n(kernel, dims, args, 1)
    }

    fn launch_repeated(
        &self,
        kernel: &IsolatedKernel,
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
        count: usize,
    ) -> Result<Duration, Failure> {
        self.launch_n(kernel, dims, args, count.max(1))
    }
}
