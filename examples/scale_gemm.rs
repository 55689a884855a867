//! The GEMM case study (examples/common/cases/gemm.rs) tuned on several devices of this
//! machine at once: one isolated worker process per device (`tune::scale::pick`), all of
//! them measuring in one run (`tune::scale::Devices`), each record naming the device that
//! measured it. Prints the evaluations per second of the search, so that runs on 1, 2 and 4
//! GPUs compare side by side (benches/gpu/run_scale.sh).
//!
//! ```text
//! cargo run --release --features cuda --example scale_gemm -- --backend cuda --devices 0,1 [m [n [k]]]
//! ```
//!
//! - `--devices LIST`: the devices, by the backend's query (CUDA: an index or part of the
//!   name), comma-separated; a query given more than once starts several workers on that
//!   device (a stand-in for several devices where there is one).
//! - `--model NAME`: every device whose name contains `NAME`; `--all`: every device.
//! - `--single`: one device, tuned by the tuner on its own (no `Devices`): the baseline.
//! - `--label NAME`: the run's name in the output and its log's file name.
//!
//! The search is random with a fixed seed (`TUNE_SEED`, default 1), so that every run
//! measures the same configurations (or, with `TUNE_TECHNIQUE=exhaustive`, the first ones of
//! the space); `TUNE_EVALS` (default 300) and `TUNE_SECONDS` (default 240) bound it. The
//! finalists are not measured again (it is the search's throughput that is compared), and
//! nothing is written to the tuning database. The log is
//! `target/tune/scale/<label>.jsonl` (`TUNE_LOG_DIR` sets the folder).

// Built without a backend, the example only says so.
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::cases::floats;
use common::cases::gemm::{Check, Gemm, Layout};
use common::cli;
use common::{Budget, Language, Study, Target};
use tune::abort::{Elapsed, Evaluations, WholeSpace};
use tune::backend::isolated::Isolated;
use tune::backend::{Backend, KernelEvaluator};
use tune::measure::Remeasure;
use tune::scale::{pick, Devices, Pick};
use tune::search::Random;
use tune::{Evaluator, Tuner, TuningResult};

/// What the command line asked for.
struct Args {
    language: Language,
    pick: Pick,
    single: bool,
    label: Option<String>,
    sizes: [usize; 3],
}

fn parse() -> Result<Args, String> {
    let (language, rest) = cli::parse(std::env::args().skip(1))?;
    let language = language
        .or_else(|| cli::built().last().copied())
        .ok_or("built without a backend; build with `--features cuda` or `--features opencl`")?;
    let mut pick = None;
    let mut single = false;
    let mut label = None;
    let mut numbers = Vec::new();
    let mut it = rest.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--devices" => {
                let list = it.next().ok_or("`--devices` needs a list: 0,1")?;
                pick = Some(Pick::list(list.split(',').map(str::trim)));
            }
            "--model" => pick = Some(Pick::model(it.next().ok_or("`--model` needs a name")?)),
            "--all" => pick = Some(Pick::all()),
            "--single" => single = true,
            "--label" => label = Some(it.next().ok_or("`--label` needs a name")?),
            n => numbers.push(
                n.parse::<usize>()
                    .map_err(|_| format!("unexpected argument `{n}`"))?,
            ),
        }
    }
    let m = numbers.first().copied().unwrap_or(4096);
    let n = numbers.get(1).copied().unwrap_or(m);
    let k = numbers.get(2).copied().unwrap_or(m);
    Ok(Args {
        language,
        pick: pick.unwrap_or_else(|| Pick::list(["0"])),
        single,
        label,
        sizes: [m, n, k],
    })
}

/// The workers of `pick` on `language`'s backend.
fn workers(language: Language, pick: &Pick) -> tune::Result<Vec<(String, Isolated)>> {
    match language {
        #[cfg(feature = "cuda")]
        Language::Cuda => pick::cuda(pick),
        #[cfg(feature = "opencl")]
        Language::OpenCl => pick::opencl(pick),
        #[allow(unreachable_patterns)]
        other => Err(tune::Error::BackendUnavailable {
            backend: other.name().into(),
            reason: format!("this example was built without it; build with `--features {other}`"),
        }),
    }
}

