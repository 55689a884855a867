//! Transfer, leave one GPU out: each recording of a kernel is the target once, searched
//! with what the kernel's recordings on the other GPUs say (`Transfer`), against round 2's
//! warm start (`WarmStart` over `Guided`) from the same sources and the default started
//! cold; fraction of the optimum at 10 and 50 evaluations.

use std::collections::HashMap;
use std::fmt::Write as _;

use rayon::prelude::*;
use tune_runtime::search::{Guided, SourceView, Technique, TechniqueKind, Transfer, WarmStart};
use tune_runtime::simulate::source_view;
use tune_runtime::Config;

use super::report::{geomean, stat, Stat};
use super::runs::{simulate, Space};

/// The budgets of the targets (.95 at 10, .99 at 50).
const BUDGETS: [usize; 2] = [10, 50];
/// The diversities tried; each target gets the one chosen on the other targets.
const DIVERSITY: [usize; 4] = [0, 1, 2, 3];

/// A held-out recording and what the others of its kernel say about it.
struct Pair<'a> {
    target: &'a Space,
    sources: Vec<&'a Space>,
    views: Vec<SourceView>,
    /// Round 2's prior for `WarmStart`: the target's configurations by the mean over
    /// sources of the capped distance from each source's optimum, best first.
    ranked: Vec<Config>,
}

fn pairs(spaces: &[Space]) -> Vec<Pair<'_>> {
    let mut out = Vec::new();
    for t in spaces {
        let mut sources = Vec::new();
        let mut views = Vec::new();
        for s in spaces {
            if s.name == t.name || s.kernel != t.kernel || s.gpu == t.gpu {
                continue;
            }
            if let Some(v) = source_view(&s.rec, &t.rec) {
                sources.push(s);
                views.push(v);
            }
        }
        if views.is_empty() {
            continue;
        }
        let cap = 100f64.ln();
        let mut scored: Vec<(f64, u128)> = (0..t.rec.space().len())
            .map(|i| {
                let g: f64 = views
                    .iter()
                    .map(|v| v.get(&i).map_or(cap, |g| g.min(cap)))
                    .sum();
                (g, i)
            })
            .collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let ranked = scored
            .into_iter()
            .filter_map(|(_, i)| t.rec.space().get(i))
            .collect();
        out.push(Pair {
            target: t,
            sources,
            views,
            ranked,
        });
    }
    out
}

