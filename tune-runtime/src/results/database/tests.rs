#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::param::Param;
use crate::space::SpaceBuilder;

pub(super) fn space() -> Space {
    SpaceBuilder::new()
        .param(Param::<u32>::values("BS", [16, 32, 64, 128]))
        .param(Param::<bool>::bool("PAD"))
        .build()
        .unwrap()
}

pub(super) fn entry(key: &str, bs: i64, cost: f64) -> Entry {
    Entry {
        input_key: key.into(),
        best: Named(vec![
            ("BS".into(), Value::Int(bs)),
            ("PAD".into(), Value::Bool(true)),
        ]),
        cost,
        objectives: Named(vec![("time_s".into(), cost)]),
        remeasured: None,
        technique: "test".into(),
        seed: 1,
        evaluations: 8,
        valid: 8,
        failures: BTreeMap::new(),
        space_len: "8".into(),
        top: vec![],
        timestamp: "2026-01-01T00:00:00.000000Z".into(),
        fingerprint: None,
    }
}

fn coded(key: &str, bs: i64, cost: f64, code: &str) -> Entry {
    Entry {
        fingerprint: Some(Fingerprint {
            code: Some(code.into()),
            space: String::new(),
            tune: String::new(),
        }),
        ..entry(key, bs, cost)
    }
}

fn bs(c: &Choice) -> u32 {
    c.config.get(0)
}

#[test]
fn fallbacks_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    // Nothing recorded, no default: the first valid configuration.
    let c = db.choose("k", "gpu", "n=100", &s, None).unwrap();
    assert_eq!(c.source, Source::FirstValid);
    assert_eq!(c.config, s.get(0).unwrap());
    // A declared default.
    let d = s
        .config_from_values([("BS", Value::Int(64)), ("PAD", Value::Bool(false))])
        .unwrap();
    let c = db.choose("k", "gpu", "n=100", &s, Some(&d)).unwrap();
    assert_eq!((c.source, c.config), (Source::Default, d.clone()));
    // Recorded inputs: exact, else nearest.
    for (key, b) in [("n=1000", 32), ("n=100000", 128)] {
        assert!(db
            .record("k", "gpu", entry(key, b, 1.0), &s, Policy::KeepBetter)
            .unwrap());
    }
    let c = db.choose("k", "gpu", "n=1000", &s, Some(&d)).unwrap();
    assert_eq!((c.source, bs(&c)), (Source::Exact, 32));
    assert_eq!(c.stale, None);
    let c = db.choose("k", "gpu", "n=50000", &s, Some(&d)).unwrap();
    assert_eq!((c.source, bs(&c)), (Source::NearestInput, 128));
    assert_eq!(c.input_key.as_deref(), Some("n=100000"));
    let c = db.choose("k", "gpu", "n=10", &s, Some(&d)).unwrap();
    assert_eq!((c.source, bs(&c)), (Source::NearestInput, 32));
    // Different components or another device: no recorded match.
    let c = db.choose("k", "gpu", "m=1000", &s, Some(&d)).unwrap();
    assert_eq!(c.source, Source::Default);
    let c = db.choose("k", "other gpu", "n=1000", &s, None).unwrap();
    assert_eq!(c.source, Source::FirstValid);
}

#[test]
fn recorded_configurations_outside_the_space_are_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    db.record("k2", "gpu", entry("n=1", 256, 1.0), &s, Policy::Replace)
        .unwrap();
    db.record("k2", "gpu", entry("n=2", 16, 1.0), &s, Policy::Replace)
        .unwrap();
    let c = db.choose("k2", "gpu", "n=1", &s, None).unwrap();
    assert_eq!((c.source, bs(&c)), (Source::NearestInput, 16));
}

