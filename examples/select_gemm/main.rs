//! One GEMM library for every shape of VGG16, ResNet-50 and MobileNet (issue 14, after
//! Lawson's SYCL-DNN study): tune over many shapes, cross-evaluate strong candidates into
//! a performance matrix, choose a few configurations, train a decision tree to pick one
//! per call, report every method x classifier x k on unseen shapes, and ship the selector.
//!
//! ```text
//! # CPU (no GPU): a blocked GEMM on the shapes of at most 0.1 GFLOP (bench/select/RESULTS.md)
//! cargo run --release --features select --example select_gemm -- cpu [MAX_GFLOP] [EVALS]
//! # GPU: XgemmDirect (and on CUDA the tiled SGEMM, padded), every configuration compiled
//! # once, sizes as kernel arguments
//! cargo run --release --features select,cuda --example select_gemm -- gpu --backend cuda [POOL] [EVALS] [TILED]
//! # the tables again from a recorded matrix (and cuBLAS times)
//! cargo run --release --features select --example select_gemm -- analyse OUT_DIR
//! # how many scoring cells a run's matrix plans (to size a GPU run)
//! cargo run --release --features select --example select_gemm -- plan OUT_DIR
//! # where a split's shipped selector loses (default: MobileNet held out, k = 8; SCHEME 8
//! # or 9: an earlier round's recipes, default this round's)
//! cargo run --release --features select --example select_gemm -- explain OUT_DIR [SPLIT] [K] [SCHEME]
//! # the classifier rows alone (k = 4 and 8, every split), in seconds
//! cargo run --release --features select --example select_gemm -- classifiers OUT_DIR
//! # the CPU selector again from a recorded CPU run (examples/data/select_gemm_cpu.rs)
//! cargo run --release --features select --example select_gemm -- ship-cpu OUT_DIR
//! # a measuring plan replayed on a run whose grid was filled (replay.rs)
//! cargo run --release --features select --example select_gemm -- replay OUT_DIR [EVALS] [TUNE_SHARE] [BUDGET]
//! ```
//!
//! Output goes to `$OUT` (default `target/select/<cpu|cuda|opencl>`): the matrix
//! (`tuning/<tunable>/select/<device>.matrix.json`), `REPORT.md` and the selector. The CPU
//! run also writes `examples/data/select_gemm_cpu.rs`, which the `#[tunable]` below
//! compiles in (`GemmCpuConfig::select`, `gemm_cpu_auto`).
//!
//! The kernels compute `C = A B` without transposes: a shape whose operands the network
//! transposes is measured as the same product (the transposes stay in its key and its
//! features), and a batch of `batch` products is timed as one product times `batch`.

#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(dead_code))]

mod candidates;
#[path = "../common/mod.rs"]
mod common;
mod gpu;
mod pipeline;
mod replay;

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use pipeline::{Shape, Shapes};
use tune::results::Database;
use tune::select::{measured, tune_inputs, Matrix, Plan};

/// The components of `gemm_cpu`'s `input(..)` below, in order: the only features its
/// generated selector may read, so the CPU matrix has no others (select12: select11's
/// also had `ta`, `tb`, and its selector did not compile into `gemm_cpu`).
const INPUTS: [&str; 4] = ["m", "n", "k", "batch"];

/// `c = a * b` for a `batch` of `m x k` by `k x n` row-major products, blocked in
/// `mt x nt x kt` tiles with the inner loop in `lanes`-wide chunks, blocks of rows shared
/// among `threads` threads. Any size: the edge tiles are partial, so every configuration
/// is valid for every shape (the selector's choice needs no check).
#[tune::tunable(
    name = "gemm_cpu",
    technique = bandit,
    abort = evaluations(12) | duration(20s),
    repetitions = 3,
    input(m = m, n = n, k = k, batch = batch),
    device = pipeline::cpu_name(),
    select = "examples/data/select_gemm_cpu.rs",
)]
#[allow(clippy::too_many_arguments)] // the tuning parameters are arguments
fn gemm_cpu(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    #[tp([8, 16, 32, 64, 128, 256])] mt: usize,
    #[tp([16, 32, 64, 128, 256, 512])] nt: usize,
    #[tp([16, 32, 64, 128, 256, 512])] kt: usize,
    #[tp([4, 8, 16])] lanes: usize,
    #[tp([1, 2])] threads: usize,
) {
    let tiles = (mt, nt, kt, threads);
    for q in 0..batch {
        let (a, b) = (&a[q * m * k..][..m * k], &b[q * k * n..][..k * n]);
        let c = &mut c[q * m * n..][..m * n];
        match lanes {
            4 => blocked::<4>(a, b, c, (m, n, k), tiles),
            8 => blocked::<8>(a, b, c, (m, n, k), tiles),
            _ => blocked::<16>(a, b, c, (m, n, k), tiles),
        }
    }
}

