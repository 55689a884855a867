//! Hyper-parameters tuned in simulation on training spaces only (cross-validated).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::clock::CpuClock;
use super::report::{geomean, stat, Stat};
use super::runs::{guided, simulate, variant, Candidate, Space, BUDGETS};

/// Mean over budgets of the log geometric-mean fraction of `cand` on `spaces`, and the
/// geometric means per budget.
fn evaluate(cand: &Candidate, spaces: &[&Space], seeds: std::ops::Range<u64>) -> (f64, Vec<Stat>) {
    let jobs: Vec<(usize, u64, usize)> = (0..spaces.len())
        .flat_map(|s| {
            seeds
                .clone()
                .flat_map(move |seed| BUDGETS.map(|b| (s, seed, b)))
        })
        .collect();
    let fr: Vec<(usize, usize, f64)> = jobs
        .par_iter()
        .map(|&(s, seed, b)| {
            let run = simulate(spaces[s], (cand.build)(), seed, b, Vec::new());
            let opt = spaces[s].rec.true_best().map_or(0.0, |x| x.1);
            let best = run.trace().best_after(b);
            let k = BUDGETS.iter().position(|&x| x == b).unwrap_or(0);
            (s, k, best.map_or(0.0, |v| (opt / v).min(1.0)))
        })
        .collect();
    let per_budget: Vec<Stat> = (0..BUDGETS.len())
        .map(|k| {
            let per_space: Vec<Stat> = (0..spaces.len())
                .map(|s| {
                    let v: Vec<f64> = fr
                        .iter()
                        .filter(|x| x.0 == s && x.1 == k)
                        .map(|x| x.2)
                        .collect();
                    stat(&v)
                })
                .collect();
            geomean(&per_space)
        })
        .collect();
    let obj = per_budget
        .iter()
        .map(|s| s.mean.max(1e-6).ln())
        .sum::<f64>()
        / BUDGETS.len() as f64;
    (obj, per_budget)
}

/// The technique whose hyper-parameters are tuned: its defaults, and a random draw from
/// its grid.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    /// The default, `hybrid`: the surrogate's start, margin, endgame and trees, and the
    /// evaluation at which it hands over to the bandit.
    Hybrid,
    /// The model-guided local search (the meta table of rounds 1 and 3).
    Guided,
}

/// `hybrid` with the given hyper-parameters, as a `surrogate[…]>bandit(1.0,M)` variant.
fn hybrid(init: usize, xi: f64, exploit: f64, trees: usize, handover: usize) -> Candidate {
    let name = format!(
        "surrogate[init={init};xi={xi};exploit={exploit};trees={trees}]>bandit(1.0,{handover})"
    );
    variant(&name).expect("a known surrogate variant")
}

impl Target {
    fn from_env() -> Target {
        match std::env::var("TUNE_META_TECHNIQUE").as_deref() {
            Ok("guided") => Target::Guided,
            _ => Target::Hybrid,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Target::Hybrid => "hybrid",
            Target::Guided => "guided",
        }
    }
    fn defaults(self) -> Candidate {
        match self {
            // `TechniqueKind::Hybrid`'s settings.
            Target::Hybrid => hybrid(10, 0.0, 0.25, 10, 100),
            Target::Guided => guided(3, 0.1, None, None),
        }
    }
    fn draw(self, rng: &mut SmallRng) -> Candidate {
        match self {
            Target::Hybrid => hybrid(
                [5, 10, 15, 20][rng.random_range(0..4)],
                [0.0, 0.01, 0.05, 0.1][rng.random_range(0..4)],
                [0.1, 0.25, 0.4][rng.random_range(0..3)],
                [10, 20][rng.random_range(0..2)],
                [50, 100, 200][rng.random_range(0..3)],
            ),
            Target::Guided => guided(
                [1, 2, 3, 5, 8][rng.random_range(0..5)],
                [0.0, 0.05, 0.1, 0.2, 0.3][rng.random_range(0..5)],
                [None, Some(15), Some(30), Some(60), Some(120)][rng.random_range(0..5)],
                [None, Some(3), Some(5), Some(10), Some(20)][rng.random_range(0..5)],
            ),
        }
    }
}

/// Random search over the target's hyper-parameters on `train`, for at most `cpu_seconds`
/// of this process's CPU time, 3 seeds per candidate. The defaults are candidate 0.
fn search(
    target: Target,
    train: &[&Space],
    cpu_seconds: f64,
    rng: &mut SmallRng,
) -> (Candidate, f64, usize) {
    let clock = CpuClock::start();
    let mut best: Option<(f64, Candidate)> = None;
    let mut tried = 0;
    while clock.spent() < cpu_seconds {
        let cand = if tried == 0 {
            target.defaults()
        } else {
            target.draw(rng)
        };
        let (obj, _) = evaluate(&cand, train, 1000..1003);
        tried += 1;
        if best.as_ref().is_none_or(|b| obj > b.0) {
            best = Some((obj, cand));
        }
    }
    let (obj, cand) = best.unwrap_or_else(|| (f64::NAN, target.defaults()));
    (cand, obj, tried)
}

/// Leave one kernel out: tune the hyper-parameters on the other kernels' spaces (training
/// seeds 1000..), score the choice and the defaults on the held-out spaces (seeds 0..).
pub fn cross_validated(spaces: &[Space], cpu_seconds: f64, seeds: u64) -> String {
    let folds: BTreeMap<&str, Vec<&Space>> = spaces.iter().fold(BTreeMap::new(), |mut m, s| {
        m.entry(s.kernel.as_str()).or_insert_with(Vec::new).push(s);
        m
    });
    let mut rng = SmallRng::seed_from_u64(7);
    let target = Target::from_env();
    let name = target.name();
    let mut md = format!(
        "Hyper-parameters of `{name}` tuned by random search on the training folds (leave one \
         kernel out), {cpu_seconds:.0} CPU-seconds per fold, 3 training seeds per candidate \
         (seeds 1000..1002); held-out spaces scored with seeds 0..{seeds}.\n\n\
         | held out | candidates tried | chosen | held-out 50 | 100 | 200 | 500 | 1000 | defaults: 50 | 100 | 200 | 500 | 1000 |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    let default = target.defaults();
    for (kernel, test) in &folds {
        let train: Vec<&Space> = spaces.iter().filter(|s| s.kernel != *kernel).collect();
        let (cand, _, tried) = search(target, &train, cpu_seconds, &mut rng);
        let (_, tuned) = evaluate(&cand, test, 0..seeds);
        let (_, base) = evaluate(&default, test, 0..seeds);
        let cells = |v: &[Stat]| {
            v.iter()
                .map(|s| format!("{:.3}", s.mean))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        writeln!(
            md,
            "| {kernel} | {tried} | `{}` | {} | {} |",
            cand.name,
            cells(&tuned),
            cells(&base)
        )
        .unwrap();
        eprintln!("meta: {kernel}: {}", cand.name);
    }
    md
}
