//! Simulation mode: replay recorded tuning results instead of running kernels.
//!
//! [`Recording::open`] reads a Kernel Tuner cache file (JSON, optionally gzip-compressed):
//! a brute-forced space with the measured time, or the failure, of every configuration; a
//! brute force recorded as KTT's JSON output or as a T4 results file reads the same way.
//! Its [`Recording::space`] holds exactly the recorded configurations, and its
//! [`SimulatedEvaluator`] answers each with the recorded time (milliseconds) or failure,
//! charging the recorded compile, verification and benchmark time to the simulated clock
//! (what Kernel Tuner's simulation mode charges). The real [`Tuner`](crate::tuner::Tuner)
//! drives it like any evaluator, so a budget in evaluations or in (simulated) time, the
//! technique, memoisation and the records are exactly those of a tuning run on a device.
//! This is how search techniques are compared without a GPU.
//!
//! ```
//! use tune_runtime::simulate::Recording;
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/test_cache_file.json");
//! let rec = Recording::open(path)?;
//! assert_eq!(rec.space().len(), 15);
//! let (best, ms) = rec.true_best().unwrap();
//! println!("optimum {} at {ms} ms", rec.space().describe(&rec.space().get(best).unwrap()));
//!
//! // A simulated tuning run: 10 distinct evaluations, the recorded times on the clock.
//! use tune_runtime::{abort::Evaluations, tuner::Tuner};
//! let run = Tuner::new(rec.space().clone(), rec.evaluator())
//!     .abort(Evaluations(10))
//!     .seed(3)
//!     .progress(false)
//!     .run()?;
//! assert_eq!(run.evaluations, 10);
//! assert!(run.simulated);
//! # Ok::<(), tune_runtime::Error>(())
//! ```
//!
//! Reading is strict: a cache entry with a negative or overflowing time is an error naming
//! the entry, and so are two entries that map to one configuration with different results
//! (a `tune_params_keys` that leaves out a parameter the entries vary).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;

use crate::evaluate::{Evaluator, Failure, Measured};
use crate::param::Param;
use crate::space::{Config, Space, SpaceBuilder};
use crate::{Error, Result};

mod formats;
mod kt_cache;

pub use kt_cache::KernelTunerCache;

/// One entry of a Kernel Tuner cache: the recorded time (ms) or failure of a configuration,
/// and the time its evaluation cost. (One evaluation of a tuning log is a
/// [`results::Record`](crate::results::Record).)
#[derive(Clone, Debug, PartialEq)]
pub struct CacheEntry {
    /// The recorded mean kernel time in milliseconds, or why the configuration failed.
    pub time: Result<f64, Failure>,
    /// `compile_time + verification_time + benchmark_time`, as recorded.
    pub charged: Duration,
}

/// How the values of one parameter were mapped onto a typed parameter.
#[derive(Clone, Debug)]
enum Column {
    /// Every value is an integer: an `i64` parameter.
    Int(Vec<i64>),
    /// Every value is a number, some not integers: an `f64` parameter.
    Float(Vec<f64>),
    /// Anything else (strings, booleans, mixed): an `i64` parameter of codes `0..n`, whose
    /// labels are the values as written.
    Coded(Vec<String>),
}

impl Column {
    fn from_values(values: &[Json]) -> Column {
        if let Some(v) = values.iter().map(Json::as_i64).collect::<Option<Vec<_>>>() {
            return Column::Int(dedup(v, |x| *x as u64));
        }
        if let Some(v) = values.iter().map(Json::as_f64).collect::<Option<Vec<_>>>() {
            return Column::Float(dedup(v, |x| x.to_bits()));
        }
        Column::Coded(dedup(values.iter().map(label).collect(), |s| {
            // Strings are deduplicated by content; the key only needs to be stable.
            s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
            })
        }))
    }
    /// The domain position of a recorded value.
    fn position(&self, v: &Json) -> Option<u32> {
        let p = match self {
            Column::Int(d) => {
                let x = v.as_i64().or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                        .map(|f| f as i64)
                })?;
                d.iter().position(|&y| y == x)
            }
            Column::Float(d) => {
                let x = v.as_f64()?;
                d.iter().position(|&y| y == x)
            }
            Column::Coded(d) => {
                let s = label(v);
                d.iter().position(|y| *y == s)
            }
        };
        p.map(|p| p as u32)
    }
    fn len(&self) -> usize {
        match self {
            Column::Int(d) => d.len(),
            Column::Float(d) => d.len(),
            Column::Coded(d) => d.len(),
        }
    }
}

