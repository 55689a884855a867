//! The CUDA case studies as [`Case`]s (saxpy, the 2D convolution, SGEMM, XgemmDirect and
//! Kernel Tuner's throughput case), cuBLAS SGEMM timed the way tune times a kernel, and what
//! the CUDA examples share: opening the device, and exiting 0 when there is no CUDA.
//!
//! Each case is tuned by [`super::tune_case`] like the OpenCL ones of [`super::cases`].

use std::sync::Arc;
use std::time::Duration;

use tune::backend::{BufferArg, HostData, KernelSpec, Tolerance};
use tune::cuda::cudarc::cublas::{sys as cublas_sys, CudaBlas, Gemm, GemmConfig};
use tune::cuda::cudarc::driver::sys::{
    CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use tune::cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
use tune::cuda::{Cuda, DeviceSelector};
use tune::{Config, Param, Space, SpaceBuilder};

use super::{Budget, Case, Options};

/// Runs an example's body. Without CUDA (no driver, no device) it says so and returns, so
/// the process exits 0 (CI and laptops build and run every example); any other error exits 1.
pub fn main_or_skip(name: &str, body: impl FnOnce() -> tune::Result<()>) {
    match body() {
        Ok(()) => {}
        Err(e @ tune::Error::BackendUnavailable { .. }) => {
            eprintln!("{name}: CUDA is unavailable, nothing to run: {e}");
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(1);
        }
    }
}

/// The CUDA device named by `TUNE_CUDA_DEVICE` (an index, or part of a name), or device 0.
pub fn open() -> tune::Result<Cuda> {
    let selector: DeviceSelector = match std::env::var("TUNE_CUDA_DEVICE") {
        Ok(s) => match s.parse::<usize>() {
            Ok(i) => i.into(),
            Err(_) => s.as_str().into(),
        },
        Err(_) => 0.into(),
    };
    Cuda::open(selector)
}

/// Seeded random `f32` values in [-1, 1).
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    match BufferArg::random::<f32>(len, seed).data() {
        HostData::F32(v) => v.clone(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// saxpy
// ---------------------------------------------------------------------------------------------

/// ATF's saxpy (kernels/saxpy.cu): WPT in [1, n] dividing n, LS in [1, n] dividing n / WPT
/// (blocks over the device's limit are rejected before compiling); y = 2.5 x + y validated
/// per element.
pub fn saxpy(n: usize) -> tune::Result<Case> {
    let space = SpaceBuilder::new()
        .param(Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n))
        .param(Param::<usize>::range("LS", 1..=n).divides(&[0], move |b| n / b.get::<usize>(0)))
        .build()?;
    let x = random_f32(n, 1);
    let y = random_f32(n, 2);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.5 * x + y).collect();
    let spec = KernelSpec::new(include_str!("../../kernels/saxpy.cu"), "saxpy")
        .global(move |c| [n / c.get::<usize>(0)])
        .local(|c| [c.get::<usize>(1)])
        .scalar(n as i32)
        .scalar(2.5f32)
        .buffer(BufferArg::from_vec(x))
        .buffer(BufferArg::from_vec(y).output())
        .repetitions(10)
        .tolerance(Tolerance::PerElement {
            abs: 1e-6,
            rel: 1e-6,
        })
        .reference(move |_| Ok(vec![HostData::F32(want.clone())]));
    Ok(Case {
        name: "cuda_saxpy".into(),
        input: format!("n={n}"),
        space,
        spec,
        flops: 2.0 * n as f64,
        bytes: 12.0 * n as f64,
    })
}

// ---------------------------------------------------------------------------------------------
// 2D convolution
// ---------------------------------------------------------------------------------------------

/// The 2D convolution kernel (kernels/conv.cu).
pub const CONV_SRC: &str = include_str!("../../kernels/conv.cu");

/// CLTune's convolution space (Table II): block sizes, work per thread, local-memory mode,
/// vector width, padding, unrolling; tiles divide the `w x h` image, at most 1024 threads,
/// the staged tile fits 48 KiB of shared memory, and settings that do not apply are fixed
/// (vector width only with LOCAL = 2, padding only with LOCAL > 0).
pub fn conv_space(w: u32, h: u32, fs: u32) -> tune::Result<Space> {
    SpaceBuilder::new()
        .param(Param::<u32>::values("TBX", [8, 16, 32, 64]))
        .param(
            Param::<u32>::values("TBY", [8, 16, 32])
                .constraint(&[0], |b| b.get::<u32>(0) * b.get::<u32>(1) <= 1024),
        )
        .param(
            Param::<u32>::values("WPTX", [1, 2, 4, 8])
                .constraint(&[0], move |b| w % (b.get::<u32>(0) * b.get::<u32>(2)) == 0),
        )
        .param(
            Param::<u32>::values("WPTY", [1, 2, 4, 8])
                .constraint(&[1], move |b| h % (b.get::<u32>(1) * b.get::<u32>(3)) == 0),
        )
        .param(
            Param::<u32>::values("LOCAL", [0, 1, 2]).constraint(&[0, 1, 2, 3], move |b| {
                let sx = b.get::<u32>(0) * b.get::<u32>(2) + fs - 1 + 1;
                let sy = b.get::<u32>(1) * b.get::<u32>(3) + fs - 1;
                b.get::<u32>(4) == 0 || sx * sy * 4 + fs * fs * 4 <= 48 * 1024
            }),
        )
        .param(
            Param::<u32>::values("VECTOR", [1, 2, 4])
                .constraint(&[4], |b| b.get::<u32>(4) == 2 || b.get::<u32>(5) == 1),
        )
        .param(
            Param::<u32>::values("PADDING", [0, 1])
                .constraint(&[4], |b| b.get::<u32>(4) > 0 || b.get::<u32>(6) == 0),
        )
        .param(Param::<u32>::values("UNROLL", [1, 0]))
        .build()
}

/// The convolution spec for a `w x h` image and an `fs x fs` filter, validated against a
/// host convolution (in f64, on all cores).
pub fn conv_spec(w: usize, h: usize, fs: usize) -> KernelSpec {
    use rayon::prelude::*;
    let hfs = fs / 2;
    let pw = w + 2 * hfs;
    let ph = h + 2 * hfs;
    let input = random_f32(pw * ph, 21);
    let coeff = random_f32(fs * fs, 22);
    let mut want = vec![0f32; w * h];
    want.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (x, o) in row.iter_mut().enumerate() {
            let mut s = 0f64;
            for fy in 0..fs {
                for fx in 0..fs {
                    s += f64::from(coeff[fy * fs + fx]) * f64::from(input[(y + fy) * pw + x + fx]);
                }
            }
            *o = s as f32;
        }
    });
    KernelSpec::new(CONV_SRC, "conv")
        .define("FS", fs)
        .define("W", w)
        .define("H", h)
        .global(move |c| [w / c.get::<u32>(2) as usize, h / c.get::<u32>(3) as usize])
        .local(|c| [c.get::<u32>(0) as usize, c.get::<u32>(1) as usize])
        .buffer(BufferArg::from_vec(input))
        .buffer(BufferArg::from_vec(coeff))
        .buffer(BufferArg::zeros::<f32>(w * h).output())
        .warmups(2)
        .repetitions(10)
        .tolerance(Tolerance::PerElement {
            abs: 1e-4,
            rel: 1e-4,
        })
        .reference(move |_| Ok(vec![HostData::F32(want.clone())]))
}

