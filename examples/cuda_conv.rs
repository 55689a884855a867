//! CLTune's 2D convolution on CUDA: 8192 x 4096 image, 3x3, 7x7 and 11x11 filters; the best
//! configuration of each size, its bandwidth, and (CLTune's Table III) what the best
//! configuration of one filter size achieves on the others.
//! `cargo run --release --features cuda --example cuda_conv [BUDGET]`

#[cfg(feature = "cuda")]
#[path = "common/cuda.rs"]
mod common;

#[cfg(feature = "cuda")]
fn main() -> tune::Result<()> {
    use std::sync::Arc;
    use tune::backend::KernelEvaluator;
    use tune::cuda::Cuda;
    use tune::Evaluator;

    let budget: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let cuda = match Cuda::open(0) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("{e}");
            return Ok(());
        }
    };
    let (w, h) = (8192usize, 4096usize);
    let mut best = Vec::new();
    let mut evals = Vec::new();
    for fs in [3usize, 7, 11] {
        let space = common::conv_space(w as u32, h as u32, fs as u32)?;
        let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, common::conv_spec(w, h, fs))?;
        let mut search = common::Search::new(fs as u64, budget / 2, Vec::new());
        let st = common::tune_loop(&eval, &space, &mut search, budget, 16, true);
        let (c, t) = st
            .best
            .clone()
            .ok_or_else(|| tune::Error::KernelSpec("no valid configuration".into()))?;
        let gbs = 8.0 * (w * h) as f64 / t / 1e9;
        println!(
            "{fs}x{fs}: {} valid configs; {} evaluated / {} valid in {:.1} s; best {:.1} us = {gbs:.0} GB/s: {}; failures {:?}",
            space.len(), st.evaluated, st.valid, st.wall.as_secs_f64(), t * 1e6, space.describe(&c), st.failures
        );
        best.push((
            fs,
            space
                .values(&c)
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect::<Vec<_>>(),
            t,
        ));
        evals.push((fs, space, eval));
    }
    println!("\nbest of row's filter size, run on column's filter size (% of that size's best):");
    println!("| tuned for | 3x3 | 7x7 | 11x11 |\n|---|---|---|---|");
    for (fs, vals, _) in &best {
        let mut row = format!("| {fs}x{fs} |");
        for (fs2, space, eval) in &evals {
            let own = best.iter().find(|b| b.0 == *fs2).map_or(f64::NAN, |b| b.2);
            let cell =
                match space.config_from_values(vals.iter().map(|(n, v)| (n.as_str(), v.clone()))) {
                    Ok(c) => match eval
                        .prepare(space, &c)
                        .and_then(|p| eval.measure(space, &c, p))
                    {
                        Ok(m) => format!(" {:.0}% |", 100.0 * own / m.cost.as_secs_f64()),
                        Err(f) => format!(" {} |", f.kind()),
                    },
                    Err(_) => " not valid |".into(),
                };
            row.push_str(&cell);
        }
        println!("{row}");
    }
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("this example needs `--features cuda`");
}
