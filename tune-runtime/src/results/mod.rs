//! Results: the evaluation log, the tuning database, and exports.
//!
//! - [`log`]: every evaluation is appended to a JSON-lines file as it completes, one
//!   [`Record`] per line, flushed per line, so a killed run loses at most the line being
//!   written; a later run with the same log resumes and skips what was measured.
//! - [`database`]: the best configuration per tunable, device and input key, as small
//!   reviewable JSON files in the user's repository, read by the generated dispatch; safe
//!   for concurrent writers (threads and processes); each entry carries a [`fingerprint`]
//!   of what it was tuned for.
//! - [`export`]: CSV and the community T4 JSON format (and a T4 reader).
//!
//! Files other than the append-only log are written atomically ([`write_atomic`]).

use std::fmt;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::evaluate::Failure;
use crate::param::Value;
use crate::space::{Config, Space};
use crate::{Error, Result};

mod choose;
pub mod database;
pub mod export;
pub mod fingerprint;
pub mod log;
mod store;

pub use database::{Choice, Database, Source};

/// A list of named values serialised as a JSON object in its own order (declaration order
/// for configurations), so files stay stable and readable.
#[derive(Clone, Debug, PartialEq)]
pub struct Named<V>(pub Vec<(String, V)>);

impl<V> Default for Named<V> {
    fn default() -> Self {
        Named(Vec::new())
    }
}

impl<V> Named<V> {
    /// The value called `name`.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl<V: Serialize> Serialize for Named<V> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Named<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V2<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
            type Value = Named<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of named values")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Named<V>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((k, v)) = map.next_entry::<String, V>()? {
                    out.push((k, v));
                }
                Ok(Named(out))
            }
        }
        d.deserialize_map(V2(std::marker::PhantomData))
    }
}

impl std::fmt::Display for Named<Value> {
    /// `NAME=value NAME=value ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (n, v)) in self.0.iter().enumerate() {
            write!(f, "{}{n}={v}", if i == 0 { "" } else { " " })?;
        }
        Ok(())
    }
}

impl Named<Value> {
    /// The named values of a configuration.
    pub fn of(space: &Space, config: &Config) -> Self {
        Named(
            space
                .values(config)
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
        )
    }
    /// The configuration these values name in `space`, if they name a valid one.
    ///
    /// # Errors
    /// Unknown or missing parameters, wrong types, or a configuration that breaks a
    /// constraint.
    pub fn config(&self, space: &Space) -> Result<Config> {
        space.config_from_values(self.0.iter().map(|(n, v)| (n.as_str(), v.clone())))
    }
}

/// One evaluation, as logged and exported. The strings shared by every record of a run
/// are reference-counted, so a record costs few allocations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The tunable's name (e.g. `"saxpy"`).
    pub tunable: Arc<str>,
    /// The input key (e.g. `"n=1048576"`), empty if none.
    #[serde(default)]
    pub input_key: Arc<str>,
    /// The device measured on.
    pub device: Arc<str>,
    /// The 1-based number of this evaluation within its run (resumed runs continue).
    pub evaluation: u64,
    /// The configuration's index in the space.
    pub index: u128,
    /// The configuration, name -> value, in declaration order.
    pub config: Named<Value>,
    /// `ok`, or the failure kind (`invalid`, `compile`, `launch`, `wrong_result`,
    /// `timeout`, `invalid_cost`, `other`); a rejection by a device or kernel limit is
    /// `invalid: CAUSE` (`invalid: registers`, see [`Cause`](crate::evaluate::Cause)).
    pub status: String,
    /// The failure's detail (build log, error message; for timeouts, the limit in seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The scalar cost the techniques see, if valid.
    #[serde(default)]
    pub cost: Option<f64>,
    /// Named objectives, if valid.
    #[serde(default)]
    pub objectives: Named<f64>,
    /// Every repetition's time in seconds.
    #[serde(default)]
    pub samples: Vec<f64>,
    /// Seconds spent preparing (compiling).
    pub prepare_s: f64,
    /// Seconds spent measuring.
    pub run_s: f64,
    /// Seconds spent validating, if the evaluator validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_s: Option<f64>,
    /// Run time when it completed (simulated in simulation mode), in seconds.
    pub elapsed_s: f64,
    /// The run's seed.
    pub seed: u64,
    /// The search technique.
    pub technique: Arc<str>,
    /// UTC time it completed, RFC 3339.
    pub timestamp: String,
    /// Whether measuring stopped early because the configuration was far slower than the
    /// best so far: valid, and `cost` is what was measured until then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_early: bool,
    /// Only on the records a run appends after its search, one per re-measured finalist:
    /// every round's scalar cost (empty if it failed; `cost` is the median round's).
    /// Such a record is not an evaluation of the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasured: Option<Vec<f64>>,
    /// Which device measured it, in a run on several devices ([`crate::scale`]): the
    /// device's name in that run, e.g. `cuda:1`, or `rank 2 (node7) cuda:0` under MPI.
    /// Absent in runs on one device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_on: Option<Arc<str>>,
}

