//! A process-isolated backend: [`Isolated`] runs a real backend (OpenCL or CUDA) in a child
//! worker process and replaces the worker when it dies, hangs or reports its device unusable.
//!
//! Use it when kernels of the search space may
//! - hang (an endless loop for some parameters): a launch that runs past
//!   [`Isolated::hang_timeout`] is recorded as [`Failure::Timeout`] and the worker is killed;
//! - crash the process (an out-of-bounds write on a CPU OpenCL device segfaults the program
//!   that runs it): the launch is a [`Failure::Launch`] that names the signal;
//! - poison the CUDA context (`CUDA_ERROR_ILLEGAL_ADDRESS` and the other "sticky" errors leave
//!   the whole process unable to use the GPU, even through a new context): the launch is the
//!   backend's own [`Failure::Launch`], and the worker exits after reporting it.
//!
//! In each case the next request starts a fresh worker on the same device and the tuning run
//! goes on. [`Isolated`] implements [`Backend`], so a
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
//! standard error shared. A static constructor of this crate (an ELF `.init_array` entry, so
//! Linux only) sees the variable before `main` runs, connects, serves the backend and exits:
//! examples, benchmarks and test binaries need no change to their `main`. The program's own
//! static constructors run in the worker too; its `main` never does.

mod wire;
mod worker;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use self::wire::{Arg, Handle, Reply, Request, TargetSpec};
use super::{Backend, CompileRequest, DeviceInfo, KernelLimits, LaunchArg, LaunchDims};
use crate::evaluate::Failure;
use crate::{Error, Result};

/// The environment variable that makes a program a worker (the path of the parent's socket).
const WORKER_ENV: &str = "TUNE_ISOLATED_WORKER";

/// Most bytes of written contents a worker keeps to avoid resending them.
const CACHE_BYTES: u64 = 2 << 30;

/// Most content hashes the parent remembers per worker (beyond, it forgets them all).
const MAX_KNOWN_CONTENTS: usize = 1 << 16;

/// How long a new worker may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// The shortest time a new worker gets to open its device.
const MIN_OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a worker that closed its connection, or whose connection was closed, may take to
/// exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

const DEFAULT_HANG_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(600);

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

/// A [`Backend`] that forwards every operation to a real backend in a worker process, and
/// replaces the worker when it dies, hangs or reports its device unusable. See the
/// [module docs](self).
///
/// After a worker is replaced, the state of the old one is rebuilt lazily: a kernel compiled
/// by it is compiled again before its next launch, a buffer is allocated again (zeroed) at its
/// next use; [`KernelEvaluator`](super::KernelEvaluator) restores input buffers before every measurement anyway.
pub struct Isolated {
    shared: Arc<Shared>,
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
        Self::from_spec(target.spec())
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

    fn from_spec(target: TargetSpec) -> Result<Self> {
        if !cfg!(target_os = "linux") {
            return Err(Error::BackendUnavailable {
                backend: target.backend().into(),
                reason: "isolated workers need Linux (an ELF static constructor starts them)"
                    .into(),
            });
        }
        let shared = Arc::new(Shared::new(target));
        let (worker, info) = shared.start()?;
        *lock(&shared.current) = Some(worker);
        Ok(Isolated { shared, info })
    }

    /// How long a launch, read or write may take before the worker is killed and the request
    /// fails (a launch with [`Failure::Timeout`]); default 60 s. It covers one request: for
    /// [`Backend::launch_repeated`], all repetitions together.
    #[must_use]
    pub fn hang_timeout(self, limit: Duration) -> Self {
        self.shared.hang_ns.store(nanos(limit), Ordering::Relaxed);
        if let Some(w) = self.shared.live() {
            let _ = lock(&w.writer).set_write_timeout(Some(write_timeout(limit)));
        }
        self
    }

