//! Support code for the expansions of `tune::space!`, `#[tunable]` and `#[derive(tune::Enum)]`.
//!
//! Not public API: reached only through [`crate::__private`], and may change in any release.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::cost::Cost;
use crate::evaluate::{Failure, Measured};
use crate::param::{EnumParam, Param, ParamType};
use crate::results::{Choice, Database};
use crate::search::{Technique, TechniqueKind};
use crate::space::{Config, Space};
use crate::{Error, Result};

/// Parameter types that need no list of values: `bool` and enums with `#[derive(tune::Enum)]`.
#[diagnostic::on_unimplemented(
    message = "the parameter of type `{Self}` needs a list of values",
    label = "add `in` and the values after this type",
    note = "give the values after `in`, e.g. `X: {Self} in [..]`; only `bool` and enums with `#[derive(tune::Enum)]` may omit them"
)]
pub trait Unranged: ParamType {
    /// The parameter taking every value of the type.
    fn unranged<'a>(name: &str) -> Param<'a, Self>;
}

impl Unranged for bool {
    fn unranged<'a>(name: &str) -> Param<'a, Self> {
        Param::bool(name)
    }
}

impl<T: EnumParam> Unranged for T {
    fn unranged<'a>(name: &str) -> Param<'a, Self> {
        Param::variants(name)
    }
}

/// What a `#[tunable]` function's configuration struct knows about itself.
///
/// The struct converts to and from [`Config`] by slot (the `#[tp]` arguments in order).
pub trait Tunable: Copy + Sized + 'static {
    /// `module::path::function` of the tunable function.
    const NAME: &'static str;
    /// The tuning parameters' names, in slot order.
    const PARAMS: &'static [&'static str];
    /// The search technique named in `#[tunable(technique = ..)]`, if any.
    const TECHNIQUE: Option<&'static str>;
    /// A stable hash of the declaration (the function with its `#[tp]` attributes and body,
    /// doc comments left out, and the `cost` and `repetitions` options), computed by the
    /// macro: results recorded for another declaration are not used.
    const FINGERPRINT: &'static str;
    /// The engine's form of this configuration.
    fn to_config(&self) -> Config;
    /// The typed form of an engine configuration.
    ///
    /// # Errors
    /// The configuration has another number of values, or a value that does not have its
    /// parameter's type.
    fn from_config(config: &Config) -> Result<Self>;
}

/// Checks that `config` has one value per name.
///
/// # Errors
/// [`Error::NotInSpace`] when the lengths differ.
pub fn check_len(config: &Config, names: &[&str]) -> Result<()> {
    if config.raw().len() == names.len() {
        return Ok(());
    }
    Err(Error::NotInSpace(format!(
        "expected {} values ({}), got {}",
        names.len(),
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        config.raw().len()
    )))
}

/// The value in `slot`, if its raw word is one that type `T` produces.
///
/// # Errors
/// [`Error::WrongType`] when the word does not round-trip through `T`.
pub fn field<T: ParamType>(config: &Config, slot: usize, name: &str) -> Result<T> {
    let raw = config.raw().get(slot).copied().unwrap_or(0);
    let value = T::from_raw(raw);
    if value.to_raw() == raw {
        return Ok(value);
    }
    Err(Error::WrongType {
        name: name.into(),
        value: format!("raw word {raw:#x}"),
        expected: std::any::type_name::<T>().into(),
    })
}

/// What a declaration with compile errors evaluates to (the errors are reported by rustc).
///
/// # Errors
/// Always [`Error::InvalidSpace`].
pub fn invalid_declaration() -> Result<Space> {
    Err(Error::InvalidSpace(
        "the declaration has compile errors; fix them and rebuild".into(),
    ))
}

/// The index of `name` in `names`.
pub fn position(names: &[&str], name: &str) -> Option<usize> {
    names.iter().position(|n| *n == name)
}

