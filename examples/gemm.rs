//! The GEMM case study (examples/common/cases/gemm.rs), `C = alpha * A * B + beta * C`:
//! CLTune's GEMM (Table IV, 241,600 valid configurations) on OpenCL, the register-tiled
//! SGEMM of kernels/sgemm.cu on CUDA (starting from the classic 128x128x8 / 8x8
//! configuration). Validated against a reference kernel (OpenCL, large sizes) or a host
//! product in f64. (cuda_bench compares the CUDA SGEMM with cuBLAS.)
//!
//! `cargo run --release --features opencl --example gemm -- [--backend opencl|cuda] [m [n [k]]]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`, `TUNE_RESUME`: see
//! examples/common/mod.rs; `TUNE_OPENCL_DEVICE` / `TUNE_CUDA_DEVICE` pick the device.)

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;

use common::cases::gemm::Gemm;
use common::{Budget, Options};

fn main() -> ExitCode {
    common::cli::main("gemm", |device, args| {
        let m = common::cli::number(&args, 0).unwrap_or(4096);
        let n = common::cli::number(&args, 1).unwrap_or(m);
        let k = common::cli::number(&args, 2).unwrap_or(m);
        let budget = Budget::from_env(300, 180.0);
        crate::with_backend!(device, |backend| {
            common::tune_study(backend, &Gemm::new(m, n, k), budget, Options::new(1)).map(drop)
        })
    })
}
