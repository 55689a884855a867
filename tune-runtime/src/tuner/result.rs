//! What a run hands back: the winner, the finalists, every record and counts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::cost::Cost;
use crate::measure::{Contender, Finalist, Remeasured};
use crate::param::Value;
use crate::results::{export, Named, Record};
use crate::space::{Config, Space};

/// The best configuration of a run.
#[derive(Clone, Debug)]
pub struct Best<C> {
    /// The configuration.
    pub config: Config,
    /// Its index in the space.
    pub index: u128,
    /// Its typed cost as the search measured it; `None` when it was measured by an earlier
    /// run (resumed from the log, or the best recorded in the database), which keeps the
    /// objectives, not the typed cost.
    pub cost: Option<C>,
    /// Its scalar cost as the search measured it (or as recorded).
    pub scalar: f64,
    /// Its named objectives as the search measured them (or as recorded).
    pub objectives: Named<f64>,
    /// Whether its measurement in the search stopped early (it was far slower than the best
    /// so far); such a configuration is the best only when nothing else was valid.
    pub stopped_early: bool,
    /// Its re-measurement at the end of the run, if the finalists were re-measured: the
    /// figure to trust (see [`crate::measure`]).
    pub remeasured: Option<Remeasured<C>>,
}

impl<C: Cost> Best<C> {
    /// Whether `cost` (with its objectives) is better than this one.
    pub(super) fn beaten_by(&self, cost: Option<&C>, objectives: &Named<f64>) -> bool {
        match (cost, &self.cost) {
            (Some(new), Some(old)) => new.compare(old).is_lt(),
            _ => {
                let a = objectives.0.iter().map(|o| o.1);
                let b = self.objectives.0.iter().map(|o| o.1);
                a.partial_cmp(b).is_some_and(|o| o.is_lt())
            }
        }
    }

    /// The scalar cost to report: the re-measured median if there is one, else the
    /// search's value.
    pub fn final_scalar(&self) -> f64 {
        self.remeasured
            .as_ref()
            .map_or(self.scalar, |r| r.spread.median)
    }
}

/// What a tuning run found.
#[derive(Clone, Debug)]
pub struct TuningResult<C> {
    /// The best configuration: the winner of the re-measurement, else the search's best.
    pub best: Best<C>,
    /// The contenders of the final re-measurement (the search's best few, the recorded
    /// best, baselines), each with its value before and after; empty when nothing was
    /// re-measured.
    pub finalists: Vec<Finalist<C>>,
    /// Every evaluation of the search, resumed ones first, in the order they completed.
    pub records: Vec<Record>,
    /// The records of the re-measurement, one per configuration re-measured (their
    /// `remeasured` holds every round's cost), as appended to the log after the search.
    pub remeasure_records: Vec<Record>,
    /// Configurations evaluated (resumed ones included).
    pub evaluations: u64,
    /// Of which valid.
    pub valid: u64,
    /// How many were taken from the log instead of measured.
    pub resumed: u64,
    /// Time the measuring thread waited for preparation (compilation): the part of it that
    /// was not hidden behind measurement. With a batch of 1 it is all of it.
    pub waiting_for_preparation: Duration,
    /// Failures by kind (`compile`, `wrong_result`, `invalid_cost`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Time the search took: wall time, or simulated time in simulation mode.
    pub elapsed: Duration,
    /// Wall time spent re-measuring the finalists after the search.
    pub remeasuring: Duration,
    /// Whether `elapsed` is simulated (the evaluator charged recorded times).
    pub simulated: bool,
    /// The space searched.
    pub space: Space,
    /// The tunable's name.
    pub tunable: String,
    /// The input key.
    pub input_key: String,
    /// The device.
    pub device: String,
    /// The technique.
    pub technique: String,
    /// The seed.
    pub seed: u64,
    /// The log written, if any.
    pub log: Option<PathBuf>,
    /// The database file written, if a database was given and it changed.
    pub database: Option<PathBuf>,
}

