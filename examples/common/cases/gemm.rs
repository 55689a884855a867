//! A GEMM of CLBlast's Xgemm class, `C = alpha * A * B + beta * C`: CLTune's GEMM (Table
//! IV, kernels/gemm.cl) in OpenCL and the SGEMM of kernels/sgemm.cu in CUDA. [`Gemm`] is
//! also the input of [`super::xgemm_direct`]: sizes, scalars, the matrices and the host
//! reference are the same for every GEMM kernel; what differs is how a kernel stores them
//! ([`Layout`]).
//!
//! The two kernels are two designs with their own parameters (CLTune's MWG, NWG, ... and
//! BM, BN, ... of a register-tiled SGEMM), so each has its own space.

use std::sync::Arc;
use std::time::Duration;

use tune::backend::{BufferArg, KernelSpec, ReferenceKernel, Tolerance};
use tune::{Bound, Config, Error, Param, Result, Space, SpaceBuilder, Value};

use super::{Language, Sources, Study, Target, Work};

/// How a GEMM kernel stores its matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// A as K x M, B as K x N, C as N x M, each with its last index fastest (`C^T = B^T A`
    /// in row-major terms): CLTune's and CLBlast's OpenCL kernels.
    Transposed,
    /// Row-major A (M x K), B (K x N) and C (M x N): the CUDA kernels and cuBLAS.
    RowMajor,
}

impl Layout {
    /// The layout of the GEMM kernels in `language`.
    pub fn of(language: Language) -> Layout {
        match language {
            Language::OpenCl => Layout::Transposed,
            Language::Cuda => Layout::RowMajor,
        }
    }
}

/// How a GEMM's output is validated.
#[derive(Clone, Debug, Default)]
pub enum Check {
    /// Against the reference kernel above 2^27 multiply-adds where there is one (OpenCL:
    /// kernels/gemm_reference.cl), else on the host.
    #[default]
    Auto,
    /// Against the product on the host ([`Gemm::host`], f64 on all cores).
    Host,
    /// Against kernels/gemm_reference.cl (OpenCL only).
    Kernel,
    /// Against a given product, in the target's layout (cuBLAS's, for large sizes).
    Given(Arc<Vec<f32>>),
}

/// `C = alpha * A * B + beta * C` with A `m x k`, B `k x n`, C `m x n`.
#[derive(Clone, Debug)]
pub struct Gemm {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// The scalar of the product.
    pub alpha: f32,
    /// The scalar of C.
    pub beta: f32,
    /// How the output is validated.
    pub check: Check,
}

/// Seeds of the random A, B and C.
const SEEDS: [u64; 3] = [1, 2, 3];

