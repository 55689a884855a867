//! Several devices in simulation: the fraction of the optimum that a technique reaches at
//! equal (simulated) wall time with 1, 2, 4, 8 and 64 devices measuring at once, on recorded
//! brute-forced spaces (Kernel Tuner cache files), driven by the real `Tuner` with
//! `scale::Devices` of simulated evaluators: each configuration takes its recorded time
//! (compile + verification + benchmark) on the device it goes to, and outcomes come back in
//! the order of their simulated completion.
//!
//! ```text
//! cargo bench -p tune-runtime --bench scale_sim -- [OUT.md]
//! ```
//!
//! Wall-time budgets are `b` times the space's mean evaluation time (the budgets in time of
//! `bench/simulate`), for `b` in 25, 50, 100, 200, 400. Fractions are the geometric mean
//! over spaces of the mean over seeds of `optimum / best found` (0 when nothing valid was
//! found). Environment: `TUNE_SIM_DATA` (folder of recorded spaces; default
//! `../shared/data/tuning-caches/benchmark_hub` beside the repository), `TUNE_SCALE_SEEDS`
//! (default 10), `TUNE_SCALE_TECHNIQUES` (default `bandit,random,genetic`), `TUNE_SCALE_DEVICES`
//! (default `1,2,4,8,64`). Under `cargo test --benches` it only makes a quick smoke run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rayon::prelude::*;
use tune_runtime::abort::{Elapsed, WholeSpace};
use tune_runtime::scale::Devices;
use tune_runtime::score::Trace;
use tune_runtime::simulate::Recording;
use tune_runtime::tuner::Tuner;
use tune_runtime::TechniqueKind;

/// Wall-time budgets, in mean evaluation times of the space.
const BUDGETS: [usize; 5] = [25, 50, 100, 200, 400];

struct Space {
    name: String,
    rec: Recording,
    optimum: f64,
    per_eval: f64,
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p.to_string_lossy().to_string();
        if p.is_dir() {
            files(&p, out);
        } else if name.ends_with(".json") || name.ends_with(".json.gz") {
            out.push(p);
        }
    }
}

fn spaces(data: &Path) -> Vec<Space> {
    let mut paths = Vec::new();
    files(data, &mut paths);
    paths
        .iter()
        .filter_map(|p| {
            let rec = Recording::open(p).ok()?;
            let optimum = rec.true_best()?.1;
            let per_eval = rec.score_stats().ok()?.time_per_evaluation();
            Some(Space {
                name: p.strip_prefix(data).unwrap_or(p).display().to_string(),
                rec,
                optimum,
                per_eval,
            })
        })
        .collect()
}

/// One simulated run with `devices` devices until `seconds` of simulated wall time.
fn run(space: &Space, technique: TechniqueKind, devices: usize, seed: u64, seconds: f64) -> Trace {
    let d = Devices::new((0..devices).map(|_| space.rec.evaluator())).unwrap();
    let r = Tuner::new(space.rec.space().clone(), &d)
        .technique(technique.build())
        .abort(Elapsed(Duration::from_secs_f64(seconds)) | WholeSpace)
        .seed(seed)
        .progress(false)
        .run();
    match r {
        Ok(r) => Trace::from_records(&r.records),
        Err(_) => Trace::default(),
    }
}

fn fraction(opt: f64, best: Option<f64>) -> f64 {
    best.filter(|b| *b > 0.0)
        .map_or(0.0, |b| (opt / b).min(1.0))
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.max(1e-6).ln()).sum::<f64>() / v.len().max(1) as f64).exp()
}