/// CLTune's 2D convolution of a `w x h` image with an `fs x fs` filter ([`conv_space`],
/// [`conv_spec`]).
pub fn conv(w: usize, h: usize, fs: usize) -> tune::Result<Case> {
    let space = conv_space(w as u32, h as u32, fs as u32)?;
    let (pw, ph) = (w + fs / 2 * 2, h + fs / 2 * 2);
    Ok(Case {
        name: "cuda_conv".into(),
        input: format!("{w}x{h},fs={fs}"),
        space,
        spec: conv_spec(w, h, fs),
        flops: 2.0 * (w * h * fs * fs) as f64,
        bytes: 4.0 * (pw * ph + w * h) as f64,
    })
}

// ---------------------------------------------------------------------------------------------
// SGEMM
// ---------------------------------------------------------------------------------------------

/// The tunable SGEMM kernel (kernels/sgemm.cu).
pub const SGEMM_SRC: &str = include_str!("../../kernels/sgemm.cu");

/// Parameter slots of [`sgemm_space`].
pub mod slot {
    pub const BM: usize = 0;
    pub const BN: usize = 1;
    pub const BK: usize = 2;
    pub const TM: usize = 3;
    pub const TN: usize = 4;
    pub const VA: usize = 5;
    pub const VB: usize = 6;
    pub const PADA: usize = 7;
    pub const PADB: usize = 8;
    pub const DB: usize = 9;
}

