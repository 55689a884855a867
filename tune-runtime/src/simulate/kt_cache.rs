//! Kernel Tuner's cache format out: tune's evaluation records (a log of `tune run`, or any
//! file [`crate::import`] reads) as a Kernel Tuner 1.5.0 cache file, so that a space
//! brute-forced by tune replays in Kernel Tuner's simulation mode as well as in tune's
//! ([`super::Recording`]).
//!
//! What Kernel Tuner's simulation runner reads of an entry: the parameter values, `time`
//! (milliseconds) or the failure in `__error__`, and `compile_time`, `verification_time`
//! and `benchmark_time` (milliseconds), which it charges to the simulated clock. The cache
//! key is `",".join(str(v) for v in values)` in `tune_params_keys` order, with Python's
//! `str`. Failures are marked as Kernel Tuner marks them (`CompilationFailedConfig`,
//! `RuntimeFailedConfig`, `InvalidConfig`), in `__error__` (what Kernel Tuner 1.5.0 writes)
//! and in `time` (what older caches hold, and tune's reader too); `tune_status` keeps tune's
//! own status, which Kernel Tuner has no marker for (a wrong result, a timeout, a
//! rejection by a device limit).

use std::collections::HashSet;
use std::io::Write as _;
use std::path::Path;

use serde_json::{json, Map, Value as Json};

use crate::param::Value;
use crate::results::{write_atomic, Record};
use crate::{Error, Result};

/// Kernel Tuner's marker of a failure with tune's status `status`. A rejection by a device
/// limit after compiling (`invalid: work_group_size` with a compile time) is where Kernel
/// Tuner's launch fails ("too many resources requested"), so `RuntimeFailedConfig`; before
/// compiling it is an `InvalidConfig`. Kernel Tuner stops on a wrong result and has no
/// timeouts: those, and any other failure, are `RuntimeFailedConfig`.
pub(super) fn marker(status: &str, compiled: bool) -> &'static str {
    match status {
        "compile" => "CompilationFailedConfig",
        "invalid" => "InvalidConfig",
        s if s.starts_with("invalid: ") && !compiled => "InvalidConfig",
        _ => "RuntimeFailedConfig",
    }
}

/// A Kernel Tuner cache document built from evaluation records.
#[derive(Clone, Debug)]
pub struct KernelTunerCache {
    doc: Json,
    entries: usize,
}

impl KernelTunerCache {
    /// The cache of `records`: one entry per distinct configuration (a configuration
    /// evaluated again keeps its first outcome; the re-measurements a run appends after its
    /// search are not evaluations and are left out). Numeric parameter values are listed in
    /// increasing order in `tune_params` (Kernel Tuner's neighbourhoods follow that order),
    /// other values in the order first seen. `problem_size` comes from an input key
    /// `problem_size=AxBxC` (trailing sizes of 1 dropped, as a 2-D problem is written).
    ///
    /// # Errors
    /// [`Error::Format`] naming `origin` (where the records were read) when there is no
    /// record, or when the records are not of one space (another tunable, device or set of
    /// parameters).
    pub fn from_records(records: &[Record], origin: &str) -> Result<KernelTunerCache> {
        let bad = |reason: String| Error::Format {
            path: origin.into(),
            reason,
        };
        let records: Vec<&Record> = records.iter().filter(|r| r.remeasured.is_none()).collect();
        let Some(first) = records.first() else {
            return Err(bad(
                "no evaluation to export; a Kernel Tuner cache needs at least one".into(),
            ));
        };
        let names: Vec<&str> = first.config.0.iter().map(|(n, _)| n.as_str()).collect();
        let mut domains: Vec<Vec<Value>> = vec![Vec::new(); names.len()];
        let mut cache = Map::new();
        let mut seen = HashSet::new();
        for r in &records {
            let same_space = r.tunable == first.tunable
                && r.device == first.device
                && r.config.0.len() == names.len()
                && r.config.0.iter().zip(&names).all(|((n, _), m)| n == m);
            if !same_space {
                return Err(bad(format!(
                    "evaluation {} ({} on {}, parameters {}) is not of the space of the first \
                     ({} on {}, parameters {}); export one tunable and device at a time",
                    r.evaluation,
                    r.tunable,
                    r.device,
                    r.config
                        .0
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                    first.tunable,
                    first.device,
                    names.join(",")
                )));
            }
            let key = r
                .config
                .0
                .iter()
                .map(|(_, v)| python_str(v))
                .collect::<Vec<_>>()
                .join(",");
            if !seen.insert(key.clone()) {
                continue;
            }
            let mut entry = Map::new();
            for ((n, v), domain) in r.config.0.iter().zip(&mut domains) {
                if !domain.contains(v) {
                    domain.push(v.clone());
                }
                entry.insert(n.clone(), json_of(v));
            }
            outcome(r, &mut entry);
            cache.insert(key, Json::Object(entry));
        }
        let tune_params: Map<String, Json> = names
            .iter()
            .zip(domains)
            .map(|(n, mut d)| {
                if d.iter().all(|v| number(v).is_some()) {
                    d.sort_by(|a, b| {
                        number(a)
                            .unwrap_or(0.0)
                            .total_cmp(&number(b).unwrap_or(0.0))
                    });
                }
                (
                    (*n).to_string(),
                    Json::Array(d.iter().map(json_of).collect()),
                )
            })
            .collect();
        let mut doc = Map::new();
        doc.insert("device_name".into(), json!(device_name(&first.device)));
        doc.insert("kernel_name".into(), json!(&*first.tunable));
        if let Some(size) = problem_size(&first.input_key) {
            doc.insert("problem_size".into(), json!(size));
        }
        doc.insert("tune_params_keys".into(), json!(names));
        doc.insert("tune_params".into(), Json::Object(tune_params));
        doc.insert("objective".into(), json!("time"));
        let entries = cache.len();
        doc.insert("cache".into(), Json::Object(cache));
        Ok(KernelTunerCache {
            doc: Json::Object(doc),
            entries,
        })
    }

