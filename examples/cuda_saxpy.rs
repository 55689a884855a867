//! ATF's saxpy on CUDA: WPT divides N, LS divides N / WPT, over the full [1, N] ranges, tuned
//! with `tune::Tuner` (the whole space when the budget allows; see examples/common/mod.rs for
//! `TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`; `TUNE_CUDA_DEVICE` picks the GPU).
//!
//! `cargo run --release --features cuda --example cuda_saxpy [N]`
mod common;

#[cfg(feature = "cuda")]
fn main() {
    common::cuda::main_or_skip("cuda_saxpy", || {
        let n: usize = std::env::args()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1 << 24);
        let cuda = std::sync::Arc::new(common::cuda::open()?);
        // The space is small (pairs of divisors of N): up to 400 configurations measure all
        // of it at the default N.
        let budget = common::Budget::from_env(400, 120.0);
        common::tune_case(
            cuda,
            common::cuda::saxpy(n)?,
            budget,
            common::Options::new(1),
        )?;
        Ok(())
    })
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
