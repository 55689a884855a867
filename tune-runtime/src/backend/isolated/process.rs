//! One worker process as the parent sees it: its connection, the requests waiting for a
//! reply (each with a deadline: the hang watchdog), why it died, and killing and reaping it.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::lock;
use super::wire::{self, Reply, Request};

/// How long a worker that closed its connection, or whose connection was closed, may take to
/// exit before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

#[cfg(target_os = "linux")]
const SEND_FLAGS: libc::c_int = libc::MSG_NOSIGNAL;
#[cfg(not(target_os = "linux"))]
const SEND_FLAGS: libc::c_int = 0;

/// The write side of a connection: `send` without a SIGPIPE when the other side is gone (the
/// parent cannot change the program's signal handling; the worker ignores SIGPIPE anyway).
pub(super) struct Socket(pub(super) UnixStream);

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is valid for reads of `buf.len()` bytes during the call, and the
            // descriptor is open: `self.0` owns it.
            let n = unsafe {
                libc::send(
                    self.0.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    SEND_FLAGS,
                )
            };
            if n >= 0 {
                return Ok(n.unsigned_abs());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A buffered writer of frames to a socket.
pub(super) type FrameWriter = BufWriter<Socket>;

/// A frame writer over `stream` (small fields are gathered; buffer contents pass through).
pub(super) fn frame_writer(stream: UnixStream) -> FrameWriter {
    BufWriter::with_capacity(1 << 16, Socket(stream))
}

/// The requests waiting for a reply, and why the worker is gone once it is.
#[derive(Default)]
pub(super) struct Pending {
    waiting: HashMap<u64, Sender<Reply>>,
    /// Set when the connection ended; the senders are then dropped, which wakes the waiters.
    dead: Option<String>,
    /// What the worker said before it exited because its device became unusable.
    unhealthy: Option<String>,
}

pub(super) struct ChildState {
    pub(super) child: Child,
    /// The exit status in words, once reaped.
    pub(super) status: Option<String>,
    /// Why the parent killed it, if it did.
    pub(super) killed: Option<String>,
}

/// One worker process: its connection, the requests waiting for it, and what it holds.
pub(super) struct Worker {
    pub(super) pid: u32,
    pub(super) child: Mutex<ChildState>,
    pub(super) writer: Mutex<FrameWriter>,
    pub(super) pending: Arc<Mutex<Pending>>,
    pub(super) next_id: AtomicU64,
    /// Kernel handles compiled in this worker.
    pub(super) kernels: Mutex<HashSet<u64>>,
    /// Buffer handles allocated in this worker.
    pub(super) buffers: Mutex<HashSet<u64>>,
    /// Hashes of contents this worker was sent (and probably still keeps).
    pub(super) contents: Mutex<HashSet<u64>>,
}

pub(super) enum CallError {
    /// The worker died; why, in words.
    Died(String),
    /// No reply within the limit; the time waited.
    Timeout(Duration),
}

/// The reader thread of a worker's connection: routes replies to their waiters until the
/// connection ends, then records why and wakes every waiter.
pub(super) fn read_replies(stream: UnixStream, pending: &Mutex<Pending>) {
    let mut r = io::BufReader::with_capacity(1 << 16, stream);
    let cause = loop {
        match wire::read_frame(&mut r) {
            Ok(Some(frame)) => match wire::decode::<Reply>(&frame) {
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
    /// A worker around a started process and its connection.
    pub(super) fn new(child: Child, stream: UnixStream, pending: Arc<Mutex<Pending>>) -> Self {
        Worker {
            pid: child.id(),
            child: Mutex::new(ChildState {
                child,
                status: None,
                killed: None,
            }),
            writer: Mutex::new(frame_writer(stream)),
            pending,
            next_id: AtomicU64::new(0),
            kernels: Mutex::new(HashSet::new()),
            buffers: Mutex::new(HashSet::new()),
            contents: Mutex::new(HashSet::new()),
        }
    }

    /// Whether requests can still go to this worker: its connection is open, it did not
    /// report its device unusable (it exits after that), and it was not killed.
    pub(super) fn alive(&self) -> bool {
        let ok = {
            let p = lock(&self.pending);
            p.dead.is_none() && p.unhealthy.is_none()
        };
        ok && lock(&self.child).killed.is_none()
    }

    fn send(&self, id: u64, req: &Request<'_>) -> io::Result<()> {
        wire::write_frame(&mut *lock(&self.writer), id, req)
    }

    /// Sends a request that has no reply; errors are ignored (the next call sees them).
    pub(super) fn notify(&self, req: &Request<'_>) {
        if self.alive() {
            let _ = self.send(0, req);
        }
    }

    /// Sends `req` and waits for its reply for `limit` at most.
    pub(super) fn call(&self, req: &Request<'_>, limit: Duration) -> Result<Reply, CallError> {
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
    pub(super) fn death(&self) -> String {
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
    pub(super) fn kill(&self, why: String) {
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
    pub(super) fn shutdown(&self) {
        let _ = lock(&self.writer)
            .get_ref()
            .0
            .shutdown(std::net::Shutdown::Both);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shutdown();
        let _ = self.reap(EXIT_GRACE);
    }
}

/// An exit status in words: `exit status 3`, `killed by signal 11 (SIGSEGV)`.
pub(super) fn describe(status: ExitStatus) -> String {
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
