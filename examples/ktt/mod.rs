//! KTT's case studies as compositions (issue 13), shared by the `ktt_*` examples, the bench
//! and `tests/ktt.rs`: the reduction with its iterative launches, the radix sort's three
//! kernels sharing parameters, and the convolution over a stream of frames for online
//! tuning. Each works on OpenCL and CUDA (and through the isolated backend): the kernels
//! come in both dialects with the same arguments, and the host code is the same.
#![allow(dead_code)]

pub mod conv;
pub mod reduction;
pub mod sort;

use tune::backend::composition::Composition;
use tune::backend::{Backend, DeviceInfo};
use tune::{Config, Space};

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
