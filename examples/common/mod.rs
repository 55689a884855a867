//! Shared by the case-study examples, their tests and the CUDA bench: the case
//! descriptions ([`cases`], one per case for every backend), choosing and opening a backend
//! from the command line ([`cli`]), the budget, one tuning run of a case on any backend with
//! `tune::Tuner`, and the report.
//!
//! Environment: `TUNE_EVALS` and `TUNE_SECONDS` set the budget, `TUNE_TECHNIQUE` the search
//! technique (default: the bandit ensemble), `TUNE_RESUME=1` resumes from the log of an
//! earlier (killed) run instead of starting afresh, `TUNE_SEED` the search's seed,
//! `TUNE_POLISH` how many evaluations may follow the search to climb from its best through
//! one-parameter neighbours (default 0, see `Tuner::polish`) and `TUNE_DB` the tuning
//! database's folder (default `tuning/`); `TUNE_OPENCL_DEVICE` and `TUNE_CUDA_DEVICE` pick
//! the device.
//!
//! What only CUDA has (cuBLAS, timed the way tune times a kernel) is in [`cuda`].
#![allow(dead_code)]

pub mod beast;
pub mod cases;
pub mod cli;
#[cfg(feature = "cuda")]
pub mod cuda;

use std::sync::Arc;
use std::time::Duration;

use tune::abort::{Elapsed, Evaluations, WholeSpace};
use tune::backend::{Backend, KernelEvaluator};
use tune::results::Database;
use tune::{Config, TechniqueKind, Tuner, TuningResult};

pub use cases::{Case, Info, Language, Study, Target};

/// When to stop: whichever comes first.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Most configurations to evaluate.
    pub evaluations: u64,
    /// Most wall-clock seconds.
    pub seconds: f64,
}

impl Budget {
    /// `evaluations` and `seconds`, overridden by the environment variables `TUNE_EVALS` and
    /// `TUNE_SECONDS`.
    pub fn from_env(evaluations: u64, seconds: f64) -> Self {
        let get = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<f64>().ok());
        Budget {
            evaluations: get("TUNE_EVALS").map_or(evaluations, |v| v as u64),
            seconds: get("TUNE_SECONDS").unwrap_or(seconds),
        }
    }
}

/// How a case study is tuned besides its budget.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Seed of the search.
    pub seed: u64,
    /// Configurations measured first (e.g. the best of another input size).
    pub start: Vec<Config>,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
    /// Record the best configuration in the tuning database `tuning/`.
    pub record: bool,
    /// Configurations asked for at once, compiled in parallel while the device measures
    /// (`None`: as many as there are cores; 1: each is compiled on the measuring thread
    /// right before it is measured).
    pub batch: Option<usize>,
    /// The search technique, over `TUNE_TECHNIQUE` (`None`: `TUNE_TECHNIQUE`, or the
    /// default, the bandit ensemble).
    pub technique: Option<TechniqueKind>,
    /// A configuration whose first run is this many times slower than the best so far is
    /// not repeated (`None`: 20; `f64::INFINITY` measures every configuration in full).
    pub slower_than_best: Option<f64>,
}

impl Options {
    /// Seed `seed`, a progress bar, results recorded.
    pub fn new(seed: u64) -> Self {
        Options {
            seed,
            start: Vec::new(),
            progress: true,
            record: true,
            batch: None,
            technique: None,
            slower_than_best: None,
        }
    }
}

/// Tunes `study` on `backend` within `budget` ([`tune_case`] of the study's case on the
/// backend's device), measuring its known good configurations first after those of the
/// options.
pub fn tune_study<B: Backend>(
    backend: Arc<B>,
    study: &impl Study,
    budget: Budget,
    mut options: Options,
) -> tune::Result<(Info, TuningResult<Duration>)> {
    let target = Target::of(backend.as_ref())?;
    let case = study.case(&target)?;
    options.start.extend(study.known_good(&target, &case.space));
    tune_case(backend, case, budget, options)
}

