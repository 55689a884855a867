//! Shared by the OpenCL examples and tests: the case studies and a minimal tuning loop.
//!
//! The loop (random sampling, then a local search around the best configuration; exhaustive
//! when the budget covers the space) stands in for `tune::Tuner` until the tuner is merged:
//! it drives any `Evaluator` the same way (parallel `prepare`, serial `measure`).
#![allow(dead_code)]

pub mod cases;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use tune::{Config, Evaluator, Failure, Neighbourhood, Space};

pub use cases::Case;

/// When to stop.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Most configurations to evaluate.
    pub evaluations: usize,
    /// Most wall-clock seconds.
    pub seconds: f64,
}

impl Budget {
    /// `evaluations` and `seconds`, overridden by the environment variables `TUNE_EVALS` and
    /// `TUNE_SECONDS`.
    pub fn from_env(evaluations: usize, seconds: f64) -> Self {
        let get = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<f64>().ok());
        Budget {
            evaluations: get("TUNE_EVALS").map_or(evaluations, |v| v as usize),
            seconds: get("TUNE_SECONDS").unwrap_or(seconds),
        }
    }
}

/// One evaluation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Record {
    /// `A=1 B=2`.
    pub config: String,
    /// Median kernel time, seconds.
    pub time_s: Option<f64>,
    /// Every repetition, seconds.
    pub samples: Vec<f64>,
    /// Failure kind and message.
    pub failure: Option<Failure>,
}

/// What a tuning run found.
#[derive(Debug)]
pub struct Outcome {
    /// Best configuration and its median time.
    pub best: Option<(Config, Duration)>,
    /// Every evaluation, in order.
    pub records: Vec<Record>,
    /// Failures by kind.
    pub failures: BTreeMap<&'static str, usize>,
    /// Wall-clock time of the whole run.
    pub wall: Duration,
    /// Summed compile (prepare) time, over all threads.
    pub prepare: Duration,
}

impl Outcome {
    /// Configurations evaluated.
    pub fn evaluated(&self) -> usize {
        self.records.len()
    }
    /// Configurations measured successfully.
    pub fn valid(&self) -> usize {
        self.records.iter().filter(|r| r.time_s.is_some()).count()
    }
}

/// Tunes `space` with `ev`: exhaustive if the budget covers the space, otherwise 60% uniform
/// random samples and then a first-improvement local search over one-parameter neighbours of
/// the best. Candidates are prepared (compiled) in parallel batches, measured one at a time.
///
/// `on_best` is called with every new best time (e.g. to tighten a time limit).
pub fn tune<E>(
    space: &Space,
    ev: &E,
    budget: Budget,
    seed: u64,
    on_best: impl Fn(Duration),
) -> Outcome
where
    E: Evaluator<Cost = Duration>,
{
    let start = Instant::now();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seen: HashSet<u128> = HashSet::new();
    let mut out = Outcome {
        best: None,
        records: Vec::new(),
        failures: BTreeMap::new(),
        wall: Duration::ZERO,
        prepare: Duration::ZERO,
    };
    let total = space.len();
    let exhaustive = total <= budget.evaluations as u128;
    let batch = rayon::current_num_threads().max(2);
    let random_phase = if exhaustive {
        usize::MAX
    } else {
        budget.evaluations * 6 / 10
    };
    let mut next_exhaustive: u128 = 0;
    let mut stale = 0;
    loop {
        let done = out.records.len();
        if done >= budget.evaluations || start.elapsed().as_secs_f64() >= budget.seconds {
            break;
        }
        let want = batch.min(budget.evaluations - done);
        let mut picks: Vec<u128> = Vec::new();
        if exhaustive {
            while picks.len() < want && next_exhaustive < total {
                picks.push(next_exhaustive);
                next_exhaustive += 1;
            }
        } else if done < random_phase || out.best.is_none() {
            let mut tries = 0;
            while picks.len() < want && tries < 100 * want {
                tries += 1;
                if let Some(i) = space.sample_index(&mut rng) {
                    if seen.insert(i) {
                        picks.push(i);
                    }
                }
            }
        } else if let Some((best, _)) = &out.best {
            let mut hood: Vec<u128> = space
                .neighbour_indices(best, Neighbourhood::Adjacent)
                .into_iter()
                .chain(space.neighbour_indices(best, Neighbourhood::Any))
                .filter(|i| !seen.contains(i))
                .collect();
            hood.sort_unstable();
            hood.dedup();
            while picks.len() < want && !hood.is_empty() {
                let j = rng.random_range(0..hood.len());
                let i = hood.swap_remove(j);
                seen.insert(i);
                picks.push(i);
            }
            if picks.is_empty() {
                // Local optimum: jump to a random configuration.
                if let Some(i) = space.sample_index(&mut rng) {
                    if seen.insert(i) {
                        picks.push(i);
                    }
                }
            }
        }
        if picks.is_empty() {
            stale += 1;
            if stale > 3 || exhaustive {
                break;
            }
            continue;
        }
        let configs: Vec<Config> = picks.iter().filter_map(|&i| space.get(i)).collect();
        let prepared: Vec<(Config, Duration, Result<E::Prepared, Failure>)> = configs
            .into_par_iter()
            .map(|c| {
                let t = Instant::now();
                let p = ev.prepare(space, &c);
                (c, t.elapsed(), p)
            })
            .collect();
        for (c, dt, p) in prepared {
            out.prepare += dt;
            if start.elapsed().as_secs_f64() >= budget.seconds {
                break;
            }
            let result = p.and_then(|p| ev.measure(space, &c, p));
            let rec = match result {
                Ok(m) => {
                    if out.best.as_ref().is_none_or(|(_, b)| m.cost < *b) {
                        out.best = Some((c.clone(), m.cost));
                        on_best(m.cost);
                    }
                    Record {
                        config: space.describe(&c),
                        time_s: Some(m.cost.as_secs_f64()),
                        samples: m.samples,
                        failure: None,
                    }
                }
                Err(f) => {
                    *out.failures.entry(f.kind()).or_default() += 1;
                    Record {
                        config: space.describe(&c),
                        time_s: None,
                        samples: Vec::new(),
                        failure: Some(f),
                    }
                }
            };
            out.records.push(rec);
        }
    }
    out.wall = start.elapsed();
    out
}

