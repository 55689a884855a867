//! Exports of evaluation records: CSV and the community T4 JSON format.
//!
//! T4 is the auto-tuning community's results format (the "Open Autotuning Results Schema",
//! also written by Kernel Tuner): `schema_version`, `metadata`, and `results`, one object
//! per evaluation with its `configuration`, `times` (`compilation`, `framework`,
//! `search_algorithm`, `validation`, `runtimes`), `invalidity` (`correct`, `compile`,
//! `runtime`, `constraints`, `correctness`), `correctness` and `measurements`. Times are in
//! milliseconds, as `metadata.timeunit` says.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{write_atomic, Named, Record};
use crate::param::Value;
use crate::{Error, Result};

const FIXED: [&str; 16] = [
    "tunable",
    "input_key",
    "device",
    "technique",
    "seed",
    "timestamp",
    "evaluation",
    "index",
    "status",
    "detail",
    "cost",
    "prepare_s",
    "run_s",
    "validation_s",
    "elapsed_s",
    "samples",
];

fn csv_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

fn value_text(v: &Value) -> String {
    match v {
        // `{:?}` keeps a decimal point, so floats read back as floats.
        Value::Float(x) => format!("{x:?}"),
        other => other.to_string(),
    }
}

fn value_of_text(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        Value::Int(i)
    } else if let Ok(u) = s.parse::<u64>() {
        Value::UInt(u)
    } else if let Ok(x) = s.parse::<f64>() {
        Value::Float(x)
    } else if let Ok(b) = s.parse::<bool>() {
        Value::Bool(b)
    } else {
        Value::Str(s.to_string())
    }
}

fn opt_f64(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!("{x:?}"))
}

/// Records as CSV: fixed columns (`tunable`, `input_key`, `device`, `technique`, `seed`,
/// `timestamp`, `evaluation`, `index`, `status`, `detail`, `cost`, `prepare_s`, `run_s`,
/// `validation_s`, `elapsed_s`, `samples` separated by `;`), then one `objective:<name>`
/// column per objective, then one column per parameter.
pub fn to_csv(records: &[Record]) -> String {
    let mut objectives: Vec<&str> = Vec::new();
    let mut params: Vec<&str> = Vec::new();
    for r in records {
        for (n, _) in &r.objectives.0 {
            if !objectives.contains(&n.as_str()) {
                objectives.push(n);
            }
        }
        for (n, _) in &r.config.0 {
            if !params.contains(&n.as_str()) {
                params.push(n);
            }
        }
    }
    let mut out = String::new();
    let header: Vec<String> = FIXED
        .iter()
        .map(|s| s.to_string())
        .chain(objectives.iter().map(|o| format!("objective:{o}")))
        .chain(params.iter().map(|p| p.to_string()))
        .collect();
    for (i, h) in header.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(&mut out, h);
    }
    out.push('\n');
    for r in records {
        let samples: Vec<String> = r.samples.iter().map(|s| format!("{s:?}")).collect();
        let mut fields: Vec<String> = vec![
            r.tunable.to_string(),
            r.input_key.to_string(),
            r.device.to_string(),
            r.technique.to_string(),
            r.seed.to_string(),
            r.timestamp.clone(),
            r.evaluation.to_string(),
            r.index.to_string(),
            r.status.clone(),
            r.detail.clone().unwrap_or_default(),
            opt_f64(r.cost),
            format!("{:?}", r.prepare_s),
            format!("{:?}", r.run_s),
            opt_f64(r.validation_s),
            format!("{:?}", r.elapsed_s),
            samples.join(";"),
        ];
        fields.extend(
            objectives
                .iter()
                .map(|o| opt_f64(r.objectives.get(o).copied())),
        );
        fields.extend(
            params
                .iter()
                .map(|p| r.config.get(p).map_or(String::new(), value_text)),
        );
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            csv_field(&mut out, f);
        }
        out.push('\n');
    }
    out
}

