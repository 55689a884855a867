//! The community's performance score for comparing search techniques on recorded spaces:
//! the methodology of AutoTuningAssociation's `autotuning_methodology` (Willemsen, van
//! Nieuwpoort, van Werkhoven, "A methodology for comparing optimization algorithms for
//! auto-tuning", 2024), computed the same way as its Python package (1.1.0).
//!
//! For one space, the runs of a technique are traces of (simulated time, best cost so far).
//! Time runs over the range where a calculated random search goes from 1% to 95% of the way
//! from the median configuration to the optimum ([`Settings`]). At each of `resolution`
//! points `t` of that range, the technique's curve `s(t)` (an isotonic fit of the pooled
//! runs, as ranks in the sorted costs) is standardised against the random-search baseline
//! `r(t)`: `P(t) = (s(t) - r(t)) / (y* - r(t))`, 1 at the optimum `y*`, 0 as good as random
//! search, negative when worse. The score of a space is the mean of `P` over time; the
//! score of a technique is the mean over spaces ([`aggregate`]).
//!
//! ```
//! use tune_runtime::score::{score, Settings, SpaceStats, Trace};
//! // A space of 100 configurations, costs 1..=100 ms, each taking 1 s to evaluate.
//! let stats = SpaceStats::new((1..=100).map(|c| (Some(c as f64), 1.0)))?;
//! // Two runs that find the optimum after 3 evaluations.
//! let run = Trace::new(vec![(1.0, Some(50.0)), (2.0, Some(20.0)), (3.0, Some(1.0)), (4.0, Some(7.0))]);
//! let p = score(&stats, &[run.clone(), run], &Settings::default())?;
//! assert!(p > 0.5 && p <= 1.0, "{p}");
//! # Ok::<(), tune_runtime::Error>(())
//! ```
//!
//! The package's curve is the mean of a bootstrap-bagged ensemble of isotonic fits (random,
//! unseeded); this module uses the isotonic fit itself, which that ensemble estimates.
//! `bench/simulate/score_check.py` computes both on the same traces.

mod fit;

use crate::results::Record;
use crate::{Error, Result};

/// The settings of the score: the cut-offs that set the time range and its resolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Where the time range starts: when random search is expected to be this far from the
    /// median to the optimum (default 0.01).
    pub cutoff_start: f64,
    /// Where it ends (default 0.95).
    pub cutoff_end: f64,
    /// Points in the time range (default 1000).
    pub resolution: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cutoff_start: 0.01,
            cutoff_end: 0.95,
            resolution: 1000,
        }
    }
}

/// One run: after each distinct evaluation, the time since the start (seconds, the
/// simulated clock in simulation mode) and its cost (`None`: it failed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// `(elapsed seconds, cost)` per evaluation, in order.
    pub steps: Vec<(f64, Option<f64>)>,
}

impl Trace {
    /// A trace from its steps.
    pub fn new(steps: Vec<(f64, Option<f64>)>) -> Trace {
        Trace { steps }
    }
    /// The trace of a tuning run's records (valid ones carry their cost).
    pub fn from_records(records: &[Record]) -> Trace {
        Trace::new(
            records
                .iter()
                .map(|r| (r.elapsed_s, if r.is_ok() { r.cost } else { None }))
                .collect(),
        )
    }
    /// The best cost among the first `n` evaluations.
    pub fn best_after(&self, n: usize) -> Option<f64> {
        best(self.steps.iter().take(n).map(|s| s.1))
    }
    /// The best cost among the evaluations finished by `seconds`.
    pub fn best_by(&self, seconds: f64) -> Option<f64> {
        best(
            self.steps
                .iter()
                .take_while(|s| s.0 <= seconds)
                .map(|s| s.1),
        )
    }
}

fn best(costs: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    costs.flatten().filter(|c| c.is_finite()).reduce(f64::min)
}

/// What the score needs to know about a brute-forced space: every configuration's cost
/// (or failure) and how long evaluating it takes.
#[derive(Clone, Debug)]
pub struct SpaceStats {
    /// Valid costs, ascending.
    sorted: Vec<f64>,
    /// Mean time per evaluation, counting failures at their rate.
    time_per_eval: f64,
    /// Median evaluation time over all configurations.
    median_time: f64,
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::Score {
        reason: reason.into(),
    }
}

