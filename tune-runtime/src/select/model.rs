//! Selecting by a model of each deployed configuration's performance (select8): where a
//! classifier learns only which configuration won each training input, these models learn
//! every measured cell of the set. Per configuration of the set, a ridge least-squares
//! fit of its log share of the input's best (`ln(best / time)`, cut off at [`CUTOFF`])
//! on the input's features
//! (on the trees' `log2(1 + x)` scale, standardised; [`Basis::Quadratic`] adds their
//! squares); at run time the configuration with the best predicted share runs.
//!
//! The models compile into plain Rust as the trees do: a few arithmetic expressions per
//! configuration and a chain of comparisons ([`Selector::rust`](super::deploy::Selector::rust)).
//! Each feature is clamped to its training range before the model reads it, so an input
//! outside it (a size of 0 or `u32::MAX`) gets the prediction of the nearest edge rather
//! than a polynomial's extrapolation, and no input makes a prediction NaN. They cost
//! more than a tree: a `log2` per feature and a multiply-add per feature and configuration
//! (8 quadratic models over 8 features: some 90 ns a call against a tree's 2-3 ns,
//! benches/benchmarks/select.rs, bench/select/RESULTS.md round 8).
//!
//! A training input's cell of a configuration that was not measured counts as the
//! input's worst measured (as the cost trees and the nested cross-validation count it):
//! fitted on measured cells alone, a configuration measured mostly where it is strong
//! (by the searches and the cross-evaluation) would look strong everywhere.

use linfa_linalg::cholesky::SolveCInplace;
use ndarray::Array2;
use serde::{Deserialize, Serialize};

use super::classify::scaled;
use super::cost::log_shares;
use super::matrix::Matrix;
use crate::{Error, Result};

/// What each configuration's model reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// A weight per feature: the log share is linear in the log sizes.
    Linear,
    /// A weight per feature and per feature squared: a configuration best for middle
    /// sizes and worse on both sides.
    Quadratic,
}

impl Basis {
    /// A name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Linear => "linear model",
            Basis::Quadratic => "quadratic model",
        }
    }
}

/// The ridge penalty per training input, on standardised features: enough to keep the
/// fit stable where features are near-collinear (`mn` against `m` and `n` on the log
/// scale), small against the data (fixed a priori, select8).
pub const RIDGE: f64 = 0.01;

/// The share of the best below which a cell counts as that share: the models learn to
/// rank the configurations near each input's best, not how slow a hopeless one is (a
/// tile 20 times too large for a small input would otherwise pull its model, and its
/// neighbours' ranking, toward it). The paper's cutoff normalisation at 90% of the best
/// (fixed a priori; on round 7's committed CUDA run, seed 1, floors of 0, 50% and 80% were
/// tried beside it: 2-4 points lower at k = 8).
pub const CUTOFF: f64 = 0.9;

/// A feature as the models read it: `(clamp(log2(1 + x), lo, hi) - mean) / sd`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    /// The feature's index (own features first, then derived ones).
    pub feature: usize,
    /// The least scaled value among the training inputs.
    pub lo: f64,
    /// The largest.
    pub hi: f64,
    /// The mean of the scaled values.
    pub mean: f64,
    /// Their standard deviation (positive: constant features are left out).
    pub sd: f64,
}

impl Variable {
    /// Its value for an input's features (a missing feature reads 0, as the trees do).
    /// `max` and `min` take the bound for NaN, so the value is always finite.
    pub fn value(&self, features: &[f64]) -> f64 {
        let x = features.get(self.feature).copied().unwrap_or(0.0);
        (scaled(x).max(self.lo).min(self.hi) - self.mean) / self.sd
    }
}

/// One configuration's model: `intercept + sum(weights[j] * column j)`, the columns the
/// variables, then (quadratic) their squares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Linear {
    /// The predicted log share where every variable is at its mean.
    pub intercept: f64,
    /// One weight per column.
    pub weights: Vec<f64>,
}

/// The models of a set: one per set position, over shared variables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Models {
    /// What they read.
    pub basis: Basis,
    /// The non-constant features, scaled.
    pub variables: Vec<Variable>,
    /// One per set position.
    pub models: Vec<Linear>,
}

