//! The online tuner on a made-up workload: configuration `X` costs `|X - 11| + 1`
//! microseconds, `X = 3` and `X = 12` compute wrong outputs, `X = 7` does not compile.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use super::*;
use crate::abort::{Evaluations, WholeSpace};
use crate::param::Param;
use crate::results::log;
use crate::space::SpaceBuilder;

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..16))
        .build()
        .unwrap()
}

fn cost(x: u32) -> Duration {
    Duration::from_micros(u64::from(x.abs_diff(11)) + 1)
}

fn wrong(x: u32) -> bool {
    x == 3 || x == 12
}

fn prepare(_: &Space, c: &Config) -> Result<u32, Failure> {
    let x = c.get::<u32>(0);
    if x == 7 {
        return Err(Failure::Compile("X=7: error: no".into()));
    }
    Ok(x)
}

/// How often each configuration ran.
type Runs = Arc<Mutex<HashMap<u32, u32>>>;

/// One application call: doubles `input`; checks its output when asked.
fn step(online: &mut Online<u32>, runs: &Runs, input: u64) -> Result<u64> {
    online.call(|t| {
        let x = *t.prepared();
        assert_eq!(x, t.get::<u32>(0));
        *runs.lock().unwrap().entry(x).or_insert(0) += 1;
        let out = 2 * input + u64::from(wrong(x));
        if t.validate() && out != 2 * input {
            return Err(Failure::WrongResult(format!("{out} for {input}")));
        }
        Ok((out, cost(x)))
    })
}

/// Calls until it settles (the preparation thread may lag behind calls this short: those
/// calls run the best so far), then `extra` more; every output must be right.
fn until_settled(online: &mut Online<u32>, runs: &Runs, extra: u64) {
    let mut i = 0;
    while !online.is_settled() {
        assert_eq!(step(online, runs, i).unwrap(), 2 * i);
        i += 1;
        assert!(i < 1_000_000, "never settled: {:?}", online.stats());
    }
    for k in 0..extra {
        assert_eq!(step(online, runs, k).unwrap(), 2 * k);
    }
}

fn temp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "tune-online-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn exhaustive(name: &str) -> Online<u32> {
    Online::new(name)
        .technique(TechniqueKind::Exhaustive)
        .explore(WholeSpace)
}

#[test]
fn settles_on_the_best_and_never_returns_a_wrong_output() {
    let mut online = exhaustive("double");
    online
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let runs = Runs::default();
    until_settled(&mut online, &runs, 100);
    let st = online.stats();
    assert_eq!(online.settled().map(|c| c.get::<u32>(0)), Some(11));
    assert_eq!(st.best.as_ref().map(|b| b.0.get::<u32>(0)), Some(11));
    assert_eq!(st.evaluations, 16);
    assert_eq!(st.failures, 3, "{st:?}");
    // Wrong configurations ran once (for their check) and never again; the one that does
    // not compile never ran.
    let runs = runs.lock().unwrap();
    assert_eq!(runs.get(&3), Some(&1));
    assert_eq!(runs.get(&12), Some(&1));
    assert_eq!(runs.get(&7), None);
    assert_eq!(st.calls - st.settled_after.unwrap(), 100);
}

#[test]
fn preparation_runs_off_the_callers_path() {
    // Preparations wait at a gate the test opens; calls meanwhile run the best so far.
    let gate = Arc::new((Mutex::new(true), Condvar::new()));
    let g = gate.clone();
    let prepare = move |s: &Space, c: &Config| {
        let (open, cv) = &*g;
        let mut o = open.lock().unwrap();
        while !*o {
            o = cv.wait(o).unwrap();
        }
        prepare(s, c)
    };
    let mut online = exhaustive("gated").runs_per_config(1).ahead(1);
    online
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let runs = Runs::default();
    // The first calls wait for the first preparation (nothing to fall back on).
    for i in 0..3 {
        step(&mut online, &runs, i).unwrap();
    }
    *gate.0.lock().unwrap() = false;
    let before = online.stats();
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        for i in 0..20 {
            assert_eq!(step(&mut online, &runs, i).unwrap(), 2 * i);
        }
        tx.send(()).unwrap();
        online
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("calls waited for a preparation");
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    let online = worker.join().unwrap();
    let after = online.stats();
    assert!(
        after.fallback_runs >= before.fallback_runs + 18,
        "{after:?}"
    );
}