fn blocked<const L: usize>(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, n, k): (usize, usize, usize),
    (mt, nt, kt, threads): (usize, usize, usize, usize),
) {
    c.fill(0.0);
    let rows_per_thread = m.div_ceil(mt).div_ceil(threads) * mt;
    std::thread::scope(|s| {
        for (t, chunk) in c.chunks_mut(rows_per_thread * n).enumerate() {
            let mut work = move || {
                let first = t * rows_per_thread;
                let rows = chunk.len() / n;
                for i0 in (0..rows).step_by(mt) {
                    let i1 = (i0 + mt).min(rows);
                    for j0 in (0..n).step_by(nt) {
                        let j1 = (j0 + nt).min(n);
                        for k0 in (0..k).step_by(kt) {
                            let k1 = (k0 + kt).min(k);
                            for i in i0..i1 {
                                let arow = &a[(first + i) * k..][..k];
                                let crow = &mut chunk[i * n + j0..i * n + j1];
                                for (p, &aip) in arow.iter().enumerate().take(k1).skip(k0) {
                                    let brow = &b[p * n + j0..p * n + j1];
                                    let mut cs = crow.chunks_exact_mut(L);
                                    let mut bs = brow.chunks_exact(L);
                                    for (x, y) in (&mut cs).zip(&mut bs) {
                                        // A fixed-size loop: the compiler vectorises it.
                                        for (x, y) in x.iter_mut().zip(y) {
                                            *x += aip * y;
                                        }
                                    }
                                    for (x, y) in cs.into_remainder().iter_mut().zip(bs.remainder())
                                    {
                                        *x += aip * y;
                                    }
                                }
                            }
                        }
                    }
                }
            };
            if threads == 1 {
                work();
            } else {
                s.spawn(work);
            }
        }
    });
}

/// The host reference of one product of the batch.
fn naive(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for p in 0..k {
            let aip = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += aip * b[p * n + j];
            }
        }
    }
    c
}

