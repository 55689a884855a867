//! CLBlast's XgemmDirect on CUDA with ATF's ranges, at ATF's deep-learning sizes IS1-IS4
//! and 1024^3, tuned with `tune::Tuner`, against cuBLAS SGEMM (TF32 off) on the same inputs
//! timed the same way: shapes under 1e8 flops over 64 back-to-back launches per sample,
//! both of them. Per shape: cuBLAS time, tuned time, speed-up, evaluations, best
//! configuration.
//!
//! `cargo run --release --features cuda --example cuda_xgemm_direct [EVALUATIONS]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`: see examples/common/mod.rs;
//! `TUNE_CUDA_DEVICE` picks the GPU.)
mod common;

#[cfg(feature = "cuda")]
fn main() {
    common::cuda::main_or_skip("cuda_xgemm_direct", || {
        let mut budget = common::Budget::from_env(200, 30.0);
        if let Some(n) = std::env::args().nth(1).and_then(|s| s.parse().ok()) {
            budget.evaluations = n;
        }
        let cuda = std::sync::Arc::new(common::cuda::open()?);
        let (single, back_to_back) = common::cuda::launch_floor(&cuda)?;
        println!(
            "launch floor (an empty kernel): {:.2} us launched alone, {:.2} us per launch back to back",
            single * 1e6,
            back_to_back * 1e6
        );
        let mut rows = Vec::new();
        // (M, N, K): IS1 20x1*1x576, IS2 20x25*25x576, IS3 50x1*1x64, IS4 10x64*64x500.
        for (label, shape) in [
            ("IS1", (20, 576, 1)),
            ("IS2", (20, 576, 25)),
            ("IS3", (50, 64, 1)),
            ("IS4", (10, 500, 64)),
            ("1024", (1024, 1024, 1024)),
        ] {
            let options = common::Options::new(3);
            match common::cuda::xgemm_direct_vs_cublas(&cuda, label, shape, budget, options) {
                Ok(r) => rows.push(r),
                // Reported; the other shapes still run.
                Err(e @ tune::Error::NoValidConfiguration { .. }) => println!("{label}: {e}"),
                Err(e) => return Err(e),
            }
            println!();
        }
        print!("{}", common::cuda::GemmVsCublas::table(&rows));
        Ok(())
    })
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
