//! What a log says at a glance: counts, failures by kind, the best configurations, and the
//! best-so-far curve of each run in it (a log may hold several runs: resumed, repeated, or
//! one per technique). `tune show`, `tune watch` and the plots read logs through this.
//!
//! ```
//! use tune_runtime::summary::Summary;
//! # let records = Vec::new();
//! let s = Summary::of(&records, 3);
//! println!("{s}");
//! ```

use std::collections::BTreeMap;
use std::fmt;

use crate::cost::Cost;
use crate::param::Value;
use crate::results::{Named, Record};
use crate::tuner::TuningResult;

/// One point of a best-so-far curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Evaluations so far in this run (1-based).
    pub evaluation: u64,
    /// The run's clock when it completed, seconds (simulated in simulation mode).
    pub elapsed_s: f64,
    /// The best cost so far, if anything valid was measured yet.
    pub best: Option<f64>,
}

/// The records of one run: same tunable, input, device, technique and seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// `technique (seed N)`, plus the tunable where a log mixes tunables.
    pub label: String,
    /// The technique.
    pub technique: String,
    /// The seed.
    pub seed: u64,
    /// The best-so-far curve, one point per evaluation.
    pub curve: Vec<Point>,
}

/// Splits records into runs, in order of first appearance. The records of the final
/// re-measurement ([`Record::remeasured`]) are not evaluations of the search and are left out.
pub fn runs(records: &[Record]) -> Vec<Run> {
    let mut keys: Vec<(String, String, String, String, u64)> = Vec::new();
    let mut out: Vec<Run> = Vec::new();
    let tunables: std::collections::BTreeSet<&str> = records.iter().map(|r| &*r.tunable).collect();
    for r in records.iter().filter(|r| r.remeasured.is_none()) {
        let key = (
            r.tunable.to_string(),
            r.input_key.to_string(),
            r.device.to_string(),
            r.technique.to_string(),
            r.seed,
        );
        let i = match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                keys.push(key);
                let mut label = format!("{} (seed {})", r.technique, r.seed);
                if tunables.len() > 1 {
                    label = format!("{}: {label}", r.tunable);
                }
                out.push(Run {
                    label,
                    technique: r.technique.to_string(),
                    seed: r.seed,
                    curve: Vec::new(),
                });
                out.len() - 1
            }
        };
        let curve = &mut out[i].curve;
        let prev = curve.last().and_then(|p| p.best);
        let best = match (prev, r.cost.filter(|c| c.is_finite())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        curve.push(Point {
            evaluation: curve.len() as u64 + 1,
            elapsed_s: r.elapsed_s,
            best,
        });
    }
    out
}

/// The name of the cost the records carry (`time_s`, `cost`, ...).
pub fn objective(records: &[Record]) -> String {
    records
        .iter()
        .find_map(|r| r.objectives.0.first().map(|(n, _)| n.clone()))
        .unwrap_or_else(|| "cost".into())
}

