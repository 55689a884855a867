//! `tune sim` and `tune score`: search techniques on recorded brute-force spaces.
//!
//! Both drive the real [`Tuner`] over a [`Recording`]'s evaluator; `tune score` reports what
//! `bench/simulate` reports, at a scale for the shell.

use std::path::PathBuf;
use std::time::Duration;

use tune_runtime::abort::Evaluations;
use tune_runtime::results::Record;
use tune_runtime::score::{self, Settings, Trace};
use tune_runtime::search::TechniqueKind;
use tune_runtime::simulate::{Recording, SimulatedEvaluator};
use tune_runtime::space::{Config, Space};
use tune_runtime::{Evaluator, Failure, Measured, Tuner};

use crate::Res;

/// `tune sim` options.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// A brute-forced space: a Kernel Tuner cache (`.json` or `.json.gz`), KTT's JSON output or a T4 file.
    pub cache: PathBuf,
    /// Techniques to replay (repeat the flag or separate with commas; default: tune's
    /// default technique).
    #[arg(long, value_delimiter = ',', default_value = tune_runtime::TechniqueKind::default().name())]
    pub technique: Vec<String>,
    /// Evaluations per run.
    #[arg(long, default_value_t = 100)]
    pub budget: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Runs per technique, with seeds SEED, SEED+1, ...
    #[arg(long, default_value_t = 1)]
    pub runs: u64,
    /// Append every evaluation to this log (then `tune show`, `tune plot`).
    #[arg(long)]
    pub log: Option<PathBuf>,
}

/// The simulated evaluator with its recorded milliseconds as a [`Duration`], so that the
/// log of a simulated run reads like a real one (`time_s`).
struct InSeconds(SimulatedEvaluator);

impl Evaluator for InSeconds {
    type Cost = Duration;
    type Prepared = ();
    fn prepare(&self, space: &Space, config: &Config) -> Result<(), Failure> {
        self.0.prepare(space, config)
    }
    fn measure(
        &self,
        space: &Space,
        config: &Config,
        p: (),
    ) -> Result<Measured<Duration>, Failure> {
        let m = self.0.measure(space, config, p)?;
        let mut out = Measured::new(Duration::from_secs_f64(m.cost / 1e3));
        out.samples = m.samples;
        out.validation = m.validation;
        Ok(out)
    }
    fn charged_time(&self, space: &Space, config: &Config) -> Option<Duration> {
        self.0.charged_time(space, config)
    }
    fn device(&self) -> String {
        self.0.device()
    }
}

/// The longest run in records (evaluations), for the baseline's length.
pub fn longest_run(records: &[Record]) -> usize {
    tune_runtime::summary::runs(records)
        .iter()
        .map(|r| r.curve.len())
        .max()
        .unwrap_or(0)
}

/// `tune sim`.
pub fn sim(a: &SimArgs) -> Res {
    let rec = Recording::open(&a.cache)?;
    let kinds: Vec<TechniqueKind> = a
        .technique
        .iter()
        .map(|t| t.parse())
        .collect::<Result<_, _>>()?;
    let optimum = rec.true_best().map(|(_, t)| t);
    println!(
        "{} on {}: {} recorded configurations, optimum {}",
        rec.kernel(),
        rec.device(),
        rec.space().len(),
        optimum.map_or("-".into(), |t| format!("{t:.4} ms"))
    );
    println!(
        "| technique | seed | evaluations | best (ms) | fraction of optimum | simulated time (s) |"
    );
    println!("|---|---|---|---|---|---|");
    for kind in kinds {
        for seed in a.seed..a.seed + a.runs {
            let mut tuner = Tuner::new(rec.space().clone(), InSeconds(rec.evaluator()))
                .technique(kind.build())
                .seed(seed)
                .name(rec.kernel())
                .abort(Evaluations(a.budget))
                .progress(false);
            if let Some(log) = &a.log {
                tuner = tuner.log(log);
            }
            match tuner.run() {
                Ok(r) => println!(
                    "| {kind} | {seed} | {} | {:.4} | {:.3} | {:.1} |",
                    r.evaluations,
                    r.best.scalar * 1e3,
                    rec.fraction_of_optimum(Some(r.best.scalar * 1e3)),
                    r.elapsed.as_secs_f64()
                ),
                Err(e) => println!("| {kind} | {seed} | - | - | 0 | - | ({e})"),
            }
        }
    }
    if let Some(log) = &a.log {
        println!(
            "log: {} (`tune show`, `tune plot --baseline {}`)",
            log.display(),
            a.cache.display()
        );
    }
    Ok(())
}