impl Models {
    /// The columns of an input: the variables, then (quadratic) their squares.
    pub fn columns(&self, features: &[f64]) -> Vec<f64> {
        let z: Vec<f64> = self.variables.iter().map(|v| v.value(features)).collect();
        columns_of(self.basis, &z)
    }

    /// Each set position's predicted log share, summed left to right in the order the
    /// generated source sums them, so that both pick the same configuration.
    pub fn predict(&self, features: &[f64]) -> Vec<f64> {
        let cols = self.columns(features);
        self.models
            .iter()
            .map(|l| {
                l.weights
                    .iter()
                    .zip(&cols)
                    .fold(l.intercept, |s, (w, x)| s + w * x)
            })
            .collect()
    }

    /// The set position with the best predicted share: the first of the best (a later
    /// one replaces it only when strictly better, as the generated comparisons do).
    pub fn choose(&self, features: &[f64]) -> usize {
        let mut best = (0, f64::NAN);
        for (p, s) in self.predict(features).into_iter().enumerate() {
            if p == 0 || s > best.1 {
                best = (p, s);
            }
        }
        best.0
    }
}

/// The columns of standardised variables `z`.
fn columns_of(basis: Basis, z: &[f64]) -> Vec<f64> {
    match basis {
        Basis::Linear => z.to_vec(),
        // The square of a standardised value, as the generated source computes it.
        Basis::Quadratic => z.iter().copied().chain(z.iter().map(|x| x * x)).collect(),
    }
}

