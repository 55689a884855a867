//! Search techniques in simulation mode on recorded brute-forced spaces (Kernel Tuner cache
//! files), driven by the real `Tuner`, compared with Kernel Tuner's strategies.
//!
//! ```text
//! cargo bench -p tune-runtime --bench simulate -- run OUT.jsonl        # tune's trajectories
//! cargo bench -p tune-runtime --bench simulate -- report TUNE.jsonl [KT.jsonl] OUT.md
//! cargo bench -p tune-runtime --bench simulate -- meta OUT.md          # hyper-parameters, CV'd
//! cargo bench -p tune-runtime --bench simulate -- transfer OUT.md      # warm start, leave one GPU out
//! cargo bench -p tune-runtime --bench simulate -- overhead OUT.md      # ms per proposal
//! cargo bench -p tune-runtime --bench simulate -- trace OUT.jsonl       # what each run proposed
//! ```
//!
//! `run` writes one trajectory per run (the same JSON lines as
//! `bench/simulate/run_kernel_tuner.py`); techniques that plan with the budget run once per
//! budget, the others once with the largest. `report` computes the tables (fraction of the
//! optimum at budgets in evaluations and in time, geometric mean over spaces of the mean
//! over seeds, with standard errors), the methodology score (`tune_runtime::score`) and the
//! cross-validated choice of the default technique (leave one kernel out, leave one GPU
//! out). Environment: `TUNE_SIM_DATA` (folder of recorded spaces; default
//! `shared/data/tuning-caches/benchmark_hub` beside the repository or, in a git worktree,
//! beside its main checkout), `TUNE_SIM_SEEDS`
//! (default 20), `TUNE_SIM_FIRST_SEED` (default 0), `TUNE_SIM_MAX_BUDGET` (a smaller largest
//! budget, for quick experiments), `TUNE_SIM_TECHNIQUES` (comma-separated), `TUNE_META_TECHNIQUE`
//! (`hybrid`, the default, or `guided`: whose hyper-parameters `meta` tunes), `TUNE_META_SECONDS` (CPU seconds
//! of the meta search per training set, default 600), `TUNE_SIM_REPORT_SEEDS` (report only
//! seeds below this, so that both tools have the same seeds).
//! Under `cargo test --benches` it only makes a quick smoke run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "simulate/clock.rs"]
mod clock;
#[path = "simulate/data.rs"]
mod data;
#[path = "simulate/meta.rs"]
mod meta;
#[path = "simulate/report.rs"]
mod report;
#[path = "simulate/runs.rs"]
mod runs;
#[path = "simulate/transfer.rs"]
mod transfer;

use std::io::Write as _;
use std::path::{Path, PathBuf};

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Opens an output file before the run it reports on, so that a path that cannot be
/// written stops the bench at once with its reason instead of a panic after minutes of
/// searching. `cargo bench` runs in `tune-runtime/`: relative paths start there.
fn create_out(path: &str, append: bool) -> std::fs::File {
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    options.open(path).unwrap_or_else(|e| {
        let here = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        eprintln!(
            "simulate: cannot write {path}: {e} (a relative path starts in {here}, where \
             `cargo bench` runs; give an absolute path)"
        );
        std::process::exit(2)
    })
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    let smoke = !raw.iter().any(|a| a == "--bench");
    let args: Vec<String> = raw.into_iter().filter(|a| !a.starts_with("--")).collect();
    let data = match std::env::var("TUNE_SIM_DATA") {
        Ok(d) => PathBuf::from(d),
        Err(_) => match data::default_data(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..")) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("simulate: {e}; skipping");
                return;
            }
        },
    };
    let spaces = runs::spaces(&data);
    if spaces.is_empty() {
        eprintln!(
            "simulate: no recorded spaces under {} (set TUNE_SIM_DATA); skipping",
            data.display()
        );
        return;
    }
    if smoke {
        eprintln!(
            "simulate: smoke run (one seed, two techniques); `cargo bench` runs the comparison"
        );
        let cands = runs::candidates(Some("random,bandit"));
        let all = runs::run_all(&spaces[..1], &cands, 1);
        assert!(all.iter().all(|r| r.evals.len() <= r.budget));
        return;
    }
    let seeds = env_usize("TUNE_SIM_SEEDS", 20) as u64;
    let mode = args.first().map(String::as_str).unwrap_or("run");
    let out = |i: usize| args.get(i).cloned();
    match mode {
        "run" => {
            let names = std::env::var("TUNE_SIM_TECHNIQUES").ok();
            let cands = runs::candidates(names.as_deref());
            let path = out(1).unwrap_or_else(|| "tune.jsonl".into());
            // Appended: more techniques can be added to a file by later runs.
            let mut f = std::io::BufWriter::new(create_out(&path, true));
            let t0 = std::time::Instant::now();
            let all = runs::run_all(&spaces, &cands, seeds);
            eprintln!(
                "simulate: {} runs in {:.1} s on {} threads",
                all.len(),
                t0.elapsed().as_secs_f64(),
                rayon::current_num_threads()
            );
            for r in &all {
                writeln!(f, "{}", r.to_json()).unwrap();
            }
            eprintln!("simulate: wrote {path}");
        }
        "report" => {
            let mut all = runs::read_runs(Path::new(
                &out(1).expect("report TUNE.jsonl [KT.jsonl] OUT.md"),
            ));
            let (kt, md_out) = if args.len() >= 4 {
                (out(2), out(3))
            } else {
                (None, out(2))
            };
            let files = md_out.as_ref().map(|p| {
                (
                    create_out(p, false),
                    create_out(&format!("{p}.scores.csv"), false),
                )
            });
            if let Some(kt) = kt {
                all.extend(runs::read_runs(Path::new(&kt)));
            }
            // The same seeds for both tools: only seeds below this (default: all).
            let keep = env_usize("TUNE_SIM_REPORT_SEEDS", usize::MAX) as u64;
            all.retain(|r| r.seed < keep);
            let (md, csv) = report_md(&spaces, &all);
            print!("{md}");
            if let (Some(p), Some((mut f, mut c))) = (md_out, files) {
                f.write_all(md.as_bytes()).unwrap();
                c.write_all(csv.as_bytes()).unwrap();
                eprintln!("simulate: wrote {p} and {p}.scores.csv");
            }
        }
        "meta" => {
            let secs = env_usize("TUNE_META_SECONDS", 600) as f64;
            let file = out(1).map(|p| create_out(&p, false));
            let md = meta::cross_validated(&spaces, secs, seeds);
            print!("{md}");
            if let Some(mut f) = file {
                f.write_all(md.as_bytes()).unwrap();
            }
        }
        "transfer" => {
            let file = out(1).map(|p| create_out(&p, false));
            let md = transfer::transfer(&spaces, seeds);
            print!("{md}");
            if let Some(mut f) = file {
                f.write_all(md.as_bytes()).unwrap();
            }
        }
        "overhead" => {
            let names = std::env::var("TUNE_SIM_TECHNIQUES").ok();
            let cands = runs::candidates(Some(names.as_deref().unwrap_or("bandit,surrogate")));
            let file = out(1).map(|p| create_out(&p, false));
            let md = runs::overhead(&spaces, &cands);
            print!("{md}");
            if let Some(mut f) = file {
                f.write_all(md.as_bytes()).unwrap();
            }
        }
        "trace" => {
            // What a technique proposes, run by run: the configurations (as the cache's
            // keys) and their recorded costs, for the analysis of where a search goes.
            let names = std::env::var("TUNE_SIM_TECHNIQUES").unwrap_or_else(|_| "hybrid".into());
            let budget = env_usize("TUNE_SIM_MAX_BUDGET", 200);
            let path = out(1).unwrap_or_else(|| "trace.jsonl".into());
            let mut f = std::io::BufWriter::new(create_out(&path, false));
            for line in runs::trace(&spaces, &runs::candidates(Some(&names)), seeds, budget) {
                writeln!(f, "{line}").unwrap();
            }
            eprintln!("simulate: wrote {path}");
        }
        other => panic!(
            "unknown mode `{other}`; expected run, report, meta, transfer, overhead or trace"
        ),
    }
}

