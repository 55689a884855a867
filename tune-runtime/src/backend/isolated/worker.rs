//! The worker side: the two ways into a worker (a static constructor that turns a
//! re-executed program into a worker before its `main` runs, and [`worker_main`] for programs
//! that call it), and the loop that serves one backend to the parent.
//!
//! Threads: the connection's reader decodes requests; a compile (or a build for a
//! `BuildFarm`) runs on a thread of its own (the parent compiles several
//! configurations while one is measured); every other request
//! runs in order on one serial thread, which owns the buffers. Replies are written under a
//! mutex. When the parent goes away (end of stream) the worker exits at once, even while a
//! kernel hangs.

// Without a backend feature there is nothing to serve: a worker only reports that.
#![cfg_attr(not(any(feature = "opencl", feature = "cuda", test)), allow(dead_code))]

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};

use super::process::{frame_writer, FrameWriter};
use super::wire::{self, Arg, Handle, Reply, Request, TargetSpec, WireErr};
use super::{lock, CACHE_BYTES, ENTRY_ENV, ENTRY_MAIN, WORKER_ENV};
use crate::backend::{Backend, CompileRequest, LaunchArg};
use crate::evaluate::Failure;

// SAFETY: an `.init_array` entry is a function the dynamic loader (or the C runtime of a
// static executable) calls once before `main`, with no arguments, on the main thread; `init`
// has the C ABI and signature expected there, never unwinds (it catches panics and ends the
// process with `_exit` when it serves) and is a no-op in any process not started as a worker.
// What it does there (threads, a socket, `remove_var`) is sound as long as no other static
// constructor has started a thread that reads the environment: see the module docs.
/// Runs before `main` in every program that links this crate and starts isolated workers
/// (the spawning code refers to it, so the linker keeps it): a no-op unless the program was
/// started as a worker.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
pub(super) static WORKER_INIT: extern "C" fn() = init;

#[cfg(target_os = "linux")]
extern "C" fn init() {
    if constructor_serves(
        std::env::var_os(WORKER_ENV).is_some(),
        std::env::var_os(ENTRY_ENV).as_deref(),
    ) {
        serve_and_exit()
    }
}

/// Whether the static constructor serves this process: it was started as a worker, and not
/// for a program that serves from its `main` with [`worker_main`].
pub(super) fn constructor_serves(worker: bool, entry: Option<&OsStr>) -> bool {
    worker && entry != Some(OsStr::new(ENTRY_MAIN))
}

/// Serves as an isolated worker and exits, when this process was started as one by
/// [`Isolated::with_worker_main`](super::Isolated::with_worker_main); returns at once
/// otherwise.
///
/// Call it first thing in `main`, before the program starts threads (it removes the
/// worker's variables from the environment) or reads its arguments: in a worker it never
/// returns, and none of the rest of `main` runs. Programs whose workers are started by
/// [`Isolated::new`](super::Isolated::new) do not need it: a static constructor serves them before `main`
/// (Linux).
///
/// ```no_run
/// // First in `main`:
/// tune_runtime::backend::isolated::worker_main();
/// // .. the program, which may start `Isolated::with_worker_main(.., current_exe)`.
/// ```
pub fn worker_main() {
    if std::env::var_os(WORKER_ENV).is_some() {
        serve_and_exit()
    }
}

/// Connects to the parent, serves it until it goes away, and ends the process.
fn serve_and_exit() -> ! {
    let path: OsString = std::env::var_os(WORKER_ENV).unwrap_or_default();
    // Processes the worker starts (a compiler driver) must not become workers too. Sound
    // here: before `main`, or first in `main`, no other thread reads the environment.
    std::env::remove_var(WORKER_ENV);
    std::env::remove_var(ENTRY_ENV);
    let code = match std::panic::catch_unwind(|| run(&path)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("tune worker process {}: {e}", std::process::id());
            2
        }
        Err(_) => 101,
    };
    exit_now(code)
}

