//! Hyper-parameters tuned in simulation on training spaces only (cross-validated), and
//! transfer: warm starts from the recordings of the same kernel on other GPUs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use tune_runtime::search::{Guided, Technique, WarmStart};
use tune_runtime::simulate::prior;

use super::report::{geomean, stat, Stat};
use super::runs::{guided, simulate, Candidate, Space, BUDGETS};

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

/// Random search over `Guided`'s hyper-parameters on `train`, for at most `cpu_seconds` of
/// CPU time (wall time times threads), 3 seeds per candidate. The defaults are candidate 0.
fn search(train: &[&Space], cpu_seconds: f64, rng: &mut SmallRng) -> (Candidate, f64, usize) {
    let threads = rayon::current_num_threads() as f64;
    let t0 = Instant::now();
    let mut best: Option<(f64, Candidate)> = None;
    let mut tried = 0;
    while t0.elapsed().as_secs_f64() * threads < cpu_seconds {
        let cand = if tried == 0 {
            guided(3, 0.1, None, None)
        } else {
            guided(
                [1, 2, 3, 5, 8][rng.random_range(0..5)],
                [0.0, 0.05, 0.1, 0.2, 0.3][rng.random_range(0..5)],
                [None, Some(15), Some(30), Some(60), Some(120)][rng.random_range(0..5)],
                [None, Some(3), Some(5), Some(10), Some(20)][rng.random_range(0..5)],
            )
        };
        let (obj, _) = evaluate(&cand, train, 1000..1003);
        tried += 1;
        if best.as_ref().is_none_or(|b| obj > b.0) {
            best = Some((obj, cand));
        }
    }
    let (obj, cand) = best.unwrap_or_else(|| (f64::NAN, guided(3, 0.1, None, None)));
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
    let mut md = format!(
        "Hyper-parameters of `guided` tuned by random search on the training folds (leave one \
         kernel out), {cpu_seconds:.0} CPU-seconds per fold, 3 training seeds per candidate \
         (seeds 1000..1002); held-out spaces scored with seeds 0..{seeds}.\n\n\
         | held out | candidates tried | chosen | held-out 50 | 100 | 200 | 500 | 1000 | defaults: 50 | 100 | 200 | 500 | 1000 |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    let default = guided(3, 0.1, None, None);
    for (kernel, test) in &folds {
        let train: Vec<&Space> = spaces.iter().filter(|s| s.kernel != *kernel).collect();
        let (cand, _, tried) = search(&train, cpu_seconds, &mut rng);
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

/// Leave one GPU out on the spaces recorded on several GPUs: the held-out GPU's search
/// starts from the configurations best on the others (`WarmStart` over `Guided`), against
/// the same search started cold; fraction of the optimum at 10 and 50 evaluations. The
/// warm start's diversity (0 to 3 parameters) is chosen by leave-one-target-out
/// cross-validation over the transfer pairs: each target is scored with the diversity that
/// did best (mean fraction at 10 and 50) on the other targets.
pub fn transfer(spaces: &[Space], seeds: u64) -> String {
    let names = |s: &Space| -> Vec<String> {
        let mut v: Vec<String> = s
            .rec
            .space()
            .params()
            .iter()
            .map(|p| p.name().to_string())
            .collect();
        v.sort();
        v
    };
    // (target, sources, prior)
    let mut pairs = Vec::new();
    for t in spaces {
        let sources: Vec<&Space> = spaces
            .iter()
            .filter(|s| {
                s.name != t.name && s.kernel == t.kernel && s.gpu != t.gpu && names(s) == names(t)
            })
            .collect();
        if sources.is_empty() {
            continue;
        }
        let recs: Vec<_> = sources.iter().map(|s| s.rec.clone()).collect();
        let ranked = prior(&recs, &t.rec);
        pairs.push((t, sources, ranked));
    }
    const DIVERSITY: [usize; 4] = [0, 1, 2, 3];
    // results[pair][diversity or cold][budget]
    let run = |t: &Space, ranked: &[tune_runtime::Config], warm: Option<usize>, b: usize| -> Stat {
        let opt = t.rec.true_best().map_or(0.0, |x| x.1);
        let v: Vec<f64> = (0..seeds)
            .into_par_iter()
            .map(|seed| {
                let inner: Box<dyn Technique> = Box::new(Guided::new());
                let tech: Box<dyn Technique> = match warm {
                    Some(d) => Box::new(WarmStart::new(inner, ranked.to_vec()).diversity(d)),
                    None => inner,
                };
                let r = simulate(t, tech, seed, b, Vec::new());
                r.trace().best_after(b).map_or(0.0, |x| (opt / x).min(1.0))
            })
            .collect();
        stat(&v)
    };
    let results: Vec<Vec<[Stat; 2]>> = pairs
        .iter()
        .map(|(t, _, ranked)| {
            DIVERSITY
                .iter()
                .map(|&d| Some(d))
                .chain([None])
                .map(|w| [run(t, ranked, w, 10), run(t, ranked, w, 50)])
                .collect()
        })
        .collect();
    let mut md = String::from(
        "| held-out space | sources | diversity chosen on the others | warm 10 | warm 50 | cold 10 | cold 50 |\n|---|---|---|---|---|---|---|\n",
    );
    let (mut warm_all, mut cold_all): ([Vec<Stat>; 2], [Vec<Stat>; 2]) = Default::default();
    for (p, (t, sources, _)) in pairs.iter().enumerate() {
        let pick = (0..DIVERSITY.len())
            .max_by(|&a, &b| {
                let score = |d: usize| -> f64 {
                    (0..pairs.len())
                        .filter(|&q| q != p)
                        .map(|q| results[q][d][0].mean + results[q][d][1].mean)
                        .sum()
                };
                score(a).total_cmp(&score(b)).then(b.cmp(&a))
            })
            .unwrap_or(0);
        let w = results[p][pick];
        let c = results[p][DIVERSITY.len()];
        let src: Vec<&str> = sources.iter().map(|s| s.gpu.as_str()).collect();
        writeln!(
            md,
            "| {} ({}) | {} | {} | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.3} ± {:.3} |",
            t.name,
            t.gpu,
            src.join(", "),
            DIVERSITY[pick],
            w[0].mean,
            w[0].se,
            w[1].mean,
            w[1].se,
            c[0].mean,
            c[0].se,
            c[1].mean,
            c[1].se
        )
        .unwrap();
        for k in 0..2 {
            warm_all[k].push(w[k]);
            cold_all[k].push(c[k]);
        }
    }
    if !warm_all[0].is_empty() {
        let g = |v: &[Stat]| geomean(v);
        let (w0, w1, c0, c1) = (
            g(&warm_all[0]),
            g(&warm_all[1]),
            g(&cold_all[0]),
            g(&cold_all[1]),
        );
        writeln!(
            md,
            "| geometric mean | | | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.3} ± {:.3} |",
            w0.mean, w0.se, w1.mean, w1.se, c0.mean, c0.se, c1.mean, c1.se
        )
        .unwrap();
    }
    md.push_str("\nEvery diversity, per target (warm 10 / warm 50):\n\n| target |");
    for d in DIVERSITY {
        write!(md, " d={d} |").unwrap();
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(DIVERSITY.len()));
    md.push('\n');
    for (p, (t, _, _)) in pairs.iter().enumerate() {
        write!(md, "| {} |", t.name).unwrap();
        for r in results[p].iter().take(DIVERSITY.len()) {
            write!(md, " {:.3} / {:.3} |", r[0].mean, r[1].mean).unwrap();
        }
        md.push('\n');
    }
    md
}
