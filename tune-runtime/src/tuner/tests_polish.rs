//! The polish after the search: a hill climb over one-parameter neighbours of the best,
//! within its own budget, never measuring a configuration twice.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Mutex;

use super::*;
use crate::abort::Evaluations;
use crate::evaluate::closure::Closure;
use crate::evaluate::Failure;
use crate::measure::Remeasure;
use crate::param::Param;
use crate::space::{Config, Space, SpaceBuilder};
use crate::Value;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("A", 0..8))
        .param(Param::<u32>::range("B", 0..8))
        .build()
        .unwrap()
}

fn at(a: u32, b: u32) -> Config {
    space()
        .config_from_values([("A", Value::Int(a.into())), ("B", Value::Int(b.into()))])
        .unwrap()
}

/// One bowl with its minimum at A = 5, B = 6; every measurement counted.
fn bowl(
    counts: &Mutex<HashMap<(u32, u32), usize>>,
) -> Closure<impl Fn(&Config) -> std::result::Result<f64, Failure> + Send + Sync + '_> {
    Closure::new(move |c: &Config| {
        let (a, b) = (c.get::<u32>(0), c.get::<u32>(1));
        *counts.lock().unwrap().entry((a, b)).or_default() += 1;
        let d = |x: u32, m: u32| f64::from(x.abs_diff(m)).powi(2);
        Ok(1.0 + d(a, 5) + d(b, 6))
    })
}

fn run(polish: u64, counts: &Mutex<HashMap<(u32, u32), usize>>) -> TuningResult<f64> {
    Tuner::new(space(), bowl(counts))
        .start_from([at(0, 0)])
        .abort(Evaluations(1))
        .remeasure(Remeasure::OFF)
        .batch(4)
        .polish(polish)
        .progress(false)
        .run()
        .unwrap()
}

#[test]
fn the_polish_climbs_from_the_search_best_to_the_optimum_measuring_each_once() {
    let counts = Mutex::default();
    let r = run(1000, &counts);
    assert_eq!(
        (r.best.config.get::<u32>(0), r.best.config.get::<u32>(1)),
        (5, 6)
    );
    assert_eq!(r.best.scalar, 1.0);
    let counts = counts.into_inner().unwrap();
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    assert_eq!(counts.len() as u64, r.evaluations);
    // One parameter at a time: from (0, 0) along each axis, then along the better one's.
    assert!(r.evaluations < 64, "{} evaluations", r.evaluations);
}

#[test]
fn the_polish_stays_within_its_budget_and_is_off_by_default() {
    let counts = Mutex::default();
    assert_eq!(run(5, &counts).evaluations, 6);
    let counts = Mutex::default();
    let r = run(0, &counts);
    assert_eq!(r.evaluations, 1);
    assert_eq!(
        (r.best.config.get::<u32>(0), r.best.config.get::<u32>(1)),
        (0, 0)
    );
}

#[test]
fn a_search_that_measured_everything_leaves_nothing_to_polish() {
    let counts = Mutex::default();
    let r = Tuner::new(space(), bowl(&counts))
        .remeasure(Remeasure::OFF)
        .polish(100)
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 64);
    assert!(counts.into_inner().unwrap().values().all(|&n| n == 1));
}