/// A method compared: its rows are one per diversity (or one, for the cold start).
#[derive(Clone, Copy, PartialEq)]
enum Method {
    /// `Transfer` with (prior feature, space-filling design of its own).
    Transfer(bool, bool),
    /// `Transfer` with the sources weighed by the target's measurements, (own design).
    Weighted(bool),
    /// `Transfer` + design, no prior feature, with the default's endgame (exploit 0.25).
    Endgame,
    /// Weighted sources as the model's mean (own design).
    PriorMean(bool),
    /// Round 5: the sources' records pooled with the target's measurements in the model's
    /// training rows, (with the target flag feature); no design of the model's own.
    Pooled(bool),
    /// Round 9: `Transfer` + design, no prior feature, with the cold default's model
    /// (balanced start, alignment), (every start from the sources up to 10 at any budget).
    DefaultModel(bool),
    /// Round 9: weighted sources + design with the cold default's model.
    WeightedDefaultModel,
    /// Round 9: the default's model with half of its proposals from the neighbours of the
    /// best so far (trust region), (with the model's own design).
    TrustRegion(bool),
    /// Round 10: `Transfer::new` over the sources' ranks instead of their times (each
    /// source's view replaced by its configurations' rank, scaled to the same range), so
    /// that a source counts by its order alone, not by how much slower its near-misses are.
    Ranked,
    WarmGuided,
    Cold,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Transfer(true, false) => "`Transfer`",
            Method::Transfer(true, true) => "`Transfer` + design",
            Method::Transfer(false, true) => "`Transfer` + design, no prior feature",
            Method::Transfer(false, false) => "`Transfer`, no prior feature",
            Method::Weighted(true) => "`Transfer`, weighted sources + design",
            Method::Weighted(false) => "`Transfer`, weighted sources",
            Method::Endgame => "`Transfer` + design, no prior feature, the default's endgame",
            Method::PriorMean(true) => "`Transfer`, weighted sources as the mean + design",
            Method::PriorMean(false) => "`Transfer`, weighted sources as the mean",
            Method::Pooled(true) => "`Transfer`, pooled sources, target flag",
            Method::Pooled(false) => "`Transfer`, pooled sources, no flag",
            Method::DefaultModel(false) => {
                "`Transfer` + design, no prior feature, the default's model"
            }
            Method::DefaultModel(true) => {
                "`Transfer` + design, no prior feature, the default's model, 10 from the sources"
            }
            Method::WeightedDefaultModel => {
                "`Transfer`, weighted sources + design, the default's model"
            }
            Method::TrustRegion(true) => "`Transfer` + design, the default's model, trust region",
            Method::TrustRegion(false) => "`Transfer`, the default's model, trust region",
            Method::Ranked => "`Transfer` over the sources' ranks",
            Method::WarmGuided => "`WarmStart` over `Guided` (round 2)",
            Method::Cold => "cold: the default (`hybrid`)",
        }
    }
    fn variants(self) -> &'static [usize] {
        match self {
            Method::Cold => &DIVERSITY[..1],
            _ => &DIVERSITY,
        }
    }
    fn build(self, p: &Pair, d: usize) -> Box<dyn Technique> {
        match self {
            Method::Transfer(f, sf) => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .prior_feature(f)
                    .space_filling(sf),
            ),
            Method::Weighted(sf) => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .weigh_sources(true)
                    .space_filling(sf),
            ),
            Method::Endgame => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .prior_feature(false)
                    .space_filling(true)
                    .exploit(0.25),
            ),
            Method::PriorMean(sf) => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .weigh_sources(true)
                    .prior_mean(true)
                    .space_filling(sf),
            ),
            Method::Pooled(flag) => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .space_filling(false)
                    .pooled(true, flag),
            ),
            Method::DefaultModel(all) => {
                let t = Transfer::new(p.views.clone())
                    .diversity(d)
                    .default_model(true);
                Box::new(if all { t.tries(10, 10) } else { t })
            }
            Method::WeightedDefaultModel => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .weigh_sources(true)
                    .default_model(true),
            ),
            Method::TrustRegion(sf) => Box::new(
                Transfer::new(p.views.clone())
                    .diversity(d)
                    .default_model(true)
                    .local_share(0.5)
                    .space_filling(sf),
            ),
            Method::Ranked => Box::new(Transfer::new(ranked(&p.views)).diversity(d)),
            Method::WarmGuided => {
                Box::new(WarmStart::new(Box::new(Guided::new()), p.ranked.clone()).diversity(d))
            }
            Method::Cold => TechniqueKind::default().build(),
        }
    }
}

/// Each view's values replaced by the configuration's rank in it (0 for the source's best),
/// scaled so that the last ranked is at a hundredth of the optimum (the cap of the times).
fn ranked(views: &[SourceView]) -> Vec<SourceView> {
    views
        .iter()
        .map(|v| {
            let mut by: Vec<(u128, f64)> = v.iter().map(|(&i, &g)| (i, g)).collect();
            by.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let n = by.len().max(2) as f64 - 1.0;
            let cap = 100f64.ln();
            by.iter()
                .enumerate()
                .map(|(r, &(i, _))| (i, cap * r as f64 / n))
                .collect()
        })
        .collect()
}

const ALL_METHODS: [Method; 19] = [
    Method::Transfer(true, false),
    Method::Transfer(true, true),
    Method::Transfer(false, true),
    Method::Transfer(false, false),
    Method::Weighted(true),
    Method::Weighted(false),
    Method::Endgame,
    Method::PriorMean(true),
    Method::PriorMean(false),
    Method::Pooled(true),
    Method::Pooled(false),
    Method::DefaultModel(false),
    Method::DefaultModel(true),
    Method::WeightedDefaultModel,
    Method::TrustRegion(true),
    Method::TrustRegion(false),
    Method::Ranked,
    Method::WarmGuided,
    Method::Cold,
];

/// The methods compared: all, or with `TUNE_TRANSFER_METHODS=new,ranked` only
/// `Transfer::new`, the ranked sources and the cold start (a shorter run of round 10's
/// candidate beside the default it would replace).
fn methods() -> &'static [Method] {
    static SEL: std::sync::LazyLock<Vec<Method>> =
        std::sync::LazyLock::new(|| match std::env::var("TUNE_TRANSFER_METHODS").as_deref() {
            Ok("new,ranked") => vec![Method::Transfer(false, true), Method::Ranked, Method::Cold],
            _ => ALL_METHODS.to_vec(),
        });
    &SEL
}