/// The environment variable `key` parsed, else `default`.
fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Tunes `case` on `backend` within `budget` with `tune::Tuner`: the technique of the
/// options or of `TUNE_TECHNIQUE` (default: the bandit ensemble), candidates compiled in
/// parallel on every core while the device measures (unless the options set a batch),
/// every evaluation appended to `target/tune/<backend>/<name>-<input>.jsonl`, the best
/// recorded in `tuning/` with the case's code fingerprint. Prints the report.
pub fn tune_case<B: Backend>(
    backend: Arc<B>,
    case: Case,
    budget: Budget,
    options: Options,
) -> tune::Result<(Info, TuningResult<Duration>)> {
    let device = backend.device().describe();
    let (info, spec) = case.split();
    // A configuration whose first run is 20 times slower than the best so far is not
    // repeated: it is recorded as valid with that run's time, stopped early.
    let spec = spec.slower_than_best(options.slower_than_best.unwrap_or(20.0));
    let t = std::time::Instant::now();
    let evaluator = KernelEvaluator::<B>::new(backend.clone(), &info.space, spec)?;
    let setup = t.elapsed();
    // One folder per backend: a run on one never replaces the log of a run on the other.
    let log = std::path::Path::new("target")
        .join("tune")
        .join(&backend.device().backend)
        .join(format!("{}-{}.jsonl", info.name, info.input));
    let resume = std::env::var("TUNE_RESUME").as_deref() == Ok("1");
    if !resume {
        let _ = std::fs::remove_file(&log);
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut tuner = Tuner::new(info.space.clone(), &evaluator)
        .name(info.name.clone())
        .input_key(info.input.clone())
        .fingerprint(info.code.clone())
        .abort(
            Evaluations(budget.evaluations)
                | Elapsed(Duration::from_secs_f64(budget.seconds))
                | WholeSpace,
        )
        .seed(env_or("TUNE_SEED", options.seed))
        .polish(env_or("TUNE_POLISH", 0))
        .batch(options.batch.unwrap_or(threads.max(2)))
        .log(&log)
        .resume(resume)
        .progress(options.progress)
        .start_from(options.start);
    if let Some(kind) = options.technique {
        tuner = tuner.technique(kind.build());
    } else if let Ok(name) = std::env::var("TUNE_TECHNIQUE") {
        tuner = tuner.technique(tune::technique_by_name(&name)?);
    }
    if options.record {
        let db = std::env::var("TUNE_DB").unwrap_or_else(|_| "tuning".into());
        tuner = tuner.database(Database::open(db));
    }
    let result = tuner.run()?;
    report(&info, &device, setup, &result);
    Ok((info, result))
}

/// Time per run and the throughput it means, e.g. `70.1 us (3832 GB/s, 8.6 TFLOP/s)`.
pub fn rate(info: &Info, seconds: f64) -> String {
    let mut rates = Vec::new();
    if info.bytes > 0.0 {
        rates.push(format!("{:.0} GB/s", info.bytes / seconds / 1e9));
    }
    if info.flops > 0.0 {
        let f = info.flops / seconds;
        rates.push(if f >= 1e12 {
            format!("{:.2} TFLOP/s", f / 1e12)
        } else {
            format!("{:.1} GFLOP/s", f / 1e9)
        });
    }
    format!("{:.3} us ({})", seconds * 1e6, rates.join(", "))
}

/// Prints what the run found: space, evaluations, failures, time spent compiling that the
/// pipeline did not hide, the best configuration with its time and throughput, and a
/// tab-separated `RESULT` line for scripts.
pub fn report(info: &Info, device: &str, setup: Duration, r: &TuningResult<Duration>) {
    let wall = r.elapsed.as_secs_f64().max(1e-9);
    let compile: f64 = r.records.iter().map(|x| x.prepare_s).sum();
    println!("case:        {} [{}]", info.name, info.input);
    println!("device:      {device}");
    println!(
        "space:       {} valid configurations; setup (buffers, reference) {:.2} s",
        info.space.len(),
        setup.as_secs_f64()
    );
    println!(
        "tuned:       {} evaluated ({} valid) in {:.1} s = {:.1}/s by {}; failures {:?}",
        r.evaluations,
        r.valid,
        wall,
        r.evaluations as f64 / wall,
        r.technique,
        r.failures
    );
    println!(
        "compile:     {:.1} s over all threads, {:.1} s not hidden behind measurement ({:.0}% of the run)",
        compile,
        r.waiting_for_preparation.as_secs_f64(),
        100.0 * r.waiting_for_preparation.as_secs_f64() / wall
    );
    // The re-measured median (the finalists measured again, interleaved), not the lucky
    // best of the search.
    let best = r.best.final_scalar();
    println!("best:        {}", info.space.describe(&r.best.config));
    println!("time:        {}", rate(info, best));
    if let Some(again) = &r.best.remeasured {
        let s = &again.spread;
        println!(
            "re-measured: median {:.3} us over {} rounds (min {:.3}, max {:.3}; {:.2}% spread); during the search {:.3} us",
            s.median * 1e6,
            s.n,
            s.min * 1e6,
            s.max * 1e6,
            100.0 * (s.max - s.min) / s.median,
            r.best.scalar * 1e6
        );
    }
    println!(
        "RESULT\t{}\t{}\t{}\t{:.3}\t{}\t{}\t{}\t{:.1}",
        info.name,
        info.input,
        info.space.describe(&r.best.config),
        best * 1e6,
        rate(info, best),
        r.evaluations,
        r.valid,
        wall
    );
}

/// The device time of a kernel that does nothing, launched once and back to back (per
/// launch, median of 20 samples of 64 launches): the floor under any kernel's time with
/// each timing method, in seconds.
pub fn launch_floor<B: Backend>(backend: Arc<B>) -> tune::Result<(f64, f64)> {
    use tune::backend::{BufferArg, KernelSpec};
    use tune::Evaluator;
    let source = match Target::of(backend.as_ref())?.language {
        Language::OpenCl => {
            "__kernel void nop(__global float* x) { if (x[0] == 1.0f) x[0] = 0.0f; }"
        }
        Language::Cuda => {
            "extern \"C\" __global__ void nop(float* x) { if (x[0] == 1.0f) x[0] = 0.0f; }"
        }
    };
    let space = tune::SpaceBuilder::new()
        .param(tune::Param::<usize>::values("UNUSED", [1]))
        .build()?;
    let config = space
        .get(0)
        .ok_or_else(|| tune::Error::KernelSpec("empty space".into()))?;
    let mut floors = [0.0; 2];
    for (floor, launches) in floors.iter_mut().zip([1, 64]) {
        let spec = KernelSpec::new(source, "nop")
            .global(|_| [32])
            .local(|_| [32])
            .buffer(BufferArg::zeros::<f32>(32))
            .repetitions(20)
            .launches_per_sample(launches);
        let ev = KernelEvaluator::<B>::new(backend.clone(), &space, spec)?;
        let m = ev
            .prepare(&space, &config)
            .and_then(|p| ev.measure(&space, &config, p))
            .map_err(|f| tune::Error::KernelSpec(format!("the empty kernel: {f}")))?;
        *floor = m.cost.as_secs_f64();
    }
    Ok((floors[0], floors[1]))
}
