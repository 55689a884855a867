//! What a run measured (`run.json`), written atomically and read back for `analyse`.

use std::path::Path;

use tune::select::{Matrix, Stats};
use tune::{Error, Result};

/// Reads `DIR/run.json`.
pub fn read_run(dir: &Path) -> Result<RunFile> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    serde_json::from_str(&text).map_err(|e| Error::Format {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
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

/// Writes `run.json` and `REPORT.md` into `dir`.
pub fn write_run(dir: &Path, run: &RunFile, report: &str) -> Result<()> {
    let text = serde_json::to_string(run).map_err(|e| Error::Select(e.to_string()))?;
    tune::results::write_atomic(&dir.join("run.json"), text.as_bytes())?;
    tune::results::write_atomic(&dir.join("REPORT.md"), report.as_bytes())
}
