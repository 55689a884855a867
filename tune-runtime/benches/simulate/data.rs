//! Where the recorded spaces are when `TUNE_SIM_DATA` is not set (the same rule as
//! `bench/simulate/data_dir.sh`).

use std::path::{Path, PathBuf};

const REL: &str = "shared/data/tuning-caches/benchmark_hub";

/// `shared/data/tuning-caches/benchmark_hub` beside the repository at `repo` or, in a git
/// worktree (whose folder may be anywhere), beside its main checkout; an error naming the
/// folders looked at and what to set when neither exists.
pub fn default_data(repo: &Path) -> Result<PathBuf, String> {
    let mut tried = vec![repo.join("..").join(REL)];
    let common = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .output();
    if let Some(out) = common.ok().filter(|o| o.status.success()) {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if let Some(main) = dir.parent() {
            tried.push(main.join("..").join(REL));
        }
    }
    match tried.iter().find(|d| d.is_dir()) {
        Some(d) => Ok(d.canonicalize().unwrap_or_else(|_| d.clone())),
        None => Err(format!(
            "no recorded spaces at {}; set TUNE_SIM_DATA to the folder of Kernel Tuner cache \
             files ({REL})",
            tried
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// Whether `path` (JSON, gzipped when its name ends in `.gz`) is a Kernel Tuner cache file:
/// a document with a `tune_params` object. The bench compares both tools on the same
/// spaces, and Kernel Tuner's runs read only its caches, so other recordings that
/// `Recording` reads (T4 and KTT files, converted) are left out.
pub fn is_kernel_tuner_cache(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut text = String::new();
    let read = if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file).read_to_string(&mut text)
    } else {
        std::io::BufReader::new(file).read_to_string(&mut text)
    };
    read.is_ok()
        && serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|doc| doc.get("tune_params").is_some_and(|t| t.is_object()))
}