impl<C: Cost> TuningResult<C> {
    /// The best configuration's named values.
    pub fn best_values(&self) -> Vec<(&str, Value)> {
        self.space.values(&self.best.config)
    }

    /// The records of configurations whose output did not validate, in the search or when
    /// they were measured again.
    pub fn wrong_results(&self) -> impl Iterator<Item = &Record> {
        self.records
            .iter()
            .chain(&self.remeasure_records)
            .filter(|r| r.status == "wrong_result")
    }

    /// The re-measurement of the baseline called `name`.
    pub fn baseline(&self, name: &str) -> Option<&Finalist<C>> {
        self.finalists
            .iter()
            .find(|f| matches!(&f.contender, Contender::Baseline(n) if n == name))
    }

    /// How many times faster the winner is than the baseline called `name`: the ratio of
    /// their re-measured medians (`None` if either was not re-measured).
    pub fn speedup(&self, name: &str) -> Option<f64> {
        let base = self.baseline(name)?.median()?;
        let best = self.best.remeasured.as_ref()?.spread.median;
        Some(base / best)
    }

    /// Every evaluation as CSV (see [`export::to_csv`]).
    pub fn to_csv(&self) -> String {
        export::to_csv(&self.records)
    }

    /// Every evaluation in the community T4 format (see [`export::T4`]).
    pub fn to_t4(&self) -> export::T4 {
        export::T4::from_records(&self.records)
    }

    /// A few lines for a terminal: best configuration and cost, the re-measurement,
    /// counts, files written.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{}{}: best {} with cost {:.6e} ({}){}\n  {} evaluations ({} valid{}) in {:.2?}{} by {} (seed {})",
            self.tunable,
            if self.input_key.is_empty() {
                String::new()
            } else {
                format!(" [{}]", self.input_key)
            },
            self.space.describe(&self.best.config),
            self.best.scalar,
            self.best
                .objectives
                .0
                .iter()
                .map(|(n, v)| format!("{n} = {v:.6e}"))
                .collect::<Vec<_>>()
                .join(", "),
            if self.best.stopped_early {
                ", stopped early"
            } else {
                ""
            },
            self.evaluations,
            self.valid,
            if self.resumed > 0 {
                format!(", {} resumed from the log", self.resumed)
            } else {
                String::new()
            },
            self.elapsed,
            if self.simulated { " (simulated)" } else { "" },
            self.technique,
            self.seed,
        );
        if !self.finalists.is_empty() {
            s.push_str(&format!(
                "\n  re-measured in {:.2?} (median [min, max] ±half range):",
                self.remeasuring
            ));
            for f in &self.finalists {
                let what = match &f.config {
                    Some(c) => format!("{} {}", f.contender, self.space.describe(c)),
                    None => f.contender.to_string(),
                };
                let won = f.index.is_some()
                    && f.index == Some(self.best.index)
                    && !matches!(f.contender, Contender::Baseline(_));
                let before = f
                    .before
                    .map_or(String::new(), |b| format!(" (before: {b:.4e})"));
                let after = match &f.outcome {
                    Ok(r) => r.spread.to_string(),
                    Err(e) => format!("out: {e}"),
                };
                s.push_str(&format!(
                    "\n  {} {what}: {after}{before}",
                    if won { "*" } else { " " }
                ));
            }
            for f in &self.finalists {
                if let Contender::Baseline(name) = &f.contender {
                    if let Some(x) = self.speedup(name) {
                        s.push_str(&format!("\n  speedup over `{name}`: {x:.3}x"));
                    }
                }
            }
        }
        if !self.failures.is_empty() {
            s.push_str(&format!("\n  failures: {}", counts(&self.failures)));
        }
        if let Some(p) = &self.log {
            s.push_str(&format!("\n  log: {}", p.display()));
        }
        if let Some(p) = &self.database {
            s.push_str(&format!("\n  database: {}", p.display()));
        }
        s
    }
}

/// Failures by kind as `kind: n, kind: n`.
pub(super) fn counts(m: &BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
