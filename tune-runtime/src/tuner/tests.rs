#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use std::time::Duration;

use super::*;
use crate::abort::{Elapsed, Evaluations};
use crate::evaluate::closure::Closure;
use crate::evaluate::{Evaluator, Failure, Measured};
use crate::measure::Remeasure;
use crate::param::Param;
use crate::results::{export, log, Database};
use crate::search::Technique;
use crate::space::SpaceBuilder;

/// Random order without repetition over a small space (tests only).
#[derive(Default)]
struct Shuffled {
    order: Vec<u128>,
    told: Vec<(u128, Option<f64>)>,
}

impl Technique for Shuffled {
    fn name(&self) -> &str {
        "shuffled"
    }
    fn init(&mut self, space: &Space, seed: u64) {
        self.order = (0..space.len()).collect();
        self.order.shuffle(&mut SmallRng::seed_from_u64(seed));
        self.order.reverse();
    }
    fn ask(&mut self, _: &Space, n: usize) -> Vec<u128> {
        let k = self.order.len().saturating_sub(n);
        let mut out = self.order.split_off(k);
        out.reverse();
        out
    }
    fn tell(&mut self, _: &Space, index: u128, cost: Option<f64>) {
        self.told.push((index, cost));
    }
}

/// What a technique was told, in order.
pub(super) type Told = std::sync::Arc<Mutex<Vec<(u128, Option<f64>)>>>;

/// Proposes a fixed list, in batches, and keeps what it is told (for the tests of
/// memoisation, costs and re-measurement).
pub(super) struct Script(pub(super) Vec<u128>, pub(super) Told);

impl Script {
    /// Proposes `indices`, in order.
    pub(super) fn new(indices: impl IntoIterator<Item = u128>) -> Self {
        Script(indices.into_iter().collect(), Told::default())
    }
}

impl Technique for Script {
    fn name(&self) -> &str {
        "script"
    }
    fn init(&mut self, _: &Space, _: u64) {}
    fn ask(&mut self, _: &Space, n: usize) -> Vec<u128> {
        let k = n.min(self.0.len());
        self.0.drain(..k).collect()
    }
    fn tell(&mut self, _: &Space, index: u128, cost: Option<f64>) {
        self.1.lock().unwrap().push((index, cost));
    }
}

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..8))
        .param(Param::<u32>::values("Y", [1, 2, 4]))
        .build()
        .unwrap()
}

/// A fake device: cost = |X - 5| + Y. X=0 is the fastest (cost 0.5) but wrong; X=7 does
/// not compile; X=6, Y=4 hangs (timeout); X=1, Y=4 panics.
struct Fake {
    prepared: AtomicUsize,
    measured: AtomicUsize,
}

impl Fake {
    fn new() -> Self {
        Fake {
            prepared: AtomicUsize::new(0),
            measured: AtomicUsize::new(0),
        }
    }
}

impl Evaluator for Fake {
    type Cost = f64;
    type Prepared = u32;
    fn prepare(&self, _: &Space, c: &Config) -> std::result::Result<u32, Failure> {
        self.prepared.fetch_add(1, Ordering::Relaxed);
        let x: u32 = c.get(0);
        if x == 7 {
            return Err(Failure::Compile("error: X=7 overflows local memory".into()));
        }
        Ok(x)
    }
    fn measure(
        &self,
        _: &Space,
        c: &Config,
        x: u32,
    ) -> std::result::Result<Measured<f64>, Failure> {
        self.measured.fetch_add(1, Ordering::Relaxed);
        let y: u32 = c.get(1);
        match (x, y) {
            (0, _) => Err(Failure::WrongResult("out[3] = 1.5, expected 2.0".into())),
            (6, 4) => Err(Failure::Timeout(Duration::from_secs(2))),
            (1, 4) => panic!("index out of bounds"),
            _ => Ok(Measured::new((x as f64 - 5.0).abs() + y as f64)),
        }
    }
    fn device(&self) -> String {
        "fake device".into()
    }
}

fn best_xy(r: &TuningResult<f64>) -> (u32, u32) {
    (r.best.config.get(0), r.best.config.get(1))
}

