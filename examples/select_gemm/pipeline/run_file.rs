//! What a run measured (`run.json.gz`, gzipped JSON; runs before session 9 wrote
//! `run.json`), written atomically and read back for `analyse`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use tune::select::{Matrix, Stats};
use tune::{Error, Result};

/// The name of a run's file: gzipped, as a run's matrix is a megabyte of JSON and the
/// committed runs travel with the repository to the GPU machine.
pub const RUN_FILE: &str = "run.json.gz";

/// Reads `DIR/run.json.gz`, or `DIR/run.json` where a run is not gzipped (runs before
/// session 9, or one unpacked by hand).
pub fn read_run(dir: &Path) -> Result<RunFile> {
    let (path, text) = read_text(dir)?;
    serde_json::from_str(&text).map_err(|e| Error::Format {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// The run file's text and where it was read from.
fn read_text(dir: &Path) -> Result<(PathBuf, String)> {
    let plain = dir.join("run.json");
    if plain.exists() {
        let text = std::fs::read_to_string(&plain).map_err(|e| io_error(&plain, e))?;
        return Ok((plain, text));
    }
    let path = dir.join(RUN_FILE);
    let bytes = std::fs::read(&path).map_err(|e| io_error(&path, e))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .map_err(|e| Error::Format {
            path: path.display().to_string(),
            reason: format!("not gzipped text: {e}"),
        })?;
    Ok((path, text))
}

/// Writes `text` gzipped as `DIR/run.json.gz`, atomically, and removes a plain
/// `DIR/run.json`, which [`read_text`] would read first.
fn write_text(dir: &Path, text: &str) -> Result<()> {
    let path = dir.join(RUN_FILE);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let bytes = gz
        .write_all(text.as_bytes())
        .and_then(|()| gz.finish())
        .map_err(|e| io_error(&path, e))?;
    tune::results::write_atomic(&path, &bytes)?;
    let plain = dir.join("run.json");
    if plain.exists() {
        std::fs::remove_file(&plain).map_err(|e| io_error(&plain, e))?;
    }
    Ok(())
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Everything a run measured, for `analyse`.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct RunFile {
    /// The matrix the selectors learn from: the searches and the cross-evaluation.
    pub matrix: Matrix,
    /// How it was measured.
    pub stats: Stats,
    /// Cells measured for scoring.
    pub verified: usize,
    /// Cells planned for scoring (0 in runs before the scoring cells were kept apart,
    /// whose `matrix` holds them).
    #[serde(default)]
    pub planned: usize,
    /// Cells measured past the scoring ones to fill the grid ([`fill`]).
    #[serde(default)]
    pub filled: usize,
    /// Label cells measured and planned ([`super::labels::label_step`]).
    #[serde(default)]
    pub labelled: (usize, usize),
    /// The share of the grid each training set's tuning run keeps to, its label cells
    /// included ([`super::labels::BUDGET`]; 0: a run without a label step).
    #[serde(default)]
    pub budget: f64,
    /// The scoring and filling cells, `[input, config, cost]` of `matrix`'s inputs and
    /// configurations: with `matrix`, the truth the tables score on.
    #[serde(default)]
    pub scoring: Vec<(usize, usize, f64)>,
    /// The vendor library's name and seconds per shape key.
    pub vendor: Option<(String, Vec<(String, f64)>)>,
    /// Cells a training shape gave up of its label cells for re-measuring its best ones
    /// (`remeasure::RESERVE`; 0 in runs before select7, which re-measured nothing).
    #[serde(default)]
    pub reserve: usize,
    /// The tuning run's re-measured cells, `[input, config, median]` (`remeasure`): the
    /// selectors learn these times rather than `matrix`'s or `scoring`'s first ones.
    #[serde(default)]
    pub relabel: Vec<(usize, usize, f64)>,
    /// Every cell re-measured in the call (the tuning runs' and the scoring side's), its
    /// median: the tables' truth only ([`RunFile::truth`]).
    #[serde(default)]
    pub rescore: Vec<(usize, usize, f64)>,
}

impl RunFile {
    /// A run of the matrix `m` and the truth `truth` (`m` with the scoring cells).
    pub fn new(
        m: Matrix,
        truth: &Matrix,
        stats: Stats,
        (verified, planned): (usize, usize),
        vendor: Option<(String, Vec<(String, f64)>)>,
    ) -> RunFile {
        let mut scoring = Vec::new();
        for i in 0..truth.inputs().len() {
            for c in 0..truth.configs().len() {
                if let (None, Some(v)) = (m.get(i, c), truth.get(i, c)) {
                    scoring.push((i, c, v));
                }
            }
        }
        RunFile {
            matrix: m,
            stats,
            verified,
            planned,
            filled: 0,
            labelled: (0, 0),
            budget: 0.0,
            scoring,
            vendor,
            reserve: 0,
            relabel: Vec::new(),
            rescore: Vec::new(),
        }
    }

    /// The label cells of each training set before its re-measurements:
    /// [`super::labels::label_budget`].
    pub fn label_budget(&self) -> usize {
        super::labels::label_budget(&self.stats, self.budget)
    }

    /// The label cells of a training set of `shapes` shapes, its re-measurements taken
    /// out: [`super::labels::set_budget`].
    pub fn set_budget(&self, shapes: usize) -> usize {
        super::labels::set_budget(self.label_budget(), self.reserve, shapes)
    }

    /// The times the selectors learn from: the matrix with the scoring cells (of which
    /// [`super::labels::labelled`] takes the label cells) and the tuning run's
    /// re-measured times.
    pub fn learnt(&self) -> Result<Matrix> {
        let mut t = self.first()?;
        for &(i, c, v) in &self.relabel {
            t.set(i, c, v)?;
        }
        Ok(t)
    }

    /// The truth the tables score on: every cell measured, the re-measured ones at their
    /// median (the per-shape optimum is the best of them).
    pub fn truth(&self) -> Result<Matrix> {
        let mut t = self.learnt()?;
        for &(i, c, v) in &self.rescore {
            t.set(i, c, v)?;
        }
        Ok(t)
    }

    /// Every cell at its first time: the matrix with the scoring cells (select6's plan,
    /// which re-measured nothing).
    pub fn first(&self) -> Result<Matrix> {
        let mut t = self.matrix.clone();
        for &(i, c, v) in &self.scoring {
            t.set(i, c, v)?;
        }
        Ok(t)
    }
}

/// Writes `run.json.gz` and `REPORT.md` into `dir`.
pub fn write_run(dir: &Path, run: &RunFile, report: &str) -> Result<()> {
    let text = serde_json::to_string(run).map_err(|e| Error::Select(e.to_string()))?;
    write_text(dir, &text)?;
    tune::results::write_atomic(&dir.join("REPORT.md"), report.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_file_is_written_gzipped_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run.json"), "{\"old\": 1}").unwrap();
        write_text(dir.path(), "{\"new\": 2}").unwrap();
        // The plain file it replaces is gone, so the new one is what is read.
        assert!(!dir.path().join("run.json").exists());
        let bytes = std::fs::read(dir.path().join(RUN_FILE)).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip's magic number");
        let (path, text) = read_text(dir.path()).unwrap();
        assert_eq!(
            (path, text.as_str()),
            (dir.path().join(RUN_FILE), "{\"new\": 2}")
        );
    }

    #[test]
    fn a_plain_run_file_is_read_before_a_gzipped_one() {
        let dir = tempfile::tempdir().unwrap();
        write_text(dir.path(), "{\"gz\": 1}").unwrap();
        std::fs::write(dir.path().join("run.json"), "{\"plain\": 1}").unwrap();
        assert_eq!(read_text(dir.path()).unwrap().1, "{\"plain\": 1}");
    }

    #[test]
    fn a_missing_or_damaged_run_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = read_text(dir.path()).unwrap_err().to_string();
        assert!(missing.contains(RUN_FILE), "{missing}");
        std::fs::write(dir.path().join(RUN_FILE), b"not gzip").unwrap();
        let damaged = read_text(dir.path()).unwrap_err().to_string();
        assert!(damaged.contains("not gzipped"), "{damaged}");
    }
}
