//! The tuning database: what production code runs.
//!
//! One small, pretty-printed JSON file per tunable and device, under a folder of the user's
//! repository (by default `tuning/`): `tuning/<tunable>/<device>.json`. Each file holds one
//! entry per input key: the best configuration, its cost, and a summary of the run that
//! found it (evaluations, failures by kind, the few best configurations). Keys keep a stable
//! order so that diffs are reviewable.
//!
//! [`Database::choose`] picks the configuration to run: the exact input key, else the
//! nearest recorded input key, else the caller's default, else the first valid
//! configuration, and says which ([`Source`]).
//!
//! ```
//! # fn main() -> tune_runtime::Result<()> {
//! use tune_runtime::results::{Database, Source};
//! use tune_runtime::{Param, SpaceBuilder};
//!
//! let space = SpaceBuilder::new().param(Param::<u32>::values("BS", [32, 64, 128])).build()?;
//! # let dir = tempfile::tempdir().unwrap();
//! let db = Database::open(dir.path());
//! let choice = db.choose("saxpy", "cpu", "n=1024", &space, None)?;
//! assert_eq!(choice.source, Source::FirstValid); // nothing recorded yet
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::{write_atomic, Named};
use crate::measure::Spread;
use crate::param::Value;
use crate::space::{Config, Space};
use crate::{Error, Result};

/// Where the chosen configuration came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Tuned for this device and this input key.
    Exact,
    /// Tuned for this device and the nearest recorded input key.
    NearestInput,
    /// The declared default configuration (nothing recorded for this device).
    Default,
    /// The first valid configuration of the space (nothing recorded, no default).
    FirstValid,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Exact => "tuned for this input",
            Source::NearestInput => "tuned for the nearest recorded input",
            Source::Default => "the declared default",
            Source::FirstValid => "the first valid configuration",
        })
    }
}

/// The configuration to run and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The configuration.
    pub config: Config,
    /// Where it came from.
    pub source: Source,
    /// The recorded input key it was tuned for (for [`Source::Exact`] and
    /// [`Source::NearestInput`]).
    pub input_key: Option<String>,
}

/// A configuration and its cost, in an entry's short list of the best ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// The configuration, name -> value.
    pub config: Named<Value>,
    /// Its scalar cost.
    pub cost: f64,
}

/// What the database keeps for one tunable, device and input key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The input key (e.g. `"n=1048576"`).
    pub input_key: String,
    /// The best configuration, name -> value.
    pub best: Named<Value>,
    /// Its scalar cost.
    pub cost: f64,
    /// Its named objectives.
    #[serde(default)]
    pub objectives: Named<f64>,
    /// How its cost scattered when it was measured again at the end of the run that
    /// recorded it (`cost` is the search's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasured: Option<Spread>,
    /// The technique that found it.
    pub technique: String,
    /// The run's seed.
    pub seed: u64,
    /// Configurations evaluated in the run.
    pub evaluations: u64,
    /// Of which valid.
    pub valid: u64,
    /// Failures by kind.
    #[serde(default)]
    pub failures: BTreeMap<String, u64>,
    /// Size of the search space.
    pub space_len: String,
    /// The few best configurations, best first.
    #[serde(default)]
    pub top: Vec<Ranked>,
    /// When it was recorded (RFC 3339 UTC).
    pub timestamp: String,
}

/// One file of the database: a tunable on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunableFile {
    /// The tunable.
    pub tunable: String,
    /// The device, exactly as the evaluator names it.
    pub device: String,
    /// One entry per input key, sorted by key.
    pub entries: Vec<Entry>,
}

/// Whether a new result replaces the recorded one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Keep whichever has the lower cost (so a short CI run does not overwrite a full one).
    /// A recorded entry whose configuration no longer fits the space is always replaced.
    #[default]
    KeepBetter,
    /// Always replace.
    Replace,
}

/// A tuning database in a folder.
#[derive(Clone, Debug)]
pub struct Database {
    dir: PathBuf,
}

/// A file-system-safe name: lower-case ASCII letters, digits and `-`.
pub fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t = out.trim_matches('-');
    if t.is_empty() {
        "unnamed".into()
    } else {
        t.to_string()
    }
}

/// Parsed files, shared by every lookup in the process; [`Database::record`] refreshes it.
fn cache() -> &'static Mutex<HashMap<PathBuf, Option<Arc<TunableFile>>>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Option<Arc<TunableFile>>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