/// The markdown report, and the score of every (tool, technique, space) as CSV.
fn report_md(spaces: &[runs::Space], all: &[runs::Run]) -> (String, String) {
    use std::fmt::Write as _;
    let st = report::stats(spaces);
    let g = runs::group(all);
    let rows = report::rows(&g, &st);
    let default = tune_runtime::TechniqueKind::default().name();
    let mut md = String::new();
    writeln!(
        md,
        "### All techniques, geometric mean over {} spaces\n",
        st.len()
    )
    .unwrap();
    md.push_str(&report::table(&rows, default));
    writeln!(
        md,
        "\n### Default `{default}` against Kernel Tuner's best at each budget\n"
    )
    .unwrap();
    md.push_str(&report::versus(&rows, default));
    for by in ["kernel", "gpu"] {
        let cv = report::cross_validate(&g, &st, by, "tune");
        let has_kt = g.keys().any(|k| k.0 != "tune");
        let kt = has_kt.then(|| report::cross_validate(&g, &st, by, "kernel_tuner"));
        writeln!(
            md,
            "\n### Cross-validated choice of the default (leave one {by} out)\n"
        )
        .unwrap();
        md.push_str(&cv.md);
        writeln!(md).unwrap();
        md.push_str(&report::cv_table(&cv, kt.as_ref(), &rows));
        writeln!(
            md,
            "\nChosen on all spaces: `{}`.",
            cv.pick.unwrap_or_default()
        )
        .unwrap();
        if let Some(kt) = kt {
            writeln!(
                md,
                "\nKernel Tuner's strategy by the same procedure:\n\n{}\nChosen on all spaces: `{}`.",
                kt.md,
                kt.pick.unwrap_or_default()
            )
            .unwrap();
        }
    }
    md.push_str("\n### Per space (fraction at 50 / 100 / 200 / 500 / 1000 evaluations, score)\n");
    let mut csv = String::from("tool,technique,space,score_rust\n");
    for s in &st {
        writeln!(
            md,
            "\n#### {} ({}, {} configurations)\n",
            s.space.name,
            s.space.gpu,
            s.space.rec.space().len()
        )
        .unwrap();
        let one = std::slice::from_ref(s);
        let mut keys: Vec<&(String, String)> = g.keys().collect();
        keys.sort_by_key(|k| (k.0 != "tune", k.1.clone()));
        md.push_str("| tool | technique | 50 | 100 | 200 | 500 | 1000 | score |\n");
        md.push_str("|---|---|---|---|---|---|---|---|\n");
        for k in keys {
            let r = report::row(&k.0, &k.1, &g[k], one);
            let cells: Vec<String> = r
                .evals
                .iter()
                .map(|s| s.map_or("—".into(), |s| format!("{:.3}", s.mean)))
                .collect();
            let score = r.score.map_or("—".into(), |x| format!("{x:.3}"));
            let tool = if r.tool == "tune" {
                "tune"
            } else {
                "Kernel Tuner"
            };
            writeln!(
                md,
                "| {tool} | {} | {} | {score} |",
                r.technique,
                cells.join(" | ")
            )
            .unwrap();
            if let Some(x) = r.score {
                writeln!(csv, "{},{},{},{x:.6}", r.tool, r.technique, s.space.name).unwrap();
            }
        }
    }
    (md, csv)
}
