//! Abort conditions: when a tuning run stops.
//!
//! The tuner keeps a [`Progress`] snapshot up to date and asks its [`AbortCondition`] after
//! every new evaluation whether to stop. Conditions combine with `&` (stop when both say so)
//! and `|` (stop when either does), or with [`AbortExt::and`] / [`AbortExt::or`]:
//!
//! ```
//! use std::time::Duration;
//! use tune_runtime::abort::{AbortCondition, Evaluations, Progress, Speedup, Elapsed};
//!
//! // At most 500 evaluations or one minute, and stop early when the best cost improved by
//! // less than 1% over the last 100 evaluations.
//! let stop = (Evaluations(500) | Elapsed(Duration::from_secs(60)))
//!     | Speedup::over_evaluations(1.01, 100);
//! let mut p = Progress::new(1_000_000);
//! assert!(!stop.done(&p));
//! p.evaluations = 500;
//! assert!(stop.done(&p));
//! ```
//!
//! Without a condition the tuner measures the whole space ([`WholeSpace`]). Each condition
//! also has a constructor function (`abort::evaluations(500) | abort::duration(..)`).

use std::fmt;
use std::ops::{BitAnd, BitOr};
use std::time::Duration;

/// One improvement of the best cost: when it happened and the new best.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Improvement {
    /// Time since the start of the run (real or simulated).
    pub elapsed: Duration,
    /// The number of evaluations done when it was found (1 for the first evaluation).
    pub evaluation: u64,
    /// The new best scalar cost.
    pub cost: f64,
}

/// Where a tuning run stands. The tuner updates it after every evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Time since the start: wall time, or the simulated clock in simulation mode.
    pub elapsed: Duration,
    /// Distinct configurations evaluated (valid or not). Memoised answers do not count.
    pub evaluations: u64,
    /// Evaluations that yielded a cost.
    pub valid: u64,
    /// The number of configurations in the space.
    pub space_len: u128,
    /// The best scalar cost so far.
    pub best: Option<f64>,
    /// Every improvement of the best cost, oldest first.
    pub improvements: Vec<Improvement>,
}

impl Progress {
    /// The progress at the start of a run over a space of `space_len` configurations.
    pub fn new(space_len: u128) -> Self {
        Progress {
            elapsed: Duration::ZERO,
            evaluations: 0,
            valid: 0,
            space_len,
            best: None,
            improvements: Vec::new(),
        }
    }

    /// Records one evaluation at `elapsed` with its scalar cost (`None`: it failed). A cost
    /// that is NaN or infinite counts as a failure: it would freeze `best` for good.
    pub fn record(&mut self, elapsed: Duration, cost: Option<f64>) {
        self.elapsed = self.elapsed.max(elapsed);
        self.evaluations += 1;
        if let Some(c) = cost.filter(|c| c.is_finite()) {
            self.valid += 1;
            if self.best.is_none_or(|b| c < b) {
                self.best = Some(c);
                self.improvements.push(Improvement {
                    elapsed: self.elapsed,
                    evaluation: self.evaluations,
                    cost: c,
                });
            }
        }
    }

    /// The best cost as it was at `elapsed` (the last improvement at or before it).
    pub fn best_at_time(&self, elapsed: Duration) -> Option<f64> {
        let k = self.improvements.partition_point(|i| i.elapsed <= elapsed);
        k.checked_sub(1).map(|k| self.improvements[k].cost)
    }

    /// The best cost as it was after `evaluations` evaluations.
    pub fn best_at_evaluation(&self, evaluations: u64) -> Option<f64> {
        let k = self
            .improvements
            .partition_point(|i| i.evaluation <= evaluations);
        k.checked_sub(1).map(|k| self.improvements[k].cost)
    }
}

/// When to stop a tuning run.
pub trait AbortCondition: Send + Sync + fmt::Debug {
    /// Whether the run should stop now.
    fn done(&self, progress: &Progress) -> bool;
    /// How far along the run is, in `0.0..=1.0`, if the condition can tell (for the
    /// progress bar's ETA). Conditions that depend on the costs found return `None`.
    fn fraction(&self, _progress: &Progress) -> Option<f64> {
        None
    }
    /// The most evaluations the run can take under this condition, if it bounds them (the
    /// tuner hands it to the technique as [`Technique::budget`](crate::search::Technique::budget)
    /// so that it can plan its exploration).
    fn evaluation_limit(&self) -> Option<u64> {
        None
    }
}