/// What the return value of a `#[tunable(cost = value)]` function may be: a cost (`f64`,
/// `f32`, `Duration`, a tuple), a [`Measured`], or a `Result` of these whose error is a
/// [`Failure`], a [`crate::Error`] or a message.
#[diagnostic::on_unimplemented(
    message = "the return type `{Self}` of a `#[tunable(cost = value)]` function is not a cost",
    note = "return a cost (`f64`, `f32`, `Duration`, a tuple of costs, `tune::Measured<C>`) or a `Result` of one with a `tune::Failure` error; or measure the call's time with `#[tunable(cost = time)]`"
)]
pub trait IntoCost {
    /// The cost type.
    type Cost: Cost;
    /// The failure this value reports, if any (checked before validation).
    fn failure(&self) -> Option<Failure>;
    /// The measurement.
    ///
    /// # Errors
    /// The failure the value reports.
    fn into_measured(self) -> std::result::Result<Measured<Self::Cost>, Failure>;
}

impl<C: Cost> IntoCost for C {
    type Cost = C;
    fn failure(&self) -> Option<Failure> {
        None
    }
    fn into_measured(self) -> std::result::Result<Measured<C>, Failure> {
        Ok(Measured::new(self))
    }
}

impl<C: Cost> IntoCost for Measured<C> {
    type Cost = C;
    fn failure(&self) -> Option<Failure> {
        None
    }
    fn into_measured(self) -> std::result::Result<Measured<C>, Failure> {
        Ok(self)
    }
}

impl<C: Cost, E: AsFailure> IntoCost for std::result::Result<C, E> {
    type Cost = C;
    fn failure(&self) -> Option<Failure> {
        self.as_ref().err().map(AsFailure::as_failure)
    }
    fn into_measured(self) -> std::result::Result<Measured<C>, Failure> {
        self.map(Measured::new).map_err(|e| e.as_failure())
    }
}

impl<C: Cost, E: AsFailure> IntoCost for std::result::Result<Measured<C>, E> {
    type Cost = C;
    fn failure(&self) -> Option<Failure> {
        self.as_ref().err().map(AsFailure::as_failure)
    }
    fn into_measured(self) -> std::result::Result<Measured<C>, Failure> {
        self.map_err(|e| e.as_failure())
    }
}

/// Errors that a tunable function may return, as recorded failures.
#[diagnostic::on_unimplemented(
    message = "the error type `{Self}` cannot be recorded as a tuning failure",
    note = "return `tune::Failure` (e.g. `Failure::WrongResult(..)`), `tune::Error` or a `String` as the error"
)]
pub trait AsFailure {
    /// The failure to record.
    fn as_failure(&self) -> Failure;
}

impl AsFailure for Failure {
    fn as_failure(&self) -> Failure {
        self.clone()
    }
}

impl AsFailure for Error {
    fn as_failure(&self) -> Failure {
        match self {
            // A queue's compile or launch failure keeps its kind.
            Error::Failed(f) => f.clone(),
            e => Failure::Other(e.to_string()),
        }
    }
}

impl AsFailure for String {
    fn as_failure(&self) -> Failure {
        Failure::Other(self.clone())
    }
}

impl AsFailure for &str {
    fn as_failure(&self) -> Failure {
        Failure::Other((*self).to_string())
    }
}

impl AsFailure for Box<dyn std::error::Error + Send + Sync> {
    fn as_failure(&self) -> Failure {
        Failure::Other(self.to_string())
    }
}

/// The failure of a `Result` returned by a timed `#[tunable]` function.
pub fn result_failure<T, E: AsFailure>(r: &std::result::Result<T, E>) -> Option<Failure> {
    r.as_ref().err().map(AsFailure::as_failure)
}

/// Locks the arguments of a tuning closure; a panic in an earlier call (recorded as a
/// failure) does not stop the search.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The measurement of timed calls: the median of `samples`, each recorded.
pub fn timed(samples: &[Duration], validation: Option<Duration>) -> Measured<Duration> {
    let mut sorted = samples.to_vec();
    sorted.sort();
    Measured {
        cost: sorted.get(sorted.len() / 2).copied().unwrap_or_default(),
        samples: samples.iter().map(Duration::as_secs_f64).collect(),
        validation,
        stopped_early: false,
    }
}