/// Prints the best configuration with its time and throughput, and writes every record to
/// `target/tune/<case>.json`.
pub fn report(case: &cases::Info, device: &str, out: &Outcome) {
    println!("case:        {}", case.name);
    println!("device:      {device}");
    println!("space:       {} valid configurations", case.space.len());
    println!(
        "evaluated:   {} ({} valid; failures {:?}) in {:.1} s = {:.1} evaluations/s; compile {:.1} s (summed over threads)",
        out.evaluated(),
        out.valid(),
        out.failures,
        out.wall.as_secs_f64(),
        out.evaluated() as f64 / out.wall.as_secs_f64().max(1e-9),
        out.prepare.as_secs_f64()
    );
    match &out.best {
        Some((c, t)) => {
            let s = t.as_secs_f64();
            let mut rate = Vec::new();
            if case.flops > 0.0 {
                rate.push(format!("{:.1} GFLOP/s", case.flops / s / 1e9));
            }
            if case.bytes > 0.0 {
                rate.push(format!("{:.1} GB/s", case.bytes / s / 1e9));
            }
            let rate = rate.join(", ");
            println!("best:        {}", case.space.describe(c));
            println!("time:        {:.3} us  ({rate})", s * 1e6);
            println!(
                "RESULT\t{}\t{}\t{:.3}\t{rate}\t{}\t{}\t{:.1}",
                case.name,
                case.space.describe(c),
                s * 1e6,
                out.evaluated(),
                out.valid(),
                out.wall.as_secs_f64()
            );
        }
        None => println!("best:        none: no configuration was valid"),
    }
    let dir = std::path::Path::new("target").join("tune");
    if std::fs::create_dir_all(&dir).is_ok() {
        if let Ok(json) = serde_json::to_string_pretty(&out.records) {
            let _ = std::fs::write(dir.join(format!("{}.json", case.name)), json);
        }
    }
}

/// Builds the evaluator on `cl`, tunes within `budget`, reports, and returns the outcome.
pub fn run(
    case: Case,
    cl: std::sync::Arc<tune::backend::opencl::OpenCl>,
    budget: Budget,
    seed: u64,
) -> tune::Result<(cases::Info, Outcome)> {
    use tune::backend::Backend;
    let device = cl.device().describe();
    let (info, spec) = case.split();
    let t = Instant::now();
    let ev = tune::backend::KernelEvaluator::<tune::backend::opencl::OpenCl>::new(
        cl,
        &info.space,
        spec,
    )?;
    println!(
        "setup:       {:.2} s (buffers, reference)",
        t.elapsed().as_secs_f64()
    );
    // Configurations 20x slower than the best so far are not repeated.
    let out = tune(&info.space, &ev, budget, seed, |best| {
        ev.set_time_limit(Some(best * 20))
    });
    report(&info, &device, &out);
    Ok((info, out))
}

/// The OpenCL device named by `TUNE_OPENCL_DEVICE` (see `OpenCl::select`), or the first.
pub fn device() -> tune::Result<tune::backend::opencl::OpenCl> {
    tune::backend::opencl::OpenCl::from_env("TUNE_OPENCL_DEVICE")
}
