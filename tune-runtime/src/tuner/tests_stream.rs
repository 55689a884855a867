//! Tests of the asynchronous search loop ([`Tuner::asynchronous`]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::tests::Script;
use super::*;
use crate::abort::Evaluations;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::measure::Remeasure;
use crate::param::Param;
use crate::space::SpaceBuilder;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..12))
        .build()
        .unwrap()
}

/// Preparing X=0 takes `slow`, every other configuration 5 ms; X=11 does not compile.
/// Cost: X.
struct Compiler {
    slow: Duration,
    prepared: AtomicUsize,
}

impl Compiler {
    fn new(slow: Duration) -> Self {
        Compiler {
            slow,
            prepared: AtomicUsize::new(0),
        }
    }
}

impl Evaluator for Compiler {
    type Cost = f64;
    type Prepared = u32;
    fn prepare(&self, _: &Space, c: &Config) -> std::result::Result<u32, Failure> {
        self.prepared.fetch_add(1, Ordering::Relaxed);
        let x: u32 = c.get(0);
        std::thread::sleep(if x == 0 {
            self.slow
        } else {
            Duration::from_millis(5)
        });
        if x == 11 {
            return Err(Failure::Compile("error: X=11".into()));
        }
        Ok(x)
    }
    fn measure(
        &self,
        _: &Space,
        _: &Config,
        x: u32,
    ) -> std::result::Result<Measured<f64>, Failure> {
        Ok(Measured::new(f64::from(x)))
    }
}

fn measured_order(r: &TuningResult<f64>) -> Vec<u128> {
    r.records.iter().map(|rec| rec.index).collect()
}

#[test]
fn a_slow_compilation_holds_up_neither_the_device_nor_the_other_threads() {
    let slow = Duration::from_millis(600);
    let run = |asynchronous: bool| {
        Tuner::new(space(), Compiler::new(slow))
            .technique(Script::new(0..12))
            .batch(4)
            .threads(4)
            .asynchronous(asynchronous)
            .remeasure(Remeasure::off())
            .progress(false)
            .run()
            .unwrap()
    };
    // In batches, X=0 (proposed first) is measured first and its batch waits for it.
    let batched = run(false);
    assert_eq!(measured_order(&batched)[0], 0);
    // Asynchronously, the others are measured while it compiles: all of them here, since
    // the 11 others take 3 x 5 ms on the 3 other threads.
    let streamed = run(true);
    let order = measured_order(&streamed);
    assert_eq!(order.len(), 12);
    assert_eq!(*order.last().unwrap(), 0);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..12).collect::<Vec<u128>>());
    assert_eq!(streamed.best.config.get::<u32>(0), 0);
    assert_eq!(streamed.failures.get("compile").copied(), Some(1));
}

#[test]
fn never_prepares_more_than_the_evaluation_budget() {
    let eval = Compiler::new(Duration::from_millis(5));
    let r = Tuner::new(space(), &eval)
        .technique(Script::new(0..12))
        .batch(4)
        .threads(4)
        .asynchronous(true)
        .abort(Evaluations(6))
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 6);
    assert_eq!(eval.prepared.load(Ordering::Relaxed), 6);
}

#[test]
fn a_proposal_repeated_in_flight_is_measured_once_and_told_twice() {
    let eval = Compiler::new(Duration::from_millis(50));
    let script = Script::new([0, 0, 1, 2, 1, 3]);
    let told = script.1.clone();
    let r = Tuner::new(space(), &eval)
        .technique(script)
        .batch(4)
        .threads(2)
        .asynchronous(true)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 4);
    assert_eq!(eval.prepared.load(Ordering::Relaxed), 4);
    let told = told.lock().unwrap();
    let times = |i: u128| told.iter().filter(|(j, _)| *j == i).count();
    assert_eq!((times(0), times(1), times(2), times(3)), (2, 2, 1, 1));
    assert!(told.iter().all(|(i, c)| *c == Some(*i as f64)));
}

#[test]
fn the_default_technique_measures_exactly_the_budget_asynchronously() {
    let eval = Compiler::new(Duration::from_millis(20));
    let r = Tuner::new(space(), &eval)
        .batch(4)
        .threads(4)
        .asynchronous(true)
        .abort(Evaluations(9))
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 9);
    assert_eq!(eval.prepared.load(Ordering::Relaxed), 9);
    let mut seen = measured_order(&r);
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 9);
}

#[test]
fn the_polish_runs_asynchronously_too_within_its_budget() {
    let eval = Compiler::new(Duration::from_millis(5));
    let r = Tuner::new(space(), &eval)
        .technique(Script::new([10]))
        .batch(4)
        .threads(4)
        .asynchronous(true)
        .abort(Evaluations(1))
        .polish(5)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 6);
    assert_eq!(eval.prepared.load(Ordering::Relaxed), 6);
    assert!(r.best.config.get::<u32>(0) < 10);
}
