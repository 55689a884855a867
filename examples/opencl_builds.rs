//! How fast programs build on an OpenCL device, in the tuning process and in builder
//! processes (`OpenCl::build_processes`): distinct XgemmDirect configurations compiled from
//! several threads at once, as the tuner's preparation threads do, and the ratio.
//!
//! `cargo run --release --features opencl --example opencl_builds -- [PROGRAMS] [THREADS] [BUILDERS]`
//! (defaults 48, 16, 8; `TUNE_OPENCL_DEVICE` picks the device). Each mode builds programs
//! that differ from every other (a define of their own), so no driver cache serves one mode
//! with the other's work.
use std::time::Instant;

use tune::backend::opencl::OpenCl;
use tune::backend::{Backend, CompileRequest};

const SOURCE: &str = include_str!("../kernels/xgemm_direct.cl");

/// The defines of program `i`: a few tile shapes and vector widths, and an id of its own.
fn defines(i: usize) -> Vec<(String, String)> {
    let wgd = [16, 32, 64][i % 3];
    let vw = [1, 2, 4][(i / 3) % 3];
    [
        ("WGD", wgd),
        ("MDIMCD", 8),
        ("NDIMCD", 8),
        ("MDIMAD", 8),
        ("NDIMBD", 8),
        ("KWID", 2),
        ("VWMD", vw),
        ("VWND", vw),
        ("PADA", 1),
        ("PADB", 1),
        ("PROGRAM_ID", i),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Builds programs `first..first + count` on `threads` threads; builds per second.
fn builds_per_second(
    backend: &OpenCl,
    first: usize,
    count: usize,
    threads: usize,
) -> tune::Result<f64> {
    let start = Instant::now();
    let failures = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let failures = &failures;
            s.spawn(move || {
                for i in (first + t..first + count).step_by(threads) {
                    let d = defines(i);
                    let r = backend.compile(&CompileRequest {
                        source: SOURCE,
                        kernel: "xgemm_direct",
                        defines: &d,
                        options: &[],
                    });
                    if let Err(f) = r {
                        eprintln!("program {i}: {f}");
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let failed = failures.into_inner();
    if failed > 0 {
        return Err(tune::Error::Backend {
            backend: "opencl".into(),
            message: format!("{failed} of {count} builds failed"),
        });
    }
    Ok(count as f64 / start.elapsed().as_secs_f64())
}

fn main() -> tune::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let programs = args.first().copied().unwrap_or(48);
    let threads = args.get(1).copied().unwrap_or(16).max(1);
    let builders = args.get(2).copied().unwrap_or(8);
    let device = std::env::var("TUNE_OPENCL_DEVICE").unwrap_or_default();
    let here = OpenCl::select(&device)?.build_processes(0);
    println!(
        "{} ({}): {programs} programs on {threads} threads",
        here.device().name,
        here.device().platform
    );
    let local = builds_per_second(&here, 0, programs, threads)?;
    println!("in the tuning process:   {local:.2} builds/s");
    drop(here);
    let farm = OpenCl::select(&device)?.build_processes(builders);
    // The builders start with the first builds: their start is part of the figure.
    let remote = builds_per_second(&farm, programs, programs, threads)?;
    if let Some(why) = farm.build_processes_failed() {
        println!("the builder processes stopped serving: {why}");
    }
    println!("in {builders} builder processes: {remote:.2} builds/s");
    println!(
        "RATIO builds/s, builders / in-process: {:.2}x",
        remote / local
    );
    Ok(())
}