/// The SGEMM search space for `m x n x k`: block tiles, thread tiles, vector widths,
/// padding, double buffering, unrolling, rasterisation and occupancy, with the constraints
/// that make the kernel well-formed (tiles divide the matrix, every thread loads whole
/// vectors, 64..=1024 threads, shared memory and registers within Hopper's limits).
pub fn sgemm_space(m: u32, n: u32, k: u32) -> tune::Result<Space> {
    use slot::*;
    let nt = |b: &tune::Bound<'_>| {
        (b.get::<u32>(BM) / b.get::<u32>(TM)) * (b.get::<u32>(BN) / b.get::<u32>(TN))
    };
    SpaceBuilder::new()
        .param(
            Param::<u32>::values("BM", [32, 64, 128, 256])
                .constraint(&[], move |b| m % b.get::<u32>(BM) == 0),
        )
        .param(
            Param::<u32>::values("BN", [32, 64, 128, 256])
                .constraint(&[], move |b| n % b.get::<u32>(BN) == 0),
        )
        .param(
            Param::<u32>::values("BK", [8, 16, 32])
                .constraint(&[], move |b| k % b.get::<u32>(BK) == 0),
        )
        .param(
            Param::<u32>::values("TM", [4, 8, 16])
                .constraint(&[BM], |b| b.get::<u32>(BM) % b.get::<u32>(TM) == 0),
        )
        .param(
            Param::<u32>::values("TN", [4, 8, 16]).constraint(&[BM, BN, TM], move |b| {
                let (tm, tn) = (b.get::<u32>(TM), b.get::<u32>(TN));
                b.get::<u32>(BN) % tn == 0 && tm * tn <= 128 && (64..=1024).contains(&nt(b))
            }),
        )
        .param(
            Param::<u32>::values("VA", [1, 2, 4]).constraint(&[BM, BN, BK, TM, TN], move |b| {
                (b.get::<u32>(BM) * b.get::<u32>(BK)) % (b.get::<u32>(VA) * nt(b)) == 0
            }),
        )
        .param(
            Param::<u32>::values("VB", [1, 2, 4]).constraint(&[BM, BN, BK, TM, TN], move |b| {
                (b.get::<u32>(BN) * b.get::<u32>(BK)) % (b.get::<u32>(VB) * nt(b)) == 0
            }),
        )
        .param(Param::<u32>::values("PADA", [0, 4]))
        .param(Param::<u32>::values("PADB", [0, 4]))
        .param(
            Param::<u32>::values("DB", [0, 1]).constraint(&[BM, BN, BK, PADA, PADB], |b| {
                let words = (b.get::<u32>(DB) + 1)
                    * b.get::<u32>(BK)
                    * (b.get::<u32>(BM)
                        + b.get::<u32>(PADA)
                        + b.get::<u32>(BN)
                        + b.get::<u32>(PADB));
                words * 4 <= 227 * 1024
            }),
        )
        .param(Param::<u32>::values("UNR", [1, 0]))
        .param(Param::<u32>::values("SWZ", [1, 4, 8, 16]))
        .param(
            Param::<u32>::values("MINB", [1, 2]).constraint(&[BM, BN, TM, TN], move |b| {
                let regs = b.get::<u32>(TM) * b.get::<u32>(TN) + 40;
                b.get::<u32>(12) * nt(b) * regs <= 65536
            }),
        )
        .build()
}

/// Dynamic shared memory of a configuration of [`sgemm_space`], bytes.
pub fn sgemm_smem(c: &Config) -> usize {
    use slot::*;
    let g = |s| c.get::<u32>(s) as usize;
    (g(DB) + 1) * g(BK) * (g(BM) + g(PADA) + g(BN) + g(PADB)) * 4
}