/// Ends the process without running exit handlers, which could wait for a hung kernel.
pub(super) fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` has no preconditions; it does not return.
    unsafe { libc::_exit(code) }
}

/// Exit code of a worker whose backend reported itself unhealthy.
const UNHEALTHY_EXIT: i32 = 3;

/// The write side of the connection.
struct Out(Mutex<FrameWriter>);

impl Out {
    fn reply(&self, id: u64, reply: &Reply) -> Result<(), String> {
        wire::write_frame(&mut *lock(&self.0), id, reply)
            .map_err(|e| format!("writing a reply: {e}"))
    }
}

/// Connects to the parent at `path`, opens the device it asks for and serves it.
fn run(path: &OsStr) -> Result<(), String> {
    // SAFETY: setting a signal's disposition has no preconditions. Writes to a parent that
    // went away then fail with EPIPE instead of killing the worker.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let stream = UnixStream::connect(path)
        .map_err(|e| format!("connecting to {}: {e}", path.to_string_lossy()))?;
    let read_half = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::with_capacity(1 << 16, read_half);
    let out = Arc::new(Out(Mutex::new(frame_writer(stream))));
    let Some(frame) = wire::read_frame(&mut reader).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let (id, req) = wire::decode::<Request<'static>>(&frame).map_err(|e| e.to_string())?;
    let Request::Open(target) = req else {
        return Err("the first request must open a device".into());
    };
    match target {
        TargetSpec::OpenCl(query) => open_opencl(&query, id, reader, out),
        TargetSpec::Cuda(selector) => open_cuda(&selector, id, reader, out),
        #[cfg(test)]
        TargetSpec::Fake(spec) => match super::tests::fake_backend(&spec) {
            Ok(b) => serve(b, None, id, reader, out),
            Err(e) => out.reply(id, &Reply::Error((&e).into())),
        },
    }
}

/// Builds a program from source (source, options) into its binary: what a worker whose
/// backend has binaries does for a `BuildFarm`.
type BuildFn<B> = fn(&B, &str, &str) -> Result<Vec<u8>, Failure>;

type Reader = BufReader<UnixStream>;

#[cfg(feature = "opencl")]
fn open_opencl(query: &str, id: u64, reader: Reader, out: Arc<Out>) -> Result<(), String> {
    use crate::backend::opencl::OpenCl;
    match OpenCl::select(query) {
        Ok(b) => serve(
            b,
            Some(OpenCl::build_binary as BuildFn<OpenCl>),
            id,
            reader,
            out,
        ),
        Err(e) => out.reply(id, &Reply::Error((&e).into())),
    }
}

#[cfg(not(feature = "opencl"))]
fn open_opencl(_query: &str, id: u64, _reader: Reader, out: Arc<Out>) -> Result<(), String> {
    out.reply(id, &Reply::Error(without_feature("opencl")))
}

#[cfg(feature = "cuda")]
fn open_cuda(selector: &str, id: u64, reader: Reader, out: Arc<Out>) -> Result<(), String> {
    use crate::backend::cuda::{Cuda, DeviceSelector};
    let sel = match selector.trim().parse::<usize>() {
        Ok(i) => DeviceSelector::Index(i),
        Err(_) => DeviceSelector::Name(selector.to_owned()),
    };
    match Cuda::open(sel) {
        Ok(b) => serve(b, None, id, reader, out),
        Err(e) => out.reply(id, &Reply::Error((&e).into())),
    }
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(_selector: &str, id: u64, _reader: Reader, out: Arc<Out>) -> Result<(), String> {
    out.reply(id, &Reply::Error(without_feature("cuda")))
}

#[cfg(not(all(feature = "opencl", feature = "cuda")))]
fn without_feature(backend: &str) -> WireErr {
    WireErr::Unavailable {
        backend: backend.into(),
        reason: format!("tune was built without its `{backend}` feature"),
    }
}

/// What the threads of a worker share.
struct State<B: Backend> {
    backend: B,
    kernels: Mutex<HashMap<u64, Arc<B::Kernel>>>,
    /// Kernels freed before their compile finished (the parent gave up waiting).
    cancelled: Mutex<HashSet<u64>>,
    out: Arc<Out>,
}

impl<B: Backend> State<B> {
    /// Sends a reply. If the backend is no longer usable, it first says so (the parent then
    /// sends nothing more to this worker) and exits after the reply.
    fn finish(&self, id: u64, reply: &Reply) {
        let healthy = self.backend.healthy();
        if !healthy {
            let _ = self.out.reply(
                0,
                &Reply::Unhealthy(
                    "its device is no longer usable in this process (a CUDA sticky error)".into(),
                ),
            );
        }
        if self.out.reply(id, reply).is_err() {
            exit_now(0);
        }
        if !healthy {
            exit_now(UNHEALTHY_EXIT);
        }
    }

    fn error(&self, message: impl Into<String>) -> Reply {
        Reply::Error(WireErr::Backend {
            backend: self.backend.device().backend.clone(),
            message: message.into(),
        })
    }
}

fn serve<B: Backend>(
    backend: B,
    build: Option<BuildFn<B>>,
    open_id: u64,
    mut reader: Reader,
    out: Arc<Out>,
) -> Result<(), String> {
    let st = Arc::new(State {
        backend,
        kernels: Mutex::new(HashMap::new()),
        cancelled: Mutex::new(HashSet::new()),
        out,
    });
    st.finish(open_id, &Reply::Opened(st.backend.device().clone()));
    let (tx, rx) = mpsc::channel();
    {
        let st = st.clone();
        std::thread::Builder::new()
            .name("tune-worker-serial".into())
            .spawn(move || serial(&st, &rx))
            .map_err(|e| format!("starting a thread: {e}"))?;
    }
    loop {
        let frame = match wire::read_frame(&mut reader) {
            Ok(Some(f)) => f,
            // The parent is gone or dropped its backend.
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("reading a request: {e}")),
        };
        let (id, req) =
            wire::decode::<Request<'static>>(&frame).map_err(|e| format!("a bad request: {e}"))?;
        drop(frame);
        match req {
            Request::Compile {
                kernel,
                source,
                name,
                defines,
                options,
            } => {
                let st = st.clone();
                std::thread::Builder::new()
                    .name("tune-worker-compile".into())
                    .spawn(move || {
                        let r = st.backend.compile(&CompileRequest {
                            source: &source,
                            kernel: &name,
                            defines: &defines,
                            options: &options,
                        });
                        let cancelled = lock(&st.cancelled).remove(&kernel);
                        let reply = match r {
                            Ok(k) => {
                                let limits = st.backend.kernel_limits(&k);
                                if !cancelled {
                                    lock(&st.kernels).insert(kernel, Arc::new(k));
                                }
                                Reply::Compiled(limits)
                            }
                            Err(f) => Reply::Failed(f),
                        };
                        st.finish(id, &reply);
                    })
                    .map_err(|e| format!("starting a thread: {e}"))?;
            }
            Request::Build { source, options } => {
                let st = st.clone();
                std::thread::Builder::new()
                    .name("tune-worker-build".into())
                    .spawn(move || {
                        let reply = match build {
                            Some(f) => match f(&st.backend, &source, &options) {
                                Ok(binary) => Reply::Binary(binary),
                                Err(f) => Reply::Failed(f),
                            },
                            None => st.error("this backend builds no program binaries"),
                        };
                        st.finish(id, &reply);
                    })
                    .map_err(|e| format!("starting a thread: {e}"))?;
            }
            Request::Free(Handle::Kernel(h)) => {
                if lock(&st.kernels).remove(&h).is_none() {
                    lock(&st.cancelled).insert(h);
                }
            }
            Request::Open(_) => st.finish(id, &st.error("the device is already open")),
            other => {
                if tx.send((id, other)).is_err() {
                    return Err("the serial thread ended".into());
                }
            }
        }
    }
}

/// Runs allocations, writes, reads, launches and buffer frees in order.
fn serial<B: Backend>(st: &State<B>, rx: &Receiver<(u64, Request<'static>)>) {
    let mut buffers: HashMap<u64, B::Buffer> = HashMap::new();
    let mut cache = ContentCache::new(CACHE_BYTES);
    while let Ok((id, req)) = rx.recv() {
        let reply = match req {
            Request::Alloc {
                buffer,
                bytes,
                zeroed,
            } => Some(alloc(st, &mut buffers, buffer, bytes, zeroed)),
            Request::Write { buffer, hash, data } => Some(match buffers.get_mut(&buffer) {
                None => st.error(format!("no buffer {buffer} in the worker")),
                Some(b) => match data {
                    Some(d) => {
                        let d = d.0.into_owned();
                        let r = st.backend.write(b, &d);
                        cache.insert(hash, d);
                        done(r)
                    }
                    None => match cache.get(hash) {
                        Some(d) => done(st.backend.write(b, d)),
                        None => Reply::Missing,
                    },
                },
            }),
            Request::Read { buffer, len } => Some(match buffers.get(&buffer) {
                None => st.error(format!("no buffer {buffer} in the worker")),
                Some(b) => match usize::try_from(len) {
                    Err(_) => st.error(format!("cannot read {len} bytes")),
                    Ok(n) => {
                        let mut v = vec![0u8; n];
                        match st.backend.read(b, &mut v) {
                            Ok(()) => Reply::Data(v),
                            Err(e) => Reply::Error((&e).into()),
                        }
                    }
                },
            }),
            Request::Launch {
                kernel,
                dims,
                args,
                count,
            } => Some(match launch(st, &buffers, kernel, &dims, &args, count) {
                Ok(t) => Reply::Time(t),
                Err(f) => Reply::Failed(f),
            }),
            Request::Free(Handle::Buffer(h)) => {
                buffers.remove(&h);
                None
            }
            other => Some(st.error(format!("unexpected request {other:?}"))),
        };
        if let Some(r) = reply {
            st.finish(id, &r);
        }
    }
}

fn done(r: crate::Result<()>) -> Reply {
    match r {
        Ok(()) => Reply::Done,
        Err(e) => Reply::Error((&e).into()),
    }
}

fn alloc<B: Backend>(
    st: &State<B>,
    buffers: &mut HashMap<u64, B::Buffer>,
    handle: u64,
    bytes: u64,
    zeroed: bool,
) -> Reply {
    let Ok(n) = usize::try_from(bytes) else {
        return st.error(format!("cannot allocate {bytes} bytes"));
    };
    let mut b = match st.backend.alloc(n) {
        Ok(b) => b,
        Err(e) => return Reply::Error((&e).into()),
    };
    if zeroed {
        if let Err(e) = st.backend.write(&mut b, &vec![0u8; n]) {
            return Reply::Error((&e).into());
        }
    }
    buffers.insert(handle, b);
    Reply::Done
}

fn launch<B: Backend>(
    st: &State<B>,
    buffers: &HashMap<u64, B::Buffer>,
    kernel: u64,
    dims: &crate::backend::LaunchDims,
    args: &[Arg<'_>],
    count: u64,
) -> Result<std::time::Duration, Failure> {
    let k = lock(&st.kernels)
        .get(&kernel)
        .cloned()
        .ok_or_else(|| Failure::Other(format!("no kernel {kernel} in the worker")))?;
    let mut la: Vec<LaunchArg<'_, B>> = Vec::with_capacity(args.len());
    for a in args {
        la.push(match a {
            Arg::Buffer(h) => LaunchArg::Buffer(
                buffers
                    .get(h)
                    .ok_or_else(|| Failure::Other(format!("no buffer {h} in the worker")))?,
            ),
            Arg::Scalar(s) => LaunchArg::Scalar(&s.0),
            Arg::Local(n) => LaunchArg::Local(usize::try_from(*n).unwrap_or(usize::MAX)),
        });
    }
    match count {
        0 | 1 => st.backend.launch(&k, dims, &la),
        n => st
            .backend
            .launch_repeated(&k, dims, &la, usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// The worker's copies of written contents, keyed by content hash, at most `cap` bytes in
/// all; the oldest are dropped first. Contents larger than `cap` are not kept.
pub(super) struct ContentCache {
    cap: u64,
    total: u64,
    map: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

impl ContentCache {
    pub(super) fn new(cap: u64) -> Self {
        ContentCache {
            cap,
            total: 0,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(super) fn get(&self, hash: u64) -> Option<&[u8]> {
        self.map.get(&hash).map(Vec::as_slice)
    }

    /// Keeps `data` under `hash`, dropping the oldest contents to make room.
    pub(super) fn insert(&mut self, hash: u64, data: Vec<u8>) {
        let n = data.len() as u64;
        if n > self.cap || self.map.contains_key(&hash) {
            return;
        }
        while self.total + n > self.cap {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(v) = self.map.remove(&old) {
                self.total -= v.len() as u64;
            }
        }
        self.total += n;
        self.order.push_back(hash);
        self.map.insert(hash, data);
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> u64 {
        self.total
    }
}