/// Fraction of the optimum per (pair, method, variant, budget), over `seeds`.
type Results = HashMap<(usize, usize, usize, usize), Stat>;

fn run_all(pairs: &[Pair], seeds: u64) -> Results {
    let mut jobs = Vec::new();
    for p in 0..pairs.len() {
        for (m, method) in methods().iter().enumerate() {
            for v in 0..method.variants().len() {
                for b in 0..BUDGETS.len() {
                    for seed in 0..seeds {
                        jobs.push((p, m, v, b, seed));
                    }
                }
            }
        }
    }
    let fr: Vec<((usize, usize, usize, usize), f64)> = jobs
        .par_iter()
        .map(|&(p, m, v, b, seed)| {
            let pair = &pairs[p];
            let method = methods()[m];
            let tech = method.build(pair, method.variants()[v]);
            let budget = BUDGETS[b];
            let run = simulate(pair.target, tech, seed, budget, Vec::new());
            let opt = pair.target.rec.true_best().map_or(0.0, |x| x.1);
            let f = run
                .trace()
                .best_after(budget)
                .map_or(0.0, |x| (opt / x).min(1.0));
            ((p, m, v, b), f)
        })
        .collect();
    let mut by: HashMap<(usize, usize, usize, usize), Vec<f64>> = HashMap::new();
    for (k, f) in fr {
        by.entry(k).or_default().push(f);
    }
    by.into_iter().map(|(k, v)| (k, stat(&v))).collect()
}

/// The variant of `m` for pair `p`, chosen on the other pairs (largest sum over them of
/// the fractions at both budgets; ties to the smaller diversity).
fn chosen(res: &Results, pairs: usize, m: usize, p: usize) -> usize {
    let n = methods()[m].variants().len();
    (0..n)
        .max_by(|&a, &b| {
            let score = |v: usize| -> f64 {
                (0..pairs)
                    .filter(|&q| q != p)
                    .flat_map(|q| (0..BUDGETS.len()).map(move |k| (q, k)))
                    .map(|(q, k)| res[&(q, m, v, k)].mean)
                    .sum()
            };
            score(a).total_cmp(&score(b)).then(b.cmp(&a))
        })
        .unwrap_or(0)
}

pub fn transfer(spaces: &[Space], seeds: u64) -> String {
    let pairs = pairs(spaces);
    if pairs.is_empty() {
        return "No kernel is recorded on more than one GPU.\n".into();
    }
    let res = run_all(&pairs, seeds);
    let mut md = String::new();
    writeln!(
        md,
        "Leave one GPU out, {seeds} seeds per run; the diversity of each target is chosen on \
         the other targets (leave-one-target-out). Fraction of the optimum ± standard error.\n"
    )
    .unwrap();
    md.push_str("| held-out space | sources |");
    for m in methods() {
        for b in BUDGETS {
            write!(md, " {} {b} |", m.name()).unwrap();
        }
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(methods().len() * BUDGETS.len()));
    md.push('\n');
    // Per method and budget: the per-target stats, for the geometric means.
    let mut all: Vec<Vec<Vec<(usize, Stat)>>> =
        vec![vec![Vec::new(); BUDGETS.len()]; methods().len()];
    for (p, pair) in pairs.iter().enumerate() {
        let src: Vec<&str> = pair.sources.iter().map(|s| s.gpu.as_str()).collect();
        write!(
            md,
            "| {} ({}) | {} |",
            pair.target.name,
            pair.target.gpu,
            src.join(", ")
        )
        .unwrap();
        for m in 0..methods().len() {
            let v = chosen(&res, pairs.len(), m, p);
            for k in 0..BUDGETS.len() {
                let s = res[&(p, m, v, k)];
                all[m][k].push((p, s));
                let d = if methods()[m] == Method::Cold {
                    String::new()
                } else {
                    format!(" (d={})", methods()[m].variants()[v])
                };
                write!(md, " {:.3} ± {:.3}{d} |", s.mean, s.se).unwrap();
            }
        }
        md.push('\n');
    }
    // The round-2 subset: targets whose sources have exactly the target's parameters.
    let same: Vec<usize> = pairs
        .iter()
        .enumerate()
        .filter(|(_, p)| {
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
            p.sources.iter().any(|s| names(s) == names(p.target))
        })
        .map(|(i, _)| i)
        .collect();
    let keeps = [
        (
            "geometric mean, all targets",
            (0..pairs.len()).collect::<Vec<_>>(),
        ),
        ("geometric mean, round 2's targets", same),
    ];
    for (label, keep) in &keeps {
        write!(md, "| {label} ({}) | |", keep.len()).unwrap();
        for per in &all {
            for col in per {
                let v: Vec<Stat> = col
                    .iter()
                    .filter(|(p, _)| keep.contains(p))
                    .map(|x| x.1)
                    .collect();
                let g = geomean(&v);
                write!(md, " {:.3} ± {:.3} |", g.mean, g.se).unwrap();
            }
        }
        md.push('\n');
    }
    md.push_str(&nested(&pairs, &res, &keeps));
    md.push_str("\nEvery diversity, per target (10 / 50 evaluations):\n\n| target | method |");
    for d in DIVERSITY {
        write!(md, " d={d} |").unwrap();
    }
    md.push_str("\n|---|---|");
    md.push_str(&"---|".repeat(DIVERSITY.len()));
    md.push('\n');
    for (p, pair) in pairs.iter().enumerate() {
        for (m, method) in methods().iter().enumerate() {
            if *method == Method::Cold {
                continue;
            }
            write!(md, "| {} | {} |", pair.target.name, method.name()).unwrap();
            for v in 0..method.variants().len() {
                write!(
                    md,
                    " {:.3} / {:.3} |",
                    res[&(p, m, v, 0)].mean,
                    res[&(p, m, v, 1)].mean
                )
                .unwrap();
            }
            md.push('\n');
        }
    }
    md
}

