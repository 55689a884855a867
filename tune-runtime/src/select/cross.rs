//! Tuning over many inputs: a search per input, then a cross-evaluation that measures
//! strong candidates of every input on other inputs, filling the performance matrix with a
//! fraction of the full grid (every candidate on every input).
//!
//! 1. **Search.** Each input is tuned on its own (any technique, any budget); every valid
//!    configuration measured becomes a cell, and the input's best `top` are its candidates.
//! 2. **Anchors.** The best `anchors` candidates of every input are measured on every
//!    input. These columns are the inputs' fingerprints: inputs whose anchor columns look
//!    alike are alike (the same reason clustering works on the matrix).
//! 3. **Promising cells.** Each candidate is then measured on the `neighbours` inputs most
//!    like its own (by the anchor columns), rank by rank, until the budget is spent.
//!
//! The budget is a fraction of the full grid of the candidates and covers the searches
//! too: steps 2 and 3 measure what the searches left of it, so that a long search per
//! input leaves less cross-evaluation rather than more measuring. Steps 2 and 3 never
//! measure a cell twice. A cell whose measurement fails stays empty.

use serde::{Deserialize, Serialize};

use super::matrix::{Input, Matrix};
use crate::cost::Cost;
use crate::param::Value;
use crate::results::Named;
use crate::tuner::TuningResult;
use crate::{Error, Result};

/// How much to cross-evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Candidates per input: its best configurations from its own search.
    pub top: usize,
    /// Of which the best `anchors` are measured on every input.
    pub anchors: usize,
    /// Inputs alike whereon each candidate is tried.
    pub neighbours: usize,
    /// The most cells the searches and steps 2 and 3 measure together, as a fraction of
    /// the full grid (steps 2 and 3 get what the searches left).
    pub budget: f64,
}

impl Default for Plan {
    /// 8 candidates per input, the best measured everywhere, the others on 8 inputs
    /// alike, at most 15% of the grid in all (the goal).
    fn default() -> Self {
        Plan {
            top: 8,
            anchors: 1,
            neighbours: 8,
            budget: 0.15,
        }
    }
}

/// What a cross-evaluation measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Cells measured by the searches.
    pub searched: usize,
    /// Cells measured in step 2 (anchors on every input).
    pub anchored: usize,
    /// Cells measured in step 3 (candidates on inputs alike).
    pub promising: usize,
    /// Measurements that failed.
    pub failed: usize,
    /// Cells of the full grid: candidates x inputs.
    pub grid: usize,
}

impl Stats {
    /// Cross-evaluated cells (steps 2 and 3) as a fraction of the grid.
    pub fn fraction(&self) -> f64 {
        (self.anchored + self.promising) as f64 / self.grid.max(1) as f64
    }

    /// Every cell measured, searches included, as a fraction of the grid: what
    /// [`Plan::budget`] bounds.
    pub fn measured_fraction(&self) -> f64 {
        (self.searched + self.anchored + self.promising) as f64 / self.grid.max(1) as f64
    }
}

/// Every valid configuration a tuning run measured, with its cost: the search's
/// evaluations, then the re-measured finalists (whose median replaces their search value
/// in the matrix).
pub fn measured<C: Cost>(result: &TuningResult<C>) -> Vec<(Named<Value>, f64)> {
    result
        .records
        .iter()
        .chain(&result.remeasure_records)
        .filter(|r| r.is_ok())
        .filter_map(|r| r.cost.map(|c| (r.config.clone(), c)))
        .collect()
}