/// Splits CSV text into rows of fields (RFC 4180 quoting).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => field.push(c),
            }
        } else {
            match c {
                '"' => quoted = true,
                ',' => row.push(std::mem::take(&mut field)),
                '\r' => {}
                '\n' => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                c => field.push(c),
            }
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Reads CSV written by [`to_csv`].
///
/// # Errors
/// [`Error::Format`] for a header or field that [`to_csv`] does not write.
pub fn from_csv(text: &str) -> Result<Vec<Record>> {
    let bad = |reason: String| Error::Format {
        path: "<csv>".into(),
        reason,
    };
    let mut rows = csv_rows(text).into_iter();
    let Some(header) = rows.next() else {
        return Ok(Vec::new());
    };
    if header.len() < FIXED.len() || header[..FIXED.len()] != FIXED {
        return Err(bad(format!(
            "the header must start with {}",
            FIXED.join(",")
        )));
    }
    let rest = &header[FIXED.len()..];
    let n_obj = rest
        .iter()
        .take_while(|h| h.starts_with("objective:"))
        .count();
    let mut out = Vec::new();
    for (line, row) in rows.enumerate() {
        if row.len() != header.len() {
            return Err(bad(format!(
                "row {}: {} fields, the header has {}",
                line + 2,
                row.len(),
                header.len()
            )));
        }
        // Times and costs must be finite: a NaN or infinity here is a damaged file, and
        // would poison a resumed run or a comparison of costs.
        let finite = |x: f64, what: &str| -> Result<f64> {
            if x.is_finite() {
                Ok(x)
            } else {
                Err(bad(format!(
                    "row {}, `{what}`: `{x}` is not a finite number",
                    line + 2
                )))
            }
        };
        let num = |i: usize| -> Result<f64> {
            let x = row[i]
                .parse::<f64>()
                .map_err(|e| bad(format!("row {}, `{}`: {e}", line + 2, FIXED[i])))?;
            finite(x, FIXED[i])
        };
        let opt = |i: usize| -> Result<Option<f64>> {
            if row[i].is_empty() {
                Ok(None)
            } else {
                num(i).map(Some)
            }
        };
        let int = |i: usize| -> Result<u128> {
            row[i]
                .parse::<u128>()
                .map_err(|e| bad(format!("row {}, `{}`: {e}", line + 2, FIXED[i])))
        };
        let int64 = |i: usize| -> Result<u64> {
            u64::try_from(int(i)?)
                .map_err(|e| bad(format!("row {}, `{}`: {e}", line + 2, FIXED[i])))
        };
        let samples = if row[15].is_empty() {
            Vec::new()
        } else {
            row[15]
                .split(';')
                .map(|s| {
                    s.parse::<f64>()
                        .map_err(|e| bad(format!("samples: {e}")))
                        .and_then(|x| finite(x, "samples"))
                })
                .collect::<Result<_>>()?
        };
        let objectives = rest[..n_obj]
            .iter()
            .zip(&row[FIXED.len()..FIXED.len() + n_obj])
            .filter(|(_, v)| !v.is_empty())
            .map(|(h, v)| {
                let name = h.trim_start_matches("objective:").to_string();
                v.parse::<f64>()
                    .map_err(|e| bad(format!("{h}: {e}")))
                    .and_then(|x| finite(x, h))
                    .map(|x| (name, x))
            })
            .collect::<Result<_>>()?;
        let config = rest[n_obj..]
            .iter()
            .zip(&row[FIXED.len() + n_obj..])
            .filter(|(_, v)| !v.is_empty())
            .map(|(h, v)| (h.clone(), value_of_text(v)))
            .collect();
        out.push(Record {
            tunable: row[0].as_str().into(),
            input_key: row[1].as_str().into(),
            device: row[2].as_str().into(),
            technique: row[3].as_str().into(),
            seed: int64(4)?,
            timestamp: row[5].clone(),
            evaluation: int64(6)?,
            index: int(7)?,
            status: row[8].clone(),
            detail: (!row[9].is_empty()).then(|| row[9].clone()),
            cost: opt(10)?,
            prepare_s: num(11)?,
            run_s: num(12)?,
            validation_s: opt(13)?,
            elapsed_s: num(14)?,
            samples,
            objectives: Named(objectives),
            config: Named(config),
            stopped_early: false,
            remeasured: None,
            measured_on: None,
        });
    }
    Ok(out)
}

/// A T4 results file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct T4 {
    /// `"1.0.0"`.
    pub schema_version: String,
    /// Free-form; `timeunit` says the unit of the times.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// One per evaluation.
    pub results: Vec<T4Result>,
}

/// One evaluation in a T4 file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct T4Result {
    /// When it was measured.
    #[serde(default)]
    pub timestamp: String,
    /// Parameter name -> value.
    pub configuration: Named<serde_json::Value>,
    /// The objectives' names (e.g. `["time"]`).
    #[serde(default)]
    pub objectives: Vec<String>,
    /// Times spent, in `metadata.timeunit`.
    #[serde(default)]
    pub times: T4Times,
    /// `correct`, `compile`, `runtime`, `constraints` or `correctness`.
    pub invalidity: String,
    /// 1 if the output validated (or was not checked), else 0.
    #[serde(default)]
    pub correctness: f64,
    /// Measured values; `value` is a number, or a failure marker string.
    #[serde(default)]
    pub measurements: Vec<T4Measurement>,
}

