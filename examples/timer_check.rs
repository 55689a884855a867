//! Checks tune's kernel timing against an independent timer. For the recorded best
//! configuration of a case (the tuning database, `TUNE_DB` or `tuning/`), it measures:
//!
//! - `tune`: as the tuner does (warm-ups, repetitions, launches per sample chosen by the
//!   evaluator), in several rounds; prints the median of the rounds' medians and their range;
//! - `--plain N`: N timed samples of one launch each, for a profiler to time the same
//!   launches (`ncu --metrics gpu__time_duration.sum`, see benches/gpu/run_trust.sh).
//!
//! - `--across DB...`: the recorded best of each tuning database (e.g. one per seed of a
//!   repeatability study), all measured in this one process, in rounds whose order rotates;
//!   so that the spread of the winners' times separates what the searches found from what
//!   differs from one process to the next.
//!
//! - `--gaps N`: the case's configuration (the recorded best, else the fastest of the
//!   space's first 200) timed in samples of one launch and of N back-to-back launches,
//!   each with the host idle and with twice as many busy threads as cores: with the host
//!   away between launches, a timer that counts the device's waits reads the batched
//!   samples slower (a `GAPS` line per mode: load, launches per sample, median, min and
//!   max per launch in microseconds, and the host's wall time per launch).
//!
//! `cargo run --release --features cuda --example timer_check -- --backend cuda CASE [--plain N | --across DB... | --gaps N]`
//! with CASE `gemm:M` (an M³ GEMM), `conv:W:H:FS` or `saxpy:N`. Prints one `TIMER` line:
//! case, mode, configuration, median, min and max in microseconds, samples; with
//! `--across`, one `ACROSS` line per database and an `ACROSS-RANGE` line.

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use common::cases::conv::Conv;
use common::cases::gemm::Gemm;
use common::cases::saxpy::Saxpy;
use common::{Study, Target};
use tune::backend::{Backend, KernelEvaluator};
use tune::results::Database;
use tune::{Config, Error, Evaluator, Result, Space};

fn main() -> ExitCode {
    common::cli::main("timer_check", |device, args| {
        let case = args.first().cloned().unwrap_or_default();
        let plain = args
            .iter()
            .position(|a| a == "--plain")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse::<usize>().ok());
        let gaps = args
            .iter()
            .position(|a| a == "--gaps")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse::<usize>().ok());
        let mode = match (args.iter().position(|a| a == "--across"), gaps) {
            (Some(i), _) => Mode::Across(args[i + 1..].iter().map(PathBuf::from).collect()),
            (None, Some(n)) => Mode::Gaps(n),
            (None, None) => Mode::Tuner(plain),
        };
        crate::with_backend!(device, |backend| run(backend, &case, &mode))
    })
}

/// What to measure.
enum Mode {
    /// The best of `TUNE_DB` as the tuner times it, or in N plain single launches.
    Tuner(Option<usize>),
    /// The best of each of these databases, in one process.
    Across(Vec<PathBuf>),
    /// Samples of one launch against samples of N, with the host idle and busy.
    Gaps(usize),
}

/// Rounds of `--across`: every database's best once per round.
const ACROSS_ROUNDS: usize = 7;

/// The numbers after the case's name in `gemm:4096`.
fn numbers(case: &str) -> Vec<usize> {
    case.split(':')
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect()
}