    /// How long a compilation may take; default 600 s. A compilation that takes longer
    /// returns [`Failure::Timeout`], but the worker is not killed: other compilations and the
    /// measurements share it.
    #[must_use]
    pub fn compile_timeout(self, limit: Duration) -> Self {
        self.shared
            .compile_ns
            .store(nanos(limit), Ordering::Relaxed);
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
                LaunchArg::Scalar(s) => Arg::Scalar(Cow::Borrowed(s)),
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

/// How long a write to the worker may block: a worker that takes no data for this long is
/// stuck (it reads requests on a thread of their own).
fn write_timeout(hang: Duration) -> Duration {
    hang.max(Duration::from_secs(10))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A device buffer of [`Isolated`]: a handle to a buffer in the worker process.
pub struct IsolatedBuffer {
    handle: u64,
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
        if let Some(w) = self.shared.upgrade().and_then(|s| s.live()) {
            if lock(&w.buffers).remove(&self.handle) {
                w.notify(&Request::Free(Handle::Buffer(self.handle)));
            }
        }
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
    handle: u64,
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
        if let Some(w) = self.shared.upgrade().and_then(|s| s.live()) {
            if lock(&w.kernels).remove(&self.handle) {
                w.notify(&Request::Free(Handle::Kernel(self.handle)));
            }
        }
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
        if data.len() > buffer.bytes {
            return Err(self.err(format!(
                "writing {} bytes into a buffer of {}",
                data.len(),
                buffer.bytes
            )));
        }
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
                data: send.then_some(Cow::Borrowed(data)),
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
        if out.len() > buffer.bytes {
            return Err(self.err(format!(
                "reading {} bytes from a buffer of {}",
                out.len(),
                buffer.bytes
            )));
        }
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

// ---------------------------------------------------------------------------------------------
// The parent's side of the workers
// ---------------------------------------------------------------------------------------------

/// A mutex's guard, also after a panic elsewhere (the data stays consistent: no code here
/// panics while holding one).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(target_os = "linux")]
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(not(target_os = "linux"))]
const SEND_FLAGS: libc::c_int = 0;

/// Writes all of `buf` to `s` (without a SIGPIPE when the other side is gone).
fn send_all(s: &UnixStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is valid for `buf.len()` bytes during the call, and the descriptor is
        // open: `s` owns it.
        let n = unsafe { libc::send(s.as_raw_fd(), buf.as_ptr().cast(), buf.len(), SEND_FLAGS) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        buf = &buf[n.unsigned_abs()..];
    }
    Ok(())
}

/// What the handles and the backend share: the target, the timeouts and the current worker.
struct Shared {
    target: TargetSpec,
    hang_ns: AtomicU64,
    compile_ns: AtomicU64,
    current: Mutex<Option<Arc<Worker>>>,
    /// Workers started so far.
    started: AtomicU64,
    handles: AtomicU64,
    /// The last kernel source compiled, shared by the kernels compiled from it.
    last_source: Mutex<Option<Arc<str>>>,
    /// Writes that carried their data (tests check that repeated writes do not).
    #[cfg(test)]
    data_writes: AtomicU64,
}

impl Shared {
    fn new(target: TargetSpec) -> Self {
        Shared {
            target,
            hang_ns: AtomicU64::new(nanos(DEFAULT_HANG_TIMEOUT)),
            compile_ns: AtomicU64::new(nanos(DEFAULT_COMPILE_TIMEOUT)),
            current: Mutex::new(None),
            started: AtomicU64::new(0),
            handles: AtomicU64::new(0),
            last_source: Mutex::new(None),
            #[cfg(test)]
            data_writes: AtomicU64::new(0),
        }
    }

    fn hang_timeout(&self) -> Duration {
        Duration::from_nanos(self.hang_ns.load(Ordering::Relaxed))
    }

    fn compile_timeout(&self) -> Duration {
        Duration::from_nanos(self.compile_ns.load(Ordering::Relaxed))
    }

    fn err(&self, message: impl Into<String>) -> Error {
        Error::Backend {
            backend: self.target.backend().into(),
            message: message.into(),
        }
    }

    fn handle(&self) -> u64 {
        self.handles.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn intern(&self, source: &str) -> Arc<str> {
        let mut last = lock(&self.last_source);
        match last.as_ref() {
            Some(s) if **s == *source => s.clone(),
            _ => {
                let s: Arc<str> = Arc::from(source);
                *last = Some(s.clone());
                s
            }
        }
    }

    /// The current worker if it is alive; never starts one.
    fn live(&self) -> Option<Arc<Worker>> {
        lock(&self.current).as_ref().filter(|w| w.alive()).cloned()
    }

    /// The current worker, or a new one in place of a dead one.
    fn worker(&self) -> Result<Arc<Worker>> {
        let mut cur = lock(&self.current);
        if let Some(w) = cur.as_ref().filter(|w| w.alive()) {
            return Ok(w.clone());
        }
        *cur = None;
        let (w, _info) = self.start()?;
        *cur = Some(w.clone());
        Ok(w)
    }

    /// Kills `w` (recording why) and forgets it, so that the next request starts a new one.
    fn retire(&self, w: &Arc<Worker>, why: String) {
        w.kill(why);
        let mut cur = lock(&self.current);
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, w)) {
            *cur = None;
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn start(&self) -> Result<(Arc<Worker>, DeviceInfo)> {
        Err(Error::BackendUnavailable {
            backend: self.target.backend().into(),
            reason: "isolated workers need Linux".into(),
        })
    }

    /// Starts a worker and opens the device in it.
    #[cfg(target_os = "linux")]
    fn start(&self) -> Result<(Arc<Worker>, DeviceInfo)> {
        use std::os::unix::net::UnixListener;
        use std::process::{Command, Stdio};

        static SOCKETS: AtomicU64 = AtomicU64::new(0);
        // Keeps the constructor in every program that starts workers.
        std::hint::black_box(&worker::WORKER_INIT);

        let path = std::env::temp_dir().join(format!(
            "tune-worker-{}-{}.sock",
            std::process::id(),
            SOCKETS.fetch_add(1, Ordering::Relaxed)
        ));
        let io_err = |what: &str, source: io::Error| Error::Io {
            path: format!("{what} {}", path.display()),
            source,
        };
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).map_err(|e| io_err("binding", e))?;
        struct Remove<'a>(&'a std::path::Path);
        impl Drop for Remove<'_> {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(self.0);
            }
        }
        let remove = Remove(&path);
        listener
            .set_nonblocking(true)
            .map_err(|e| io_err("configuring", e))?;
        let exe = std::env::current_exe().map_err(|source| Error::Io {
            path: "the current executable".into(),
            source,
        })?;
        let mut child = Command::new(&exe)
            .env(WORKER_ENV, &path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| Error::Io {
                path: exe.display().to_string(),
                source,
            })?;
        let stream = match self.accept(&listener, &mut child) {
            Ok(s) => s,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        };
        drop(remove);
        let pid = child.id();
        let setup = |s: &UnixStream| -> io::Result<UnixStream> {
            s.set_nonblocking(false)?;
            s.set_write_timeout(Some(write_timeout(self.hang_timeout())))?;
            s.try_clone()
        };
        let read_half = match setup(&stream) {
            Ok(r) => r,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io_err("using", e));
            }
        };
        let pending = Arc::new(Mutex::new(Pending::default()));
        let worker = Arc::new(Worker {
            pid,
            child: Mutex::new(ChildState {
                child,
                status: None,
                killed: None,
            }),
            writer: Mutex::new(stream),
            pending: pending.clone(),
            next_id: AtomicU64::new(0),
            kernels: Mutex::new(HashSet::new()),
            buffers: Mutex::new(HashSet::new()),
            contents: Mutex::new(HashSet::new()),
        });
        std::thread::Builder::new()
            .name(format!("tune-isolated-{pid}"))
            .spawn(move || read_replies(read_half, &pending))
            .map_err(|e| io_err("starting a reader thread for", e))?;
        self.started.fetch_add(1, Ordering::Relaxed);

        let limit = self.hang_timeout().max(MIN_OPEN_TIMEOUT);
        match worker.call(&Request::Open(self.target.clone()), limit) {
            Ok(Reply::Opened(info)) => Ok((worker, info)),
            Ok(Reply::Error(e)) => Err(e.into()),
            Ok(other) => Err(self.err(unexpected(&other))),
            Err(CallError::Died(m)) => Err(self.err(format!("opening the device: {m}"))),
            Err(CallError::Timeout(d)) => {
                worker.kill(format!("it did not open the device within {d:.1?}"));
                Err(self.err(format!(
                    "the worker process did not open the device within {d:.1?}"
                )))
            }
        }
    }

    /// Accepts the worker's connection, while it is alive and for [`CONNECT_TIMEOUT`] at most.
    #[cfg(target_os = "linux")]
    fn accept(
        &self,
        listener: &std::os::unix::net::UnixListener,
        child: &mut Child,
    ) -> Result<UnixStream> {
        let start = Instant::now();
        loop {
            match listener.accept() {
                // Only the worker may connect: another local process that found the socket
                // is dropped.
                Ok((s, _)) if peer_pid(&s) == Some(child.id()) => return Ok(s),
                Ok(_) => {}
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        path: "accepting the worker's connection".into(),
                        source: e,
                    })
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(self.err(format!(
                    "the worker process exited before it connected ({})",
                    describe(status)
                )));
            }
            if start.elapsed() > CONNECT_TIMEOUT {
                return Err(self.err(format!(
                    "the worker process did not connect within {CONNECT_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The worker sees the end of the stream and exits; `Worker::drop` reaps it.
        if let Some(w) = lock(&self.current).take() {
            w.shutdown();
        }
    }
}

/// The process id at the other end of a Unix socket.
#[cfg(target_os = "linux")]
fn peer_pid(s: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given; the descriptor is open.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then(|| u32::try_from(cred.pid).ok()).flatten()
}

/// An exit status in words: `exit status 3`, `killed by signal 11 (SIGSEGV)`.
fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    match status.signal() {
        Some(sig) => {
            let name = match sig {
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGBUS => " (SIGBUS)",
                libc::SIGILL => " (SIGILL)",
                libc::SIGFPE => " (SIGFPE)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                _ => "",
            };
            let core = if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            format!("killed by signal {sig}{name}{core}")
        }
        None => format!("{status}"),
    }
}

/// The requests waiting for a reply, and why the worker is gone once it is.
#[derive(Default)]
struct Pending {
    waiting: std::collections::HashMap<u64, Sender<Reply>>,
    /// Set when the connection ended; the senders are then dropped, which wakes the waiters.
    dead: Option<String>,
    /// What the worker said before it exited because its device became unusable.
    unhealthy: Option<String>,
}

struct ChildState {
    child: Child,
    /// The exit status in words, once reaped.
    status: Option<String>,
    /// Why the parent killed it, if it did.
    killed: Option<String>,
}

/// One worker process: its connection, the requests waiting for it, and what it holds.
struct Worker {
    pid: u32,
    child: Mutex<ChildState>,
    writer: Mutex<UnixStream>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    /// Kernel handles compiled in this worker.
    kernels: Mutex<HashSet<u64>>,
    /// Buffer handles allocated in this worker.
    buffers: Mutex<HashSet<u64>>,
    /// Hashes of contents this worker was sent (and probably still keeps).
    contents: Mutex<HashSet<u64>>,
}

enum CallError {
    /// The worker died; why, in words.
    Died(String),
    /// No reply within the limit; the time waited.
    Timeout(Duration),
}

/// The reader thread of a worker's connection: routes replies to their waiters until the
/// connection ends, then records why and wakes every waiter.
fn read_replies(stream: UnixStream, pending: &Mutex<Pending>) {
    let mut r = io::BufReader::with_capacity(1 << 16, stream);
    let cause = loop {
        match wire::read_frame(&mut r) {
            Ok(Some(frame)) => match wire::decode_reply(&frame) {
                Ok((_, Reply::Unhealthy(m))) => lock(pending).unhealthy = Some(m),
                Ok((id, reply)) => {
                    if let Some(tx) = lock(pending).waiting.remove(&id) {
                        let _ = tx.send(reply);
                    }
                }
                Err(e) => break format!("it sent a malformed reply ({e})"),
            },
            Ok(None) => break "it closed the connection".to_string(),
            Err(e) => break format!("reading from it failed ({e})"),
        }
    };
    let mut p = lock(pending);
    p.dead.get_or_insert(cause);
    p.waiting.clear();
}

impl Worker {
    /// Whether requests can still go to this worker: its connection is open, it did not
    /// report its device unusable (it exits after that), and it was not killed.
    fn alive(&self) -> bool {
        let ok = {
            let p = lock(&self.pending);
            p.dead.is_none() && p.unhealthy.is_none()
        };
        ok && lock(&self.child).killed.is_none()
    }

    fn send(&self, id: u64, req: &Request<'_>) -> io::Result<()> {
        let (head, tail) = wire::encode_request(id, req);
        let s = lock(&self.writer);
        send_all(&s, &head)?;
        send_all(&s, tail)
    }

    /// Sends a request that has no reply; errors are ignored (the next call sees them).
    fn notify(&self, req: &Request<'_>) {
        if self.alive() {
            let _ = self.send(0, req);
        }
    }

    /// Sends `req` and waits for its reply for `limit` at most.
    fn call(&self, req: &Request<'_>, limit: Duration) -> Result<Reply, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = mpsc::channel();
        {
            let mut p = lock(&self.pending);
            if p.dead.is_some() {
                drop(p);
                return Err(CallError::Died(self.death()));
            }
            p.waiting.insert(id, tx);
        }
        let start = Instant::now();
        if let Err(e) = self.send(id, req) {
            {
                let mut p = lock(&self.pending);
                p.dead
                    .get_or_insert_with(|| format!("writing to it failed ({e})"));
                p.waiting.clear();
            }
            self.kill(format!("killed after writing to it failed ({e})"));
            return Err(CallError::Died(self.death()));
        }
        match rx.recv_timeout(limit) {
            Ok(reply) => Ok(reply),
            Err(RecvTimeoutError::Timeout) => {
                lock(&self.pending).waiting.remove(&id);
                Err(CallError::Timeout(start.elapsed()))
            }
            Err(RecvTimeoutError::Disconnected) => Err(CallError::Died(self.death())),
        }
    }

    /// Why the worker is gone, in words, for failures (reaps the process).
    fn death(&self) -> String {
        let (cause, unhealthy) = {
            let p = lock(&self.pending);
            (p.dead.clone().unwrap_or_default(), p.unhealthy.clone())
        };
        let status = self.reap(EXIT_GRACE);
        let killed = lock(&self.child).killed.clone();
        let detail = match (killed, unhealthy) {
            (Some(k), _) => k,
            (None, Some(u)) => format!("{u}; {status}"),
            (None, None) if status.starts_with("exit status 0") => cause,
            (None, None) => status,
        };
        format!("the worker process died: {detail}; a new one is started")
    }

    /// Kills the process (unless it already exited) and reaps it.
    fn kill(&self, why: String) {
        let mut c = lock(&self.child);
        if c.status.is_some() {
            return;
        }
        c.killed.get_or_insert(why);
        let _ = c.child.kill();
        c.status = Some(match c.child.wait() {
            Ok(s) => describe(s),
            Err(e) => format!("its status is unknown ({e})"),
        });
    }

    /// Waits up to `grace` for the process to exit, then kills it; its status in words.
    fn reap(&self, grace: Duration) -> String {
        let mut c = lock(&self.child);
        if let Some(s) = &c.status {
            return s.clone();
        }
        let deadline = Instant::now() + grace;
        let status = loop {
            match c.child.try_wait() {
                Ok(Some(s)) => break describe(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(None) => {
                    c.killed
                        .get_or_insert_with(|| "killed after it stopped answering".into());
                    let _ = c.child.kill();
                    break match c.child.wait() {
                        Ok(s) => describe(s),
                        Err(e) => format!("its status is unknown ({e})"),
                    };
                }
                Err(e) => break format!("its status is unknown ({e})"),
            }
        };
        c.status = Some(status.clone());
        status
    }

    /// Closes the connection: the worker exits.
    fn shutdown(&self) {
        let _ = lock(&self.writer).shutdown(std::net::Shutdown::Both);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shutdown();
        let _ = self.reap(EXIT_GRACE);
    }
}