impl Database {
    /// The database in `dir` (created on the first [`Database::record`]).
    pub fn open(dir: impl Into<PathBuf>) -> Self {
        Database { dir: dir.into() }
    }

    /// The database the generated dispatch reads: `$TUNE_DB` if set, else `tuning/` under
    /// `manifest_dir` (the crate's `CARGO_MANIFEST_DIR`).
    pub fn default_location(manifest_dir: &str) -> Self {
        match std::env::var_os("TUNE_DB") {
            Some(p) if !p.is_empty() => Database::open(p),
            _ => Database::open(Path::new(manifest_dir).join("tuning")),
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a tunable on a device.
    pub fn path(&self, tunable: &str, device: &str) -> PathBuf {
        self.dir
            .join(slug(tunable))
            .join(format!("{}.json", slug(device)))
    }

    /// Reads the file of a tunable on a device (`None` if there is none).
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Format`] for an unreadable file.
    pub fn load(&self, tunable: &str, device: &str) -> Result<Option<TunableFile>> {
        let path = self.path(tunable, device);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(Error::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        let file: TunableFile = serde_json::from_str(&text).map_err(|e| Error::Format {
            path: path.display().to_string(),
            reason: format!("{e}; fix the file or delete it and tune again"),
        })?;
        // Two device names with the same file name: only the exact one counts.
        Ok((file.device == device && file.tunable == tunable).then_some(file))
    }

    fn load_cached(&self, tunable: &str, device: &str) -> Result<Option<Arc<TunableFile>>> {
        let path = self.path(tunable, device);
        if let Ok(c) = cache().lock() {
            if let Some(f) = c.get(&path) {
                return Ok(f.clone());
            }
        }
        let f = self.load(tunable, device)?.map(Arc::new);
        if let Ok(mut c) = cache().lock() {
            c.insert(path, f.clone());
        }
        Ok(f)
    }

    /// Records a tuning result for a tunable, device and input key. Returns whether the
    /// database changed (under [`Policy::KeepBetter`] a worse result is not recorded).
    /// `space` checks whether the recorded entry still fits.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Format`].
    pub fn record(
        &self,
        tunable: &str,
        device: &str,
        entry: Entry,
        space: &Space,
        policy: Policy,
    ) -> Result<bool> {
        let mut file = self.load(tunable, device)?.unwrap_or_else(|| TunableFile {
            tunable: tunable.into(),
            device: device.into(),
            entries: Vec::new(),
        });
        match file
            .entries
            .iter_mut()
            .find(|e| e.input_key == entry.input_key)
        {
            Some(old) => {
                let old_fits = old.best.config(space).is_ok();
                if policy == Policy::KeepBetter && old_fits && old.cost <= entry.cost {
                    return Ok(false);
                }
                *old = entry;
            }
            None => file.entries.push(entry),
        }
        file.entries.sort_by(|a, b| a.input_key.cmp(&b.input_key));
        let path = self.path(tunable, device);
        let mut text = serde_json::to_string_pretty(&file).map_err(|e| Error::Format {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())?;
        if let Ok(mut c) = cache().lock() {
            c.insert(path, Some(Arc::new(file)));
        }
        Ok(true)
    }

    /// The configuration to run for a tunable on a device and input: the recorded best for
    /// this input key; else the one for the nearest recorded input key (same component
    /// names, numeric values closest); else `default` (or the space's declared defaults);
    /// else the first valid configuration. Recorded configurations that no longer fit the
    /// space are passed over.
    ///
    /// # Errors
    /// An unreadable database file, or an empty space.
    pub fn choose(
        &self,
        tunable: &str,
        device: &str,
        input_key: &str,
        space: &Space,
        default: Option<&Config>,
    ) -> Result<Choice> {
        if let Some(file) = self.load_cached(tunable, device)? {
            if let Some(c) = choose_recorded(&file, input_key, space) {
                return Ok(c);
            }
        }
        if let Some(c) = default
            .filter(|c| space.contains(c))
            .cloned()
            .or_else(|| space.default_config())
        {
            return Ok(Choice {
                config: c,
                source: Source::Default,
                input_key: None,
            });
        }
        space
            .get(0)
            .map(|config| Choice {
                config,
                source: Source::FirstValid,
                input_key: None,
            })
            .ok_or_else(|| {
                Error::InvalidSpace(format!(
                    "`{tunable}` has no valid configuration; loosen its constraints"
                ))
            })
    }
}

/// What the generated dispatch calls: the configuration to run for `tunable` on `device`
/// with `input_key`, from the database at `$TUNE_DB` or `<manifest_dir>/tuning`, with the
/// fallbacks of [`Database::choose`].
///
/// # Errors
/// An unreadable database file, or an empty space.
pub fn dispatch(
    tunable: &str,
    device: &str,
    input_key: &str,
    space: &Space,
    default: Option<&Config>,
    manifest_dir: &str,
) -> Result<Choice> {
    Database::default_location(manifest_dir).choose(tunable, device, input_key, space, default)
}

fn choose_recorded(file: &TunableFile, input_key: &str, space: &Space) -> Option<Choice> {
    if let Some(e) = file.entries.iter().find(|e| e.input_key == input_key) {
        if let Ok(config) = e.best.config(space) {
            return Some(Choice {
                config,
                source: Source::Exact,
                input_key: Some(e.input_key.clone()),
            });
        }
    }
    let mut best: Option<(f64, &Entry, Config)> = None;
    for e in &file.entries {
        let Some(d) = key_distance(input_key, &e.input_key) else {
            continue;
        };
        if best.as_ref().is_some_and(|(bd, _, _)| *bd <= d) {
            continue;
        }
        if let Ok(config) = e.best.config(space) {
            best = Some((d, e, config));
        }
    }
    best.map(|(_, e, config)| Choice {
        config,
        source: Source::NearestInput,
        input_key: Some(e.input_key.clone()),
    })
}

/// The components of an input key: `k=v` pairs separated by `,`, `;` or spaces.
fn components(key: &str) -> Vec<(&str, &str)> {
    let mut v: Vec<(&str, &str)> = key
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (t, ""),
        })
        .collect();
    v.sort_unstable();
    v
}

