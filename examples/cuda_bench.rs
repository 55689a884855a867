//! The CUDA bench: in one process, on one GPU, every part tuned with `tune::Tuner` through
//! `common::tune_case` (log in target/tune/, best configurations in tuning/):
//! 1. SGEMM (kernels/sgemm.cu) at 4096^3, tuned starting from the classic 128x128x8 / 8x8
//!    configuration, against cuBLAS SGEMM (TF32 off, `cublasSgemm`), both timed with CUDA
//!    events (median), the tuned kernel validated against cuBLAS's product; every GEMM here
//!    is `C = 1.5 A B - 0.5 C`, the GEMM case's input (examples/common/cases/gemm.rs), for
//!    the tuned kernels and cuBLAS alike;
//! 2. the same at 8192^3, starting also from the six best configurations found at 4096^3;
//! 3. compilation's share of tuning time without and with the parallel pipeline: the same
//!    16 random configurations of SGEMM 4096^3 (one seed), compiled one at a time on the
//!    measuring thread right before each is measured (batch 1), then all at once on every
//!    core (batch 16), each with a fresh evaluator (an empty program cache);
//! 4. XgemmDirect at ATF's sizes IS1-IS4 against cuBLAS, both timed over 64 back-to-back
//!    launches per sample;
//! 5. Kernel Tuner's throughput case (kernels/kt_matmul.cu, n = 2048, 100 random
//!    evaluations of 7 iterations each, no validation): evaluations per second.
//!    `TUNE_EVALS` and `TUNE_SECONDS` set this part's budget: with `TUNE_EVALS` at the
//!    space's size (1,280) random search measures every configuration, a brute force
//!    (bench/simulate's H200 recording).
//!
//! NVRTC caches compilations within a process: compiling the same code again is almost free,
//! even with another (unused) define. So part 3 runs first, after one untimed compilation
//! of an empty kernel, serial mode first, and each mode adds its own empty kernel to the
//! source so that the parallel mode compiles from scratch too.
//!
//! About 5 minutes on an H200 with 16 cores (each part has a time limit: 6 minutes at
//! most); `TUNE_BENCH_QUICK=1`: under 2 minutes (4096^3 only, 8 configurations in part 3,
//! shorter budgets). `TUNE_BENCH_ONLY=3,4` runs only the parts listed; `TUNE_CUDA_DEVICE`
//! picks the GPU (index or part of its name). Without CUDA it says so and exits 0.
//!
//! `cargo run --release --features cuda --example cuda_bench [OUT_DIR]` (writes the
//! markdown report to OUT_DIR/cuda_bench.md as well as to standard output).
mod common;

#[cfg(feature = "cuda")]
fn main() -> std::process::ExitCode {
    common::cli::exit("cuda_bench", common::Language::Cuda, bench::run())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("cuda_bench needs `--features cuda`");
}

#[cfg(feature = "cuda")]
mod bench {
    use std::fmt::Write as _;
    use std::sync::Arc;
    use std::time::Duration;

    use tune::cuda::Cuda;
    use tune::results::{Named, Record};
    use tune::{Config, Error, Result, TechniqueKind, TuningResult, Value};

    use super::common::cases::gemm::{Check, Gemm};
    use super::common::cases::kt_matmul::KtMatmul;
    use super::common::cases::{Study, Target};
    use super::common::cuda::{self as cc, GemmVsCublas};
    use super::common::{self, Budget, Options};

    /// The budgets of one bench run.
    struct Plan {
        quick: bool,
        /// Parts to run (1 to 5).
        parts: Vec<u32>,
        /// SGEMM sizes with their budgets (part 1 is 4096, part 2 is 8192).
        sgemm: Vec<(u32, usize, Budget)>,
        /// Configurations compared in part 3.
        pipeline: u64,
        /// Budget of each XgemmDirect shape.
        xgemm: Budget,
        /// Budget of Kernel Tuner's case.
        kt: Budget,
    }

