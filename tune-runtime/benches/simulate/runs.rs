//! Recorded spaces, the techniques compared, simulated runs through the real `Tuner`, and
//! the trajectory files both tools write.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value as Json};
use tune_runtime::abort::Evaluations;
use tune_runtime::score::Trace;
use tune_runtime::search::{Guided, Technique, TechniqueKind};
use tune_runtime::simulate::Recording;
use tune_runtime::tuner::Tuner;

/// The tuner's batch in simulation (what `Tuner::new` picks on a machine of 2 cores).
pub const SIM_BATCH: usize = 2;
pub const BUDGETS: [usize; 5] = [50, 100, 200, 500, 1000];
/// Time budgets: the time of this many evaluations at the space's mean evaluation time.
pub const TIME_BUDGETS: [usize; 4] = [50, 100, 200, 500];

/// A recorded space, with the labels the cross-validation groups by.
pub struct Space {
    pub name: String,
    pub rec: Recording,
    pub kernel: String,
    pub gpu: String,
}

pub fn files(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// Every Kernel Tuner cache under `data` with a valid configuration (other recordings are
/// left out: see [`super::data::is_kernel_tuner_cache`]).
pub fn spaces(data: &Path) -> Vec<Space> {
    let mut paths = Vec::new();
    files(data, &mut paths);
    let mut out = Vec::new();
    for p in &paths {
        if !super::data::is_kernel_tuner_cache(p) {
            eprintln!(
                "simulate: {}: not a Kernel Tuner cache (Kernel Tuner's runs read only those); skipped",
                p.display()
            );
            continue;
        }
        match Recording::open(p) {
            Ok(rec) if rec.true_best().is_some() => {
                let name = p.strip_prefix(data).unwrap_or(p).display().to_string();
                let kernel = rec.kernel().to_string();
                let gpu = rec.device().to_string();
                out.push(Space {
                    name,
                    rec,
                    kernel,
                    gpu,
                });
            }
            Ok(_) => eprintln!("simulate: {}: nothing valid; skipped", p.display()),
            Err(e) => eprintln!("simulate: skipped: {e}"),
        }
    }
    out
}

/// A technique compared: its name in the tables and how to build it.
pub struct Candidate {
    pub name: String,
    pub build: Box<dyn Fn() -> Box<dyn Technique> + Sync>,
    /// Plans with the budget: run once per budget.
    pub budget_aware: bool,
    /// Largest budget it runs to (model-based techniques are slow at large budgets).
    pub max_budget: usize,
}

/// The variants `run` adds to the built-in techniques.
pub const VARIANTS: [&str; 34] = [
    "guided",
    "bandit(4 arms)",
    "bandit(4 arms)+bayes",
    "bayes>bandit",
    "bayes>bandit(0.5)",
    "bayes>bandit(0.1)",
    "bayes>local",
    "bandit(4 arms)+surrogate",
    "surrogate>bandit(1.0,100)",
    "surrogate[xi=0.05]>bandit(1.0,100)",
    "surrogate>bandit(0.5,200)",
    // Round 3's candidate, `surrogate[init=10;spread=2]>bandit(1.0,100)`, was `hybrid` in
    // round 7 (below, with round 8's); rounds 4 to 6's default (the endgame of a quarter) is this:
    "surrogate[init=10;exploit=0.25]>bandit(1.0,100)",
    // Round 4: round 3's default (`hybrid` is now this with `exploit=0.25`), failures
    // modelled apart, a trust region around the incumbent for half the proposals.
    "surrogate[init=10]>bandit(1.0,100)",
    "surrogate[init=10;feas=1]>bandit(1.0,100)",
    "surrogate[init=10;local=0.5]>bandit(1.0,100)",
    "surrogate[init=10;feas=1;local=0.5]>bandit(1.0,100)",
    // Round 5, on top of the default (`hybrid`): Thompson sampling from the forest's trees
    // instead of expected improvement; the forest fitted to the ranks of the costs.
    "surrogate[init=10;exploit=0.25;ts=1]>bandit(1.0,100)",
    "surrogate[init=10;exploit=0.25;rank=1]>bandit(1.0,100)",
    // Round 6, on top of the default: the log products and ratios of the size parameters
    // as features.
    "surrogate[init=10;exploit=0.25;inter=1]>bandit(1.0,100)",
    // Round 6's second: extremely randomised trees (random cuts, no bootstrap).
    "surrogate[init=10;exploit=0.25;et=1]>bandit(1.0,100)",
    // Round 8, on top of round 7's default (`surrogate[init=10;spread=2]>bandit(1.0,100)`),
    // from the trace of the H200 convolution: a start design that does not sit in the
    // corners (random; balanced over each parameter's values), the power-of-two alignment
    // of sizes as features, both (`hybrid` since round 8), and an earlier hand-over to the
    // bandit.
    "surrogate[init=10;spread=2]>bandit(1.0,100)",
    "surrogate[init=10;spread=2;design=1]>bandit(1.0,100)",
    "surrogate[init=10;spread=2;design=2]>bandit(1.0,100)",
    "surrogate[init=10;spread=2;align=1]>bandit(1.0,100)",
    "surrogate[init=10;spread=2]>bandit(1.0,50)",
    "surrogate[init=10;spread=2;design=2;align=1]>bandit(1.0,50)",
    // Round 10, on top of the default, from round 9's trace (a model phase that sits on one
    // local optimum): hand over to the bandit, or to a local search that climbs from the
    // best found (`local0`), after 20 evaluations without a gain; and the local search
    // from the model's 100th evaluation on, without the stall rule.
    "surrogate[init=10;spread=2;design=2;align=1]>bandit(1.0,100,20)",
    "surrogate[init=10;spread=2;design=2;align=1]>local0(1.0,100,20)",
    "surrogate[init=10;spread=2;design=2;align=1]>local0(1.0,100)",
    // Round 10's second set, after the first one's cross-validation (the stall rule helps a
    // little on the Hopper convolutions, `local` alone much more): a shorter window, and the
    // model for half the budget (at most 100) or for 30 evaluations before the local search.
    "surrogate[init=10;spread=2;design=2;align=1]>local0(1.0,100,10)",
    "surrogate[init=10;spread=2;design=2;align=1]>local0(0.5,100)",
    "surrogate[init=10;spread=2;design=2;align=1]>local0(1.0,30)",
    // Round 10's third set, after the second's cross-validation (the model wins on the A100
    // convolution, the local search on the Hopper ones, no split of the budget serves both):
    // the two side by side in the model's phase, a quarter or half of the proposals to the
    // local search, then the bandit as in the default.
    "surrogate[init=10;spread=2;design=2;align=1]|local0(0.25)>bandit(1.0,100)",
    "surrogate[init=10;spread=2;design=2;align=1]|local0(0.5)>bandit(1.0,100)",
];

/// Variants compared in the cross-validation beside the built-in techniques: the
/// model-guided local search [`Guided`], and a
/// model-guided phase (Bayesian optimisation) for part of the budget, then an ensemble.
pub fn variant(name: &str) -> Option<Candidate> {
    if name == "guided" {
        let mut g = guided(3, 0.1, None, None);
        g.name = "guided".into();
        return Some(g);
    }
    if name == "bandit(4 arms)" {
        // The previous default ensemble, without the `Guided` arm.
        return Some(Candidate {
            name: name.into(),
            build: Box::new(|| {
                use tune_runtime::search::{Annealing, Bandit, Genetic, LocalSearch};
                Box::new(Bandit::with_arms(vec![
                    Box::new(LocalSearch::new().initial(0)),
                    Box::new(LocalSearch::new().initial(0).kick(2)),
                    Box::new(Genetic::new()),
                    Box::new(Annealing::new()),
                ]))
            }),
            budget_aware: false,
            max_budget: 1000,
        });
    }
    if let Some(extra) = name.strip_prefix("bandit(4 arms)+") {
        // The previous default ensemble with one more arm (`+guided` is today's default).
        let extra: String = extra.into();
        let known = ["bayes", "guided", "surrogate"];
        if !known.contains(&extra.as_str()) {
            return None;
        }
        let budget_aware = extra != "bayes";
        return Some(Candidate {
            name: name.into(),
            build: Box::new(move || {
                use tune_runtime::search::{Annealing, Bandit, Bayes, Genetic, LocalSearch};
                let arm: Box<dyn Technique> = match extra.as_str() {
                    "bayes" => Box::new(Bayes::new()),
                    "surrogate" => Box::new(tune_runtime::search::Surrogate::new()),
                    _ => Box::new(Guided::new()),
                };
                Box::new(Bandit::with_arms(vec![
                    Box::new(LocalSearch::new().initial(0)),
                    Box::new(LocalSearch::new().initial(0).kick(2)),
                    Box::new(Genetic::new()),
                    Box::new(Annealing::new()),
                    arm,
                ]))
            }),
            budget_aware,
            max_budget: 1000,
        });
    }
    if let Some(c) = alternate_variant(name) {
        return Some(c);
    }
    if let Some(c) = surrogate_variant(name) {
        return Some(c);
    }
    let (fraction, max, second): (f64, usize, &str) = match name {
        "bayes>bandit" => (0.25, 100, "bandit"),
        "bayes>bandit(0.5)" => (0.5, 200, "bandit"),
        "bayes>bandit(0.1)" => (0.1, 50, "bandit"),
        "bayes>local" => (0.25, 100, "local"),
        _ => return None,
    };
    let owned = name.to_string();
    let second: TechniqueKind = second.parse().ok()?;
    Some(Candidate {
        name: owned.clone(),
        build: Box::new(move || {
            Box::new(
                tune_runtime::search::Phased::of(
                    Box::new(tune_runtime::search::Bayes::new()),
                    second.build(),
                )
                .switch(fraction, 10, max)
                .named(owned.clone()),
            )
        }),
        budget_aware: true,
        max_budget: 1000,
    })
}

/// The random-forest surrogate alone (`surrogate`, to 500 evaluations), or for part of the
/// budget before an ensemble: `surrogate>bandit(F,MAX)` hands over after a share `F` of the
/// budget, at most `MAX` evaluations (at least 10).
fn surrogate_variant(name: &str) -> Option<Candidate> {
    use tune_runtime::search::{Phased, Surrogate};
    if name == "bandit+surrogate" {
        return Some(Candidate {
            name: name.into(),
            build: Box::new(|| {
                use tune_runtime::search::{Annealing, Bandit, Genetic, LocalSearch};
                Box::new(Bandit::with_arms(vec![
                    Box::new(LocalSearch::new().initial(0)),
                    Box::new(LocalSearch::new().initial(0).kick(2)),
                    Box::new(Genetic::new()),
                    Box::new(Annealing::new()),
                    Box::new(Guided::new()),
                    Box::new(Surrogate::new()),
                ]))
            }),
            budget_aware: true,
            max_budget: 1000,
        });
    }
    // `surrogate[k=v;...]`: hyper-parameters (trees, split, init, xi, exploit).
    let (opts, rest) = match name.strip_prefix("surrogate[") {
        Some(r) => {
            let (o, r) = r.split_once(']')?;
            (o.to_string(), r)
        }
        None => (String::new(), name.strip_prefix("surrogate")?),
    };
    surrogate_with(&opts)?;
    if rest.is_empty() && opts.is_empty() {
        return None; // the built-in `surrogate`
    }
    if rest.is_empty() {
        let owned = name.to_string();
        return Some(Candidate {
            name: owned.clone(),
            build: Box::new(move || {
                Box::new(
                    Phased::of(
                        Box::new(surrogate_with(&opts).unwrap_or_default()),
                        TechniqueKind::Random.build(),
                    )
                    .switch(1.0, 1, usize::MAX)
                    .named(owned.clone()),
                )
            }),
            budget_aware: true,
            max_budget: 500,
        });
    }
    let rest = rest.strip_prefix('>')?;
    let (second, args) = rest.split_once('(')?;
    let mut args = args.strip_suffix(')')?.split(',');
    let (fraction, max): (f64, usize) = (args.next()?.parse().ok()?, args.next()?.parse().ok()?);
    // A third argument: hand over early after that many evaluations without a gain.
    let stall: usize = match args.next() {
        Some(w) => w.parse().ok()?,
        None => 0,
    };
    if args.next().is_some() {
        return None;
    }
    // `local0`: the local search without its random start (it climbs from the best found).
    let local0 = second == "local0";
    let second: TechniqueKind = if local0 {
        TechniqueKind::Local
    } else {
        second.parse().ok()?
    };
    let owned = name.to_string();
    Some(Candidate {
        name: owned.clone(),
        build: Box::new(move || {
            let second: Box<dyn Technique> = if local0 {
                Box::new(
                    tune_runtime::search::LocalSearch::new()
                        .initial(0)
                        .skip_told(true),
                )
            } else {
                second.build()
            };
            Box::new(
                Phased::of(Box::new(surrogate_with(&opts).unwrap_or_default()), second)
                    .switch(fraction, 10, max)
                    .stall(stall)
                    .named(owned.clone()),
            )
        }),
        budget_aware: true,
        max_budget: 1000,
    })
}

/// `surrogate[OPTS]|local0(SHARE)>SECOND(F,MAX)`: for the first phase the surrogate and the
/// local search that climbs from the best found share the proposals (`SHARE` to the local
/// search, `Alternate`), then `SECOND` as in `surrogate>...`.
fn alternate_variant(name: &str) -> Option<Candidate> {
    use tune_runtime::search::{Alternate, LocalSearch, Phased};
    let r = name.strip_prefix("surrogate[")?;
    let (opts, r) = r.split_once(']')?;
    let r = r.strip_prefix("|local0(")?;
    let (share, r) = r.split_once(')')?;
    let share: f64 = share.parse().ok()?;
    let r = r.strip_prefix('>')?;
    let (second, args) = r.split_once('(')?;
    let (f, max) = args.strip_suffix(')')?.split_once(',')?;
    let (fraction, max): (f64, usize) = (f.parse().ok()?, max.parse().ok()?);
    let second: TechniqueKind = second.parse().ok()?;
    let opts = opts.to_string();
    surrogate_with(&opts)?;
    let owned = name.to_string();
    Some(Candidate {
        name: owned.clone(),
        build: Box::new(move || {
            let first = Alternate::of(
                Box::new(surrogate_with(&opts).unwrap_or_default()),
                Box::new(LocalSearch::new().initial(0).skip_told(true)),
                share,
            );
            Box::new(
                Phased::of(Box::new(first), second.build())
                    .switch(fraction, 10, max)
                    .named(owned.clone()),
            )
        }),
        budget_aware: true,
        max_budget: 1000,
    })
}

/// `Surrogate` with the hyper-parameters `k=v` separated by `;` (`None` if one is unknown):
/// `trees`, `split`, `init`, `xi`, `exploit`, `spread`, `feas` (failures modelled apart
/// when not 0), `local` (share of proposals near the incumbent), `ts` (Thompson sampling
/// when not 0), `rank` (the forest fitted to ranks when not 0), `inter` (the log products
/// and ratios of size parameters as features when not 0), `et` (extremely randomised trees
/// when not 0), `design` (the start design: 0 max-min, 1 random, 2 balanced), `align` (the
/// power-of-two alignment of integer sizes as features when not 0).
fn surrogate_with(opts: &str) -> Option<tune_runtime::search::Surrogate> {
    let mut t = tune_runtime::search::Surrogate::new();
    for kv in opts.split(';').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=')?;
        let x: f64 = v.parse().ok()?;
        t = match k {
            "trees" => t.trees(x as usize),
            "split" => t.split_features(x),
            "init" => t.initial(x as usize),
            "xi" => t.margin(x),
            "exploit" => t.exploit(x),
            "spread" => t.batch_spread(x as usize),
            "feas" => t.feasibility(x != 0.0),
            "local" => t.local_share(x),
            "ts" => t.thompson(x != 0.0),
            "rank" => t.rank_costs(x != 0.0),
            "inter" => t.interactions(x != 0.0),
            "et" => t.extra_trees(x != 0.0),
            "design" => t.start_design(match x as u32 {
                0 => tune_runtime::search::StartDesign::MaxMin,
                1 => tune_runtime::search::StartDesign::Random,
                2 => tune_runtime::search::StartDesign::Balanced,
                _ => return None,
            }),
            "align" => t.alignment(x != 0.0),
            _ => return None,
        };
    }
    Some(t)
}

