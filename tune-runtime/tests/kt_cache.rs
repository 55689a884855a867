//! Kernel Tuner's cache format out (`simulate::KernelTunerCache`): a log exported and read
//! back, by tune's cache reader and by simulation, gives the same configurations, times and
//! failures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tune_runtime::results::{Named, Record};
use tune_runtime::search::Exhaustive;
use tune_runtime::simulate::{KernelTunerCache, Recording};
use tune_runtime::tuner::Tuner;
use tune_runtime::{Failure, Value};

fn record(evaluation: u64, bx: i64, scale: f64, status: &str, ms: Option<f64>) -> Record {
    let s = ms.map(|m| m / 1e3);
    Record {
        tunable: "conv".into(),
        input_key: "problem_size=4096x4096x1".into(),
        device: "NVIDIA H200 (cuda, CUDA 13.0, sm_90, driver 13000)".into(),
        evaluation,
        index: evaluation as u128,
        config: Named(vec![
            ("bx".into(), Value::Int(bx)),
            ("scale".into(), Value::Float(scale)),
            ("fast".into(), Value::Bool(bx > 32)),
            ("mode".into(), Value::Str("a b".into())),
        ]),
        status: status.into(),
        detail: (status != "ok").then(|| "why".into()),
        cost: s,
        objectives: Named(s.map(|t| ("time_s".to_string(), t)).into_iter().collect()),
        samples: s.map(|t| vec![t * 0.99, t, t * 1.01]).unwrap_or_default(),
        prepare_s: if status == "invalid" { 0.0 } else { 0.25 },
        run_s: if s.is_some() { 0.125 } else { 0.0 },
        validation_s: Some(0.0625),
        elapsed_s: evaluation as f64,
        seed: 0,
        technique: Arc::from("exhaustive"),
        timestamp: "2026-11-25T02:00:00.000000Z".into(),
        stopped_early: false,
        remeasured: None,
        measured_on: None,
    }
}

/// A log with every failure kind, a configuration evaluated twice and a re-measurement.
fn log() -> Vec<Record> {
    let mut v = vec![
        record(1, 16, 0.5, "ok", Some(2.0)),
        record(2, 32, 0.5, "ok", Some(1.25)),
        record(3, 48, 0.5, "compile", None),
        record(4, 64, 0.5, "launch", None),
        record(5, 80, 0.5, "invalid", None),
        record(6, 96, 0.5, "invalid: work_group_size", None),
        record(7, 112, 0.5, "wrong_result", None),
        record(8, 128, 0.5, "timeout", None),
        record(9, 16, 1e-5, "ok", Some(3.0)),
        // The same configuration again: the first outcome stays.
        record(10, 16, 0.5, "ok", Some(9.0)),
    ];
    let mut again = record(11, 32, 0.5, "ok", Some(7.0));
    again.remeasured = Some(vec![0.007]);
    v.push(again);
    v
}

