//! CLTune's 2D convolution case study (examples/common/cases/conv.rs, Table II parameters)
//! for 3x3, 7x7 and 11x11 filters on OpenCL or CUDA, validated against a host reference;
//! each filter size's search starts from the best configurations of those before it. Then,
//! like CLTune's Table III, the best configuration of each filter size run with the others.
//!
//! `cargo run --release --features opencl --example conv -- [--backend opencl|cuda] [width height [fs ...]]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`, `TUNE_RESUME`: see
//! examples/common/mod.rs; `TUNE_OPENCL_DEVICE` / `TUNE_CUDA_DEVICE` pick the device.)

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::cases::conv::Conv;
use common::{Budget, Options, Study, Target};
use tune::backend::{Backend, KernelEvaluator};
use tune::{Evaluator, Value};

/// A filter size's best configuration: its values.
type Best = (usize, Vec<(String, Value)>);

fn main() -> ExitCode {
    common::cli::main("conv", |device, args| {
        let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
        let w = numbers.first().copied().unwrap_or(8192);
        let h = numbers.get(1).copied().unwrap_or(4096);
        let sizes = match numbers.get(2..) {
            Some(fs) if !fs.is_empty() => fs.to_vec(),
            _ => vec![3, 7, 11],
        };
        crate::with_backend!(device, |backend| run(backend, w, h, &sizes))
    })
}

fn run<B: Backend>(backend: Arc<B>, w: usize, h: usize, sizes: &[usize]) -> tune::Result<()> {
    let target = Target::of(backend.as_ref())?;
    let budget = Budget::from_env(250, 90.0);
    let mut bests: Vec<Best> = Vec::new();
    for &fs in sizes {
        let conv = Conv { w, h, fs };
        let case = conv.case(&target)?;
        // Each search starts from the best configurations of the filter sizes before it.
        let start = bests
            .iter()
            .filter_map(|(_, values)| conv.carry(target.language, &case.space, values))
            .collect();
        let options = Options {
            start,
            ..Options::new(1)
        };
        let (info, r) = common::tune_case(backend.clone(), case, budget, options)?;
        let values = info
            .space
            .values(&r.best.config)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        bests.push((fs, values));
        println!();
    }
    // Table III: row = tuned for, column = run with; each entry is the column's own best
    // time divided by the row's configuration's time, all measured again here.
    let mut times = vec![vec![None; sizes.len()]; bests.len()];
    for (j, &fs) in sizes.iter().enumerate() {
        let conv = Conv { w, h, fs };
        let (info, spec) = conv.case(&target)?.split();
        let eval = KernelEvaluator::<B>::new(backend.clone(), &info.space, spec)?;
        for (row, (_, values)) in times.iter_mut().zip(&bests) {
            row[j] = conv
                .carry(target.language, &info.space, values)
                .and_then(|c| {
                    eval.prepare(&info.space, &c)
                        .and_then(|p| eval.measure(&info.space, &c, p))
                        .ok()
                })
                .map(|m| m.cost.as_secs_f64());
        }
    }
    println!("best configuration of one filter size used for another (performance relative to that size's own best):");
    print!("{:>12}", "tuned for");
    for &fs in sizes {
        print!("{:>10}", format!("{fs}x{fs}"));
    }
    println!();
    for (i, (fs_a, _)) in bests.iter().enumerate() {
        print!("{:>12}", format!("{fs_a}x{fs_a}"));
        for (j, &fs_b) in sizes.iter().enumerate() {
            let own = bests
                .iter()
                .position(|b| b.0 == fs_b)
                .and_then(|d| times[d][j]);
            match (times[i][j], own) {
                (Some(t), Some(own)) => print!("{:>9.0}%", 100.0 * own / t),
                _ => print!("{:>10}", "invalid"),
            }
        }
        println!();
    }
    Ok(())
}
