//! The kernel devices of a machine, each in an isolated worker process: by a list, or
//! every device of a model.
//!
//! ```no_run
//! # #[cfg(feature = "cuda")]
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::backend::{BufferArg, KernelSpec};
//! use tune_runtime::scale::{pick, Devices, Pick};
//! use tune_runtime::{Param, SpaceBuilder, Tuner};
//!
//! let space = SpaceBuilder::new()
//!     .param(Param::<usize>::values("BLOCK", [64, 128, 256]))
//!     .build()?;
//! let spec = || {
//!     Ok(KernelSpec::new("extern \"C\" __global__ void k(float* x) {}", "k")
//!         .grid(|_| [1024])
//!         .local(|c| [c.get::<usize>(0)])
//!         .buffer(BufferArg::zeros::<f32>(1024)))
//! };
//! // Every H100 of this machine, one worker process each.
//! let gpus = pick::cuda(&Pick::model("H100"))?;
//! let devices = Devices::kernels(gpus, &space, spec)?;
//! let result = Tuner::new(space, &devices).run()?;
//! println!("{}", result.summary());
//! # Ok(()) }
//! # #[cfg(not(feature = "cuda"))]
//! # fn main() {}
//! ```

use crate::backend::isolated::Isolated;
#[cfg(any(feature = "opencl", feature = "cuda"))]
use crate::backend::isolated::Target;
use crate::backend::{KernelEvaluator, KernelSpec};
use crate::space::Space;
use crate::{Error, Result};

use super::Devices;

/// Which devices of a machine a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pick {
    /// These devices, each by the backend's query (CUDA: an index or part of the name;
    /// OpenCL: see `OpenCl::select`, feature `opencl`). A query may
    /// be given more than once: several workers then share that device (a stand-in for
    /// several devices in tests).
    List(Vec<String>),
    /// Every device whose name contains this, case-insensitive; empty: every device (which
    /// must then all be one model).
    Model(String),
}

impl Pick {
    /// These devices, by query.
    pub fn list<S: Into<String>>(queries: impl IntoIterator<Item = S>) -> Self {
        Pick::List(queries.into_iter().map(Into::into).collect())
    }

    /// Every device whose name contains `model` (`"H100"`).
    pub fn model(model: impl Into<String>) -> Self {
        Pick::Model(model.into())
    }

    /// Every device of the machine.
    pub fn all() -> Self {
        Pick::Model(String::new())
    }
}

/// Starts one worker per `(name, target)` (in parallel: a worker opens its device on
/// start).
#[cfg(any(feature = "opencl", feature = "cuda"))]
fn start(targets: Vec<(String, Target)>) -> Result<Vec<(String, Isolated)>> {
    std::thread::scope(|s| {
        let started: Vec<_> = targets
            .into_iter()
            .map(|(name, t)| s.spawn(move || Isolated::new(t).map(|d| (name, d))))
            .collect();
        started
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Backend {
                        backend: "isolated".into(),
                        message: "starting a worker panicked".into(),
                    })
                })
            })
            .collect()
    })
}

/// Names each query, numbering repeats (`opencl:portable#1`).
#[cfg(any(feature = "opencl", feature = "cuda"))]
fn named(backend: &str, queries: &[String]) -> Vec<String> {
    queries
        .iter()
        .enumerate()
        .map(|(k, q)| {
            let before = queries[..k].iter().filter(|p| *p == q).count();
            if before == 0 {
                format!("{backend}:{q}")
            } else {
                format!("{backend}:{q}#{before}")
            }
        })
        .collect()
}

/// Nothing matched `model`: the error, listing what there is.
#[cfg(any(feature = "opencl", feature = "cuda"))]
fn none_of(backend: &str, model: &str, available: Vec<String>) -> Error {
    Error::DeviceNotFound {
        backend: backend.into(),
        query: model.into(),
        available: available.join("; "),
    }
}

