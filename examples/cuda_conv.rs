//! CLTune's 2D convolution on CUDA (kernels/conv.cu): an 8192 x 4096 image with 3x3, 7x7 and
//! 11x11 filters, each tuned with `tune::Tuner`; the best configuration of each size and its
//! bandwidth, then (CLTune's Table III) what the best configuration of one filter size
//! achieves on the others.
//!
//! `cargo run --release --features cuda --example cuda_conv [EVALUATIONS]`
//! (`TUNE_EVALS`, `TUNE_SECONDS`, `TUNE_TECHNIQUE`: see examples/common/mod.rs;
//! `TUNE_CUDA_DEVICE` picks the GPU.)
mod common;

#[cfg(feature = "cuda")]
fn main() {
    common::cuda::main_or_skip("cuda_conv", run)
}

/// Filter size, best configuration's values, its time.
#[cfg(feature = "cuda")]
type Best = (usize, Vec<(String, tune::Value)>, f64);

#[cfg(feature = "cuda")]
fn run() -> tune::Result<()> {
    use std::sync::Arc;
    use tune::backend::KernelEvaluator;
    use tune::cuda::Cuda;
    use tune::Evaluator;

    let mut budget = common::Budget::from_env(120, 90.0);
    if let Some(n) = std::env::args().nth(1).and_then(|s| s.parse().ok()) {
        budget.evaluations = n;
    }
    let cuda = Arc::new(common::cuda::open()?);
    let (w, h) = (8192usize, 4096usize);
    let sizes = [3usize, 7, 11];
    let mut best: Vec<Best> = Vec::new();
    for fs in sizes {
        let (info, r) = common::tune_case(
            cuda.clone(),
            common::cuda::conv(w, h, fs)?,
            budget,
            common::Options::new(fs as u64),
        )?;
        let values = info
            .space
            .values(&r.best.config)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        best.push((fs, values, r.best.scalar));
        println!();
    }
    // Table III: row = tuned for, column = run with; each entry is the column's own best
    // time divided by the row's configuration's time (measured again here).
    println!("best of the row's filter size, run with the column's (% of that size's best):");
    println!("| tuned for | 3x3 | 7x7 | 11x11 |\n|---|---|---|---|");
    let mut rows: Vec<String> = best
        .iter()
        .map(|(fs, _, _)| format!("| {fs}x{fs} |"))
        .collect();
    for fs2 in sizes {
        let (info, spec) = common::cuda::conv(w, h, fs2)?.split();
        let space = info.space;
        let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, spec)?;
        let own = best.iter().find(|b| b.0 == fs2).map_or(f64::NAN, |b| b.2);
        for ((_, values, _), row) in best.iter().zip(&mut rows) {
            let cell = match space
                .config_from_values(values.iter().map(|(n, v)| (n.as_str(), v.clone())))
            {
                Ok(c) => match eval
                    .prepare(&space, &c)
                    .and_then(|p| eval.measure(&space, &c, p))
                {
                    Ok(m) => format!(" {:.0}% |", 100.0 * own / m.cost.as_secs_f64()),
                    Err(f) => format!(" {} |", f.kind()),
                },
                Err(_) => " not valid |".into(),
            };
            row.push_str(&cell);
        }
    }
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
