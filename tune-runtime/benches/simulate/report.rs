//! Tables from trajectories: fraction of the optimum at budgets in evaluations and in time
//! (geometric mean over spaces of the mean over seeds, with standard errors), the
//! methodology score, and the cross-validated choice of the default technique.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use tune_runtime::score::{self, Settings, SpaceStats};

use super::runs::{Grouped, Run, Space, BUDGETS, TIME_BUDGETS};

/// Mean and standard error of a sample.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub mean: f64,
    pub se: f64,
}

pub fn stat(v: &[f64]) -> Stat {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Stat {
        mean,
        se: (var / n).sqrt(),
    }
}

/// Geometric mean over spaces of per-space means, with its standard error (delta method;
/// a mean of 0, nothing found in any seed, counts as 1e-6).
pub fn geomean(per_space: &[Stat]) -> Stat {
    let n = per_space.len() as f64;
    let logs: f64 = per_space.iter().map(|s| s.mean.max(1e-6).ln()).sum::<f64>() / n;
    let g = logs.exp();
    let rel: f64 = per_space
        .iter()
        .map(|s| (s.se / s.mean.max(1e-6)).powi(2))
        .sum::<f64>()
        .sqrt()
        / n;
    Stat {
        mean: g,
        se: g * rel,
    }
}

fn fraction(opt: f64, best: Option<f64>) -> f64 {
    best.filter(|b| *b > 0.0)
        .map_or(0.0, |b| (opt / b).min(1.0))
}

/// The runs that answer a budget of `b` evaluations: those run with that budget, else
/// those run with the largest budget of at least `b` (read from the start of their
/// trajectory).
fn runs_for<'a>(runs: &[&'a Run], b: usize) -> Vec<&'a Run> {
    let exact: Vec<&Run> = runs.iter().copied().filter(|r| r.budget == b).collect();
    if !exact.is_empty() {
        return exact;
    }
    let Some(top) = runs.iter().map(|r| r.budget).max().filter(|&m| m >= b) else {
        return Vec::new();
    };
    runs.iter().copied().filter(|r| r.budget == top).collect()
}

/// Per-seed fractions of the optimum at a budget in evaluations.
pub fn at_evaluations(runs: &[&Run], opt: f64, b: usize) -> Option<Vec<f64>> {
    let rs = runs_for(runs, b);
    (!rs.is_empty()).then(|| {
        rs.iter()
            .map(|r| fraction(opt, r.trace().best_after(b)))
            .collect()
    })
}

/// Per-seed fractions at a budget in time (`evals` × the mean evaluation time), read from
/// the runs of the largest budget, if that budget is at least `evals`.
pub fn at_time(runs: &[&Run], opt: f64, seconds: f64, evals: usize) -> Option<Vec<f64>> {
    let top = runs.iter().map(|r| r.budget).max()?;
    (top >= evals).then(|| {
        runs.iter()
            .filter(|r| r.budget == top)
            .map(|r| fraction(opt, r.trace().best_by(seconds)))
            .collect()
    })
}

/// What the report needs per space.
pub struct Stats<'a> {
    pub space: &'a Space,
    pub opt: f64,
    pub stats: SpaceStats,
}

pub fn stats(spaces: &[Space]) -> Vec<Stats<'_>> {
    spaces
        .iter()
        .filter_map(|s| {
            let stats = s.rec.score_stats().ok()?;
            Some(Stats {
                space: s,
                opt: s.rec.true_best()?.1,
                stats,
            })
        })
        .collect()
}

/// One technique's row: geometric means per budget (evaluations, then time), and score.
pub struct Row {
    pub tool: String,
    pub technique: String,
    pub evals: Vec<Option<Stat>>,
    pub time: Vec<Option<Stat>>,
    pub score: Option<f64>,
    pub seeds: usize,
}

/// Per-seed fractions of one space's runs, or `None` where a budget is not covered.
type PerSeed<'a> = &'a dyn Fn(&Stats, &[&Run]) -> Option<Vec<f64>>;