/// The SGEMM kernel spec: `C = A * B` (alpha 1, beta 0) with the given inputs, validated
/// against `expected` (norm-wise relative error 1e-4).
pub fn sgemm_spec(
    m: u32,
    n: u32,
    k: u32,
    a: Vec<f32>,
    b: Vec<f32>,
    expected: Option<Vec<f32>>,
) -> KernelSpec {
    sgemm_spec_of(SGEMM_SRC.into(), m, n, k, a, b, expected)
}

fn sgemm_spec_of(
    source: String,
    m: u32,
    n: u32,
    k: u32,
    a: Vec<f32>,
    b: Vec<f32>,
    expected: Option<Vec<f32>>,
) -> KernelSpec {
    use slot::*;
    let mut spec = KernelSpec::new(source, "sgemm")
        .define("M", m)
        .define("N", n)
        .define("K", k)
        .grid(move |c| {
            [
                (n / c.get::<u32>(BN)) as usize,
                (m / c.get::<u32>(BM)) as usize,
            ]
        })
        .local(|c| {
            let nt = (c.get::<u32>(BM) / c.get::<u32>(TM)) * (c.get::<u32>(BN) / c.get::<u32>(TN));
            [nt as usize, 1]
        })
        .dynamic_local_memory(sgemm_smem)
        .buffer(BufferArg::zeros::<f32>((m * n) as usize).output())
        .buffer(BufferArg::from_vec(a))
        .buffer(BufferArg::from_vec(b))
        .scalar(1.0f32)
        .scalar(0.0f32)
        .warmups(1)
        .repetitions(10)
        .tolerance(Tolerance::Norm(1e-4));
    if let Some(e) = expected {
        spec = spec.reference(move |_| Ok(vec![HostData::F32(e.clone())]));
    }
    spec
}

/// How the SGEMM's product is checked.
#[derive(Clone, Debug)]
pub enum SgemmCheck {
    /// Against the host product in f64 ([`sgemm_host`], on all cores: seconds at 2048^3).
    Host,
    /// Against a given product (cuBLAS's, for the large sizes).
    Given(Vec<f32>),
}

/// The SGEMM's inputs: A (`m x k`, seed 11) and B (`k x n`, seed 12), row-major.
pub fn sgemm_inputs(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    (random_f32(m * k, 11), random_f32(k * n, 12))
}

/// `A * B` on the host, accumulated in f64, rows in parallel (row-major, A `m x k`, B `k x n`).
pub fn sgemm_host(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    use rayon::prelude::*;
    let mut c = vec![0f32; m * n];
    c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        let mut acc = vec![0f64; n];
        for l in 0..k {
            let x = f64::from(a[i * k + l]);
            for (s, y) in acc.iter_mut().zip(&b[l * n..(l + 1) * n]) {
                *s += x * f64::from(*y);
            }
        }
        for (o, s) in row.iter_mut().zip(acc) {
            *o = s as f32;
        }
    });
    c
}

/// The tunable SGEMM (kernels/sgemm.cu) for `m x n x k` on [`sgemm_inputs`] ([`sgemm_space`],
/// [`sgemm_spec`]).
pub fn sgemm(m: usize, n: usize, k: usize, check: SgemmCheck) -> tune::Result<Case> {
    sgemm_with_source(m, n, k, check, "")
}

/// [`sgemm`] with `extra` appended to the kernel source: code beside the kernel makes
/// NVRTC compile everything afresh in a process that compiled the same configurations
/// before (it caches them).
pub fn sgemm_with_source(
    m: usize,
    n: usize,
    k: usize,
    check: SgemmCheck,
    extra: &str,
) -> tune::Result<Case> {
    let (a, b) = sgemm_inputs(m, n, k);
    let expected = match check {
        SgemmCheck::Host => sgemm_host(m, n, k, &a, &b),
        SgemmCheck::Given(c) => c,
    };
    let space = sgemm_space(m as u32, n as u32, k as u32)?;
    let source = format!("{SGEMM_SRC}{extra}");
    let spec = sgemm_spec_of(source, m as u32, n as u32, k as u32, a, b, Some(expected))
        .compile_time_limit(Duration::from_secs(60));
    Ok(Case {
        name: "cuda_sgemm".into(),
        input: format!("m={m},n={n},k={k}"),
        space,
        spec,
        flops: 2.0 * (m * n * k) as f64,
        bytes: 0.0,
    })
}