impl SpaceStats {
    /// From every configuration of the space: its cost (`None`: failed) and the seconds
    /// its evaluation takes.
    ///
    /// # Errors
    /// [`Error::Score`] when no configuration is valid or a time is not a finite
    /// non-negative number.
    pub fn new(configs: impl IntoIterator<Item = (Option<f64>, f64)>) -> Result<SpaceStats> {
        let (mut valid, mut valid_t, mut failed_t) = (Vec::new(), Vec::new(), Vec::new());
        for (cost, t) in configs {
            if !(t.is_finite() && t >= 0.0) {
                return Err(invalid(format!("evaluation time {t} is not a duration")));
            }
            match cost.filter(|c| c.is_finite()) {
                Some(c) => {
                    valid.push(c);
                    valid_t.push(t);
                }
                None => failed_t.push(t),
            }
        }
        if valid.is_empty() {
            return Err(invalid("no configuration of the space is valid"));
        }
        valid.sort_by(f64::total_cmp);
        let n = (valid_t.len() + failed_t.len()) as f64;
        let time_per_eval = if failed_t.is_empty() {
            mean(&valid_t)
        } else {
            mean(&valid_t) + failed_t.len() as f64 / n * mean(&failed_t)
        };
        let mut all: Vec<f64> = valid_t.iter().chain(&failed_t).copied().collect();
        all.sort_by(f64::total_cmp);
        if time_per_eval <= 0.0 {
            return Err(invalid(
                "every evaluation takes no time; the score needs times",
            ));
        }
        Ok(SpaceStats {
            sorted: valid,
            time_per_eval,
            median_time: median(&all),
        })
    }

    /// The best cost of the space.
    pub fn optimum(&self) -> f64 {
        self.sorted[0]
    }

    /// The expected time of one evaluation of a random configuration (seconds): the mean
    /// over valid ones plus the failure rate times the mean over failed ones.
    pub fn time_per_evaluation(&self) -> f64 {
        self.time_per_eval
    }

    /// Evaluations a random search needs (expected) to come within `1 - p` of the way from
    /// the median to the optimum.
    fn cutoff_evaluations(&self, p: f64) -> Result<u64> {
        let opt = self.optimum();
        let target = opt + (median(&self.sorted) - opt) * (1.0 - p);
        let n = self.sorted.len();
        // Worst first: the first position at or below the target.
        let worst_first = |i: usize| self.sorted[n - 1 - i];
        let mut i = (0..n)
            .find(|&i| worst_first(i) <= target)
            .ok_or_else(|| invalid("no cost reaches the cut-off"))?;
        if p != 1.0 && worst_first(i) == opt {
            if i == 0 {
                return Err(invalid("every configuration is optimal"));
            }
            i -= 1;
        }
        Ok((i as u64).div_ceil((n + 1 - i) as u64))
    }

    /// The time range of the score: `resolution` points from the start to the end cut-off.
    ///
    /// # Errors
    /// [`Error::Score`] when the cut-offs cannot be placed (every configuration
    /// optimal).
    pub fn time_range(&self, settings: &Settings) -> Result<Vec<f64>> {
        let mut start = self.cutoff_evaluations(settings.cutoff_start)?;
        let end = self.cutoff_evaluations(settings.cutoff_end)?;
        let mut end = end as f64;
        if end < (start + 2) as f64 {
            // Widen a range too short to be one. The package caps the widened end by the
            // optimum's cost (its `cutoff_point(1.0)[0]`); kept as it is, to agree with it.
            let widened = if start == 0 { end + 2.0 } else { end + 1.0 };
            start = start.saturating_sub(1);
            end = widened.min(self.optimum());
        }
        if end == start as f64 {
            return Err(invalid("the cut-offs are the same"));
        }
        let t0 = if settings.cutoff_start > 0.0 {
            start as f64 * self.median_time
        } else {
            0.0
        };
        let t1 = end * self.median_time;
        let n = settings.resolution.max(2);
        Ok((0..n)
            .map(|k| t0 + (t1 - t0) * k as f64 / (n - 1) as f64)
            .collect())
    }

    /// The expected best cost of a random search (without repetition) at each time.
    pub fn random_baseline(&self, times: &[f64]) -> Vec<f64> {
        let n = self.sorted.len();
        let fevals: Vec<f64> = times
            .iter()
            .map(|t| (t / self.time_per_eval).max(1.0).round_ties_even())
            .collect();
        let draw = |m: f64| {
            let i = (m * (n as f64 + 1.0) / (m + 1.0)).round_ties_even() as usize;
            // Descending order: index i of the worst-first list.
            self.sorted[n - 1 - i.min(n - 1)]
        };
        let draws: Vec<f64> = fevals.iter().map(|&m| draw(m)).collect();
        if fevals.len() <= 2 {
            return draws;
        }
        // Smoothed through the distinct evaluation counts (monotone cubic).
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for (k, (&f, &d)) in fevals.iter().zip(&draws).enumerate() {
            if k == 0 || f > fevals[k - 1] {
                x.push(f);
                y.push(d);
            }
        }
        if x.len() < 2 {
            return draws;
        }
        let (f0, f1) = (fevals[0], fevals[fevals.len() - 1]);
        let m = fevals.len();
        let at: Vec<f64> = (0..m)
            .map(|k| f0 + (f1 - f0) * k as f64 / (m - 1) as f64)
            .collect();
        fit::pchip(&x, &y, &at)
    }