pub fn row(
    tool: &str,
    technique: &str,
    per_space: &HashMap<String, Vec<&Run>>,
    st: &[Stats],
) -> Row {
    let over = |f: PerSeed| -> Option<Stat> {
        let mut v = Vec::new();
        for s in st {
            let runs = per_space.get(&s.space.name)?;
            v.push(stat(&f(s, runs)?));
        }
        Some(geomean(&v))
    };
    let evals = BUDGETS
        .iter()
        .map(|&b| over(&|s, r| at_evaluations(r, s.opt, b)))
        .collect();
    let time = TIME_BUDGETS
        .iter()
        .map(|&k| {
            over(&|s, r| {
                let secs = k as f64 * s.stats.time_per_evaluation();
                at_time(r, s.opt, secs, k)
            })
        })
        .collect();
    let settings = Settings::default();
    let mut scores = Vec::new();
    for s in st {
        let Some(runs) = per_space.get(&s.space.name) else {
            break;
        };
        let top = runs.iter().map(|r| r.budget).max().unwrap_or(0);
        let traces: Vec<_> = runs
            .iter()
            .filter(|r| r.budget == top)
            .map(|r| r.trace())
            .collect();
        match s.stats.performance(&traces, &settings) {
            Ok(p) => scores.push(p.iter().sum::<f64>() / p.len() as f64),
            Err(e) => {
                eprintln!(
                    "simulate: no score for {technique} on {}: {e}",
                    s.space.name
                );
                break;
            }
        }
    }
    let seeds = per_space
        .values()
        .map(|r| {
            let top = r.iter().map(|x| x.budget).max().unwrap_or(0);
            r.iter().filter(|x| x.budget == top).count()
        })
        .min()
        .unwrap_or(0);
    Row {
        tool: tool.into(),
        technique: technique.into(),
        evals,
        time,
        score: (scores.len() == st.len()).then(|| score::aggregate(&scores)),
        seeds,
    }
}

pub fn rows(g: &Grouped, st: &[Stats]) -> Vec<Row> {
    let mut keys: Vec<&(String, String)> = g.keys().collect();
    keys.sort_by_key(|k| (k.0 != "tune", k.1.clone()));
    keys.into_iter()
        .map(|k| row(&k.0, &k.1, &g[k], st))
        .collect()
}

fn cell(s: &Option<Stat>) -> String {
    s.map_or("—".into(), |s| format!("{:.3} ± {:.3}", s.mean, s.se))
}

pub fn table(rows: &[Row], default: &str) -> String {
    let mut md = String::new();
    md.push_str("| tool | technique |");
    for b in BUDGETS {
        write!(md, " {b} |").unwrap();
    }
    for k in TIME_BUDGETS {
        write!(md, " t{k} |").unwrap();
    }
    md.push_str(" score | seeds |\n|---|---|");
    md.push_str(&"---|".repeat(BUDGETS.len() + TIME_BUDGETS.len() + 2));
    md.push('\n');
    for r in rows {
        let tool = if r.tool == "tune" {
            "tune"
        } else {
            "Kernel Tuner"
        };
        let name = if r.tool == "tune" && r.technique == default {
            format!("**{}** (default)", r.technique)
        } else {
            r.technique.clone()
        };
        write!(md, "| {tool} | {name} |").unwrap();
        for s in r.evals.iter().chain(&r.time) {
            write!(md, " {} |", cell(s)).unwrap();
        }
        let score = r.score.map_or("—".into(), |s| format!("{s:.3}"));
        writeln!(md, " {score} | {} |", r.seeds).unwrap();
    }
    md
}