/// `tune score` options.
#[derive(clap::Args, Debug)]
pub struct ScoreArgs {
    /// Brute-forced spaces: Kernel Tuner caches, KTT outputs or T4 files.
    #[arg(required = true)]
    pub caches: Vec<PathBuf>,
    /// Techniques to compare (default: all but exhaustive).
    #[arg(long, value_delimiter = ',')]
    pub techniques: Vec<String>,
    /// Budgets (evaluations) at which to report.
    #[arg(long, value_delimiter = ',', default_value = "20,50,100,200")]
    pub budgets: Vec<usize>,
    /// Seeds per technique and space.
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
}

/// One run of `kind` on a recording through the real tuner: its trace (simulated clock,
/// recorded milliseconds).
fn trace(rec: &Recording, kind: TechniqueKind, seed: u64, budget: u64) -> Trace {
    let run = Tuner::new(rec.space().clone(), rec.evaluator())
        .technique(kind.build())
        .seed(seed)
        .abort(Evaluations(budget))
        .progress(false)
        .run();
    // A run that found nothing valid is a trace of failures.
    run.map_or_else(|_| Trace::default(), |r| Trace::from_records(&r.records))
}

/// `tune score`: every technique run through the real tuner on every recording; the mean
/// fraction of the optimum after N evaluations and the methodology score
/// ([`tune_runtime::score`]).
pub fn score(a: &ScoreArgs) -> Res {
    let kinds: Vec<TechniqueKind> = if a.techniques.is_empty() {
        TechniqueKind::ALL
            .into_iter()
            .filter(|k| *k != TechniqueKind::Exhaustive)
            .collect()
    } else {
        a.techniques
            .iter()
            .map(|t| t.parse())
            .collect::<Result<_, _>>()?
    };
    let mut budgets = a.budgets.clone();
    budgets.sort_unstable();
    budgets.dedup();
    let max = budgets.last().copied().unwrap_or(0);
    if max == 0 {
        return Err("give at least one positive budget, e.g. `--budgets 50,100`".into());
    }
    let mut recs = Vec::new();
    for p in &a.caches {
        let r = Recording::open(p)?;
        let stats = r
            .score_stats()
            .map_err(|e| format!("{}: {e}", p.display()))?;
        recs.push((r, stats));
    }
    println!(
        "Mean fraction of the optimum (true best / best found; 1 = optimum) after N evaluations, \
         and the methodology score (autotuning_methodology: 0 = random search, 1 = the optimum \
         at once), over {} space(s) and {} seed(s) each, runs of up to {max} evaluations.\n",
        recs.len(),
        a.seeds
    );
    let mut header = String::from("| technique |");
    let mut rule = String::from("|---|");
    for b in &budgets {
        header.push_str(&format!(" {b} |"));
        rule.push_str("---|");
    }
    println!("{header} score |\n{rule}---|");
    let settings = Settings::default();
    for kind in kinds {
        let mut sums = vec![0.0; budgets.len()];
        let mut scores = Vec::new();
        for (rec, stats) in &recs {
            let runs: Vec<Trace> = (0..a.seeds)
                .map(|seed| trace(rec, kind, seed, max as u64))
                .collect();
            for run in &runs {
                for (s, &b) in sums.iter_mut().zip(&budgets) {
                    *s += rec.fraction_of_optimum(run.best_after(b));
                }
            }
            // A time range too short to score (every run is one evaluation long) is left out.
            if let Ok(p) = score::score(stats, &runs, &settings) {
                scores.push(p);
            }
        }
        let n = (recs.len() as u64 * a.seeds).max(1) as f64;
        let cells: Vec<String> = sums.iter().map(|s| format!(" {:.3} |", s / n)).collect();
        let p = if scores.is_empty() {
            " - |".to_string()
        } else {
            format!(" {:.3} |", score::aggregate(&scores))
        };
        println!("| {kind} |{}{p}", cells.concat());
    }
    Ok(())
}