/// The classic hand-written SGEMM configuration (128 x 128 x 8 block tile, 8 x 8 per
/// thread, float4 loads, double buffering), if `space` (of [`sgemm_space`]) holds it.
pub fn sgemm_classic(space: &Space) -> Option<Config> {
    space
        .config_from_values(
            [
                ("BM", 128),
                ("BN", 128),
                ("BK", 8),
                ("TM", 8),
                ("TN", 8),
                ("VA", 4),
                ("VB", 4),
                ("PADA", 4),
                ("PADB", 0),
                ("DB", 1),
                ("UNR", 1),
                ("SWZ", 8),
                ("MINB", 2),
            ]
            .map(|(k, v)| (k, tune::Value::Int(v))),
        )
        .ok()
}

// ---------------------------------------------------------------------------------------------
// XgemmDirect
// ---------------------------------------------------------------------------------------------

/// The XgemmDirect kernel (kernels/xgemm_direct.cu).
pub const XGEMM_DIRECT_SRC: &str = include_str!("../../kernels/xgemm_direct.cu");

/// The XgemmDirect space with ATF's unconstrained-range style: WGD in [1, 64], thread and
/// load layouts among WGD's and the thread count's divisors, KWID dividing WGD, vector runs
/// dividing the work per thread, padding on/off. (WGD is capped at 64 by shared memory.)
pub fn xgemm_direct_space() -> tune::Result<Space> {
    let ntd = |b: &tune::Bound<'_>| b.get::<u32>(1) * b.get::<u32>(2);
    SpaceBuilder::new()
        .param(Param::<u32>::range("WGD", 1..=64))
        .param(Param::<u32>::range("MDIMCD", 1..=64).divides(&[0], |b| b.get::<u32>(0)))
        .param(
            Param::<u32>::range("NDIMCD", 1..=64)
                .divides(&[0], |b| b.get::<u32>(0))
                .constraint(&[0, 1], move |b| {
                    let w = b.get::<u32>(0);
                    let t = ntd(b);
                    (w / b.get::<u32>(1)) * (w / b.get::<u32>(2)) <= 64 && (32..=1024).contains(&t)
                }),
        )
        .param(
            Param::<u32>::range("MDIMAD", 1..=1024)
                .divides(&[1, 2], ntd)
                .at_most(&[0], |b| b.get::<u32>(0)),
        )
        .param(
            Param::<u32>::range("NDIMBD", 1..=1024)
                .divides(&[1, 2], ntd)
                .at_most(&[0], |b| b.get::<u32>(0)),
        )
        .param(Param::<u32>::range("KWID", 1..=64).divides(&[0], |b| b.get::<u32>(0)))
        .param(
            Param::<u32>::values("VWMD", [1, 2, 4, 8])
                .divides(&[0, 1], |b| b.get::<u32>(0) / b.get::<u32>(1)),
        )
        .param(
            Param::<u32>::values("VWND", [1, 2, 4, 8])
                .divides(&[0, 2], |b| b.get::<u32>(0) / b.get::<u32>(2)),
        )
        .param(Param::<u32>::values("PADA", [0, 1]))
        .param(Param::<u32>::values("PADB", [0, 1]))
        .build()
}

/// The XgemmDirect spec for `m x n x k` (alpha 1, beta 0), validated against a host GEMM.
pub fn xgemm_direct_spec(m: usize, n: usize, k: usize, seed: u64) -> KernelSpec {
    let a = random_f32(m * k, seed);
    let b = random_f32(k * n, seed + 1);
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f64;
            for l in 0..k {
                s += f64::from(a[i * k + l]) * f64::from(b[l * n + j]);
            }
            c[i * n + j] = s as f32;
        }
    }
    KernelSpec::new(XGEMM_DIRECT_SRC, "xgemm_direct")
        // CLBlast's global size: ceil(M / WGD) * MDIMCD by ceil(N / WGD) * NDIMCD.
        .global(move |cf| {
            let w = cf.get::<u32>(0) as usize;
            [
                m.div_ceil(w) * cf.get::<u32>(1) as usize,
                n.div_ceil(w) * cf.get::<u32>(2) as usize,
            ]
        })
        .local(|cf| [cf.get::<u32>(1) as usize, cf.get::<u32>(2) as usize])
        .scalar(m as i32)
        .scalar(n as i32)
        .scalar(k as i32)
        .scalar(1.0f32)
        .scalar(0.0f32)
        .buffer(BufferArg::from_vec(a))
        .buffer(BufferArg::from_vec(b))
        .buffer(BufferArg::zeros::<f32>(m * n).output())
        .warmups(3)
        .repetitions(50)
        .tolerance(Tolerance::PerElement {
            abs: 1e-4,
            rel: 1e-4,
        })
        .reference(move |_| Ok(vec![HostData::F32(c.clone())]))
}