    /// The kernel's name as Kernel Tuner knows it (it refuses a cache of another kernel):
    /// `KernelName` of a T1 file, where the log names the benchmark.
    pub fn kernel_name(mut self, name: &str) -> KernelTunerCache {
        if let Some(m) = self.doc.as_object_mut() {
            m.insert("kernel_name".into(), json!(name));
        }
        self
    }

    /// How many configurations it holds.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether it holds no configuration.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The document.
    pub fn as_json(&self) -> &Json {
        &self.doc
    }

    /// The document, taken.
    pub fn into_json(self) -> Json {
        self.doc
    }

    /// Writes the cache atomically: gzip-compressed when the name ends in `.gz`.
    ///
    /// # Errors
    /// [`Error::Io`] if it cannot be written.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = self.text();
        if path.extension().is_some_and(|e| e == "gz") {
            let io = |source| Error::Io {
                path: path.display().to_string(),
                source,
            };
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            gz.write_all(text.as_bytes()).map_err(io)?;
            write_atomic(path, &gz.finish().map_err(io)?)
        } else {
            write_atomic(path, text.as_bytes())
        }
    }
}

impl KernelTunerCache {
    /// The JSON text as Kernel Tuner lays it out: the header's fields and the parameters in
    /// their order (JSON objects here are sorted by key), then one cache entry per line.
    pub fn text(&self) -> String {
        let Some(doc) = self.doc.as_object() else {
            return self.doc.to_string();
        };
        let names: Vec<&str> = doc
            .get("tune_params_keys")
            .and_then(Json::as_array)
            .map(|k| k.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        let quoted = |k: &str| Json::from(k).to_string();
        let mut fields: Vec<String> = Vec::new();
        for key in HEADER {
            let Some(v) = doc.get(key) else { continue };
            let value = match (key, v) {
                ("tune_params", Json::Object(params)) => {
                    let listed: Vec<String> = names
                        .iter()
                        .filter_map(|n| params.get(*n).map(|d| format!("{}: {d}", quoted(n))))
                        .collect();
                    format!("{{{}}}", listed.join(", "))
                }
                ("cache", Json::Object(entries)) => {
                    let lines: Vec<String> = entries
                        .iter()
                        .map(|(k, e)| format!("{}: {e}", quoted(k)))
                        .collect();
                    format!("{{\n{}\n}}", lines.join(",\n"))
                }
                _ => v.to_string(),
            };
            fields.push(format!("{}: {value}", quoted(key)));
        }
        format!("{{\n{}\n}}\n", fields.join(",\n"))
    }
}

/// The header's fields in the order Kernel Tuner writes them.
const HEADER: [&str; 7] = [
    "device_name",
    "kernel_name",
    "problem_size",
    "tune_params_keys",
    "tune_params",
    "objective",
    "cache",
];

/// The time, failure and timings of an entry, in milliseconds.
fn outcome(r: &Record, entry: &mut Map<String, Json>) {
    if r.is_ok() {
        let time_ms = r.objectives.get("time_s").map(|s| s * 1e3);
        match (time_ms, r.cost) {
            (Some(t), _) => entry.insert("time".into(), json!(t)),
            // Another objective: its value as it is (and under its own name below).
            (None, Some(c)) => entry.insert("time".into(), json!(c)),
            (None, None) => entry.insert("time".into(), json!("RuntimeFailedConfig")),
        };
        if time_ms.is_some() && !r.samples.is_empty() {
            let ms: Vec<f64> = r.samples.iter().map(|s| s * 1e3).collect();
            entry.insert("times".into(), json!(ms));
        }
        for (name, v) in r.objectives.0.iter().filter(|(n, _)| n != "time_s") {
            entry.insert(name.clone(), json!(v));
        }
        if r.stopped_early {
            entry.insert("tune_stopped_early".into(), json!(true));
        }
    } else {
        let m = marker(&r.status, r.prepare_s > 0.0);
        entry.insert("time".into(), json!(m));
        entry.insert("__error__".into(), json!(m));
        entry.insert("tune_status".into(), json!(r.status));
    }
    entry.insert("compile_time".into(), json!(r.prepare_s * 1e3));
    entry.insert(
        "verification_time".into(),
        json!(r.validation_s.unwrap_or(0.0) * 1e3),
    );
    entry.insert("benchmark_time".into(), json!(r.run_s * 1e3));
    if !r.timestamp.is_empty() {
        entry.insert("timestamp".into(), json!(r.timestamp));
    }
}

fn json_of(v: &Value) -> Json {
    match v {
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::UInt(u) => json!(u),
        Value::Float(x) => json!(x),
        Value::Str(s) => json!(s),
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::UInt(u) => Some(*u as f64),
        Value::Float(x) => Some(*x),
        _ => None,
    }
}

/// `str(v)` in Python, which Kernel Tuner's cache keys are made of.
pub(super) fn python_str(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(x) => python_float(*x),
        Value::Str(s) => s.clone(),
    }
}