/// Tunes a tunable over `inputs` and cross-evaluates: `search(input)` tunes one input and
/// returns every valid configuration it measured with its cost; `measure(input, config)`
/// measures one configuration on one input (`None`: it failed, or is invalid there).
///
/// # Errors
/// [`Error::Select`] for an empty list of inputs or a plan without candidates; the first
/// error of `search`.
pub fn tune_inputs(
    mut m: Matrix,
    inputs: Vec<Input>,
    plan: Plan,
    mut search: impl FnMut(&Input) -> Result<Vec<(Named<Value>, f64)>>,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
) -> Result<(Matrix, Stats)> {
    if inputs.is_empty() || plan.top == 0 {
        return Err(Error::Select(
            "tuning over inputs needs at least one input and one candidate per input".into(),
        ));
    }
    let mut stats = Stats::default();
    let mut candidates: Vec<Vec<usize>> = Vec::new();
    for input in inputs {
        let measured = search(&input)?;
        let i = m.add_input(input);
        let mut own = Vec::new();
        for (config, cost) in measured {
            let c = m.add_config(config);
            if m.set(i, c, cost).is_ok() {
                stats.searched += 1;
                own.push((c, cost));
            }
        }
        own.sort_by(|a, b| a.1.total_cmp(&b.1));
        own.dedup_by_key(|x| x.0);
        candidates.push(own.into_iter().take(plan.top).map(|(c, _)| c).collect());
    }
    let stats = cross_evaluate(&mut m, &candidates, plan, stats, |m, i, c| {
        measure(&m.inputs()[i], &m.configs()[c])
    })?;
    Ok((m, stats))
}

