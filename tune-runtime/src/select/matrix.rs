//! The performance matrix: configurations x inputs, one measured cost per cell, most cells
//! unmeasured. What the cross-evaluation fills, the set choice reads, and the tuning
//! database keeps (`Database::record_matrix`).
//!
//! Performance is relative to the input's best measured cost: `best / cost`, in (0, 1],
//! 1 for the best configuration of that input. The paper's normalisations
//! ([`Normalisation`]) map it further before clustering.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::param::Value;
use crate::results::Named;
use crate::{Error, Result};

/// One input of a tunable: its key as recorded, its numeric features and the groups it
/// belongs to (e.g. the networks whose layers have this GEMM shape).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// The input key (`m=64,n=3136,k=576,batch=1`).
    pub key: String,
    /// The numeric features, in the order of [`Matrix::features`].
    pub features: Vec<f64>,
    /// Groups, for splits by group (train on some, test on the others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// How performance is mapped before clustering (Lawson, section 3.4). Every variant
/// starts from the performance relative to the input's best, `p = best / cost`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalisation {
    /// `p` itself.
    Standard,
    /// `p` where it is at least 0.9, else 0.
    RawCutoff,
    /// `(p - 0.9) / 0.1` where `p` is at least 0.9, else 0: the cutoff rescaled to [0, 1].
    StandardCutoff,
    /// `1 / (1 + exp(50 (0.85 - p)))`: 85% maps to 0.5, under 80% to under 0.1.
    Sigmoid,
}

impl Normalisation {
    /// Every normalisation.
    pub const ALL: [Normalisation; 4] = [
        Normalisation::Standard,
        Normalisation::RawCutoff,
        Normalisation::StandardCutoff,
        Normalisation::Sigmoid,
    ];

    /// The mapped value of a relative performance `p` in [0, 1].
    pub fn apply(self, p: f64) -> f64 {
        match self {
            Normalisation::Standard => p,
            Normalisation::RawCutoff => {
                if p >= 0.9 {
                    p
                } else {
                    0.0
                }
            }
            Normalisation::StandardCutoff => {
                if p >= 0.9 {
                    (p - 0.9) / 0.1
                } else {
                    0.0
                }
            }
            Normalisation::Sigmoid => 1.0 / (1.0 + (50.0 * (0.85 - p)).exp()),
        }
    }

    /// A short name: `standard`, `raw-cutoff`, `cutoff`, `sigmoid`.
    pub fn name(self) -> &'static str {
        match self {
            Normalisation::Standard => "standard",
            Normalisation::RawCutoff => "raw-cutoff",
            Normalisation::StandardCutoff => "cutoff",
            Normalisation::Sigmoid => "sigmoid",
        }
    }
}

/// Measured costs of configurations on inputs. Lower costs are better.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matrix {
    /// The tunable.
    pub tunable: String,
    /// The device.
    pub device: String,
    /// The names of the input features (`m`, `n`, `k`, `batch`).
    pub features: Vec<String>,
    inputs: Vec<Input>,
    configs: Vec<Named<Value>>,
    /// `costs[input][config]`.
    costs: Vec<Vec<Option<f64>>>,
    by_key: HashMap<String, usize>,
}

/// The form a matrix takes in a file: cells as `[input, config, cost]`, measured ones only.
#[derive(Serialize, Deserialize)]
struct MatrixFile {
    tunable: String,
    device: String,
    features: Vec<String>,
    inputs: Vec<Input>,
    configs: Vec<Named<Value>>,
    cells: Vec<(usize, usize, f64)>,
}

impl Serialize for Matrix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let cells = self
            .costs
            .iter()
            .enumerate()
            .flat_map(|(i, row)| {
                row.iter()
                    .enumerate()
                    .filter_map(move |(c, v)| v.map(|v| (i, c, v)))
            })
            .collect();
        MatrixFile {
            tunable: self.tunable.clone(),
            device: self.device.clone(),
            features: self.features.clone(),
            inputs: self.inputs.clone(),
            configs: self.configs.clone(),
            cells,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Matrix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let f = MatrixFile::deserialize(d)?;
        let mut m = Matrix::new(f.tunable, f.device, f.features);
        for input in f.inputs {
            if input.features.len() != m.features.len() {
                return Err(D::Error::custom(format!(
                    "input `{}` has {} features, the matrix names {}",
                    input.key,
                    input.features.len(),
                    m.features.len()
                )));
            }
            m.add_input(input);
        }
        for c in f.configs {
            m.add_config(c);
        }
        for (i, c, v) in f.cells {
            if i >= m.inputs.len() || c >= m.configs.len() || !(v.is_finite() && v > 0.0) {
                return Err(D::Error::custom(format!(
                    "cell [{i}, {c}, {v}] names no input or configuration, or is no positive cost"
                )));
            }
            m.costs[i][c] = Some(v);
        }
        Ok(m)
    }
}