#[test]
fn keep_better_does_not_overwrite_with_worse() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    assert!(db
        .record("k3", "gpu", entry("n=1", 32, 1.0), &s, Policy::KeepBetter)
        .unwrap());
    assert!(!db
        .record("k3", "gpu", entry("n=1", 64, 2.0), &s, Policy::KeepBetter)
        .unwrap());
    assert!(db
        .record("k3", "gpu", entry("n=1", 128, 0.5), &s, Policy::KeepBetter)
        .unwrap());
    let f = db.load("k3", "gpu").unwrap().unwrap();
    assert_eq!(f.entries.len(), 1);
    assert_eq!(f.entries[0].cost, 0.5);
    assert_eq!(f.schema, SCHEMA);
    // Stable, reviewable text: pretty-printed, declaration order, trailing newline.
    let text = std::fs::read_to_string(db.path("k3", "gpu")).unwrap();
    assert!(text.starts_with("{\n  \"tunable\": \"k3\",\n  \"device\": \"gpu\","));
    assert!(text.contains("\"best\": {\n        \"BS\": 128,\n        \"PAD\": true\n"));
    assert!(text.contains("\"fingerprint\": {"));
    assert!(text.ends_with("}\n"));
    // Lock and temporary files stay out of the user's commits.
    let ignore = std::fs::read_to_string(dir.path().join(".gitignore")).unwrap();
    assert!(ignore.contains(".*.lock") && ignore.contains(".*.tmp"));
}

#[test]
fn dispatch_reads_tuning_under_the_manifest_dir() {
    let dir = tempfile::tempdir().unwrap();
    let s = space();
    Database::open(dir.path().join("tuning"))
        .record("k4", "gpu", entry("n=1", 64, 1.0), &s, Policy::Replace)
        .unwrap();
    let manifest = dir.path().to_str().unwrap();
    if std::env::var_os("TUNE_DB").is_none() {
        let c = dispatch("k4", "gpu", "n=1", &s, None, manifest).unwrap();
        assert_eq!((c.source, bs(&c)), (Source::Exact, 64));
    }
    let c = dispatch("k4", "cpu", "n=1", &s, None, manifest).unwrap();
    assert_eq!(c.source, Source::FirstValid);
    assert!(Database::default_location(manifest).is_default_location());
    assert!(!Database::open(dir.path()).is_default_location());
}

/// "GPU A" and "gpu-a" used to share `gpu-a.json` and overwrite each other.
#[test]
fn device_names_with_the_same_slug_keep_separate_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    db.record("k", "GPU A", entry("n=1", 32, 1.0), &s, Policy::Replace)
        .unwrap();
    db.record("k", "gpu-a", entry("n=1", 64, 1.0), &s, Policy::Replace)
        .unwrap();
    assert_ne!(db.path("k", "GPU A"), db.path("k", "gpu-a"));
    let a = db.load("k", "GPU A").unwrap().unwrap();
    let b = db.load("k", "gpu-a").unwrap().unwrap();
    assert_eq!(
        (a.device.as_str(), a.entries[0].best.0[0].1.clone()),
        ("GPU A", Value::Int(32))
    );
    assert_eq!(
        (b.device.as_str(), b.entries[0].best.0[0].1.clone()),
        ("gpu-a", Value::Int(64))
    );
    // A file whose stored names disagree with its place is reported, never overwritten.
    std::fs::copy(db.path("k", "GPU A"), db.path("k", "gpu-b")).unwrap();
    let e = db
        .record("k", "gpu-b", entry("n=1", 16, 1.0), &s, Policy::Replace)
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds `k` on `GPU A`"), "{e}");
}

/// A result recorded for other code, another space or another tune is not an exact match
/// any more: the dispatch falls back and says why.
#[test]
fn stale_fingerprints_are_misses_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    db.record("f", "gpu", coded("n=1", 64, 1.0, "k1"), &s, Policy::Replace)
        .unwrap();
    let c = db
        .choose_with_code("f", "k1", "gpu", "n=1", &s, None)
        .unwrap();
    assert_eq!(
        (c.source, bs(&c), c.stale.clone()),
        (Source::Exact, 64, None)
    );
    // The kernel changed.
    let c = db
        .choose_with_code("f", "k2", "gpu", "n=1", &s, None)
        .unwrap();
    assert_eq!(c.source, Source::FirstValid);
    let stale = c.stale.unwrap();
    assert_eq!(stale.reason, StaleReason::Code);
    assert!(stale.to_string().contains("input `n=1`"), "{stale}");
    // The space changed (one more value): not exact; not "nearest" either for this key.
    let grown = SpaceBuilder::new()
        .param(Param::<u32>::values("BS", [16, 32, 64, 128, 256]))
        .param(Param::<bool>::bool("PAD"))
        .build()
        .unwrap();
    let c = db
        .choose_with_code("f", "k1", "gpu", "n=1", &grown, None)
        .unwrap();
    assert_eq!(c.source, Source::FirstValid);
    assert_eq!(c.stale.unwrap().reason, StaleReason::Space);
    // Another input key of the same code: nearest, since the space depends on the input.
    let c = db
        .choose_with_code("f", "k1", "gpu", "n=2", &grown, None)
        .unwrap();
    assert_eq!(
        (c.source, bs(&c), c.stale),
        (Source::NearestInput, 64, None)
    );
    // Other code: a nearer stale entry is passed over and named.
    let c = db
        .choose_with_code("f", "k2", "gpu", "n=2", &s, None)
        .unwrap();
    assert_eq!(c.source, Source::FirstValid);
    assert_eq!(c.stale.unwrap().input_key, "n=1");
}

