//! What loading a device driver changed in this process's environment, so that a worker
//! process starts with the environment the user gave.
//!
//! Drivers rewrite variables of the process that loads them: PoCL sets `HWLOC_PLUGINS_PATH`
//! and narrows `OCL_ICD_FILENAMES` to itself, which drops every other vendor's OpenCL from a
//! child that inherits it (seen on an H100: a worker of a parent that had loaded PoCL and
//! NVIDIA's OpenCL listed PoCL only). The backends load their drivers through [`loading`],
//! which notes each variable a load changed with its value before; the isolated backend
//! starts its workers with those values put back.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Mutex;

/// Each variable a driver load changed, with its value before the first change (`None`:
/// it was not set).
static CHANGED: Mutex<BTreeMap<OsString, Option<OsString>>> = Mutex::new(BTreeMap::new());

/// Runs `load` (a call that may load a device driver) and notes what it changed in the
/// environment.
#[cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(dead_code))]
pub(crate) fn loading<T>(load: impl FnOnce() -> T) -> T {
    // Held across the load so two loads in parallel threads are not confused with each
    // other's changes.
    let mut changed = CHANGED.lock().unwrap_or_else(|p| p.into_inner());
    let before: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    let out = load();
    let after: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (key, value) in &after {
        if before.get(key) != Some(value) {
            changed
                .entry(key.clone())
                .or_insert_with(|| before.get(key).cloned());
        }
    }
    for (key, value) in before {
        if !after.contains_key(&key) {
            changed.entry(key).or_insert(Some(value));
        }
    }
    out
}

/// The variables to set (`Some`) or remove (`None`) in a child's environment to undo what
/// drivers changed in this one.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn undo() -> Vec<(OsString, Option<OsString>)> {
    let changed = CHANGED.lock().unwrap_or_else(|p| p.into_inner());
    changed
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The process environment is shared: each test changes or reads it alone, so one
    /// test's changes are not taken for another's load.
    static ENV: Mutex<()> = Mutex::new(());

    #[test]
    fn a_load_s_changes_are_undone_with_the_values_before_the_first() {
        let _alone = ENV.lock().unwrap_or_else(|p| p.into_inner());
        let set = "TUNE_TEST_DRIVER_ENV_SET";
        let narrowed = "TUNE_TEST_DRIVER_ENV_NARROWED";
        let removed = "TUNE_TEST_DRIVER_ENV_REMOVED";
        std::env::set_var(narrowed, "a:b");
        std::env::set_var(removed, "x");
        loading(|| {
            std::env::set_var(set, "/dev/null");
            std::env::set_var(narrowed, "a");
            std::env::remove_var(removed);
        });
        // A second load changing it again keeps the user's value, not the first load's.
        loading(|| std::env::set_var(narrowed, "c"));
        let undo: BTreeMap<_, _> = undo().into_iter().collect();
        assert_eq!(undo[&OsString::from(set)], None);
        assert_eq!(undo[&OsString::from(narrowed)], Some("a:b".into()));
        assert_eq!(undo[&OsString::from(removed)], Some("x".into()));
    }

    // On PoCL the real driver: what loading OpenCL changed (PoCL sets `HWLOC_PLUGINS_PATH`)
    // is undone for workers. Another test may have loaded it first; then nothing changes
    // here and the check holds trivially.
    #[cfg(feature = "opencl")]
    #[test]
    fn what_loading_opencl_changes_is_undone_for_workers() {
        let _alone = ENV.lock().unwrap_or_else(|p| p.into_inner());
        let before: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        let _ = crate::backend::opencl::OpenCl::devices();
        let after: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        let undo: BTreeMap<_, _> = undo().into_iter().collect();
        for (key, value) in &after {
            if before.get(key) != Some(value) {
                assert_eq!(undo.get(key), Some(&before.get(key).cloned()), "{key:?}");
            }
        }
    }
}