impl Matrix {
    /// An empty matrix of a tunable on a device, whose inputs have the features `features`.
    pub fn new(
        tunable: impl Into<String>,
        device: impl Into<String>,
        features: Vec<String>,
    ) -> Self {
        Matrix {
            tunable: tunable.into(),
            device: device.into(),
            features,
            ..Matrix::default()
        }
    }

    /// Adds an input (or returns the index of the one with its key).
    pub fn add_input(&mut self, input: Input) -> usize {
        if let Some(&i) = self.by_key.get(&input.key) {
            return i;
        }
        self.by_key.insert(input.key.clone(), self.inputs.len());
        self.inputs.push(input);
        self.costs.push(vec![None; self.configs.len()]);
        self.inputs.len() - 1
    }

    /// Adds a configuration (or returns the index of an equal one).
    pub fn add_config(&mut self, config: Named<Value>) -> usize {
        if let Some(c) = self.configs.iter().position(|x| *x == config) {
            return c;
        }
        self.configs.push(config);
        for row in &mut self.costs {
            row.push(None);
        }
        self.configs.len() - 1
    }

    /// The inputs.
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// The configurations.
    pub fn configs(&self) -> &[Named<Value>] {
        &self.configs
    }

    /// The index of the input with this key.
    pub fn input_index(&self, key: &str) -> Option<usize> {
        self.by_key.get(key).copied()
    }

    /// Records a measured cost.
    ///
    /// # Errors
    /// [`Error::Select`] for an index out of range or a cost that is not a positive,
    /// finite number (performance is relative to the best cost).
    pub fn set(&mut self, input: usize, config: usize, cost: f64) -> Result<()> {
        if !(cost.is_finite() && cost > 0.0) {
            return Err(Error::Select(format!(
                "cost {cost} of configuration {config} on input {input} is not a positive number; the performance matrix needs times (or other positive costs)"
            )));
        }
        let cell = self
            .costs
            .get_mut(input)
            .and_then(|r| r.get_mut(config))
            .ok_or_else(|| {
                Error::Select(format!(
                    "no cell [{input}, {config}] in a matrix of {} inputs and {} configurations",
                    self.inputs.len(),
                    self.configs.len()
                ))
            })?;
        *cell = Some(cost);
        Ok(())
    }

    /// The measured cost, if any.
    pub fn get(&self, input: usize, config: usize) -> Option<f64> {
        self.costs.get(input)?.get(config).copied().flatten()
    }