#[test]
fn entries_of_older_tunes_are_stale_and_replaced_even_by_worse_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    // A file as tune 0.1.0 wrote it: no schema, no fingerprints.
    let mut legacy = serde_json::to_value(TunableFile {
        tunable: "old".into(),
        device: "gpu".into(),
        schema: 1,
        entries: vec![entry("n=1", 64, 0.1)],
    })
    .unwrap();
    legacy.as_object_mut().unwrap().remove("schema");
    let path = db.path("old", "gpu");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&legacy).unwrap()).unwrap();
    assert_eq!(db.load("old", "gpu").unwrap().unwrap().schema, 1);
    let c = db.choose("old", "gpu", "n=1", &s, None).unwrap();
    assert_eq!(c.source, Source::FirstValid);
    assert_eq!(c.stale.unwrap().reason, StaleReason::NoFingerprint);
    // A current result replaces it under KeepBetter although its cost is higher.
    assert!(db
        .record("old", "gpu", entry("n=1", 32, 5.0), &s, Policy::KeepBetter)
        .unwrap());
    let c = db.choose("old", "gpu", "n=1", &s, None).unwrap();
    assert_eq!((c.source, bs(&c)), (Source::Exact, 32));
    // Another version of tune.
    let mut f = db.load("old", "gpu").unwrap().unwrap();
    f.entries[0].fingerprint.as_mut().unwrap().tune = "0.0.9".into();
    std::fs::write(&path, serde_json::to_string(&f).unwrap()).unwrap();
    let c = Database::open(dir.path())
        .recorded("old", "gpu", "n=1", &s, None)
        .unwrap();
    assert_eq!(c, None, "a stale entry is not offered for re-measurement");
}

#[test]
fn remeasured_winners_replace_the_entry_they_were_measured_against() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    assert_eq!(db.recorded("r", "gpu", "n=1", &s, Some("k")).unwrap(), None);
    db.record(
        "r",
        "gpu",
        coded("n=1", 32, 1.0, "k"),
        &s,
        Policy::KeepBetter,
    )
    .unwrap();
    let recorded = db
        .recorded("r", "gpu", "n=1", &s, Some("k"))
        .unwrap()
        .unwrap();
    assert_eq!(recorded.best.0[0].1, Value::Int(32));
    assert_eq!(
        db.recorded("r", "gpu", "n=1", &s, Some("other")).unwrap(),
        None
    );
    // Re-measured side by side, the new configuration won, at a cost above the recorded
    // (lucky) minimum: it replaces the entry all the same.
    assert!(db
        .record_remeasured("r", "gpu", coded("n=1", 64, 1.2, "k"), &s, Some(&recorded))
        .unwrap());
    let f = db.load("r", "gpu").unwrap().unwrap();
    assert_eq!(
        (f.entries[0].best.0[0].1.clone(), f.entries[0].cost),
        (Value::Int(64), 1.2)
    );
    // Another run recorded something else meanwhile: back to comparing costs.
    assert!(!db
        .record_remeasured("r", "gpu", coded("n=1", 128, 1.5, "k"), &s, Some(&recorded))
        .unwrap());
    assert!(db
        .record_remeasured("r", "gpu", coded("n=1", 128, 1.1, "k"), &s, Some(&recorded))
        .unwrap());
}

