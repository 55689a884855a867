//! The performance matrix and the deployed selector of a tunable on a device, kept beside
//! its entries: `<tunable>/select/<device>.matrix.json` and `.../<device>.selector.json`
//! (a folder of their own, so tools that list the entries' files pass them by). Written
//! under the entries' lock discipline: an exclusive lock, then an atomic replace.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{format_error, io_error, Database, Lock};
use crate::results::store::{ensure_gitignore, file_name};
use crate::results::write_atomic;
use crate::select::{Matrix, Selector};
use crate::Result;

impl Database {
    /// The file of a tunable's performance matrix on a device.
    pub fn matrix_path(&self, tunable: &str, device: &str) -> PathBuf {
        self.select_path(tunable, device, "matrix")
    }

    /// The file of a tunable's deployed selector on a device.
    pub fn selector_path(&self, tunable: &str, device: &str) -> PathBuf {
        self.select_path(tunable, device, "selector")
    }

    fn select_path(&self, tunable: &str, device: &str, what: &str) -> PathBuf {
        self.dir()
            .join(file_name(tunable))
            .join("select")
            .join(format!("{}.{what}.json", file_name(device)))
    }

    /// Records the performance matrix of `m.tunable` on `m.device`, replacing the one
    /// recorded (a cross-evaluation measures a whole matrix at once).
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the file cannot be written.
    pub fn record_matrix(&self, m: &Matrix) -> Result<()> {
        self.write_json(&self.matrix_path(&m.tunable, &m.device), m)
    }

    /// The recorded performance matrix of a tunable on a device, if any.
    ///
    /// # Errors
    /// [`crate::Error::Io`], or [`crate::Error::Format`] for a damaged file or one that
    /// holds another tunable or device.
    pub fn load_matrix(&self, tunable: &str, device: &str) -> Result<Option<Matrix>> {
        let path = self.matrix_path(tunable, device);
        let m: Option<Matrix> = read_json(&path)?;
        check_names(
            &path,
            m.as_ref().map(|m| (&*m.tunable, &*m.device)),
            tunable,
            device,
        )?;
        Ok(m)
    }

    /// Records the deployed selector of `s.tunable` on `s.device`.
    ///
    /// # Errors
    /// As [`Database::record_matrix`].
    pub fn record_selector(&self, s: &Selector) -> Result<()> {
        self.write_json(&self.selector_path(&s.tunable, &s.device), s)
    }

    /// The recorded selector of a tunable on a device, if any.
    ///
    /// # Errors
    /// As [`Database::load_matrix`].
    pub fn load_selector(&self, tunable: &str, device: &str) -> Result<Option<Selector>> {
        let path = self.selector_path(tunable, device);
        let s: Option<Selector> = read_json(&path)?;
        check_names(
            &path,
            s.as_ref().map(|s| (&*s.tunable, &*s.device)),
            tunable,
            device,
        )?;
        Ok(s)
    }

    fn write_json(&self, path: &std::path::Path, value: &impl Serialize) -> Result<()> {
        let _lock = Lock::exclusive(path)?;
        let _ = ensure_gitignore(self.dir());
        let mut text =
            serde_json::to_string(value).map_err(|e| format_error(path, e.to_string()))?;
        text.push('\n');
        write_atomic(path, text.as_bytes())
    }
}

fn read_json<T: DeserializeOwned>(path: &std::path::Path) -> Result<Option<T>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, e)),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        format_error(
            path,
            format!("{e}; this file is damaged: delete it and measure (or choose) again"),
        )
    })
}

fn check_names(
    path: &std::path::Path,
    found: Option<(&str, &str)>,
    tunable: &str,
    device: &str,
) -> Result<()> {
    match found {
        Some((t, d)) if t != tunable || d != device => Err(format_error(
            path,
            format!("holds `{t}` on `{d}`, not `{tunable}` on `{device}`: the file was renamed or copied by hand; move it back or delete it"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::{Input, SetMethod, TreeLimits};

    #[test]
    fn matrices_and_selectors_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path());
        assert_eq!(db.load_matrix("g", "gpu 1").unwrap(), None);
        let mut m = Matrix::new("g", "gpu 1", vec!["n".into()]);
        let c = m.add_config(Named(vec![("T".into(), Value::Int(4))]));
        let i = m.add_input(Input {
            key: "n=8".into(),
            features: vec![8.0],
            groups: vec!["x".into()],
        });
        m.set(i, c, 2.5).unwrap();
        db.record_matrix(&m).unwrap();
        assert_eq!(db.load_matrix("g", "gpu 1").unwrap(), Some(m.clone()));
        let s = Selector::fit(&m, &[0], 1, SetMethod::Greedy, TreeLimits::B).unwrap();
        db.record_selector(&s).unwrap();
        assert_eq!(db.load_selector("g", "gpu 1").unwrap(), Some(s));
        // Beside the entries, in a folder that `tune db` does not list.
        assert!(db
            .matrix_path("g", "gpu 1")
            .starts_with(dir.path().join("g").join("select")));
        // A file copied to another device's name is refused.
        std::fs::copy(db.matrix_path("g", "gpu 1"), db.matrix_path("g", "gpu-2")).unwrap();
        assert!(db.load_matrix("g", "gpu-2").is_err());
    }
}