impl Record {
    /// The configuration this record names and its index in `space`, when it is one of
    /// `space`'s (a resumed log may come from an older space).
    pub(crate) fn locate(&self, space: &Space) -> Option<(u128, Config)> {
        let config = self.config.config(space).ok()?;
        space.index_of(&config).map(|i| (i, config))
    }

    /// Whether the evaluation yielded a cost.
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }

    /// The typed failure, if it failed.
    pub fn failure(&self) -> Option<Failure> {
        let detail = self.detail.clone().unwrap_or_default();
        if let Some(cause) = crate::evaluate::Cause::of_status(&self.status) {
            return Some(Failure::Rejected { cause, detail });
        }
        Some(match self.status.as_str() {
            "ok" => return None,
            "invalid" => Failure::Invalid(detail),
            "compile" => Failure::Compile(detail),
            "launch" => Failure::Launch(detail),
            "wrong_result" => Failure::WrongResult(detail),
            "timeout" => Failure::Timeout(seconds(detail.parse::<f64>().unwrap_or(0.0))),
            "invalid_cost" => Failure::InvalidCost(detail),
            _ => Failure::Other(detail),
        })
    }

    /// The run time when it completed ([`Record::elapsed_s`]), if it is a time a
    /// `Duration` holds: `None` for a negative, non-finite or absurdly large value (read
    /// from a damaged or hand-edited log).
    pub fn elapsed(&self) -> Option<Duration> {
        (self.elapsed_s >= 0.0)
            .then(|| Duration::try_from_secs_f64(self.elapsed_s).ok())
            .flatten()
    }

    /// The `status` and `detail` fields for a failure.
    pub fn status_of(failure: &Failure) -> (String, String) {
        let detail = match failure {
            Failure::Invalid(s)
            | Failure::Compile(s)
            | Failure::Launch(s)
            | Failure::WrongResult(s)
            | Failure::InvalidCost(s)
            | Failure::Other(s) => s.clone(),
            Failure::Rejected { detail, .. } => detail.clone(),
            Failure::Timeout(d) => d.as_secs_f64().to_string(),
        };
        (failure.status(), detail)
    }
}

