//! Builder processes for OpenCL drivers that build one program at a time per process.
//!
//! NVIDIA's OpenCL driver builds programs one after another within a process, however many
//! threads ask (about one build a second for a tiled GEMM on an H100), while separate
//! processes build side by side. A [`BuildFarm`] keeps up to `size` builder processes (this
//! executable again, served by the worker's static constructor, with the device opened the
//! same way); each builds a program from source and sends back its binary, from which the
//! tuning process creates its program. NVIDIA's binary is PTX: loading it compiles it for
//! the GPU, which the driver's JIT cache (on unless `CUDA_CACHE_DISABLE=1`) answers in about
//! a millisecond because the builder has just compiled the same code.
//!
//! Builders start on the first build and stop when the farm is dropped. When one cannot be
//! started the farm stops serving and every build happens in the tuning process, as without
//! a farm.

use std::borrow::Cow;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::lock;
use super::process::{CallError, Worker};
use super::shared::Launcher;
use super::spawn::spawn;
use super::wire::{Reply, Request, TargetSpec};
use crate::evaluate::Failure;

/// How long one build may take in a builder before it is killed.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a builder may take to answer anything but a build (its start).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Up to `size` builder processes for one OpenCL device (see the module docs).
pub(crate) struct BuildFarm {
    target: TargetSpec,
    size: usize,
    state: Mutex<Builders>,
    freed: Condvar,
}

#[derive(Default)]
struct Builders {
    /// Started builders waiting for work.
    idle: Vec<Arc<Worker>>,
    /// Builders started and not yet dead (idle or building).
    running: usize,
    /// Why the farm stopped serving, once it did.
    broken: Option<String>,
}

impl BuildFarm {
    /// A farm of up to `size` builders that open the OpenCL device `query` (as
    /// [`OpenCl::select`](crate::backend::opencl::OpenCl::select) takes it).
    pub(crate) fn new(query: String, size: usize) -> Self {
        BuildFarm {
            target: TargetSpec::OpenCl(query),
            size,
            state: Mutex::new(Builders::default()),
            freed: Condvar::new(),
        }
    }

    /// Builds `source` with `options` in a builder process: `Ok(Some(binary))`; `Ok(None)`
    /// when the farm cannot serve (build in this process instead); `Err` for a failed build
    /// (the driver's log) or a builder that died or hung building it.
    pub(crate) fn build(&self, source: &str, options: &str) -> Result<Option<Vec<u8>>, Failure> {
        let Some(worker) = self.acquire() else {
            return Ok(None);
        };
        let request = Request::Build {
            source: Cow::Borrowed(source),
            options: Cow::Borrowed(options),
        };
        let result = match worker.call(&request, BUILD_TIMEOUT) {
            Ok(Reply::Binary(binary)) => Ok(Some(binary)),
            Ok(Reply::Failed(f)) => Err(f),
            Ok(other) => Err(Failure::Other(format!(
                "a build process answered `{}` to a build",
                other.name()
            ))),
            Err(CallError::Died(m)) => Err(Failure::Compile(format!(
                "the build process died while building: {m}"
            ))),
            Err(CallError::Timeout(d)) => {
                worker.kill(format!("its build ran past {d:.1?}"));
                Err(Failure::Timeout(d))
            }
        };
        self.release(worker);
        result
    }

    /// The most builders that run at once.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Why the farm stopped serving, if it did.
    pub(crate) fn broken(&self) -> Option<String> {
        lock(&self.state).broken.clone()
    }

    /// An idle builder, a new one while fewer than `size` run, or the next one freed; `None`
    /// once the farm cannot serve.
    fn acquire(&self) -> Option<Arc<Worker>> {
        let mut st = lock(&self.state);
        loop {
            if st.broken.is_some() {
                return None;
            }
            if let Some(w) = st.idle.pop() {
                if w.alive() {
                    return Some(w);
                }
                st.running -= 1;
                continue;
            }
            if st.running < self.size {
                st.running += 1;
                drop(st);
                return match spawn(&self.target, &Launcher::Constructor, START_TIMEOUT) {
                    Ok((w, _)) => Some(w),
                    Err(e) => {
                        let mut st = lock(&self.state);
                        st.running -= 1;
                        st.broken = Some(format!("a build process could not start: {e}"));
                        self.freed.notify_all();
                        None
                    }
                };
            }
            st = self.freed.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn release(&self, worker: Arc<Worker>) {
        let mut st = lock(&self.state);
        if worker.alive() {
            st.idle.push(worker);
        } else {
            st.running -= 1;
        }
        self.freed.notify_one();
    }
}
