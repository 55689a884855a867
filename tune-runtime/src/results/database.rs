//! The tuning database: what production code runs.
//!
//! One small, pretty-printed JSON file per tunable and device, under a folder of the user's
//! repository (by default `tuning/`): `tuning/<tunable>/<device>.json`, with file names
//! that never collide ([`file_name`]) and the exact names stored inside. Each file holds one
//! entry per input key: the best configuration, its cost, a [`Fingerprint`] of what it was
//! tuned for, and a summary of the run that found it. Keys keep a stable order so that
//! diffs are reviewable.
//!
//! Writers are safe together, threads and processes alike: each write takes an exclusive OS
//! lock on the file's lock file (`.<device>.json.lock` beside it; `flock` on Unix), reads
//! the file afresh, merges, and replaces it atomically (a unique temporary file renamed over
//! it). Readers take no lock: the atomic rename shows them a whole old or a whole new file.
//! Temporary files left by a killed writer are removed by the next write. The folder gets a
//! `.gitignore` for lock and temporary files.
//!
//! [`Database::choose`] picks the configuration to run: the exact input key, else the
//! nearest recorded input key, else the caller's default, else the first valid
//! configuration, and says which ([`Source`]). Entries tuned for other code, another space
//! or another version of tune are passed over, and [`Choice::stale`] says why.
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
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};

use super::choose::choose_recorded;
pub use super::choose::key_distance;
use super::fingerprint::Expected;
pub use super::fingerprint::{Fingerprint, Stale, StaleReason};
pub use super::store::file_name;
pub(crate) use super::store::slug;
use super::store::{ensure_gitignore, remove_stray_temps, Lock};
use super::{temp_path, write_atomic, Named};
use crate::measure::Spread;
use crate::param::Value;
use crate::space::{Config, Space};
use crate::{Error, Result};

/// The version of the file format written: 2 added fingerprints and `schema` (files without
/// `schema` are version 1).
pub const SCHEMA: u32 = 2;

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
    /// A recorded result that was passed over because it was tuned for other code, another
    /// space or another version of tune: the one for this input key, or one nearer than the
    /// one used. Tuning again replaces it.
    pub stale: Option<Stale>,
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
    /// What it was tuned for. [`Database::record`] fills in the space and tune version;
    /// the caller gives the code fingerprint, if any. `None` only in files of older tunes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
}

fn legacy_schema() -> u32 {
    1
}

/// One file of the database: a tunable on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunableFile {
    /// The tunable.
    pub tunable: String,
    /// The device, exactly as the evaluator names it.
    pub device: String,
    /// The file format's version ([`SCHEMA`]).
    #[serde(default = "legacy_schema")]
    pub schema: u32,
    /// One entry per input key, sorted by key.
    pub entries: Vec<Entry>,
}

/// Whether a new result replaces the recorded one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// Keep whichever has the lower cost (so a short CI run does not overwrite a full one).
    /// A recorded entry that is stale (tuned for other code, another space or another tune)
    /// or whose configuration no longer fits the space is always replaced.
    #[default]
    KeepBetter,
    /// Always replace.
    Replace,
}

/// A tuning database in a folder.
#[derive(Clone, Debug)]
pub struct Database {
    dir: PathBuf,
    /// Whether this is the default location rather than one the user named (test runs
    /// record into the default location only when asked).
    default_location: bool,
}

/// Parsed files by path, shared by every lookup in the process: an immutable snapshot that
/// lookups read without locking; loads and records replace it.
type Snapshot = HashMap<PathBuf, Option<Arc<TunableFile>>>;

fn cache() -> &'static ArcSwap<Snapshot> {
    static CACHE: OnceLock<ArcSwap<Snapshot>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Puts a file into the snapshot: replacing what is there (a record) or only where nothing