/// Python's `repr` of a float: the shortest digits that read back, in positional notation
/// with at least one decimal unless the exponent is below -4 or above 15.
fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the same shortest digits: `d.ddde[-]N`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..16).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let plain = format!("{x}");
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

/// Kernel Tuner's device name: tune's description without what tune appends in brackets
/// (the backend, its version and the driver).
fn device_name(described: &str) -> &str {
    match described.rfind(" (") {
        Some(i) if described.ends_with(')') && described[i..].contains("driver") => &described[..i],
        _ => described,
    }
}

/// `[4096, 4096]` of an input key `problem_size=4096x4096x1`.
fn problem_size(input_key: &str) -> Option<Vec<u64>> {
    let dims = input_key.strip_prefix("problem_size=")?;
    let mut v: Vec<u64> = dims
        .split('x')
        .map(|d| d.trim().parse().ok())
        .collect::<Option<_>>()?;
    while v.len() > 1 && v.last() == Some(&1) {
        v.pop();
    }
    Some(v)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_as_python_writes_them() {
        let cases: [(f64, &str); 10] = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (123.456, "123.456"),
            (-2.0, "-2.0"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (x, want) in cases {
            assert_eq!(python_float(x), want, "{x}");
        }
        assert_eq!(python_str(&Value::Bool(true)), "True");
        assert_eq!(python_str(&Value::Int(-3)), "-3");
        assert_eq!(python_str(&Value::Str("a b".into())), "a b");
    }

    #[test]
    fn device_names_and_problem_sizes_as_kernel_tuner_writes_them() {
        assert_eq!(
            device_name("NVIDIA H200 (cuda, CUDA 13.0, sm_90, driver 13000)"),
            "NVIDIA H200"
        );
        assert_eq!(
            device_name("NVIDIA A100-PCIE-40GB"),
            "NVIDIA A100-PCIE-40GB"
        );
        assert_eq!(
            problem_size("problem_size=4096x4096x1"),
            Some(vec![4096, 4096])
        );
        assert_eq!(problem_size("problem_size=1x1x1"), Some(vec![1]));
        assert_eq!(problem_size("n=10"), None);
    }

    #[test]
    fn failures_are_marked_as_kernel_tuner_marks_them() {
        assert_eq!(marker("compile", true), "CompilationFailedConfig");
        assert_eq!(marker("launch", true), "RuntimeFailedConfig");
        assert_eq!(marker("invalid", false), "InvalidConfig");
        assert_eq!(
            marker("invalid: work_group_size", true),
            "RuntimeFailedConfig"
        );
        assert_eq!(marker("invalid: grid", false), "InvalidConfig");
        assert_eq!(marker("wrong_result", true), "RuntimeFailedConfig");
    }
}