fn tuner<E: Evaluator>(
    space: tune::Space,
    evaluator: E,
    budget: Budget,
    log: &PathBuf,
) -> Tuner<E> {
    let seed = std::env::var("TUNE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut t = Tuner::new(space, evaluator)
        .name("gemm")
        .abort(
            Evaluations(budget.evaluations)
                | Elapsed(Duration::from_secs_f64(budget.seconds))
                | WholeSpace,
        )
        .seed(seed)
        .remeasure(Remeasure::off())
        .log(log)
        .progress(false);
    t = match std::env::var("TUNE_TECHNIQUE") {
        Ok(name) => match tune::technique_by_name(&name) {
            Ok(technique) => t.technique(technique),
            Err(e) => {
                eprintln!("scale_gemm: {e}; searching at random");
                t.technique(Random::new())
            }
        },
        Err(_) => t.technique(Random::new()),
    };
    t
}

fn report(label: &str, units: usize, setup: Duration, r: &TuningResult<Duration>) {
    let seconds = r.elapsed.as_secs_f64();
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for rec in &r.records {
        *by.entry(rec.measured_on.as_deref().unwrap_or("-"))
            .or_default() += 1;
    }
    let by: Vec<String> = by.iter().map(|(d, n)| format!("{d}={n}")).collect();
    println!(
        "SCALE label={label} devices={units} evaluations={} valid={} seconds={seconds:.3} \
         rate={:.3} setup={:.1} best_ms={:.4} measured_on={}",
        r.evaluations,
        r.valid,
        r.evaluations as f64 / seconds.max(1e-9),
        setup.as_secs_f64(),
        r.best.cost.map_or(f64::NAN, |c| c.as_secs_f64() * 1e3),
        by.join(",")
    );
    println!("{}", r.summary());
}

fn run(args: Args) -> tune::Result<()> {
    let [m, n, k] = args.sizes;
    let plain = Gemm::new(m, n, k);
    let budget = Budget::from_env(300, 240.0);
    let t = Instant::now();
    let workers = workers(args.language, &args.pick)?;
    let Some((_, first)) = workers.first() else {
        return Err(tune::Error::KernelSpec("no device was picked".into()));
    };
    let target = Target::of(first)?;
    // The product is computed once on the host and given to every worker's spec.
    let [a, b, c] = plain.inputs();
    let product = plain.host(
        Layout::of(target.language),
        floats(&a),
        floats(&b),
        floats(&c),
    );
    let study = plain.check(Check::Given(std::sync::Arc::new(product)));
    let source = study.source(&target)?;
    let space = study.space(&target)?;
    let units = workers.len();
    let label = args.label.unwrap_or_else(|| {
        format!(
            "{}-{units}{}",
            args.language,
            if args.single { "-single" } else { "" }
        )
    });
    let dir = std::env::var("TUNE_LOG_DIR")
        .map_or_else(|_| PathBuf::from("target/tune/scale"), PathBuf::from);
    let log = dir.join(format!("{label}.jsonl"));
    let _ = std::fs::remove_file(&log);
    let spec = || {
        // A configuration whose first run is 20 times slower than the best so far is not
        // repeated (as the case-study examples tune).
        study
            .spec(&target, source)
            .map(|s| s.slower_than_best(20.0))
    };
    eprintln!(
        "scale_gemm: {m}x{n}x{k} on {units} worker(s) of {}: {}",
        first.device().describe(),
        workers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (setup, result) = if args.single {
        let (Some((_, device)), 1) = (workers.into_iter().next(), units) else {
            return Err(tune::Error::KernelSpec(
                "`--single` takes one device".into(),
            ));
        };
        let evaluator = KernelEvaluator::new(device, &space, spec()?)?;
        let setup = t.elapsed();
        // The tuner's own preparation pool: one configuration per core, as the case
        // studies tune.
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let r = tuner(space, &evaluator, budget, &log)
            .batch(threads.max(2))
            .run()?;
        (setup, r)
    } else {
        // Each worker gets the spec built again: its buffers and reference on its device.
        let devices = Devices::kernels(workers, &space, spec)?;
        let setup = t.elapsed();
        let r = tuner(space, &devices, budget, &log).run()?;
        for d in devices.dropped_devices() {
            eprintln!("scale_gemm: dropped {}: {}", d.name, d.why);
        }
        (setup, r)
    };
    report(&label, units, setup, &result);
    println!("log: {}", log.display());
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("scale_gemm: {e}");
            return ExitCode::FAILURE;
        }
    };
    let language = args.language;
    cli::exit("scale_gemm", language, run(args))
}