fn out_dir(what: &str) -> PathBuf {
    std::env::var_os("OUT").map_or_else(|| PathBuf::from("target/select").join(what), PathBuf::from)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        None | Some("cpu") => cpu(&args[1.min(args.len())..]),
        Some("analyse") => match args.get(1) {
            Some(dir) => pipeline::analyse_dir(&PathBuf::from(dir)),
            None => Err(tune::Error::Select(
                "usage: select_gemm analyse OUT_DIR".into(),
            )),
        },
        Some("plan") => match args.get(1) {
            Some(dir) => pipeline::plan_dir(&PathBuf::from(dir)),
            None => Err(tune::Error::Select(
                "usage: select_gemm plan OUT_DIR".into(),
            )),
        },
        Some("explain") => match args.get(1) {
            Some(dir) => pipeline::explain_dir(
                &PathBuf::from(dir),
                args.get(2).map(String::as_str),
                args.get(3).and_then(|k| k.parse().ok()),
                args.get(4).map(String::as_str),
            ),
            None => Err(tune::Error::Select(
                "usage: select_gemm explain OUT_DIR [SPLIT] [K] [SCHEME]".into(),
            )),
        },
        Some("classifiers") => match args.get(1) {
            Some(dir) => pipeline::classifiers_dir(&PathBuf::from(dir)),
            None => Err(tune::Error::Select(
                "usage: select_gemm classifiers DIR (a run's directory, with run.json.gz or run.json)".into(),
            )),
        },
        Some("ship-cpu") => match args.get(1) {
            Some(dir) => ship_cpu_run(&PathBuf::from(dir)),
            None => Err(tune::Error::Select(
                "usage: select_gemm ship-cpu DIR (a CPU run's directory)".into(),
            )),
        },
        Some("replay") => replay::main(&args[1..]),
        Some("gpu") => return gpu::main(&args[1..]),
        Some(other) => Err(tune::Error::Select(format!(
            "unknown command `{other}`; expected cpu, ship-cpu, gpu, analyse, explain, classifiers, plan or replay"
        ))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("select_gemm: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The CPU run: tunes the shapes of at most `MAX_GFLOP` (default 0.1), `EVALS`
/// evaluations each (default 12), then cross-evaluates, reports and ships the selector.
fn cpu(args: &[String]) -> tune::Result<()> {
    let max_gflop: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(0.1);
    let evals: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(12);
    let shapes = Shapes::read()?.distinct_products().at_most(max_gflop * 1e9);
    let out = out_dir("cpu");
    let db = Database::open(out.join("tuning"));
    let device = pipeline::cpu_name();
    println!(
        "gemm_cpu on {device}: {} shapes of at most {max_gflop} GFLOP",
        shapes.0.len()
    );
    let (max_a, max_b, max_c) = shapes.buffers();
    let a = pipeline::random(max_a, 1);
    let b = pipeline::random(max_b, 2);
    // Both the searches and the cross-evaluation write C.
    let c = RefCell::new(vec![0.0f32; max_c]);
    let started = Instant::now();
    let m = Matrix::new(
        "gemm_cpu",
        device.clone(),
        INPUTS.map(String::from).to_vec(),
    );
    // One configuration on one shape: an untimed call, then the median of 3.
    let measure = |s: &Shape, config: &tune::results::Named<tune::Value>| -> Option<f64> {
        let mut c = c.borrow_mut();
        let space = GemmCpuConfig::space(&a, &b, &c, s.m, s.n, s.k, s.batch).ok()?;
        let cfg = GemmCpuConfig::try_from(config.config(&space).ok()?).ok()?;
        Some(pipeline::time_cpu(|| {
            cfg.call(
                &a[..s.a_len()],
                &b[..s.b_len()],
                &mut c[..s.c_len()],
                s.m,
                s.n,
                s.k,
                s.batch,
            )
        }))
    };
    let find = |key: &str| -> Shape {
        shapes
            .0
            .iter()
            .find(|s| s.key() == key)
            .cloned()
            .unwrap_or_default()
    };
    let (m, stats) = tune_inputs(
        m,
        shapes.inputs_of(&INPUTS)?,
        Plan {
            budget: pipeline::TUNE_SHARE,
            ..Plan::default()
        },
        |input| {
            let s = find(&input.key);
            let (sa, sb) = (&a[..s.a_len()], &b[..s.b_len()]);
            let reference = naive(sa, sb, (s.m, s.n, s.k));
            let tolerance = 1e-3 * (s.k as f32).sqrt();
            let check = |_: &(),
                         _: &[f32],
                         _: &[f32],
                         c: &[f32],
                         _: &usize,
                         _: &usize,
                         _: &usize,
                         _: &usize| {
                match c
                    .iter()
                    .zip(&reference)
                    .position(|(x, y)| (x - y).abs() > tolerance)
                {
                    Some(i) => Err(tune::Failure::WrongResult(format!(
                        "c[{i}] = {}, expected {}",
                        c[i], reference[i]
                    ))),
                    None => Ok(()),
                }
            };
            let mut c = c.borrow_mut();
            let r = GemmCpuConfig::tuner_with(
                sa,
                sb,
                &mut c[..s.c_len()],
                s.m,
                s.n,
                s.k,
                s.batch,
                check,
            )?
            .abort(tune::abort::Evaluations(evals))
            // Each shape its own seed: the searches explore different configurations.
            .seed(
                input
                    .key
                    .bytes()
                    .fold(1u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
            )
            .database(db.clone())
            .progress(false)
            .run()?;
            Ok(measured(&r))
        },
        |input, config| measure(&find(&input.key), config),
    )?;
    println!(
        "searched {} cells, cross-evaluated {} + {} of a {}-cell grid ({:.1}%), in {:.0?}",
        stats.searched,
        stats.anchored,
        stats.promising,
        stats.grid,
        100.0 * stats.fraction(),
        started.elapsed()
    );
    // The label step (each split's training shapes, then all of them), then the scoring.
    let mut truth = m.clone();
    let budget = pipeline::label_budget(&stats, pipeline::BUDGET);
    let labelled = pipeline::label_step(
        &m,
        &mut truth,
        &pipeline::training_sets(&m),
        (budget, 0),
        |input, config| measure(&find(&input.key), config),
        || true,
    )?;
    println!(
        "label step: {} distinct label cells measured, {} planned over the training sets (at most {budget} each), in {:.0?}",
        labelled.0,
        labelled.1,
        started.elapsed()
    );
    let (verified, planned) = pipeline::verify(&m, &mut truth, (budget, 0), |input, config| {
        measure(&find(&input.key), config)
    })?;
    println!(
        "measured {verified} of {planned} scoring cells: baselines and sets on the test shapes, in {:.0?}",
        started.elapsed()
    );
    let mut run = pipeline::RunFile::new(m.clone(), &truth, stats, (verified, planned), None);
    run.labelled = labelled;
    run.budget = pipeline::BUDGET;
    let report = pipeline::analyse(&run)?;
    pipeline::write_run(&out, &run, &report)?;
    println!("{report}");

    ship_cpu(&m, &truth, budget, Some(&db))?;
    // What the build that wrote it compiled in (the file of the previous run, if any).
    let s = &shapes.0[0];
    let mut c = c.into_inner();
    match GemmCpuConfig::select(&a, &b, &c, s.m, s.n, s.k, s.batch) {
        Some(cfg) => println!("compiled-in selector for {}: {cfg}", s.key()),
        None => println!("no selector compiled in yet: build again to use the one just written"),
    }
    gemm_cpu_auto(&a, &b, &mut c, s.m, s.n, s.k, s.batch)?;
    Ok(())
}

/// Ships the CPU selector, compiled into `gemm_cpu_auto` on the next build: fitted on
/// every shape of `m` (with label cells of `truth`, at most `budget`) over [`INPUTS`]
/// alone, recorded in `db` where given, written to `examples/data/select_gemm_cpu.rs`.
fn ship_cpu(m: &Matrix, truth: &Matrix, budget: usize, db: Option<&Database>) -> tune::Result<()> {
    // A run before select12 has `ta`, `tb` too: the declaration does not name them.
    let (m, truth) = (m.with_features(&INPUTS)?, truth.with_features(&INPUTS)?);
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let (shipped_from, _, _) = pipeline::labelled(&m, &truth, &all, budget)?;
    let (selector, choice, scheme) = pipeline::deploy(&shipped_from)?;
    if let Some(db) = db {
        // The tuning run's matrix, label cells included, is what the shipped selector read.
        db.record_matrix(&shipped_from)?;
        db.record_selector(&selector)?;
    }
    let fingerprint = <GemmCpuConfig as tune::__private::Tunable>::FINGERPRINT;
    let source = selector.rust_for(fingerprint, &INPUTS)?;
    tune::results::write_atomic(
        &PathBuf::from("examples/data/select_gemm_cpu.rs"),
        source.as_bytes(),
    )?;
    println!(
        "wrote examples/data/select_gemm_cpu.rs ({} configurations by {}, {scheme} scheme)",
        selector.configs.len(),
        choice.recipe.name()
    );
    Ok(())
}

/// `ship-cpu DIR`: [`ship_cpu`] from a recorded CPU run (`run.json.gz`), as the run
/// itself would have shipped.
fn ship_cpu_run(dir: &std::path::Path) -> tune::Result<()> {
    let run = pipeline::read_run(dir)?;
    let budget = run.set_budget(run.matrix.inputs().len());
    ship_cpu(&run.matrix, &run.learnt()?, budget, None)
}

#[cfg(test)]
mod tests {
    use super::INPUTS;

    /// The committed selector reads only features `gemm_cpu`'s `input(..)` names (its
    /// header lists them; derived ones are computed from those).
    #[test]
    fn the_committed_cpu_selector_reads_only_the_declared_inputs() {
        let src = include_str!("../data/select_gemm_cpu.rs");
        let line = src
            .lines()
            .find_map(|l| l.strip_prefix("// features: "))
            .unwrap_or_default();
        let own: Vec<&str> = line
            .split(", ")
            .filter(|f| !f.ends_with(" (derived)"))
            .collect();
        assert!(!own.is_empty(), "{src}");
        assert!(own.iter().all(|f| INPUTS.contains(f)), "{line}");
    }
}