impl Gemm {
    /// An `m x k` by `k x n` GEMM with CLBlast's test scalars (alpha 1.5, beta -0.5: the
    /// kernels' C path is validated too), checked as [`Check::Auto`] says.
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        Gemm {
            m,
            n,
            k,
            alpha: 1.5,
            beta: -0.5,
            check: Check::Auto,
        }
    }

    /// The same, validated by `check`.
    pub fn check(self, check: Check) -> Self {
        Gemm { check, ..self }
    }

    /// The input key, as recorded.
    pub fn input(&self) -> String {
        format!("m={},n={},k={}", self.m, self.n, self.k)
    }

    /// Floating-point operations of one product.
    pub fn work(&self) -> Work {
        Work {
            flops: 2.0 * (self.m * self.n * self.k) as f64,
            bytes: 0.0,
        }
    }

    /// A (`m * k` floats), B (`k * n`) and C (`m * n`), seeded random in [-1, 1): the same
    /// numbers whatever the layout reads them as.
    pub fn inputs(&self) -> [BufferArg; 3] {
        let (m, n, k) = (self.m, self.n, self.k);
        [
            BufferArg::random::<f32>(m * k, SEEDS[0]),
            BufferArg::random::<f32>(k * n, SEEDS[1]),
            BufferArg::random::<f32>(m * n, SEEDS[2]),
        ]
    }

    /// `alpha * A * B + beta * C` on the host in `layout`, accumulated in f64, the rows of
    /// C's storage in parallel.
    pub fn host(&self, layout: Layout, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f32> {
        use rayon::prelude::*;
        let (m, n, k) = (self.m, self.n, self.k);
        let (alpha, beta) = (f64::from(self.alpha), f64::from(self.beta));
        // Each stored row r of C is the sum over p of a scalar (element r * rs + p * ps of
        // `scalars`) times a stored row p of `lines`.
        let (len, lines, scalars, (rs, ps)) = match layout {
            // C row i (n long) = sum_p A[i][p] * B row p.
            Layout::RowMajor => (n, b, a, (k, 1)),
            // C^T row j (m long) = sum_p B[p][j] * A^T row p.
            Layout::Transposed => (m, a, b, (1, n)),
        };
        let mut out = c.to_vec();
        out.par_chunks_mut(len.max(1))
            .enumerate()
            .for_each(|(r, row)| {
                let mut acc = vec![0f64; len];
                for p in 0..k {
                    let s = f64::from(scalars[r * rs + p * ps]);
                    for (x, y) in acc.iter_mut().zip(&lines[p * len..(p + 1) * len]) {
                        *x += s * f64::from(*y);
                    }
                }
                for (o, x) in row.iter_mut().zip(acc) {
                    *o = (alpha * x + beta * f64::from(*o)) as f32;
                }
            });
        out
    }

    /// `spec` with the tolerance and the validation of [`Gemm::check`]; `args` are the
    /// argument indices of A, B and C (the output).
    ///
    /// # Errors
    /// [`Error::KernelSpec`] for [`Check::Kernel`] where there is no reference kernel.
    pub fn validate(
        &self,
        target: &Target,
        spec: KernelSpec,
        args: [usize; 3],
    ) -> Result<KernelSpec> {
        let spec = spec.tolerance(Tolerance::Norm(1e-4));
        let reference_kernel = match (&self.check, target.language) {
            (Check::Kernel, Language::OpenCl) => true,
            (Check::Auto, Language::OpenCl) => self.m * self.n * self.k > 1 << 27,
            (Check::Kernel, lang) => {
                return Err(Error::KernelSpec(format!(
                    "there is no GEMM reference kernel in {lang}; check on the host instead"
                )))
            }
            _ => false,
        };
        if reference_kernel {
            return Ok(spec.reference_kernel(
                ReferenceKernel::new(
                    include_str!("../../../kernels/gemm_reference.cl"),
                    "gemm_reference",
                )
                .global([self.m, self.n]),
            ));
        }
        if let Check::Given(product) = &self.check {
            let product = product.clone();
            return Ok(spec.reference(move |_| Ok(vec![product.to_vec().into()])));
        }
        let this = self.clone();
        let layout = Layout::of(target.language);
        Ok(spec.reference(move |host| {
            let [a, b, c] = args.map(|i| host.buffer::<f32>(i));
            Ok(vec![this.host(layout, a?, b?, c?).into()])
        }))
    }
}

/// Slots of CLTune's GEMM parameters (OpenCL).
pub mod cltune {
    #![allow(missing_docs)]
    pub const MWG: usize = 0;
    pub const NWG: usize = 1;
    pub const KWG: usize = 2;
    pub const MDIMC: usize = 3;
    pub const NDIMC: usize = 4;
    pub const MDIMA: usize = 5;
    pub const NDIMB: usize = 6;
    pub const KWI: usize = 7;
    pub const VWM: usize = 8;
    pub const VWN: usize = 9;
    pub const STRM: usize = 10;
    pub const STRN: usize = 11;
    pub const SA: usize = 12;
    pub const SB: usize = 13;
}

/// Slots of the CUDA SGEMM's parameters.
pub mod sgemm {
    #![allow(missing_docs)]
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
    pub const UNR: usize = 10;
    pub const SWZ: usize = 11;
    pub const MINB: usize = 12;
}

/// CLBlast's rule for loading a tile `k` deep with `threads` work-items, `along` of them
/// side by side: the others line up along k, and their number divides `k`.
pub fn loads_tile(k: usize, threads: usize, along: usize) -> bool {
    k % (threads / along) == 0
}

/// CLBlast's rule for vectors `width` wide along a tile of `tile` elements: they tile it
/// whole for each of the two work-item layouts (computing, loading) `per`.
pub fn whole_vectors(tile: usize, width: usize, per: [usize; 2]) -> bool {
    per.iter().all(|p| tile % (p * width) == 0)
}

