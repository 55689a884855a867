//! Tuning from `cargo test`: a short budget by default, a full run on request.
//!
//! Wrap a tuner in [`tune_test`] inside an ordinary `#[test]`:
//!
//! ```no_run
//! use tune_runtime::evaluate::closure::Closure;
//! use tune_runtime::tuner::{testing::tune_test, Tuner};
//! use tune_runtime::{Config, Failure, Param, SpaceBuilder};
//!
//! #[test]
//! fn tune_saxpy() -> tune_runtime::Result<()> {
//!     let n = 1 << 20;
//!     let space = SpaceBuilder::new()
//!         .param(Param::<usize>::range("WPT", 1..=64).divides(&[], move |_| n))
//!         .build()?;
//!     let eval = Closure::timed(|c: &Config| -> Result<(), Failure> {
//!         // run the kernel with c, compare with the reference,
//!         // return Err(Failure::WrongResult(..)) on a mismatch
//!         Ok(())
//!     });
//!     let result = tune_test(Tuner::new(space, eval).name("saxpy").input_key(format!("n={n}")))?;
//!     assert!(result.valid > 0);
//!     Ok(())
//! }
//! # fn main() {}
//! ```
//!
//! - By default the run stops after [`SHORT_EVALUATIONS`] evaluations or
//!   [`SHORT_DURATION`], whichever comes first (and earlier if the tuner's own abort
//!   condition says so), so CI stays fast. `TUNE_FULL=1 cargo test` runs the tuner's own
//!   abort condition (by default the whole space) and shows the progress bar.
//! - The test fails when no configuration is valid, and, after tuning finished, when any
//!   configuration failed validation ([`Failure::WrongResult`](crate::Failure)), listing them.
//! - A full run records the best configuration in the tuning database (`$TUNE_DB`, else
//!   `tuning/` in the package being tested), keeping a better recorded one, where the
//!   generated dispatch finds it. A short run does not: its best of a few dozen
//!   evaluations is no result for production code to run. The test output says where it
//!   would have been recorded; `TUNE_RECORD=1` records short runs too. A database the test
//!   names itself (`.database(Database::open(..))`, not the default location) is recorded
//!   into either way: naming it is asking for it.
//! - Every evaluation is logged under the target folder (`target/tune/<tunable>.jsonl`).

use std::path::PathBuf;
use std::time::Duration;

use super::{Tuner, TuningResult};
use crate::abort::{Elapsed, Evaluations, Or};
use crate::evaluate::Evaluator;
use crate::results::database::slug;
use crate::results::Database;
use crate::{Error, Result};

/// Evaluations of a short (CI) run.
pub const SHORT_EVALUATIONS: u64 = 30;
/// Time limit of a short (CI) run.
pub const SHORT_DURATION: Duration = Duration::from_secs(10);

fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
        .unwrap_or(false)
}

/// Whether a full run was asked for: `TUNE_FULL` is `1`, `true` or `yes`.
pub fn full_run() -> bool {
    env_flag("TUNE_FULL")
}

/// Whether short runs should be recorded in the default tuning database too: `TUNE_RECORD`
/// is `1`, `true` or `yes`.
pub fn record_requested() -> bool {
    env_flag("TUNE_RECORD")
}

/// The folder for logs: `<target>/tune`, found from the running test binary
/// (`<target>/<profile>/deps/<test>`), else `$CARGO_TARGET_DIR/tune`, else `target/tune`.
fn log_dir() -> PathBuf {
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(t).join("tune");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let deps = exe.parent()?;
            (deps.file_name()? == "deps")
                .then(|| deps.parent()?.parent().map(|t| t.join("tune")))?
        })
        .unwrap_or_else(|| PathBuf::from("target").join("tune"))
}

