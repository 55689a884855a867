//! Costs that cannot rank (NaN, infinities), measurements stopped early, and logs that
//! cannot be resumed from.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::abort::{CostReached, Evaluations, Speedup};
use crate::evaluate::closure::Closure;
use crate::evaluate::{Failure, Measured};
use crate::measure::Remeasure;
use crate::param::Param;
use crate::results::{log, Database, Source};
use crate::search::Exhaustive;
use crate::space::{Config, Space, SpaceBuilder};
use crate::Error;

use super::tests::{Script, Told};

/// What x86 computes for `0.0 / 0.0`: a quiet NaN with the sign bit set, which
/// `f64::total_cmp` orders before every number.
const NEGATIVE_NAN: f64 = f64::from_bits(0xfff8_0000_0000_0000);

fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::range("X", 0..8))
        .build()
        .unwrap()
}

fn x_of(r: &TuningResult<impl crate::Cost>) -> u32 {
    r.best.config.get(0)
}

/// |X - 5| + 1, except X=2 (x86's NaN), X=3 (+inf) and X=4 (-inf).
fn bad_costs(c: &Config) -> Result<f64, Failure> {
    Ok(match c.get::<u32>(0) {
        2 => NEGATIVE_NAN,
        3 => f64::INFINITY,
        4 => f64::NEG_INFINITY,
        x => (x as f64 - 5.0).abs() + 1.0,
    })
}

#[test]
fn non_finite_costs_are_invalid_never_the_best_never_null() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.jsonl");
    let db = Database::open(dir.path().join("tuning"));
    let run = |resume: bool| {
        Tuner::new(space(), Closure::new(bad_costs))
            .technique(Exhaustive::new())
            .name("nan")
            .log(&log_path)
            .resume(resume)
            .database(db.clone())
            .progress(false)
            .run()
    };
    let r = run(false).unwrap();
    assert_eq!(x_of(&r), 5, "a NaN or -inf cost must not win");
    assert_eq!(r.failures.get("invalid_cost"), Some(&3));
    assert_eq!(r.valid, 5);
    let bad = r.records.iter().find(|r| r.index == 2).unwrap();
    assert_eq!(bad.status, "invalid_cost");
    assert!(bad.detail.as_deref().unwrap().contains("NaN"), "{bad:?}");
    // Nothing unreadable was written: the log resumes and the database answers.
    let text = std::fs::read_to_string(&log_path).unwrap();
    for line in text.lines().filter(|l| l.contains(r#""status":"ok""#)) {
        assert!(!line.contains("null"), "{line}");
    }
    let again = run(true).unwrap();
    assert_eq!((again.resumed, x_of(&again)), (8, 5));
    let choice = db.choose("nan", "cpu", "", &space(), None).unwrap();
    assert_eq!(
        (choice.source, choice.config.get::<u32>(0)),
        (Source::Exact, 5)
    );
    let file = std::fs::read_to_string(db.path("nan", "cpu")).unwrap();
    assert!(!file.contains("null"), "{file}");
}

#[test]
fn a_nan_in_any_objective_or_sample_is_an_invalid_cost() {
    let tuple = Closure::new(|c: &Config| -> Result<(f64, f64), Failure> {
        let x = c.get::<u32>(0) as f64;
        Ok((x, if x == 0.0 { f64::NAN } else { 1.0 }))
    });
    let r = Tuner::new(space(), tuple).progress(false).run().unwrap();
    assert_eq!((x_of(&r), r.failures.get("invalid_cost")), (1, Some(&1)));
    let samples = Closure::new(|c: &Config| -> Result<Measured<f64>, Failure> {
        let x = c.get::<u32>(0) as f64;
        Ok(Measured {
            samples: vec![if x == 0.0 { -1.0 } else { x }],
            ..Measured::new(x)
        })
    });
    let r = Tuner::new(space(), samples).progress(false).run().unwrap();
    assert_eq!((x_of(&r), r.failures.get("invalid_cost")), (1, Some(&1)));
}

/// A NaN first, then 4, 3, 2, 1, ... by proposal order.
fn nan_then_falling(space: &Space) -> (Script, impl Fn(&Config) -> Result<f64, Failure>) {
    let order: Vec<u128> = (0..space.len()).collect();
    let script = Script(order, Default::default());
    let eval = |c: &Config| -> Result<f64, Failure> {
        let x = c.get::<u32>(0);
        Ok(if x == 0 { NEGATIVE_NAN } else { 5.0 - x as f64 })
    };
    (script, eval)
}

