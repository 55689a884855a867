//! How the tuning database sits on disk: collision-free file names, the lock that
//! serialises writers, and the clean-up of writes that a killed process left unfinished.
//!
//! Writers of one database file take an exclusive OS lock (`flock` on Unix, `LockFileEx` on
//! Windows, through `fs4`) on a lock file beside it, read the file afresh, merge, and replace
//! it atomically ([`super::write_atomic`]). The lock is per open file, so it serialises
//! threads of one process as well as processes. Readers take no lock: the atomic rename
//! guarantees that they see a whole old or a whole new file.
//!
//! (std's `File::lock` would do the same, but it needs Rust 1.89 and our `rust-version` is
//! 1.85.)

use std::fs::{File, OpenOptions};
use std::hash::Hasher;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use fnv::FnvHasher;

use crate::{Error, Result};

/// A file-system-safe name: lower-case ASCII letters, digits, `_` and `-`. Lossy: files
/// are named with [`file_name`].
pub(crate) fn slug(s: &str) -> String {
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

/// A collision-free file name for a tunable or device name: the name itself when it is its
/// own slug (lower-case ASCII letters, digits, `_` and `-`), else the slug and 8 hex digits of a stable hash of the exact name (so that
/// `GPU A` and `gpu-a` get different files). The exact names are also stored inside each
/// file and checked on read.
pub fn file_name(s: &str) -> String {
    let slugged = slug(s);
    if slugged == s {
        return slugged;
    }
    let mut h = FnvHasher::default();
    h.write(s.as_bytes());
    let x = h.finish();
    format!("{slugged}-{:08x}", (x >> 32) ^ (x & 0xffff_ffff))
}

/// An exclusive lock on a database file, held until dropped (closing the lock file
/// releases it).
#[derive(Debug)]
pub(crate) struct Lock {
    _file: File,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The lock file of `data`: `.<name>.lock` beside it.
pub(crate) fn lock_path(data: &Path) -> PathBuf {
    let name = data
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    data.with_file_name(format!(".{name}.lock"))
}

impl Lock {
    /// Waits for the exclusive lock on the database file `data` (creating its folder and
    /// lock file if needed).
    ///
    /// # Errors
    /// [`Error::Io`] naming the lock file, when it cannot be created or locked.
    pub(crate) fn exclusive(data: &Path) -> Result<Lock> {
        let path = lock_path(data);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        fs4::FileExt::lock(&file).map_err(io(&path))?;
        Ok(Lock { _file: file })
    }
}

/// Whether `file` is a temporary file of [`super::write_atomic`] for `name`:
/// `.<name>.<digits and dots>.tmp`.
fn is_temp_of(file: &str, name: &str) -> bool {
    let Some(rest) = file
        .strip_prefix('.')
        .and_then(|r| r.strip_prefix(name))
        .and_then(|r| r.strip_prefix('.'))
        .and_then(|r| r.strip_suffix(".tmp"))
    else {
        return false;
    };
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// Removes the temporary files that unfinished writes of `data` left behind (a process
/// killed between creating and renaming one). Call it only while holding `data`'s
/// [`Lock`]: then no live writer of `data` has a temporary file. Returns how many it
/// removed; failures to remove are ignored (the next write tries again).
pub(crate) fn remove_stray_temps(data: &Path, _held: &Lock) -> usize {
    let (Some(dir), Some(name)) = (data.parent(), data.file_name()) else {
        return 0;
    };
    let name = name.to_string_lossy();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let file = e.file_name();
        if is_temp_of(&file.to_string_lossy(), &name) && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// What the database folder's `.gitignore` says, so that lock files and unfinished writes
/// stay out of the user's commits.
const GITIGNORE: &str = "# Written by tune: lock files and unfinished writes of the tuning database.\n.*.lock\n.*.tmp\n";

/// Writes `root/.gitignore` unless there is one.
pub(crate) fn ensure_gitignore(root: &Path) -> Result<()> {
    let path = root.join(".gitignore");
    match OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(mut f) => std::io::Write::write_all(&mut f, GITIGNORE.as_bytes()).map_err(io(&path)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(&path)(e)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn file_names_do_not_collide() {
        assert_eq!(file_name("cpu"), "cpu");
        assert_eq!(file_name("gpu-a"), "gpu-a");
        let lossy = file_name("GPU A");
        assert!(lossy.starts_with("gpu-a-") && lossy.len() == "gpu-a-".len() + 8);
        assert_ne!(lossy, file_name("gpu-a"));
        assert_ne!(lossy, file_name("GPU-A"));
        assert_ne!(file_name("a::b"), file_name("a-b"));
        assert_eq!(file_name("GPU A"), lossy, "stable");
        assert!(file_name("").starts_with("unnamed-"));
        assert_eq!(
            slug("NVIDIA H100 80GB HBM3 (CUDA)"),
            "nvidia-h100-80gb-hbm3-cuda"
        );
    }

    #[test]
    fn temporary_files_are_recognised_exactly() {
        assert!(is_temp_of(".cpu.json.123.tmp", "cpu.json"));
        assert!(is_temp_of(".cpu.json.123.7.tmp", "cpu.json"));
        assert!(!is_temp_of(".cpu.json.tmp", "cpu.json"));
        assert!(!is_temp_of(".cpu.json.x.1.tmp", "cpu.json"));
        assert!(!is_temp_of(".cpu.json.lock", "cpu.json"));
        assert!(!is_temp_of("cpu.json", "cpu.json"));
    }

    #[test]
    fn stray_temporary_files_are_removed_under_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("cpu.json");
        for f in [
            ".cpu.json.99999.tmp",
            ".cpu.json.1.2.tmp",
            ".gpu.json.5.tmp",
        ] {
            std::fs::write(dir.path().join(f), "partial").unwrap();
        }
        let lock = Lock::exclusive(&data).unwrap();
        assert_eq!(remove_stray_temps(&data, &lock), 2);
        assert!(
            dir.path().join(".gpu.json.5.tmp").exists(),
            "another file's"
        );
        assert!(lock_path(&data).exists());
    }

    #[test]
    fn gitignore_is_written_once() {
        let dir = tempfile::tempdir().unwrap();
        ensure_gitignore(dir.path()).unwrap();
        let p = dir.path().join(".gitignore");
        assert!(std::fs::read_to_string(&p).unwrap().contains(".*.lock"));
        std::fs::write(&p, "mine\n").unwrap();
        ensure_gitignore(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "mine\n");
    }
}