    /// The technique's curve over `times`: the best cost it is expected to have found.
    ///
    /// # Errors
    /// [`Error::Score`] when a run has fewer than two valid points in the time
    /// range, or the runs stop before it begins.
    pub fn technique_curve(&self, runs: &[Trace], times: &[f64]) -> Result<Vec<f64>> {
        let (t0, t1) = (times[0], times[times.len() - 1]);
        // Best so far per evaluation, `None` until the first valid one.
        let bests: Vec<Vec<(f64, Option<f64>)>> = runs
            .iter()
            .map(|r| {
                let mut b: Option<f64> = None;
                r.steps
                    .iter()
                    .map(|&(t, c)| {
                        if let Some(c) = c.filter(|c| c.is_finite()) {
                            b = Some(b.map_or(c, |b| b.min(c)));
                        }
                        (t, b)
                    })
                    .collect()
            })
            .collect();
        // Rows are evaluation numbers; rows where no run has a valid best are dropped.
        let longest = bests.iter().map(Vec::len).max().unwrap_or(0);
        let rows = (0..longest)
            .filter(|&k| {
                bests
                    .iter()
                    .any(|b| b.get(k).is_some_and(|s| s.1.is_some()))
            })
            .count()
            .max(1);
        // The stopping point: the smallest last time above the median of the runs' last
        // (valid) times.
        let mut last: Vec<f64> = bests
            .iter()
            .filter_map(|b| b.iter().rev().find(|s| s.1.is_some()).map(|s| s.0))
            .collect();
        last.sort_by(f64::total_cmp);
        let stop = if last.is_empty() {
            t1
        } else {
            let med = median(&last);
            last.iter().copied().find(|&t| t > med).unwrap_or(t1)
        };
        let margin = 0.1 + 0.25 / rows as f64;
        let (lo, hi) = (t0 * (1.0 - margin), t1 * (1.0 + margin));
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for (r, b) in bests.iter().enumerate() {
            let mut inside = 0;
            for &(t, best) in b {
                if let Some(v) = best.filter(|_| lo <= t && t <= hi) {
                    inside += 1;
                    xs.push(t);
                    ys.push(self.sorted.partition_point(|&x| x < v) as f64);
                }
            }
            if inside < 2 {
                return Err(invalid(format!(
                    "run {r} has {inside} valid evaluations between {lo:.4} s and {hi:.4} s; \
                     the score needs runs that cover its time range"
                )));
            }
        }
        let (ymin, ymax) = ys
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &y| {
                (a.min(y), b.max(y))
            });
        let last_index = self.sorted.len() - 1;
        let mut curve: Vec<f64> = fit::isotonic_decreasing(&xs, &ys, ymin, ymax, times)
            .into_iter()
            .map(|i| self.sorted[(i.round_ties_even().max(0.0) as usize).min(last_index)])
            .collect();
        if stop < t1 {
            if stop <= t0 {
                return Err(invalid(format!(
                    "the runs stop at {stop:.4} s, before the time range starts at {t0:.4} s"
                )));
            }
            // After the point where fewer than half of the runs go on, hold the curve.
            let k = times.iter().position(|&t| t > stop).unwrap_or(times.len());
            if let Some(&held) = curve.get(k) {
                curve[k..].iter_mut().for_each(|c| *c = held);
            }
        }
        Ok(curve)
    }

    /// The standardised performance `P(t)` of the runs over the score's time range.
    ///
    /// # Errors
    /// See [`SpaceStats::time_range`] and [`SpaceStats::technique_curve`].
    pub fn performance(&self, runs: &[Trace], settings: &Settings) -> Result<Vec<f64>> {
        let times = self.time_range(settings)?;
        let random = self.random_baseline(&times);
        let curve = self.technique_curve(runs, &times)?;
        let opt = self.optimum();
        curve
            .iter()
            .zip(&random)
            .map(|(&s, &r)| {
                if opt == r {
                    Err(invalid("the random baseline reaches the optimum"))
                } else {
                    Ok((s - r) / (opt - r))
                }
            })
            .collect()
    }
}

/// The score of a technique's runs on one space: the mean of [`SpaceStats::performance`].
///
/// # Errors
/// See [`SpaceStats::performance`].
pub fn score(stats: &SpaceStats, runs: &[Trace], settings: &Settings) -> Result<f64> {
    Ok(mean(&stats.performance(runs, settings)?))
}

/// The score over several spaces: the mean of the spaces' scores.
pub fn aggregate(per_space: &[f64]) -> f64 {
    mean(per_space)
}

#[cfg(test)]
mod tests;
