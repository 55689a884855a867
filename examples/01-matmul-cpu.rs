//! Tunes a blocked matrix multiply on the CPU: no GPU, no OpenCL needed.
//!
//! ```text
//! cargo run --release --example 01-matmul-cpu            # a short run (60 evaluations)
//! cargo run --release --example 01-matmul-cpu -- 512 full  # n = 512, the whole space
//! ```
//!
//! Tile sizes, the unroll factor of the inner loop and the number of threads are tuning
//! parameters. `#[tunable]` generates, beside `matmul`:
//! - `MatmulConfig::tuner_with(a, b, c, n, check)`: a tuner that calls `matmul` with each
//!   configuration, times it (median of 3 calls after an untimed one that `check` validates
//!   against a naive reference), with the technique and abort condition of the attribute;
//! - `MatmulConfig::best(a, b, c, n)`: the configuration production code runs, from the
//!   tuning database, and where it came from; `matmul_auto(a, b, c, n)` calls `matmul` with it.
//!
//! Results go to `target/tune/matmul_cpu.jsonl` (every evaluation) and `tuning/matmul_cpu/`
//! (the best configuration per CPU and matrix size, where `best` looks it up; `$TUNE_DB`
//! names another folder).

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tune::abort::WholeSpace;
use tune::Failure;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |c| c.get())
}

/// `c = a * b` for `n x n` row-major matrices, blocked in `mt x nt x kt` tiles, the inner
/// loop unrolled `unroll` times, rows of tiles shared among `threads` threads.
#[tune::tunable(
    name = "matmul_cpu",
    technique = bandit,
    abort = evaluations(60) | duration(30s),
    repetitions = 3,
    input(n = n),
    device = cpu_name(),
)]
#[allow(clippy::too_many_arguments)] // the tuning parameters are arguments
fn matmul(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    n: usize,
    #[tp([4, 8, 16, 32, 64, 128, 256], divides(n))] mt: usize,
    #[tp([4, 8, 16, 32, 64, 128, 256], divides(n))] nt: usize,
    #[tp([4, 8, 16, 32, 64, 128, 256], divides(n))] kt: usize,
    #[tp([1, 2, 4, 8], divides(nt))] unroll: usize,
    // Every thread gets at least one block of rows.
    #[tp((0..8).map(|p| 1usize << p).filter(|&t| t <= cores()), at_most(n / mt))] threads: usize,
) {
    let p = (mt, nt, kt, threads);
    match unroll {
        1 => blocked::<1>(a, b, c, n, p),
        2 => blocked::<2>(a, b, c, n, p),
        4 => blocked::<4>(a, b, c, n, p),
        _ => blocked::<8>(a, b, c, n, p),
    }
}

fn blocked<const U: usize>(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    n: usize,
    (mt, nt, kt, threads): (usize, usize, usize, usize),
) {
    c.fill(0.0);
    let row_blocks = n / mt;
    let per_thread = row_blocks.div_ceil(threads);
    std::thread::scope(|s| {
        for (t, chunk) in c.chunks_mut(per_thread * mt * n).enumerate() {
            s.spawn(move || {
                let first_row = t * per_thread * mt;
                for (bi, block) in chunk.chunks_mut(mt * n).enumerate() {
                    let i0 = first_row + bi * mt;
                    for j0 in (0..n).step_by(nt) {
                        for k0 in (0..n).step_by(kt) {
                            for (ii, crow) in block.chunks_exact_mut(n).enumerate() {
                                let arow = &a[(i0 + ii) * n..][..n];
                                let crow = &mut crow[j0..j0 + nt];
                                for k in k0..k0 + kt {
                                    let aik = arow[k];
                                    let brow = &b[k * n + j0..][..nt];
                                    for (cs, bs) in
                                        crow.chunks_exact_mut(U).zip(brow.chunks_exact(U))
                                    {
                                        // A fixed-size loop: the compiler unrolls it.
                                        for (x, y) in cs.iter_mut().zip(bs) {
                                            *x += aik * y;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            });
        }
    });
}

fn naive(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            for j in 0..n {
                c[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    c
}

/// The CPU's model name, so results from different machines do not mix.
fn cpu_name() -> String {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{model} ({threads} threads)")
}

fn main() -> tune::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let full = args.next().is_some_and(|a| a == "full");
    let mut rng = SmallRng::seed_from_u64(7);
    let a: Vec<f32> = (0..n * n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let b: Vec<f32> = (0..n * n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let space = MatmulConfig::space(&a, &b, &vec![0.0; n * n], n)?;
    println!("matmul n={n}: {} valid configurations", space.len());
    let t = Instant::now();
    let reference = naive(&a, &b, n);
    let naive_time = t.elapsed();

    let mut c = vec![0.0f32; n * n];
    let tolerance = 1e-4 * n as f32;
    // Every configuration's first call is checked against the reference.
    let check = |_: &(), _: &[f32], _: &[f32], c: &[f32], _: &usize| -> Result<(), Failure> {
        match c
            .iter()
            .zip(&reference)
            .enumerate()
            .find(|(_, (x, y))| (*x - *y).abs() > tolerance)
        {
            Some((i, (x, y))) => Err(Failure::WrongResult(format!("c[{i}] = {x}, expected {y}"))),
            None => Ok(()),
        }
    };
    let mut tuner = MatmulConfig::tuner_with(&a, &b, &mut c, n, check)?
        .seed(1)
        .log("target/tune/matmul_cpu.jsonl");
    if full {
        tuner = tuner.abort(WholeSpace);
    }
    let result = tuner.run()?;

    println!("{}", result.summary());
    let best = result.best.cost.unwrap_or_default();
    println!(
        "naive triple loop: {naive_time:.2?}; best tuned: {best:.2?} (speedup {:.1}x)",
        naive_time.as_secs_f64() / best.as_secs_f64().max(1e-12)
    );
    // What production code gets for this CPU and size, and for a size never tuned.
    let (cfg, choice) = MatmulConfig::best(&a, &b, &c, n)?;
    println!("dispatch for n={n}: {cfg} ({})", choice.source);
    let m = 2 * n;
    let (a2, b2) = (vec![1.0f32; m * m], vec![1.0f32; m * m]);
    let mut c2 = vec![0.0f32; m * m];
    let (cfg, choice) = MatmulConfig::best(&a2, &b2, &c2, m)?;
    let from = choice
        .input_key
        .map(|k| format!(": {k}"))
        .unwrap_or_default();
    println!("dispatch for n={m}: {cfg} ({}{from})", choice.source);
    matmul_auto(&a2, &b2, &mut c2, m)?;
    assert!(
        c2.iter().all(|&x| x == m as f32),
        "the dispatched matmul is wrong"
    );
    Ok(())
}
