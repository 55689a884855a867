//! Throughput of a tuning run across MPI ranks on this machine: a closure evaluator that
//! takes a fixed time per configuration, tuned in one process, then by 4 ranks under
//! `mpirun` (each rank one device); evaluations per second of the search, side by side.
//!
//! ```text
//! cargo bench -p tune-runtime --features mpi --bench scale_mpi
//! ```
//!
//! Environment: `TUNE_MPI_DELAY_MS` (time per configuration, default 20), `TUNE_MPI_RANKS`
//! (default 4), `TUNE_MPI_SECONDS` (length of each run, default 4), `TUNE_MPI_REPEATS`
//! (default 3). Needs `mpirun` (OpenMPI: run as root, it is given `--allow-run-as-root`'s
//! variables). Under `cargo test --benches` it only makes a short run in one process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::Duration;

use tune_runtime::abort::Evaluations;
use tune_runtime::evaluate::closure::Closure;
use tune_runtime::measure::Remeasure;
use tune_runtime::scale::mpi::Cluster;
use tune_runtime::search::Random;
use tune_runtime::{Config, Failure, Param, SpaceBuilder, Tuner};

const ROLE: &str = "TUNE_SCALE_MPI_ROLE";

fn env(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Tunes `evaluations` configurations that take `delay` each; returns evaluations per second
/// of the search (rank 0), or `None` on the other ranks.
fn tune(cluster: Option<&Cluster>, delay: Duration, evaluations: u64) -> Option<f64> {
    let space = SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..100_000))
        .build()
        .unwrap();
    let eval = Closure::new(move |c: &Config| -> Result<f64, Failure> {
        std::thread::sleep(delay);
        Ok(f64::from(c.get::<u32>(0)))
    });
    let tuner = Tuner::new(space, eval)
        .technique(Random::new())
        .abort(Evaluations(evaluations))
        .remeasure(Remeasure::off())
        .progress(false);
    let result = match cluster {
        Some(c) => c.tune(tuner).unwrap()?,
        None => tuner.run().unwrap(),
    };
    assert_eq!(result.evaluations, evaluations);
    Some(result.evaluations as f64 / result.elapsed.as_secs_f64())
}

fn main() {
    let delay = Duration::from_millis(env("TUNE_MPI_DELAY_MS", 20));
    let ranks = env("TUNE_MPI_RANKS", 4);
    let seconds = env("TUNE_MPI_SECONDS", 4);
    let per_second = 1.0 / delay.as_secs_f64();
    if std::env::var(ROLE).is_ok() {
        let cluster = Cluster::init().unwrap();
        let n = (per_second * seconds as f64) as u64 * ranks;
        if let Some(rate) = tune(Some(&cluster), delay, n) {
            println!("RATE {rate}");
        }
        return;
    }
    let smoke = !std::env::args().any(|a| a == "--bench");
    if smoke {
        let rate = tune(None, Duration::from_millis(1), 20).unwrap();
        eprintln!("scale_mpi: smoke run, one process: {rate:.0} evaluations/s");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    println!(
        "closure evaluator, {} ms per configuration, {ranks} ranks of one device each, \
         runs of about {seconds} s",
        delay.as_millis()
    );
    println!("| run | one process (evaluations/s) | {ranks} ranks (evaluations/s) | ratio |");
    println!("|---|---|---|---|");
    for k in 0..env("TUNE_MPI_REPEATS", 3) {
        let one = tune(None, delay, (per_second * seconds as f64) as u64).unwrap();
        let out = Command::new("mpirun")
            .args(["-np", &ranks.to_string(), "--oversubscribe"])
            .arg(&exe)
            .arg("--bench")
            .env(ROLE, "rank")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("mpirun (install OpenMPI)");
        let text = String::from_utf8_lossy(&out.stdout);
        let many: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("RATE "))
            .and_then(|r| r.trim().parse().ok())
            .unwrap_or_else(|| {
                panic!(
                    "no rate from mpirun: {text}{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        println!("| {} | {one:.1} | {many:.1} | {:.2}x |", k + 1, many / one);
    }
}