/// Every built-in technique but exhaustive search and every variant, or the named ones
/// (comma-separated; commas inside parentheses belong to a name).
pub fn candidates(names: Option<&str>) -> Vec<Candidate> {
    let all = format!(
        "random,annealing,pso,mcmc,genetic,diff_evo,bandit,bayes,local,surrogate,hybrid,{}",
        VARIANTS.join(",")
    );
    let list = names.unwrap_or(&all);
    let mut out = Vec::new();
    let (mut depth, mut from) = (0usize, 0usize);
    for (k, ch) in list.char_indices().chain([(list.len(), ',')]) {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                let name = list[from..k].trim();
                from = k + 1;
                match variant(name).or_else(|| builtin(name)) {
                    Some(c) => out.push(c),
                    None if name.is_empty() => {}
                    None => eprintln!("simulate: unknown technique `{name}`; skipped"),
                }
            }
            _ => {}
        }
    }
    out
}

fn builtin(name: &str) -> Option<Candidate> {
    let k: TechniqueKind = name.parse().ok()?;
    Some(Candidate {
        name: k.name().to_string(),
        build: Box::new(move || k.build()),
        // The default bandit has a budget-aware arm (`Guided`); the surrogate plans its start
        // and its end with the budget.
        budget_aware: matches!(
            k,
            TechniqueKind::Bandit | TechniqueKind::Surrogate | TechniqueKind::Hybrid
        ),
        max_budget: if matches!(k, TechniqueKind::Bayes | TechniqueKind::Surrogate) {
            500
        } else {
            1000
        },
    })
}