fn env_list(key: &str, default: &str) -> Vec<String> {
    std::env::var(key)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let smoke = !raw.iter().any(|a| a == "--bench");
    let out = raw.iter().find(|a| !a.starts_with("--")).cloned();
    let data = std::env::var("TUNE_SIM_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../shared/data/tuning-caches/benchmark_hub")
        });
    let mut spaces = spaces(&data);
    if spaces.is_empty() {
        let test = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        eprintln!(
            "scale_sim: no recorded spaces under {} (set TUNE_SIM_DATA); using {}",
            data.display(),
            test.display()
        );
        spaces = self::spaces(&test);
    }
    let seeds: u64 = std::env::var("TUNE_SCALE_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if smoke { 1 } else { 10 });
    let techniques: Vec<TechniqueKind> = if smoke {
        vec![TechniqueKind::Bandit]
    } else {
        env_list("TUNE_SCALE_TECHNIQUES", "bandit,random,genetic")
            .iter()
            .map(|t| t.parse().unwrap())
            .collect()
    };
    let counts: Vec<usize> = if smoke {
        vec![1, 4]
    } else {
        env_list("TUNE_SCALE_DEVICES", "1,2,4,8,64")
            .iter()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    if smoke {
        spaces.truncate(1);
    }
    let top = *BUDGETS.last().unwrap() as f64;
    // (technique, devices, space, seed) -> trace up to the largest budget.
    let mut jobs = Vec::new();
    for (t, _) in techniques.iter().enumerate() {
        for (n, _) in counts.iter().enumerate() {
            for s in 0..spaces.len() {
                for seed in 0..seeds {
                    jobs.push((t, n, s, seed));
                }
            }
        }
    }
    let t0 = std::time::Instant::now();
    let traces: Vec<((usize, usize, usize, u64), Trace)> = jobs
        .par_iter()
        .map(|&(t, n, s, seed)| {
            let sp = &spaces[s];
            let trace = run(sp, techniques[t], counts[n], seed, top * sp.per_eval);
            ((t, n, s, seed), trace)
        })
        .collect();
    eprintln!(
        "scale_sim: {} runs in {:.1} s",
        traces.len(),
        t0.elapsed().as_secs_f64()
    );
    // Mean over seeds per space, then the geometric mean over spaces.
    let at = |t: usize, n: usize, budget: f64| -> f64 {
        let per_space: Vec<f64> = (0..spaces.len())
            .map(|s| {
                let sp = &spaces[s];
                let v: Vec<f64> = traces
                    .iter()
                    .filter(|((tt, nn, ss, _), _)| *tt == t && *nn == n && *ss == s)
                    .map(|(_, tr)| fraction(sp.optimum, tr.best_by(budget * sp.per_eval)))
                    .collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            })
            .collect();
        geomean(&per_space)
    };
    let after = |t: usize, n: usize, evaluations: usize| -> f64 {
        let per_space: Vec<f64> = (0..spaces.len())
            .map(|s| {
                let v: Vec<f64> = traces
                    .iter()
                    .filter(|((tt, nn, ss, _), _)| *tt == t && *nn == n && *ss == s)
                    .map(|(_, tr)| fraction(spaces[s].optimum, tr.best_after(evaluations)))
                    .collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            })
            .collect();
        geomean(&per_space)
    };
    let evals = |t: usize, n: usize, budget: f64| -> f64 {
        let v: Vec<f64> = traces
            .iter()
            .filter(|((tt, nn, _, _), _)| *tt == t && *nn == n)
            .map(|((_, _, s, _), tr)| {
                let limit = budget * spaces[*s].per_eval;
                tr.steps.iter().take_while(|x| x.0 <= limit).count() as f64
            })
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let mut md = String::new();
    writeln!(
        md,
        "{} spaces, {seeds} seeds; budgets in mean evaluation times of each space \
         (simulated wall time).\n",
        spaces.len()
    )
    .unwrap();
    for (t, tech) in techniques.iter().enumerate() {
        writeln!(
            md,
            "#### `{tech}`: fraction of the optimum at equal wall time\n"
        )
        .unwrap();
        let head: Vec<String> = BUDGETS.iter().map(|b| format!("{b}")).collect();
        writeln!(
            md,
            "| devices | {} | evaluations by {top} |",
            head.join(" | ")
        )
        .unwrap();
        writeln!(md, "|---|{}---|", "---|".repeat(BUDGETS.len())).unwrap();
        for (n, count) in counts.iter().enumerate() {
            let cells: Vec<String> = BUDGETS
                .iter()
                .map(|&b| format!("{:.3}", at(t, n, b as f64)))
                .collect();
            writeln!(
                md,
                "| {count} | {} | {:.0} |",
                cells.join(" | "),
                evals(t, n, top)
            )
            .unwrap();
        }
        // n devices in 1/n of the time against one device in all of it.
        if let Some(one) = counts.iter().position(|&c| c == 1) {
            writeln!(
                md,
                "\n`{tech}`, n devices in 1/n of the wall time, minus one device in all of \
                 it (points of the fraction of the optimum):\n"
            )
            .unwrap();
            writeln!(md, "| devices | {} |", head.join(" | ")).unwrap();
            writeln!(md, "|---|{}", "---|".repeat(BUDGETS.len())).unwrap();
            for (n, &count) in counts.iter().enumerate() {
                if count == 1 {
                    continue;
                }
                let cells: Vec<String> = BUDGETS
                    .iter()
                    .map(|&b| {
                        let b = b as f64;
                        let d = at(t, n, b / count as f64) - at(t, one, b);
                        format!("{:+.1}", 100.0 * d)
                    })
                    .collect();
                writeln!(md, "| {count} | {} |", cells.join(" | ")).unwrap();
            }
        }
        // Search quality alone: the same number of evaluations, with the outcomes of up to
        // n - 1 others still unknown at each proposal.
        writeln!(
            md,
            "\n`{tech}`, fraction of the optimum after the same number of evaluations:\n"
        )
        .unwrap();
        writeln!(md, "| devices | {} |", head.join(" | ")).unwrap();
        writeln!(md, "|---|{}", "---|".repeat(BUDGETS.len())).unwrap();
        for (n, count) in counts.iter().enumerate() {
            let cells: Vec<String> = BUDGETS
                .iter()
                .map(|&b| format!("{:.3}", after(t, n, b)))
                .collect();
            writeln!(md, "| {count} | {} |", cells.join(" | ")).unwrap();
        }
        writeln!(md).unwrap();
    }
    for sp in &spaces {
        writeln!(
            md,
            "- `{}`: optimum {:.4} ms, mean evaluation {:.3} s",
            sp.name, sp.optimum, sp.per_eval
        )
        .unwrap();
    }
    print!("{md}");
    if let Some(p) = out {
        std::fs::write(&p, &md).unwrap();
        eprintln!("scale_sim: wrote {p}");
    }
}
