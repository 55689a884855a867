//! What only CUDA has: cuBLAS SGEMM timed the way tune times a kernel, and XgemmDirect
//! tuned against it. The cases themselves are described once for every backend in
//! [`super::cases`].

use std::sync::Arc;

use tune::cuda::cudarc::cublas::{sys as cublas_sys, CudaBlas, Gemm as _, GemmConfig};
use tune::cuda::cudarc::driver::sys::{
    CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use tune::cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
use tune::cuda::Cuda;

use super::cases::floats;
use super::cases::gemm::Gemm;
use super::cases::xgemm_direct::{back_to_back, XgemmDirect};
use super::{Budget, Options};

fn err(m: impl std::fmt::Display) -> tune::Error {
    tune::Error::Backend {
        backend: "cuda".into(),
        message: m.to_string(),
    }
}

/// cuBLAS SGEMM (`cublasSgemm`, TF32 off) on `gemm`'s inputs (row-major, the CUDA
/// kernels' layout), timed the way tune times a kernel with `launches` per sample: each
/// sample is `launches` back-to-back calls (replayed from a CUDA graph when more than one)
/// between one pair of CUDA events; the cost is the median of `reps` samples (after 3
/// untimed ones) divided by `launches`. Returns seconds per call and the product of the
/// first call, `alpha * A * B + beta * C` (later calls go on from the C it left).
pub fn cublas_sgemm(
    cuda: &Cuda,
    gemm: &Gemm,
    launches: usize,
    reps: usize,
) -> tune::Result<(f64, Vec<f32>)> {
    let (m, n, k) = (gemm.m, gemm.n, gemm.k);
    let [a, b, c] = gemm.inputs();
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
    let da = stream.clone_htod(floats(&a)).map_err(err)?;
    let db = stream.clone_htod(floats(&b)).map_err(err)?;
    let mut dc = stream.clone_htod(floats(&c)).map_err(err)?;
    // Row-major C = A B is column-major C^T = B^T A^T.
    let cfg = GemmConfig {
        transa: cublas_sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cublas_sys::cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: gemm.alpha,
        lda: n as i32,
        ldb: k as i32,
        beta: gemm.beta,
        ldc: n as i32,
    };
    // The product of one call on the inputs, for validation.
    // SAFETY: the buffers have the sizes the configuration describes.
    unsafe { blas.gemm(cfg, &db, &da, &mut dc) }.map_err(err)?;
    let product = stream.clone_dtoh(&dc).map_err(err)?;
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
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], product))
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

/// Tunes XgemmDirect on `gemm` with [`super::tune_study`] and times cuBLAS SGEMM on the
/// same inputs with the same number of back-to-back launches per sample ([`back_to_back`]);
/// prints both, the speed-up, the evaluations and the best configuration.
pub fn xgemm_direct_vs_cublas(
    cuda: &Arc<Cuda>,
    label: &str,
    gemm: Gemm,
    budget: Budget,
    options: Options,
) -> tune::Result<GemmVsCublas> {
    let (m, n, k) = (gemm.m, gemm.n, gemm.k);
    let launches = back_to_back(m, n, k);
    let (cublas, _) = cublas_sgemm(cuda, &gemm, launches, 50)?;
    let study = XgemmDirect(gemm);
    let (_, r) = super::tune_study(cuda.clone(), &study, budget, options)?;
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
