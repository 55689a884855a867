//! Helpers shared by the CUDA examples and the CUDA bench: the SGEMM search space and kernel
//! spec, a small seeded search (random sampling, then hill climbing around the best), and a
//! tuning loop that compiles the next batch on all CPU cores while the GPU measures the
//! current one (until the engine's tuner loop is used here).
#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rayon::prelude::*;
use tune::backend::{BufferArg, HostData, KernelEvaluator, KernelSpec, Tolerance};
use tune::cuda::cudarc::cublas::{sys as cublas_sys, CudaBlas, Gemm, GemmConfig};
use tune::cuda::cudarc::driver::sys::CUevent_flags;
use tune::cuda::Cuda;
use tune::{Config, Evaluator, Neighbourhood, Param, Space, SpaceBuilder};

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
    use slot::*;
    let mut spec = KernelSpec::new(SGEMM_SRC, "sgemm")
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

/// Seeded random `f32` values in [-1, 1).
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    match BufferArg::random::<f32>(len, seed).data() {
        HostData::F32(v) => v.clone(),
        _ => Vec::new(),
    }
}

/// A small seeded search: `random` random configurations, then hill climbing (neighbours
/// that differ in one parameter) around the best found so far, with random restarts when
/// the neighbourhood is exhausted.
pub struct Search {
    rng: SmallRng,
    seen: HashSet<u128>,
    best: Option<(u128, f64)>,
    random: usize,
    asked: usize,
    start: Vec<u128>,
}

impl Search {
    /// A search that first tries `start`, then `random` random configurations.
    pub fn new(seed: u64, random: usize, start: Vec<u128>) -> Self {
        Search {
            rng: SmallRng::seed_from_u64(seed),
            seen: HashSet::new(),
            best: None,
            random,
            asked: 0,
            start,
        }
    }

    /// Up to `n` configurations not yet asked for.
    pub fn ask(&mut self, space: &Space, n: usize) -> Vec<u128> {
        let mut out = Vec::new();
        while out.len() < n && !self.start.is_empty() {
            let i = self.start.remove(0);
            if self.seen.insert(i) {
                out.push(i);
            }
        }
        if self.asked + out.len() >= self.random {
            if let Some((b, _)) = self.best {
                if let Some(c) = space.get(b) {
                    let mut hood = space.neighbour_indices(&c, Neighbourhood::Adjacent);
                    hood.shuffle(&mut self.rng);
                    for i in hood {
                        if out.len() >= n {
                            break;
                        }
                        if self.seen.insert(i) {
                            out.push(i);
                        }
                    }
                }
            }
        }
        let mut tries = 0;
        while out.len() < n && tries < 100 * n && (self.seen.len() as u128) < space.len() {
            tries += 1;
            if let Some(i) = space.sample_index(&mut self.rng) {
                if self.seen.insert(i) {
                    out.push(i);
                }
            }
        }
        self.asked += out.len();
        out
    }

    /// Reports a cost (`None` for a failed configuration).
    pub fn tell(&mut self, index: u128, cost: Option<f64>) {
        if let Some(c) = cost {
            if self.best.is_none_or(|(_, b)| c < b) {
                self.best = Some((index, c));
            }
        }
    }
}

/// What a tuning run did.
#[derive(Debug, Default)]
pub struct TuneStats {
    /// Best configuration and its median time in seconds.
    pub best: Option<(Config, f64)>,
    /// Configurations evaluated (prepared and, if that worked, measured).
    pub evaluated: usize,
    /// Configurations with a cost.
    pub valid: usize,
    /// Failures by kind.
    pub failures: BTreeMap<String, usize>,
    /// First message of each failure kind.
    pub first_failure: BTreeMap<String, String>,
    /// Wall time of the run.
    pub wall: Duration,
    /// NVRTC time summed over all compilations (CPU seconds).
    pub compile_cpu: Duration,
    /// Time the measuring thread waited for compilation (compilation not hidden behind
    /// measurement).
    pub compile_wait: Duration,
    /// Time spent measuring (launches, restores, validation).
    pub measure: Duration,
    /// Every (configuration, median seconds) measured, in order.
    pub history: Vec<(Config, f64)>,
}

impl TuneStats {
    fn record_failure(&mut self, f: &tune::Failure) {
        *self.failures.entry(f.kind().into()).or_default() += 1;
        self.first_failure
            .entry(f.kind().into())
            .or_insert_with(|| f.to_string().chars().take(300).collect());
    }
}

type Prep = (
    u128,
    Result<tune::backend::PreparedKernel<Cuda>, tune::Failure>,
);