/// Kernel launches per timed sample for an `m x n x k` GEMM, for the tuned kernel and
/// cuBLAS alike: 64 back to back below 1e8 flops (ATF's small shapes run for a few
/// microseconds, mostly launch latency when launched alone), else 1.
pub fn back_to_back(m: usize, n: usize, k: usize) -> usize {
    if 2.0 * ((m * n * k) as f64) < 1e8 {
        64
    } else {
        1
    }
}

/// The inputs of [`xgemm_direct`]: A (`m x k`, seed 5) and B (`k x n`, seed 6).
pub fn xgemm_direct_inputs(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    (random_f32(m * k, 5), random_f32(k * n, 6))
}

/// CLBlast's XgemmDirect for `m x n x k` ([`xgemm_direct_space`], [`xgemm_direct_spec`] on
/// [`xgemm_direct_inputs`]), timed over [`back_to_back`] launches per sample.
pub fn xgemm_direct(m: usize, n: usize, k: usize) -> tune::Result<Case> {
    let space = xgemm_direct_space()?;
    let spec = xgemm_direct_spec(m, n, k, 5)
        .launches_per_sample(back_to_back(m, n, k))
        .compile_time_limit(Duration::from_secs(60));
    Ok(Case {
        name: "cuda_xgemm_direct".into(),
        input: format!("m={m},n={n},k={k}"),
        space,
        spec,
        flops: 2.0 * (m * n * k) as f64,
        bytes: 0.0,
    })
}

// ---------------------------------------------------------------------------------------------
// Kernel Tuner's throughput case
// ---------------------------------------------------------------------------------------------

/// Kernel Tuner's throughput kernel (the project's benchmark kernel of bench/gpu).
pub const KT_MATMUL_SRC: &str = include_str!("../../kernels/kt_matmul.cu");

/// Kernel Tuner's throughput space: 4 x 5 x 4 x 4 x 4 = 1,280 Cartesian configurations,
/// restricted to 32 <= block_size_x * block_size_y <= 1024.
pub fn kt_matmul_space() -> tune::Result<Space> {
    SpaceBuilder::new()
        .param(Param::<u32>::values("block_size_x", [16, 32, 64, 128]))
        .param(
            Param::<u32>::values("block_size_y", [1, 2, 4, 8, 16]).constraint(&[0], |b| {
                (32..=1024).contains(&(b.get::<u32>(0) * b.get::<u32>(1)))
            }),
        )
        .param(Param::<u32>::values("tile_size_x", [1, 2, 4, 8]))
        .param(Param::<u32>::values("tile_size_y", [1, 2, 4, 8]))
        .param(Param::<u32>::values("loop_unroll", [1, 2, 4, 8]))
        .build()
}

/// Kernel Tuner's throughput spec: n x n, 7 timed iterations, no validation (as there).
pub fn kt_matmul_spec(n: usize) -> KernelSpec {
    KernelSpec::new(KT_MATMUL_SRC, "matmul")
        .grid(move |c| {
            [
                n.div_ceil((c.get::<u32>(0) * c.get::<u32>(2)) as usize),
                n.div_ceil((c.get::<u32>(1) * c.get::<u32>(3)) as usize),
            ]
        })
        .local(|c| [c.get::<u32>(0) as usize, c.get::<u32>(1) as usize])
        .buffer(BufferArg::zeros::<f32>(n * n))
        .buffer(BufferArg::random::<f32>(n * n, 1))
        .buffer(BufferArg::random::<f32>(n * n, 2))
        .scalar(n as i32)
        .warmups(0)
        .repetitions(7)
}

/// Kernel Tuner's throughput case at `n x n` ([`kt_matmul_space`], [`kt_matmul_spec`]; no
/// validation).
pub fn kt_matmul(n: usize) -> tune::Result<Case> {
    Ok(Case {
        name: "cuda_kt_matmul".into(),
        input: format!("n={n}"),
        space: kt_matmul_space()?,
        spec: kt_matmul_spec(n),
        flops: 2.0 * (n * n * n) as f64,
        bytes: 0.0,
    })
}

