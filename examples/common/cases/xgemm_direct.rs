//! CLBlast's XgemmDirect with ATF's style of ranges (kernels/xgemm_direct.cl,
//! kernels/xgemm_direct.cu): one kernel for any M, N, K, tuned at ATF's deep-learning sizes.
//! The input ([`Gemm`]: sizes, scalars, matrices, host reference) is the GEMM case's.
//!
//! The kernels share CLBlast's parameter names (WGD, MDIMCD, NDIMCD, MDIMAD, NDIMBD, KWID,
//! VWMD, VWND, PADA, PADB) but each has its own space, because they are tiled differently:
//! - the OpenCL kernel loads its tiles without bounds checks inside a tile (so the load
//!   shapes must tile WGD exactly) and VWMD/VWND are the widths of its vector loads; its
//!   ranges are ATF's, [1, max(M, N, K)], with WGD bounded by the device's local memory;
//! - the CUDA kernel checks every load against the tile (the load shapes need only divide
//!   the thread count) and VWMD/VWND make a thread's rows and columns come in runs (they
//!   divide its share of the tile); WGD is in [1, 64], 32 to 1024 threads per block.
//!
//! Timing differs by runtime: on CUDA, shapes under 1e8 flops (a few microseconds, mostly
//! launch latency when launched alone) are timed over 64 launches per sample replayed from
//! a graph, as cuBLAS is beside them; NVIDIA's OpenCL takes about 10 us per enqueue, more
//! than a whole launch, so OpenCL times one launch at a time.

use std::time::Duration;

use tune::backend::KernelSpec;
use tune::{Bound, Param, Result, Space, SpaceBuilder};

use super::gemm::{loads_tile, whole_vectors, Gemm};
use super::{Language, Sources, Study, Target, Work};

/// Slot of WGD, the tile size in M, N and K.
pub const WGD: usize = 0;
/// Slot of MDIMCD, threads along M.
pub const MDIMCD: usize = 1;
/// Slot of NDIMCD, threads along N.
pub const NDIMCD: usize = 2;
/// Slot of MDIMAD, threads along M when loading A.
pub const MDIMAD: usize = 3;
/// Slot of NDIMBD, threads along N when loading B.
pub const NDIMBD: usize = 4;
/// Slot of KWID, the unroll factor of the k loop.
pub const KWID: usize = 5;
/// Slot of VWMD.
pub const VWMD: usize = 6;
/// Slot of VWND.
pub const VWND: usize = 7;
/// Slot of PADA.
pub const PADA: usize = 8;
/// Slot of PADB.
pub const PADB: usize = 9;

/// XgemmDirect on a GEMM.
#[derive(Clone, Debug)]
pub struct XgemmDirect(pub Gemm);

/// Kernel launches per timed sample on CUDA for an `m x n x k` GEMM in this case's tuning
/// and its cuBLAS comparison (`common::cuda::xgemm_direct_vs_cublas`), the same count for
/// both: 64 back to back below 1e8 flops, else 1, by the size alone. select_gemm no longer
/// uses it: a shape under 1e8 flops with a long K runs for milliseconds, so it sizes each
/// sample by the kernel's own time (`launches` in examples/select_gemm/gpu.rs).
pub fn back_to_back(m: usize, n: usize, k: usize) -> usize {
    if 2.0 * ((m * n * k) as f64) < 1e8 {
        64
    } else {
        1
    }
}

