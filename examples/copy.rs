//! CLTune's copy case study (examples/common/cases/copy.rs): WPT in {1, 2, 4} and the
//! work-group size, the whole space. The kernel is written in OpenCL C only.
//!
//! `cargo run --release --features opencl --example copy -- [n]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`, `TUNE_RESUME`: see
//! examples/common/mod.rs; `TUNE_OPENCL_DEVICE` picks the device.)

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;

use common::cases::copy::Copy;
use common::{Budget, Options};

fn main() -> ExitCode {
    common::cli::main("copy", |device, args| {
        let n = common::cli::number(&args, 0).unwrap_or(1 << 24);
        let budget = Budget::from_env(1000, 60.0);
        crate::with_backend!(device, |backend| {
            common::tune_study(backend, &Copy { n }, budget, Options::new(1)).map(drop)
        })
    })
}
