//! CLBlast's XgemmDirect on CUDA with ATF's ranges, at ATF's deep-learning sizes IS1-IS4
//! and 1024^3; prints the best configuration, its time and GFLOP/s, and cuBLAS SGEMM on the
//! same shape timed the same way.
//! `cargo run --release --features cuda --example cuda_xgemm_direct [BUDGET]`

#[cfg(feature = "cuda")]
#[path = "common/cuda.rs"]
mod common;

#[cfg(feature = "cuda")]
fn main() -> tune::Result<()> {
    use std::sync::Arc;
    use tune::backend::KernelEvaluator;
    use tune::cuda::Cuda;

    let budget: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let cuda = match Cuda::open(0) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("{e}");
            return Ok(());
        }
    };
    let space = common::xgemm_direct_space()?;
    println!("XgemmDirect: {} valid configurations", space.len());
    for (label, m, k, n) in [
        ("IS1", 20, 1, 576),
        ("IS2", 20, 25, 576),
        ("IS3", 50, 1, 64),
        ("IS4", 10, 64, 500),
        ("1024", 1024, 1024, 1024),
    ] {
        let a = common::random_f32(m * k, 5);
        let b = common::random_f32(k * n, 6);
        let (t_cublas, _) = common::cublas_sgemm(&cuda, m, n, k, &a, &b, 50)?;
        let eval = KernelEvaluator::<Cuda>::new(
            cuda.clone(),
            &space,
            common::xgemm_direct_spec(m, n, k, 5),
        )?;
        let mut search = common::Search::new(3, budget / 3, Vec::new());
        let st = common::tune_loop(&eval, &space, &mut search, budget, 32, true);
        match &st.best {
            Some((c, t)) => println!(
                "{label} ({m}x{k} * {k}x{n}): {:.2} us, {:.1} GFLOP/s, cuBLAS {:.2} us ({:.2}x); {} evaluated / {} valid in {:.1} s; {}",
                t * 1e6,
                2.0 * (m * n * k) as f64 / t / 1e9,
                t_cublas * 1e6,
                t_cublas / t,
                st.evaluated,
                st.valid,
                st.wall.as_secs_f64(),
                space.describe(c)
            ),
            None => println!("{label}: no valid configuration; failures {:?}", st.first_failure),
        }
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