impl<A: AbortCondition + ?Sized> AbortCondition for Box<A> {
    fn done(&self, p: &Progress) -> bool {
        (**self).done(p)
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        (**self).fraction(p)
    }
    fn evaluation_limit(&self) -> Option<u64> {
        (**self).evaluation_limit()
    }
}

fn ratio(num: f64, den: f64) -> f64 {
    if den <= 0.0 {
        1.0
    } else {
        (num / den).clamp(0.0, 1.0)
    }
}

/// Stop after this much time: wall time, or the simulated clock in simulation mode (where
/// the evaluator charges each evaluation's recorded time). A resumed run starts its clock
/// where its log ends, so the limit is for the whole tuning, as an evaluation budget is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Elapsed(pub Duration);

impl AbortCondition for Elapsed {
    fn done(&self, p: &Progress) -> bool {
        p.elapsed >= self.0
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        Some(ratio(p.elapsed.as_secs_f64(), self.0.as_secs_f64()))
    }
}

/// Stop after this many evaluations (valid or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evaluations(pub u64);

impl AbortCondition for Evaluations {
    fn done(&self, p: &Progress) -> bool {
        p.evaluations >= self.0
    }
    fn evaluation_limit(&self) -> Option<u64> {
        Some(self.0)
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        Some(ratio(p.evaluations as f64, self.0 as f64))
    }
}

/// Stop after this many valid evaluations (those that yielded a cost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidEvaluations(pub u64);

impl AbortCondition for ValidEvaluations {
    fn done(&self, p: &Progress) -> bool {
        p.valid >= self.0
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        Some(ratio(p.valid as f64, self.0 as f64))
    }
}

/// Stop after evaluating this fraction (`0.0..=1.0`) of the space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fraction(pub f64);

impl Fraction {
    fn target(&self, p: &Progress) -> f64 {
        (self.0.clamp(0.0, 1.0) * p.space_len as f64).ceil()
    }
}

impl AbortCondition for Fraction {
    fn done(&self, p: &Progress) -> bool {
        p.evaluations as f64 >= self.target(p) || p.evaluations as u128 >= p.space_len
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        Some(ratio(p.evaluations as f64, self.target(p)))
    }
}

/// Stop once every configuration of the space was evaluated. The default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WholeSpace;

impl AbortCondition for WholeSpace {
    fn done(&self, p: &Progress) -> bool {
        p.evaluations as u128 >= p.space_len
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        Some(ratio(p.evaluations as f64, p.space_len as f64))
    }
}

/// Stop once the best scalar cost is at or below this value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostReached(pub f64);

impl AbortCondition for CostReached {
    fn done(&self, p: &Progress) -> bool {
        p.best.is_some_and(|b| b <= self.0)
    }
}

/// Stop when the best cost improved by less than a factor over a recent window (ATF's
/// speedup condition). The factor is `best before the window / best now`; a factor of
/// `1.05` asks for at least 5% improvement per window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Speedup {
    factor: f64,
    window: Window,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Window {
    Time(Duration),
    Evaluations(u64),
}

impl Speedup {
    /// Stop if the best cost improved by less than `factor` within the last `window` of
    /// time (real or simulated). Never stops before `window` has passed.
    pub fn over_time(factor: f64, window: Duration) -> Self {
        Speedup {
            factor,
            window: Window::Time(window),
        }
    }
    /// Stop if the best cost improved by less than `factor` within the last `n`
    /// evaluations. Never stops before `n` evaluations.
    pub fn over_evaluations(factor: f64, n: u64) -> Self {
        Speedup {
            factor,
            window: Window::Evaluations(n),
        }
    }
}

impl AbortCondition for Speedup {
    fn done(&self, p: &Progress) -> bool {
        let before = match self.window {
            Window::Time(t) => {
                let Some(start) = p.elapsed.checked_sub(t) else {
                    return false;
                };
                p.best_at_time(start)
            }
            Window::Evaluations(n) => {
                let Some(start) = p.evaluations.checked_sub(n) else {
                    return false;
                };
                p.best_at_evaluation(start)
            }
        };
        match (before, p.best) {
            // Something was found within the window where nothing was before: progress.
            (None, Some(_)) => false,
            // Nothing found at all: no speedup either.
            (None, None) => true,
            (Some(b), Some(now)) => {
                let speedup = if now > 0.0 {
                    b / now
                } else if now < b {
                    // Costs at or below zero have no ratio: any improvement counts as enough.
                    f64::INFINITY
                } else {
                    1.0
                };
                speedup < self.factor
            }
            (Some(_), None) => true,
        }
    }
}

