//! Reading other tuners' results as tune's evaluation [`Record`]s, so that `tune show`,
//! plots and exports work on them: Kernel Tuner cache files (JSON, optionally gzip), KTT's
//! JSON output, and T4 results files. [`read`] tells the formats apart by their keys.
//!
//! Times become seconds. A cache file holds no order of evaluation: its records keep the
//! file's order, numbered from 1, with `elapsed_s` the running sum of the recorded
//! compile, verification and benchmark times.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value as Json;

use crate::param::Value;
use crate::results::export::T4;
use crate::results::{Named, Record};
use crate::{Error, Result};

/// A format [`read`] understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A Kernel Tuner cache file (`tune_params`, `cache`).
    KernelTunerCache,
    /// KTT's JSON output (`Metadata`, `Results`).
    Ktt,
    /// A T4 results file (`schema_version`, `results`).
    T4,
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Reads a JSON file, gzip-compressed or not. A Kernel Tuner cache cut short by a killed run
/// (no closing braces) is closed and read.
///
/// # Errors
/// [`Error::Io`], or [`Error::Format`] for a file that is not JSON.
pub fn read_json(path: &Path) -> Result<Json> {
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let mut text = String::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .map_err(io)?;
    } else {
        text = String::from_utf8(bytes).map_err(|e| bad(path, format!("not UTF-8 text: {e}")))?;
    }
    match serde_json::from_str(&text) {
        Ok(v) => Ok(v),
        Err(e) if e.is_eof() => {
            let t = text.trim_end().trim_end_matches(',');
            serde_json::from_str(&format!("{t}}}}}"))
                .map_err(|_| bad(path, format!("invalid JSON: {e}")))
        }
        Err(e) => Err(bad(path, format!("invalid JSON: {e}"))),
    }
}

/// Which format a parsed file has.
pub fn detect(doc: &Json) -> Option<Format> {
    if doc.get("cache").is_some() && doc.get("tune_params").is_some() {
        Some(Format::KernelTunerCache)
    } else if doc.get("Results").is_some() && doc.get("Metadata").is_some() {
        Some(Format::Ktt)
    } else if doc.get("schema_version").is_some() && doc.get("results").is_some() {
        Some(Format::T4)
    } else {
        None
    }
}

/// Reads the records of a tune log (JSON lines), or of any file [`read`] understands.
///
/// # Errors
/// [`Error::Io`] (also for a missing file), or [`Error::Format`].
pub fn records(path: &Path) -> Result<Vec<Record>> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    let first = bytes.split(|&c| c == b'\n').next().unwrap_or_default();
    // An empty file is a log whose run has not finished its first evaluation.
    if bytes.iter().all(u8::is_ascii_whitespace) || serde_json::from_slice::<Record>(first).is_ok()
    {
        return crate::results::log::read(path);
    }
    Ok(read(path)?.1)
}

/// Reads a Kernel Tuner cache, a KTT output or a T4 file as records.
///
/// # Errors
/// [`Error::Io`]; [`Error::UnknownFileKind`] for JSON of another kind; [`Error::Format`]
/// naming what is missing.
pub fn read(path: &Path) -> Result<(Format, Vec<Record>)> {
    let doc = read_json(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match detect(&doc) {
        Some(Format::KernelTunerCache) => Ok((Format::KernelTunerCache, kernel_tuner(&doc, path)?)),
        Some(Format::Ktt) => Ok((Format::Ktt, ktt(&doc, path)?)),
        Some(Format::T4) => {
            let t4: T4 = serde_json::from_value(doc)
                .map_err(|e| bad(path, format!("not a T4 results file: {e}")))?;
            Ok((Format::T4, from_t4(&t4, &name)))
        }
        None => Err(Error::UnknownFileKind {
            path: path.display().to_string(),
            expected: "a Kernel Tuner cache (`tune_params`, `cache`), KTT output (`Metadata`, \
                       `Results`) or T4 file (`schema_version`, `results`)"
                .into(),
        }),
    }
}

fn value_of(v: &Json) -> Value {
    match v {
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::Str(s.clone()),
        other => Value::Str(other.to_string()),
    }
}

fn num(e: &Json, key: &str) -> f64 {
    e.get(key)
        .and_then(Json::as_f64)
        .filter(|x| x.is_finite() && *x > 0.0)
        .unwrap_or(0.0)
}

struct Common {
    tunable: Arc<str>,
    input_key: Arc<str>,
    device: Arc<str>,
    technique: Arc<str>,
}

impl Common {
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        evaluation: u64,
        config: Named<Value>,
        status: &str,
        detail: Option<String>,
        time_s: Option<f64>,
        samples: Vec<f64>,
        (prepare_s, run_s, validation_s): (f64, f64, Option<f64>),
        elapsed_s: f64,
        timestamp: String,
    ) -> Record {
        Record {
            tunable: self.tunable.clone(),
            input_key: self.input_key.clone(),
            device: self.device.clone(),
            evaluation,
            index: (evaluation - 1) as u128,
            config,
            status: status.into(),
            detail,
            cost: time_s,
            objectives: Named(
                time_s
                    .map(|t| ("time_s".to_string(), t))
                    .into_iter()
                    .collect(),
            ),
            samples,
            prepare_s,
            run_s,
            validation_s,
            elapsed_s,
            seed: 0,
            technique: self.technique.clone(),
            timestamp,
            stopped_early: false,
            remeasured: None,
            measured_on: None,
        }
    }
}