/// CLTune's GEMM space (Table IV): 241,600 valid configurations when 128 divides M and N
/// and 32 divides K.
fn cltune_space(m: usize, n: usize, k: usize) -> Result<Space> {
    use cltune::*;
    let g = |b: &Bound, s| b.get::<usize>(s);
    SpaceBuilder::new()
        .param(Param::<usize>::values("MWG", [16, 32, 64, 128]).divides(&[], move |_| m))
        .param(Param::<usize>::values("NWG", [16, 32, 64, 128]).divides(&[], move |_| n))
        .param(Param::<usize>::values("KWG", [16, 32]).divides(&[], move |_| k))
        .param(Param::<usize>::values("MDIMC", [8, 16, 32]))
        .param(Param::<usize>::values("NDIMC", [8, 16, 32]))
        .param(
            Param::<usize>::values("MDIMA", [8, 16, 32])
                .constraint(&[KWG, MDIMC, NDIMC], move |b: &Bound| {
                    loads_tile(g(b, KWG), g(b, MDIMC) * g(b, NDIMC), g(b, MDIMA))
                }),
        )
        .param(
            Param::<usize>::values("NDIMB", [8, 16, 32])
                .constraint(&[KWG, MDIMC, NDIMC], move |b: &Bound| {
                    loads_tile(g(b, KWG), g(b, MDIMC) * g(b, NDIMC), g(b, NDIMB))
                }),
        )
        .param(Param::<usize>::values("KWI", [2, 8]).divides(&[KWG], move |b: &Bound| g(b, KWG)))
        .param(
            Param::<usize>::values("VWM", [1, 2, 4, 8])
                .constraint(&[MWG, MDIMC, MDIMA], move |b: &Bound| {
                    whole_vectors(g(b, MWG), g(b, VWM), [g(b, MDIMC), g(b, MDIMA)])
                }),
        )
        .param(
            Param::<usize>::values("VWN", [1, 2, 4, 8])
                .constraint(&[NWG, NDIMC, NDIMB], move |b: &Bound| {
                    whole_vectors(g(b, NWG), g(b, VWN), [g(b, NDIMC), g(b, NDIMB)])
                }),
        )
        .param(Param::<usize>::values("STRM", [0, 1]))
        .param(Param::<usize>::values("STRN", [0, 1]))
        .param(Param::<usize>::values("SA", [0, 1]))
        .param(Param::<usize>::values("SB", [0, 1]))
        .build()
}

/// Threads of an SGEMM block.
fn sgemm_threads(bm: usize, bn: usize, tm: usize, tn: usize) -> usize {
    (bm / tm) * (bn / tn)
}

/// The SGEMM space: block tiles, thread tiles, vector widths, padding, double buffering,
/// unrolling, rasterisation and occupancy, with the constraints that make the kernel
/// well-formed (tiles divide the matrix, every thread loads whole vectors, 64..=1024
/// threads, shared memory and registers within Hopper's limits).
fn sgemm_space(m: usize, n: usize, k: usize) -> Result<Space> {
    use sgemm::*;
    let g = |b: &Bound, s| b.get::<usize>(s);
    let nt = move |b: &Bound| sgemm_threads(g(b, BM), g(b, BN), g(b, TM), g(b, TN));
    SpaceBuilder::new()
        .param(Param::<usize>::values("BM", [32, 64, 128, 256]).divides(&[], move |_| m))
        .param(Param::<usize>::values("BN", [32, 64, 128, 256]).divides(&[], move |_| n))
        .param(Param::<usize>::values("BK", [8, 16, 32]).divides(&[], move |_| k))
        .param(Param::<usize>::values("TM", [4, 8, 16]).divides(&[BM], move |b: &Bound| g(b, BM)))
        .param(Param::<usize>::values("TN", [4, 8, 16]).constraint(
            &[BM, BN, TM],
            move |b: &Bound| {
                g(b, BN) % g(b, TN) == 0
                    && g(b, TM) * g(b, TN) <= 128
                    && (64..=1024).contains(&nt(b))
            },
        ))
        .param(
            Param::<usize>::values("VA", [1, 2, 4])
                .constraint(&[BM, BN, BK, TM, TN], move |b: &Bound| {
                    (g(b, BM) * g(b, BK)) % (g(b, VA) * nt(b)) == 0
                }),
        )
        .param(
            Param::<usize>::values("VB", [1, 2, 4])
                .constraint(&[BM, BN, BK, TM, TN], move |b: &Bound| {
                    (g(b, BN) * g(b, BK)) % (g(b, VB) * nt(b)) == 0
                }),
        )
        .param(Param::<usize>::values("PADA", [0, 4]))
        .param(Param::<usize>::values("PADB", [0, 4]))
        .param(Param::<usize>::values("DB", [0, 1]).constraint(
            &[BM, BN, BK, PADA, PADB],
            move |b: &Bound| {
                let words =
                    (g(b, DB) + 1) * g(b, BK) * (g(b, BM) + g(b, PADA) + g(b, BN) + g(b, PADB));
                words * 4 <= 227 * 1024
            },
        ))
        .param(Param::<usize>::values("UNR", [1, 0]))
        .param(Param::<usize>::values("SWZ", [1, 4, 8, 16]))
        .param(Param::<usize>::values("MINB", [1, 2]).constraint(
            &[BM, BN, TM, TN],
            move |b: &Bound| {
                let regs = g(b, TM) * g(b, TN) + 40;
                g(b, MINB) * nt(b) * regs <= 65536
            },
        ))
        .build()
}

