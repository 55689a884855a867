//! The CUDA bench: in one process, on one GPU,
//! 1. cuBLAS SGEMM (TF32 off: default math mode, `cublasSgemm`) at 4096^3 and 8192^3,
//! 2. tune's SGEMM (kernels/sgemm.cu) tuned at both sizes with a bounded budget, timed the
//!    same way (CUDA events around each launch, median), validated against cuBLAS,
//! 3. compilation's share of tuning time without and with the parallel compile pipeline,
//! 4. XgemmDirect at ATF's sizes IS1-IS4 against cuBLAS,
//! 5. Kernel Tuner's throughput case (bench/gpu matmul.cu, n = 2048, 100 random
//!    evaluations of 7 iterations): evaluations per second.
//!
//! Run: `cargo run --release --features cuda --example cuda_bench [OUT_DIR]`
//! (environment: `TUNE_BENCH_QUICK=1` for a short run, `TUNE_CUDA_DEVICE` index or name).

#[cfg(feature = "cuda")]
#[path = "common/cuda.rs"]
mod common;

#[cfg(feature = "cuda")]
fn main() {
    if let Err(e) = bench::run() {
        eprintln!("cuda_bench: {e}");
        // No CUDA (CI, laptops): report and succeed, so `cargo test --examples` stays green.
        if matches!(e, tune::Error::BackendUnavailable { .. }) {
            return;
        }
        std::process::exit(1);
    }
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("cuda_bench needs `--features cuda`");
}

#[cfg(feature = "cuda")]
mod bench {
    use std::fmt::Write as _;
    use std::sync::Arc;
    use std::time::Instant;

    use tune::backend::KernelEvaluator;
    use tune::cuda::Cuda;
    use tune::{Error, Result, Space};

    use super::common::{self, Search, TuneStats};

    fn tflops(m: usize, n: usize, k: usize, secs: f64) -> f64 {
        2.0 * (m * n * k) as f64 / secs / 1e12
    }

    fn describe(space: &Space, st: &TuneStats) -> String {
        st.best
            .as_ref()
            .map_or("none".into(), |(c, _)| space.describe(c))
    }

    struct Row {
        size: usize,
        cublas: f64,
        tuned: f64,
        best: String,
        stats: TuneStats,
    }