#[test]
fn a_restarted_application_continues_from_the_log() {
    let dir = temp("restart");
    let log_path = dir.join("online.jsonl");
    let make = || {
        Online::new("double")
            .technique(TechniqueKind::Random)
            .seed(5)
            .explore(Evaluations(12))
            .log(&log_path)
    };
    // The uninterrupted run, for comparison.
    let mut whole = Online::new("double")
        .technique(TechniqueKind::Random)
        .seed(5)
        .explore(Evaluations(12));
    whole
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    until_settled(&mut whole, &Runs::default(), 0);

    let runs = Runs::default();
    let mut first = make();
    first
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    while first.stats().evaluations < 5 {
        step(&mut first, &runs, 1).unwrap();
    }
    assert!(!first.is_settled());
    let measured: Vec<u32> = runs.lock().unwrap().keys().copied().collect();
    drop(first);
    assert_eq!(log::read(&log_path).unwrap().len(), 5);

    // Restarted: what was measured is not run again.
    let mut second = make();
    second
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    assert_eq!(second.stats().resumed, 5);
    let again = Runs::default();
    until_settled(&mut second, &again, 0);
    let st = second.stats();
    assert_eq!(st.evaluations, 12);
    for x in &measured {
        if Some(*x) != second.settled().map(|c| c.get::<u32>(0)) {
            assert_eq!(again.lock().unwrap().get(x), None, "X={x} ran again");
        }
    }
    // The same search as without the restart.
    assert_eq!(second.settled(), whole.settled());

    // Restarted after it settled: settles at once, runs only the best.
    let mut third = make();
    third
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let last = Runs::default();
    step(&mut third, &last, 3).unwrap();
    assert_eq!(third.stats().settled_after, Some(1));
    assert_eq!(third.settled(), second.settled());
    assert_eq!(last.lock().unwrap().len(), 1);
    assert_eq!(log::read(&log_path).unwrap().len(), 12);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_restarted_application_runs_the_recorded_best_while_the_search_goes_on() {
    let dir = temp("restart-best");
    let log_path = dir.join("online.jsonl");
    let make = || {
        Online::new("double")
            .technique(TechniqueKind::Random)
            .seed(9)
            .explore(WholeSpace)
            .runs_per_config(1)
            .log(&log_path)
    };
    let mut first = make();
    first
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let runs = Runs::default();
    while first.stats().evaluations < 6 {
        step(&mut first, &runs, 1).unwrap();
    }
    let best = first.stats().best.unwrap().0.get::<u32>(0);
    drop(first);
    // Restarted, with every preparation but the recorded best's held back: calls run the
    // best instead of waiting.
    let held = Arc::new((Mutex::new(false), Condvar::new()));
    let h = held.clone();
    let gated = move |s: &Space, c: &Config| {
        if c.get::<u32>(0) != best {
            let (open, cv) = &*h;
            let mut o = open.lock().unwrap();
            while !*o {
                o = cv.wait(o).unwrap();
            }
        }
        prepare(s, c)
    };
    let mut second = make();
    second
        .select("n=1", || Ok(Input::new(space(), gated)))
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let runs = Runs::default();
        for i in 0..5 {
            assert_eq!(step(&mut second, &runs, i).unwrap(), 2 * i);
        }
        tx.send(runs.lock().unwrap().clone()).unwrap();
        second
    });
    let ran = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the calls waited for a new configuration");
    assert_eq!(ran.keys().copied().collect::<Vec<_>>(), vec![best]);
    *held.0.lock().unwrap() = true;
    held.1.notify_all();
    drop(worker.join().unwrap());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn each_input_key_is_tuned_on_its_own() {
    let mut online = exhaustive("double");
    let runs = Runs::default();
    online
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    until_settled(&mut online, &runs, 0);
    // A new key: a new search, over a smaller space.
    let small = SpaceBuilder::new()
        .param(Param::<u32>::values("X", [0, 1, 2]))
        .build()
        .unwrap();
    online
        .select("n=2", || Ok(Input::new(small, prepare)))
        .unwrap();
    assert!(!online.is_settled());
    until_settled(&mut online, &runs, 0);
    assert_eq!(online.settled().map(|c| c.get::<u32>(0)), Some(2));
    // Back to the first: settled already; `make` is not called.
    online.select("n=1", || panic!("the key is known")).unwrap();
    assert_eq!(online.settled().map(|c| c.get::<u32>(0)), Some(11));
}

