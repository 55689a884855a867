//! Several devices in one run, on closure evaluators and recorded data: every configuration
//! measured once, by whichever device is free; mixed models refused; a failing device
//! dropped while its configurations are measured elsewhere; budgets, resume and the
//! simulated clock.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::abort::Evaluations;
use crate::evaluate::closure::Closure;
use crate::evaluate::{Evaluator, Failure};
use crate::measure::Remeasure;
use crate::param::Param;
use crate::search::Exhaustive;
use crate::simulate::Recording;
use crate::space::{Config, Space, SpaceBuilder};
use crate::tuner::Tuner;
use crate::Error;

/// A cost function, boxed so that devices of different closures share a type.
type CostFn = Box<dyn Fn(&Config) -> Result<f64, Failure> + Send + Sync>;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..12))
        .param(Param::<u32>::values("Y", [1, 2, 4]))
        .build()
        .unwrap()
}

/// `|X - 5| + Y`; X = 7 does not compile, X = 3 with Y = 4 fails to launch everywhere.
fn cost(c: &Config) -> Result<f64, Failure> {
    let (x, y): (u32, u32) = (c.get(0), c.get(1));
    match (x, y) {
        (7, _) => Err(Failure::Compile("X = 7 does not compile".into())),
        (3, 4) => Err(Failure::Launch("X = 3, Y = 4 reads out of bounds".into())),
        _ => Ok((x as f64 - 5.0).abs() + y as f64),
    }
}

/// A device that measures with `cost` after `delay`, counting how many of the devices
/// measure at the same moment.
fn device(
    delay: Duration,
    busy: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
) -> impl Evaluator<Cost = f64> {
    Closure::new(move |c: &Config| {
        let now = busy.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(delay);
        busy.fetch_sub(1, Ordering::SeqCst);
        cost(c)
    })
}

fn devices(n: usize, delay: Duration) -> (Devices<impl Evaluator<Cost = f64>>, Arc<AtomicUsize>) {
    let busy = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let d = Devices::new((0..n).map(|_| device(delay, busy.clone(), most.clone()))).unwrap();
    (d, most)
}

/// Index -> (status, cost) of every evaluation of the search.
fn outcomes(records: &[crate::results::Record]) -> BTreeMap<u128, (String, Option<f64>)> {
    records
        .iter()
        .map(|r| (r.index, (r.status.clone(), r.cost)))
        .collect()
}

#[test]
fn exhaustive_search_on_four_devices_gives_the_sequential_results() {
    let sequential = Tuner::new(space(), Closure::new(cost))
        .technique(Exhaustive::new())
        .progress(false)
        .remeasure(Remeasure::off())
        .run()
        .unwrap();
    let (four, most) = devices(4, Duration::from_millis(2));
    let spread = Tuner::new(space(), &four)
        .technique(Exhaustive::new())
        .progress(false)
        .remeasure(Remeasure::off())
        .run()
        .unwrap();
    assert_eq!(spread.evaluations, space().len() as u64);
    assert_eq!(outcomes(&spread.records), outcomes(&sequential.records));
    assert_eq!(spread.records.len(), sequential.records.len());
    assert_eq!(spread.best.config, sequential.best.config);
    assert_eq!(spread.failures, sequential.failures);
    // The devices measured at the same time, and each of them measured something.
    assert!(
        most.load(Ordering::SeqCst) >= 2,
        "never more than one at once"
    );
    let used: BTreeSet<&str> = spread
        .records
        .iter()
        .filter_map(|r| r.measured_on.as_deref())
        .collect();
    assert_eq!(used, ["0", "1", "2", "3"].into_iter().collect());
    assert!(sequential.records.iter().all(|r| r.measured_on.is_none()));
    // The configuration that fails everywhere was measured again elsewhere, then recorded
    // as failed; no device was dropped for it.
    assert_eq!(spread.failures.get("launch"), Some(&1));
    assert!(four.dropped_devices().is_empty());
}

#[test]
fn the_default_technique_finds_the_best_and_measures_exactly_the_budget() {
    let (four, _) = devices(4, Duration::ZERO);
    let r = Tuner::new(space(), &four)
        .abort(Evaluations(25))
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 25);
    assert_eq!(r.records.len(), 25);
    let distinct: BTreeSet<u128> = r.records.iter().map(|x| x.index).collect();
    assert_eq!(distinct.len(), 25, "a configuration was measured twice");
    // The finalists are measured again on one device, the first.
    assert!(!r.remeasure_records.is_empty());
    assert!(r
        .remeasure_records
        .iter()
        .all(|x| x.measured_on.as_deref() == Some("0")));
}

#[test]
fn devices_of_different_models_are_refused() {
    let a = Closure::new(cost).device_name("NVIDIA H100");
    let b = Closure::new(cost).device_name("NVIDIA A100");
    match Devices::named([("cuda:0", a.clone()), ("cuda:1", a), ("cuda:2", b)]) {
        Err(Error::MixedDevices { devices }) => {
            assert_eq!(devices.len(), 3);
            assert!(devices[2].contains("cuda:2: NVIDIA A100"), "{devices:?}");
        }
        other => panic!("{other:?}"),
    }
    let none: Vec<Closure<CostFn>> = Vec::new();
    assert!(matches!(
        Devices::new(none),
        Err(Error::DeviceNotFound { .. })
    ));
    let msg = Error::MixedDevices {
        devices: vec!["0: a".into(), "1: b".into()],
    }
    .to_string();
    assert!(msg.contains("tune each model in a run of its own"), "{msg}");
}