/// Records of a Kernel Tuner cache: the recorded time (ms) as `time_s`, failures by their
/// marker (`CompilationFailedConfig` -> `compile`, `RuntimeFailedConfig` -> `launch`,
/// `InvalidConfig` -> `invalid`).
///
/// # Errors
/// [`Error::Format`] for a cache without `cache` or `tune_params`.
pub fn kernel_tuner(doc: &Json, path: &Path) -> Result<Vec<Record>> {
    let cache = doc.get("cache").and_then(Json::as_object).ok_or_else(|| {
        bad(
            path,
            "no `cache` object; is this a Kernel Tuner cache file?",
        )
    })?;
    let names: Vec<String> = match doc.get("tune_params_keys").and_then(Json::as_array) {
        Some(k) => k
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect(),
        None => doc
            .get("tune_params")
            .and_then(Json::as_object)
            .ok_or_else(|| bad(path, "no `tune_params`; is this a Kernel Tuner cache file?"))?
            .keys()
            .cloned()
            .collect(),
    };
    let text = |k: &str| doc.get(k).and_then(Json::as_str).unwrap_or("").to_string();
    let input_key = match doc.get("problem_size") {
        Some(Json::Array(a)) => format!(
            "problem_size={}",
            a.iter().map(Json::to_string).collect::<Vec<_>>().join("x")
        ),
        Some(v) if !v.is_null() => format!("problem_size={v}"),
        _ => String::new(),
    };
    let common = Common {
        tunable: text("kernel_name").into(),
        input_key: input_key.into(),
        device: text("device_name").into(),
        technique: "kernel_tuner_cache".into(),
    };
    let mut elapsed = 0.0;
    let mut out = Vec::with_capacity(cache.len());
    for (i, e) in cache.values().enumerate() {
        let config = Named(
            names
                .iter()
                .map(|n| {
                    (
                        n.clone(),
                        e.get(n).map_or(Value::Str(String::new()), value_of),
                    )
                })
                .collect(),
        );
        // A failure is marked in `__error__` (Kernel Tuner 1.5.0) or in `time` (older
        // caches); `tune_status` is tune's own status, in caches tune wrote.
        let marker = [e.get("__error__"), e.get("time")]
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .find(|m| m.ends_with("Config"));
        let (status, detail, time) = match (marker, e.get("time")) {
            (Some(m), _) => (
                match (e.get("tune_status").and_then(Json::as_str), m) {
                    (Some(s), _) => s,
                    (None, "CompilationFailedConfig") => "compile",
                    (None, "RuntimeFailedConfig") => "launch",
                    (None, "InvalidConfig") => "invalid",
                    _ => "other",
                },
                Some(m.to_string()),
                None,
            ),
            (None, Some(Json::Number(n))) => match n.as_f64().filter(|t| t.is_finite()) {
                Some(t) => ("ok", None, Some(t / 1e3)),
                None => ("other", Some(n.to_string()), None),
            },
            (None, Some(Json::String(s))) => ("other", Some(s.clone()), None),
            _ => ("other", Some("no time recorded".into()), None),
        };
        let samples = e
            .get("times")
            .and_then(Json::as_array)
            .map(|t| t.iter().filter_map(Json::as_f64).map(|x| x / 1e3).collect())
            .unwrap_or_default();
        let prepare = num(e, "compile_time") / 1e3;
        let run = num(e, "benchmark_time") / 1e3;
        let validation = num(e, "verification_time") / 1e3;
        elapsed += prepare + run + validation;
        let mut rec = common.record(
            i as u64 + 1,
            config,
            status,
            detail,
            time,
            samples,
            (prepare, run, (validation > 0.0).then_some(validation)),
            elapsed,
            text_of(e, "timestamp"),
        );
        rec.stopped_early = e.get("tune_stopped_early") == Some(&Json::Bool(true));
        out.push(rec);
    }
    Ok(out)
}