#[test]
fn the_right_candidate_wins_and_failures_are_recorded() {
    for batch in [1, 5] {
        let fake = Fake::new();
        // The counts below are the search's; re-measurement has its own tests.
        let r = Tuner::new(space(), &fake)
            .technique(Shuffled::default())
            .seed(3)
            .batch(batch)
            .threads(3)
            .remeasure(Remeasure::off())
            .progress(false)
            .run()
            .unwrap();
        assert_eq!(best_xy(&r), (5, 1), "batch {batch}");
        assert_eq!(r.best.cost, Some(1.0));
        assert_eq!(r.evaluations, 24);
        assert_eq!(r.records.len(), 24);
        assert_eq!(fake.prepared.load(Ordering::Relaxed), 24);
        // 3 compile failures are not measured.
        assert_eq!(fake.measured.load(Ordering::Relaxed), 21);
        let f = &r.failures;
        assert_eq!(f.get("wrong_result"), Some(&3));
        assert_eq!(f.get("compile"), Some(&3));
        assert_eq!(f.get("timeout"), Some(&1));
        assert_eq!(f.get("other"), Some(&1), "the panic");
        assert_eq!(r.valid, 24 - 8);
        assert_eq!(r.wrong_results().count(), 3);
        let compile = r.records.iter().find(|r| r.status == "compile").unwrap();
        assert!(compile.detail.as_deref().unwrap().contains("overflows"));
        assert!(r.summary().contains("X=5 Y=1"));
        // Exports carry every evaluation.
        let csv = export::from_csv(&r.to_csv()).unwrap();
        assert_eq!(csv, r.records);
        let t4 = r.to_t4();
        assert_eq!(t4.results.len(), 24);
        assert_eq!(
            t4.results
                .iter()
                .filter(|x| x.invalidity == "compile")
                .count(),
            3
        );
    }
}

#[test]
fn repeated_proposals_are_told_without_measuring() {
    let told = std::sync::Arc::new(Mutex::new(Vec::new()));
    let fake = Fake::new();
    // 9 twice in one batch, 9 again later, and 21 (X=7, a compile failure) twice.
    let script = Script(vec![9, 9, 10, 21, 9, 21, 10, 11], told.clone());
    let r = Tuner::new(space(), &fake)
        .technique(script)
        .batch(3)
        .abort(Evaluations(100))
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 4, "9, 10, 21, 11");
    assert_eq!(fake.prepared.load(Ordering::Relaxed), 4);
    let told = told.lock().unwrap();
    assert_eq!(told.len(), 8, "every proposal is answered");
    let c9 = told
        .iter()
        .filter(|t| t.0 == 9)
        .map(|t| t.1)
        .collect::<Vec<_>>();
    assert_eq!(c9.len(), 3);
    assert!(c9.iter().all(|c| *c == c9[0] && c.is_some()));
    assert!(told.iter().filter(|t| t.0 == 21).all(|t| t.1.is_none()));
}

#[test]
fn no_valid_configuration_is_an_error_with_counts() {
    let eval = Closure::new(|c: &Config| -> std::result::Result<f64, Failure> {
        if c.get::<u32>(0) % 2 == 0 {
            Err(Failure::Compile("nope".into()))
        } else {
            Err(Failure::Timeout(Duration::from_secs(1)))
        }
    });
    let e = Tuner::new(space(), eval).progress(false).run().unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("no valid configuration among 24"), "{msg}");
    assert!(
        msg.contains("compile: 12") && msg.contains("timeout: 12"),
        "{msg}"
    );
}

#[test]
fn abort_conditions_stop_the_run() {
    let r = Tuner::new(space(), Fake::new())
        .technique(Shuffled::default())
        .abort(Evaluations(10))
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 10);
    // The same seed gives the same run.
    let again = Tuner::new(space(), Fake::new())
        .technique(Shuffled::default())
        .abort(Evaluations(10))
        .progress(false)
        .run()
        .unwrap();
    let idx = |r: &TuningResult<f64>| r.records.iter().map(|r| r.index).collect::<Vec<_>>();
    assert_eq!(idx(&r), idx(&again));
}

/// Charges 1 s per evaluation: the simulated clock, not wall time, drives the budget.
struct Simulated;

impl Evaluator for Simulated {
    type Cost = f64;
    type Prepared = ();
    fn prepare(&self, _: &Space, _: &Config) -> std::result::Result<(), Failure> {
        Ok(())
    }
    fn measure(
        &self,
        _: &Space,
        c: &Config,
        (): (),
    ) -> std::result::Result<Measured<f64>, Failure> {
        Ok(Measured::new(c.get::<u32>(0) as f64))
    }
    fn charged_time(&self, _: &Space, _: &Config) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }
}

#[test]
fn simulated_time_drives_duration_budgets() {
    let r = Tuner::new(space(), Simulated)
        .abort(Elapsed(Duration::from_secs(5)))
        .progress(false)
        .run()
        .unwrap();
    assert!(r.simulated);
    assert_eq!(r.evaluations, 5);
    assert_eq!(r.elapsed, Duration::from_secs(5));
    assert_eq!(r.records[4].elapsed_s, 5.0);
}