/// The OpenCL space: ATF's ranges [1, max(M, N, K)] for WGD, MDIMCD, NDIMCD, MDIMAD, NDIMBD
/// and KWID, VWMD and VWND in {1, 2, 4, 8}, PADA and PADB; WGD is also bounded by the
/// device's local memory (two WGD x (WGD + 1) tiles of floats, at most 64 KiB), and a
/// work-item computes at most 256 elements of C (more accumulators than a GPU has
/// registers make the OpenCL compiler run for minutes) and at most 4096 multiply-adds per
/// unrolled k step (KWID * (WGD / MDIMCD) * (WGD / NDIMCD)).
fn opencl_space(g: &Gemm, target: &Target) -> Result<Space> {
    let r = g.m.max(g.n).max(g.k);
    let v = |b: &Bound, s| b.get::<usize>(s);
    let threads = move |b: &Bound| v(b, MDIMCD) * v(b, NDIMCD);
    // Tiles larger than 64 KiB of local memory do not pay off (and CPU devices report
    // megabytes, which would make the space huge); 48 KiB when the device is unknown.
    let lm = match target.device.local_mem_bytes {
        0 => 48 * 1024,
        bytes => bytes.min(64 * 1024),
    };
    let max_wgd = (1..=r)
        .take_while(|w| 8 * w * (w + 1) <= lm)
        .last()
        .unwrap_or(1);
    SpaceBuilder::new()
        .param(Param::<usize>::range("WGD", 1..=r).at_most(&[], move |_| max_wgd))
        .param(Param::<usize>::range("MDIMCD", 1..=r).divides(&[WGD], move |b: &Bound| v(b, WGD)))
        .param(
            Param::<usize>::range("NDIMCD", 1..=r)
                .divides(&[WGD], move |b: &Bound| v(b, WGD))
                .constraint(&[WGD, MDIMCD], move |b: &Bound| {
                    (v(b, WGD) / v(b, MDIMCD)) * (v(b, WGD) / v(b, NDIMCD)) <= 256
                }),
        )
        .param(
            Param::<usize>::range("MDIMAD", 1..=r)
                .divides(&[MDIMCD, NDIMCD], threads)
                .constraint(&[WGD, MDIMCD, NDIMCD], move |b: &Bound| {
                    loads_tile(v(b, WGD), threads(b), v(b, MDIMAD))
                }),
        )
        .param(
            Param::<usize>::range("NDIMBD", 1..=r)
                .divides(&[MDIMCD, NDIMCD], threads)
                .constraint(&[WGD, MDIMCD, NDIMCD], move |b: &Bound| {
                    loads_tile(v(b, WGD), threads(b), v(b, NDIMBD))
                }),
        )
        .param(
            Param::<usize>::range("KWID", 1..=r)
                .divides(&[WGD], move |b: &Bound| v(b, WGD))
                .constraint(&[WGD, MDIMCD, NDIMCD], move |b: &Bound| {
                    v(b, KWID) * (v(b, WGD) / v(b, MDIMCD)) * (v(b, WGD) / v(b, NDIMCD)) <= 4096
                }),
        )
        .param(
            Param::<usize>::values("VWMD", [1, 2, 4, 8])
                .constraint(&[WGD, MDIMCD, MDIMAD], move |b: &Bound| {
                    whole_vectors(v(b, WGD), v(b, VWMD), [v(b, MDIMCD), v(b, MDIMAD)])
                }),
        )
        .param(
            Param::<usize>::values("VWND", [1, 2, 4, 8])
                .constraint(&[WGD, NDIMCD, NDIMBD], move |b: &Bound| {
                    whole_vectors(v(b, WGD), v(b, VWND), [v(b, NDIMCD), v(b, NDIMBD)])
                }),
        )
        .param(Param::<usize>::values("PADA", [0, 1]))
        .param(Param::<usize>::values("PADB", [0, 1]))
        .build()
}