/// The `times` of a T4 result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct T4Times {
    /// Compilation time.
    #[serde(
        default,
        alias = "compilation_time",
        skip_serializing_if = "Option::is_none"
    )]
    pub compilation: Option<f64>,
    /// Time spent in the tuning framework itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<f64>,
    /// Time spent in the search technique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_algorithm: Option<f64>,
    /// Validation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<f64>,
    /// Each repetition's run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtimes: Option<Vec<f64>>,
}

/// One T4 measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct T4Measurement {
    /// The objective's name.
    pub name: String,
    /// A number, or a failure marker such as `"CompilationFailedConfig"`.
    pub value: serde_json::Value,
    /// The unit (may be empty).
    #[serde(default)]
    pub unit: String,
}

impl T4Result {
    /// The measurement called `name`, if it is a number.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.measurements
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.value.as_f64())
    }
}

fn invalidity_of(status: &str) -> &'static str {
    match status {
        s if s.starts_with("invalid: ") => "constraints",
        "ok" => "correct",
        "compile" => "compile",
        "invalid" => "constraints",
        "wrong_result" => "correctness",
        _ => "runtime",
    }
}

fn marker_of(status: &str) -> &'static str {
    match status {
        s if s.starts_with("invalid: ") => "InvalidConfig",
        "compile" => "CompilationFailedConfig",
        "invalid" => "InvalidConfig",
        _ => "RuntimeFailedConfig",
    }
}

impl T4 {
    /// T4 from records. Times are converted from seconds to milliseconds.
    pub fn from_records(records: &[Record]) -> T4 {
        let ms = |s: f64| s * 1e3;
        let results = records
            .iter()
            .map(|r| {
                let objectives: Vec<String> = if r.objectives.0.is_empty() {
                    vec!["cost".into()]
                } else {
                    r.objectives.0.iter().map(|(n, _)| n.clone()).collect()
                };
                let measurements = if r.is_ok() {
                    r.objectives
                        .0
                        .iter()
                        .map(|(n, v)| T4Measurement {
                            name: n.clone(),
                            value: serde_json::json!(v),
                            unit: if n.ends_with("_s") {
                                "s".into()
                            } else {
                                String::new()
                            },
                        })
                        .collect()
                } else {
                    objectives
                        .iter()
                        .map(|n| T4Measurement {
                            name: n.clone(),
                            value: serde_json::json!(marker_of(&r.status)),
                            unit: String::new(),
                        })
                        .collect()
                };
                T4Result {
                    timestamp: r.timestamp.clone(),
                    configuration: Named(
                        r.config
                            .0
                            .iter()
                            .map(|(n, v)| (n.clone(), serde_json::json!(v)))
                            .collect(),
                    ),
                    objectives,
                    times: T4Times {
                        compilation: Some(ms(r.prepare_s)),
                        framework: None,
                        search_algorithm: None,
                        validation: Some(ms(r.validation_s.unwrap_or(0.0))),
                        runtimes: (!r.samples.is_empty())
                            .then(|| r.samples.iter().map(|&s| ms(s)).collect()),
                    },
                    invalidity: invalidity_of(&r.status).into(),
                    correctness: if r.status == "wrong_result" { 0.0 } else { 1.0 },
                    measurements,
                }
            })
            .collect();
        let mut metadata = serde_json::Map::new();
        metadata.insert("timeunit".into(), "milliseconds".into());
        metadata.insert("generator".into(), "tune".into());
        if let Some(r) = records.first() {
            metadata.insert("tunable".into(), (*r.tunable).into());
            metadata.insert("device".into(), (*r.device).into());
        }
        T4 {
            schema_version: "1.0.0".into(),
            metadata,
            results,
        }
    }

    /// The factor that converts this file's times to seconds (from `metadata.timeunit`;
    /// milliseconds if absent).
    pub fn seconds_per_unit(&self) -> f64 {
        match self.metadata.get("timeunit").and_then(|v| v.as_str()) {
            Some("seconds" | "s") => 1.0,
            Some("microseconds" | "us") => 1e-6,
            Some("nanoseconds" | "ns") => 1e-9,
            // Including Kernel Tuner's spelling, "miliseconds".
            _ => 1e-3,
        }
    }

    /// Reads a T4 file (`.json`, or gzip-compressed `.json.gz` if `gzip` is available).
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Format`].
    pub fn read(path: &Path) -> Result<T4> {
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let bytes = std::fs::read(path).map_err(io)?;
        let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
            gunzip(path).map_err(io)?
        } else {
            bytes
        };
        serde_json::from_slice(&bytes).map_err(|e| Error::Format {
            path: path.display().to_string(),
            reason: format!("not a T4 results file: {e}"),
        })
    }

    /// Writes this file atomically, pretty-printed.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Format`].
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Format {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        write_atomic(path, text.as_bytes())
    }
}