/// is (a load, which may have read the file before a concurrent record of this process).
fn cache_put(path: &Path, file: Option<Arc<TunableFile>>, replace: bool) {
    cache().rcu(|m| {
        let mut m = Snapshot::clone(m);
        if replace || !m.contains_key(path) {
            m.insert(path.to_path_buf(), file.clone());
        }
        m
    });
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// An I/O error of a write, with what to do about it.
fn unwritable(path: &Path, e: std::io::Error) -> Error {
    io_error(
        path,
        std::io::Error::new(
            e.kind(),
            format!("{e}; the tuning database must be writable to record into it: fix the permissions, or record elsewhere (`TUNE_DB`, or the tuner's `.database(..)`)"),
        ),
    )
}

fn format_error(path: &Path, reason: String) -> Error {
    Error::Format {
        path: path.display().to_string(),
        reason,
    }
}

/// Reads and checks the database file at `path`, which must hold `tunable` on `device`.
fn read_file(path: &Path, tunable: &str, device: &str) -> Result<Option<TunableFile>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    let file: TunableFile = serde_json::from_str(&text).map_err(|e| {
        format_error(
            path,
            format!("{e}; this tuning database file is damaged: repair it (e.g. finish resolving a merge conflict) or delete it and tune again"),
        )
    })?;
    if file.schema > SCHEMA {
        return Err(Error::NewerFormat {
            path: path.display().to_string(),
            found: file.schema,
            supported: SCHEMA,
        });
    }
    if file.tunable != tunable || file.device != device {
        return Err(format_error(
            path,
            format!(
                "holds `{}` on `{}`, not `{tunable}` on `{device}`: the file was renamed or copied by hand; move it back or delete it",
                file.tunable, file.device
            ),
        ));
    }
    Ok(Some(file))
}