    impl Plan {
        fn from_env() -> Plan {
            let quick = std::env::var("TUNE_BENCH_QUICK").is_ok_and(|v| v != "0");
            let parts = match std::env::var("TUNE_BENCH_ONLY") {
                Ok(v) if v == "pipeline" => vec![3],
                Ok(v) => v
                    .split(',')
                    .filter_map(|p| p.trim().parse().ok())
                    .filter(|p| (1..=5).contains(p))
                    .collect(),
                Err(_) => (1..=5).collect(),
            };
            let budget = |evaluations, seconds| Budget {
                evaluations,
                seconds,
            };
            if quick {
                Plan {
                    quick,
                    parts,
                    sgemm: vec![(1, 4096, budget(80, 35.0))],
                    pipeline: 8,
                    xgemm: budget(60, 8.0),
                    kt: Budget::from_env(100, 30.0),
                }
            } else {
                Plan {
                    quick,
                    parts,
                    sgemm: vec![(1, 4096, budget(160, 75.0)), (2, 8192, budget(64, 90.0))],
                    pipeline: 16,
                    xgemm: budget(200, 25.0),
                    kt: Budget::from_env(100, 60.0),
                }
            }
        }

        fn runs(&self, part: u32) -> bool {
            self.parts.contains(&part)
        }
    }

    fn tflops(size: usize, secs: f64) -> f64 {
        2.0 * (size as f64).powi(3) / secs / 1e12
    }

    /// Compile CPU seconds (records' `prepare_s`) and measuring seconds (`run_s`) of a run.
    fn sums(r: &TuningResult<Duration>) -> (f64, f64) {
        let compile = r.records.iter().map(|x| x.prepare_s).sum();
        let measure = r.records.iter().map(|x| x.run_s).sum();
        (compile, measure)
    }

    /// The valid records of a run, fastest first.
    fn fastest(r: &TuningResult<Duration>) -> Vec<&Record> {
        let mut ok: Vec<&Record> = r.records.iter().filter(|x| x.is_ok()).collect();
        ok.sort_by(|x, y| {
            let c = |r: &Record| r.cost.unwrap_or(f64::INFINITY);
            c(x).total_cmp(&c(y))
        });
        ok
    }

    /// What one tuning run took.
    struct Run {
        evaluations: u64,
        valid: u64,
        wall: f64,
        compile: f64,
        not_hidden: f64,
        measure: f64,
        best: f64,
        failures: std::collections::BTreeMap<String, u64>,
    }

    impl Run {
        fn of(r: &TuningResult<Duration>) -> Run {
            let (compile, measure) = sums(r);
            Run {
                evaluations: r.evaluations,
                valid: r.valid,
                wall: r.elapsed.as_secs_f64().max(1e-9),
                compile,
                not_hidden: r.waiting_for_preparation.as_secs_f64(),
                measure,
                best: r.best.scalar,
                failures: r.failures.clone(),
            }
        }

        fn rate(&self) -> f64 {
            self.evaluations as f64 / self.wall
        }

        fn not_hidden_share(&self) -> f64 {
            100.0 * self.not_hidden / self.wall
        }
    }

    struct SgemmRow {
        size: usize,
        cublas: f64,
        run: Run,
        best: String,
    }

    /// cuBLAS SGEMM at `size`^3 on the SGEMM case's inputs: seconds and the product.
    fn cublas_at(cuda: &Cuda, size: usize) -> Result<(f64, Vec<f32>)> {
        let (t, c) = cc::cublas_sgemm(cuda, &Gemm::new(size, size, size), 1, 20)?;
        println!(
            "[{size}^3] cuBLAS SGEMM {:.3} ms = {:.1} TFLOP/s",
            t * 1e3,
            tflops(size, t)
        );
        Ok((t, c))
    }

