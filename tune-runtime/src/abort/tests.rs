#![allow(clippy::unwrap_used, clippy::expect_used, clippy::borrowed_box)]

use proptest::prelude::*;

use super::*;

/// A run as a list of (seconds since the previous evaluation, cost or failure).
fn run() -> impl Strategy<Value = (u128, Vec<(u64, Option<f64>)>)> {
    (
        1u128..200,
        prop::collection::vec(
            (0u64..5_000, prop::option::weighted(0.8, 0.001f64..100.0)),
            0..120,
        ),
    )
}

/// Every progress snapshot of a run, in order (the first one before any evaluation).
fn snapshots(space_len: u128, steps: &[(u64, Option<f64>)]) -> Vec<Progress> {
    let mut p = Progress::new(space_len);
    let mut out = vec![p.clone()];
    for &(ms, cost) in steps {
        let t = p.elapsed + Duration::from_millis(ms);
        p.record(t, cost);
        out.push(p.clone());
    }
    out
}

/// Once done, done for the rest of the run.
fn monotonic(c: &dyn AbortCondition, ps: &[Progress]) -> bool {
    let first = ps.iter().position(|p| c.done(p));
    first.is_none_or(|k| ps[k..].iter().all(|p| c.done(p)))
}

fn counters() -> impl Strategy<Value = Box<dyn AbortCondition>> {
    prop_oneof![
        (0u64..150).prop_map(|n| Box::new(Evaluations(n)) as Box<dyn AbortCondition>),
        (0u64..150).prop_map(|n| Box::new(ValidEvaluations(n)) as Box<dyn AbortCondition>),
        (0u64..300_000)
            .prop_map(|ms| Box::new(Elapsed(Duration::from_millis(ms))) as Box<dyn AbortCondition>),
        (0.0f64..=1.0).prop_map(|f| Box::new(Fraction(f)) as Box<dyn AbortCondition>),
        Just(()).prop_map(|()| Box::new(WholeSpace) as Box<dyn AbortCondition>),
        (0.001f64..100.0).prop_map(|c| Box::new(CostReached(c)) as Box<dyn AbortCondition>),
    ]
}

fn any_condition() -> impl Strategy<Value = Box<dyn AbortCondition>> {
    prop_oneof![
        counters(),
        (1.0f64..2.0, 1u64..50).prop_map(|(s, n)| {
            Box::new(Speedup::over_evaluations(s, n)) as Box<dyn AbortCondition>
        }),
        (1.0f64..2.0, 1u64..60_000).prop_map(|(s, ms)| {
            Box::new(Speedup::over_time(s, Duration::from_millis(ms))) as Box<dyn AbortCondition>
        }),
    ]
}