/// Steps 2 and 3 on a matrix whose inputs `0..candidates.len()` have the candidates
/// given (best first), within what `stats.searched` left of the plan's budget.
/// `measure(m, input, config)` measures a cell.
///
/// # Errors
/// [`Error::Select`] when `candidates` names a configuration the matrix lacks.
pub fn cross_evaluate(
    m: &mut Matrix,
    candidates: &[Vec<usize>],
    plan: Plan,
    mut stats: Stats,
    mut measure: impl FnMut(&Matrix, usize, usize) -> Option<f64>,
) -> Result<Stats> {
    let n = candidates.len();
    let mut pool: Vec<usize> = candidates.iter().flatten().copied().collect();
    pool.sort_unstable();
    pool.dedup();
    if pool.iter().any(|&c| c >= m.configs().len()) {
        return Err(Error::Select(
            "a candidate names no configuration of the matrix".into(),
        ));
    }
    stats.grid = pool.len() * n;
    let budget =
        ((plan.budget * stats.grid as f64).floor() as usize).saturating_sub(stats.searched);
    let mut spent = 0usize;
    let mut cell =
        |m: &mut Matrix, i: usize, c: usize, stats: &mut Stats, spent: &mut usize| -> bool {
            if m.get(i, c).is_some() {
                return false;
            }
            *spent += 1;
            match measure(m, i, c).filter(|v| v.is_finite() && *v > 0.0) {
                Some(v) => m.set(i, c, v).is_ok(),
                None => {
                    stats.failed += 1;
                    false
                }
            }
        };

    // Step 2: anchors everywhere, whole columns, at most half the budget: the
    // configurations that are candidates of the most inputs first.
    let mut anchors: Vec<(usize, usize)> = Vec::new();
    for own in candidates {
        for &c in own.iter().take(plan.anchors) {
            match anchors.iter_mut().find(|(a, _)| *a == c) {
                Some((_, count)) => *count += 1,
                None => anchors.push((c, 1)),
            }
        }
    }
    anchors.sort_by_key(|a| std::cmp::Reverse(a.1));
    anchors.truncate(budget / 2 / n.max(1));
    let anchors: Vec<usize> = anchors.into_iter().map(|(c, _)| c).collect();
    for &c in &anchors {
        for i in 0..n {
            if cell(m, i, c, &mut stats, &mut spent) {
                stats.anchored += 1;
            }
        }
    }

    // Inputs alike: distance between the log relative performance of the anchors.
    let profile = |m: &Matrix, i: usize| -> Vec<f64> {
        anchors
            .iter()
            .map(|&c| m.perf(i, c).map_or(super::set::UNMEASURED.ln(), f64::ln))
            .collect()
    };
    let profiles: Vec<Vec<f64>> = (0..n).map(|i| profile(m, i)).collect();
    let alike: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            let mut others: Vec<(f64, usize)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let d: f64 = profiles[i]
                        .iter()
                        .zip(&profiles[j])
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum();
                    (d, j)
                })
                .collect();
            others.sort_by(|a, b| a.0.total_cmp(&b.0));
            others
                .into_iter()
                .take(plan.neighbours)
                .map(|(_, j)| j)
                .collect()
        })
        .collect();

    // Step 3: rank by rank (every input's second candidate before anyone's third), nearest
    // neighbours first, so that a cut budget still spreads over every input.
    'promising: for rank in 0..plan.top {
        for near in 0..plan.neighbours {
            for (i, own) in candidates.iter().enumerate() {
                let (Some(&c), Some(&j)) = (own.get(rank), alike[i].get(near)) else {
                    continue;
                };
                if spent >= budget {
                    break 'promising;
                }
                if cell(m, j, c, &mut stats, &mut spent) {
                    stats.promising += 1;
                }
            }
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// 30 inputs in 3 families; each family has its own good configurations.
    fn truth(i: usize, c: i64) -> f64 {
        let family = (i % 3) as i64;
        if c / 10 == family {
            1.0 + ((c + i as i64) % 10) as f64 * 0.01
        } else {
            2.0 + (c % 7) as f64 * 0.1
        }
    }

    #[test]
    fn cross_evaluation_stays_within_its_budget_and_finds_family_members() {
        let inputs: Vec<Input> = (0..30)
            .map(|i| Input {
                key: format!("n={i}"),
                features: vec![i as f64],
                groups: vec![],
            })
            .collect();
        let keyed = |inp: &Input| inp.features[0] as usize;
        let cfg = |c: i64| Named(vec![("C".into(), Value::Int(c))]);
        let m = Matrix::new("t", "d", vec!["n".into()]);
        // The searches measure 300 cells of a grid of about 900: half of it leaves the
        // cross-evaluation about 150.
        let plan = Plan {
            budget: 0.5,
            ..Plan::default()
        };
        let (m, stats) = tune_inputs(
            m,
            inputs,
            plan,
            // Each search sees 10 configurations: 5 of its family, 5 of others.
            |inp| {
                let i = keyed(inp);
                let fam = (i % 3) as i64 * 10;
                Ok((0..10)
                    .map(|j| {
                        let c = if j < 5 {
                            fam + (j + i as i64) % 10
                        } else {
                            ((fam + 10) % 30) + j
                        };
                        (cfg(c), truth(i, c))
                    })
                    .collect())
            },
            |inp, config| {
                let Some(Value::Int(c)) = config.get("C") else {
                    return None;
                };
                Some(truth(keyed(inp), *c))
            },
        )
        .unwrap();
        assert_eq!(stats.searched, 300);
        assert!(stats.measured_fraction() <= plan.budget + 1e-9, "{stats:?}");
        assert!(stats.anchored > 0 && stats.promising > 0, "{stats:?}");
        assert_eq!(
            m.measured(),
            stats.searched + stats.anchored + stats.promising
        );
        // The promising cells went to inputs of the same family: their cost is low.
        let family_cells = (0..30)
            .flat_map(|i| (0..m.configs().len()).map(move |c| (i, c)))
            .filter(|&(i, c)| m.get(i, c).is_some_and(|v| v < 1.5))
            .count();
        assert!(
            family_cells > 150 + stats.promising / 2,
            "{family_cells} {stats:?}"
        );
    }

    #[test]
    fn searches_that_spend_the_budget_leave_no_cross_evaluation() {
        let inputs: Vec<Input> = (0..10)
            .map(|i| Input {
                key: format!("n={i}"),
                features: vec![i as f64],
                groups: vec![],
            })
            .collect();
        let cfg = |c: i64| Named(vec![("C".into(), Value::Int(c))]);
        let m = Matrix::new("t", "d", vec!["n".into()]);
        // Every input searches 2 of 10 configurations: 20 cells of a 100-cell grid, over
        // the 15% budget already.
        let (_, stats) = tune_inputs(
            m,
            inputs,
            Plan::default(),
            |inp| {
                let i = inp.features[0] as i64;
                Ok(vec![(cfg(i), 1.0), (cfg((i + 1) % 10), 2.0)])
            },
            |_, _| Some(1.0),
        )
        .unwrap();
        assert_eq!(stats.searched, 20);
        assert_eq!(stats.grid, 100);
        assert_eq!(stats.anchored + stats.promising, 0, "{stats:?}");
    }

    #[test]
    fn nothing_to_tune_is_an_error() {
        let m = Matrix::new("t", "d", vec![]);
        let r = tune_inputs(m, vec![], Plan::default(), |_| Ok(vec![]), |_, _| None);
        assert!(r.is_err());
    }
}