fn text_of(e: &Json, k: &str) -> String {
    e.get(k).and_then(Json::as_str).unwrap_or("").to_string()
}

/// Records of KTT's JSON output: `TotalDuration` as `time_s` (in `Metadata.TimeUnit`),
/// `TotalOverhead` as preparation time; statuses `Ok`, `CompilationFailed`,
/// `ComputationFailed`, `ValidationFailed`.
///
/// # Errors
/// [`Error::Format`] for a file without `Results`.
pub fn ktt(doc: &Json, path: &Path) -> Result<Vec<Record>> {
    let meta = doc.get("Metadata").cloned().unwrap_or(Json::Null);
    let unit = match meta.get("TimeUnit").and_then(Json::as_str) {
        Some("Nanoseconds") => 1e-9,
        Some("Milliseconds") => 1e-3,
        Some("Seconds") => 1.0,
        _ => 1e-6,
    };
    let results = doc
        .get("Results")
        .and_then(Json::as_array)
        .ok_or_else(|| bad(path, "no `Results` list; is this KTT's JSON output?"))?;
    let device = format!(
        "{}{}",
        text_of(&meta, "Device"),
        match meta.get("ComputeApi").and_then(Json::as_str) {
            Some(api) => format!(" ({api})"),
            None => String::new(),
        }
    );
    let mut common = Common {
        tunable: "".into(),
        input_key: "".into(),
        device: device.into(),
        technique: "ktt".into(),
    };
    let stamp = text_of(&meta, "Timestamp");
    let mut elapsed = 0.0;
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        if common.tunable.is_empty() {
            common.tunable = text_of(r, "KernelName").into();
        }
        let config = Named(
            r.get("Configuration")
                .and_then(Json::as_array)
                .map(|c| {
                    c.iter()
                        .map(|p| {
                            (
                                text_of(p, "Name"),
                                p.get("Value").map_or(Value::Str(String::new()), value_of),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        );
        let status = match r.get("Status").and_then(Json::as_str) {
            Some("Ok") => "ok",
            Some("CompilationFailed") => "compile",
            Some("ComputationFailed") => "launch",
            Some("ValidationFailed") => "wrong_result",
            _ => "other",
        };
        let duration = num(r, "TotalDuration") * unit;
        let overhead = num(r, "TotalOverhead") * unit;
        let validation = num(r, "ValidationOverhead") * unit;
        elapsed += duration + overhead;
        let samples = r
            .get("ComputationResults")
            .and_then(Json::as_array)
            .map(|c| c.iter().map(|x| num(x, "Duration") * unit).collect())
            .unwrap_or_default();
        out.push(common.record(
            i as u64 + 1,
            config,
            status,
            (status != "ok").then(|| text_of(r, "Status")),
            (status == "ok").then_some(duration),
            samples,
            (overhead, duration, (validation > 0.0).then_some(validation)),
            elapsed,
            stamp.clone(),
        ));
    }
    Ok(out)
}

/// Records of a T4 file: the first objective as the cost (times converted to seconds when
/// it is `time`).
pub fn from_t4(t4: &T4, name: &str) -> Vec<Record> {
    let unit = t4.seconds_per_unit();
    let meta = |k: &str| {
        t4.metadata
            .get(k)
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string()
    };
    let tunable = meta("tunable");
    let common = Common {
        tunable: if tunable.is_empty() {
            name.into()
        } else {
            tunable.into()
        },
        input_key: "".into(),
        device: meta("device").into(),
        technique: "t4".into(),
    };
    let mut elapsed = 0.0;
    t4.results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let objective = r
                .objectives
                .first()
                .cloned()
                .unwrap_or_else(|| "time".into());
            let scale = if objective == "time" || objective == "runtimes" {
                unit
            } else {
                1.0
            };
            let value = r.value(&objective).map(|v| v * scale);
            let status = match r.invalidity.as_str() {
                "correct" => "ok",
                "compile" => "compile",
                "constraints" => "invalid",
                "correctness" => "wrong_result",
                _ => "launch",
            };
            let prepare = r.times.compilation.unwrap_or(0.0) * unit;
            let validation = r.times.validation.map(|v| v * unit);
            let samples: Vec<f64> = r
                .times
                .runtimes
                .iter()
                .flatten()
                .map(|x| x * unit)
                .collect();
            let run: f64 = samples.iter().sum();
            elapsed += prepare + run + validation.unwrap_or(0.0);
            let mut rec = common.record(
                i as u64 + 1,
                Named(
                    r.configuration
                        .0
                        .iter()
                        .map(|(n, v)| (n.clone(), value_of(v)))
                        .collect(),
                ),
                if value.is_none() && status == "ok" {
                    "other"
                } else {
                    status
                },
                (status != "ok").then(|| r.invalidity.clone()),
                value.filter(|_| status == "ok"),
                samples,
                (prepare, run, validation),
                elapsed,
                r.timestamp.clone(),
            );
            if scale == 1.0 {
                rec.objectives = Named(rec.cost.map(|c| (objective, c)).into_iter().collect());
            }
            rec
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name)
    }

    #[test]
    fn kernel_tuner_caches_become_records() {
        let (f, recs) = read(&fixture("test_cache_file.json")).unwrap();
        assert_eq!(f, Format::KernelTunerCache);
        assert_eq!(recs.len(), 15);
        assert!(recs.iter().all(Record::is_ok));
        assert_eq!(&*recs[0].tunable, "vector_add");
        assert!(recs[0].cost.unwrap() > 1e-5 && recs[0].cost.unwrap() < 1e-4);
        assert!(recs.windows(2).all(|w| w[1].elapsed_s >= w[0].elapsed_s));
        assert_eq!(recs[0].config.0[0].0, "block_size_x");
    }

    #[test]
    fn ktt_output_becomes_records() {
        let (f, recs) = read(&fixture("ktt/pnpoly_excerpt.json")).unwrap();
        assert_eq!(f, Format::Ktt);
        assert_eq!(recs.len(), 12);
        let ok = &recs[0];
        assert_eq!(ok.status, "ok");
        assert!((ok.cost.unwrap() - 0.052507584).abs() < 1e-12);
        assert_eq!(ok.config.get("BLOCK_SIZE_X"), Some(&Value::Int(32)));
        assert!(ok.device.contains("2080 Ti"));
        assert!(recs
            .iter()
            .any(|r| r.status == "launch" && r.cost.is_none()));
    }

    #[test]
    fn logs_and_other_files_read_alike() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        std::fs::write(&p, "").unwrap();
        assert!(records(&p).unwrap().is_empty());
        let (_, recs) = read(&fixture("test_cache_file.json")).unwrap();
        let mut text = String::new();
        for r in &recs {
            text.push_str(&serde_json::to_string(r).unwrap());
            text.push('\n');
        }
        std::fs::write(&p, text).unwrap();
        // serde_json (without `float_roundtrip`) may change a float's last bit: compare
        // what matters here, that the log was read as a log.
        let back = records(&p).unwrap();
        assert_eq!(back.len(), recs.len());
        for (a, b) in back.iter().zip(&recs) {
            assert_eq!((&a.config, a.evaluation), (&b.config, b.evaluation));
            assert!((a.cost.unwrap() / b.cost.unwrap() - 1.0).abs() < 1e-15);
        }
        assert_eq!(records(&fixture("test_cache_file.json")).unwrap(), recs);
        assert!(records(&dir.path().join("missing.jsonl")).is_err());
    }

    #[test]
    fn truncated_caches_are_closed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cut.json");
        let text = std::fs::read_to_string(fixture("test_cache_file.json")).unwrap();
        // A cache as Kernel Tuner leaves it mid-run: the last entry and its comma, without
        // the braces that close `cache` and the file.
        let t = text.trim_end().strip_suffix('}').unwrap().trim_end();
        let t = t.strip_suffix('}').unwrap();
        std::fs::write(&p, format!("{t},\n")).unwrap();
        let (_, recs) = read(&p).unwrap();
        assert_eq!(recs.len(), 15);
        std::fs::write(&p, "{\"x\": 1}").unwrap();
        let e = read(&p).unwrap_err();
        assert!(matches!(e, Error::UnknownFileKind { .. }), "{e:?}");
        assert!(e.to_string().contains("not a Kernel Tuner cache"), "{e}");
    }
}