proptest! {
    #[test]
    fn evaluations_stop_at_the_count(n in 0u64..150, (len, steps) in run()) {
        for p in snapshots(len, &steps) {
            prop_assert_eq!(Evaluations(n).done(&p), p.evaluations >= n);
            let f = Evaluations(n).fraction(&p).unwrap();
            prop_assert!((0.0..=1.0).contains(&f));
            prop_assert_eq!(f >= 1.0, p.evaluations >= n);
        }
    }

    #[test]
    fn valid_evaluations_count_only_costs(n in 0u64..150, (len, steps) in run()) {
        for p in snapshots(len, &steps) {
            prop_assert_eq!(ValidEvaluations(n).done(&p), p.valid >= n);
            prop_assert!(p.valid <= p.evaluations);
        }
    }

    #[test]
    fn duration_stops_at_the_time(ms in 0u64..300_000, (len, steps) in run()) {
        let d = Duration::from_millis(ms);
        for p in snapshots(len, &steps) {
            prop_assert_eq!(Elapsed(d).done(&p), p.elapsed >= d);
            let f = Elapsed(d).fraction(&p).unwrap();
            prop_assert_eq!(f >= 1.0, p.elapsed >= d);
        }
    }

    #[test]
    fn fraction_of_the_space(f in 0.0f64..=1.0, (len, steps) in run()) {
        for p in snapshots(len, &steps) {
            let need = (f * len as f64).ceil() as u128;
            prop_assert_eq!(Fraction(f).done(&p), p.evaluations as u128 >= need.min(len));
        }
    }

    #[test]
    fn whole_space_is_every_configuration((len, steps) in run()) {
        for p in snapshots(len, &steps) {
            prop_assert_eq!(WholeSpace.done(&p), p.evaluations as u128 >= len);
            prop_assert_eq!(WholeSpace.done(&p), Fraction(1.0).done(&p));
        }
    }

    #[test]
    fn cost_reached_is_best_at_most(c in 0.001f64..100.0, (len, steps) in run()) {
        for p in snapshots(len, &steps) {
            let best = steps[..p.evaluations as usize]
                .iter()
                .filter_map(|s| s.1)
                .fold(f64::INFINITY, f64::min);
            prop_assert_eq!(p.best.unwrap_or(f64::INFINITY), best);
            prop_assert_eq!(CostReached(c).done(&p), best <= c);
        }
    }

    #[test]
    fn speedup_over_evaluations_compares_the_window(
        s in 1.0f64..2.0, n in 1u64..50, (len, steps) in run()
    ) {
        let cond = Speedup::over_evaluations(s, n);
        for p in snapshots(len, &steps) {
            let k = p.evaluations as usize;
            let expected = if (k as u64) < n {
                false
            } else {
                let best = |upto: usize| {
                    steps[..upto].iter().filter_map(|s| s.1).reduce(f64::min)
                };
                match (best(k - n as usize), best(k)) {
                    (None, Some(_)) => false,
                    (None, None) | (Some(_), None) => true,
                    (Some(b), Some(now)) => b / now < s,
                }
            };
            prop_assert_eq!(cond.done(&p), expected, "at {} evaluations", k);
        }
    }

    #[test]
    fn speedup_over_time_compares_the_window(
        s in 1.0f64..2.0, ms in 1u64..60_000, (len, steps) in run()
    ) {
        let window = Duration::from_millis(ms);
        let cond = Speedup::over_time(s, window);
        for p in snapshots(len, &steps) {
            let expected = match p.elapsed.checked_sub(window) {
                None => false,
                Some(start) => {
                    let mut t = Duration::ZERO;
                    let mut before: Option<f64> = None;
                    for &(dt, c) in &steps[..p.evaluations as usize] {
                        t += Duration::from_millis(dt);
                        if t <= start {
                            if let Some(c) = c {
                                before = Some(before.map_or(c, |b: f64| b.min(c)));
                            }
                        }
                    }
                    match (before, p.best) {
                        (None, Some(_)) => false,
                        (None, None) | (Some(_), None) => true,
                        (Some(b), Some(now)) => b / now < s,
                    }
                }
            };
            prop_assert_eq!(cond.done(&p), expected);
        }
    }

    #[test]
    fn a_speedup_of_one_never_stops_a_run_that_found_something(
        n in 1u64..50, (len, steps) in run()
    ) {
        // b / now >= 1 always, since the best never gets worse.
        let cond = Speedup::over_evaluations(1.0, n);
        for p in snapshots(len, &steps) {
            if p.best.is_some() {
                prop_assert!(!cond.done(&p));
            }
        }
    }

    #[test]
    fn counters_are_monotonic(c in counters(), (len, steps) in run()) {
        prop_assert!(monotonic(c.as_ref(), &snapshots(len, &steps)));
    }

    #[test]
    fn and_is_both_or_is_either(a in any_condition(), b in any_condition(), (len, steps) in run()) {
        for p in snapshots(len, &steps) {
            let (da, db) = (a.done(&p), b.done(&p));
            prop_assert_eq!((&a & &b).done(&p), da && db);
            prop_assert_eq!((&a | &b).done(&p), da || db);
            prop_assert_eq!(Ref(&a).and(Ref(&b)).done(&p), da && db);
            prop_assert_eq!(Ref(&a).or(Ref(&b)).done(&p), da || db);
        }
    }

    #[test]
    fn combinators_of_monotonic_conditions_are_monotonic(
        a in counters(), b in counters(), c in counters(), (len, steps) in run()
    ) {
        let ps = snapshots(len, &steps);
        prop_assert!(monotonic(&((&a & &b) | &c), &ps));
        prop_assert!(monotonic(&((&a | &b) & &c), &ps));
    }

    #[test]
    fn combined_fractions_stay_in_range(a in any_condition(), b in any_condition(), (len, steps) in run()) {
        for p in snapshots(len, &steps) {
            for f in [(&a & &b).fraction(&p), (&a | &b).fraction(&p)].into_iter().flatten() {
                prop_assert!((0.0..=1.0).contains(&f));
            }
            // `or` knows a fraction whenever either side does; `and` only when both do.
            prop_assert_eq!((&a | &b).fraction(&p).is_some(),
                a.fraction(&p).is_some() || b.fraction(&p).is_some());
            prop_assert_eq!((&a & &b).fraction(&p).is_some(),
                a.fraction(&p).is_some() && b.fraction(&p).is_some());
        }
    }
}