#[test]
fn cost_reached_fires_after_a_nan() {
    let s = space();
    let (script, eval) = nan_then_falling(&s);
    let r = Tuner::new(s, Closure::new(eval))
        .technique(script)
        .abort(CostReached(2.0))
        .batch(1)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    // X=1..3 cost 4, 3, 2: reached at the fourth evaluation.
    assert_eq!(r.evaluations, 4);
    assert_eq!(x_of(&r), 3);
}

#[test]
fn speedup_conditions_see_the_costs_after_a_nan() {
    let s = space();
    // A NaN, then no improvement at all after X=1.
    let eval = |c: &Config| -> Result<f64, Failure> {
        Ok(if c.get::<u32>(0) == 0 {
            NEGATIVE_NAN
        } else {
            1.0
        })
    };
    let r = Tuner::new(s.clone(), Closure::new(eval))
        .technique(Exhaustive::new())
        .abort(Speedup::over_evaluations(1.5, 3))
        .batch(1)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    // The first cost is found at evaluation 2; three evaluations later it has not
    // improved: stop at 5 (a NaN taken for the best made it stop at 4).
    assert_eq!(r.evaluations, 5);
    // And with costs that keep falling, it does not stop.
    let (script, eval) = nan_then_falling(&s);
    let r = Tuner::new(s, Closure::new(eval))
        .technique(script)
        .abort(Speedup::over_evaluations(1.01, 3))
        .batch(1)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 8);
}

/// X=1 was stopped early at 0.5 (the time measured before it was stopped); X=6 at 9.
fn stopped(c: &Config) -> Result<Measured<f64>, Failure> {
    let x = c.get::<u32>(0);
    let m = Measured::new((x as f64 - 5.0).abs() + 1.0);
    Ok(match x {
        1 => Measured {
            stopped_early: true,
            ..Measured::new(0.5)
        },
        6 => Measured {
            stopped_early: true,
            ..Measured::new(9.0)
        },
        _ => m,
    })
}

#[test]
fn stopped_early_is_valid_slow_and_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.jsonl");
    let told: Told = Default::default();
    let r = Tuner::new(space(), Closure::new(stopped))
        .technique(Script((0..8).collect(), told.clone()))
        .log(&log_path)
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(
        x_of(&r),
        5,
        "never the best while another was measured in full"
    );
    assert!(!r.best.stopped_early);
    assert_eq!(r.valid, 8);
    assert!(r.failures.is_empty());
    let told = told.lock().unwrap();
    assert!(
        told.contains(&(1, Some(0.5))),
        "the technique sees a cost: {told:?}"
    );
    let logged = log::read(&log_path).unwrap();
    let one = logged.iter().find(|r| r.index == 1).unwrap();
    assert!(one.is_ok() && one.stopped_early);
    assert!(!logged.iter().find(|r| r.index == 5).unwrap().stopped_early);
    // Resumed, the flag still keeps it from being the best.
    let resumed = Tuner::new(space(), Closure::new(stopped))
        .log(&log_path)
        .resume(true)
        .remeasure(Remeasure::off())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!((resumed.resumed, x_of(&resumed)), (8, 5));
}

#[test]
fn stopped_early_is_the_best_only_when_nothing_else_is_valid() {
    let eval = Closure::new(|c: &Config| -> Result<Measured<f64>, Failure> {
        match c.get::<u32>(0) {
            1 | 6 => stopped(c),
            _ => Err(Failure::Launch("no".into())),
        }
    });
    let r = Tuner::new(space(), eval).progress(false).run().unwrap();
    assert_eq!(x_of(&r), 1);
    assert!(r.best.stopped_early);
    assert!(r.summary().contains("stopped early"), "{}", r.summary());
}

#[test]
fn resuming_from_a_log_with_an_impossible_time_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.jsonl");
    let eval = || Closure::new(|c: &Config| -> Result<f64, Failure> { Ok(c.get::<u32>(0) as f64) });
    Tuner::new(space(), eval())
        .abort(Evaluations(3))
        .log(&log_path)
        .progress(false)
        .run()
        .unwrap();
    let text = std::fs::read_to_string(&log_path).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut record: serde_json::Value = serde_json::from_str(first).unwrap();
    record["elapsed_s"] = serde_json::json!(1e20);
    std::fs::write(&log_path, format!("{record}\n{rest}")).unwrap();
    let e = Tuner::new(space(), eval())
        .log(&log_path)
        .resume(true)
        .progress(false)
        .run()
        .unwrap_err();
    match e {
        Error::Format { reason, .. } => {
            assert!(
                reason.contains("elapsed_s") && reason.contains("1e20"),
                "{reason}"
            )
        }
        other => panic!("{other}"),
    }
}
