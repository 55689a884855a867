//! The cargo-test flow of a `#[tunable]` function: tune it inside a test with the generated
//! entry point, then dispatch: the recorded best for the tuned input, the nearest recorded
//! input for another size, the declared defaults when nothing is recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use tune::results::{Database, Source};
use tune::Failure;

/// A blocked sum whose "cost" is a made-up function of the configuration, so that the best
/// configuration is known: `block = 64`, `lanes = 4`.
#[tune::tunable(technique = exhaustive, abort = evaluations(1000) | duration(60s))]
fn blocked_sum(
    data: &[f64],
    out: &mut f64,
    #[tp([1, 2, 4, 8, 16, 32, 64, 128, 256], divides(data.len()), default = 8)] block: usize,
    #[tp([1, 2, 4, 8], default = 2)] lanes: usize,
) -> f64 {
    let mut acc = vec![0.0; lanes];
    for (i, chunk) in data.chunks(block).enumerate() {
        acc[i % lanes] += chunk.iter().sum::<f64>();
    }
    *out = acc.iter().sum();
    (block as f64).log2().sub(6.0).abs() + (lanes as f64).log2().sub(2.0).abs()
}

trait Sub {
    fn sub(self, x: f64) -> f64;
}
impl Sub for f64 {
    fn sub(self, x: f64) -> f64 {
        self - x
    }
}

/// A timed function (returns nothing): the cost is its wall time.
#[tune::tunable(abort = evaluations(5), repetitions = 2, name = "fill", input(n = x.len()))]
fn fill(x: &mut [u8], #[tp([1, 2, 4])] step: usize) {
    for v in x.iter_mut().step_by(step) {
        *v = 1;
    }
}

fn temp_db(tag: &str) -> (PathBuf, Database) {
    let dir = std::env::temp_dir().join(format!(
        "tune-tunable-flow-{tag}-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let db = Database::open(dir.join("tuning"));
    (dir, db)
}

#[test]
fn tune_then_dispatch() -> tune::Result<()> {
    let (dir, db) = temp_db("sum");
    let n = 1 << 12;
    let data: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    let expected: f64 = data.iter().sum();
    let mut out = 0.0;

    // Nothing recorded yet: the declared defaults.
    let (cfg, choice) = BlockedSumConfig::best_in(&db, &data, &out)?;
    assert_eq!(choice.source, Source::Default);
    assert_eq!((cfg.block, cfg.lanes), (8, 2));

    let result = BlockedSumConfig::tuner_with(&data, &mut out, |_cost, _data, out| {
        if (*out - expected).abs() > 1e-9 {
            return Err(Failure::WrongResult(format!(
                "sum {out}, expected {expected}"
            )));
        }
        Ok(())
    })?
    .database(db.clone())
    .log(dir.join("log.jsonl"))
    .progress(false)
    .run()?;
    assert_eq!(result.evaluations, 36);
    assert_eq!(result.technique, "exhaustive");
    assert_eq!(result.input_key, format!("data={n}"));
    assert_eq!(result.device, "cpu");
    assert!(
        result.tunable.ends_with("tunable_flow::blocked_sum"),
        "{}",
        result.tunable
    );
    assert_eq!(result.best.cost, Some(0.0));

    // The tuned input: the recorded best.
    let (cfg, choice) = BlockedSumConfig::best_in(&db, &data, &out)?;
    assert_eq!(choice.source, Source::Exact);
    assert_eq!((cfg.block, cfg.lanes), (64, 4));
    assert_eq!(cfg.call(&data, &mut out), 0.0);
    assert_eq!(out, expected);
    // Another size: the nearest recorded input.
    let other: Vec<f64> = vec![1.0; 3 << 10];
    let (cfg, choice) = BlockedSumConfig::best_in(&db, &other, &out)?;
    assert_eq!(choice.source, Source::NearestInput);
    assert_eq!(
        choice.input_key.as_deref(),
        Some(format!("data={n}").as_str())
    );
    assert_eq!(cfg.block, 64);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn wrong_results_fail_the_test_run() {
    let (dir, db) = temp_db("wrong");
    let data = vec![1.0; 256];
    let mut out = 0.0;
    let e = BlockedSumConfig::tuner_with(&data, &mut out, |cost, _, _| {
        if *cost > 3.0 {
            Err(Failure::WrongResult("made-up mismatch".into()))
        } else {
            Ok(())
        }
    })
    .unwrap()
    .database(db)
    .log(dir.join("log.jsonl"))
    .run_test()
    .unwrap_err();
    assert!(matches!(e, tune::Error::WrongResults { .. }), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn timed_function_in_a_test() -> tune::Result<()> {
    let (dir, db) = temp_db("fill");
    let mut x = vec![0u8; 1 << 10];
    let result = FillConfig::tuner(&mut x)?
        .database(db.clone())
        .log(dir.join("log.jsonl"))
        .run_test()?;
    assert_eq!(result.tunable, "fill");
    assert_eq!(result.input_key, "n=1024");
    assert_eq!(result.records[0].samples.len(), 2);
    let (cfg, choice) = FillConfig::best_in(&db, &x)?;
    assert_eq!(choice.source, Source::Exact);
    assert_eq!(tune::Config::from(cfg), result.best.config);
    // `fill_auto` reads `$TUNE_DB` or `tuning/` of this crate: nothing recorded there for
    // this input, so any source is fine; it runs.
    fill_auto(&mut x)?;
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// `#[tune::test]`: the body ends with the tuner to run as a test.
#[tune::test]
fn tune_with_the_attribute() {
    let (dir, db) = temp_db("attr");
    let data = vec![1.0; 512];
    let mut out = 0.0;
    BlockedSumConfig::tuner(&data, &mut out)?
        .database(db)
        .log(dir.join("log.jsonl"))
}

/// `edited_v2` is `edited_v1` after an edit of its body: one tunable name, two declarations.
#[tune::tunable(abort = evaluations(3), repetitions = 1, name = "edited", input(n = x.len()))]
fn edited_v1(x: &mut [u8], #[tp([1, 2, 4])] step: usize) {
    for v in x.iter_mut().step_by(step) {
        *v = 1;
    }
}

/// Documentation does not count: only the body changed.
#[tune::tunable(abort = evaluations(3), repetitions = 1, name = "edited", input(n = x.len()))]
fn edited_v2(x: &mut [u8], #[tp([1, 2, 4])] step: usize) {
    for v in x.iter_mut().step_by(step) {
        *v = 2;
    }
}

/// Was: after the kernel's code changed, the old best was still served as an exact match.
#[test]
fn an_edited_declaration_does_not_use_old_results() -> tune::Result<()> {
    use tune::results::database::StaleReason;

    let (dir, db) = temp_db("edited");
    let mut x = vec![0u8; 256];
    EditedV1Config::tuner(&mut x)?
        .database(db.clone())
        .log(dir.join("log.jsonl"))
        .progress(false)
        .run()?;
    let (_, choice) = EditedV1Config::best_in(&db, &x)?;
    assert_eq!((choice.source, choice.stale), (Source::Exact, None));
    let (_, choice) = EditedV2Config::best_in(&db, &x)?;
    assert_eq!(choice.source, Source::FirstValid);
    assert_eq!(choice.stale.map(|s| s.reason), Some(StaleReason::Code));
    edited_v2(&mut x, 2);
    assert_eq!(x[2], 2);
    assert_ne!(
        <EditedV1Config as tune::__private::Tunable>::FINGERPRINT,
        <EditedV2Config as tune::__private::Tunable>::FINGERPRINT
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
