//! `tune space` and `tune run`: Kernel Tuner T1 files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tune_runtime::abort::{AbortCondition, Elapsed, Evaluations, Or};
use tune_runtime::backend::{Backend, KernelEvaluator, KernelSpec};
use tune_runtime::results::Database;
use tune_runtime::t1::{Language, T1Kernel, T1Space, T1};
use tune_runtime::{technique_by_name, Tuner};

use crate::Res;

/// `tune run` options.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The T1 file.
    pub file: PathBuf,
    /// `cuda` or `opencl` (default: the file's Language).
    #[arg(long)]
    pub backend: Option<String>,
    /// The device: for OpenCL an index, `platform:device` or a name; for CUDA an ordinal or a name.
    #[arg(long)]
    pub device: Option<String>,
    /// The search technique (tune's or Kernel Tuner's names; default: the file's Search, else tune's default).
    #[arg(long)]
    pub technique: Option<String>,
    /// Stop after this many evaluations (default: the file's Budget, else the whole space;
    /// with --resume the log's evaluations count).
    #[arg(long, value_name = "N")]
    pub budget: Option<u64>,
    /// Stop after this many seconds of tuning (with --resume the log's time counts: a run
    /// resumed after 300 s with --time 400 tunes for 100 s more).
    #[arg(long, value_name = "SECONDS")]
    pub time: Option<f64>,
    /// The seed of the technique and of random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Folder for the log, the T4 results and plots.
    #[arg(long, default_value = "tune-runs")]
    pub out: PathBuf,
    /// The log (default: OUT/BENCHMARK.jsonl).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// The T4 results (default: OUT/BENCHMARK_T4.json).
    #[arg(long)]
    pub t4: Option<PathBuf>,
    /// Timed repetitions per configuration (default: the file's iterations, else 7).
    #[arg(long)]
    pub repetitions: Option<usize>,
    /// Configurations compiled ahead in parallel while one is measured (default: the CPU count).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Measure in batches, in the order the technique proposed them, instead of keeping the
    /// compiler threads busy: slower when compile times vary, but the same seed gives the
    /// same proposals as long as the measured costs are the same.
    #[arg(long)]
    pub in_order: bool,
    /// Keep NVRTC's outputs here and reuse them in later runs (CUDA; default: `$TUNE_CACHE_DIR`,
    /// else `tune/nvrtc` in `$XDG_CACHE_HOME` or `~/.cache`).
    #[arg(long, value_name = "DIR", conflicts_with = "no_compile_cache")]
    pub compile_cache: Option<PathBuf>,
    /// Compile every configuration afresh, without the compile cache.
    #[arg(long)]
    pub no_compile_cache: bool,
    /// Continue from the log: configurations it holds are not measured again.
    #[arg(long)]
    pub resume: bool,
    /// Record the best configuration in this tuning database folder.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Also write the plots (SVG) into OUT.
    #[arg(long)]
    pub plots: bool,
    /// Leave out the file's CompilerOptions, as Kernel Tuner's T1 runner does (e.g. a
    /// `-std=c++11` that an OpenCL compiler rejects).
    #[arg(long)]
    pub ignore_compiler_options: bool,
    /// Build the space and the launch plan, print them, and stop.
    #[arg(long)]
    pub dry_run: bool,
}

fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

fn group(n: u128) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn load(file: &Path) -> Res<(T1, T1Space, Duration)> {
    let t1 = T1::read(file)?;
    let t0 = Instant::now();
    let space = t1.space()?;
    let took = t0.elapsed();
    warn_all(&space.warnings);
    Ok((t1, space, took))
}

/// `tune space FILE`.
pub fn space(file: &Path, list: Option<usize>) -> Res {
    let (t1, s, took) = load(file)?;
    println!("benchmark:  {} ({})", t1.name(), file.display());
    println!(
        "parameters: {} (Cartesian product {})",
        s.space.params().len(),
        group(s.cartesian)
    );
    for p in s.space.params() {
        let n = p.domain_len();
        let vals: Vec<String> = (0..n.min(8))
            .filter_map(|i| p.domain_value(i).map(|v| v.to_string()))
            .collect();
        println!(
            "  {:<28} {:>5} values: {}{}",
            p.name(),
            n,
            vals.join(", "),
            if n > 8 { ", ..." } else { "" }
        );
    }
    println!(
        "conditions: {}",
        t1.file.configuration_space.conditions.len()
    );
    let pct = if s.cartesian > 0 {
        100.0 * s.space.len() as f64 / s.cartesian as f64
    } else {
        0.0
    };
    println!(
        "valid configurations: {} ({pct:.2}% of the Cartesian product), built in {:.1} ms",
        group(s.space.len()),
        took.as_secs_f64() * 1e3
    );
    let groups: Vec<String> = s
        .space
        .groups()
        .iter()
        .map(|(names, n)| format!("[{}] {}", names.join(" "), group(*n)))
        .collect();
    println!("independent groups: {}", groups.join(" x "));
    if let Some(n) = list {
        let names: Vec<&str> = s.space.params().iter().map(|p| p.name()).collect();
        println!("{}", names.join(","));
        for c in s.space.iter().take(n) {
            println!("{}", s.key(&c));
        }
    }
    Ok(())
}

