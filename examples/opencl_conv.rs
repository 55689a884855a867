//! CLTune's 2D convolution case study (Table II parameters) for 3x3, 7x7 and 11x11 filters,
//! validated against a host reference; then, like CLTune's Table III, the best configuration
//! of each filter size run with the other filter sizes.
//!
//! `cargo run --release --features opencl --example opencl_conv [width height [fs ...]]`
mod common;

use std::sync::Arc;

use tune::backend::opencl::OpenCl;
use tune::backend::{KernelEvaluator, KernelSpec};
use tune::{Config, Evaluator, Value};

/// Filter size, best configuration's values, its time.
type Best = (usize, Vec<(String, Value)>, f64);

fn main() -> tune::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let w = args.first().copied().unwrap_or(8192);
    let h = args.get(1).copied().unwrap_or(4096);
    let sizes: Vec<usize> = if args.len() > 2 {
        args[2..].to_vec()
    } else {
        vec![3, 7, 11]
    };
    let cl = Arc::new(common::opencl_device()?);
    let budget = common::Budget::from_env(250, 90.0);
    let mut bests: Vec<Best> = Vec::new();
    for &fs in &sizes {
        // Each search starts from the best configurations of the filter sizes before it.
        let case = common::cases::conv(w, h, fs)?;
        let options = common::Options {
            start: bests
                .iter()
                .filter_map(|(_, vals, _)| map_to(&case.space, vals, fs))
                .collect(),
            ..common::Options::new(1)
        };
        let (info, r) = common::tune_case(cl.clone(), case, budget, options)?;
        let vals = info
            .space
            .values(&r.best.config)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        bests.push((fs, vals, r.best.scalar));
        println!();
    }
    // Table III: row = tuned for, column = run with; each entry is the column's own best
    // time divided by the row's configuration's time (all measured again here).
    let times: Vec<Vec<Option<f64>>> = bests
        .iter()
        .map(|(_, vals, _)| {
            sizes
                .iter()
                .map(|&fs| time_with(&cl, w, h, fs, vals).ok().flatten())
                .collect()
        })
        .collect();
    println!("best configuration of one filter size used for another (performance relative to that size's own best):");
    print!("{:>12}", "tuned for");
    for &fs in &sizes {
        print!("{:>10}", format!("{fs}x{fs}"));
    }
    println!();
    for (i, (fs_a, _, _)) in bests.iter().enumerate() {
        print!("{:>12}", format!("{fs_a}x{fs_a}"));
        for (j, &fs_b) in sizes.iter().enumerate() {
            let own = bests
                .iter()
                .position(|b| b.0 == fs_b)
                .and_then(|d| times[d][j]);
            match (times[i][j], own) {
                (Some(t), Some(own)) => print!("{:>9.0}%", 100.0 * own / t),
                _ => print!("{:>10}", "invalid"),
            }
        }
        println!();
    }
    Ok(())
}

/// Runs the configuration `vals` (tuned for another filter size) with filter size `fs`.
fn time_with(
    cl: &Arc<tune::backend::opencl::OpenCl>,
    w: usize,
    h: usize,
    fs: usize,
    vals: &[(String, Value)],
) -> tune::Result<Option<f64>> {
    let (info, spec): (_, KernelSpec) = common::cases::conv(w, h, fs)?.split();
    let Some(c) = map_to(&info.space, vals, fs) else {
        return Ok(None);
    };
    let ev = KernelEvaluator::<OpenCl>::new(cl.clone(), &info.space, spec.repetitions(5))?;
    Ok(ev
        .prepare(&info.space, &c)
        .and_then(|p| ev.measure(&info.space, &c, p))
        .ok()
        .map(|m| m.cost.as_secs_f64()))
}

/// The configuration with values `vals` (tuned for another filter size) in the space of
/// filter size `fs`: a full unroll unrolls the new filter; `None` if it is not valid there.
fn map_to(space: &tune::Space, vals: &[(String, Value)], fs: usize) -> Option<Config> {
    let mapped = vals.iter().map(|(k, v)| {
        let v = match (k.as_str(), v) {
            ("UNROLL_FACTOR", Value::Int(u)) if *u > 1 => Value::Int(fs as i64),
            ("UNROLL_FACTOR", Value::UInt(u)) if *u > 1 => Value::UInt(fs as u64),
            _ => v.clone(),
        };
        (k.as_str(), v)
    });
    space.config_from_values(mapped).ok()
}