/// Nested cross-validation of the whole choice (method and diversity): each target is
/// searched with the transfer method and diversity that did best on the other targets
/// (largest sum of the fractions at both budgets; ties to the earlier method and the
/// smaller diversity).
fn nested(pairs: &[Pair], res: &Results, keeps: &[(&str, Vec<usize>)]) -> String {
    let pick = |held: Option<usize>| -> (usize, usize) {
        let mut best = (f64::NEG_INFINITY, 0, 0);
        for (m, method) in methods().iter().enumerate() {
            if *method == Method::Cold {
                continue;
            }
            for v in 0..method.variants().len() {
                let s: f64 = (0..pairs.len())
                    .filter(|&q| Some(q) != held)
                    .flat_map(|q| (0..BUDGETS.len()).map(move |k| (q, k)))
                    .map(|(q, k)| res[&(q, m, v, k)].mean)
                    .sum();
                if s > best.0 {
                    best = (s, m, v);
                }
            }
        }
        (best.1, best.2)
    };
    let label = |(m, v): (usize, usize)| {
        format!("{} d={}", methods()[m].name(), methods()[m].variants()[v])
    };
    let mut md = String::from(
        "\nThe method and its diversity both chosen on the other targets (nested, leave one target out):\n\n| held-out space | chosen on the others | 10 | 50 |\n|---|---|---|---|\n",
    );
    let mut held: Vec<[Stat; 2]> = Vec::new();
    for (p, pair) in pairs.iter().enumerate() {
        let (m, v) = pick(Some(p));
        let s = [res[&(p, m, v, 0)], res[&(p, m, v, 1)]];
        writeln!(
            md,
            "| {} | {} | {:.3} ± {:.3} | {:.3} ± {:.3} |",
            pair.target.name,
            label((m, v)),
            s[0].mean,
            s[0].se,
            s[1].mean,
            s[1].se
        )
        .unwrap();
        held.push(s);
    }
    for (name, keep) in keeps {
        let g = |k: usize| {
            let v: Vec<Stat> = keep.iter().map(|&p| held[p][k]).collect();
            geomean(&v)
        };
        let (a, b) = (g(0), g(1));
        writeln!(
            md,
            "| {name} ({}) | | {:.3} ± {:.3} | {:.3} ± {:.3} |",
            keep.len(),
            a.mean,
            a.se,
            b.mean,
            b.se
        )
        .unwrap();
    }
    writeln!(md, "\nChosen on all targets: {}.", label(pick(None))).unwrap();
    md
}