fn run<B: Backend>(backend: Arc<B>, case: &str, plain: &Mode) -> Result<()> {
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

/// The best configuration recorded in the database at `db` for this case and device.
fn recorded(db: PathBuf, info: &common::Info, device: &str) -> Result<Config> {
    let entry = Database::open(db)
        .recorded(
            &info.name,
            device,
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
    entry.best.config(&info.space)
}

fn check<B: Backend>(backend: Arc<B>, study: &impl Study, mode: &Mode) -> Result<()> {
    let target = Target::of(backend.as_ref())?;
    let case = study.case(&target)?;
    let (info, spec) = case.split();
    let device = backend.device().describe();
    let plain = match mode {
        Mode::Tuner(plain) => *plain,
        Mode::Gaps(n) => return gaps(backend, study, *n),
        Mode::Across(dbs) => {
            let configs = dbs
                .iter()
                .map(|db| recorded(db.clone(), &info, &device))
                .collect::<Result<Vec<_>>>()?;
            let evaluator = KernelEvaluator::<B>::new(backend, &info.space, spec)?;
            return across(&evaluator, &info, dbs, &configs);
        }
    };
    let db = std::env::var("TUNE_DB").unwrap_or_else(|_| "tuning".into());
    let config = recorded(db.into(), &info, &device)?;
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

/// Measures every database's best in [`ACROSS_ROUNDS`] rounds, each round in an order
/// rotated by one, and prints each one's median of its rounds and the range of those
/// medians (max/min - 1).
fn across<B: Backend>(
    evaluator: &KernelEvaluator<B>,
    info: &common::Info,
    dbs: &[PathBuf],
    configs: &[Config],
) -> Result<()> {
    let space: &Space = &info.space;
    let mut times = vec![Vec::new(); configs.len()];
    for round in 0..ACROSS_ROUNDS {
        for k in 0..configs.len() {
            let i = (k + round) % configs.len();
            let m = evaluator
                .prepare(space, &configs[i])
                .and_then(|p| evaluator.measure(space, &configs[i], p))
                .map_err(|f| Error::KernelSpec(f.to_string()))?;
            times[i].push(m.cost.as_secs_f64() * 1e6);
        }
    }
    let mut medians = Vec::new();
    for ((db, config), t) in dbs.iter().zip(configs).zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let mid = t[t.len() / 2];
        medians.push(mid);
        println!(
            "ACROSS\t{}\t{}\t{mid:.3}\t{:.3}\t{:.3}",
            db.display(),
            space.describe(config),
            t[0],
            t[t.len() - 1]
        );
    }
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(0.0, f64::max);
    println!(
        "ACROSS-RANGE\t{} [{}]\t{} databases, {ACROSS_ROUNDS} rounds in one process\tmin {lo:.3} us, max {hi:.3} us\trange {:.2}%",
        info.name,
        info.input,
        dbs.len(),
        100.0 * (hi / lo - 1.0)
    );
    Ok(())
}

/// Samples per mode of `--gaps`.
const GAP_SAMPLES: usize = 31;

/// `--gaps N`: see the file's comment.
fn gaps<B: Backend>(backend: Arc<B>, study: &impl Study, count: usize) -> Result<()> {
    let target = Target::of(backend.as_ref())?;
    let info = study.case(&target)?.split().0;
    let device = backend.device().describe();
    let db = std::env::var("TUNE_DB").unwrap_or_else(|_| "tuning".into());
    let config = match recorded(db.into(), &info, &device) {
        Ok(c) => c,
        Err(_) => first_that_runs(&backend, study, &target)?,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for load in [0, 2 * cores] {
        let _busy = Busy::start(load);
        for per in [1, count.max(1)] {
            let spec = study.case(&target)?.split().1;
            let spec = spec
                .launches_per_sample(per)
                .warmups(3)
                .repetitions(GAP_SAMPLES);
            let evaluator = KernelEvaluator::<B>::new(backend.clone(), &info.space, spec)?;
            let prepared = evaluator
                .prepare(&info.space, &config)
                .map_err(|f| Error::KernelSpec(f.to_string()))?;
            let clock = std::time::Instant::now();
            let m = evaluator
                .measure(&info.space, &config, prepared)
                .map_err(|f| Error::KernelSpec(f.to_string()))?;
            let wall = clock.elapsed().as_secs_f64();
            let launches = evaluator.launches_per_sample().unwrap_or(1);
            let mut t: Vec<f64> = m.samples.iter().map(|s| s * 1e6).collect();
            t.sort_by(f64::total_cmp);
            if t.is_empty() {
                continue;
            }
            println!(
                "GAPS\t{} [{}]\t{}\tbusy threads {load}\tlaunches {launches}\tmedian {:.3}\tmin {:.3}\tmax {:.3}\twall/launch {:.3}",
                info.name,
                info.input,
                info.space.describe(&config),
                t[t.len() / 2],
                t[0],
                t[t.len() - 1],
                1e6 * wall / (t.len() * launches) as f64,
            );
        }
    }
    Ok(())
}

/// The fastest of the first 200 configurations of the case's space, in one sample each.
fn first_that_runs<B: Backend>(
    backend: &Arc<B>,
    study: &impl Study,
    target: &Target,
) -> Result<Config> {
    let (info, spec) = study.case(target)?.split();
    let evaluator = KernelEvaluator::<B>::new(backend.clone(), &info.space, spec.repetitions(1))?;
    let timed = info.space.iter().take(200).filter_map(|c| {
        let m = evaluator
            .prepare(&info.space, &c)
            .and_then(|p| evaluator.measure(&info.space, &c, p))
            .ok()?;
        Some((m.cost, c))
    });
    let fastest = timed.min_by_key(|(cost, _)| *cost);
    fastest
        .map(|(_, c)| c)
        .ok_or_else(|| Error::KernelSpec("none of the first 200 configurations runs".into()))
}

/// Threads that keep the host's cores busy until dropped.
struct Busy {
    stop: Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start(n: usize) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
