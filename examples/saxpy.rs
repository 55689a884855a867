//! ATF's saxpy case study (examples/common/cases/saxpy.rs): WPT and LS over the divisors of
//! [1, n], on OpenCL or CUDA. By default at least 256 work-items per compute unit share the
//! work; `exact` is ATF's space, where a configuration may give all of it to one work-item.
//!
//! `cargo run --release --features opencl --example saxpy -- [--backend opencl|cuda] [n [exact]]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`, `TUNE_RESUME`: see
//! examples/common/mod.rs; `TUNE_OPENCL_DEVICE` / `TUNE_CUDA_DEVICE` pick the device.)

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;

use common::cases::saxpy::Saxpy;
use common::{Budget, Options};
use tune::backend::Backend;

fn main() -> ExitCode {
    common::cli::main("saxpy", |device, args| {
        let n = common::cli::number(&args, 0).unwrap_or(1 << 24);
        let exact = args.get(1).is_some_and(|a| a == "exact");
        // The space is small (pairs of divisors of n): the budget measures all of it.
        let budget = Budget::from_env(400, 120.0);
        crate::with_backend!(device, |backend| {
            let units = backend.device().compute_units.max(1) as usize;
            let min_global = if exact { 1 } else { 256 * units };
            let study = Saxpy::new(n).min_global(min_global);
            common::tune_study(backend, &study, budget, Options::new(1)).map(drop)
        })
    })
}