/// Fails when the file exists and is marked read-only: someone froze it on purpose, and the
/// atomic replace would otherwise overwrite it anyway.
fn refuse_read_only(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.permissions().readonly() => Err(io_error(
            path,
            std::io::Error::new(
                ErrorKind::PermissionDenied,
                "the tuning database file is read-only: make it writable to record into it, or record elsewhere (`TUNE_DB`, or the tuner's `.database(..)`)",
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks what is about to be recorded: a non-finite cost would be written as `null` and
/// make the file unreadable.
fn check_entry(path: &Path, entry: &mut Entry) -> Result<()> {
    let finite = entry.cost.is_finite() && entry.objectives.0.iter().all(|(_, v)| v.is_finite());
    if !finite {
        return Err(format_error(
            path,
            format!(
                "refusing to record a non-finite cost ({}) for `{}`; the evaluator must report a finite cost",
                entry.cost, entry.input_key
            ),
        ));
    }
    // The short list is informative only: drop what cannot be written.
    entry.top.retain(|r| r.cost.is_finite());
    Ok(())
}

impl Database {
    /// The database in `dir` (created on the first [`Database::record`]).
    pub fn open(dir: impl Into<PathBuf>) -> Self {
        Database {
            dir: dir.into(),
            default_location: false,
        }
    }

    /// The database the generated dispatch reads: `$TUNE_DB` if set, else `tuning/` under
    /// `manifest_dir` (the crate's `CARGO_MANIFEST_DIR`).
    pub fn default_location(manifest_dir: &str) -> Self {
        let dir = match std::env::var_os("TUNE_DB") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => Path::new(manifest_dir).join("tuning"),
        };
        Database {
            dir,
            default_location: true,
        }
    }

    /// Whether this is [`Database::default_location`] rather than a folder given to
    /// [`Database::open`]. Test runs ([`crate::testing`]) record into the default location
    /// only when asked.
    pub fn is_default_location(&self) -> bool {
        self.default_location
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a tunable on a device: `<dir>/<tunable>/<device>.json`, each name made
    /// safe and collision-free by [`file_name`].
    pub fn path(&self, tunable: &str, device: &str) -> PathBuf {
        self.dir
            .join(file_name(tunable))
            .join(format!("{}.json", file_name(device)))
    }

    /// Reads the file of a tunable on a device (`None` if there is none).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Format`] for a damaged file or one that holds another tunable
    /// or device; [`Error::NewerFormat`] for one written by a newer tune.
    pub fn load(&self, tunable: &str, device: &str) -> Result<Option<TunableFile>> {
        read_file(&self.path(tunable, device), tunable, device)
    }

    fn load_cached(&self, tunable: &str, device: &str) -> Result<Option<Arc<TunableFile>>> {
        let path = self.path(tunable, device);
        if let Some(f) = cache().load().get(&path) {
            return Ok(f.clone());
        }
        let f = read_file(&path, tunable, device)?.map(Arc::new);
        cache_put(&path, f.clone(), false);
        Ok(f)
    }

    /// Checks, before a tuning run, that its result can be recorded: the folder and the
    /// lock can be created, the file (if any) is readable, of a known format and names this
    /// tunable and device, is not read-only, and a file can be written beside it. So a
    /// damaged or unwritable database stops the run before it starts, not after.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Format`] or [`Error::NewerFormat`] naming the file and what to
    /// do.
    pub fn check_writable(&self, tunable: &str, device: &str) -> Result<()> {
        let path = self.path(tunable, device);
        let lock = Lock::exclusive(&path).map_err(|e| match e {
            Error::Io { path, source } => unwritable(Path::new(&path), source),
            e => e,
        })?;
        // Informative only: a failure here shows up in the probe below.
        let _ = ensure_gitignore(&self.dir);
        remove_stray_temps(&path, &lock);
        read_file(&path, tunable, device)?;
        refuse_read_only(&path)?;
        let probe = temp_path(&path);
        std::fs::File::create(&probe).map_err(|e| unwritable(&probe, e))?;
        std::fs::remove_file(&probe).map_err(|e| unwritable(&probe, e))?;
        Ok(())
    }

    /// Reads, changes and writes the file of a tunable on a device under its lock. `change`
    /// returns whether it changed anything; returns the same.
    fn update(
        &self,
        tunable: &str,
        device: &str,
        change: impl FnOnce(&mut TunableFile) -> bool,
    ) -> Result<bool> {
        let path = self.path(tunable, device);
        let lock = Lock::exclusive(&path)?;
        let _ = ensure_gitignore(&self.dir);
        remove_stray_temps(&path, &lock);
        let mut file = read_file(&path, tunable, device)?.unwrap_or_else(|| TunableFile {
            tunable: tunable.into(),
            device: device.into(),
            schema: SCHEMA,
            entries: Vec::new(),
        });
        refuse_read_only(&path)?;
        if !change(&mut file) {
            cache_put(&path, Some(Arc::new(file)), true);
            return Ok(false);
        }
        file.schema = SCHEMA;
        file.entries.sort_by(|a, b| a.input_key.cmp(&b.input_key));
        let mut text =
            serde_json::to_string_pretty(&file).map_err(|e| format_error(&path, e.to_string()))?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())?;
        cache_put(&path, Some(Arc::new(file)), true);
        drop(lock);
        Ok(true)
    }

    /// Stamps the entry with the space and tune version (keeping the caller's code
    /// fingerprint) and checks it can be written.
    fn prepare(&self, tunable: &str, device: &str, entry: &mut Entry, space: &Space) -> Result<()> {
        let code = entry.fingerprint.take().and_then(|f| f.code);
        entry.fingerprint = Some(Fingerprint::new(space, code.as_deref()));
        check_entry(&self.path(tunable, device), entry)
    }

    /// Records a tuning result for a tunable, device and input key. Returns whether the
    /// database changed (under [`Policy::KeepBetter`] a worse result is not recorded).
    /// `space` is the space the result was tuned over: it stamps the entry's fingerprint
    /// and checks whether the recorded entry still fits.
    ///
    /// Safe to call from several threads and processes at once: no result is lost.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Format`] (a damaged or read-only file, a non-finite cost), or
    /// [`Error::NewerFormat`].
    pub fn record(
        &self,
        tunable: &str,
        device: &str,
        entry: Entry,
        space: &Space,
        policy: Policy,
    ) -> Result<bool> {
        self.replace_entry(tunable, device, entry, space, |old, new, current| {
            policy == Policy::KeepBetter && current && old.cost <= new.cost
        })
    }

    /// The recorded entry for this input key, read afresh from disk, if it is current
    /// (tuned for this code, space and tune) and its configuration fits `space`: what a
    /// tuner re-measures beside its own finalists before [`Database::record_remeasured`].
    /// `code` is the code fingerprint the run was given, if any.
    ///
    /// # Errors
    /// An unreadable database file.
    pub fn recorded(
        &self,
        tunable: &str,
        device: &str,
        input_key: &str,
        space: &Space,
        code: Option<&str>,
    ) -> Result<Option<Entry>> {
        let Some(file) = self.load(tunable, device)? else {
            return Ok(None);
        };
        Ok(file
            .entries
            .into_iter()
            .find(|e| e.input_key == input_key)
            .filter(|e| current(e, space, code)))
    }

    /// Records the winner of a re-measurement: the caller measured the recorded best
    /// (`against`, from [`Database::recorded`]; `None` if there was none) beside its own
    /// finalists in one session, and `entry` is the one that won, with its re-measured cost
    /// (when the recorded configuration won, `entry` holds that configuration). It replaces
    /// the recorded entry whatever the costs, as long as the recorded entry is still the
    /// one re-measured; if another run recorded a different configuration in the meantime,
    /// the lower cost is kept, as under [`Policy::KeepBetter`]. Returns whether the
    /// database changed.
    ///
    /// # Errors
    /// As [`Database::record`].
    pub fn record_remeasured(
        &self,
        tunable: &str,
        device: &str,
        entry: Entry,
        space: &Space,
        against: Option<&Entry>,
    ) -> Result<bool> {
        self.replace_entry(tunable, device, entry, space, |old, new, current| {
            let remeasured = against.is_some_and(|a| a.best == old.best);
            !remeasured && current && old.cost <= new.cost
        })
    }

    /// Stamps `entry` and writes it over the entry of its input key, unless
    /// `keep(old, new, old is current)` keeps the recorded one. Returns whether the file
    /// changed.
    fn replace_entry(
        &self,
        tunable: &str,
        device: &str,
        mut entry: Entry,
        space: &Space,
        keep: impl FnOnce(&Entry, &Entry, bool) -> bool,
    ) -> Result<bool> {
        self.prepare(tunable, device, &mut entry, space)?;
        let code = entry.fingerprint.as_ref().and_then(|f| f.code.clone());
        self.update(tunable, device, |file| {
            match file
                .entries
                .iter_mut()
                .find(|e| e.input_key == entry.input_key)
            {
                Some(old) => {
                    if keep(old, &entry, current(old, space, code.as_deref())) {
                        return false;
                    }
                    *old = entry;
                }
                None => file.entries.push(entry),
            }
            true
        })
    }

    /// The configuration to run for a tunable on a device and input: the recorded best for
    /// this input key; else the one for the nearest recorded input key (same component
    /// names, numeric values closest); else `default` (or the space's declared defaults);
    /// else the first valid configuration. Recorded configurations that no longer fit the
    /// space, and entries tuned for another space or another version of tune, are passed
    /// over ([`Choice::stale`] says so).
    ///
    /// Each file is read once per process (later calls use that snapshot, without locking;
    /// records made by this process update it).
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
        self.choose_impl(tunable, None, device, input_key, space, default)
    }

    /// [`Database::choose`] for results tuned with the code fingerprint `code` (the one
    /// given to [`Tuner::fingerprint`](crate::tuner::Tuner::fingerprint)): entries recorded
    /// for other code are passed over as well.
    ///
    /// # Errors
    /// See [`Database::choose`].
    pub fn choose_with_code(
        &self,
        tunable: &str,
        code: &str,
        device: &str,
        input_key: &str,
        space: &Space,
        default: Option<&Config>,
    ) -> Result<Choice> {
        self.choose_impl(tunable, Some(code), device, input_key, space, default)
    }

    fn choose_impl(
        &self,
        tunable: &str,
        code: Option<&str>,
        device: &str,
        input_key: &str,
        space: &Space,
        default: Option<&Config>,
    ) -> Result<Choice> {
        let mut stale = None;
        if let Some(file) = self.load_cached(tunable, device)? {
            let (chosen, s) = choose_recorded(&file, input_key, &Expected::new(space, code));
            if let Some(c) = chosen {
                return Ok(Choice { stale: s, ..c });
            }
            stale = s;
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
                stale,
            });
        }
        space
            .get(0)
            .map(|config| Choice {
                config,
                source: Source::FirstValid,
                input_key: None,
                stale,
            })
            .ok_or_else(|| {
                Error::InvalidSpace(format!(
                    "`{tunable}` has no valid configuration; loosen its constraints"
                ))
            })
    }
}

/// Whether a recorded entry can stand as the best for its input: tuned for this code, space
/// and tune, and its configuration fits the space.
fn current(e: &Entry, space: &Space, code: Option<&str>) -> bool {
    Expected::new(space, code)
        .exact(e.fingerprint.as_ref())
        .is_ok()
        && e.best.config(space).is_ok()
}

/// What the generated dispatch calls: the configuration to run for `tunable` on `device`
/// with `input_key`, from the database at `$TUNE_DB` or `<manifest_dir>/tuning`, with the
/// fallbacks of [`Database::choose`].
///
/// # Errors
/// An unreadable database file, or an empty space.
#[doc(hidden)] // The macros reach it as `__private::best_config`; users call `Database::choose`.
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

#[cfg(test)]
mod concurrency;
#[cfg(test)]
mod tests;
