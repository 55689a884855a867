//! What the backend and its handles share: the target, how workers start, the timeouts, and
//! the current worker, which is replaced when it dies, hangs or reports its device unusable.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::lock;
use super::process::Worker;
use super::wire::TargetSpec;
use crate::backend::DeviceInfo;
use crate::{Error, Result};

const DEFAULT_HANG_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_COMPILE_TIMEOUT: Duration = Duration::from_secs(600);

/// Which program a worker process runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Launcher {
    /// This executable again, served by the static constructor before its `main`.
    Constructor,
    /// This program, whose `main` calls [`worker_main`](super::worker_main) first.
    Main(PathBuf),
}

/// How long a write to the worker may block: a worker that takes no data for this long is
/// stuck (it reads requests on a thread of their own).
pub(super) fn write_timeout(hang: Duration) -> Duration {
    hang.max(Duration::from_secs(10))
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

pub(super) struct Shared {
    pub(super) target: TargetSpec,
    launcher: Launcher,
    pub(super) hang_ns: AtomicU64,
    compile_ns: AtomicU64,
    current: Mutex<Option<Arc<Worker>>>,
    /// Workers started so far.
    pub(super) started: AtomicU64,
    handles: AtomicU64,
    /// The last kernel source compiled, shared by the kernels compiled from it.
    last_source: Mutex<Option<Arc<str>>>,
    /// Writes that carried their data (tests check that repeated writes do not).
    #[cfg(test)]
    pub(super) data_writes: AtomicU64,
}

impl Shared {
    pub(super) fn new(target: TargetSpec, launcher: Launcher) -> Self {
        Shared {
            target,
            launcher,
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

    pub(super) fn hang_timeout(&self) -> Duration {
        Duration::from_nanos(self.hang_ns.load(Ordering::Relaxed))
    }

    pub(super) fn compile_timeout(&self) -> Duration {
        Duration::from_nanos(self.compile_ns.load(Ordering::Relaxed))
    }

    pub(super) fn set_compile_timeout(&self, limit: Duration) {
        self.compile_ns.store(nanos(limit), Ordering::Relaxed);
    }

    pub(super) fn err(&self, message: impl Into<String>) -> Error {
        Error::Backend {
            backend: self.target.backend().into(),
            message: message.into(),
        }
    }

    /// A new handle for a kernel or buffer, unique for this backend.
    pub(super) fn handle(&self) -> u64 {
        self.handles.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// `source` as a shared string: the kernels of one spec share its source.
    pub(super) fn intern(&self, source: &str) -> Arc<str> {
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
    pub(super) fn live(&self) -> Option<Arc<Worker>> {
        lock(&self.current).as_ref().filter(|w| w.alive()).cloned()
    }

    /// Starts the first worker: the device it opened.
    pub(super) fn open(&self) -> Result<DeviceInfo> {
        let (w, info) = self.start()?;
        *lock(&self.current) = Some(w);
        Ok(info)
    }

    /// The current worker, or a new one in place of a dead one.
    pub(super) fn worker(&self) -> Result<Arc<Worker>> {
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
    pub(super) fn retire(&self, w: &Arc<Worker>, why: String) {
        w.kill(why);
        let mut cur = lock(&self.current);
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, w)) {
            *cur = None;
        }
    }

    #[cfg(target_os = "linux")]
    fn start(&self) -> Result<(Arc<Worker>, DeviceInfo)> {
        let started = super::spawn::spawn(&self.target, &self.launcher, self.hang_timeout())?;
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(started)
    }

    #[cfg(not(target_os = "linux"))]
    fn start(&self) -> Result<(Arc<Worker>, DeviceInfo)> {
        let _ = &self.launcher;
        Err(Error::BackendUnavailable {
            backend: self.target.backend().into(),
            reason: "isolated workers need Linux".into(),
        })
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