    /// The best measured configuration of an input and its cost.
    pub fn best(&self, input: usize) -> Option<(usize, f64)> {
        self.costs
            .get(input)?
            .iter()
            .enumerate()
            .filter_map(|(c, v)| v.map(|v| (c, v)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Performance relative to the input's best measured cost, in (0, 1].
    pub fn perf(&self, input: usize, config: usize) -> Option<f64> {
        let (_, best) = self.best(input)?;
        self.get(input, config).map(|c| best / c)
    }

    /// Cells measured.
    pub fn measured(&self) -> usize {
        self.costs.iter().flatten().filter(|v| v.is_some()).count()
    }

    /// Cells of the full grid (configurations x inputs).
    pub fn grid(&self) -> usize {
        self.inputs.len() * self.configs.len()
    }

    /// The rows of `inputs` over every configuration, normalised; unmeasured cells are 0.
    pub fn rows(&self, inputs: &[usize], norm: Normalisation) -> Vec<Vec<f64>> {
        inputs
            .iter()
            .map(|&i| {
                (0..self.configs.len())
                    .map(|c| self.perf(i, c).map_or(0.0, |p| norm.apply(p)))
                    .collect()
            })
            .collect()
    }

    /// A copy whose inputs have the `derived` features after their own (and whose
    /// feature names have theirs).
    pub fn with_derived(&self, derived: &[super::features::Derived]) -> Matrix {
        let mut m = self.clone();
        m.features
            .extend(derived.iter().map(|d| d.name().to_string()));
        for input in &mut m.inputs {
            input.features = super::features::extend(&input.features, derived);
        }
        m
    }

    /// A copy whose inputs have only the features `names`, in that order (e.g. those a
    /// tunable's `input(..)` declares, which its generated selector may read).
    ///
    /// # Errors
    /// [`Error::Select`] naming a feature the matrix does not have.
    pub fn with_features(&self, names: &[&str]) -> Result<Matrix> {
        let at = names
            .iter()
            .map(|n| {
                self.features.iter().position(|f| f == n).ok_or_else(|| {
                    Error::Select(format!(
                        "the matrix has no feature `{n}` (it has {})",
                        self.features.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let mut m = self.clone();
        m.features = names.iter().map(|n| (*n).to_string()).collect();
        for input in &mut m.inputs {
            input.features = at
                .iter()
                .map(|&f| {
                    input.features.get(f).copied().ok_or_else(|| {
                        Error::Select(format!("input `{}` lacks feature {f}", input.key))
                    })
                })
                .collect::<Result<Vec<f64>>>()?;
        }
        Ok(m)
    }

    /// A copy with only the cells that `keep(input, config)` accepts (e.g. to replay a
    /// sparse measurement from a full one).
    pub fn filtered(&self, mut keep: impl FnMut(usize, usize) -> bool) -> Matrix {
        let mut m = self.clone();
        for (i, row) in m.costs.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                if !keep(i, c) {
                    *v = None;
                }
            }
        }
        m
    }
}

/// How good a choice of configuration per input is, measured against each input's best.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Score {
    /// Geometric mean of the relative performance over the inputs scored, in (0, 1].
    pub geomean: f64,
    /// The worst relative performance.
    pub worst: f64,
    /// Inputs scored.
    pub scored: usize,
    /// Inputs whose chosen configuration was not measured on them: not scored by
    /// [`score`]; scored as the input's worst measured configuration by [`score_or_worst`].
    pub unmeasured: usize,
}

/// Scores `choose` (a configuration per input, or none) on `inputs` of `truth`.
pub fn score(
    truth: &Matrix,
    inputs: &[usize],
    mut choose: impl FnMut(usize) -> Option<usize>,
) -> Score {
    let (mut log_sum, mut worst, mut scored, mut unmeasured) = (0.0, 1.0f64, 0, 0);
    for &i in inputs {
        match choose(i).and_then(|c| truth.perf(i, c)) {
            Some(p) => {
                log_sum += p.ln();
                worst = worst.min(p);
                scored += 1;
            }
            None => unmeasured += 1,
        }
    }
    Score {
        geomean: if scored == 0 {
            0.0
        } else {
            (log_sum / scored as f64).exp()
        },
        worst: if scored == 0 { 0.0 } else { worst },
        scored,
        unmeasured,
    }
}

/// As [`score`], but an input whose choice is missing or was not measured on it counts as
/// its worst measured configuration (and in `unmeasured`), so that every way of choosing
/// is scored on the same inputs: skipping them favours whatever picks configurations
/// nobody measured there, which are mostly those a cross-evaluation judged unpromising.
/// Inputs with no measured cell are not scored.
pub fn score_or_worst(
    m: &Matrix,
    inputs: &[usize],
    mut choose: impl FnMut(usize) -> Option<usize>,
) -> Score {
    let mut imputed = 0;
    let mut s = score(m, inputs, |i| {
        choose(i).filter(|&c| m.get(i, c).is_some()).or_else(|| {
            let worst = (0..m.configs().len())
                .filter_map(|c| m.get(i, c).map(|v| (c, v)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(c, _)| c);
            imputed += usize::from(worst.is_some());
            worst
        })
    });
    s.unmeasured = imputed;
    s
}

/// The best configuration of `set` for an input of `m` (by measured cost).
pub fn best_in(m: &Matrix, input: usize, set: &[usize]) -> Option<usize> {
    set.iter()
        .filter_map(|&c| m.get(input, c).map(|v| (c, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn cfg(x: i64) -> Named<Value> {
        Named(vec![("X".into(), Value::Int(x))])
    }

    #[test]
    fn with_features_keeps_the_named_ones_in_order() {
        let mut m = Matrix::new("t", "d", vec!["m".into(), "n".into(), "ta".into()]);
        let i = m.add_input(Input {
            key: "a".into(),
            features: vec![1.0, 2.0, 0.0],
            groups: vec![],
        });
        let c = m.add_config(cfg(1));
        m.set(i, c, 3.0).unwrap();
        let p = m.with_features(&["n", "m"]).unwrap();
        assert_eq!(p.features, ["n", "m"]);
        assert_eq!(p.inputs()[0].features, [2.0, 1.0]);
        assert_eq!(p.get(i, c), Some(3.0));
        let e = m.with_features(&["m", "k"]).unwrap_err().to_string();
        assert!(e.contains("`k`"), "{e}");
    }

    pub(crate) fn small() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for n in [1.0, 2.0] {
            m.add_input(Input {
                key: format!("n={n}"),
                features: vec![n],
                groups: vec![],
            });
        }
        for x in 0..3 {
            m.add_config(cfg(x));
        }
        m.set(0, 0, 1.0).unwrap();
        m.set(0, 1, 2.0).unwrap();
        m.set(1, 1, 4.0).unwrap();
        m.set(1, 2, 5.0).unwrap();
        m
    }

    #[test]
    fn performance_is_relative_to_the_best_measured() {
        let m = small();
        assert_eq!(m.best(0), Some((0, 1.0)));
        assert_eq!(m.perf(0, 1), Some(0.5));
        assert_eq!(m.perf(1, 2), Some(0.8));
        assert_eq!(m.perf(1, 0), None);
        assert_eq!((m.measured(), m.grid()), (4, 6));
        assert_eq!(
            m.rows(&[1], Normalisation::Standard),
            vec![vec![0.0, 1.0, 0.8]]
        );
        assert_eq!(
            m.rows(&[1], Normalisation::RawCutoff),
            vec![vec![0.0, 1.0, 0.0]]
        );
        assert_eq!(best_in(&m, 1, &[0, 2]), Some(2));
    }

    #[test]
    fn normalisations_follow_the_paper() {
        let s = Normalisation::Sigmoid;
        assert!((s.apply(0.85) - 0.5).abs() < 1e-12);
        assert!(s.apply(0.8) < 0.1 && s.apply(1.0) > 0.99);
        assert!((Normalisation::StandardCutoff.apply(0.95) - 0.5).abs() < 1e-9);
        assert_eq!(Normalisation::StandardCutoff.apply(0.85), 0.0);
    }

    #[test]
    fn bad_cells_are_errors() {
        let mut m = small();
        assert!(m.set(0, 0, f64::NAN).is_err());
        assert!(m.set(0, 0, 0.0).is_err());
        assert!(m.set(5, 0, 1.0).is_err());
    }

    #[test]
    fn files_keep_measured_cells_only() {
        let m = small();
        let text = serde_json::to_string(&m).unwrap();
        assert!(
            text.contains("\"cells\":[[0,0,1.0],[0,1,2.0],[1,1,4.0],[1,2,5.0]]"),
            "{text}"
        );
        let back: Matrix = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        let bad = text.replace("[1,2,5.0]", "[1,7,5.0]");
        assert!(serde_json::from_str::<Matrix>(&bad).is_err());
    }

    #[test]
    fn scores_are_geometric_means() {
        let m = small();
        let s = score(&m, &[0, 1], |i| Some(if i == 0 { 1 } else { 2 }));
        assert!((s.geomean - (0.5f64 * 0.8).sqrt()).abs() < 1e-12);
        assert_eq!((s.worst, s.scored, s.unmeasured), (0.5, 2, 0));
        let s = score(&m, &[0, 1], |_| Some(0));
        assert_eq!((s.scored, s.unmeasured), (1, 1));
        // Input 1 lacks configuration 0: scored as its worst measured (2, at 0.8).
        let s = score_or_worst(&m, &[0, 1], |_| Some(0));
        assert_eq!((s.scored, s.unmeasured), (2, 1));
        assert!((s.geomean - 0.8f64.sqrt()).abs() < 1e-12, "{s:?}");
        let s = score_or_worst(&m, &[0, 1], |_| None);
        assert_eq!((s.scored, s.unmeasured), (2, 2));
    }
}