    pub fn run() -> Result<()> {
        let quick = std::env::var("TUNE_BENCH_QUICK").is_ok();
        let out_dir = std::env::args().nth(1);
        let selector: tune::cuda::DeviceSelector = match std::env::var("TUNE_CUDA_DEVICE") {
            Ok(s) => match s.parse::<usize>() {
                Ok(i) => i.into(),
                Err(_) => s.as_str().into(),
            },
            Err(_) => 0.into(),
        };
        let cuda = Arc::new(Cuda::open(selector)?);
        let mut report = String::new();
        let dev = tune::backend::Backend::device(cuda.as_ref()).describe();
        let nvrtc = tune::cuda::nvrtc_version();
        let threads = rayon::current_num_threads();
        writeln!(
            report,
            "device: {dev}; NVRTC {nvrtc:?}; arch {}; {threads} compile threads",
            cuda.arch().option()
        )
        .ok();
        println!("{}", report.trim_end());

        // --- 1-3: SGEMM ------------------------------------------------------------------
        let sizes: &[(usize, usize, usize)] = if quick {
            &[(4096, 40, 8)]
        } else {
            &[(4096, 160, 16), (8192, 64, 16)]
        };
        let mut rows: Vec<Row> = Vec::new();
        let mut carry: Vec<tune::Config> = Vec::new();
        let mut pipeline_cmp = String::new();
        for &(size, budget, batch) in sizes {
            let (m, n, k) = (size, size, size);
            let a = common::random_f32(m * k, 11);
            let b = common::random_f32(k * n, 12);
            let (t_cublas, c_ref) = common::cublas_sgemm(&cuda, m, n, k, &a, &b, 20)?;
            println!(
                "[{size}] cuBLAS SGEMM {:.3} ms = {:.1} TFLOP/s",
                t_cublas * 1e3,
                tflops(m, n, k, t_cublas)
            );
            let space = common::sgemm_space(m as u32, n as u32, k as u32)?;
            println!("[{size}] SGEMM space: {} valid configurations", space.len());
            // A hand-written starting point (the classic 128x128x8, 8x8 per thread).
            let classic = space.config_from_values(
                [
                    ("BM", 128),
                    ("BN", 128),
                    ("BK", 8),
                    ("TM", 8),
                    ("TN", 8),
                    ("VA", 4),
                    ("VB", 4),
                    ("PADA", 4),
                    ("PADB", 0),
                    ("DB", 1),
                    ("UNR", 1),
                    ("SWZ", 8),
                    ("MINB", 2),
                ]
                .map(|(k, v)| (k, tune::Value::Int(v))),
            );
            let mut start: Vec<u128> = Vec::new();
            if let Ok(c) = &classic {
                start.extend(space.index_of(c));
            }
            start.extend(carry.iter().filter_map(|c| space.index_of(c)));

            let only_pipeline = std::env::var("TUNE_BENCH_ONLY").as_deref() == Ok("pipeline");
            if size == 4096 {
                // Compile share without and with the pipeline, on the same random configs.
                let n_cmp = if quick { 8 } else { 16 };
                let order: &[bool] =
                    if std::env::var("TUNE_BENCH_ONLY").as_deref() == Ok("pipeline") {
                        &[true, false, true, false]
                    } else {
                        &[false, true]
                    };
                for &pipelined in order {
                    let spec = common::sgemm_spec(
                        m as u32,
                        n as u32,
                        k as u32,
                        a.clone(),
                        b.clone(),
                        Some(c_ref.clone()),
                    );
                    let eval = KernelEvaluator::new(cuda.clone(), &space, spec)?;
                    let mut search = Search::new(99, usize::MAX, Vec::new());
                    let st = common::tune_loop(&eval, &space, &mut search, n_cmp, 16, pipelined);
                    let line = format!(
                        "| {} | {} | {:.1} s | {:.2} | {:.1} s | {:.1} s ({:.0}%) | {:.1} s |",
                        if pipelined {
                            "parallel pipeline"
                        } else {
                            "serial compile"
                        },
                        st.evaluated,
                        st.wall.as_secs_f64(),
                        st.evaluated as f64 / st.wall.as_secs_f64(),
                        st.compile_cpu.as_secs_f64(),
                        st.compile_wait.as_secs_f64(),
                        100.0 * st.compile_wait.as_secs_f64() / st.wall.as_secs_f64(),
                        st.measure.as_secs_f64(),
                    );
                    println!("{line}");
                    pipeline_cmp.push_str(&line);
                    pipeline_cmp.push('\n');
                }
            }
            if only_pipeline {
                println!("{pipeline_cmp}");
                return Ok(());
            }

            let spec = common::sgemm_spec(m as u32, n as u32, k as u32, a, b, Some(c_ref));
            let eval = KernelEvaluator::new(cuda.clone(), &space, spec)?;
            let mut search = Search::new(7, budget / 2, start);
            let st = common::tune_loop(&eval, &space, &mut search, budget, batch, true);
            let best = describe(&space, &st);
            let tuned = st.best.as_ref().map_or(f64::NAN, |(_, t)| *t);
            println!(
                "[{size}] tuned: {} evaluated, {} valid, {:.1} s wall ({:.2} evals/s), best {:.3} ms = {:.1} TFLOP/s = {:.1}% of cuBLAS: {best}; failures {:?}",
                st.evaluated, st.valid, st.wall.as_secs_f64(), st.evaluated as f64 / st.wall.as_secs_f64(),
                tuned * 1e3, tflops(m, n, k, tuned), 100.0 * t_cublas / tuned, st.failures
            );
            for (kind, msg) in &st.first_failure {
                println!("    first {kind}: {}", msg.replace('\n', " | "));
            }
            // The best few configurations seed the next size.
            let mut hist = st.history.clone();
            hist.sort_by(|x, y| x.1.total_cmp(&y.1));
            for (c, t) in hist.iter().take(5) {
                println!(
                    "    {:.3} ms {:.1} TFLOP/s  {}",
                    t * 1e3,
                    tflops(m, n, k, *t),
                    space.describe(c)
                );
            }
            carry = hist.iter().take(6).map(|(c, _)| c.clone()).collect();
            rows.push(Row {
                size,
                cublas: t_cublas,
                tuned,
                best,
                stats: st,
            });
        }

        // --- 4: XgemmDirect at ATF's deep-learning sizes --------------------------------
        let mut xrows = Vec::new();
        let xspace = common::xgemm_direct_space()?;
        println!("XgemmDirect space: {} valid configurations", xspace.len());
        for (seed, (label, m, k, n)) in [
            ("IS1", 20, 1, 576),
            ("IS2", 20, 25, 576),
            ("IS3", 50, 1, 64),
            ("IS4", 10, 64, 500),
        ]
        .into_iter()
        .enumerate()
        {
            let a = common::random_f32(m * k, 5);
            let b = common::random_f32(k * n, 6);
            let (t_cublas, _) = common::cublas_sgemm(&cuda, m, n, k, &a, &b, 50)?;
            let spec = common::xgemm_direct_spec(m, n, k, 5);
            let eval = KernelEvaluator::new(cuda.clone(), &xspace, spec)?;
            let mut search = Search::new(3 + seed as u64, if quick { 30 } else { 120 }, Vec::new());
            let budget = if quick { 40 } else { 200 };
            let st = common::tune_loop(&eval, &xspace, &mut search, budget, 32, true);
            let tuned = st.best.as_ref().map_or(f64::NAN, |(_, t)| *t);
            println!(
                "[{label} {m}x{k}*{k}x{n}] cuBLAS {:.2} us, tuned {:.2} us ({:.2}x), {} evaluated / {} valid in {:.1} s; best {}; failures {:?}",
                t_cublas * 1e6, tuned * 1e6, t_cublas / tuned, st.evaluated, st.valid, st.wall.as_secs_f64(),
                describe(&xspace, &st), st.failures
            );
            xrows.push((label, m, k, n, t_cublas, tuned, describe(&xspace, &st), st));
        }

        // --- 5: Kernel Tuner's throughput case -----------------------------------------
        let kspace = common::kt_matmul_space()?;
        let kt_n = 2048;
        let eval = KernelEvaluator::new(cuda.clone(), &kspace, common::kt_matmul_spec(kt_n))?;
        let mut search = Search::new(1, usize::MAX, Vec::new());
        let kt = common::tune_loop(&eval, &kspace, &mut search, 100, 16, true);
        let kt_best = kt.best.as_ref().map_or(f64::NAN, |(_, t)| *t);
        println!(
            "[KT matmul n=2048] {} valid configs in space; {} evaluated in {:.2} s = {:.1} evals/s; compile {:.2} s CPU, {:.2} s exposed; best {:.3} ms",
            kspace.len(), kt.evaluated, kt.wall.as_secs_f64(), kt.evaluated as f64 / kt.wall.as_secs_f64(),
            kt.compile_cpu.as_secs_f64(), kt.compile_wait.as_secs_f64(), kt_best * 1e3
        );

        // --- Report ----------------------------------------------------------------------
        writeln!(report, "\n| size | cuBLAS SGEMM | tuned SGEMM | ratio | evaluated / valid | tuning wall | evals/s | compile CPU | compile exposed |").ok();
        writeln!(report, "|---|---|---|---|---|---|---|---|---|").ok();
        for r in &rows {
            let s = r.size;
            writeln!(
                report,
                "| {s}^3 | {:.3} ms ({:.1} TFLOP/s) | {:.3} ms ({:.1} TFLOP/s) | **{:.1}%** | {} / {} | {:.1} s | {:.2} | {:.1} s | {:.1} s ({:.0}%) |",
                r.cublas * 1e3, tflops(s, s, s, r.cublas), r.tuned * 1e3, tflops(s, s, s, r.tuned),
                100.0 * r.cublas / r.tuned, r.stats.evaluated, r.stats.valid, r.stats.wall.as_secs_f64(),
                r.stats.evaluated as f64 / r.stats.wall.as_secs_f64(), r.stats.compile_cpu.as_secs_f64(),
                r.stats.compile_wait.as_secs_f64(), 100.0 * r.stats.compile_wait.as_secs_f64() / r.stats.wall.as_secs_f64()
            ).ok();
        }
        for r in &rows {
            writeln!(report, "\nbest at {}^3: `{}`", r.size, r.best).ok();
        }
        writeln!(report, "\n| mode (SGEMM 4096^3, same configurations) | evaluated | wall | evals/s | compile CPU | compile exposed (share of wall) | measuring |").ok();
        writeln!(report, "|---|---|---|---|---|---|---|").ok();
        report.push_str(&pipeline_cmp);
        writeln!(
            report,
            "\n| shape | cuBLAS | tuned XgemmDirect | speed-up | evaluated / valid | wall | best |"
        )
        .ok();
        writeln!(report, "|---|---|---|---|---|---|---|").ok();
        for (label, m, k, n, tc, tt, best, st) in &xrows {
            writeln!(
                report,
                "| {label} {m}x{k}*{k}x{n} | {:.2} us | {:.2} us | {:.2}x | {} / {} | {:.1} s | `{best}` |",
                tc * 1e6, tt * 1e6, tc / tt, st.evaluated, st.valid, st.wall.as_secs_f64()
            ).ok();
        }
        writeln!(report, "\n| Kernel Tuner case (matmul.cu, n=2048, 100 random evaluations x 7 iterations) | evaluations/s | wall | compile CPU | compile exposed | best kernel time |").ok();
        writeln!(report, "|---|---|---|---|---|---|").ok();
        writeln!(
            report,
            "| tune (parallel compile pipeline) | {:.1} | {:.1} s | {:.2} s | {:.2} s | {:.3} ms |",
            kt.evaluated as f64 / kt.wall.as_secs_f64(),
            kt.wall.as_secs_f64(),
            kt.compile_cpu.as_secs_f64(),
            kt.compile_wait.as_secs_f64(),
            kt_best * 1e3
        )
        .ok();
        println!("\n{report}");
        if let Some(dir) = out_dir {
            std::fs::write(format!("{dir}/cuda_bench.md"), &report).map_err(|e| Error::Io {
                path: dir.clone(),
                source: e,
            })?;
        }
        let _ = Instant::now();
        Ok(())
    }
}