/// `"a=1,n=256"` from named values, in the order given.
pub fn input_key(parts: &[(&str, &dyn fmt::Display)]) -> String {
    parts
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A value as a string (device names, input keys).
pub fn to_string(v: &dyn fmt::Display) -> String {
    v.to_string()
}

/// A built-in technique by a name that the macro validated.
pub fn technique(name: &str) -> Box<dyn Technique> {
    name.parse::<TechniqueKind>().unwrap_or_default().build()
}

/// The tuning database the generated code uses by default: `$TUNE_DB`, else `tuning/` under
/// the user crate's manifest folder.
pub fn default_database(manifest_dir: &str) -> Database {
    Database::default_location(manifest_dir)
}

/// What the generated `best` calls: the configuration to run for a tunable whose declaration
/// has the fingerprint `code` (see [`Database::choose_with_code`]), told on standard error
/// when `TUNE_VERBOSE` is set (not `0`). A recorded result passed over as stale is told
/// on standard error once per process, tunable, device and input key, whatever
/// `TUNE_VERBOSE` says.
///
/// # Errors
/// An unreadable database file, or an empty space.
pub fn choose(
    db: &Database,
    tunable: &str,
    code: &str,
    device: &str,
    input_key: &str,
    space: &Space,
) -> Result<Choice> {
    let choice = db.choose_with_code(tunable, code, device, input_key, space, None)?;
    if let Some(stale) = &choice.stale {
        if first_warning(tunable, device, input_key) {
            eprintln!(
                "tune: warning: {tunable} on {device} [{input_key}]: {stale} (now running {}, {})",
                space.describe(&choice.config),
                choice.source
            );
        }
    }
    if std::env::var_os("TUNE_VERBOSE").is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!(
            "tune: {tunable} on {device} [{input_key}]: {} ({}{})",
            space.describe(&choice.config),
            choice.source,
            choice
                .input_key
                .as_deref()
                .filter(|k| *k != input_key)
                .map(|k| format!(": {k}"))
                .unwrap_or_default()
        );
    }
    Ok(choice)
}

/// Whether this is the first stale warning for a tunable, device and input key in this
/// process (a dispatch in a loop warns once).
fn first_warning(tunable: &str, device: &str, input_key: &str) -> bool {
    static WARNED: Mutex<BTreeSet<(String, String, String)>> = Mutex::new(BTreeSet::new());
    lock(&WARNED).insert((tunable.into(), device.into(), input_key.into()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn field_round_trips_and_rejects_foreign_words() {
        let c = Config::from_raw(vec![300, 1, 2]);
        assert_eq!(field::<u16>(&c, 0, "a").unwrap(), 300);
        assert!(field::<u8>(&c, 0, "a").is_err());
        assert!(field::<bool>(&c, 1, "b").unwrap());
        assert!(field::<bool>(&c, 2, "b").is_err());
        assert!(check_len(&c, &["a", "b"]).is_err());
        assert!(check_len(&c, &["a", "b", "c"]).is_ok());
    }

    #[test]
    fn helpers_of_the_entry_points() {
        let m = timed(
            &[
                Duration::from_millis(3),
                Duration::from_millis(1),
                Duration::from_millis(2),
            ],
            None,
        );
        assert_eq!(m.cost, Duration::from_millis(2));
        assert_eq!(m.samples.len(), 3);
        assert_eq!(input_key(&[("n", &4), ("x", &"a")]), "n=4,x=a");
        assert_eq!(input_key(&[]), "");
        assert_eq!(IntoCost::into_measured(2.0f64).unwrap().cost, 2.0);
        let r: std::result::Result<f64, Failure> = Err(Failure::WrongResult("w".into()));
        assert_eq!(
            IntoCost::failure(&r),
            Some(Failure::WrongResult("w".into()))
        );
        let r: std::result::Result<(), Error> = Err(Error::InvalidSpace("x".into()));
        assert!(matches!(result_failure(&r), Some(Failure::Other(_))));
        assert_eq!(technique("annealing").name(), "annealing");
    }

    #[test]
    fn stale_results_are_told_once_per_key() {
        assert!(first_warning("warned", "gpu", "n=1"));
        assert!(!first_warning("warned", "gpu", "n=1"));
        assert!(first_warning("warned", "gpu", "n=2"));
    }
}