fn label(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn dedup<T, K: std::hash::Hash + Eq>(v: Vec<T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut seen = HashSet::new();
    v.into_iter().filter(|x| seen.insert(key(x))).collect()
}

struct Inner {
    path: String,
    device: String,
    kernel: String,
    space: Space,
    columns: Vec<Column>,
    /// Indexed by the configuration's index in `space`.
    records: Vec<CacheEntry>,
    skipped: usize,
}

/// A recorded, brute-forced search space read from a Kernel Tuner cache file. Cheap to clone.
#[derive(Clone)]
pub struct Recording {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("path", &self.inner.path)
            .field("device", &self.inner.device)
            .field("kernel", &self.inner.kernel)
            .field("configurations", &self.inner.records.len())
            .finish()
    }
}

impl Recording {
    /// Reads a Kernel Tuner cache file (`.json`, or gzip-compressed `.json.gz`), or KTT's
    /// JSON output or a T4 results file of a brute-forced space.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read, [`Error::Format`] if it is not a cache file.
    pub fn open(path: impl AsRef<Path>) -> Result<Recording> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: name.clone(),
            source,
        })?;
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut s = String::new();
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_string(&mut s)
                .map_err(|source| Error::Io {
                    path: name.clone(),
                    source,
                })?;
            s
        } else {
            String::from_utf8(bytes).map_err(|e| Error::Format {
                path: name.clone(),
                reason: format!("not UTF-8 text ({e}); expected Kernel Tuner cache JSON"),
            })?
        };
        Self::from_json(&text, &name)
    }

    /// Reads the JSON text of a Kernel Tuner cache file, or of KTT's JSON output or a T4
    /// results file of a brute-forced space; `origin` names it in errors.
    ///
    /// # Errors
    /// [`Error::Format`] if it is not a cache file.
    pub fn from_json(text: &str, origin: &str) -> Result<Recording> {
        let doc: Json = serde_json::from_str(text).map_err(|e| Error::Format {
            path: origin.into(),
            reason: format!("invalid JSON: {e}; expected a Kernel Tuner cache file"),
        })?;
        match formats::as_cache(&doc, origin)? {
            Some(cache) => Self::from_cache(&cache, origin),
            None => Self::from_cache(&doc, origin),
        }
    }

    /// Reads a parsed Kernel Tuner cache document.
    fn from_cache(doc: &Json, origin: &str) -> Result<Recording> {
        let bad = |reason: String| Error::Format {
            path: origin.into(),
            reason,
        };
        let tune_params = doc
            .get("tune_params")
            .and_then(Json::as_object)
            .ok_or_else(|| {
                bad("no `tune_params` object; is this a Kernel Tuner cache file?".into())
            })?;
        let cache = doc
            .get("cache")
            .and_then(Json::as_object)
            .ok_or_else(|| bad("no `cache` object; is this a Kernel Tuner cache file?".into()))?;
        let names: Vec<String> = match doc.get("tune_params_keys").and_then(Json::as_array) {
            Some(keys) => keys
                .iter()
                .map(|k| k.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| bad("`tune_params_keys` must list strings".into()))?,
            None => tune_params.keys().cloned().collect(),
        };
        let mut columns = Vec::with_capacity(names.len());
        for n in &names {
            let values = tune_params
                .get(n)
                .and_then(Json::as_array)
                .ok_or_else(|| bad(format!("`tune_params` has no list of values for `{n}`")))?;
            columns.push(Column::from_values(values));
        }

        // Every record as domain positions, with its outcome. Two entries that map to one
        // configuration must agree: when they do not, the file's parameter list misses a
        // parameter its entries vary, and silently keeping one of them would change the
        // space and its optimum.
        let mut rows: Vec<(Vec<u32>, CacheEntry)> = Vec::with_capacity(cache.len());
        let mut keys: Vec<&str> = Vec::with_capacity(cache.len());
        let mut first: HashMap<Vec<u32>, usize> = HashMap::with_capacity(cache.len());
        let mut skipped = 0;
        for (key, entry) in cache {
            let dom: Option<Vec<u32>> = names
                .iter()
                .zip(&columns)
                .map(|(n, c)| entry.get(n).and_then(|v| c.position(v)))
                .collect();
            let Some(dom) = dom else {
                skipped += 1;
                continue;
            };
            let rec = record_of(entry).map_err(|r| bad(format!("entry `{key}`: {r}")))?;
            if let Some(&k) = first.get(&dom) {
                if rows[k].1.time != rec.time {
                    return Err(bad(disagreeing(
                        (keys[k], &rows[k].1),
                        (key, &rec),
                        &names,
                        tune_params,
                        entry,
                    )));
                }
                continue; // the same outcome recorded twice
            }
            first.insert(dom.clone(), rows.len());
            keys.push(key);
            rows.push((dom, rec));
        }

        let space = build_space(&names, &columns, &rows).map_err(|e| match e {
            Error::InvalidSpace(r) | Error::InvalidParam { reason: r, .. } => bad(r),
            Error::DuplicateParam { name } => bad(format!("parameter `{name}` is declared twice")),
            other => other,
        })?;
        let len =
            usize::try_from(space.len()).map_err(|_| bad("too many configurations".into()))?;
        let mut records: Vec<Option<CacheEntry>> = vec![None; len];
        for (dom, rec) in rows {
            let raw: Vec<u64> = dom
                .iter()
                .zip(space.params())
                .map(|(&d, p)| p.domain.raw(d))
                .collect();
            if let Some(i) = space.index_of(&Config::from_raw(raw)) {
                records[i as usize] = Some(rec);
            }
        }
        let records = records
            .into_iter()
            .map(|r| r.ok_or_else(|| bad("a configuration of the space has no record".into())))
            .collect::<Result<Vec<_>>>()?;
        let text_of = |k: &str| doc.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
        Ok(Recording {
            inner: Arc::new(Inner {
                path: origin.into(),
                device: text_of("device_name"),
                kernel: text_of("kernel_name"),
                space,
                columns,
                records,
                skipped,
            }),
        })
    }

    /// The recorded configurations as a search space.
    pub fn space(&self) -> &Space {
        &self.inner.space
    }
    /// The device the data was recorded on (`device_name`).
    pub fn device(&self) -> &str {
        &self.inner.device
    }
    /// The kernel's name (`kernel_name`).
    pub fn kernel(&self) -> &str {
        &self.inner.kernel
    }
    /// Cache entries that were left out because a parameter value was missing or not among
    /// the listed `tune_params`.
    pub fn skipped(&self) -> usize {
        self.inner.skipped
    }
    /// The cache entry of the configuration at `index` in [`Recording::space`].
    pub fn record(&self, index: u128) -> Option<&CacheEntry> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.inner.records.get(i))
    }
    /// The cache entry of a configuration.
    pub fn record_of(&self, config: &Config) -> Option<&CacheEntry> {
        self.inner
            .space
            .index_of(config)
            .and_then(|i| self.record(i))
    }
    /// The fastest recorded configuration and its time (ms), if any succeeded.
    pub fn true_best(&self) -> Option<(u128, f64)> {
        self.inner
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.time.as_ref().ok().map(|&t| (i as u128, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
    /// `true best time / best_found`: 1.0 at the optimum, 0.0 if nothing valid was found.
    pub fn fraction_of_optimum(&self, best_found: Option<f64>) -> f64 {
        match (self.true_best(), best_found) {
            (Some((_, t)), Some(b)) if b > 0.0 => (t / b).min(1.0),
            _ => 0.0,
        }
    }
    /// The value of parameter `slot` in `config` as written in the file (codes of
    /// string-valued parameters are turned back into their strings).
    pub fn label(&self, config: &Config, slot: usize) -> Option<String> {
        let p = self.inner.space.params().get(slot)?;
        let raw = *config.raw().get(slot)?;
        match self.inner.columns.get(slot)? {
            Column::Coded(labels) => labels.get(raw as usize).cloned(),
            _ => Some(p.value_of_raw(raw).to_string()),
        }
    }
    /// What the methodology score needs of the whole space (every recorded time and what
    /// its evaluation cost), for [`crate::score`].
    ///
    /// # Errors
    /// A recording in which nothing succeeded.
    pub fn score_stats(&self) -> Result<crate::score::SpaceStats> {
        crate::score::SpaceStats::new(
            self.inner
                .records
                .iter()
                .map(|r| (r.time.as_ref().ok().copied(), r.charged.as_secs_f64())),
        )
    }
    /// An evaluator that answers from the recording.
    pub fn evaluator(&self) -> SimulatedEvaluator {
        SimulatedEvaluator { rec: self.clone() }
    }
}

/// A recorded duration in milliseconds: absent or not a number counts as 0 (Kernel Tuner
/// leaves some out); a negative or non-finite number is an error.
fn millis(entry: &Json, key: &str) -> std::result::Result<f64, String> {
    match entry.get(key) {
        Some(Json::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(format!(
                "`{key}` is {n}; expected a non-negative number of milliseconds"
            )),
        },
        _ => Ok(0.0),
    }
}

fn record_of(entry: &Json) -> std::result::Result<CacheEntry, String> {
    let mut ms = 0.0;
    for key in ["compile_time", "verification_time", "benchmark_time"] {
        ms += millis(entry, key)?;
    }
    let charged = Duration::try_from_secs_f64(ms / 1000.0).map_err(|_| {
        format!(
            "the recorded compile, verification and benchmark times add up to {ms} ms, \
             more than a duration can hold; fix or remove the entry"
        )
    })?;
    let time = match (entry.get("time"), failure_of(entry)) {
        // A failure: in `__error__` (Kernel Tuner 1.5.0) or `time` (older caches), with
        // tune's own status where tune wrote the cache.
        (_, Some(f)) => Err(f),
        (Some(Json::Number(n)), None) => match n.as_f64() {
            Some(t) if t.is_finite() && t >= 0.0 => Ok(t),
            _ => {
                return Err(format!(
                    "`time` is {n}; expected a non-negative number of milliseconds or a failure \
                     such as \"CompilationFailedConfig\""
                ))
            }
        },
        (Some(Json::String(s)), None) => Err(Failure::Other(s.clone())),
        _ => Err(Failure::Other("no time recorded".into())),
    };
    Ok(CacheEntry { time, charged })
}

/// The failure an entry records: Kernel Tuner's marker in `__error__` or `time`, made
/// precise by `tune_status` (tune's status, in caches tune wrote).
fn failure_of(entry: &Json) -> Option<Failure> {
    let marker = [entry.get("__error__"), entry.get("time")]
        .into_iter()
        .flatten()
        .filter_map(Json::as_str)
        .find(|m| m.ends_with("Config"))?
        .to_string();
    let status = entry.get("tune_status").and_then(Json::as_str);
    Some(match (status, marker.as_str()) {
        (Some(s), _) if s.starts_with("invalid: ") => Failure::Rejected {
            cause: crate::evaluate::Cause::from_name(s["invalid: ".len()..].trim()),
            detail: marker,
        },
        (Some("invalid"), _) | (None, "InvalidConfig") => Failure::Invalid(marker),
        (Some("compile"), _) | (None, "CompilationFailedConfig") => Failure::Compile(marker),
        (Some("launch"), _) | (None, "RuntimeFailedConfig") => Failure::Launch(marker),
        (Some("wrong_result"), _) => Failure::WrongResult(marker),
        (Some("timeout"), _) => Failure::Timeout(Duration::ZERO),
        (Some("invalid_cost"), _) => Failure::InvalidCost(marker),
        _ => Failure::Other(marker),
    })
}

/// The message for two cache entries that map to one configuration with different results.
fn disagreeing(
    (key_a, a): (&str, &CacheEntry),
    (key_b, b): (&str, &CacheEntry),
    names: &[String],
    tune_params: &serde_json::Map<String, Json>,
    entry: &Json,
) -> String {
    let outcome = |r: &CacheEntry| match &r.time {
        Ok(t) => format!("{t} ms"),
        Err(f) => f.to_string(),
    };
    // Parameters listed in `tune_params` (or set in the entry) but not in the key list.
    let mut missing: Vec<&str> = tune_params
        .keys()
        .map(String::as_str)
        .filter(|k| !names.iter().any(|n| n == k))
        .collect();
    if missing.is_empty() {
        if let Some(obj) = entry.as_object() {
            missing = obj
                .keys()
                .map(String::as_str)
                .filter(|k| tune_params.contains_key(*k) && !names.iter().any(|n| n == k))
                .collect();
        }
    }
    let hint = if missing.is_empty() {
        "`tune_params_keys` must list every tuned parameter".to_string()
    } else {
        format!(
            "`tune_params_keys` leaves out {}; list every tuned parameter there",
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "entries `{key_a}` ({}) and `{key_b}` ({}) are the same configuration of the listed \
         parameters with different results: {hint}",
        outcome(a),
        outcome(b)
    )
}

/// A space whose valid configurations are exactly the recorded ones: parameter `k` may take
/// a value only if the prefix of values `0..=k` occurs in some record, so that invalid
/// prefixes are cut as early as possible.
fn build_space(
    names: &[String],
    columns: &[Column],
    rows: &[(Vec<u32>, CacheEntry)],
) -> Result<Space> {
    let prefixes: Arc<Vec<HashSet<Vec<u32>>>> = Arc::new(
        (0..names.len())
            .map(|k| rows.iter().map(|(d, _)| d[..=k].to_vec()).collect())
            .collect(),
    );
    // Raw word -> domain position, per parameter.
    let mut positions: Vec<HashMap<u64, u32>> = Vec::with_capacity(columns.len());
    let mut b = SpaceBuilder::new();
    for (k, (name, col)) in names.iter().zip(columns).enumerate() {
        let raws: Vec<u64> = match col {
            Column::Int(v) => v.iter().map(|&x| x as u64).collect(),
            Column::Float(v) => v.iter().map(|x| x.to_bits()).collect(),
            Column::Coded(v) => (0..v.len() as u64).collect(),
        };
        positions.push(
            raws.iter()
                .enumerate()
                .map(|(i, &r)| (r, i as u32))
                .collect(),
        );
        let deps: Vec<usize> = (0..k).collect();
        let pos = Arc::new(positions.clone());
        let pre = Arc::clone(&prefixes);
        let member = move |bound: &crate::param::Bound<'_>| {
            let raw = bound.raw();
            let key: Option<Vec<u32>> = (0..=k)
                .map(|s| raw.get(s).and_then(|r| pos[s].get(r).copied()))
                .collect();
            key.is_some_and(|key| pre[k].contains(&key))
        };
        debug_assert_eq!(raws.len(), col.len());
        b = match col {
            Column::Int(v) => {
                b.param(Param::values(name.clone(), v.iter().copied()).constraint(&deps, member))
            }
            Column::Float(v) => {
                b.param(Param::values(name.clone(), v.iter().copied()).constraint(&deps, member))
            }
            Column::Coded(v) => {
                b.param(Param::values(name.clone(), 0..v.len() as i64).constraint(&deps, member))
            }
        };
    }
    b.build()
}

/// Answers configurations from a [`Recording`]: the recorded time in milliseconds as the
/// cost, compile failures from [`Evaluator::prepare`], run-time failures from
/// [`Evaluator::measure`], and the recorded evaluation time as [`Evaluator::charged_time`].
#[derive(Clone, Debug)]
pub struct SimulatedEvaluator {
    rec: Recording,
}

impl SimulatedEvaluator {
    /// The recording it answers from.
    pub fn recording(&self) -> &Recording {
        &self.rec
    }
    fn lookup(&self, config: &Config) -> Result<&CacheEntry, Failure> {
        self.rec
            .record_of(config)
            .ok_or_else(|| Failure::Invalid("configuration is not in the recording".into()))
    }
}

impl Evaluator for SimulatedEvaluator {
    type Cost = f64;
    type Prepared = ();

    fn prepare(&self, _space: &Space, config: &Config) -> Result<(), Failure> {
        match &self.lookup(config)?.time {
            Err(f @ (Failure::Compile(_) | Failure::Invalid(_))) => Err(f.clone()),
            _ => Ok(()),
        }
    }

    fn measure(&self, _space: &Space, config: &Config, _: ()) -> Result<Measured<f64>, Failure> {
        let r = self.lookup(config)?;
        r.time.clone().map(|t| {
            let mut m = Measured::new(t);
            m.samples = vec![t / 1000.0];
            m
        })
    }

    fn charged_time(&self, _space: &Space, config: &Config) -> Option<Duration> {
        self.rec.record_of(config).map(|r| r.charged)
    }

    fn device(&self) -> String {
        format!("{} (simulated)", self.rec.device())
    }
}

/// Configurations of `target`'s space ranked by how well they did on other recordings of
/// the same kernel (other devices or inputs), best first: by the geometric mean over
/// `sources` of the fraction of each source's optimum (a failure or a configuration a
/// source lacks counts as 1% of it). Parameters are matched by name and value as written.
/// A prior for [`crate::search::WarmStart`].
pub fn prior(sources: &[Recording], target: &Recording) -> Vec<Config> {
    let space = target.space();
    let n = space.params().len();
    let key = |rec: &Recording, c: &Config| -> Option<Vec<(String, String)>> {
        let names = rec.space().params();
        (0..names.len())
            .map(|k| Some((names[k].name().to_string(), rec.label(c, k)?)))
            .collect::<Option<Vec<_>>>()
            .map(|mut v| {
                v.sort();
                v
            })
    };
    // Per source: labels -> fraction of its optimum.
    let tables: Vec<HashMap<Vec<(String, String)>, f64>> = sources
        .iter()
        .filter(|s| s.space().params().len() == n)
        .filter_map(|s| {
            let opt = s.true_best()?.1;
            let mut m = HashMap::new();
            for (i, c) in s.space().iter().enumerate() {
                if let (Some(k), Some(r)) = (key(s, &c), s.record(i as u128)) {
                    let f = r
                        .time
                        .as_ref()
                        .ok()
                        .map_or(0.01, |t| (opt / t).clamp(0.01, 1.0));
                    m.insert(k, f);
                }
            }
            Some(m)
        })
        .collect();
    if tables.is_empty() {
        return Vec::new();
    }
    let mut ranked: Vec<(f64, Config)> = space
        .iter()
        .filter_map(|c| {
            let k = key(target, &c)?;
            let logs: f64 = tables
                .iter()
                .map(|t| t.get(&k).copied().unwrap_or(0.01).ln())
                .sum();
            Some((logs / tables.len() as f64, c))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranked.into_iter().map(|r| r.1).collect()
}

/// What `source` (a recording of the same kernel on another device or input) says about
/// each configuration of `target`'s space, for [`crate::search::Transfer`]:
/// `ln(time / source optimum)` by target index. Parameters are matched by name and value
/// as written; a target parameter the source lacks is ignored, and where several source
/// configurations match one target configuration (the source has parameters the target
/// lacks) the fastest counts. Target configurations the source has no time for are left
/// out. `None` when the two share no parameter or nothing succeeded on the source.
pub fn source_view(source: &Recording, target: &Recording) -> Option<crate::search::SourceView> {
    let opt = source.true_best()?.1;
    if opt <= 0.0 {
        return None;
    }
    let sp = source.space().params();
    let tp = target.space().params();
    // Target slot -> source slot, for the parameters both have.
    let shared: Vec<(usize, usize)> = tp
        .iter()
        .enumerate()
        .filter_map(|(t, p)| sp.iter().position(|q| q.name() == p.name()).map(|s| (t, s)))
        .collect();
    if shared.is_empty() {
        return None;
    }
    let mut best: HashMap<Vec<String>, f64> = HashMap::new();
    for (i, c) in source.space().iter().enumerate() {
        let Some(Ok(t)) = source.record(i as u128).map(|r| r.time.as_ref()) else {
            continue;
        };
        let Some(key) = shared
            .iter()
            .map(|&(_, s)| source.label(&c, s))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        let gap = (t / opt).max(1.0).ln();
        best.entry(key)
            .and_modify(|g| *g = g.min(gap))
            .or_insert(gap);
    }
    let mut view = HashMap::new();
    for (i, c) in target.space().iter().enumerate() {
        let key = shared
            .iter()
            .map(|&(t, _)| target.label(&c, t))
            .collect::<Option<Vec<_>>>();
        if let Some(&g) = key.and_then(|k| best.get(&k)) {
            view.insert(i as u128, g);
        }
    }
    Some(view)
}