/// Fits a model per configuration of `set` (indices of `m`) on the training inputs
/// `train`: ridge least squares ([`RIDGE`] per input) of the log share of the input's
/// best measured configuration, at least `ln(CUTOFF)`, an unmeasured cell counting as
/// the input's worst measured (see the module docs). Every feature of `m` (own and derived) that varies
/// over the training inputs is read.
///
/// # Errors
/// [`Error::Select`] when no training input has a measured configuration of the set, or
/// the solve fails.
pub fn train_models(m: &Matrix, train: &[usize], set: &[usize], basis: Basis) -> Result<Models> {
    let floor = CUTOFF.ln();
    let kept: Vec<(usize, Vec<f64>)> = train
        .iter()
        .filter_map(|&i| {
            let shares = log_shares(m, i, set)?;
            Some((i, shares.into_iter().map(|v| v.max(floor)).collect()))
        })
        .collect();
    if kept.is_empty() || set.is_empty() {
        return Err(Error::Select(
            "no training input has a measured configuration of the set".into(),
        ));
    }
    let n = kept.len();
    let variables: Vec<Variable> = (0..m.features.len())
        .filter_map(|f| {
            let v: Vec<f64> = kept
                .iter()
                .map(|(i, _)| scaled(m.inputs()[*i].features.get(f).copied().unwrap_or(0.0)))
                .collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
            let (lo, hi) = v
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                    (a.min(x), b.max(x))
                });
            (var > 1e-24).then(|| Variable {
                feature: f,
                lo,
                hi,
                mean,
                sd: var.sqrt(),
            })
        })
        .collect();
    let mut shell = Models {
        basis,
        variables,
        models: Vec::new(),
    };
    let rows: Vec<Vec<f64>> = kept
        .iter()
        .map(|(i, _)| shell.columns(&m.inputs()[*i].features))
        .collect();
    let p = rows.first().map_or(0, Vec::len);
    let k = set.len();
    // Centred columns and targets: the intercept is not penalised.
    let col_mean: Vec<f64> = (0..p)
        .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n as f64)
        .collect();
    let y_mean: Vec<f64> = (0..k)
        .map(|c| kept.iter().map(|(_, s)| s[c]).sum::<f64>() / n as f64)
        .collect();
    let weights = if p == 0 {
        Array2::zeros((0, k))
    } else {
        let mut a = Array2::<f64>::zeros((p, p));
        let mut b = Array2::<f64>::zeros((p, k));
        for (r, (_, shares)) in rows.iter().zip(&kept) {
            for j in 0..p {
                let xj = r[j] - col_mean[j];
                for l in 0..p {
                    a[[j, l]] += xj * (r[l] - col_mean[l]);
                }
                for c in 0..k {
                    b[[j, c]] += xj * (shares[c] - y_mean[c]);
                }
            }
        }
        for j in 0..p {
            a[[j, j]] += RIDGE * n as f64;
        }
        a.solvec_into(b)
            .map_err(|e| Error::Select(format!("fitting the configurations' models: {e}")))?
    };
    shell.models = (0..k)
        .map(|c| {
            let w: Vec<f64> = (0..p).map(|j| weights[[j, c]]).collect();
            let intercept = y_mean[c] - w.iter().zip(&col_mean).map(|(w, x)| w * x).sum::<f64>();
            Linear {
                intercept,
                weights: w,
            }
        })
        .collect();
    Ok(shell)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::Input;

    /// Three configurations along `n` (1 to 2^20): 0's time grows with `n` fastest, 2's
    /// has the largest fixed cost, 1 lies between: each is best on a band of sizes.
    fn bands() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into(), "flag".into()]);
        for c in 0..3 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for e in 0..=20 {
            let n = f64::from(1u32 << e);
            let i = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![n, 1.0],
                groups: vec![],
            });
            m.set(i, 0, 1.0 + n).unwrap();
            m.set(i, 1, 30.0 + n / 8.0).unwrap();
            m.set(i, 2, 1000.0 + n / 64.0).unwrap();
        }
        m
    }

    #[test]
    fn models_follow_the_bands_and_clamp_outside_them() {
        let m = bands();
        let all: Vec<usize> = (0..m.inputs().len()).collect();
        let q = train_models(&m, &all, &[0, 1, 2], Basis::Quadratic).unwrap();
        // The constant flag is left out.
        assert_eq!(q.variables.len(), 1);
        assert_eq!(q.models.len(), 3);
        let pick = |n: f64| q.choose(&[n, 1.0]);
        assert_eq!(pick(1.0), 0);
        assert_eq!(pick(1e6), 2);
        // Outside the training range: the edge's pick, never NaN.
        assert_eq!(pick(0.0), pick(1.0));
        assert_eq!(pick(f64::from(u32::MAX)), pick(f64::from(1u32 << 20)));
        assert_eq!(pick(f64::NAN), pick(0.0));
        assert!(q
            .predict(&[f64::INFINITY, 1.0])
            .iter()
            .all(|s| s.is_finite()));
        // Cut off at 90%, a configuration's target is flat but on its own band: the
        // squares follow the middle band (within 20% of the best on all inputs but one
        // next to a band's edge), a line per configuration less well, yet reaches it.
        for (basis, want) in [(Basis::Linear, 17), (Basis::Quadratic, 20)] {
            let t = train_models(&m, &all, &[0, 1, 2], basis).unwrap();
            let near = all
                .iter()
                .filter(|&&i| {
                    let pick = m.get(i, t.choose(&m.inputs()[i].features)).unwrap();
                    m.best(i).unwrap().1 / pick >= 0.8
                })
                .count();
            assert!(near >= want, "{basis:?}: {near} of 21");
            assert!((0..=20).any(|e| t.choose(&[f64::from(1u32 << e), 1.0]) == 1));
        }
    }

    #[test]
    fn set_positions_and_unmeasured_cells() {
        let mut m = bands();
        // Configuration 2 unmeasured on every small input: it counts as the worst there.
        let all: Vec<usize> = (0..m.inputs().len()).collect();
        let mut cut = m.filtered(|i, c| !(c == 2 && i < 10));
        let t = train_models(&cut, &all, &[2, 0], Basis::Linear).unwrap();
        // Positions, not configuration indices.
        assert_eq!(t.choose(&[1.0, 1.0]), 1);
        assert_eq!(t.choose(&[1e6, 1.0]), 0);
        assert!(train_models(&cut, &[], &[0], Basis::Linear).is_err());
        // One input: intercepts only.
        let one = train_models(&m, &[3], &[0, 1], Basis::Quadratic).unwrap();
        assert!(one.variables.is_empty());
        assert_eq!(one.choose(&[1e9, 1.0]), 0);
        cut = m.filtered(|_, c| c == 0);
        assert!(train_models(&cut, &all, &[1], Basis::Linear).is_err());
        m = cut;
        assert!(train_models(&m, &all, &[0], Basis::Linear).is_ok());
    }
}
