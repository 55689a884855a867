//! Simulation mode: reading Kernel Tuner cache files and tuning against them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::time::Duration;

use tune_runtime::abort::{Elapsed, Evaluations};
use tune_runtime::search::{Exhaustive, TechniqueKind};
use tune_runtime::simulate::Recording;
use tune_runtime::tuner::Tuner;
use tune_runtime::{Error, Evaluator, Failure, Value};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");

#[test]
fn reads_a_cache_file_into_its_space() {
    let rec = Recording::open(format!("{DATA}/test_cache_file.json")).unwrap();
    assert_eq!(rec.device(), "NVIDIA RTX A4000");
    assert_eq!(rec.kernel(), "vector_add");
    assert_eq!(rec.space().len(), 15);
    assert_eq!(rec.skipped(), 0);
    let (best, ms) = rec.true_best().unwrap();
    assert!((ms - 0.03176).abs() < 1e-4, "{ms}");
    let cfg = rec.space().get(best).unwrap();
    // The best configuration's record holds exactly that time.
    assert_eq!(rec.record_of(&cfg).unwrap().time, Ok(ms));
    assert_eq!(rec.fraction_of_optimum(Some(ms)), 1.0);
    assert_eq!(rec.fraction_of_optimum(Some(2.0 * ms)), 0.5);
    assert_eq!(rec.fraction_of_optimum(None), 0.0);
}

#[test]
fn every_small_fixture_loads() {
    for (f, n) in [
        ("test_cache_time_energy.json", 15),
        ("synthetic_fp32_cache_NVIDIA_RTX_A4000.json", 10),
    ] {
        let rec = Recording::open(format!("{DATA}/{f}")).unwrap();
        assert_eq!(rec.space().len(), n, "{f}");
        assert!(rec.true_best().is_some());
    }
}

#[test]
fn gzip_files_read_the_same() {
    let path = format!("{DATA}/test_cache_time_energy.json");
    let plain = std::fs::read(&path).unwrap();
    let gz_path = std::env::temp_dir().join(format!("tune-sim-{}.json.gz", std::process::id()));
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&plain).unwrap();
    std::fs::write(&gz_path, enc.finish().unwrap()).unwrap();
    let a = Recording::open(&path).unwrap();
    let b = Recording::open(&gz_path).unwrap();
    std::fs::remove_file(&gz_path).ok();
    assert_eq!(a.space().len(), b.space().len());
    assert_eq!(a.true_best(), b.true_best());
}

/// Two parameters, only four of the nine combinations recorded; failures of every kind.
const SMALL: &str = r#"{
  "device_name": "Test GPU", "kernel_name": "k", "problem_size": 10,
  "tune_params_keys": ["bx", "mode"],
  "tune_params": {"bx": [32, 64, 128], "mode": ["fast", "safe", "slow"]},
  "cache": {
    "32,fast": {"bx": 32, "mode": "fast", "time": 2.0, "compile_time": 100, "verification_time": 0, "benchmark_time": 20},
    "64,fast": {"bx": 64, "mode": "fast", "time": "CompilationFailedConfig", "compile_time": 50, "verification_time": 0, "benchmark_time": 0},
    "64,safe": {"bx": 64, "mode": "safe", "time": "RuntimeFailedConfig", "compile_time": 10, "verification_time": 0, "benchmark_time": 1},
    "128,slow": {"bx": 128, "mode": "slow", "time": 1.5, "compile_time": 30, "verification_time": 5, "benchmark_time": 15},
    "128,safe": {"bx": 128, "mode": "safe", "time": "InvalidConfig"}
  }
}"#;

#[test]
fn the_space_is_exactly_the_recorded_configurations() {
    let rec = Recording::from_json(SMALL, "small").unwrap();
    let space = rec.space();
    assert_eq!(space.len(), 5);
    let mut seen: Vec<(i64, String)> = space
        .iter()
        .map(|c| (c.get::<i64>(0), rec.label(&c, 1).unwrap()))
        .collect();
    seen.sort();
    let want = [
        (32, "fast"),
        (64, "fast"),
        (64, "safe"),
        (128, "safe"),
        (128, "slow"),
    ];
    assert_eq!(seen, want.map(|(a, b)| (a, b.to_string())).to_vec());
    // A combination that was not recorded is not in the space.
    assert!(space
        .config_from_values([("bx", Value::Int(32)), ("mode", Value::Int(1))])
        .is_err());
    assert_eq!(rec.true_best().map(|b| b.1), Some(1.5));
}