/// A time limit is for the whole tuning, as an evaluation budget is: a run resumed from a
/// log that already took 5 s of a 7 s limit tunes for 2 s more (`tune run --time`).
#[test]
fn a_resumed_run_counts_the_logs_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let tuner = |limit: u64, resume: bool| {
        Tuner::new(space(), Simulated)
            .technique(Shuffled::default())
            .seed(3)
            .abort(Elapsed(Duration::from_secs(limit)))
            .log(&log)
            .resume(resume)
            .remeasure(Remeasure::off())
            .progress(false)
            .run()
            .unwrap()
    };
    assert_eq!(tuner(5, false).evaluations, 5);
    let r = tuner(7, true);
    assert_eq!((r.resumed, r.evaluations), (5, 7));
    assert_eq!(r.elapsed, Duration::from_secs(7));
    // Past its limit already, a resumed run measures nothing new.
    let r = tuner(6, true);
    assert_eq!((r.resumed, r.evaluations), (7, 7));
}

#[test]
fn resume_after_a_kill_does_not_measure_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs/log.jsonl");
    let first = Fake::new();
    let r = Tuner::new(space(), &first)
        .technique(Shuffled::default())
        .seed(11)
        .abort(Evaluations(10))
        .log(&log)
        .name("fake")
        .input_key("n=8")
        .remeasure(Remeasure::off()) // killed before its re-measurement
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 10);
    // Kill in the middle of writing the tenth record.
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, &text[..text.len() - 15]).unwrap();
    assert_eq!(log::read(&log).unwrap().len(), 9);

    // Another tunable in the same log must not be mistaken for this one.
    let other = Tuner::new(space(), Fake::new())
        .abort(Evaluations(6))
        .log(&log)
        .name("other")
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(other.evaluations, 6);

    let second = Fake::new();
    let r2 = Tuner::new(space(), &second)
        .technique(Shuffled::default())
        .seed(11)
        .abort(Evaluations(15))
        .log(&log)
        .resume(true)
        .name("fake")
        .input_key("n=8")
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r2.resumed, 9);
    assert_eq!(r2.evaluations, 15);
    // Only 6 new ones were prepared: the 10th (lost in the kill) and 5 more.
    assert_eq!(second.prepared.load(Ordering::Relaxed), 6);
    let all = log::read(&log).unwrap();
    let mine: Vec<_> = all.iter().filter(|r| &*r.tunable == "fake").collect();
    assert_eq!(mine.len(), 15, "resumed records are not appended again");
    let mut idx: Vec<u128> = mine.iter().map(|r| r.index).collect();
    idx.sort_unstable();
    idx.dedup();
    assert_eq!(idx.len(), 15, "no configuration measured twice");
    // The same 10 first proposals as the first run (same seed): the order is preserved.
    assert_eq!(
        r.records.iter().map(|r| r.index).collect::<Vec<_>>(),
        r2.records[..10].iter().map(|r| r.index).collect::<Vec<_>>()
    );
    assert_eq!(
        r2.records.iter().map(|r| r.evaluation).collect::<Vec<_>>(),
        (1..=15).collect::<Vec<u64>>()
    );
}

#[test]
fn the_database_receives_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("tuning"));
    let r = Tuner::new(space(), Fake::new())
        .name("fake")
        .input_key("n=8")
        .database(db.clone())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.database, Some(db.path("fake", "fake device")));
    let choice = db
        .choose("fake", "fake device", "n=8", &space(), None)
        .unwrap();
    assert_eq!(choice.source, crate::results::Source::Exact);
    assert_eq!(choice.config, r.best.config);
    let file = db.load("fake", "fake device").unwrap().unwrap();
    assert_eq!(file.entries[0].evaluations, 24);
    assert_eq!(file.entries[0].top.len(), 5);
    assert_eq!(file.entries[0].top[0].cost, 1.0);
}

#[test]
fn tuple_costs_rank_lexicographically() {
    // Same time for every Y; energy decides.
    let eval = Closure::new(|c: &Config| -> std::result::Result<(f64, f64), Failure> {
        let (x, y): (u32, u32) = (c.get(0), c.get(1));
        Ok(((x as f64 - 3.0).abs(), 10.0 / y as f64))
    });
    let r = Tuner::new(space(), eval).progress(false).run().unwrap();
    assert_eq!(best_xy_t(&r), (3, 4));
    assert_eq!(r.records[0].objectives.0.len(), 2);
}

fn best_xy_t(r: &TuningResult<(f64, f64)>) -> (u32, u32) {
    (r.best.config.get(0), r.best.config.get(1))
}

