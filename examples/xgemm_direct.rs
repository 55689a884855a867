//! CLBlast's XgemmDirect with ATF's ranges (examples/common/cases/xgemm_direct.rs), for
//! ATF's deep-learning sizes IS1-IS4 and 1024 x 1024 x 1024 (or the sizes given as
//! `MxK*KxN` arguments, e.g. `20x1*1x576`), on OpenCL or CUDA, after the launch floor (an
//! empty kernel's time). On CUDA each shape is also timed with cuBLAS SGEMM (TF32 off) on
//! the same inputs, the same way (shapes under 1e8 flops over 64 back-to-back launches per
//! sample, both of them), and a table compares them.
//!
//! `cargo run --release --features opencl --example xgemm_direct -- [--backend opencl|cuda] [MxK*KxN ...] [EVALUATIONS]`
//! (`TUNE_EVALS` or a plain number sets the evaluations per shape; `TUNE_SECONDS`,
//! `TUNE_TECHNIQUE`, `TUNE_RESUME`: see examples/common/mod.rs; `TUNE_OPENCL_DEVICE` /
//! `TUNE_CUDA_DEVICE` pick the device.)

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::cases::gemm::Gemm;
use common::cases::xgemm_direct::XgemmDirect;
use common::{Budget, Options};
use tune::backend::Backend;

/// `MxK*KxN` as (M, N, K).
fn parse(s: &str) -> Option<(usize, usize, usize)> {
    let (a, b) = s.split_once('*')?;
    let (m, k) = a.split_once('x')?;
    let (k2, n) = b.split_once('x')?;
    let (m, k, k2, n): (usize, usize, usize, usize) = (
        m.parse().ok()?,
        k.parse().ok()?,
        k2.parse().ok()?,
        n.parse().ok()?,
    );
    (k == k2).then_some((m, n, k))
}

fn main() -> ExitCode {
    common::cli::main("xgemm_direct", |device, args| {
        let mut shapes: Vec<(String, (usize, usize, usize))> = args
            .iter()
            .filter_map(|a| Some((a.clone(), parse(a)?)))
            .collect();
        if shapes.is_empty() {
            // (M, N, K): IS1 20x1*1x576, IS2 20x25*25x576, IS3 50x1*1x64, IS4 10x64*64x500.
            shapes = [
                ("IS1", (20, 576, 1)),
                ("IS2", (20, 576, 25)),
                ("IS3", (50, 64, 1)),
                ("IS4", (10, 500, 64)),
                ("1024", (1024, 1024, 1024)),
            ]
            .map(|(l, s)| (l.to_string(), s))
            .to_vec();
        }
        let mut budget = Budget::from_env(300, 60.0);
        if let Some(n) = args.iter().find_map(|a| a.parse().ok()) {
            budget.evaluations = n;
        }
        match device {
            #[cfg(feature = "opencl")]
            common::cli::Device::OpenCl(cl) => tune_shapes(cl, &shapes, budget),
            #[cfg(feature = "cuda")]
            common::cli::Device::Cuda(cuda) => against_cublas(&cuda, &shapes, budget),
        }
    })
}

/// Prints the launch floor of `backend`'s device.
fn print_floor<B: Backend>(backend: &Arc<B>) -> tune::Result<()> {
    let (single, back_to_back) = common::launch_floor(backend.clone())?;
    println!(
        "launch floor (an empty kernel): {:.2} us launched alone, {:.2} us per launch back to back",
        single * 1e6,
        back_to_back * 1e6
    );
    Ok(())
}

/// Tunes every shape; a shape without a valid configuration is reported and the others run.
#[allow(dead_code)] // without the `opencl` feature
fn tune_shapes<B: Backend>(
    backend: Arc<B>,
    shapes: &[(String, (usize, usize, usize))],
    budget: Budget,
) -> tune::Result<()> {
    print_floor(&backend)?;
    for (label, (m, n, k)) in shapes {
        let study = XgemmDirect(Gemm::new(*m, *n, *k));
        match common::tune_study(backend.clone(), &study, budget, Options::new(1)) {
            Ok(_) => {}
            Err(e @ tune::Error::NoValidConfiguration { .. }) => println!("{label}: {e}"),
            Err(e) => return Err(e),
        }
        println!();
    }
    Ok(())
}

/// Tunes every shape against cuBLAS and prints the table.
#[cfg(feature = "cuda")]
fn against_cublas(
    cuda: &Arc<tune::cuda::Cuda>,
    shapes: &[(String, (usize, usize, usize))],
    budget: Budget,
) -> tune::Result<()> {
    print_floor(cuda)?;
    let mut rows = Vec::new();
    for (label, (m, n, k)) in shapes {
        let gemm = Gemm::new(*m, *n, *k);
        let options = Options::new(1);
        match common::cuda::xgemm_direct_vs_cublas(cuda, label, gemm, budget, options) {
            Ok(r) => rows.push(r),
            // Reported; the other shapes still run.
            Err(e @ tune::Error::NoValidConfiguration { .. }) => println!("{label}: {e}"),
            Err(e) => return Err(e),
        }
        println!();
    }
    print!("{}", common::cuda::GemmVsCublas::table(&rows));
    Ok(())
}