#[test]
fn the_evaluator_answers_from_the_recording() {
    let rec = Recording::from_json(SMALL, "small").unwrap();
    let ev = rec.evaluator();
    let space = rec.space();
    let find = |bx: i64, mode: &str| {
        space
            .iter()
            .find(|c| c.get::<i64>(0) == bx && rec.label(c, 1).as_deref() == Some(mode))
            .unwrap()
    };
    let ok = find(32, "fast");
    ev.prepare(space, &ok).unwrap();
    assert_eq!(ev.measure(space, &ok, ()).unwrap().cost, 2.0);
    assert_eq!(
        ev.charged_time(space, &ok),
        Some(Duration::from_millis(120))
    );
    let ce = find(64, "fast");
    assert!(matches!(ev.prepare(space, &ce), Err(Failure::Compile(_))));
    assert_eq!(ev.charged_time(space, &ce), Some(Duration::from_millis(50)));
    let re = find(64, "safe");
    ev.prepare(space, &re).unwrap();
    assert!(matches!(
        ev.measure(space, &re, ()),
        Err(Failure::Launch(_))
    ));
    let inv = find(128, "safe");
    assert!(matches!(ev.prepare(space, &inv), Err(Failure::Invalid(_))));
    assert_eq!(ev.charged_time(space, &inv), Some(Duration::ZERO));
    assert!(ev.device().contains("Test GPU"));
}

#[test]
fn the_tuner_counts_distinct_evaluations_and_charges_recorded_time() {
    let rec = Recording::from_json(SMALL, "small").unwrap();
    let run = Tuner::new(rec.space().clone(), rec.evaluator())
        .technique(Exhaustive::new())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(run.evaluations, 5);
    assert_eq!(run.best.scalar, 1.5);
    assert!(run.simulated);
    assert_eq!(run.elapsed, Duration::from_millis(120 + 50 + 11 + 50));
    // Every technique spends an exact budget of distinct evaluations.
    // (Three failures are a run without a result: the log still shows what it spent.)
    let dir = tempfile::tempdir().unwrap();
    for k in TechniqueKind::ALL {
        let log = dir.path().join(format!("{k}.jsonl"));
        let run = Tuner::new(rec.space().clone(), rec.evaluator())
            .technique(k.build())
            .abort(Evaluations(3))
            .seed(9)
            .log(&log)
            .progress(false)
            .run();
        match run {
            Ok(r) => assert_eq!(r.evaluations, 3, "{k}"),
            Err(e) => assert!(
                matches!(
                    e,
                    tune_runtime::Error::NoValidConfiguration { evaluated: 3, .. }
                ),
                "{k}: {e}"
            ),
        }
        let records = tune_runtime::results::log::read(&log).unwrap();
        let distinct: std::collections::HashSet<u128> = records.iter().map(|r| r.index).collect();
        assert_eq!((records.len(), distinct.len()), (3, 3), "{k}");
    }
}

#[test]
fn a_time_budget_stops_on_the_simulated_clock() {
    let rec = Recording::from_json(SMALL, "small").unwrap();
    let run = Tuner::new(rec.space().clone(), rec.evaluator())
        .technique(Exhaustive::new())
        .abort(Elapsed(Duration::from_millis(100)))
        .progress(false)
        .run();
    // Index order: the first configuration alone costs 120 ms (or a failure first): the
    // run stops as soon as the clock passes 100 ms.
    match run {
        Ok(run) => assert!(run.evaluations < 5 && run.elapsed >= Duration::from_millis(100)),
        Err(e) => assert!(matches!(e, Error::NoValidConfiguration { .. }), "{e}"),
    }
}

/// A cache entry: parameters, time and recorded compile time (ms).
fn entry(params: &str, time: &str, compile: &str) -> String {
    format!(
        r#"{{{params}, "time": {time}, "compile_time": {compile}, "verification_time": 0, "benchmark_time": 1}}"#
    )
}

#[test]
fn an_overflowing_or_negative_recorded_time_is_an_error_not_a_panic() {
    for (compile, time) in [
        ("1e300", "1.0"),
        ("-5", "1.0"),
        ("1", "-2.0"),
        ("1.7e308", "1.0"),
    ] {
        let text = format!(
            r#"{{"tune_params_keys": ["a"], "tune_params": {{"a": [1, 2]}}, "cache": {{
                "1": {},
                "2": {} }} }}"#,
            entry(r#""a": 1"#, "1.0", "1"),
            entry(r#""a": 2"#, time, compile)
        );
        let e = Recording::from_json(&text, "big.json").unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("entry `2`"), "{msg}");
    }
}