fn compile_batch(
    eval: &KernelEvaluator<Cuda>,
    space: &Space,
    batch: &[u128],
    parallel: bool,
) -> Vec<Prep> {
    let one = |&i: &u128| -> Prep {
        match space.get(i) {
            Some(c) => (i, eval.prepare(space, &c)),
            None => (
                i,
                Err(tune::Failure::Other("index out of the space".into())),
            ),
        }
    };
    if parallel {
        batch.par_iter().map(one).collect()
    } else {
        batch.iter().map(one).collect()
    }
}

/// Tunes `eval` over `space` for `budget` configurations in batches of `batch`.
/// `pipelined`: the next batch compiles on all cores while this one is measured; otherwise
/// each configuration is compiled on the measuring thread right before it is measured.
pub fn tune_loop(
    eval: &KernelEvaluator<Cuda>,
    space: &Space,
    search: &mut Search,
    budget: usize,
    batch: usize,
    pipelined: bool,
) -> TuneStats {
    let mut st = TuneStats::default();
    let t0 = Instant::now();
    let mut left = budget;
    let measure_batch = |st: &mut TuneStats, search: &mut Search, preps: Vec<Prep>| {
        for (i, p) in preps {
            st.evaluated += 1;
            let Some(c) = space.get(i) else { continue };
            match p {
                Err(f) => {
                    st.record_failure(&f);
                    search.tell(i, None);
                }
                Ok(p) => {
                    st.compile_cpu += p.compile_time;
                    let tm = Instant::now();
                    let r = eval.measure(space, &c, p);
                    st.measure += tm.elapsed();
                    match r {
                        Ok(m) => {
                            let secs = m.cost.as_secs_f64();
                            st.valid += 1;
                            search.tell(i, Some(secs));
                            if st.best.as_ref().is_none_or(|(_, b)| secs < *b) {
                                st.best = Some((c.clone(), secs));
                            }
                            st.history.push((c, secs));
                        }
                        Err(f) => {
                            st.record_failure(&f);
                            search.tell(i, None);
                        }
                    }
                }
            }
        }
    };
    if pipelined {
        let first = search.ask(space, batch.min(left));
        left -= first.len();
        let tw = Instant::now();
        let mut current = compile_batch(eval, space, &first, true);
        st.compile_wait += tw.elapsed();
        while !current.is_empty() {
            let next_idx = search.ask(space, batch.min(left));
            left -= next_idx.len();
            let next = std::thread::scope(|s| {
                let h = s.spawn(|| compile_batch(eval, space, &next_idx, true));
                measure_batch(&mut st, search, std::mem::take(&mut current));
                let tw = Instant::now();
                let r = h.join().unwrap_or_default();
                st.compile_wait += tw.elapsed();
                r
            });
            current = next;
        }
    } else {
        while left > 0 {
            let idx = search.ask(space, batch.min(left));
            if idx.is_empty() {
                break;
            }
            left -= idx.len();
            for i in idx {
                let tw = Instant::now();
                let p = compile_batch(eval, space, &[i], false);
                st.compile_wait += tw.elapsed();
                measure_batch(&mut st, search, p);
            }
        }
    }
    st.wall = t0.elapsed();
    st
}

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

fn err(m: impl std::fmt::Display) -> tune::Error {
    tune::Error::Backend {
        backend: "cuda".into(),
        message: m.to_string(),
    }
}

/// cuBLAS SGEMM on row-major `m x k` times `k x n`: median seconds over `reps` launches
/// (each between two CUDA events, like tune's launches), and the product.
pub fn cublas_sgemm(
    cuda: &Cuda,
    m: usize,
    n: usize,
    k: usize,
    a: &[f32],
    b: &[f32],
    reps: usize,
) -> tune::Result<(f64, Vec<f32>)> {
    let (ctx, stream) = cuda.context()?;
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
    let mut times = Vec::with_capacity(reps);
    for i in 0..reps + 3 {
        let s = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        let e = ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?;
        s.record(&stream).map_err(err)?;
        // SAFETY: the buffers have the sizes the configuration describes.
        unsafe { blas.gemm(cfg, &db, &da, &mut dc) }.map_err(err)?;
        e.record(&stream).map_err(err)?;
        stream.synchronize().map_err(err)?;
        if i >= 3 {
            times.push(f64::from(s.elapsed_ms(&e).map_err(err)?) * 1e-3);
        }
    }
    let c = stream.clone_dtoh(&dc).map_err(err)?;
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], c))
}