/// `Guided` with given hyper-parameters (the meta mode's candidates).
pub fn guided(
    k: usize,
    explore: f64,
    patience: Option<usize>,
    initial: Option<usize>,
) -> Candidate {
    let name = format!(
        "guided(k={k},explore={explore},patience={},initial={})",
        patience.map_or("auto".into(), |p| p.to_string()),
        initial.map_or("auto".into(), |p| p.to_string())
    );
    Candidate {
        name,
        build: Box::new(move || {
            let mut g = Guided::new().neighbours(k).explore(explore);
            if let Some(p) = patience {
                g = g.patience(p);
            }
            if let Some(i) = initial {
                g = g.initial(i);
            }
            Box::new(g)
        }),
        budget_aware: true,
        max_budget: 1000,
    }
}

/// One simulated run: the recorded outcome and charged time of each distinct evaluation.
#[derive(Clone, Debug)]
pub struct Run {
    pub tool: String,
    pub technique: String,
    pub space: String,
    pub seed: u64,
    pub budget: usize,
    /// `(time in ms or None, charged ms)` per evaluation.
    pub evals: Vec<(Option<f64>, f64)>,
}

impl Run {
    pub fn trace(&self) -> Trace {
        let mut t = 0.0;
        Trace::new(
            self.evals
                .iter()
                .map(|&(c, ms)| {
                    t += ms / 1000.0;
                    (t, c)
                })
                .collect(),
        )
    }
    pub fn to_json(&self) -> String {
        json!({
            "tool": self.tool, "technique": self.technique, "space": self.space,
            "seed": self.seed, "budget": self.budget,
            "evals": self.evals.iter().map(|(c, ms)| json!([c, ms])).collect::<Vec<_>>(),
        })
        .to_string()
    }
    pub fn from_json(line: &str) -> Option<Run> {
        let v: Json = serde_json::from_str(line).ok()?;
        let evals = v["evals"]
            .as_array()?
            .iter()
            .map(|e| Some((e[0].as_f64(), e[1].as_f64()?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Run {
            tool: v["tool"].as_str()?.into(),
            technique: v["technique"].as_str()?.into(),
            space: v["space"].as_str()?.into(),
            seed: v["seed"].as_u64()?,
            budget: v["budget"].as_u64()? as usize,
            evals,
        })
    }
}

pub fn read_runs(path: &Path) -> Vec<Run> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter_map(Run::from_json).collect())
        .unwrap_or_default()
}

