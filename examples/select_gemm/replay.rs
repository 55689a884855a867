//! `select_gemm replay DIR [EVALS] [TUNE_SHARE] [BUDGET] [SEED]`: a measuring plan replayed
//! on a run whose grid was filled (every configuration measured on every shape, e.g.
//! bench/select/opencl4-full): every cell the plan asks for is read from the run instead
//! of measured, so that two plans are compared on the same measurements, without a GPU.
//! The searches are random samples of EVALS configurations a shape, seeded as the GPU
//! run's (SEED 1) or otherwise; the cross-evaluation and the label step are the GPU run's
//! (`pipeline::label_step`); the tables score on the whole grid. Writes
//! `DIR/replay-EVALS-TUNE-LABEL.md`.
//!
//! Defaults: the GPU run's plan on OpenCL (3, 0.10, 0.15); `replay DIR 4 0.15 0` is round
//! 4's (no label step).

use std::path::Path;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tune::select::{tune_inputs, Matrix, Plan};
use tune::{Error, Result};

use crate::pipeline::{self, RunFile};

/// Replays the plan on the run in `dir` (see the module's doc).
pub fn main(args: &[String]) -> Result<()> {
    let usage = || {
        Error::Select("usage: select_gemm replay DIR [EVALS] [TUNE_SHARE] [BUDGET] [SEED]".into())
    };
    let dir = Path::new(args.first().ok_or_else(usage)?);
    let num = |i: usize, default: f64| -> Result<f64> {
        args.get(i)
            .map_or(Ok(default), |a| a.parse().map_err(|_| usage()))
    };
    let (evals, tune_share, total) = (num(1, 3.0)? as usize, num(2, 0.10)?, num(3, 0.15)?);
    let seed = num(4, 1.0)? as u64;
    let run = pipeline::read_run(dir)?;
    let truth = run.truth()?;
    let missing = truth.grid() - truth.measured();
    if missing > 0 {
        return Err(Error::Select(format!(
            "{}: {missing} cells of the grid were not measured; a replay needs a run whose grid was filled",
            dir.display()
        )));
    }
    let lookup = |key: &str, c: usize| truth.input_index(key).and_then(|i| truth.get(i, c));
    let index =
        |cfg: &tune::results::Named<tune::Value>| truth.configs().iter().position(|x| x == cfg);
    let m = Matrix::new(
        truth.tunable.clone(),
        truth.device.clone(),
        truth.features.clone(),
    );
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..truth.configs().len()).collect();
    let (m, stats) = tune_inputs(
        m,
        truth.inputs().to_vec(),
        Plan {
            budget: tune_share,
            ..Plan::default()
        },
        |input| {
            order.shuffle(&mut rng);
            Ok(order
                .iter()
                .take(evals)
                .filter_map(|&c| Some((truth.configs()[c].clone(), lookup(&input.key, c)?)))
                .collect())
        },
        |input, cfg| lookup(&input.key, index(cfg)?),
    )?;
    // The replayed matrix orders configurations as first searched: the truth in its order.
    let mut full = m.clone();
    for i in 0..m.inputs().len() {
        for c in 0..m.configs().len() {
            if full.get(i, c).is_none() {
                if let Some(v) = index(&m.configs()[c]).and_then(|t| lookup(&m.inputs()[i].key, t))
                {
                    full.set(i, c, v)?;
                }
            }
        }
    }
    // How good the tuning matrix's own per-shape best is (a shape's label without label
    // cells), against the grid's optimum.
    let logs: Vec<f64> = (0..m.inputs().len())
        .filter_map(|i| Some((full.best(i)?.1 / m.best(i)?.1).ln()))
        .collect();
    let own_best = format!(
        "Without label cells, a shape's best in the matrix is {:.2}% of the grid's optimum (geometric mean over {} shapes).",
        100.0 * (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp(),
        logs.len()
    );
    // Every label cell is in the grid already: the step counts them.
    let mut labels = m.clone();
    let budget = pipeline::label_budget(&stats, total);
    let labelled = pipeline::label_step(
        &m,
        &mut labels,
        &pipeline::training_sets(&m),
        (budget, 0),
        |input, cfg| lookup(&input.key, index(cfg)?),
        || true,
    )?;
    let mut out = RunFile::new(m, &full, stats, (0, 0), None);
    out.labelled = labelled;
    out.budget = total;
    let labels = if total > 0.0 {
        format!(
            "a label step keeping each training set's tuning run within {:.0}% of the grid ({} distinct cells measured, {} planned over the training sets)",
            100.0 * total,
            labelled.0,
            labelled.1
        )
    } else {
        "no label step".into()
    };
    let report = format!(
        "Replayed on {} (every cell read from its filled grid): EVALS {evals}, seed {seed}, searches and cross-evaluation within {:.0}% of the grid, {labels}. {own_best}\n\n{}",
        dir.display(),
        100.0 * tune_share,
        pipeline::analyse(&out)?
    );
    let path = dir.join(format!("replay-{evals}-{tune_share}-{total}-{seed}.md"));
    tune::results::write_atomic(&path, report.as_bytes())?;
    println!("{report}\nwrote {}", path.display());
    Ok(())
}
