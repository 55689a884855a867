//! The final re-measurement of the finalists, the recorded best and baselines; the
//! defaults that prepare ahead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;
use crate::abort::Evaluations;
use crate::evaluate::closure::Closure;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::measure::{Contender, Remeasure};
use crate::param::Param;
use crate::results::database::{Entry, Policy};
use crate::results::{log, Database, Named, Record};
use crate::search::Exhaustive;
use crate::space::{Config, Space, SpaceBuilder};

use super::tests::Script;
use crate::Value;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..8))
        .build()
        .unwrap()
}

fn config(x: u32) -> Config {
    space()
        .config_from_values([("X", Value::Int(x.into()))])
        .unwrap()
}

/// An evaluator whose cost depends on X and on how often X was measured before; it keeps
/// every measurement in order (`'B'` marks a baseline).
struct Noisy<F> {
    cost: F,
    calls: Mutex<HashMap<u32, usize>>,
    prepared: AtomicUsize,
    order: Arc<Mutex<Vec<char>>>,
    charged: Option<Duration>,
}

fn noisy<F>(cost: F) -> Noisy<F>
where
    F: Fn(u32, usize) -> Result<f64, Failure> + Send + Sync,
{
    Noisy {
        cost,
        calls: Mutex::default(),
        prepared: AtomicUsize::new(0),
        order: Arc::default(),
        charged: None,
    }
}

impl<F> Evaluator for Noisy<F>
where
    F: Fn(u32, usize) -> Result<f64, Failure> + Send + Sync,
{
    type Cost = f64;
    type Prepared = u32;
    fn prepare(&self, _: &Space, c: &Config) -> Result<u32, Failure> {
        self.prepared.fetch_add(1, Ordering::Relaxed);
        Ok(c.get(0))
    }
    fn measure(&self, _: &Space, _: &Config, x: u32) -> Result<Measured<f64>, Failure> {
        let call = {
            let mut calls = self.calls.lock().unwrap();
            let n = calls.entry(x).or_insert(0);
            *n += 1;
            *n
        };
        self.order
            .lock()
            .unwrap()
            .push(char::from_digit(x, 10).unwrap());
        (self.cost)(x, call).map(Measured::new)
    }
    fn charged_time(&self, _: &Space, _: &Config) -> Option<Duration> {
        self.charged
    }
}

/// |X - 5| + 1, but X=3 was lucky the first time: 0.5, and 4.0 ever after.
fn lucky_three(x: u32, call: usize) -> Result<f64, Failure> {
    Ok(match (x, call) {
        (3, 1) => 0.5,
        (3, _) => 4.0,
        _ => (x as f64 - 5.0).abs() + 1.0,
    })
}

fn x_of(r: &TuningResult<f64>) -> u32 {
    r.best.config.get(0)
}

#[test]
fn a_lucky_measurement_does_not_win_after_re_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.jsonl");
    let db = Database::open(dir.path().join("tuning"));
    let eval = noisy(lucky_three);
    let r = Tuner::new(space(), &eval)
        .technique(Exhaustive::new())
        .log(&log_path)
        .database(db.clone())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(x_of(&r), 5);
    let won = r.best.remeasured.as_ref().unwrap();
    assert_eq!((won.spread.n, won.spread.median, won.cost), (5, 1.0, 1.0));
    assert_eq!(r.best.scalar, 1.0, "the search's value is kept beside it");
    // The search's best was X=3 at 0.5; re-measured it is 4.0.
    let first = &r.finalists[0];
    assert_eq!(first.contender, Contender::Searched(0));
    assert_eq!(
        (first.index, first.before, first.median()),
        (Some(3), Some(0.5), Some(4.0))
    );
    assert_eq!(r.finalists.len(), 3);
    // Search evaluations and re-measurements are both measured through prepare + measure.
    assert_eq!(eval.prepared.load(Ordering::Relaxed), 8 + 3 * 5);
    // The log has both values: 8 search records, then one per finalist.
    let logged = log::read(&log_path).unwrap();
    assert_eq!(logged.len(), 8 + 3);
    let three: Vec<_> = logged.iter().filter(|r| r.index == 3).collect();
    assert_eq!(three[0].cost, Some(0.5));
    assert_eq!(three[0].remeasured, None);
    assert_eq!(three[1].cost, Some(4.0));
    assert_eq!(three[1].remeasured.as_deref(), Some(&[4.0; 5][..]));
    assert_eq!(r.records.len(), 8, "records are the search's evaluations");
    let key = |r: &Record| (r.evaluation, r.index, r.cost, r.remeasured.clone());
    let logged_again: Vec<_> = logged[8..].iter().map(key).collect();
    assert_eq!(
        r.remeasure_records.iter().map(key).collect::<Vec<_>>(),
        logged_again
    );
    // So has the database.
    let entry = &db.load("unnamed", "cpu").unwrap().unwrap().entries[0];
    assert_eq!(entry.best.get("X"), Some(&Value::Int(5)));
    assert_eq!(entry.cost, 1.0);
    assert_eq!(entry.remeasured.unwrap().median, 1.0);
    let summary = r.summary();
    assert!(
        summary.contains("re-measured") && summary.contains("before: 5.0000e-1"),
        "{summary}"
    );
}