/// Milliseconds of search per evaluation (the technique and the tuner; a simulated
/// evaluation costs next to nothing) in runs of 50 and 500 evaluations, one seed per space,
/// one thread: mean over spaces, and the slowest space.
pub fn overhead(spaces: &[Space], cands: &[Candidate]) -> String {
    use std::fmt::Write as _;
    let mut md = String::from(
        "| technique | ms per evaluation, 50 (mean / max over spaces) | 500 |\n|---|---|---|\n",
    );
    for c in cands {
        let mut cells = Vec::new();
        for b in [50, 500] {
            if b > c.max_budget {
                cells.push("—".to_string());
                continue;
            }
            let ms: Vec<f64> = spaces
                .iter()
                .map(|s| {
                    let t0 = std::time::Instant::now();
                    let r = simulate(s, (c.build)(), 0, b, Vec::new());
                    1e3 * t0.elapsed().as_secs_f64() / r.evals.len().max(1) as f64
                })
                .collect();
            let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
            let max = ms.iter().copied().fold(0.0, f64::max);
            cells.push(format!("{mean:.2} / {max:.2}"));
        }
        writeln!(md, "| {} | {} |", c.name, cells.join(" | ")).unwrap();
    }
    md
}

/// Runs `technique` on a recording with the real `Tuner` for `budget` distinct evaluations.
pub fn simulate(
    space: &Space,
    technique: Box<dyn Technique>,
    seed: u64,
    budget: usize,
    start: Vec<tune_runtime::Config>,
) -> Run {
    let name = technique.name().to_string();
    let result = Tuner::new(space.rec.space().clone(), space.rec.evaluator())
        .technique(technique)
        .start_from(start)
        .abort(Evaluations(budget as u64))
        // Proposals per batch: fixed, so that results do not depend on the machine's cores.
        .batch(SIM_BATCH)
        .seed(seed)
        .progress(false)
        .run();
    let evals = match &result {
        Ok(r) => r
            .records
            .iter()
            .map(|rec| {
                let charged = space
                    .rec
                    .record(rec.index)
                    .map_or(0.0, |r| r.charged.as_secs_f64() * 1000.0);
                (if rec.is_ok() { rec.cost } else { None }, charged)
            })
            .collect(),
        // Nothing valid in the whole run: every evaluation failed.
        Err(_) => Vec::new(),
    };
    Run {
        tool: "tune".into(),
        technique: name,
        space: space.name.clone(),
        seed,
        budget,
        evals,
    }
}