#[test]
fn entries_that_collapse_onto_one_configuration_with_different_results_are_an_error() {
    // `b` is tuned (it is in `tune_params` and in every entry) but `tune_params_keys` omits
    // it: the four entries map to two configurations of `a`, with different times.
    let text = format!(
        r#"{{"tune_params_keys": ["a"], "tune_params": {{"a": [1, 2], "b": [8, 16]}}, "cache": {{
            "1,8": {}, "1,16": {}, "2,8": {}, "2,16": {} }} }}"#,
        entry(r#""a": 1, "b": 8"#, "1.0", "1"),
        entry(r#""a": 1, "b": 16"#, "3.0", "1"),
        entry(r#""a": 2, "b": 8"#, "2.0", "1"),
        entry(r#""a": 2, "b": 16"#, "4.0", "1"),
    );
    let e = Recording::from_json(&text, "gemm.json").unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("`b`") && msg.contains("tune_params_keys"),
        "{msg}"
    );
    // The same outcome recorded twice is harmless.
    let text = format!(
        r#"{{"tune_params_keys": ["a"], "tune_params": {{"a": [1, 2]}}, "cache": {{
            "1": {}, "1 again": {}, "2": {} }} }}"#,
        entry(r#""a": 1"#, "1.0", "1"),
        entry(r#""a": 1"#, "1.0", "1"),
        entry(r#""a": 2"#, "2.0", "1"),
    );
    assert_eq!(
        Recording::from_json(&text, "dup.json")
            .unwrap()
            .space()
            .len(),
        2
    );
}

#[test]
fn malformed_files_are_format_errors() {
    for text in ["not json", "{}", r#"{"tune_params": {}, "cache": 3}"#] {
        let e = Recording::from_json(text, "x.json").unwrap_err();
        assert!(matches!(e, Error::Format { .. }), "{e}");
        assert!(e.to_string().starts_with("x.json: "), "{e}");
    }
    let e = Recording::open(format!("{DATA}/no-such-file.json")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
}

#[test]
fn a_source_view_matches_parameters_by_name_and_keeps_the_fastest_match() {
    use tune_runtime::simulate::source_view;
    let target = Recording::from_json(SMALL, "small").unwrap();
    // The same kernel elsewhere, with `bx` only: 32 at the optimum (1 ms), 128 three
    // times slower, 64 failed; the target's `mode` is ignored.
    let other = r#"{
      "device_name": "Other GPU", "kernel_name": "k",
      "tune_params_keys": ["bx", "unroll"],
      "tune_params": {"bx": [32, 64, 128], "unroll": [1, 2]},
      "cache": {
        "32,1": {"bx": 32, "unroll": 1, "time": 1.0},
        "32,2": {"bx": 32, "unroll": 2, "time": 4.0},
        "64,1": {"bx": 64, "unroll": 1, "time": "RuntimeFailedConfig"},
        "128,1": {"bx": 128, "unroll": 1, "time": 3.0}
      }
    }"#;
    let source = Recording::from_json(other, "other").unwrap();
    let view = source_view(&source, &target).unwrap();
    let space = target.space();
    for (i, c) in space.iter().enumerate() {
        let got = view.get(&(i as u128)).copied();
        match c.get::<i64>(0) {
            32 => assert_eq!(got, Some(0.0)), // the faster of the two `unroll`s
            64 => assert_eq!(got, None),      // failed on the source
            _ => assert!((got.unwrap() - 3f64.ln()).abs() < 1e-12),
        }
    }
    // Nothing in common: no view.
    let unrelated = r#"{"tune_params_keys": ["z"], "tune_params": {"z": [1]},
      "cache": {"1": {"z": 1, "time": 1.0}}}"#;
    let unrelated = Recording::from_json(unrelated, "unrelated").unwrap();
    assert!(source_view(&unrelated, &target).is_none());
}

#[test]
fn a_transfer_starts_from_the_best_of_the_other_recording() {
    use tune_runtime::search::Transfer;
    use tune_runtime::simulate::source_view;
    let target = Recording::from_json(SMALL, "small").unwrap();
    // On the source, bx = 128 was fastest: the transfer measures it first (one of the
    // two target configurations with bx = 128 fails; the run covers the whole space).
    let other = r#"{"tune_params_keys": ["bx"], "tune_params": {"bx": [32, 64, 128]},
      "cache": {"32": {"bx": 32, "time": 5.0}, "64": {"bx": 64, "time": 9.0},
                "128": {"bx": 128, "time": 1.0}}}"#;
    let source = Recording::from_json(other, "other").unwrap();
    let view = source_view(&source, &target).unwrap();
    let run = Tuner::new(target.space().clone(), target.evaluator())
        .technique(Box::new(Transfer::new(vec![view])))
        .abort(Evaluations(5))
        .batch(1)
        .progress(false)
        .run()
        .unwrap();
    let first = target.space().get(run.records[0].index).unwrap();
    assert_eq!(first.get::<i64>(0), 128);
}