/// The CUDA space: WGD in [1, 64] (two WGD x (WGD + 1) tiles stay within the 48 KiB of
/// static shared memory), thread layouts among WGD's divisors with 32 to 1024 threads and
/// at most 64 elements of C per thread, load layouts among the thread count's divisors (at
/// most WGD), KWID dividing WGD, vector runs dividing a thread's share, padding on/off.
fn cuda_space() -> Result<Space> {
    let v = |b: &Bound, s| b.get::<usize>(s);
    let threads = move |b: &Bound| v(b, MDIMCD) * v(b, NDIMCD);
    SpaceBuilder::new()
        .param(Param::<usize>::range("WGD", 1..=64))
        .param(Param::<usize>::range("MDIMCD", 1..=64).divides(&[WGD], move |b: &Bound| v(b, WGD)))
        .param(
            Param::<usize>::range("NDIMCD", 1..=64)
                .divides(&[WGD], move |b: &Bound| v(b, WGD))
                .constraint(&[WGD, MDIMCD], move |b: &Bound| {
                    let w = v(b, WGD);
                    (w / v(b, MDIMCD)) * (w / v(b, NDIMCD)) <= 64
                        && (32..=1024).contains(&threads(b))
                }),
        )
        .param(
            Param::<usize>::range("MDIMAD", 1..=1024)
                .divides(&[MDIMCD, NDIMCD], threads)
                .at_most(&[WGD], move |b: &Bound| v(b, WGD)),
        )
        .param(
            Param::<usize>::range("NDIMBD", 1..=1024)
                .divides(&[MDIMCD, NDIMCD], threads)
                .at_most(&[WGD], move |b: &Bound| v(b, WGD)),
        )
        .param(Param::<usize>::range("KWID", 1..=64).divides(&[WGD], move |b: &Bound| v(b, WGD)))
        .param(
            Param::<usize>::values("VWMD", [1, 2, 4, 8])
                .divides(&[WGD, MDIMCD], move |b: &Bound| v(b, WGD) / v(b, MDIMCD)),
        )
        .param(
            Param::<usize>::values("VWND", [1, 2, 4, 8])
                .divides(&[WGD, NDIMCD], move |b: &Bound| v(b, WGD) / v(b, NDIMCD)),
        )
        .param(Param::<usize>::values("PADA", [0, 1]))
        .param(Param::<usize>::values("PADB", [0, 1]))
        .build()
}

impl Study for XgemmDirect {
    fn name(&self) -> &'static str {
        "xgemm_direct"
    }

    fn input(&self) -> String {
        self.0.input()
    }

    fn work(&self) -> Work {
        self.0.work()
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(include_str!("../../../kernels/xgemm_direct.cl")),
            cuda: Some(include_str!("../../../kernels/xgemm_direct.cu")),
        }
    }

    fn space(&self, target: &Target) -> Result<Space> {
        match target.language {
            Language::OpenCl => opencl_space(&self.0, target),
            Language::Cuda => cuda_space(),
        }
    }

    fn spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        let g = &self.0;
        let (m, n, k) = (g.m, g.n, g.k);
        let [a, b, c] = g.inputs();
        let spec = KernelSpec::new(source, "xgemm_direct")
            // CLBlast's global size: ceil(M / WGD) * MDIMCD by ceil(N / WGD) * NDIMCD.
            .global(move |c| {
                let wgd = c.get::<usize>(WGD);
                [
                    m.div_ceil(wgd) * c.get::<usize>(MDIMCD),
                    n.div_ceil(wgd) * c.get::<usize>(NDIMCD),
                ]
            })
            .local(|c| [c.get::<usize>(MDIMCD), c.get::<usize>(NDIMCD)])
            .scalar(m as i32)
            .scalar(n as i32)
            .scalar(k as i32)
            .scalar(g.alpha)
            .scalar(g.beta)
            .buffer(a)
            .buffer(b)
            .buffer(c.output())
            .warmups(3)
            .repetitions(50);
        let spec = match target.language {
            Language::OpenCl => spec
                .static_local_memory(|c| {
                    let wgd = c.get::<usize>(WGD);
                    4 * wgd * (2 * wgd + c.get::<usize>(PADA) + c.get::<usize>(PADB))
                })
                // NVIDIA's OpenCL compiler takes minutes over some configurations.
                .compile_time_limit(Duration::from_secs(20)),
            Language::Cuda => spec
                .launches_per_sample(back_to_back(m, n, k))
                .compile_time_limit(Duration::from_secs(60)),
        };
        // Per element: a kernel for odd sizes must be right at every edge of every tile,
        // which a norm-wise check of a large C would not see.
        let spec = g.validate(target, spec, [5, 6, 7])?;
        Ok(spec.tolerance(tune::backend::Tolerance::PerElement {
            abs: 1e-4,
            rel: 1e-4,
        }))
    }
}
