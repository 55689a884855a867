//! The final re-measurement: who takes part, in which order they are measured, and who
//! wins.

use super::{admit, Spread};
use crate::cost::Cost;
use crate::evaluate::{Failure, Measured};
use crate::space::Config;

/// How many of a search's best configurations are measured again when it ends, and how
/// often. Plain data: `Remeasure { rounds: 7, ..Default::default() }`.
///
/// The default, 3 finalists in 5 rounds, was chosen before any measurement: three cover a
/// near tie at the top, and the median of five rounds ignores up to two disturbed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remeasure {
    /// How many of the search's best configurations take part (besides the recorded best
    /// and any baseline). 0 turns re-measurement off.
    pub finalists: usize,
    /// How many rounds: each round measures every contender once, in an order that
    /// rotates from round to round. 0 turns re-measurement off.
    pub rounds: usize,
}

impl Remeasure {
    /// No re-measurement: the search's best wins, as measured during the search.
    pub const OFF: Remeasure = Remeasure {
        finalists: 0,
        rounds: 0,
    };

    /// No re-measurement ([`Remeasure::OFF`]).
    pub fn off() -> Self {
        Self::OFF
    }

    /// Whether nothing is re-measured.
    pub fn is_off(&self) -> bool {
        self.finalists == 0 || self.rounds == 0
    }
}

impl Default for Remeasure {
    fn default() -> Self {
        Remeasure {
            finalists: 3,
            rounds: 5,
        }
    }
}

/// Where a contender of the final re-measurement comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Contender {
    /// The search's `k`-th best configuration (0: the search's best).
    Searched(usize),
    /// The best configuration recorded in the tuning database for this tunable, device and
    /// input key (under [`Policy::KeepBetter`](crate::results::database::Policy)).
    Recorded,
    /// A baseline given to the tuner, by name. It is measured for comparison and never wins.
    Baseline(String),
}

impl std::fmt::Display for Contender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Contender::Searched(0) => f.write_str("search best"),
            Contender::Searched(k) => write!(f, "search #{}", k + 1),
            Contender::Recorded => f.write_str("recorded best"),
            Contender::Baseline(name) => write!(f, "baseline `{name}`"),
        }
    }
}

/// One contender of the final re-measurement, with its value before and after.
#[derive(Clone, Debug)]
pub struct Finalist<C> {
    /// Where it comes from.
    pub contender: Contender,
    /// The configuration (`None` for a baseline closure).
    pub config: Option<Config>,
    /// Its index in the space (`None` for a baseline closure).
    pub index: Option<u128>,
    /// Its scalar cost before re-measurement: the search's value, or the recorded one for
    /// [`Contender::Recorded`] (`None` for a baseline).
    pub before: Option<f64>,
    /// The re-measurement, or the failure that disqualified it (its other rounds were
    /// skipped).
    pub outcome: Result<Remeasured<C>, Failure>,
}

impl<C: Cost> Finalist<C> {
    /// The median of its re-measured scalar costs, if it was re-measured.
    pub fn median(&self) -> Option<f64> {
        self.outcome.as_ref().ok().map(|r| r.spread.median)
    }
}

/// What re-measuring one contender gave.
#[derive(Clone, Debug)]
pub struct Remeasured<C> {
    /// The typed cost of the median round (the lower middle one for an even number of
    /// rounds); contenders are ranked by it.
    pub cost: C,
    /// How the rounds' scalar costs scatter.
    pub spread: Spread,
    /// Every round's scalar cost, in the order they were measured.
    pub rounds: Vec<f64>,
    /// Every round's samples (times in seconds), round after round.
    pub samples: Vec<f64>,
    /// Whether the evaluator stopped some round early (far slower than the best so far).
    pub stopped_early: bool,
}

/// The measurements of every contender, round by round. A contender that fails once is
/// out.
pub(crate) struct Rounds<C> {
    results: Vec<Result<Vec<Measured<C>>, Failure>>,
}

impl<C: Cost> Rounds<C> {
    pub(crate) fn new(contenders: usize) -> Self {
        Rounds {
            results: (0..contenders).map(|_| Ok(Vec::new())).collect(),
        }
    }

    /// The contenders to measure in `round`, in order: a rotation by one place per round,
    /// so that each takes every position in turn (drifting clocks and caches favour no one);
    /// those out are left out.
    pub(crate) fn order(&self, round: usize) -> Vec<usize> {
        let n = self.results.len();
        (0..n)
            .map(|j| (round + j) % n)
            .filter(|&k| self.results[k].is_ok())
            .collect()
    }

    /// Adds one measurement of contender `k` (checked by [`admit`]).
    pub(crate) fn add(&mut self, k: usize, outcome: Result<Measured<C>, Failure>) {
        let Some(slot) = self.results.get_mut(k) else {
            return;
        };
        if let Ok(list) = slot {
            match outcome.and_then(admit) {
                Ok(m) => list.push(m),
                Err(f) => *slot = Err(f),
            }
        }
    }

    /// Each contender's re-measurement, in the order they were given.
    pub(crate) fn finish(self) -> Vec<Result<Remeasured<C>, Failure>> {
        self.results
            .into_iter()
            .map(|r| r.and_then(summarise))
            .collect()
    }
}

