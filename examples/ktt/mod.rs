//! KTT's case studies as compositions (issue 13), shared by the `ktt_*` examples, the bench
//! and `tests/ktt.rs`: the reduction with its iterative launches, the radix sort's three
//! kernels sharing parameters, and the convolution over a stream of frames for online
//! tuning. Each works on OpenCL and CUDA (and through the isolated backend): the kernels
//! come in both dialects with the same arguments, and the host code is the same.
#![allow(dead_code)]

pub mod bench;
pub mod conv;
pub mod reduction;
pub mod sort;

use std::sync::Arc;

use tune::backend::composition::Composition;
use tune::backend::{Backend, DeviceInfo};
use tune::{Config, Space};

/// Work generic over the backend, run on the device the environment names.
pub trait OnDevice {
    /// Runs on `device`.
    ///
    /// # Errors
    /// The work's own.
    fn run<B: Backend>(self, device: Arc<B>) -> tune::Result<()>;
}

/// Runs `job` on the device of `TUNE_BACKEND` (`opencl`: `TUNE_OPENCL_DEVICE`, else the
/// first OpenCL device; `cuda`: `TUNE_CUDA_DEVICE`, else GPU 0); unset: OpenCL when built
/// with it, else CUDA.
///
/// # Errors
/// [`tune::Error::BackendUnavailable`] when the backend is not built in or has no device;
/// the job's error.
pub fn on_device(job: impl OnDevice) -> tune::Result<()> {
    let which = std::env::var("TUNE_BACKEND").unwrap_or_default();
    #[cfg(feature = "cuda")]
    if which == "cuda" || (which.is_empty() && !cfg!(feature = "opencl")) {
        return job.run(Arc::new(open_cuda()?));
    }
    #[cfg(feature = "opencl")]
    if which != "cuda" {
        return job.run(Arc::new(tune::backend::opencl::OpenCl::from_env(
            "TUNE_OPENCL_DEVICE",
        )?));
    }
    drop(job);
    Err(tune::Error::BackendUnavailable {
        backend: if which.is_empty() {
            "opencl or cuda".into()
        } else {
            which
        },
        reason: "build with `--features opencl` or `--features cuda` (or both, and pick one \
                 with TUNE_BACKEND=opencl|cuda)"
            .into(),
    })
}

/// The CUDA device named by `TUNE_CUDA_DEVICE` (an index, or part of a name), else GPU 0.
///
/// # Errors
/// [`tune::Error::BackendUnavailable`] without CUDA; [`tune::Error::DeviceNotFound`].
#[cfg(feature = "cuda")]
pub fn open_cuda() -> tune::Result<tune::cuda::Cuda> {
    use tune::cuda::{Cuda, DeviceSelector};
    let selector: DeviceSelector = match std::env::var("TUNE_CUDA_DEVICE") {
        Ok(s) => match s.parse::<usize>() {
            Ok(i) => i.into(),
            Err(_) => s.as_str().into(),
        },
        Err(_) => 0.into(),
    };
    Cuda::open(selector)
}

/// Runs an example's body; without a device it says so and exits 0 (so CI runs every
/// example), on any other error it exits 1.
pub fn main_or_skip(name: &str, body: impl FnOnce() -> tune::Result<()>) {
    match body() {
        Ok(()) => {}
        Err(e @ tune::Error::BackendUnavailable { .. }) => {
            eprintln!("{name}: no device, nothing to run: {e}");
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(1);
        }
    }
}

/// A positive integer from the environment variable `var`, else `default`.
pub fn env_usize(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

/// The configuration of `space` that `text` names: `NAME=value` pairs separated by commas
/// (whole numbers and `true`/`false`).
///
/// # Errors
/// A pair without `=`, a value that is neither, or a configuration outside the space.
pub fn config_from_text(space: &Space, text: &str) -> tune::Result<Config> {
    let mut values = Vec::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, v) = pair
            .split_once('=')
            .ok_or_else(|| tune::Error::KernelSpec(format!("`{pair}` is not NAME=value")))?;
        let value = match v.trim() {
            "true" => tune::Value::Bool(true),
            "false" => tune::Value::Bool(false),
            n => tune::Value::UInt(n.parse().map_err(|_| {
                tune::Error::KernelSpec(format!("`{n}` is not a whole number or a bool"))
            })?),
        };
        values.push((name.trim(), value));
    }
    space.config_from_values(values)
}

/// A non-negative integer from the environment variable `var`, else `default`.
pub fn env_u64(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A case study as a composition: what to tune, how, and how much data one run moves.
pub struct Case<B: Backend> {
    /// The tunable's name, as recorded.
    pub name: String,
    /// The input it is tuned for, as recorded.
    pub input: String,
    /// The search space.
    pub space: Space,
    /// The kernels, buffers and host code.
    pub composition: Composition<B>,
    /// The configuration an untuned program would run (KTT's examples' defaults).
    pub default: Config,
    /// Bytes one run reads and writes at least (for throughput).
    pub bytes: f64,
    /// Elements one run processes (keys for the sort).
    pub elements: f64,
}

/// Whether the device runs CUDA kernels (else OpenCL).
pub fn is_cuda(device: &DeviceInfo) -> bool {
    device.backend == "cuda"
}

/// `n` pseudo-random values of a 64-bit mix of the index and the seed (no state, so the
/// same on every machine and cheap for large `n`).
pub fn mix(i: u64, seed: u64) -> u64 {
    let mut x = i.wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The configuration with these named values in `space`.
///
/// # Errors
/// A name the space lacks or a configuration outside it.
pub fn config_of(space: &Space, values: &[(&str, u64)]) -> tune::Result<Config> {
    space.config_from_values(values.iter().map(|&(n, v)| (n, tune::Value::UInt(v))))
}