/// A borrowed boxed condition, so the tests can combine the same strategies' values twice.
#[derive(Debug)]
pub struct Ref<'a>(&'a Box<dyn AbortCondition>);

impl AbortCondition for Ref<'_> {
    fn done(&self, p: &Progress) -> bool {
        self.0.done(p)
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        self.0.fraction(p)
    }
}

impl<'a, R: AbortCondition> std::ops::BitAnd<R> for &'a Box<dyn AbortCondition> {
    type Output = And<Ref<'a>, R>;
    fn bitand(self, rhs: R) -> Self::Output {
        And(Ref(self), rhs)
    }
}

impl<'a, R: AbortCondition> std::ops::BitOr<R> for &'a Box<dyn AbortCondition> {
    type Output = Or<Ref<'a>, R>;
    fn bitor(self, rhs: R) -> Self::Output {
        Or(Ref(self), rhs)
    }
}

impl AbortCondition for &Box<dyn AbortCondition> {
    fn done(&self, p: &Progress) -> bool {
        (**self).done(p)
    }
    fn fraction(&self, p: &Progress) -> Option<f64> {
        (**self).fraction(p)
    }
}

#[test]
fn operators_build_nested_conditions() {
    let c = (Evaluations(10) & ValidEvaluations(5)) | Elapsed(Duration::from_secs(1));
    let mut p = Progress::new(100);
    for _ in 0..10 {
        p.record(Duration::ZERO, None);
    }
    assert!(!c.done(&p), "10 evaluations but no valid one");
    p.record(Duration::from_secs(2), None);
    assert!(c.done(&p), "time is up");
    assert!(format!("{c:?}").contains("Evaluations(10)"));
}

#[test]
fn speedup_waits_for_a_full_window() {
    let c = Speedup::over_evaluations(1.1, 3);
    let mut p = Progress::new(100);
    p.record(Duration::ZERO, Some(10.0));
    p.record(Duration::ZERO, Some(10.0));
    assert!(!c.done(&p));
    p.record(Duration::ZERO, Some(10.0));
    // Before the window (0 evaluations) nothing was known: finding something is progress.
    assert!(!c.done(&p));
    p.record(Duration::ZERO, Some(9.5));
    // 10 -> 9.5 is a speedup of 1.05 < 1.1.
    assert!(c.done(&p));
    p.record(Duration::ZERO, Some(5.0));
    assert!(!c.done(&p));
}

#[test]
fn the_evaluation_limit_is_what_bounds_the_run() {
    let secs = Elapsed(Duration::from_secs(5));
    assert_eq!(Evaluations(50).evaluation_limit(), Some(50));
    assert_eq!(secs.evaluation_limit(), None);
    assert_eq!((Evaluations(50) | secs).evaluation_limit(), Some(50));
    assert_eq!(
        (Evaluations(50) | Evaluations(20)).evaluation_limit(),
        Some(20)
    );
    assert_eq!((Evaluations(50) & secs).evaluation_limit(), None);
    assert_eq!(
        (Evaluations(50) & Evaluations(20)).evaluation_limit(),
        Some(50)
    );
    let boxed: Box<dyn AbortCondition> = Box::new(Evaluations(7) | CostReached(1.0));
    assert_eq!(boxed.evaluation_limit(), Some(7));
}