/// The best Kernel Tuner strategy per column, against one tune technique.
pub fn versus(rows: &[Row], technique: &str) -> String {
    let Some(t) = rows
        .iter()
        .find(|r| r.tool == "tune" && r.technique == technique)
    else {
        return String::new();
    };
    let kt: Vec<&Row> = rows.iter().filter(|r| r.tool != "tune").collect();
    let mut md = format!(
        "| budget | tune `{technique}` | Kernel Tuner best (strategy) | met |\n|---|---|---|---|\n"
    );
    let labels: Vec<String> = BUDGETS
        .iter()
        .map(|b| format!("{b} evaluations"))
        .chain(TIME_BUDGETS.iter().map(|k| format!("time of {k}")))
        .collect();
    for (c, label) in labels.iter().enumerate() {
        let pick = |r: &Row| {
            if c < BUDGETS.len() {
                r.evals[c]
            } else {
                r.time[c - BUDGETS.len()]
            }
        };
        let best = kt
            .iter()
            .filter_map(|r| pick(r).map(|s| (s, r.technique.as_str())))
            .max_by(|a, b| a.0.mean.total_cmp(&b.0.mean));
        let mine = pick(t);
        let met = match (mine, best) {
            (Some(m), Some((k, _))) => {
                if m.mean >= k.mean {
                    "yes"
                } else {
                    "no"
                }
            }
            _ => "—",
        };
        writeln!(
            md,
            "| {label} | {} | {} | {met} |",
            cell(&mine),
            best.map_or("—".into(), |(s, n)| format!("{} ({n})", cell(&Some(s))))
        )
        .unwrap();
    }
    let best_score = kt
        .iter()
        .filter_map(|r| r.score.map(|s| (s, r.technique.as_str())))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let (Some(s), Some((k, n))) = (t.score, best_score) {
        writeln!(
            md,
            "| methodology score | {s:.3} | {k:.3} ({n}) | {} |",
            if s >= k + 0.10 {
                "yes (+0.10)"
            } else {
                "no (target +0.10)"
            }
        )
        .unwrap();
    }
    md
}

/// Training objective of a technique on some spaces: the mean over budgets of the log of
/// the geometric-mean fraction (`None` if a budget is missing).
fn objective(per_space: &HashMap<String, Vec<&Run>>, st: &[&Stats]) -> Option<f64> {
    let mut total = 0.0;
    for &b in &BUDGETS {
        let mut v = Vec::new();
        for s in st {
            v.push(stat(&at_evaluations(
                per_space.get(&s.space.name)?,
                s.opt,
                b,
            )?));
        }
        total += geomean(&v).mean.max(1e-6).ln();
    }
    Some(total / BUDGETS.len() as f64)
}

/// What the cross-validation of one tool's choice gives on the held-out spaces.
pub struct Cv {
    /// The folds and their choices, as markdown.
    pub md: String,
    /// The choice on all spaces.
    pub pick: Option<String>,
    /// Geometric means over the held-out spaces at `BUDGETS`, then at `TIME_BUDGETS`
    /// (`None` where a chosen technique's runs do not cover a budget).
    pub columns: Vec<Option<Stat>>,
    pub score: Option<f64>,
}

