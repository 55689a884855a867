//! Checks tune's kernel timing against an independent timer. For the recorded best
//! configuration of a case (the tuning database, `TUNE_DB` or `tuning/`), it measures:
//!
//! - `tune`: as the tuner does (warm-ups, repetitions, launches per sample chosen by the
//!   evaluator), in several rounds; prints the median of the rounds' medians and their range;
//! - `--plain N`: N timed samples of one launch each, for a profiler to time the same
//!   launches (`ncu --metrics gpu__time_duration.sum`, see benches/gpu/run_trust.sh).
//!
//! `cargo run --release --features cuda --example timer_check -- --backend cuda CASE [--plain N]`
//! with CASE `gemm:M` (an M³ GEMM), `conv:W:H:FS` or `saxpy:N`. Prints one `TIMER` line:
//! case, mode, configuration, median, min and max in microseconds, samples.

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::cases::conv::Conv;
use common::cases::gemm::Gemm;
use common::cases::saxpy::Saxpy;
use common::{Study, Target};
use tune::backend::{Backend, KernelEvaluator};
use tune::results::Database;
use tune::{Error, Evaluator, Result};

fn main() -> ExitCode {
    common::cli::main("timer_check", |device, args| {
        let case = args.first().cloned().unwrap_or_default();
        let plain = args
            .iter()
            .position(|a| a == "--plain")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse::<usize>().ok());
        crate::with_backend!(device, |backend| run(backend, &case, plain))
    })
}

/// The numbers after the case's name in `gemm:4096`.
fn numbers(case: &str) -> Vec<usize> {
    case.split(':')
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect()
}

fn run<B: Backend>(backend: Arc<B>, case: &str, plain: Option<usize>) -> Result<()> {
    let n = numbers(case);
    let at = |i: usize, d: usize| n.get(i).copied().unwrap_or(d);
    match case.split(':').next().unwrap_or("") {
        "gemm" => check(
            backend,
            &Gemm::new(at(0, 4096), at(0, 4096), at(0, 4096)),
            plain,
        ),
        "conv" => check(
            backend,
            &Conv {
                w: at(0, 8192),
                h: at(1, 4096),
                fs: at(2, 3),
            },
            plain,
        ),
        "saxpy" => {
            // The saxpy example's space: at least 256 work-items per compute unit.
            let units = backend.device().compute_units.max(1) as usize;
            let study = Saxpy::new(at(0, 1 << 26)).min_global(256 * units);
            check(backend, &study, plain)
        }
        other => Err(Error::KernelSpec(format!(
            "unknown case `{other}`; expected gemm:M, conv:W:H:FS or saxpy:N"
        ))),
    }
}

fn check<B: Backend>(backend: Arc<B>, study: &impl Study, plain: Option<usize>) -> Result<()> {
    let target = Target::of(backend.as_ref())?;
    let case = study.case(&target)?;
    let (info, spec) = case.split();
    let db = Database::open(std::env::var("TUNE_DB").unwrap_or_else(|_| "tuning".into()));
    let device = backend.device().describe();
    let entry = db
        .recorded(
            &info.name,
            &device,
            &info.input,
            &info.space,
            Some(&info.code),
        )?
        .ok_or_else(|| {
            Error::KernelSpec(format!(
                "nothing recorded for {} [{}] on {device}: tune it first",
                info.name, info.input
            ))
        })?;
    let config = entry.best.config(&info.space)?;
    let spec = match plain {
        // One launch per sample, so a profiler sees each timed launch on its own.
        Some(n) => spec.launches_per_sample(1).warmups(3).repetitions(n),
        None => spec,
    };
    let evaluator = KernelEvaluator::<B>::new(backend, &info.space, spec)?;
    let rounds = if plain.is_some() { 1 } else { 7 };
    let mut medians = Vec::new();
    let mut samples = 0;
    for _ in 0..rounds {
        let prepared = evaluator
            .prepare(&info.space, &config)
            .map_err(|f| Error::KernelSpec(f.to_string()))?;
        let m = evaluator
            .measure(&info.space, &config, prepared)
            .map_err(|f| Error::KernelSpec(f.to_string()))?;
        samples += m.samples.len();
        medians.push(m.cost.as_secs_f64());
    }
    medians.sort_by(f64::total_cmp);
    let mid = medians[medians.len() / 2];
    let us = |s: f64| s * 1e6;
    println!(
        "TIMER\t{} [{}]\t{}\t{}\t{:.3}\t{:.3}\t{:.3}\t{samples}",
        info.name,
        info.input,
        plain.map_or("tune".to_string(), |n| format!("plain {n}")),
        info.space.describe(&config),
        us(mid),
        us(medians[0]),
        us(medians[medians.len() - 1]),
    );
    Ok(())
}