/// The median best-so-far of uniform random search without repetition over a space whose
/// configurations have these costs (`None`: failed), after 1, 2, ..., `max_k` evaluations.
/// `None` where random search finds nothing valid in more than half of its draws.
///
/// The chance that the best of `k` distinct draws from `n` is worse than the `i` best
/// costs is `C(n - i, k) / C(n, k)`; the median is the smallest cost where that falls to
/// one half.
pub fn random_baseline(costs: &[Option<f64>], max_k: usize) -> Vec<Option<f64>> {
    let mut valid: Vec<f64> = costs
        .iter()
        .flatten()
        .copied()
        .filter(|c| c.is_finite())
        .collect();
    valid.sort_by(f64::total_cmp);
    let n = costs.len();
    // ln C(n - i, k) - ln C(n, k) = sum_{j<k} ln((n - i - j) / (n - j)).
    let p_worse = |i: usize, k: usize| -> f64 {
        if i + k > n {
            return 0.0;
        }
        (0..k)
            .map(|j| ((n - i - j) as f64 / (n - j) as f64).ln())
            .sum::<f64>()
            .exp()
    };
    (1..=max_k.min(n))
        .map(|k| {
            // Smallest i (1-based count of best costs) with P(best is worse than them) <= 1/2.
            let (mut lo, mut hi) = (1usize, valid.len());
            if hi == 0 || p_worse(hi, k) > 0.5 {
                return None;
            }
            while lo < hi {
                let mid = (lo + hi) / 2;
                if p_worse(mid, k) <= 0.5 {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            Some(valid[lo - 1])
        })
        .collect()
}

/// The best configuration of a log.
#[derive(Clone, Debug, PartialEq)]
pub struct BestSeen {
    /// Its values.
    pub config: Named<Value>,
    /// Its cost.
    pub cost: f64,
    /// The record's evaluation number and run.
    pub evaluation: u64,
    /// When it was found, on its run's clock (seconds).
    pub elapsed_s: f64,
    /// The technique that found it.
    pub technique: String,
}

/// Counts, failures, best configurations and runs of a set of records.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Tunables in the records.
    pub tunables: Vec<String>,
    /// Devices.
    pub devices: Vec<String>,
    /// Input keys.
    pub input_keys: Vec<String>,
    /// The cost's name.
    pub objective: String,
    /// Records.
    pub evaluations: u64,
    /// Of which valid.
    pub valid: u64,
    /// Failures by kind.
    pub failures: BTreeMap<String, u64>,
    /// The first message of each failure kind.
    pub first_failure: BTreeMap<String, String>,
    /// The best few distinct configurations, best first.
    pub top: Vec<BestSeen>,
    /// Each run's curve.
    pub runs: Vec<Run>,
    /// The finalists measured again when their run ended, in log order: configuration,
    /// median and the rounds' costs (empty where it failed).
    pub remeasured: Vec<(Named<Value>, Option<f64>, Vec<f64>)>,
    /// The runs' clocks added up, seconds.
    pub elapsed_s: f64,
}

fn distinct(v: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl Summary {
    /// Summarises records, keeping the `top` best distinct configurations.
    pub fn of(records: &[Record], top: usize) -> Summary {
        let remeasured = records
            .iter()
            .filter_map(|r| Some((r.config.clone(), r.cost, r.remeasured.clone()?)))
            .collect();
        // Everything else describes the search; re-measurements are not evaluations.
        let search: Vec<Record> = records
            .iter()
            .filter(|r| r.remeasured.is_none())
            .cloned()
            .collect();
        let records = &search[..];
        let mut failures = BTreeMap::new();
        let mut first_failure = BTreeMap::new();
        for r in records.iter().filter(|r| !r.is_ok()) {
            *failures.entry(r.status.clone()).or_insert(0u64) += 1;
            first_failure
                .entry(r.status.clone())
                .or_insert_with(|| r.detail.clone().unwrap_or_default());
        }
        let mut ok: Vec<&Record> = records
            .iter()
            .filter(|r| r.is_ok() && r.cost.is_some_and(f64::is_finite))
            .collect();
        ok.sort_by(|a, b| {
            a.cost
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.cost.unwrap_or(f64::INFINITY))
        });
        let mut best: Vec<BestSeen> = Vec::new();
        for r in ok {
            if best.len() >= top {
                break;
            }
            if best.iter().any(|b| b.config == r.config) {
                continue;
            }
            best.push(BestSeen {
                config: r.config.clone(),
                cost: r.cost.unwrap_or(f64::INFINITY),
                evaluation: r.evaluation,
                elapsed_s: r.elapsed_s,
                technique: r.technique.to_string(),
            });
        }
        let runs = runs(records);
        Summary {
            tunables: distinct(records.iter().map(|r| r.tunable.to_string())),
            devices: distinct(records.iter().map(|r| r.device.to_string())),
            input_keys: distinct(records.iter().map(|r| r.input_key.to_string())),
            objective: objective(records),
            evaluations: records.len() as u64,
            valid: records.iter().filter(|r| r.is_ok()).count() as u64,
            failures,
            first_failure,
            top: best,
            elapsed_s: runs
                .iter()
                .map(|r| r.curve.iter().map(|p| p.elapsed_s).fold(0.0, f64::max))
                .sum(),
            runs,
            remeasured,
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[String]| {
            let v: Vec<&str> = v
                .iter()
                .map(String::as_str)
                .filter(|s| !s.is_empty())
                .collect();
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(", ")
            }
        };
        writeln!(f, "tunable:     {}", join(&self.tunables))?;
        writeln!(f, "device:      {}", join(&self.devices))?;
        writeln!(f, "input:       {}", join(&self.input_keys))?;
        let rate = if self.elapsed_s > 0.0 {
            format!(
                ", {:.1} evaluations/s",
                self.evaluations as f64 / self.elapsed_s
            )
        } else {
            String::new()
        };
        let runs = if self.runs.len() > 1 {
            format!(" over {} runs", self.runs.len())
        } else {
            String::new()
        };
        writeln!(
            f,
            "evaluations: {} ({} valid) in {:.2} s{runs}{rate}",
            self.evaluations, self.valid, self.elapsed_s
        )?;
        if !self.failures.is_empty() {
            let kinds: Vec<String> = self
                .failures
                .iter()
                .map(|(k, n)| format!("{k}: {n}"))
                .collect();
            writeln!(f, "failures:    {}", kinds.join(", "))?;
            for (k, msg) in &self.first_failure {
                let line = msg.lines().next().unwrap_or("");
                if !line.is_empty() {
                    writeln!(f, "  first {k}: {}", truncate(line, 100))?;
                }
            }
        }
        match self.top.first() {
            Some(b) => writeln!(
                f,
                "best:        {} = {:.6e} at evaluation {} ({:.2} s, {})\n             {}",
                self.objective, b.cost, b.evaluation, b.elapsed_s, b.technique, b.config
            )?,
            None => writeln!(f, "best:        nothing valid yet")?,
        }
        for (i, b) in self.top.iter().enumerate().skip(1) {
            writeln!(f, "  #{:<3} {:.6e}  {}", i + 1, b.cost, b.config)?;
        }
        if !self.remeasured.is_empty() {
            writeln!(f, "re-measured at the end (median, min-max of rounds):")?;
            for (config, median, rounds) in &self.remeasured {
                let lo = rounds.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                match median {
                    Some(m) if !rounds.is_empty() => writeln!(
                        f,
                        "  {m:.6e} ({lo:.6e}-{hi:.6e}, {} rounds)  {config}",
                        rounds.len()
                    )?,
                    _ => writeln!(f, "  failed  {config}")?,
                }
            }
        }
        if self.runs.len() > 1 {
            writeln!(f, "runs:")?;
            for r in &self.runs {
                let last = r.curve.last();
                writeln!(
                    f,
                    "  {:<28} {:>6} evaluations, best {}",
                    r.label,
                    last.map_or(0, |p| p.evaluation),
                    last.and_then(|p| p.best)
                        .map_or("-".into(), |b| format!("{b:.6e}"))
                )?;
            }
        }
        Ok(())
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(n).collect::<String>())
    }
}