/// Cross-validation of the choice among one tool's techniques: for each fold (the spaces
/// of one kernel, or of one GPU), the technique with the best training objective (budgets
/// in evaluations) on the other folds is scored on the held-out spaces, in evaluations and
/// in time.
pub fn cross_validate(g: &Grouped, st: &[Stats], by: &str, tool: &str) -> Cv {
    let label = |s: &Stats| -> String {
        if by == "kernel" {
            s.space.kernel.clone()
        } else {
            s.space.gpu.clone()
        }
    };
    let folds: BTreeMap<String, Vec<&Stats>> = st.iter().fold(BTreeMap::new(), |mut m, s| {
        m.entry(label(s)).or_insert_with(Vec::new).push(s);
        m
    });
    let techs: Vec<&(String, String)> = g.keys().filter(|k| k.0 == tool).collect();
    let choose = |train: &[&Stats]| -> Option<String> {
        techs
            .iter()
            .filter_map(|k| objective(&g[*k], train).map(|o| (o, k.1.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|x| x.1)
    };
    // Held-out per-space stats of the technique chosen without that space's fold, per
    // column (budgets in evaluations, then in time); `None` marks a column not covered.
    let columns = BUDGETS.len() + TIME_BUDGETS.len();
    let mut held: Vec<Option<Vec<Stat>>> = vec![Some(Vec::new()); columns];
    let mut held_scores: Vec<f64> = Vec::new();
    let mut md =
        format!("Folds by {by}:\n\n| held out | spaces | chosen on the rest |\n|---|---|---|\n");
    for (name, test) in &folds {
        let train: Vec<&Stats> = st.iter().filter(|s| label(s) != *name).collect();
        if train.is_empty() {
            // Every space is in this fold: no choice can be made without it (and an
            // objective over no space would pick by the map's order, differently each run).
            writeln!(
                md,
                "| {name} | {} | — (nothing left to choose on) |",
                test.len()
            )
            .unwrap();
            held.fill(None);
            continue;
        }
        let Some(pick) = choose(&train) else { continue };
        writeln!(md, "| {name} | {} | `{pick}` |", test.len()).unwrap();
        let runs = &g[&(tool.to_string(), pick.clone())];
        for s in test {
            let one = std::slice::from_ref(*s);
            if let Some(x) = row(tool, &pick, runs, one).score {
                held_scores.push(x);
            }
            let Some(r) = runs.get(&s.space.name) else {
                held.fill(None);
                continue;
            };
            for (c, h) in held.iter_mut().enumerate() {
                let v = match c.checked_sub(BUDGETS.len()) {
                    None => at_evaluations(r, s.opt, BUDGETS[c]),
                    Some(k) => {
                        let n = TIME_BUDGETS[k];
                        at_time(r, s.opt, n as f64 * s.stats.time_per_evaluation(), n)
                    }
                };
                match (h.as_mut(), v) {
                    (Some(h), Some(v)) => h.push(stat(&v)),
                    _ => *h = None,
                }
            }
        }
    }
    let all: Vec<&Stats> = st.iter().collect();
    Cv {
        md,
        pick: choose(&all),
        columns: held
            .iter()
            .map(|h| h.as_ref().filter(|h| !h.is_empty()).map(|h| geomean(h)))
            .collect(),
        score: (held_scores.len() == st.len()).then(|| score::aggregate(&held_scores)),
    }
}

/// The cross-validated table: tune's choice, Kernel Tuner's choice by the same procedure,
/// and Kernel Tuner's best strategy per column picked on all spaces (in sample), at budgets
/// in evaluations and in time.
pub fn cv_table(tune: &Cv, kt: Option<&Cv>, rows: &[Row]) -> String {
    let mut md = String::from("| |");
    for b in BUDGETS {
        write!(md, " {b} |").unwrap();
    }
    for k in TIME_BUDGETS {
        write!(md, " t{k} |").unwrap();
    }
    md.push_str(" score |\n|---|");
    md.push_str(&"---|".repeat(BUDGETS.len() + TIME_BUDGETS.len() + 1));
    md.push('\n');
    let score = |s: Option<f64>| s.map_or("—".into(), |x| format!("{x:.3}"));
    let mut line = |label: &str, cols: &[Option<Stat>], s: Option<f64>| {
        write!(md, "| {label} |").unwrap();
        for c in cols {
            write!(md, " {} |", cell(c)).unwrap();
        }
        writeln!(md, " {} |", score(s)).unwrap();
    };
    line("tune, cross-validated choice", &tune.columns, tune.score);
    if let Some(kt) = kt {
        line(
            "Kernel Tuner, cross-validated choice (same procedure)",
            &kt.columns,
            kt.score,
        );
    }
    let kt_rows: Vec<&Row> = rows.iter().filter(|r| r.tool != "tune").collect();
    if !kt_rows.is_empty() {
        let best = |c: usize| {
            kt_rows
                .iter()
                .filter_map(|r| {
                    if c < BUDGETS.len() {
                        r.evals[c]
                    } else {
                        r.time[c - BUDGETS.len()]
                    }
                })
                .max_by(|a, b| a.mean.total_cmp(&b.mean))
        };
        let cols: Vec<Option<Stat>> = (0..BUDGETS.len() + TIME_BUDGETS.len()).map(best).collect();
        let s = kt_rows
            .iter()
            .filter_map(|r| r.score)
            .max_by(f64::total_cmp);
        line(
            "Kernel Tuner, best strategy per column (in sample)",
            &cols,
            s,
        );
    }
    md
}