#[test]
fn only_configurations_validated_offline_run() {
    let s = space();
    let validated: Vec<Config> = [0u32, 2, 12, 13]
        .iter()
        .map(|&x| Config::from_raw([u64::from(x)]))
        .collect();
    let mut online = Online::new("double").explore(WholeSpace);
    online
        .select("n=1", || Ok(Input::new(s, prepare).only(validated)))
        .unwrap();
    let runs = Runs::default();
    // X = 12 was "validated offline": its (wrong) output is not checked again.
    let mut i = 0;
    while !online.is_settled() {
        step(&mut online, &runs, i).unwrap();
        i += 1;
    }
    let ran: Vec<u32> = runs.lock().unwrap().keys().copied().collect();
    assert!(ran.iter().all(|x| [0, 2, 12, 13].contains(x)), "{ran:?}");
    assert_eq!(online.settled().map(|c| c.get::<u32>(0)), Some(12));
}

#[test]
fn compared_with_a_trusted_configuration() {
    let mut online = exhaustive("double").runs_per_config(1);
    let trusted = Config::from_raw([0u64]);
    online
        .select("n=1", || {
            Ok(Input::new(space(), prepare).trusted(trusted.clone()))
        })
        .unwrap();
    let runs = Runs::default();
    let asked: Mutex<Vec<(u32, bool)>> = Mutex::default();
    let mut i = 0;
    while !online.is_settled() {
        i += 1;
        let out = online
            .call_compared(
                |t| {
                    let x = *t.prepared();
                    *runs.lock().unwrap().entry(x).or_insert(0) += 1;
                    asked.lock().unwrap().push((x, t.validate()));
                    Ok((2 * i + u64::from(wrong(x)), cost(x)))
                },
                |a, b| {
                    if a == b {
                        Ok(())
                    } else {
                        Err(format!("{a} != {b}"))
                    }
                },
            )
            .unwrap();
        assert_eq!(out, 2 * i);
    }
    assert_eq!(online.settled().map(|c| c.get::<u32>(0)), Some(11));
    let st = online.stats();
    assert_eq!(st.failures, 3);
    assert!(st.extra_runs >= 14, "{st:?}");
    // Compared outputs are asked for in full: the wrong ones ran only to be compared.
    let asked = asked.lock().unwrap();
    assert!(asked.iter().filter(|(x, _)| wrong(*x)).all(|&(_, v)| v));
    assert!(asked.iter().any(|&(_, v)| !v));
}

#[test]
fn nothing_valid_is_an_error_not_a_wrong_output() {
    let mut online = exhaustive("double").attempts(4);
    online
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let r = online.call(|t| -> Result<(u64, Duration), Failure> {
        Err(Failure::WrongResult(format!(
            "X={} is wrong",
            t.get::<u32>(0)
        )))
    });
    assert!(
        matches!(r, Err(Error::NoValidConfiguration { .. })),
        "{r:?}"
    );
    let mut fresh = Online::<u32>::new("x");
    assert!(matches!(
        fresh.call(|_| Ok(((), Duration::ZERO))),
        Err(Error::Online(m)) if m.contains("select")
    ));
}

#[test]
fn the_settled_configuration_is_recorded() {
    let dir = temp("db");
    let db = Database::open(dir.join("tuning"));
    let mut online = exhaustive("double").database(db.clone()).device("dev");
    online
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let runs = Runs::default();
    until_settled(&mut online, &runs, 0);
    let choice = db.choose("double", "dev", "n=1", &space(), None).unwrap();
    assert_eq!(choice.config.get::<u32>(0), 11);
    assert!(online.stats().database_error.is_none());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn settles_within_the_calls_allowed() {
    // The whole space would take 16 configurations of 3 calls each; 20 calls are allowed.
    let mut online = exhaustive("double").settle_within(20);
    online
        .select("n=1", || Ok(Input::new(space(), prepare)))
        .unwrap();
    let runs = Runs::default();
    for i in 0..40 {
        assert_eq!(step(&mut online, &runs, i).unwrap(), 2 * i);
    }
    let st = online.stats();
    assert_eq!(st.settled_after, Some(20), "{st:?}");
    assert!(st.evaluations < 16, "{st:?}");
    // The settled configuration is the best of those measured, and every later call ran it.
    let best = st.best.as_ref().map(|b| b.0.get::<u32>(0));
    assert_eq!(online.settled().map(|c| c.get::<u32>(0)), best);
    assert_eq!(st.exploring_calls, 20);
}