#[test]
fn contenders_are_interleaved_and_rotate_each_round() {
    let eval = noisy(|x, _| Ok(x as f64 + 1.0));
    let order = eval.order.clone();
    let baseline_order = eval.order.clone();
    let r = Tuner::new(space(), &eval)
        .technique(Exhaustive::new())
        .remeasure(Remeasure {
            finalists: 2,
            rounds: 3,
        })
        .baseline("vendor", move || {
            baseline_order.lock().unwrap().push('B');
            Ok(0.5)
        })
        .progress(false)
        .run()
        .unwrap();
    let order: String = order.lock().unwrap().iter().collect();
    // The search (0..8), then the rounds: X=0, X=1 and the baseline, rotated.
    assert_eq!(order, "01234567".to_string() + "01B" + "1B0" + "B01");
    // The baseline is faster, is reported, and does not win.
    assert_eq!(x_of(&r), 0);
    let base = r.baseline("vendor").unwrap();
    assert_eq!((base.config.as_ref(), base.median()), (None, Some(0.5)));
    assert_eq!(r.speedup("vendor"), Some(0.5));
    assert!(
        r.summary().contains("speedup over `vendor`: 0.500x"),
        "{}",
        r.summary()
    );
}

#[test]
fn a_baseline_configuration_is_measured_through_the_evaluator() {
    let eval = noisy(|x, _| Ok(x as f64 + 1.0));
    let r = Tuner::new(space(), &eval)
        .technique(Exhaustive::new())
        .abort(Evaluations(4))
        .baseline_config("default", config(7))
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.speedup("default"), Some(8.0));
    assert_eq!(x_of(&r), 0);
    let outside = SpaceBuilder::new()
        .param(Param::<u32>::range("X", 10..11))
        .build()
        .unwrap()
        .get(0)
        .unwrap();
    let e = Tuner::new(space(), &eval)
        .baseline_config("elsewhere", outside)
        .progress(false)
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("`elsewhere`"), "{e}");
}

#[test]
fn a_finalist_that_fails_when_measured_again_is_out() {
    // X=5 gives a wrong result on its third measurement (a race, say).
    let eval = noisy(|x, call| match (x, call) {
        (5, 3) => Err(Failure::WrongResult("out[0] = 2, expected 1".into())),
        _ => Ok((x as f64 - 5.0).abs() + 1.0),
    });
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.jsonl");
    let r = Tuner::new(space(), &eval)
        .technique(Exhaustive::new())
        .log(&log_path)
        .progress(false)
        .run()
        .unwrap();
    assert_ne!(x_of(&r), 5);
    let five = r.finalists.iter().find(|f| f.index == Some(5)).unwrap();
    assert_eq!(five.outcome.as_ref().unwrap_err().kind(), "wrong_result");
    // Out after its failure: measured in the search and in two rounds only.
    assert_eq!(eval.calls.lock().unwrap()[&5], 3);
    let logged = log::read(&log_path).unwrap();
    let again = logged
        .iter()
        .find(|r| r.index == 5 && r.remeasured.is_some())
        .unwrap();
    assert_eq!(again.status, "wrong_result");
    assert!(again
        .detail
        .as_deref()
        .unwrap()
        .starts_with("re-measuring the search best"));
    // A wrong result is one wherever it shows (the cargo-test flow fails on it).
    let wrong: Vec<_> = r.wrong_results().collect();
    assert_eq!(wrong.len(), 1);
    assert_eq!(wrong[0], again);
}

#[test]
fn simulation_and_off_skip_the_re_measurement() {
    let mut eval = noisy(lucky_three);
    eval.charged = Some(Duration::from_millis(1));
    let r = Tuner::new(space(), &eval)
        .technique(Exhaustive::new())
        .progress(false)
        .run()
        .unwrap();
    assert!(r.simulated && r.finalists.is_empty());
    assert_eq!((x_of(&r), eval.prepared.load(Ordering::Relaxed)), (3, 8));
    let eval = noisy(lucky_three);
    let r = Tuner::new(space(), &eval)
        .technique(Exhaustive::new())
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert!(r.finalists.is_empty() && r.best.remeasured.is_none());
    assert_eq!((x_of(&r), eval.prepared.load(Ordering::Relaxed)), (3, 8));
}