/// The OpenCL devices of `pick`, one worker process each, named `opencl:P:D` (platform and
/// device index) or `opencl:QUERY` for a list.
///
/// # Errors
/// [`Error::DeviceNotFound`] when no device matches (listing those there are); the errors
/// of [`Isolated::new`] for a device that cannot be opened.
#[cfg(feature = "opencl")]
#[cfg_attr(docsrs, doc(cfg(feature = "opencl")))]
pub fn opencl(pick: &Pick) -> Result<Vec<(String, Isolated)>> {
    let targets: Vec<(String, Target)> = match pick {
        Pick::List(queries) => named("opencl", queries)
            .into_iter()
            .zip(queries)
            .map(|(n, q)| (n, Target::OpenCl(q.clone())))
            .collect(),
        Pick::Model(model) => {
            let all = crate::backend::opencl::OpenCl::devices()?;
            let m = model.to_lowercase();
            let chosen: Vec<(String, Target)> = all
                .iter()
                .filter(|e| e.name.to_lowercase().contains(&m))
                .map(|e| {
                    let at = format!("{}:{}", e.platform_index, e.device_index);
                    (format!("opencl:{at}"), Target::OpenCl(at))
                })
                .collect();
            if chosen.is_empty() {
                return Err(none_of(
                    "opencl",
                    model,
                    all.iter().map(ToString::to_string).collect(),
                ));
            }
            chosen
        }
    };
    start(targets)
}

/// The CUDA devices of `pick`, one worker process each, named `cuda:N` (the device's
/// index) or `cuda:QUERY` for a list. The devices are counted and named through the driver,
/// without a context on any of them.
///
/// # Errors
/// [`Error::BackendUnavailable`] without CUDA; [`Error::DeviceNotFound`] when no device
/// matches; the errors of [`Isolated::new`] for a device that cannot be opened.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub fn cuda(pick: &Pick) -> Result<Vec<(String, Isolated)>> {
    use cudarc::driver::result::device;
    let targets: Vec<(String, Target)> = match pick {
        Pick::List(queries) => named("cuda", queries)
            .into_iter()
            .zip(queries)
            .map(|(n, q)| (n, Target::Cuda(q.clone())))
            .collect(),
        Pick::Model(model) => {
            crate::backend::cuda::probe()?;
            let unavailable = |e: cudarc::driver::DriverError| Error::BackendUnavailable {
                backend: "cuda".into(),
                reason: format!("listing the devices: {e}"),
            };
            let count = device::get_count().map_err(unavailable)?;
            let mut names = Vec::new();
            for i in 0..count.max(0) {
                let dev = device::get(i).map_err(unavailable)?;
                names.push((i, device::get_name(dev).map_err(unavailable)?));
            }
            let m = model.to_lowercase();
            let chosen: Vec<(String, Target)> = names
                .iter()
                .filter(|(_, n)| n.to_lowercase().contains(&m))
                .map(|(i, _)| (format!("cuda:{i}"), Target::Cuda(i.to_string())))
                .collect();
            if chosen.is_empty() {
                return Err(none_of(
                    "cuda",
                    model,
                    names.iter().map(|(i, n)| format!("{i}: {n}")).collect(),
                ));
            }
            chosen
        }
    };
    start(targets)
}

impl Devices<KernelEvaluator<Isolated>> {
    /// One [`KernelEvaluator`] per device of `devices` (from `cuda` or `opencl`, with their backends' features), each
    /// with the spec `spec` builds (its buffers and reference on that device), set up in
    /// parallel.
    ///
    /// # Errors
    /// Those of `spec` and of [`KernelEvaluator::new`] on any device;
    /// [`Error::MixedDevices`] when the devices are not all one model.
    pub fn kernels(
        devices: Vec<(String, Isolated)>,
        space: &Space,
        spec: impl Fn() -> Result<KernelSpec> + Sync,
    ) -> Result<Self> {
        let spec = &spec;
        let evaluators: Result<Vec<(String, KernelEvaluator<Isolated>)>> =
            std::thread::scope(|s| {
                let handles: Vec<_> = devices
                    .into_iter()
                    .map(|(name, d)| {
                        s.spawn(move || KernelEvaluator::new(d, space, spec()?).map(|e| (name, e)))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::KernelSpec(
                                "building the spec or its reference panicked".into(),
                            ))
                        })
                    })
                    .collect()
            });
        Devices::named(evaluators?)
    }
}