fn summarise<C: Cost>(mut rounds: Vec<Measured<C>>) -> Result<Remeasured<C>, Failure> {
    let scalars: Vec<f64> = rounds.iter().map(|m| m.cost.scalar()).collect();
    let spread =
        Spread::of(&scalars).ok_or_else(|| Failure::InvalidCost("no round was measured".into()))?;
    let stopped_early = rounds.iter().any(|m| m.stopped_early);
    let samples = rounds
        .iter()
        .flat_map(|m| m.samples.iter().copied())
        .collect();
    let mut order: Vec<usize> = (0..rounds.len()).collect();
    order.sort_by(|&a, &b| rounds[a].cost.compare(&rounds[b].cost));
    let middle = order[(order.len() - 1) / 2];
    Ok(Remeasured {
        cost: rounds.swap_remove(middle).cost,
        spread,
        rounds: scalars,
        samples,
        stopped_early,
    })
}

/// The winner among `finalists`: the configuration with the best re-measured cost,
/// preferring those measured in full in every round; on a tie, the recorded best (so the
/// database does not change for nothing), then the better search rank. Baselines never
/// win. `None` when no configuration was re-measured.
pub(crate) fn winner<C: Cost>(finalists: &[Finalist<C>]) -> Option<usize> {
    let rank = |f: &Finalist<C>| match f.contender {
        Contender::Recorded => 0,
        Contender::Searched(k) => k + 1,
        Contender::Baseline(_) => usize::MAX,
    };
    let candidates = || {
        finalists.iter().enumerate().filter_map(|(k, f)| {
            let r = f.outcome.as_ref().ok()?;
            let eligible = f.config.is_some() && !matches!(f.contender, Contender::Baseline(_));
            eligible.then_some((k, f, r))
        })
    };
    let full = candidates().any(|(_, _, r)| !r.stopped_early);
    candidates()
        .filter(|(_, _, r)| !full || !r.stopped_early)
        .min_by(|(_, fa, a), (_, fb, b)| {
            a.cost
                .compare(&b.cost)
                .then_with(|| rank(fa).cmp(&rank(fb)))
        })
        .map(|(k, _, _)| k)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn finalist(contender: Contender, outcome: Result<f64, ()>, stopped: bool) -> Finalist<f64> {
        Finalist {
            contender,
            config: Some(Config::from_raw(vec![0])),
            index: Some(0),
            before: Some(1.0),
            outcome: outcome
                .map(|c| Remeasured {
                    cost: c,
                    spread: Spread::of(&[c]).unwrap(),
                    rounds: vec![c],
                    samples: vec![],
                    stopped_early: stopped,
                })
                .map_err(|()| Failure::WrongResult("flaky".into())),
        }
    }

    #[test]
    fn rounds_rotate_and_drop_failed_contenders() {
        let mut r = Rounds::<f64>::new(3);
        assert_eq!(r.order(0), [0, 1, 2]);
        assert_eq!(r.order(1), [1, 2, 0]);
        assert_eq!(r.order(5), [2, 0, 1]);
        r.add(1, Err(Failure::Launch("lost".into())));
        assert_eq!(r.order(1), [2, 0]);
        for (k, c) in [(0, 3.0), (0, 1.0), (0, 2.0), (2, 5.0), (2, 4.0)] {
            r.add(k, Ok(Measured::new(c)));
        }
        r.add(2, Ok(Measured::new(f64::NAN)));
        let out = r.finish();
        let first = out[0].as_ref().unwrap();
        assert_eq!(
            (first.cost, first.spread.n, first.spread.min),
            (2.0, 3, 1.0)
        );
        assert_eq!(out[1].as_ref().unwrap_err().kind(), "launch");
        assert_eq!(out[2].as_ref().unwrap_err().kind(), "invalid_cost");
    }

    #[test]
    fn even_rounds_rank_by_the_lower_middle() {
        let mut r = Rounds::<f64>::new(1);
        for c in [4.0, 1.0, 3.0, 2.0] {
            r.add(0, Ok(Measured::new(c)));
        }
        let m = r.finish().remove(0).unwrap();
        assert_eq!((m.cost, m.spread.median), (2.0, 2.5));
    }

    #[test]
    fn the_winner_is_the_fastest_configuration_measured_in_full() {
        let f = vec![
            finalist(Contender::Searched(0), Ok(2.0), false),
            finalist(Contender::Searched(1), Ok(1.5), false),
            finalist(Contender::Recorded, Ok(1.5), false),
            finalist(Contender::Baseline("vendor".into()), Ok(0.5), false),
            finalist(Contender::Searched(2), Err(()), false),
            finalist(Contender::Searched(3), Ok(1.0), true),
        ];
        // The tie between search #2 and the recorded best goes to the recorded one; the
        // baseline and the stopped-early one do not count.
        assert_eq!(winner(&f), Some(2));
        let only_stopped = vec![
            finalist(Contender::Searched(0), Ok(3.0), true),
            finalist(Contender::Searched(1), Ok(2.0), true),
        ];
        assert_eq!(winner(&only_stopped), Some(1));
        assert_eq!(
            winner(&[finalist(Contender::Searched(0), Err(()), false)]),
            None
        );
    }
}