impl<C: Cost> TuningResult<C> {
    /// The summary of this run's records and its final re-measurement (see
    /// [`Summary::of`]).
    pub fn report(&self, top: usize) -> Summary {
        let all: Vec<Record> = self
            .records
            .iter()
            .chain(&self.remeasure_records)
            .cloned()
            .collect();
        Summary::of(&all, top)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn rec(technique: &str, seed: u64, cost: Option<f64>, x: i64) -> Record {
        Record {
            tunable: "t".into(),
            input_key: "".into(),
            device: "d".into(),
            evaluation: 1,
            index: 0,
            config: Named(vec![("X".into(), Value::Int(x))]),
            status: if cost.is_some() { "ok" } else { "compile" }.into(),
            detail: cost.is_none().then(|| "error: x".into()),
            cost,
            objectives: Named(
                cost.map(|c| ("time_s".to_string(), c))
                    .into_iter()
                    .collect(),
            ),
            samples: vec![],
            prepare_s: 0.0,
            run_s: 0.0,
            validation_s: None,
            elapsed_s: x as f64,
            seed,
            technique: technique.into(),
            timestamp: String::new(),
            stopped_early: false,
            remeasured: None,
            measured_on: None,
        }
    }

    #[test]
    fn runs_and_best_so_far() {
        let rs = vec![
            rec("random", 0, Some(3.0), 1),
            rec("bandit", 0, None, 2),
            rec("random", 0, Some(5.0), 3),
            rec("bandit", 0, Some(1.0), 4),
            rec("random", 0, Some(2.0), 5),
        ];
        let runs = runs(&rs);
        assert_eq!(runs.len(), 2);
        let best: Vec<_> = runs[0].curve.iter().map(|p| p.best).collect();
        assert_eq!(best, [Some(3.0), Some(3.0), Some(2.0)]);
        assert_eq!(runs[1].curve[0].best, None);
        assert_eq!(runs[1].curve[1].evaluation, 2);
        let s = Summary::of(&rs, 2);
        assert_eq!((s.evaluations, s.valid), (5, 4));
        assert_eq!(s.failures.get("compile"), Some(&1));
        assert_eq!(s.top.len(), 2);
        assert_eq!(s.top[0].cost, 1.0);
        assert_eq!(s.objective, "time_s");
        let text = s.to_string();
        assert!(
            text.contains("compile: 1") && text.contains("X=4"),
            "{text}"
        );
    }

    #[test]
    fn remeasurements_are_listed_apart_from_the_search() {
        let mut again = rec("random", 0, Some(2.5), 5);
        again.remeasured = Some(vec![2.4, 2.5, 2.7]);
        let mut failed = rec("random", 0, None, 3);
        failed.remeasured = Some(vec![]);
        let rs = vec![
            rec("random", 0, Some(3.0), 1),
            rec("random", 0, Some(2.0), 5),
            again,
            failed,
        ];
        assert_eq!(runs(&rs)[0].curve.len(), 2);
        let s = Summary::of(&rs, 3);
        assert_eq!((s.evaluations, s.valid), (2, 2));
        assert!(s.failures.is_empty());
        assert_eq!(s.top[0].cost, 2.0);
        assert_eq!(s.remeasured.len(), 2);
        let text = s.to_string();
        assert!(
            text.contains("3 rounds") && text.contains("failed  X=3"),
            "{text}"
        );
    }

    #[test]
    fn random_baseline_is_the_median_best_of_k() {
        // Costs 1..=10: the best of all 10 draws is 1; of one draw, the median of 1..=10.
        let costs: Vec<Option<f64>> = (1..=10).map(|c| Some(c as f64)).collect();
        let b = random_baseline(&costs, 10);
        assert_eq!(b.len(), 10);
        assert_eq!(b[0], Some(5.0));
        assert_eq!(b[9], Some(1.0));
        assert!(b.windows(2).all(|w| w[1] <= w[0]));
        // Brute force for k = 2: P(min > c) = C(10 - c, 2) / C(10, 2) <= 1/2 first at c = 3.
        assert_eq!(b[1], Some(3.0));
        // Mostly failures: one draw finds nothing valid more often than not.
        let mut costs = vec![None; 9];
        costs.push(Some(1.0));
        let b = random_baseline(&costs, 10);
        assert_eq!(b[0], None);
        assert_eq!(b[9], Some(1.0));
    }
}