#[test]
fn non_finite_costs_are_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    for bad in [f64::NAN, f64::INFINITY, -f64::INFINITY] {
        let e = db
            .record("nan", "gpu", entry("n=1", 32, bad), &s, Policy::Replace)
            .unwrap_err();
        assert!(e.to_string().contains("non-finite cost"), "{e}");
    }
    let mut e = entry("n=1", 32, 1.0);
    e.top = vec![
        Ranked {
            config: e.best.clone(),
            cost: 1.0,
        },
        Ranked {
            config: e.best.clone(),
            cost: f64::NAN,
        },
    ];
    db.record("nan", "gpu", e, &s, Policy::Replace).unwrap();
    let f = db.load("nan", "gpu").unwrap().unwrap();
    assert_eq!(f.entries[0].top.len(), 1);
}

#[test]
fn damaged_newer_or_read_only_databases_are_found_before_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("tuning"));
    let s = space();
    db.check_writable("c", "gpu").unwrap();
    let path = db.path("c", "gpu");
    // Half a merge conflict.
    std::fs::write(&path, "{\n<<<<<<< HEAD\n").unwrap();
    let e = db.check_writable("c", "gpu").unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()), "{e}");
    assert!(e.contains("damaged") && e.contains("delete it"), "{e}");
    // Another schema: valid JSON of another shape.
    std::fs::write(
        &path,
        "{\"tunable\": \"c\", \"device\": \"gpu\", \"results\": []}",
    )
    .unwrap();
    let e = db.check_writable("c", "gpu").unwrap_err().to_string();
    assert!(e.contains("missing field `entries`"), "{e}");
    // A newer tune's file.
    std::fs::write(
        &path,
        "{\"tunable\": \"c\", \"device\": \"gpu\", \"schema\": 99, \"entries\": []}",
    )
    .unwrap();
    let e = db.check_writable("c", "gpu").unwrap_err();
    assert!(
        matches!(
            e,
            Error::NewerFormat {
                found: 99,
                supported: SCHEMA,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("newer tune"), "{e}");
    // Read-only.
    std::fs::remove_file(&path).unwrap();
    db.record("c", "gpu", entry("n=1", 32, 1.0), &s, Policy::Replace)
        .unwrap();
    let mut perm = std::fs::metadata(&path).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&path, perm.clone()).unwrap();
    let e = db.check_writable("c", "gpu").unwrap_err().to_string();
    assert!(e.contains("read-only"), "{e}");
    let e = db
        .record("c", "gpu", entry("n=1", 16, 0.5), &s, Policy::Replace)
        .unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&path, perm).unwrap();
    // A database folder that cannot be created (a file is in the way; this holds for
    // root too).
    let blocked = Database::open(dir.path().join("file"));
    std::fs::write(dir.path().join("file"), "").unwrap();
    let e = blocked.check_writable("c", "gpu").unwrap_err().to_string();
    assert!(e.contains("must be writable"), "{e}");
}

#[test]
fn stray_temporary_files_are_removed_by_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let s = space();
    let path = db.path("t", "gpu");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // What a writer killed before its rename leaves (old and new naming).
    let strays = [".gpu.json.4242.tmp", ".gpu.json.4242.7.tmp"];
    for f in strays {
        std::fs::write(path.with_file_name(f), "{\"tunable\": ").unwrap();
    }
    db.record("t", "gpu", entry("n=1", 32, 1.0), &s, Policy::Replace)
        .unwrap();
    for f in strays {
        assert!(!path.with_file_name(f).exists(), "{f} is left");
    }
    let left: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Was: a damaged database failed the run only after tuning, and the result was lost.
#[test]
fn a_tuner_checks_its_database_before_measuring_anything() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::evaluate::closure::Closure;
    use crate::tuner::Tuner;
    use crate::Failure;

    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path());
    let path = db.path("early", "cpu");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "not json").unwrap();
    let measured = AtomicUsize::new(0);
    let eval = Closure::new(|_: &Config| -> std::result::Result<f64, Failure> {
        measured.fetch_add(1, Ordering::Relaxed);
        Ok(1.0)
    });
    let e = Tuner::new(space(), eval)
        .name("early")
        .progress(false)
        .database(db)
        .run()
        .unwrap_err();
    assert!(matches!(e, Error::Format { .. }), "{e}");
    assert!(e.to_string().contains("damaged"), "{e}");
    assert_eq!(measured.load(Ordering::Relaxed), 0);
}