/// Seconds read from a file as a `Duration`, never panicking: a negative or NaN value is
/// zero, one too large for a `Duration` (or infinite) is `Duration::MAX`.
fn seconds(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// Now as RFC 3339 UTC with microseconds, e.g. `2026-01-31T12:00:00.000000Z`.
pub fn timestamp() -> String {
    timestamp_of(SystemTime::now())
}

/// A time as RFC 3339 UTC with microseconds.
pub(crate) fn timestamp_of(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, dd) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// Makes timestamps fast: the part up to the second is formatted once per second.
#[derive(Debug, Default)]
pub(crate) struct Stamper {
    secs: Option<u64>,
    prefix: String,
}

impl Stamper {
    /// Now, as [`timestamp`] formats it.
    pub(crate) fn now(&mut self) -> String {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        if self.secs != Some(d.as_secs()) {
            let full = timestamp_of(UNIX_EPOCH + Duration::from_secs(d.as_secs()));
            self.prefix = full[..19].to_string();
            self.secs = Some(d.as_secs());
        }
        let mut s = String::with_capacity(27);
        s.push_str(&self.prefix);
        s.push('.');
        let micros = d.subsec_micros();
        for k in (0..6).rev() {
            s.push(char::from(b'0' + (micros / 10u32.pow(k) % 10) as u8));
        }
        s.push('Z');
        s
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A fresh temporary file name beside `path`: `.<name>.<process id>.<n>.tmp`, unique per
/// process and call (so per thread too).
pub(crate) fn temp_path(path: &Path) -> std::path::PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Writes a file atomically: to a temporary file in the same folder, flushed to disk, then
/// renamed over `path`. Readers see the old or the new content, never a mix. Creates the
/// folder if needed. The temporary file's name, `.<name>.<process>.<n>.tmp`, is unique per
/// process and call, so concurrent writers never share one (the last rename wins: writers
/// that merge take the database's lock first).
///
/// # Errors
/// [`Error::Io`] with the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // Make the rename itself durable where the platform allows opening folders.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(timestamp_of(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        let t = UNIX_EPOCH + Duration::from_micros(1_709_210_096_123_456); // a leap year
        assert_eq!(timestamp_of(t), "2024-02-29T12:34:56.123456Z");
    }

    #[test]
    fn stamper_agrees_with_timestamp() {
        let mut st = Stamper::default();
        let a = timestamp();
        let b = st.now();
        let c = timestamp();
        assert_eq!(b.len(), a.len());
        assert!(a <= b && b <= c, "{a} {b} {c}");
    }

    #[test]
    fn named_values_keep_their_order() {
        let n = Named(vec![("b".to_string(), 1.0), ("a".to_string(), 2.0)]);
        let s = serde_json::to_string(&n).unwrap();
        assert_eq!(s, r#"{"b":1.0,"a":2.0}"#);
        assert_eq!(serde_json::from_str::<Named<f64>>(&s).unwrap(), n);
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/x.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left behind");
        // Unique per call: threads of one process never share a temporary file.
        assert_ne!(temp_path(&p), temp_path(&p));
    }

    #[test]
    fn failures_survive_records() {
        for f in [
            Failure::Compile("log".into()),
            Failure::WrongResult("x".into()),
            Failure::Timeout(Duration::from_millis(1500)),
            Failure::Launch("y".into()),
            Failure::Invalid("z".into()),
            Failure::rejected(crate::evaluate::Cause::Occupancy, "1 work-group per unit"),
            Failure::rejected(crate::evaluate::Cause::Custom("mine".into()), "v"),
            Failure::InvalidCost("`cost` is NaN".into()),
            Failure::Other("w".into()),
        ] {
            let (status, detail) = Record::status_of(&f);
            let r = Record {
                status,
                detail: Some(detail),
                ..sample_record()
            };
            assert_eq!(r.failure(), Some(f));
        }
    }

    /// Was: a timeout of `1e20` seconds (or `inf`) in a log panicked in
    /// `Duration::from_secs_f64`.
    #[test]
    fn absurd_times_read_from_files_never_panic() {
        for (detail, want) in [
            ("1e20", Duration::MAX),
            ("1e300", Duration::MAX),
            ("inf", Duration::MAX),
            ("-inf", Duration::ZERO),
            ("NaN", Duration::ZERO),
            ("-3", Duration::ZERO),
            ("soon", Duration::ZERO),
            ("1.5", Duration::from_millis(1500)),
        ] {
            let r = Record {
                status: "timeout".into(),
                detail: Some(detail.into()),
                ..sample_record()
            };
            assert_eq!(r.failure(), Some(Failure::Timeout(want)), "{detail}");
        }
        for (s, want) in [
            (2.5, Some(Duration::from_millis(2500))),
            (1e20, None),
            (-1.0, None),
            (f64::NAN, None),
            (f64::INFINITY, None),
        ] {
            let r = Record {
                elapsed_s: s,
                ..sample_record()
            };
            assert_eq!(r.elapsed(), want, "{s}");
        }
    }

    pub(crate) fn sample_record() -> Record {
        Record {
            tunable: "t".into(),
            input_key: "n=1".into(),
            device: "cpu".into(),
            evaluation: 1,
            index: 0,
            config: Named(vec![("X".into(), Value::Int(1))]),
            status: "ok".into(),
            detail: None,
            cost: Some(1.0),
            objectives: Named(vec![("cost".into(), 1.0)]),
            samples: vec![],
            prepare_s: 0.0,
            run_s: 0.0,
            validation_s: None,
            elapsed_s: 0.0,
            seed: 0,
            technique: "x".into(),
            timestamp: timestamp(),
            stopped_early: false,
            remeasured: None,
            measured_on: None,
        }
    }

    #[test]
    fn timeouts_that_are_no_durations_do_not_panic() {
        for (detail, expected) in [
            ("1e300", Duration::MAX),
            ("inf", Duration::MAX),
            ("-3", Duration::ZERO),
            ("NaN", Duration::ZERO),
            ("soon", Duration::ZERO),
        ] {
            let r = Record {
                status: "timeout".into(),
                detail: Some(detail.into()),
                ..sample_record()
            };
            assert_eq!(r.failure(), Some(Failure::Timeout(expected)), "{detail}");
        }
    }

    #[test]
    fn flags_are_written_only_when_set() {
        let plain = serde_json::to_string(&sample_record()).unwrap();
        assert!(!plain.contains("stopped_early") && !plain.contains("remeasured"));
        let r = Record {
            stopped_early: true,
            remeasured: Some(vec![1.0, 2.0]),
            ..sample_record()
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""stopped_early":true"#), "{text}");
        assert!(text.contains(r#""remeasured":[1.0,2.0]"#), "{text}");
        assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), r);
    }
}
