//! The tunable SGEMM (CLBlast Xgemm class, kernels/sgemm.cu) on CUDA: tunes C = A * B at one
//! size with `tune::Tuner`, starting from the classic 128x128x8 / 8x8 configuration,
//! validated against a host product in f64, and prints the best configuration.
//! (cuda_bench compares with cuBLAS.)
//!
//! `cargo run --release --features cuda --example cuda_sgemm [SIZE] [EVALUATIONS]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`: see examples/common/mod.rs;
//! `TUNE_CUDA_DEVICE` picks the GPU.)
mod common;

#[cfg(feature = "cuda")]
fn main() {
    common::cuda::main_or_skip("cuda_sgemm", || {
        let mut args = std::env::args().skip(1);
        let size: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2048);
        let mut budget = common::Budget::from_env(80, 90.0);
        if let Some(n) = args.next().and_then(|s| s.parse().ok()) {
            budget.evaluations = n;
        }
        let cuda = std::sync::Arc::new(common::cuda::open()?);
        let case = common::cuda::sgemm(size, size, size, common::cuda::SgemmCheck::Host)?;
        let options = common::Options {
            start: common::cuda::sgemm_classic(&case.space)
                .into_iter()
                .collect(),
            ..common::Options::new(7)
        };
        common::tune_case(cuda, case, budget, options)?;
        Ok(())
    })
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