/// The technique and budget from the command line, else from the file.
fn plan(a: &RunArgs, t1: &T1) -> (String, Option<u64>, Option<f64>) {
    let technique = a.technique.clone().unwrap_or_else(|| {
        t1.file
            .search
            .as_ref()
            .and_then(|s| s.get("Name"))
            .and_then(|n| n.as_str())
            .unwrap_or(tune_runtime::TechniqueKind::default().name())
            .to_string()
    });
    let (mut budget, mut time) = (a.budget, a.time);
    if budget.is_none() && time.is_none() {
        for b in t1.file.budget.iter().flatten() {
            let value = b.get("BudgetValue").and_then(|v| v.as_f64());
            match (b.get("Type").and_then(|t| t.as_str()), value) {
                (Some("ConfigurationCount"), Some(v)) => budget = Some(v as u64),
                (Some("TuningDuration"), Some(v)) => time = Some(v),
                _ => {}
            }
        }
    }
    (technique, budget, time)
}

/// `tune run FILE`.
pub fn run(a: &RunArgs) -> Res {
    let (t1, space, _) = load(&a.file)?;
    if space.space.is_empty() {
        return Err(format!(
            "{}: no configuration satisfies the conditions; check them with `tune space`",
            a.file.display()
        )
        .into());
    }
    let mut kernel = t1.kernel(&space)?;
    warn_all(&kernel.warnings);
    if a.ignore_compiler_options {
        // Only the include path of the kernel's folder stays.
        let n = t1
            .file
            .kernel_specification
            .as_ref()
            .map_or(0, |k| k.compiler_options.len());
        kernel.options.drain(..n.min(kernel.options.len()));
    }
    let language = match a.backend.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None => kernel.language,
        Some("cuda") => Language::Cuda,
        Some("opencl") => Language::OpenCl,
        Some(other) => {
            return Err(format!("unknown backend `{other}`; use `cuda` or `opencl`").into())
        }
    };
    if language != kernel.language {
        return Err(format!(
            "the kernel is {:?}, not {language:?}; omit --backend or pick the kernel's language",
            kernel.language
        )
        .into());
    }
    let (technique, budget, time) = plan(a, &t1);
    // Checked now, so that a typo fails before the device is opened.
    technique_by_name(&technique)?;
    let ps = kernel.problem_size;
    println!(
        "{}: {} valid configurations; kernel `{}` ({:?}) from {}, problem size {}x{}x{}",
        t1.name(),
        group(space.space.len()),
        kernel.name,
        kernel.language,
        kernel.source_path.display(),
        ps[0],
        ps[1],
        ps[2]
    );
    let mut spec = kernel.spec(&space, a.seed);
    if let Some(r) = a.repetitions {
        spec = spec.repetitions(r);
    }
    if a.dry_run {
        let limits: Vec<String> = budget
            .map(|b| format!("{b} evaluations"))
            .into_iter()
            .chain(time.map(|t| format!("{t} s")))
            .collect();
        println!(
            "technique {technique}, budget {}, seed {}",
            if limits.is_empty() {
                "the whole space".to_string()
            } else {
                limits.join(" or ")
            },
            a.seed
        );
        if let Some(c) = space.space.get(0) {
            let geometry = match kernel.launch(&space, &c) {
                Some((g, b)) => format!("grid {g:?}, block {b:?}"),
                None => "no valid launch geometry".into(),
            };
            println!(
                "first configuration: {} -> {geometry}",
                space.space.describe(&c)
            );
        }
        println!("{spec:?}");
        println!("dry run: nothing was measured");
        return Ok(());
    }
    match language {
        Language::Cuda => run_cuda(a, &t1, &space, &kernel, spec, &technique, budget, time),
        Language::OpenCl => run_opencl(a, &t1, &space, &kernel, spec, &technique, budget, time),
    }
}

#[cfg(feature = "cuda")]
#[allow(clippy::too_many_arguments)]
fn run_cuda(
    a: &RunArgs,
    t1: &T1,
    space: &T1Space,
    kernel: &T1Kernel,
    spec: KernelSpec,
    technique: &str,
    budget: Option<u64>,
    time: Option<f64>,
) -> Res {
    use tune_runtime::backend::cuda::{Cuda, DeviceSelector};
    let sel = match a.device.as_deref() {
        None => DeviceSelector::Index(0),
        Some(d) => match d.parse::<usize>() {
            Ok(i) => DeviceSelector::Index(i),
            Err(_) => DeviceSelector::Name(d.to_string()),
        },
    };
    let mut backend = Cuda::open(sel)?;
    if let Some(dir) = compile_cache(a) {
        println!("compile cache: {}", dir.display());
        backend = backend.compile_cache(dir);
    }
    tune(a, t1, space, kernel, backend, spec, technique, budget, time)
}