/// How far apart two input keys are: `None` if they name different components or differ in
/// a non-numeric one; else the sum over numeric components of `|ln(a / b)|` (sizes scale
/// multiplicatively), or `|a - b|` where a value is not positive.
pub fn key_distance(a: &str, b: &str) -> Option<f64> {
    let (ca, cb) = (components(a), components(b));
    if ca.len() != cb.len() {
        return None;
    }
    let mut d = 0.0;
    for ((ka, va), (kb, vb)) in ca.iter().zip(&cb) {
        if ka != kb {
            return None;
        }
        match (va.parse::<f64>(), vb.parse::<f64>()) {
            (Ok(x), Ok(y)) if x > 0.0 && y > 0.0 => d += (x / y).ln().abs(),
            (Ok(x), Ok(y)) => d += (x - y).abs(),
            _ if va == vb => {}
            _ => return None,
        }
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::param::Param;
    use crate::space::SpaceBuilder;

    fn space() -> Space {
        SpaceBuilder::new()
            .param(Param::<u32>::values("BS", [16, 32, 64, 128]))
            .param(Param::<bool>::bool("PAD"))
            .build()
            .unwrap()
    }

    fn entry(key: &str, bs: i64, cost: f64) -> Entry {
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
        // Stable, reviewable text: pretty-printed, declaration order, trailing newline.
        let text = std::fs::read_to_string(db.path("k3", "gpu")).unwrap();
        assert!(text.starts_with("{\n  \"tunable\": \"k3\",\n  \"device\": \"gpu\","));
        assert!(text.contains("\"best\": {\n        \"BS\": 128,\n        \"PAD\": true\n"));
        assert!(text.ends_with("}\n"));
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
    }

    #[test]
    fn key_distances() {
        assert_eq!(key_distance("n=4", "n=4"), Some(0.0));
        assert!(key_distance("n=4,m=2", "m=2 n=8").unwrap() > 0.0);
        assert_eq!(key_distance("n=4,t=f32", "n=4,t=f64"), None);
        assert_eq!(key_distance("n=4", "n=4,m=1"), None);
        assert_eq!(key_distance("", ""), Some(0.0));
        assert_eq!(
            slug("NVIDIA H100 80GB HBM3 (CUDA)"),
            "nvidia-h100-80gb-hbm3-cuda"
        );
    }
}