/// Stop after this much time (real or simulated): [`Elapsed`].
pub fn duration(limit: Duration) -> Elapsed {
    Elapsed(limit)
}

/// Stop after `n` evaluations: [`Evaluations`].
pub fn evaluations(n: u64) -> Evaluations {
    Evaluations(n)
}

/// Stop after `n` valid evaluations: [`ValidEvaluations`].
pub fn valid_evaluations(n: u64) -> ValidEvaluations {
    ValidEvaluations(n)
}

/// Stop after evaluating this fraction of the space: [`Fraction`].
pub fn fraction(f: f64) -> Fraction {
    Fraction(f)
}

/// Stop once the best cost is at or below `cost`: [`CostReached`].
pub fn cost(cost: f64) -> CostReached {
    CostReached(cost)
}

/// Stop if the best cost improved by less than `factor` over the last `window` of time.
pub fn speedup_over_time(factor: f64, window: Duration) -> Speedup {
    Speedup::over_time(factor, window)
}

/// Stop if the best cost improved by less than `factor` over the last `n` evaluations.
pub fn speedup_over_evaluations(factor: f64, n: u64) -> Speedup {
    Speedup::over_evaluations(factor, n)
}

/// Stop once the whole space is measured (the default): [`WholeSpace`].
pub fn whole_space() -> WholeSpace {
    WholeSpace
}

/// Stops when both conditions do. Made by `a & b` or [`AbortExt::and`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct And<A, B>(pub A, pub B);

impl<A: AbortCondition, B: AbortCondition> AbortCondition for And<A, B> {
    fn done(&self, p: &Progress) -> bool {
        self.0.done(p) && self.1.done(p)
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        // Done when the later of the two is: the smaller fraction, if both are known.
        Some(self.0.fraction(p)?.min(self.1.fraction(p)?))
    }
    fn evaluation_limit(&self) -> Option<u64> {
        // Bounded only if both are.
        Some(self.0.evaluation_limit()?.max(self.1.evaluation_limit()?))
    }
}

/// Stops when either condition does. Made by `a | b` or [`AbortExt::or`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Or<A, B>(pub A, pub B);

impl<A: AbortCondition, B: AbortCondition> AbortCondition for Or<A, B> {
    fn done(&self, p: &Progress) -> bool {
        self.0.done(p) || self.1.done(p)
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        // Done at the latest when the first known one is: the larger known fraction.
        match (self.0.fraction(p), self.1.fraction(p)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
    fn evaluation_limit(&self) -> Option<u64> {
        // Either one that bounds the run bounds it.
        match (self.0.evaluation_limit(), self.1.evaluation_limit()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// `.and()` / `.or()` on every abort condition.
pub trait AbortExt: AbortCondition + Sized {
    /// Stop when both `self` and `other` say so.
    fn and<B: AbortCondition>(self, other: B) -> And<Self, B> {
        And(self, other)
    }
    /// Stop when either `self` or `other` says so.
    fn or<B: AbortCondition>(self, other: B) -> Or<Self, B> {
        Or(self, other)
    }
}

impl<A: AbortCondition> AbortExt for A {}

macro_rules! impl_ops {
    ($($t:ident $(<$($g:ident),*>)?),* $(,)?) => {$(
        impl<$($($g: AbortCondition,)*)? Rhs: AbortCondition> BitAnd<Rhs> for $t $(<$($g),*>)? {
            type Output = And<Self, Rhs>;
            fn bitand(self, rhs: Rhs) -> Self::Output {
                And(self, rhs)
            }
        }
        impl<$($($g: AbortCondition,)*)? Rhs: AbortCondition> BitOr<Rhs> for $t $(<$($g),*>)? {
            type Output = Or<Self, Rhs>;
            fn bitor(self, rhs: Rhs) -> Self::Output {
                Or(self, rhs)
            }
        }
    )*};
}

impl_ops!(
    Elapsed,
    Evaluations,
    ValidEvaluations,
    Fraction,
    WholeSpace,
    CostReached,
    Speedup,
    And<A, B>,
    Or<A, B>,
);

#[cfg(test)]
mod tests;