/// Decompresses a gzip file with the system's `gzip` (keeps the dependency tree lean).
fn gunzip(path: &Path) -> std::io::Result<Vec<u8>> {
    let out = std::process::Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .output()?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(std::io::Error::other(format!(
            "gzip -dc failed: {}; decompress the file first",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Writes records as CSV, atomically.
///
/// # Errors
/// [`Error::Io`].
pub fn write_csv(path: &Path, records: &[Record]) -> Result<()> {
    write_atomic(path, to_csv(records).as_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::results::tests::sample_record;

    fn records() -> Vec<Record> {
        vec![
            Record {
                config: Named(vec![
                    ("BS".into(), Value::Int(32)),
                    ("F".into(), Value::Float(2.0)),
                    ("PAD".into(), Value::Bool(true)),
                    ("KIND".into(), Value::Str("Fast".into())),
                ]),
                samples: vec![0.5, 0.25],
                objectives: Named(vec![("time_s".into(), 0.25), ("energy_j".into(), 3.0)]),
                cost: Some(0.25),
                validation_s: Some(0.125),
                ..sample_record()
            },
            Record {
                evaluation: 2,
                index: 7,
                status: "compile".into(),
                detail: Some("error: \"x\", line 3\nmore".into()),
                cost: None,
                objectives: Named(vec![]),
                config: Named(vec![
                    ("BS".into(), Value::Int(64)),
                    ("F".into(), Value::Float(0.5)),
                    ("PAD".into(), Value::Bool(false)),
                    ("KIND".into(), Value::Str("Slow".into())),
                ]),
                ..sample_record()
            },
        ]
    }

    #[test]
    fn csv_round_trip() {
        let rs = records();
        let text = to_csv(&rs);
        assert!(text.starts_with("tunable,input_key,"));
        assert_eq!(from_csv(&text).unwrap(), rs);
    }

    /// Was: `nan`/`inf` times were read as such, and a seed above `u64::MAX` wrapped.
    #[test]
    fn csv_numbers_must_be_finite_and_fit() {
        let text = to_csv(&records());
        let header = text.lines().next().unwrap();
        let row: Vec<String> = text
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .map(String::from)
            .collect();
        let col = |name: &str| header.split(',').position(|h| h == name).unwrap();
        for (name, value, says) in [
            ("elapsed_s", "inf", "not a finite number"),
            ("cost", "NaN", "not a finite number"),
            ("run_s", "-inf", "not a finite number"),
            ("seed", "18446744073709551616", "seed"),
        ] {
            let mut r = row.clone();
            r[col(name)] = value.into();
            let e = from_csv(&format!("{header}\n{}\n", r.join(",")))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says) && e.contains("row 2"), "{name}: {e}");
        }
    }

    #[test]
    fn t4_round_trip() {
        let rs = records();
        let t4 = T4::from_records(&rs);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out_T4.json");
        t4.write(&p).unwrap();
        let back = T4::read(&p).unwrap();
        assert_eq!(back, t4);
        assert_eq!(back.results[0].invalidity, "correct");
        assert_eq!(back.results[0].value("time_s"), Some(0.25));
        assert_eq!(back.results[0].times.runtimes, Some(vec![500.0, 250.0]));
        assert_eq!(back.results[1].invalidity, "compile");
        assert_eq!(back.results[1].value("time_s"), None);
        assert_eq!(
            back.results[0].configuration.get("KIND"),
            Some(&serde_json::json!("Fast"))
        );
        assert_eq!(back.seconds_per_unit(), 1e-3);
    }

    #[test]
    fn reads_a_real_t4_file() {
        // shared/ lies beside the repository (or beside the folder of worktrees).
        let file = "shared/data/tuning-caches/benchmark_hub/convolution_milo/A100_T4.json.gz";
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let Some(p) = ["..", "../..", "../../.."]
            .iter()
            .map(|up| root.join(up).join(file))
            .find(|p| p.exists())
        else {
            // CI has shared/ beside the clone: there a missing file is a failure, not a skip.
            assert!(
                std::env::var_os("CI").is_none(),
                "{file} not found beside the repository"
            );
            eprintln!("skipped: {file} not found beside the repository");
            return;
        };
        let t4 = T4::read(&p).unwrap();
        assert_eq!(t4.schema_version, "1.0.0");
        assert!(t4.results.len() > 1000);
        let first = &t4.results[0];
        assert_eq!(first.configuration.0[0].0, "block_size_x");
        assert!(first.value("time").is_some());
        assert!(first.times.compilation.is_some());
        let failed = t4.results.iter().filter(|r| r.invalidity != "correct");
        assert!(failed.clone().count() > 0);
        assert!(failed.clone().all(|r| r.value("time").is_none()));
        // Write and read back unchanged.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("copy.json");
        t4.write(&out).unwrap();
        assert_eq!(T4::read(&out).unwrap(), t4);
    }
}
