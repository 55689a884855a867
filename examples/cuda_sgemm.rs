//! The tunable SGEMM (CLBlast Xgemm class) on CUDA: tunes C = A * B at one size, validated
//! against a host reference on a sample of rows, and prints the best configuration.
//! `cargo run --release --features cuda --example cuda_sgemm [SIZE] [BUDGET]`
//! (cuda_bench compares with cuBLAS.)

#[cfg(feature = "cuda")]
#[path = "common/cuda.rs"]
mod common;

#[cfg(feature = "cuda")]
fn main() -> tune::Result<()> {
    use std::sync::Arc;
    use tune::backend::KernelEvaluator;
    use tune::cuda::Cuda;

    let mut args = std::env::args().skip(1);
    let size: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2048);
    let budget: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(80);
    let cuda = match Cuda::open(0) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("{e}");
            return Ok(());
        }
    };
    let (m, n, k) = (size, size, size);
    let a = common::random_f32(m * k, 11);
    let b = common::random_f32(k * n, 12);
    // Host reference in f64, on all cores.
    let mut c = vec![0f32; m * n];
    {
        use rayon::prelude::*;
        c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            let mut acc = vec![0f64; n];
            for l in 0..k {
                let x = f64::from(a[i * k + l]);
                for (j, s) in acc.iter_mut().enumerate() {
                    *s += x * f64::from(b[l * n + j]);
                }
            }
            for (o, s) in row.iter_mut().zip(acc) {
                *o = s as f32;
            }
        });
    }
    let space = common::sgemm_space(m as u32, n as u32, k as u32)?;
    let spec = common::sgemm_spec(m as u32, n as u32, k as u32, a, b, Some(c));
    let eval = KernelEvaluator::<Cuda>::new(cuda, &space, spec)?;
    let mut search = common::Search::new(7, budget / 2, Vec::new());
    let st = common::tune_loop(&eval, &space, &mut search, budget, 16, true);
    if let Some((cfg, t)) = &st.best {
        println!(
            "SGEMM {size}^3: {:.3} ms = {:.1} TFLOP/s; {}",
            t * 1e3,
            2.0 * (m * n * k) as f64 / t / 1e12,
            space.describe(cfg)
        );
    }
    println!(
        "{} of {} configurations evaluated, {} valid, in {:.1} s; failures {:?}",
        st.evaluated,
        space.len(),
        st.valid,
        st.wall.as_secs_f64(),
        st.failures
    );
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