/// Dynamic shared memory of an SGEMM configuration, bytes.
pub fn sgemm_smem(c: &Config) -> usize {
    use sgemm::*;
    let g = |s| c.get::<usize>(s);
    (g(DB) + 1) * g(BK) * (g(BM) + g(PADA) + g(BN) + g(PADB)) * 4
}

impl Study for Gemm {
    fn name(&self) -> &'static str {
        "gemm"
    }

    fn input(&self) -> String {
        Gemm::input(self)
    }

    fn work(&self) -> Work {
        Gemm::work(self)
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(include_str!("../../../kernels/gemm.cl")),
            cuda: Some(include_str!("../../../kernels/sgemm.cu")),
        }
    }

    fn space(&self, target: &Target) -> Result<Space> {
        match target.language {
            Language::OpenCl => cltune_space(self.m, self.n, self.k),
            Language::Cuda => sgemm_space(self.m, self.n, self.k),
        }
    }

    fn spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        let (m, n, k) = (self.m, self.n, self.k);
        let [a, b, c] = self.inputs();
        match target.language {
            Language::OpenCl => {
                use cltune::*;
                let spec = KernelSpec::new(source, "gemm")
                    .global(move |c| {
                        [
                            m * c.get::<usize>(MDIMC) / c.get::<usize>(MWG),
                            n * c.get::<usize>(NDIMC) / c.get::<usize>(NWG),
                        ]
                    })
                    .local(|c| [c.get::<usize>(MDIMC), c.get::<usize>(NDIMC)])
                    .static_local_memory(|c| {
                        4 * c.get::<usize>(KWG)
                            * (c.get::<usize>(SA) * c.get::<usize>(MWG)
                                + c.get::<usize>(SB) * c.get::<usize>(NWG))
                    })
                    .scalar(m as i32)
                    .scalar(n as i32)
                    .scalar(k as i32)
                    .scalar(self.alpha)
                    .scalar(self.beta)
                    .buffer(a)
                    .buffer(b)
                    .buffer(c.output())
                    .warmups(1)
                    .repetitions(10);
                self.validate(target, spec, [5, 6, 7])
            }
            Language::Cuda => {
                use sgemm::*;
                let spec = KernelSpec::new(source, "sgemm")
                    .define("M", m)
                    .define("N", n)
                    .define("K", k)
                    .grid(move |c| [n / c.get::<usize>(BN), m / c.get::<usize>(BM)])
                    .local(|c| {
                        let g = |s| c.get::<usize>(s);
                        [sgemm_threads(g(BM), g(BN), g(TM), g(TN)), 1]
                    })
                    .dynamic_local_memory(sgemm_smem)
                    .buffer(c.output())
                    .buffer(a)
                    .buffer(b)
                    .scalar(self.alpha)
                    .scalar(self.beta)
                    .warmups(1)
                    .repetitions(10)
                    // NVRTC gives up on nothing by itself; a minute is far past any
                    // configuration worth measuring.
                    .compile_time_limit(Duration::from_secs(60));
                self.validate(target, spec, [1, 2, 0])
            }
        }
    }

    /// On CUDA: the classic hand-written SGEMM configuration (128 x 128 x 8 block tile,
    /// 8 x 8 per thread, float4 loads, double buffering), where the space holds it.
    fn known_good(&self, target: &Target, space: &Space) -> Vec<Config> {
        if target.language != Language::Cuda {
            return Vec::new();
        }
        let classic = [
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
        ];
        space
            .config_from_values(classic.map(|(k, v)| (k, Value::Int(v))))
            .into_iter()
            .collect()
    }
}