    /// Parts 1 and 2: SGEMM at `size`^3 tuned from the classic configuration and `carry`;
    /// returns the row and the six best configurations.
    fn sgemm(
        cuda: &Arc<Cuda>,
        size: usize,
        (cublas, product): (f64, Vec<f32>),
        budget: Budget,
        carry: &[Named<Value>],
    ) -> Result<(SgemmRow, Vec<Named<Value>>)> {
        let study = Gemm::new(size, size, size).check(Check::Given(Arc::new(product)));
        let target = Target::of(cuda.as_ref())?;
        let case = study.case(&target)?;
        println!(
            "[{size}^3] SGEMM space: {} valid configurations",
            case.space.len()
        );
        let mut start: Vec<Config> = study.known_good(&target, &case.space);
        start.extend(carry.iter().filter_map(|c| c.config(&case.space).ok()));
        let options = Options {
            start,
            ..Options::new(7)
        };
        let (_, r) = common::tune_case(cuda.clone(), case, budget, options)?;
        let run = Run::of(&r);
        println!(
            "[{size}^3] tuned {:.3} ms = {:.1} TFLOP/s = {:.1}% of cuBLAS ({:.3} ms)",
            run.best * 1e3,
            tflops(size, run.best),
            100.0 * cublas / run.best,
            cublas * 1e3
        );
        let ok = fastest(&r);
        for x in ok.iter().take(6) {
            let t = x.cost.unwrap_or(f64::NAN);
            println!(
                "    {:.3} ms {:.1} TFLOP/s  {}",
                t * 1e3,
                tflops(size, t),
                x.config
            );
        }
        let top = ok.iter().take(6).map(|x| x.config.clone()).collect();
        let row = SgemmRow {
            size,
            cublas,
            best: r.space.describe(&r.best.config),
            run,
        };
        Ok((row, top))
    }

    /// Part 3: the same `n` random SGEMM configurations, compiled serially (batch 1) and then
    /// in parallel (batch `n`), each with a fresh evaluator.
    fn pipeline(cuda: &Arc<Cuda>, product: &[f32], n: u64) -> Result<Vec<(String, Run)>> {
        // Load NVRTC and its builtins once, untimed, with a kernel unrelated to SGEMM.
        let _ = tune::cuda::compile(
            "extern \"C\" __global__ void nop() {}",
            "nop.cu",
            cuda.arch(),
            &[],
            &[],
        );
        let mut rows = Vec::new();
        for batch in [1, n as usize] {
            // NVRTC caches compilations within a process: an empty kernel beside SGEMM,
            // different in each mode, keeps the second mode from reusing the first's.
            let extra = format!("\nextern \"C\" __global__ void tune_bench_mode_{batch}() {{}}\n");
            let study = Gemm::new(4096, 4096, 4096).check(Check::Given(Arc::new(product.to_vec())));
            let target = Target::of(cuda.as_ref())?;
            let source = format!("{}{extra}", study.source(&target)?);
            let case = study.case_with_source(&target, &source)?;
            let options = Options {
                batch: Some(batch),
                technique: Some(TechniqueKind::Random),
                record: false,
                ..Options::new(99)
            };
            let budget = Budget {
                evaluations: n,
                seconds: 300.0,
            };
            let (_, r) = common::tune_case(cuda.clone(), case, budget, options)?;
            let mode = if batch == 1 {
                "serial compile (batch 1)".to_string()
            } else {
                format!("parallel pipeline (batch {batch})")
            };
            let run = Run::of(&r);
            println!(
                "[pipeline] {mode}: {} evaluated in {:.1} s = {:.2}/s; compile {:.1} s CPU, {:.1} s not hidden ({:.0}%); measuring {:.1} s",
                run.evaluations,
                run.wall,
                run.rate(),
                run.compile,
                run.not_hidden,
                run.not_hidden_share(),
                run.measure
            );
            rows.push((mode, run));
        }
        Ok(rows)
    }

