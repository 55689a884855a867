//! Starting a worker process: a private socket, the program started again with the socket's
//! path in its environment, the connection accepted from that process only, and the device
//! opened in it.

use std::io;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::process::{describe, read_replies, CallError, Pending, Worker};
use super::shared::{write_timeout, Launcher};
use super::wire::{Reply, Request, TargetSpec};
use super::{ENTRY_ENV, ENTRY_MAIN, WORKER_ENV};
use crate::backend::DeviceInfo;
use crate::{Error, Result};

/// How long a new worker may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

/// The shortest time a new worker gets to open its device.
const MIN_OPEN_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) fn err(target: &TargetSpec, message: impl Into<String>) -> Error {
    Error::Backend {
        backend: target.backend().into(),
        message: message.into(),
    }
}

/// Removes the socket file when the connection is made or the start fails.
struct RemoveOnDrop<'a>(&'a Path);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// Makes the worker inherit no file descriptor but its standard streams (it connects to the
/// parent by the socket's path). A device driver of the parent may hold descriptors open
/// without close-on-exec (its device files, its shared memory); a worker that inherits
/// them opens the device next to the parent's copies, which is not what the worker of a
/// parent that never opened the device sees.
fn inherit_no_descriptors(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure makes one system call, which is
    // async-signal-safe, and allocates nothing. `CLOSE_RANGE_CLOEXEC` marks the descriptors
    // instead of closing them, so the standard library's own error pipe keeps working; on a
    // kernel without `close_range` (before 5.9) the call fails and the worker inherits what
    // it did before.
    unsafe {
        command.pre_exec(|| {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
}

/// Starts a worker process for `target` with `launcher`, and opens the device in it.
pub(super) fn spawn(
    target: &TargetSpec,
    launcher: &Launcher,
    hang: Duration,
) -> Result<(Arc<Worker>, DeviceInfo)> {
    static SOCKETS: AtomicU64 = AtomicU64::new(0);
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
    let remove = RemoveOnDrop(&path);
    listener
        .set_nonblocking(true)
        .map_err(|e| io_err("configuring", e))?;
    let mut command = match launcher {
        Launcher::Constructor => {
            // Keeps the constructor in every program that starts workers this way.
            std::hint::black_box(&super::worker::WORKER_INIT);
            let exe = std::env::current_exe().map_err(|source| Error::Io {
                path: "the current executable".into(),
                source,
            })?;
            Command::new(exe)
        }
        Launcher::Main(program) => {
            let mut c = Command::new(program);
            c.env(ENTRY_ENV, ENTRY_MAIN);
            c
        }
    };
    let program = command.get_program().to_string_lossy().into_owned();
    inherit_no_descriptors(&mut command);
    // The environment the user gave, not what this process's drivers made of it.
    for (key, value) in crate::backend::driver_env::undo() {
        match value {
            Some(v) => command.env(key, v),
            None => command.env_remove(key),
        };
    }
    let mut child = command
        .env(WORKER_ENV, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| Error::Io {
            path: program,
            source,
        })?;
    let stream = match accept(target, &listener, &mut child) {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    drop(remove);
    let setup = |s: &UnixStream| -> io::Result<UnixStream> {
        s.set_nonblocking(false)?;
        s.set_write_timeout(Some(write_timeout(hang)))?;
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
    let worker = Arc::new(Worker::new(child, stream, pending.clone()));
    thread::Builder::new()
        .name(format!("tune-isolated-{}", worker.pid))
        .spawn(move || read_replies(read_half, &pending))
        .map_err(|e| io_err("starting a reader thread for", e))?;

    let limit = hang.max(MIN_OPEN_TIMEOUT);
    match worker.call(&Request::Open(target.clone()), limit) {
        Ok(Reply::Opened(info)) => Ok((worker, info)),
        Ok(Reply::Error(e)) => Err(e.into()),
        Ok(other) => Err(err(
            target,
            format!("the worker process answered `{}` to opening", other.name()),
        )),
        Err(CallError::Died(m)) => Err(err(target, format!("opening the device: {m}"))),
        Err(CallError::Timeout(d)) => {
            worker.kill(format!("it did not open the device within {d:.1?}"));
            Err(err(
                target,
                format!("the worker process did not open the device within {d:.1?}"),
            ))
        }
    }
}

/// Accepts the worker's connection, while it is alive and for [`CONNECT_TIMEOUT`] at most.
pub(super) fn accept(
    target: &TargetSpec,
    listener: &UnixListener,
    child: &mut Child,
) -> Result<UnixStream> {
    let start = Instant::now();
    loop {
        match listener.accept() {
            // Only the worker may connect: another local process that found the socket is
            // dropped.
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
            return Err(err(
                target,
                format!(
                    "the worker process exited before it connected ({})",
                    describe(status)
                ),
            ));
        }
        if start.elapsed() > CONNECT_TIMEOUT {
            return Err(err(
                target,
                format!(
                    "the worker process did not connect within {CONNECT_TIMEOUT:?}; a worker \
                     program started with `Isolated::with_worker_main` must call \
                     `worker_main()` first in its `main`"
                ),
            ));
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// The process id at the other end of a Unix socket.
fn peer_pid(s: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
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