/// Records `x` in `db` as the best for the default tunable on the CPU, at `cost`.
fn record(db: &Database, x: i64, cost: f64) {
    let entry = Entry {
        input_key: String::new(),
        best: Named(vec![("X".into(), Value::Int(x))]),
        cost,
        objectives: Named(vec![("cost".into(), cost)]),
        remeasured: None,
        technique: "earlier".into(),
        seed: 0,
        evaluations: 1,
        valid: 1,
        failures: Default::default(),
        space_len: "8".into(),
        top: vec![],
        timestamp: "2026-01-01T00:00:00.000000Z".into(),
        fingerprint: None,
    };
    db.record("unnamed", "cpu", entry, &space(), Policy::Replace)
        .unwrap();
}

#[test]
fn a_lucky_recorded_best_is_measured_again_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    // An earlier run recorded X=2 at a lucky 0.1; it really costs 4.
    record(&db, 2, 0.1);
    let eval = noisy(|x, _| Ok((x as f64 - 5.0).abs() + 1.0));
    let r = Tuner::new(space(), &eval)
        .technique(Script::new([4, 5, 6]))
        .database(db.clone())
        .progress(false)
        .run()
        .unwrap();
    let recorded = r
        .finalists
        .iter()
        .find(|f| f.contender == Contender::Recorded)
        .unwrap();
    assert_eq!((recorded.before, recorded.median()), (Some(0.1), Some(4.0)));
    assert_eq!(x_of(&r), 5);
    assert_eq!(r.database, Some(db.path("unnamed", "cpu")));
    let entry = &db.load("unnamed", "cpu").unwrap().unwrap().entries[0];
    assert_eq!(entry.best.get("X"), Some(&Value::Int(5)));
}

#[test]
fn a_recorded_best_that_is_faster_stays() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    record(&db, 5, 3.0);
    let before = std::fs::read_to_string(db.path("unnamed", "cpu")).unwrap();
    let eval = noisy(|x, _| Ok((x as f64 - 5.0).abs() + 1.0));
    let r = Tuner::new(space(), &eval)
        .technique(Script::new([0, 1, 2]))
        .database(db.clone())
        .progress(false)
        .run()
        .unwrap();
    // The search found X=2 (4.0); the recorded X=5 re-measures at 1.0 and wins.
    assert_eq!(x_of(&r), 5);
    assert!(r.best.cost.is_none() && r.best.scalar == 3.0);
    assert_eq!(r.best.remeasured.as_ref().unwrap().spread.median, 1.0);
    assert_eq!(r.database, None);
    let after = std::fs::read_to_string(db.path("unnamed", "cpu")).unwrap();
    assert_eq!(before, after, "the database keeps its entry");
}

#[test]
fn resume_passes_over_re_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.jsonl");
    let run = |resume: bool| {
        let eval = noisy(lucky_three);
        let r = Tuner::new(space(), &eval)
            .technique(Exhaustive::new())
            .abort(Evaluations(6))
            .log(&log_path)
            .resume(resume)
            .progress(false)
            .run()
            .unwrap();
        (r, eval.prepared.load(Ordering::Relaxed))
    };
    let (first, _) = run(false);
    assert_eq!(x_of(&first), 5);
    let (second, prepared) = run(true);
    assert_eq!((second.resumed, second.evaluations), (6, 6));
    assert_eq!(prepared, 3 * 5, "only the finalists were measured, again");
    // Resumed, X=3 keeps its lucky 0.5 from the search, and loses again.
    assert_eq!(second.finalists[0].before, Some(0.5));
    assert_eq!(x_of(&second), 5);
    let evaluations: Vec<u64> = log::read(&log_path)
        .unwrap()
        .iter()
        .map(|r| r.evaluation)
        .collect();
    assert_eq!(
        evaluations,
        (1..=12).collect::<Vec<_>>(),
        "numbers stay unique"
    );
}

#[test]
fn defaults_prepare_ahead_and_measure_exactly_the_budget() {
    let threads = Mutex::new(HashSet::new());
    let measured = AtomicUsize::new(0);
    let eval = Closure::new(|_: &Config| -> Result<f64, Failure> { Ok(1.0) }).with_prepare(
        |c: &Config| -> Result<u32, Failure> {
            threads.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_millis(1)); // a compile, in miniature
            Ok(c.get(0))
        },
        |_: &Config, x: u32| -> Result<f64, Failure> {
            measured.fetch_add(1, Ordering::Relaxed);
            Ok(x as f64)
        },
    );
    let r = Tuner::new(space(), &eval)
        .abort(Evaluations(7))
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!((r.evaluations, r.records.len()), (7, 7));
    assert_eq!(
        measured.load(Ordering::Relaxed),
        7,
        "nothing beyond the budget"
    );
    // Prepared on the pool, not on the measuring thread.
    assert!(!threads
        .lock()
        .unwrap()
        .contains(&std::thread::current().id()));
    let shown = format!("{:?}", Tuner::new(space(), &eval));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let batch = cores.clamp(2, 8);
    assert!(
        shown.contains(&format!("batch: {batch}, threads: {cores}")),
        "{shown}"
    );
}