/// Every (candidate, space, seed[, budget]) run, in parallel.
pub fn run_all(spaces: &[Space], cands: &[Candidate], seeds: u64) -> Vec<Run> {
    use rayon::prelude::*;
    let mut jobs: Vec<(usize, usize, u64, usize)> = Vec::new();
    // A smaller largest budget, for quick experiments.
    let cap: usize = std::env::var("TUNE_SIM_MAX_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    // Seeds from this one on: more seeds can be appended to a file by a later run.
    let first: u64 = std::env::var("TUNE_SIM_FIRST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for (c, cand) in cands.iter().enumerate() {
        let top = cand.max_budget.min(cap);
        let budgets: Vec<usize> = if cand.budget_aware {
            BUDGETS.iter().copied().filter(|&b| b <= top).collect()
        } else {
            vec![top]
        };
        for s in 0..spaces.len() {
            for seed in first..first + seeds {
                for &b in &budgets {
                    jobs.push((c, s, seed, b));
                }
            }
        }
    }
    // Longest first, for a better spread over the threads.
    jobs.sort_by_key(|j| std::cmp::Reverse(j.3));
    jobs.par_iter()
        .map(|&(c, s, seed, b)| {
            let mut run = simulate(&spaces[s], (cands[c].build)(), seed, b, Vec::new());
            run.technique = cands[c].name.clone();
            run
        })
        .collect()
}

/// Every (candidate, space, seed) run at one budget, as JSON lines: the proposals in the
/// order measured, each as the cache's key (the parameters' values joined by commas) and
/// its recorded cost (null for a failure).
pub fn trace(spaces: &[Space], cands: &[Candidate], seeds: u64, budget: usize) -> Vec<String> {
    use rayon::prelude::*;
    let jobs: Vec<(usize, usize, u64)> = (0..cands.len())
        .flat_map(|c| (0..spaces.len()).flat_map(move |s| (0..seeds).map(move |k| (c, s, k))))
        .collect();
    jobs.par_iter()
        .map(|&(c, s, seed)| {
            let space = &spaces[s];
            let result = Tuner::new(space.rec.space().clone(), space.rec.evaluator())
                .technique((cands[c].build)())
                .abort(Evaluations(budget as u64))
                .batch(SIM_BATCH)
                .seed(seed)
                .progress(false)
                .run();
            let evals: Vec<Json> = result
                .map(|r| {
                    r.records
                        .iter()
                        .map(|rec| {
                            let key = space.rec.space().get(rec.index).map(|cfg| {
                                (0..space.rec.space().params().len())
                                    .filter_map(|k| space.rec.label(&cfg, k))
                                    .collect::<Vec<_>>()
                                    .join(",")
                            });
                            json!([key, if rec.is_ok() { rec.cost } else { None }])
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "technique": cands[c].name, "space": space.name, "seed": seed,
                "budget": budget, "evals": evals,
            })
            .to_string()
        })
        .collect()
}

/// The runs grouped by (tool, technique) then space.
pub type Grouped<'a> = HashMap<(String, String), HashMap<String, Vec<&'a Run>>>;

pub fn group(runs: &[Run]) -> Grouped<'_> {
    let mut g: Grouped = HashMap::new();
    for r in runs {
        g.entry((r.tool.clone(), r.technique.clone()))
            .or_default()
            .entry(r.space.clone())
            .or_default()
            .push(r);
    }
    g
}