#[test]
fn a_device_that_keeps_failing_is_dropped_and_loses_nothing() {
    let healthy = |_k| -> CostFn {
        Box::new(|c: &Config| {
            std::thread::sleep(Duration::from_millis(1));
            cost(c)
        })
    };
    let broken: CostFn =
        Box::new(|_: &Config| Err(Failure::Launch("the device fell off the bus".into())));
    let all = vec![healthy(0), broken, healthy(2)];
    let devices = Devices::new(all.into_iter().map(Closure::new))
        .unwrap()
        .max_strikes(2);
    let r = Tuner::new(space(), &devices)
        .technique(Exhaustive::new())
        .progress(false)
        .remeasure(Remeasure::off())
        .run()
        .unwrap();
    let sequential = Tuner::new(space(), Closure::new(cost))
        .technique(Exhaustive::new())
        .progress(false)
        .remeasure(Remeasure::off())
        .run()
        .unwrap();
    // Every configuration the broken device failed was measured again on another: the
    // results are those of healthy devices.
    assert_eq!(outcomes(&r.records), outcomes(&sequential.records));
    let dropped = devices.dropped_devices();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].name, "1");
    assert!(
        dropped[0].why.contains("2 configurations in a row"),
        "{dropped:?}"
    );
    assert!(r
        .records
        .iter()
        .all(|x| x.measured_on.as_deref() != Some("1")));
}

#[test]
fn a_run_on_several_devices_resumes_from_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.jsonl");
    let (two, _) = devices(2, Duration::ZERO);
    let first = Tuner::new(space(), &two)
        .abort(Evaluations(10))
        .log(&log)
        .progress(false)
        .remeasure(Remeasure::off())
        .run()
        .unwrap();
    assert_eq!(first.evaluations, 10);
    let second = Tuner::new(space(), &two)
        .abort(Evaluations(20))
        .log(&log)
        .resume(true)
        .progress(false)
        .remeasure(Remeasure::off())
        .run()
        .unwrap();
    assert_eq!(second.resumed, 10);
    assert_eq!(second.evaluations, 20);
    let all = crate::results::log::read(&log).unwrap();
    let distinct: BTreeSet<u128> = all.iter().map(|x| x.index).collect();
    assert_eq!(all.len(), 20);
    assert_eq!(
        distinct.len(),
        20,
        "the resumed run measured again what the log had"
    );
    assert!(all.iter().all(|x| x.measured_on.is_some()));
}

fn recording() -> Recording {
    Recording::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/test_cache_file.json"
    ))
    .unwrap()
}

#[test]
fn simulated_devices_share_the_simulated_clock() {
    let rec = recording();
    let total: Duration = (0..rec.space().len())
        .filter_map(|i| rec.record(i).map(|r| r.charged))
        .sum();
    let longest = (0..rec.space().len())
        .filter_map(|i| rec.record(i).map(|r| r.charged))
        .max()
        .unwrap();
    let one = Tuner::new(rec.space().clone(), rec.evaluator())
        .technique(Exhaustive::new())
        .progress(false)
        .run()
        .unwrap();
    let four = Devices::new((0..4).map(|_| rec.evaluator())).unwrap();
    let spread = Tuner::new(rec.space().clone(), &four)
        .technique(Exhaustive::new())
        .progress(false)
        .run()
        .unwrap();
    assert!(spread.simulated);
    assert_eq!(outcomes(&spread.records), outcomes(&one.records));
    // One device: the sum of the recorded times; four: each device's share, in order.
    assert!((one.elapsed.as_secs_f64() - total.as_secs_f64()).abs() < 1e-9);
    assert!(
        spread.elapsed <= total / 4 + longest,
        "{:?}",
        spread.elapsed
    );
    assert!(spread.elapsed >= total / 4, "{:?}", spread.elapsed);
    let times: Vec<f64> = spread.records.iter().map(|r| r.elapsed_s).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

/// A device whose preparation (compilation) is slow next to its measurement, counting how
/// many preparations run at once.
struct SlowCompile {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Evaluator for SlowCompile {
    type Cost = f64;
    type Prepared = ();

    fn prepare(&self, _space: &Space, _config: &Config) -> Result<(), Failure> {
        let at_once = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(at_once, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(20));
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    fn measure(
        &self,
        _space: &Space,
        config: &Config,
        (): (),
    ) -> Result<crate::evaluate::Measured<f64>, Failure> {
        cost(config).map(crate::evaluate::Measured::new)
    }
}

#[test]
fn each_device_prepares_ahead_on_several_threads() {
    let slow = || SlowCompile {
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    };
    let devices = Devices::new([slow(), slow()]).unwrap().ahead(3);
    let r = Tuner::new(space(), &devices)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 36, "the whole space");
    let most: Vec<usize> = devices
        .evaluators()
        .map(|e| e.most.load(Ordering::SeqCst))
        .collect();
    // Three preparations at a time per device at most, and more than one.
    assert!(most.iter().all(|&m| (2..=3).contains(&m)), "{most:?}");
}