    /// Part 4: XgemmDirect at IS1-IS4 against cuBLAS.
    fn xgemm(cuda: &Arc<Cuda>, budget: Budget) -> Result<((f64, f64), Vec<GemmVsCublas>)> {
        let floor = common::launch_floor(cuda.clone())?;
        println!(
            "launch floor (an empty kernel): {:.2} us launched alone, {:.2} us per launch back to back",
            floor.0 * 1e6,
            floor.1 * 1e6
        );
        let mut rows = Vec::new();
        // (M, N, K): IS1 20x1*1x576, IS2 20x25*25x576, IS3 50x1*1x64, IS4 10x64*64x500.
        for (i, (label, shape)) in [
            ("IS1", (20, 576, 1)),
            ("IS2", (20, 576, 25)),
            ("IS3", (50, 64, 1)),
            ("IS4", (10, 500, 64)),
        ]
        .into_iter()
        .enumerate()
        {
            let options = Options::new(3 + i as u64);
            let gemm = Gemm::new(shape.0, shape.1, shape.2);
            match cc::xgemm_direct_vs_cublas(cuda, label, gemm, budget, options) {
                Ok(r) => rows.push(r),
                Err(e @ Error::NoValidConfiguration { .. }) => println!("{label}: {e}"),
                Err(e) => return Err(e),
            }
            println!();
        }
        Ok((floor, rows))
    }

    /// Part 5: Kernel Tuner's throughput case, 100 random evaluations, every one in full.
    fn kt(cuda: &Arc<Cuda>, budget: Budget) -> Result<Run> {
        let options = Options {
            technique: Some(TechniqueKind::Random),
            record: false,
            // Kernel Tuner runs each configuration's 7 iterations: so does this.
            slower_than_best: Some(f64::INFINITY),
            ..Options::new(1)
        };
        let (_, r) = common::tune_study(cuda.clone(), &KtMatmul { n: 2048 }, budget, options)?;
        Ok(Run::of(&r))
    }