/// The compile cache's folder, unless `--no-compile-cache`.
#[cfg(feature = "cuda")]
fn compile_cache(a: &RunArgs) -> Option<PathBuf> {
    if a.no_compile_cache {
        return None;
    }
    if let Some(d) = &a.compile_cache {
        return Some(d.clone());
    }
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = env("TUNE_CACHE_DIR") {
        return Some(d);
    }
    let base = env("XDG_CACHE_HOME").or_else(|| env("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("tune").join("nvrtc"))
}

#[cfg(not(feature = "cuda"))]
#[allow(clippy::too_many_arguments)]
fn run_cuda(
    _: &RunArgs,
    _: &T1,
    _: &T1Space,
    _: &T1Kernel,
    _: KernelSpec,
    _: &str,
    _: Option<u64>,
    _: Option<f64>,
) -> Res {
    Err("this `tune` was built without the `cuda` feature; reinstall with `cargo install --path tune-cli`".into())
}

#[cfg(feature = "opencl")]
#[allow(clippy::too_many_arguments)]
fn run_opencl(
    a: &RunArgs,
    t1: &T1,
    space: &T1Space,
    kernel: &T1Kernel,
    spec: KernelSpec,
    technique: &str,
    budget: Option<u64>,
    time: Option<f64>,
) -> Res {
    let backend = tune_runtime::backend::opencl::OpenCl::select(a.device.as_deref().unwrap_or(""))?;
    tune(a, t1, space, kernel, backend, spec, technique, budget, time)
}

#[cfg(not(feature = "opencl"))]
#[allow(clippy::too_many_arguments)]
fn run_opencl(
    _: &RunArgs,
    _: &T1,
    _: &T1Space,
    _: &T1Kernel,
    _: KernelSpec,
    _: &str,
    _: Option<u64>,
    _: Option<f64>,
) -> Res {
    Err("this `tune` was built without the `opencl` feature; reinstall with `cargo install --path tune-cli`".into())
}

#[allow(clippy::too_many_arguments, dead_code)]
fn tune<B: Backend>(
    a: &RunArgs,
    t1: &T1,
    space: &T1Space,
    kernel: &T1Kernel,
    backend: B,
    spec: KernelSpec,
    technique: &str,
    budget: Option<u64>,
    time: Option<f64>,
) -> Res {
    println!("device: {}", backend.device().describe());
    let evaluator = KernelEvaluator::new(backend, &space.space, spec)?;
    let name = t1.name();
    let log = a
        .log
        .clone()
        .unwrap_or_else(|| a.out.join(format!("{name}.jsonl")));
    let t4 =
        a.t4.clone()
            .unwrap_or_else(|| a.out.join(format!("{name}_T4.json")));
    let ps = kernel.problem_size;
    let threads = a
        .batch
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get()));
    let mut tuner = Tuner::new(space.space.clone(), evaluator)
        .technique(technique_by_name(technique)?)
        .seed(a.seed)
        .name(name.clone())
        .input_key(format!("problem_size={}x{}x{}", ps[0], ps[1], ps[2]))
        .log(&log)
        .resume(a.resume)
        .batch(threads)
        // A new configuration is compiled as soon as one is measured: compile times vary
        // by seconds between configurations, and in batches the slowest sets the pace.
        .asynchronous(!a.in_order);
    let abort: Option<Box<dyn AbortCondition>> = match (budget, time) {
        (Some(n), Some(t)) => Some(Box::new(Or(
            Evaluations(n),
            Elapsed(Duration::from_secs_f64(t)),
        ))),
        (Some(n), None) => Some(Box::new(Evaluations(n))),
        (None, Some(t)) => Some(Box::new(Elapsed(Duration::from_secs_f64(t)))),
        (None, None) => None,
    };
    if let Some(c) = abort {
        tuner = tuner.abort(c);
    }
    if let Some(db) = &a.db {
        tuner = tuner.database(Database::open(db));
    }
    let result = tuner.run()?;
    result.to_t4().write(&t4)?;
    println!("{}", result.summary());
    // Where the time went: compilations run on `threads` threads at once, measurements one
    // after the other; the device idles only while it waits for a compilation.
    let sum = |f: fn(&tune_runtime::results::Record) -> f64| -> f64 {
        // Resumed records come first; they were measured in another run.
        let fresh = result.records.iter().skip(result.resumed as usize);
        fresh.map(f).sum()
    };
    println!(
        "  time: search {:.1} s, of which the device waited {:.1} s for compilations; \
         compiling {:.1} s on up to {threads} threads, measuring {:.1} s; re-measuring {:.1} s",
        result.elapsed.as_secs_f64(),
        result.waiting_for_preparation.as_secs_f64(),
        sum(|r| r.prepare_s),
        sum(|r| r.run_s),
        result.remeasuring.as_secs_f64()
    );
    println!(
        "  {:.1} evaluations/s; T4: {}",
        result.evaluations as f64 / result.elapsed.as_secs_f64().max(1e-9),
        t4.display()
    );
    if a.plots {
        let files = result.write_plots(&a.out)?;
        println!("  plots: {} files in {}", files.len(), a.out.display());
    }
    Ok(())
}