// ---------------------------------------------------------------------------------------------
// cuBLAS
// ---------------------------------------------------------------------------------------------

fn err(m: impl std::fmt::Display) -> tune::Error {
    tune::Error::Backend {
        backend: "cuda".into(),
        message: m.to_string(),
    }
}

/// cuBLAS SGEMM (`cublasSgemm`, TF32 off) on row-major `m x k` times `k x n`, timed the
/// way tune times a kernel with `launches` per sample: each sample is `launches`
/// back-to-back calls (replayed from a CUDA graph when more than one) between one pair of
/// CUDA events; the cost is the median of `reps` samples (after 3 untimed ones) divided by
/// `launches`. Returns seconds per call and the product.
#[allow(clippy::too_many_arguments)]
pub fn cublas_sgemm(
    cuda: &Cuda,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    launches: usize,
    reps: usize,
) -> tune::Result<(f64, Vec<f32>)> {
    let (launches, reps) = (launches.max(1), reps.max(1));
    // SAFETY: cuBLAS and every buffer below use tune's own stream only.
    let (ctx, stream) = unsafe { cuda.context()? };
    let blas = CudaBlas::new(stream.clone()).map_err(err)?;
    // SAFETY: a live handle; the default math mode keeps fp32 (no TF32).
    unsafe {
        cublas_sys::cublasSetMathMode(
            *blas.handle(),
            cublas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH,
        )
        .result()
        .map_err(err)?;
    }
    let da = stream.clone_htod(a).map_err(err)?;
    let db = stream.clone_htod(b).map_err(err)?;
    let mut dc = stream.alloc_zeros::<f32>(m * n).map_err(err)?;
    // Row-major C = A B is column-major C^T = B^T A^T.
    let cfg = GemmConfig {
        transa: cublas_sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cublas_sys::cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: 1.0f32,
        lda: n as i32,
        ldb: k as i32,
        beta: 0.0f32,
        ldc: n as i32,
    };
    // Back-to-back calls are captured into a CUDA graph and replayed, like tune's repeated
    // launches: the per-call host work of cuBLAS then cannot leave the GPU idle between
    // kernels, which would make cuBLAS look slower than it is.
    let graph = if launches > 1 {
        let (pa, _ga) = da.device_ptr(&stream);
        let (pb, _gb) = db.device_ptr(&stream);
        let (pc, _gc) = dc.device_ptr_mut(&stream);
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(err)?;
        let mut captured = Ok(());
        for _ in 0..launches {
            // SAFETY: a live handle bound to `stream`; the pointers are live allocations of
            // the sizes the configuration describes (row-major C = A B as column-major
            // C^T = B^T A^T).
            captured = unsafe {
                cublas_sys::cublasSgemm_v2(
                    *blas.handle(),
                    cfg.transa,
                    cfg.transb,
                    cfg.m,
                    cfg.n,
                    cfg.k,
                    &cfg.alpha,
                    pb as *const f32,
                    cfg.lda,
                    pa as *const f32,
                    cfg.ldb,
                    &cfg.beta,
                    pc as *mut f32,
                    cfg.ldc,
                )
            }
            .result();
            if captured.is_err() {
                break;
            }
        }
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        captured.map_err(err)?;
        let graph = graph
            .map_err(err)?
            .ok_or_else(|| tune::Error::KernelSpec("empty cuBLAS graph capture".into()))?;
        graph.upload().map_err(err)?;
        Some(graph)
    } else {
        None
    };
    let start = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(err)?;
    let end = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(err)?;
    let mut times = Vec::with_capacity(reps);
    for i in 0..reps + 3 {
        start.record(&stream).map_err(err)?;
        match &graph {
            Some(g) => g.launch().map_err(err)?,
            // SAFETY: the buffers have the sizes the configuration describes.
            None => unsafe { blas.gemm(cfg, &db, &da, &mut dc) }.map_err(err)?,
        }
        end.record(&stream).map_err(err)?;
        stream.synchronize().map_err(err)?;
        if i >= 3 {
            let ms = start.elapsed_ms(&end).map_err(err)?;
            times.push(f64::from(ms) * 1e-3 / launches as f64);
        }
    }
    let c = stream.clone_dtoh(&dc).map_err(err)?;
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], c))
}