    pub fn run() -> Result<()> {
        let plan = Plan::from_env();
        let out_dir = std::env::args().nth(1);
        let cuda = Arc::new(common::cli::open_cuda()?);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut report = String::new();
        writeln!(
            report,
            "device: {}; NVRTC {:?}; arch {}; {threads} cores; {} run; parts {:?}",
            tune::backend::Backend::device(cuda.as_ref()).describe(),
            tune::cuda::nvrtc_version(),
            cuda.arch().option(),
            if plan.quick { "quick" } else { "full" },
            plan.parts
        )
        .ok();
        println!("{}", report.trim_end());
        let t0 = std::time::Instant::now();

        // cuBLAS at 4096^3: the baseline of part 1 and the reference product of parts 1, 3.
        let mut at_4096 = None;
        if plan.runs(1) || plan.runs(3) {
            at_4096 = Some(cublas_at(&cuda, 4096)?);
        }

        // --- 3 first: compile share without and with the pipeline ----------------------
        let mut modes = Vec::new();
        if let (true, Some((_, product))) = (plan.runs(3), &at_4096) {
            modes = pipeline(&cuda, product, plan.pipeline)?;
        }

        // --- 1, 2: SGEMM against cuBLAS ----------------------------------------------------
        let mut rows = Vec::new();
        let mut carry = Vec::new();
        for &(part, size, budget) in &plan.sgemm {
            if !plan.runs(part) {
                continue;
            }
            let baseline = match at_4096.take() {
                Some(b) if size == 4096 => b,
                _ => cublas_at(&cuda, size)?,
            };
            let (row, top) = sgemm(&cuda, size, baseline, budget, &carry)?;
            rows.push(row);
            carry = top;
            println!();
        }

        // --- 4: XgemmDirect at ATF's deep-learning sizes ---------------------------------
        let (floor, xrows) = if plan.runs(4) {
            xgemm(&cuda, plan.xgemm)?
        } else {
            ((0.0, 0.0), Vec::new())
        };

        // --- 5: Kernel Tuner's throughput case -------------------------------------------
        let kt = if plan.runs(5) {
            Some(kt(&cuda, plan.kt)?)
        } else {
            None
        };

        // --- Report ------------------------------------------------------------------------
        writeln!(
            report,
            "bench wall time: {:.0} s",
            t0.elapsed().as_secs_f64()
        )
        .ok();
        if !rows.is_empty() {
            writeln!(report, "\n### SGEMM against cuBLAS (1, 2)\n").ok();
            writeln!(report, "| size | cuBLAS SGEMM | tuned SGEMM | of cuBLAS | evaluated / valid | tuning wall | evals/s | compile CPU | compile not hidden | failures |").ok();
            writeln!(report, "|---|---|---|---|---|---|---|---|---|---|").ok();
            for r in &rows {
                let (s, x) = (r.size, &r.run);
                writeln!(
                    report,
                    "| {s}^3 | {:.3} ms ({:.1} TFLOP/s) | {:.3} ms ({:.1} TFLOP/s) | **{:.1}%** | {} / {} | {:.1} s | {:.2} | {:.1} s | {:.1} s ({:.0}%) | {:?} |",
                    r.cublas * 1e3,
                    tflops(s, r.cublas),
                    x.best * 1e3,
                    tflops(s, x.best),
                    100.0 * r.cublas / x.best,
                    x.evaluations,
                    x.valid,
                    x.wall,
                    x.rate(),
                    x.compile,
                    x.not_hidden,
                    x.not_hidden_share(),
                    x.failures
                )
                .ok();
            }
            for r in &rows {
                writeln!(report, "\nbest at {}^3: `{}`", r.size, r.best).ok();
            }
        }
        if !modes.is_empty() {
            writeln!(
                report,
                "\n### Compile share without and with the pipeline (3)\n"
            )
            .ok();
            writeln!(
                report,
                "| mode (SGEMM 4096^3, the same {} random configurations) | evaluated | wall | evals/s | compile CPU (sum of prepare_s) | compile not hidden (share of wall) | measuring (sum of run_s) |",
                plan.pipeline
            )
            .ok();
            writeln!(report, "|---|---|---|---|---|---|---|").ok();
            for (mode, x) in &modes {
                writeln!(
                    report,
                    "| {mode} | {} | {:.1} s | {:.2} | {:.1} s | {:.1} s ({:.0}%) | {:.1} s |",
                    x.evaluations,
                    x.wall,
                    x.rate(),
                    x.compile,
                    x.not_hidden,
                    x.not_hidden_share(),
                    x.measure
                )
                .ok();
            }
            writeln!(report, "\nNVRTC caches compilations within a process: the serial mode runs first, after one untimed compilation of an empty kernel, and each mode adds its own empty kernel to the source, so both compile every configuration from scratch.").ok();
        }
        if !xrows.is_empty() {
            writeln!(report, "\n### XgemmDirect against cuBLAS (4)\n").ok();
            report.push_str(&common::cuda::GemmVsCublas::table(&xrows));
            writeln!(
                report,
                "\nLaunch floor (an empty kernel): {:.2} us launched alone, {:.2} us per launch back to back.",
                floor.0 * 1e6,
                floor.1 * 1e6
            )
            .ok();
        }
        if let Some(x) = &kt {
            writeln!(report, "\n### Kernel Tuner's throughput case (5)\n").ok();
            writeln!(report, "| kt_matmul.cu, n = 2048, random search, 7 iterations each, no validation | evaluated | evaluations/s | wall | compile CPU | compile not hidden | best kernel time |").ok();
            writeln!(report, "|---|---|---|---|---|---|---|").ok();
            writeln!(
                report,
                "| tune (parallel compile pipeline, batch {threads}) | {} | {:.1} | {:.1} s | {:.1} s | {:.2} s | {:.3} ms |",
                x.evaluations,
                x.rate(),
                x.wall,
                x.compile,
                x.not_hidden,
                x.best * 1e3
            )
            .ok();
        }
        println!("\n{report}");
        if let Some(dir) = out_dir {
            let path = std::path::Path::new(&dir).join("cuda_bench.md");
            std::fs::write(&path, &report).map_err(|e| Error::Io {
                path: path.display().to_string(),
                source: e,
            })?;
            println!("report written to {}", path.display());
        }
        Ok(())
    }
}
