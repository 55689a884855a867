//! Replays recorded brute-forced spaces (Kernel Tuner cache files) in simulation mode with
//! every technique over many seeds, and reports the mean fraction of the optimum reached
//! (true best time / best time found; 1.0 = optimum) after 50, 100, 200, 500 and 1000
//! evaluations.
//!
//! ```text
//! cargo bench -p tune-runtime --bench simulate -- OUT.md [--csv OUT.csv]
//! ```
//!
//! Environment: `TUNE_SIM_DATA` (folder searched recursively for `*.json` / `*.json.gz`;
//! default `../shared/data/tuning-caches/benchmark_hub` beside the repository),
//! `TUNE_SIM_SEEDS` (default 50), `TUNE_SIM_SLOW_SEEDS` (seeds for `bayes`, default 5),
//! `TUNE_SIM_TECHNIQUES` (comma-separated names; default all but exhaustive).
//! Under `cargo test --benches` it only makes a quick smoke run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use tune_runtime::search::TechniqueKind;
use tune_runtime::simulate::{replay, Recording};

const BUDGETS: [usize; 5] = [50, 100, 200, 500, 1000];

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

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then only check that
    // the bench runs (one seed, two techniques).
    let smoke = !raw.iter().any(|a| a == "--bench");
    let args: Vec<String> = raw.into_iter().filter(|a| a != "--bench").collect();
    let mut out_md: Option<String> = None;
    let mut out_csv: Option<String> = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--csv" => out_csv = it.next(),
            _ if a.starts_with("--") => {}
            _ => out_md = Some(a),
        }
    }
    let data = std::env::var("TUNE_SIM_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../shared/data/tuning-caches/benchmark_hub")
        });
    let seeds = if smoke {
        1
    } else {
        env_usize("TUNE_SIM_SEEDS", 50)
    };
    let slow_seeds = if smoke {
        1
    } else {
        env_usize("TUNE_SIM_SLOW_SEEDS", 5)
    };
    let kinds: Vec<TechniqueKind> = match std::env::var("TUNE_SIM_TECHNIQUES") {
        _ if smoke => vec![TechniqueKind::Random, TechniqueKind::Bandit],
        Ok(list) => list.split(',').map(|n| n.parse().unwrap()).collect(),
        Err(_) => TechniqueKind::ALL
            .into_iter()
            .filter(|k| *k != TechniqueKind::Exhaustive)
            .collect(),
    };
    if smoke {
        eprintln!("simulate: smoke run (one seed); `cargo bench` runs the full comparison");
    }

    let mut paths = Vec::new();
    files(&data, &mut paths);
    if paths.is_empty() {
        eprintln!(
            "simulate: no recorded spaces under {} (set TUNE_SIM_DATA); skipping",
            data.display()
        );
        return;
    }
    let mut recs = Vec::new();
    for p in &paths {
        match Recording::open(p) {
            Ok(r) if r.true_best().is_some() => {
                let rel = p.strip_prefix(&data).unwrap_or(p).display().to_string();
                recs.push((rel, r));
            }
            Ok(_) => eprintln!(
                "simulate: {}: no successful configuration; skipped",
                p.display()
            ),
            Err(e) => eprintln!("simulate: skipped: {e}"),
        }
    }

    let start = Instant::now();
    // results[space][technique] = (mean fraction per budget, seeds, seconds)
    let jobs: Vec<(usize, usize, u64)> = (0..recs.len())
        .flat_map(|s| {
            kinds.iter().enumerate().flat_map(move |(t, k)| {
                let n = if *k == TechniqueKind::Bayes {
                    slow_seeds
                } else {
                    seeds
                };
                (0..n as u64).map(move |seed| (s, t, seed))
            })
        })
        .collect();
    let max_budget = *BUDGETS.last().unwrap();
    let runs: Vec<(usize, usize, [f64; 5], f64)> = jobs
        .par_iter()
        .map(|&(s, t, seed)| {
            let rec = &recs[s].1;
            let mut tech = kinds[t].build();
            let t0 = Instant::now();
            let r = replay(rec, &mut tech, seed, max_budget);
            let secs = t0.elapsed().as_secs_f64();
            let fr = BUDGETS.map(|b| rec.fraction_of_optimum(r.best_within(b)));
            (s, t, fr, secs)
        })
        .collect();
    let wall = start.elapsed().as_secs_f64();

    let mut mean = vec![vec![([0.0f64; 5], 0usize, 0.0f64); kinds.len()]; recs.len()];
    for (s, t, fr, secs) in runs {
        let m = &mut mean[s][t];
        for (a, f) in m.0.iter_mut().zip(fr) {
            *a += f;
        }
        m.1 += 1;
        m.2 += secs;
    }
    for row in mean.iter_mut() {
        for m in row.iter_mut() {
            for a in m.0.iter_mut() {
                *a /= m.1.max(1) as f64;
            }
        }
    }

    let mut md = String::new();
    let header = |md: &mut String, first: &str| {
        write!(md, "| {first} |").unwrap();
        for b in BUDGETS {
            write!(md, " {b} |").unwrap();
        }
        md.push_str(" seeds | ms/run |\n|---|");
        for _ in BUDGETS {
            md.push_str("---|");
        }
        md.push_str("---|---|\n");
    };
    writeln!(
        md,
        "Mean fraction of the optimum (true best time / best time found) after N evaluations, \
         tune techniques, simulation mode. {seeds} seeds per technique and space \
         ({slow_seeds} for bayes); wall time {wall:.1} s on {} threads.\n",
        rayon::current_num_threads()
    )
    .unwrap();
    md.push_str("### Mean over all spaces\n\n");
    header(&mut md, "technique");
    for (t, k) in kinds.iter().enumerate() {
        write!(md, "| {k} |").unwrap();
        for b in 0..BUDGETS.len() {
            let v: f64 = mean.iter().map(|row| row[t].0[b]).sum::<f64>() / recs.len() as f64;
            write!(md, " {v:.3} |").unwrap();
        }
        let n = mean[0][t].1;
        let ms = mean.iter().map(|row| row[t].2).sum::<f64>() * 1000.0
            / mean.iter().map(|row| row[t].1).sum::<usize>().max(1) as f64;
        writeln!(md, " {n} | {ms:.1} |").unwrap();
    }
    for (s, (name, rec)) in recs.iter().enumerate() {
        writeln!(
            md,
            "\n### {name} ({} configurations, optimum {:.4} ms)\n",
            rec.space().len(),
            rec.true_best().map_or(0.0, |b| b.1)
        )
        .unwrap();
        header(&mut md, "technique");
        for (t, k) in kinds.iter().enumerate() {
            let m = &mean[s][t];
            write!(md, "| {k} |").unwrap();
            for v in m.0 {
                write!(md, " {v:.3} |").unwrap();
            }
            writeln!(md, " {} | {:.1} |", m.1, m.2 * 1000.0 / m.1.max(1) as f64).unwrap();
        }
    }
    print!("{md}");
    if let Some(p) = out_md {
        std::fs::write(&p, &md).unwrap();
        eprintln!("simulate: wrote {p}");
    }
    if let Some(p) = out_csv {
        let mut csv = String::from("tool,technique,space,budget,mean_fraction,seeds,wall_s\n");
        for (s, (name, _)) in recs.iter().enumerate() {
            for (t, k) in kinds.iter().enumerate() {
                for (b, budget) in BUDGETS.iter().enumerate() {
                    let m = &mean[s][t];
                    writeln!(
                        csv,
                        "tune,{k},{name},{budget},{:.6},{},{wall:.1}",
                        m.0[b], m.1
                    )
                    .unwrap();
                }
            }
        }
        std::fs::write(&p, csv).unwrap();
        eprintln!("simulate: wrote {p}");
    }
}