/// Runs a tuner as a test. See the [module docs](self).
///
/// # Errors
/// [`Error::NoValidConfiguration`], [`Error::WrongResults`] listing the configurations
/// that failed validation, or I/O errors of the log and database.
pub fn tune_test<E: Evaluator>(mut tuner: Tuner<E>) -> Result<TuningResult<E::Cost>> {
    if full_run() {
        // The tuner's own condition (default: the whole space).
    } else {
        let short = Or(Evaluations(SHORT_EVALUATIONS), Elapsed(SHORT_DURATION));
        tuner.abort = Some(match tuner.abort.take() {
            Some(own) => Box::new(Or(own, short)),
            None => Box::new(short),
        });
        tuner.progress = false;
    }
    if tuner.database.is_none() {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
        tuner = tuner.database(Database::default_location(&manifest));
    }
    let record = full_run()
        || record_requested()
        || tuner
            .database
            .as_ref()
            .is_some_and(|db| !db.is_default_location());
    let not_recorded = if record { None } else { tuner.database.take() };
    if tuner.log.is_none() {
        let mut file = slug(&tuner.name);
        if !tuner.input_key.is_empty() {
            file.push('-');
            file.push_str(&slug(&tuner.input_key));
        }
        tuner.log = Some(log_dir().join(format!("{file}.jsonl")));
    }
    let result = tuner.run()?;
    eprintln!("{}", result.summary());
    if let Some(db) = not_recorded {
        eprintln!(
            "  not recorded (a short test run): it would go to {}; `TUNE_FULL=1` tunes in full and records, `TUNE_RECORD=1` records short runs",
            db.path(&result.tunable, &result.device).display()
        );
    }
    let wrong: Vec<String> = result
        .wrong_results()
        .map(|r| format!("  {}: {}", r.config, r.detail.as_deref().unwrap_or("")))
        .collect();
    if !wrong.is_empty() {
        return Err(Error::WrongResults {
            count: wrong.len(),
            list: format!("\n{}\n", wrong.join("\n")),
        });
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::evaluate::closure::Closure;
    use crate::param::Param;
    use crate::space::{Config, SpaceBuilder};
    use crate::Failure;

    fn space() -> crate::Space {
        SpaceBuilder::new()
            .param(Param::<u32>::range("X", 0..100))
            .build()
            .unwrap()
    }

    #[test]
    fn short_budget_records_to_a_named_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("tuning"));
        let eval = Closure::new(|c: &Config| -> std::result::Result<f64, Failure> {
            Ok((c.get::<u32>(0) as f64 - 20.0).abs())
        });
        let r = tune_test(
            Tuner::new(space(), eval)
                .technique(crate::search::Exhaustive::default())
                .name("t")
                .database(db.clone())
                .log(dir.path().join("log.jsonl")),
        )
        .unwrap();
        if !full_run() {
            assert_eq!(r.evaluations, SHORT_EVALUATIONS);
        }
        let c = db.choose("t", "cpu", "", &space(), None).unwrap();
        assert_eq!(c.source, crate::results::Source::Exact);
        assert_eq!(c.config.get::<u32>(0), 20);
    }

    /// Was: a 30-evaluation test run became what production runs.
    #[test]
    fn short_runs_leave_the_default_database_alone() {
        let dir = tempfile::tempdir().unwrap();
        // `tuning/` under a package folder (or `$TUNE_DB`, where set).
        let db = Database::default_location(dir.path().to_str().unwrap());
        let eval = Closure::new(|c: &Config| -> std::result::Result<f64, Failure> {
            Ok(c.get::<u32>(0) as f64)
        });
        let r = tune_test(
            Tuner::new(space(), eval)
                .name("short")
                .database(db.clone())
                .log(dir.path().join("log.jsonl")),
        )
        .unwrap();
        let written = db.path("short", "cpu").exists();
        if full_run() || record_requested() {
            assert!(written && r.database.is_some());
        } else {
            assert!(!written && r.database.is_none(), "a short run was recorded");
        }
    }

    #[test]
    fn wrong_results_fail_the_test_after_tuning() {
        let dir = tempfile::tempdir().unwrap();
        let eval = Closure::new(|c: &Config| -> std::result::Result<f64, Failure> {
            match c.get::<u32>(0) {
                3 | 5 => Err(Failure::WrongResult("mismatch at 0".into())),
                x => Ok(x as f64),
            }
        });
        let e = tune_test(
            Tuner::new(space(), eval)
                .technique(crate::search::Exhaustive::default())
                .name("w")
                .database(Database::open(dir.path()))
                .log(dir.path().join("log.jsonl")),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("2 configuration(s) gave wrong results"),
            "{msg}"
        );
        assert!(
            msg.contains("X=3: mismatch at 0") && msg.contains("X=5"),
            "{msg}"
        );
        // Tuning went on and recorded the valid best.
        let c = Database::open(dir.path())
            .choose("w", "cpu", "", &space(), None)
            .unwrap();
        assert_eq!(c.config.get::<u32>(0), 0);
    }

    #[test]
    fn no_valid_configuration_fails() {
        let dir = tempfile::tempdir().unwrap();
        let eval = Closure::new(|_: &Config| -> std::result::Result<f64, Failure> {
            Err(Failure::Launch("no device".into()))
        });
        let e = tune_test(
            Tuner::new(space(), eval)
                .database(Database::open(dir.path()))
                .log(dir.path().join("log.jsonl")),
        )
        .unwrap_err();
        assert!(matches!(e, Error::NoValidConfiguration { .. }), "{e}");
    }
}