fn key(r: &Record) -> String {
    r.config
        .0
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_log_exported_and_imported_gives_the_same_configurations_times_and_failures() {
    let log = log();
    let cache = KernelTunerCache::from_records(&log, "log.jsonl").unwrap();
    assert_eq!(
        cache.len(),
        9,
        "a repeat and a re-measurement are not entries"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conv.json.gz");
    cache.write(&path).unwrap();
    let (_, back) = tune_runtime::import::read(&path).unwrap();
    assert_eq!(back.len(), 9);
    for want in &log[..9] {
        let got = back.iter().find(|r| key(r) == key(want)).unwrap();
        assert_eq!(got.status, want.status, "{}", key(want));
        match (got.cost, want.cost) {
            (Some(a), Some(b)) => assert!((a / b - 1.0).abs() < 1e-12, "{a} vs {b}"),
            (None, None) => {}
            other => panic!("{}: {other:?}", key(want)),
        }
        assert_eq!(got.samples.len(), want.samples.len());
        for (a, b) in [
            (got.prepare_s, want.prepare_s),
            (got.run_s, want.run_s),
            (got.validation_s.unwrap(), want.validation_s.unwrap()),
        ] {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        assert_eq!(&*got.device, "NVIDIA H200");
        assert_eq!(&*got.input_key, "problem_size=4096x4096");
    }
}

#[test]
fn a_log_exported_replays_with_the_same_times_and_failures() {
    let log = log();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conv.json");
    KernelTunerCache::from_records(&log, "log.jsonl")
        .unwrap()
        .kernel_name("conv_kernel")
        .write(&path)
        .unwrap();
    let rec = Recording::open(&path).unwrap();
    assert_eq!(rec.space().len(), 9);
    assert_eq!(rec.kernel(), "conv_kernel");
    let names: Vec<String> = rec
        .space()
        .params()
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    assert_eq!(names, ["bx", "scale", "fast", "mode"]);
    let (_, best) = rec.true_best().unwrap();
    assert!((best - 1.25).abs() < 1e-12);
    for want in &log[..9] {
        let c = (0..rec.space().len())
            .map(|i| rec.space().get(i).unwrap())
            .find(|c| {
                want.config
                    .0
                    .iter()
                    .enumerate()
                    .all(|(k, (_, v))| rec.label(c, k).unwrap() == v.to_string())
            })
            .unwrap();
        let entry = rec.record_of(&c).unwrap();
        let charged = want.prepare_s + want.run_s + want.validation_s.unwrap();
        assert!((entry.charged.as_secs_f64() - charged).abs() < 1e-9);
        match (&entry.time, want.status.as_str()) {
            (Ok(ms), "ok") => assert!((ms - want.cost.unwrap() * 1e3).abs() < 1e-9),
            (Err(Failure::Compile(_)), "compile")
            | (Err(Failure::Launch(_)), "launch")
            | (Err(Failure::Invalid(_)), "invalid")
            | (Err(Failure::WrongResult(_)), "wrong_result")
            | (Err(Failure::Timeout(_)), "timeout") => {}
            (Err(f @ Failure::Rejected { .. }), "invalid: work_group_size") => {
                assert_eq!(f.cause().unwrap().name(), "work_group_size");
            }
            other => panic!("{}: {other:?}", key(want)),
        }
    }
}

#[test]
fn failures_carry_kernel_tuners_markers_and_keys_are_pythons() {
    let cache = KernelTunerCache::from_records(&log(), "log.jsonl").unwrap();
    let doc = cache.as_json();
    let entries = doc["cache"].as_object().unwrap();
    // Python's `str` of each value: `True`, `1e-05`, a string as it is.
    assert!(
        entries.contains_key("16,1e-05,False,a b"),
        "{:?}",
        entries.keys()
    );
    let marker = |bx: i64| {
        let e = entries[&format!("{bx},0.5,True,a b")].clone();
        assert_eq!(e["__error__"], e["time"]);
        e["__error__"].as_str().unwrap().to_string()
    };
    assert_eq!(marker(48), "CompilationFailedConfig");
    assert_eq!(marker(64), "RuntimeFailedConfig");
    assert_eq!(marker(80), "InvalidConfig");
    // Rejected after compiling: Kernel Tuner's launch would fail.
    assert_eq!(marker(96), "RuntimeFailedConfig");
    assert_eq!(marker(112), "RuntimeFailedConfig");
    assert_eq!(doc["problem_size"], serde_json::json!([4096, 4096]));
    assert_eq!(doc["tune_params"]["scale"], serde_json::json!([1e-5, 0.5]));
    // Laid out as Kernel Tuner writes it: the cache last, so that it reads the file closed.
    let text = cache.text();
    assert!(
        text.trim_end().ends_with("}\n}"),
        "{}",
        &text[text.len() - 20..]
    );
    let header = &text[..text.find("\"cache\"").unwrap()];
    assert!(header.contains(r#""tune_params": {"bx": "#), "{header}");
}

#[test]
fn records_of_two_spaces_or_none_are_refused() {
    let mut log = log();
    log[3].tunable = "other".into();
    let e = KernelTunerCache::from_records(&log, "mixed.jsonl")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mixed.jsonl") && e.contains("one tunable and device at a time"),
        "{e}"
    );
    let e = KernelTunerCache::from_records(&[], "empty.jsonl")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no evaluation"), "{e}");
}

/// What recording a space takes: an exhaustive run whose log, exported, is the recording.
#[test]
fn a_brute_force_log_exports_to_the_recording_it_measured() {
    let src = Recording::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/test_cache_file.json"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("bf.jsonl");
    Tuner::new(src.space().clone(), src.evaluator())
        .technique(Exhaustive::new())
        .log(&log)
        .progress(false)
        .run()
        .unwrap();
    let records = tune_runtime::results::log::read(&log).unwrap();
    let out = dir.path().join("bf.json.gz");
    KernelTunerCache::from_records(&records, "bf.jsonl")
        .unwrap()
        .write(&out)
        .unwrap();
    let back = Recording::open(&out).unwrap();
    assert_eq!(back.space().len(), src.space().len());
    assert_eq!(back.true_best().unwrap().1, src.true_best().unwrap().1);
    for c in src.space().iter() {
        let labels: Vec<String> = (0..c.raw().len())
            .map(|k| src.label(&c, k).unwrap())
            .collect();
        let d = back
            .space()
            .iter()
            .find(|d| (0..labels.len()).all(|k| back.label(d, k).unwrap() == labels[k]))
            .unwrap();
        let (a, b) = (src.record_of(&c).unwrap(), back.record_of(&d).unwrap());
        assert_eq!(a.time.is_ok(), b.time.is_ok());
        if let (Ok(x), Ok(y)) = (&a.time, &b.time) {
            assert!((x - y).abs() < 1e-9 * x, "{x} vs {y}");
        }
        // (What an evaluation cost is not compared: a simulated run's records hold the
        // host's time, not the recording's; the first two tests compare it for a log.)
    }
}

/// Kernel Tuner 1.5.0 marks a failure in `__error__` and writes no `time` (older caches
/// wrote the marker in `time`); both read as the failure they mark.
#[test]
fn failures_marked_only_in_error_read_as_what_they_mark() {
    let doc = r#"{"device_name": "GPU", "kernel_name": "k", "problem_size": [8],
      "tune_params_keys": ["bx"], "tune_params": {"bx": [1, 2, 3, 4]}, "objective": "time",
      "cache": {
        "1": {"bx": 1, "time": 1.0, "compile_time": 1, "verification_time": 0, "benchmark_time": 1},
        "2": {"bx": 2, "__error__": "CompilationFailedConfig", "compile_time": 1, "verification_time": 0, "benchmark_time": 0},
        "3": {"bx": 3, "__error__": "RuntimeFailedConfig", "compile_time": 1, "verification_time": 0, "benchmark_time": 0},
        "4": {"bx": 4, "__error__": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0}
      }}"#;
    let rec = Recording::from_json(doc, "kt15.json").unwrap();
    let time = |bx: i64| {
        let c = rec
            .space()
            .iter()
            .find(|c| rec.label(c, 0).unwrap() == bx.to_string())
            .unwrap();
        rec.record_of(&c).unwrap().time.clone()
    };
    assert_eq!(time(1), Ok(1.0));
    assert!(matches!(time(2), Err(Failure::Compile(_))), "{:?}", time(2));
    assert!(matches!(time(3), Err(Failure::Launch(_))), "{:?}", time(3));
    assert!(matches!(time(4), Err(Failure::Invalid(_))), "{:?}", time(4));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kt15.json");
    std::fs::write(&path, doc).unwrap();
    let (_, recs) = tune_runtime::import::read(&path).unwrap();
    let statuses: Vec<&str> = recs.iter().map(|r| r.status.as_str()).collect();
    assert_eq!(statuses, ["ok", "compile", "launch", "invalid"]);
}