/// The device time of an empty kernel launched alone and back to back (seconds per
/// launch; see [`super::launch_floor`]): the floor under the small shapes' times.
pub fn launch_floor(cuda: &Arc<Cuda>) -> tune::Result<(f64, f64)> {
    super::launch_floor(
        cuda.clone(),
        "extern \"C\" __global__ void nop(float* x) { if (x[0] == 1.0f) x[0] = 0.0f; }",
    )
}

/// XgemmDirect tuned at one shape, against cuBLAS on the same inputs timed the same way.
#[derive(Clone, Debug)]
pub struct GemmVsCublas {
    /// The shape's label (`IS1`, ...).
    pub label: String,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Launches per timed sample, for both.
    pub launches: usize,
    /// cuBLAS, seconds per call.
    pub cublas: f64,
    /// The best tuned configuration, seconds per launch.
    pub tuned: f64,
    /// Configurations evaluated.
    pub evaluations: u64,
    /// Of which valid.
    pub valid: u64,
    /// Wall time of the tuning run, seconds.
    pub wall: f64,
    /// The best configuration.
    pub best: String,
    /// Failures by kind.
    pub failures: std::collections::BTreeMap<String, u64>,
}

impl GemmVsCublas {
    /// `m x k * k x n`, as ATF writes the shapes.
    pub fn shape(&self) -> String {
        let (m, n, k) = (self.m, self.n, self.k);
        format!("{m}x{k}*{k}x{n}")
    }

    /// cuBLAS's time over the tuned kernel's.
    pub fn speedup(&self) -> f64 {
        self.cublas / self.tuned
    }

    /// A markdown table of `rows`: shape, launches per sample, both times, speed-up,
    /// evaluations, tuning wall time and the best configuration.
    pub fn table(rows: &[GemmVsCublas]) -> String {
        let mut t = String::from(
            "| shape | launches per sample (both) | cuBLAS | tuned XgemmDirect | speed-up | evaluated / valid | wall | best |\n|---|---|---|---|---|---|---|---|\n",
        );
        for r in rows {
            t.push_str(&format!(
                "| {} {} | {} | {:.2} us | {:.2} us | {:.2}x | {} / {} | {:.1} s | `{}` |\n",
                r.label,
                r.shape(),
                r.launches,
                r.cublas * 1e6,
                r.tuned * 1e6,
                r.speedup(),
                r.evaluations,
                r.valid,
                r.wall,
                r.best
            ));
        }
        t
    }
}

/// Tunes XgemmDirect for `m x n x k` with [`super::tune_case`] and times cuBLAS SGEMM on the
/// same inputs with the same number of back-to-back launches per sample ([`back_to_back`]);
/// prints both, the speed-up, the evaluations and the best configuration.
pub fn xgemm_direct_vs_cublas(
    cuda: &Arc<Cuda>,
    label: &str,
    (m, n, k): (usize, usize, usize),
    budget: Budget,
    options: Options,
) -> tune::Result<GemmVsCublas> {
    let launches = back_to_back(m, n, k);
    let (a, b) = xgemm_direct_inputs(m, n, k);
    let (cublas, _) = cublas_sgemm(cuda, m, n, k, &a, &b, launches, 50)?;
    let (_, r) = super::tune_case(cuda.clone(), xgemm_direct(m, n, k)?, budget, options)?;
    let row = GemmVsCublas {
        label: label.into(),
        m,
        n,
        k,
        launches,
        cublas,
        tuned: r.best.scalar,
        evaluations: r.evaluations,
        valid: r.valid,
        wall: r.elapsed.as_secs_f64(),
        best: r.space.describe(&r.best.config),
        failures: r.failures.clone(),
    };
    println!(
        "{label} {}: cuBLAS {:.2} us, tuned {:.2} us, speed-up {:.2}x ({launches} launches per sample); {} evaluated, {} valid in {:.1} s; best {}",
        row.shape(),
        row.cublas * 1e6,
        row.tuned * 1e6,
        row.speedup(),
        row.evaluations,
        row.valid,
        row.wall,
        row.best
    );
    Ok(row)
}