#[test]
fn batches_are_prepared_on_other_threads() {
    let threads = Mutex::new(HashSet::new());
    let eval = Closure::new(|_: &Config| -> std::result::Result<f64, Failure> { Ok(1.0) })
        .with_prepare(
            |c: &Config| -> std::result::Result<u32, Failure> {
                threads.lock().unwrap().insert(std::thread::current().id());
                // Long enough to be worth preparing ahead (a real compile takes longer).
                std::thread::sleep(Duration::from_millis(1));
                Ok(c.get(0))
            },
            |_: &Config, x: u32| -> std::result::Result<f64, Failure> { Ok(x as f64) },
        );
    let r = Tuner::new(space(), eval)
        .batch(4)
        .threads(2)
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 24);
    let threads = threads.lock().unwrap();
    assert!(!threads.contains(&std::thread::current().id()));
    assert!(!threads.is_empty() && threads.len() <= 2);
}

#[test]
fn start_from_measures_the_given_configurations_first() {
    let s = space();
    let find = |x: u32, y: u32| {
        s.iter()
            .find(|c| c.get::<u32>(0) == x && c.get::<u32>(1) == y)
            .unwrap()
    };
    let told: Told = Default::default();
    let script = Script((0..s.len()).collect(), told.clone());
    let outside = SpaceBuilder::new()
        .param(Param::<u32>::range("X", 100..101))
        .param(Param::<u32>::values("Y", [1]))
        .build()
        .unwrap()
        .get(0)
        .unwrap();
    let r = Tuner::new(s.clone(), Fake::new())
        .technique(script)
        .start_from([find(5, 1), outside, find(3, 2)])
        .abort(Evaluations(4))
        .progress(false)
        .run()
        .unwrap();
    let first: Vec<(u32, u32)> = r
        .records
        .iter()
        .take(2)
        .map(|rec| {
            let c = rec.config.config(&s).unwrap();
            (c.get(0), c.get(1))
        })
        .collect();
    assert_eq!(first, [(5, 1), (3, 2)]);
    assert_eq!(best_xy(&r), (5, 1));
    // The technique hears about the starting points too, then proposes its own.
    let told = told.lock().unwrap();
    assert_eq!(told[0].0, s.index_of(&find(5, 1)).unwrap());
    assert_eq!(told.len(), 4);
}

#[test]
fn waiting_for_preparation_is_what_the_pipeline_does_not_hide() {
    // Preparing takes 10 ms, measuring 10 ms: prepared ahead on 4 threads, most of the
    // preparation hides behind measurement; prepared in line (batch 1), none of it does.
    // (At 4 ms, the wake-ups of a loaded 2-core machine's scheduler made up half the wait.)
    let eval = || {
        Closure::new(|_: &Config| -> std::result::Result<f64, Failure> { Ok(1.0) }).with_prepare(
            |c: &Config| -> std::result::Result<u32, Failure> {
                std::thread::sleep(Duration::from_millis(10));
                Ok(c.get(0))
            },
            |_: &Config, x: u32| -> std::result::Result<f64, Failure> {
                std::thread::sleep(Duration::from_millis(10));
                Ok(x as f64)
            },
        )
    };
    let serial = Tuner::new(space(), eval())
        .batch(1)
        .progress(false)
        .run()
        .unwrap();
    assert!(serial.waiting_for_preparation >= Duration::from_millis(24 * 10));
    let ahead = Tuner::new(space(), eval())
        .batch(8)
        .threads(4)
        .progress(false)
        .run()
        .unwrap();
    assert!(
        ahead.waiting_for_preparation < serial.waiting_for_preparation / 2,
        "{:?} vs {:?}",
        ahead.waiting_for_preparation,
        serial.waiting_for_preparation
    );
}

#[test]
fn a_time_budget_ends_the_wait_for_a_slow_preparation() {
    // Configuration 0 prepares at once, every other one takes 1.5 s (a slow compile). With a
    // budget of 0.3 s, the run stops while it waits for configuration 1 instead of after it.
    let eval = Closure::new(|_: &Config| -> std::result::Result<f64, Failure> { Ok(1.0) })
        .with_prepare(
            |c: &Config| -> std::result::Result<u32, Failure> {
                let x: u32 = c.get(0);
                let y: u32 = c.get(1);
                if (x, y) != (0, 1) {
                    std::thread::sleep(Duration::from_millis(1500));
                }
                Ok(x)
            },
            |_: &Config, x: u32| -> std::result::Result<f64, Failure> { Ok(x as f64) },
        );
    let s = space();
    let r = Tuner::new(s.clone(), eval)
        .technique(Script((0..s.len()).collect(), Default::default()))
        .batch(4)
        .threads(4)
        .abort(Elapsed(Duration::from_millis(300)))
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 1);
    assert!(r.elapsed >= Duration::from_millis(300));
}
