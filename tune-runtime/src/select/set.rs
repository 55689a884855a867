//! Choosing the k configurations to deploy from a performance matrix (Lawson, section 4):
//! Top-N by count (the paper's baseline), k-means and PCA + k-means on normalised
//! performance (linfa's), and a greedy max-coverage choice that maximises the geometric
//! mean of the best deployed configuration over the training inputs.
//!
//! Clustering groups inputs that perform alike; each cluster then contributes the
//! configuration with the best geometric mean of relative performance over its members
//! (the paper's rule for clusters given by labels). An unmeasured cell counts as
//! [`UNMEASURED`] of the best there: a configuration nobody tried on an input is assumed
//! to be poor on it.

use linfa::traits::{Fit, Predict};
use linfa::DatasetBase;
use linfa_clustering::KMeans;
use linfa_reduction::Pca;
use ndarray::Array2;
use serde::{Deserialize, Serialize};

use super::matrix::{Matrix, Normalisation};
use crate::{Error, Result};

/// The relative performance an unmeasured cell counts as when a set is chosen.
pub const UNMEASURED: f64 = 0.01;

/// How the set of configurations is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetMethod {
    /// The k configurations that are best for the most training inputs.
    TopN,
    /// k-means on the inputs' normalised performance vectors.
    KMeans(Normalisation),
    /// The same after PCA to k dimensions.
    PcaKMeans(Normalisation),
    /// Greedy max-coverage: add the configuration that raises the geometric mean of the
    /// best chosen configuration over the training inputs most, k times.
    Greedy,
}

impl SetMethod {
    /// A name for tables: `top-n`, `k-means (sigmoid)`, `pca+k-means (standard)`, `greedy`.
    pub fn name(&self) -> String {
        match self {
            SetMethod::TopN => "top-n".into(),
            SetMethod::KMeans(n) => format!("k-means ({})", n.name()),
            SetMethod::PcaKMeans(n) => format!("pca+k-means ({})", n.name()),
            SetMethod::Greedy => "greedy".into(),
        }
    }

    /// The four methods of the tables, clustering on the standard normalisation.
    pub const MAIN: [SetMethod; 4] = [
        SetMethod::TopN,
        SetMethod::KMeans(Normalisation::Standard),
        SetMethod::PcaKMeans(Normalisation::Standard),
        SetMethod::Greedy,
    ];
}

/// Chooses up to `k` configurations (indices into `m.configs()`) from the training inputs
/// `train`: exactly `k` unless fewer configurations were measured on them.
///
/// # Errors
/// [`Error::Select`] when `k` is 0, `train` has no measured input, or the clustering
/// fails.
pub fn choose(m: &Matrix, train: &[usize], k: usize, method: SetMethod) -> Result<Vec<usize>> {
    if k == 0 {
        return Err(Error::Select(
            "a set of 0 configurations selects nothing; choose k >= 1".into(),
        ));
    }
    let train: Vec<usize> = train
        .iter()
        .copied()
        .filter(|&i| m.best(i).is_some())
        .collect();
    if train.is_empty() {
        return Err(Error::Select(
            "no training input has a measured configuration; measure the matrix first".into(),
        ));
    }
    let perf = Perf::new(m, &train);
    let mut set = match method {
        SetMethod::TopN => top_n(m, &train, &perf, k),
        SetMethod::Greedy => Vec::new(),
        SetMethod::KMeans(norm) => {
            let labels = kmeans(&m.rows(&train, norm), k, None)?;
            representatives(&perf, &labels, k)
        }
        SetMethod::PcaKMeans(norm) => {
            let labels = kmeans(&m.rows(&train, norm), k, Some(k))?;
            representatives(&perf, &labels, k)
        }
    };
    // Fewer distinct picks than k (a cluster without members, ties, few winners): fill
    // greedily, as every method should deploy the k configurations it was given room for.
    greedy_fill(&perf, &mut set, k);
    Ok(set)
}

/// Log relative performance of every measured configuration on the training inputs.
struct Perf {
    /// `log[input][config]`, unmeasured as `ln(UNMEASURED)`.
    log: Vec<Vec<f64>>,
    /// Configurations measured on some training input.
    candidates: Vec<usize>,
}

impl Perf {
    fn new(m: &Matrix, train: &[usize]) -> Perf {
        let n = m.configs().len();
        let floor = UNMEASURED.ln();
        let log: Vec<Vec<f64>> = train
            .iter()
            .map(|&i| {
                (0..n)
                    .map(|c| m.perf(i, c).map_or(floor, |p| p.max(UNMEASURED).ln()))
                    .collect()
            })
            .collect();
        let candidates = (0..n)
            .filter(|&c| train.iter().any(|&i| m.get(i, c).is_some()))
            .collect();
        Perf { log, candidates }
    }

    /// The configuration not in `taken` with the best summed log performance over `rows`.
    fn best_over(&self, rows: &[usize], taken: &[usize]) -> Option<usize> {
        self.candidates
            .iter()
            .filter(|c| !taken.contains(c))
            .map(|&c| (c, rows.iter().map(|&r| self.log[r][c]).sum::<f64>()))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c)
    }
}

fn top_n(m: &Matrix, train: &[usize], perf: &Perf, k: usize) -> Vec<usize> {
    let mut wins = vec![0usize; m.configs().len()];
    for &i in train {
        if let Some((c, _)) = m.best(i) {
            wins[c] += 1;
        }
    }
    let all: Vec<usize> = (0..perf.log.len()).collect();
    let total = |c: usize| all.iter().map(|&r| perf.log[r][c]).sum::<f64>();
    let mut winners: Vec<usize> = (0..wins.len()).filter(|&c| wins[c] > 0).collect();
    // Most wins first; ties to the better overall performance.
    winners.sort_by(|&a, &b| wins[b].cmp(&wins[a]).then(total(b).total_cmp(&total(a))));
    winners.truncate(k);
    winners
}

/// Cluster labels of the rows: k-means (k-means++, 10 runs, linfa's fixed seed), after
/// PCA to `pca` dimensions if given.
fn kmeans(rows: &[Vec<f64>], k: usize, pca: Option<usize>) -> Result<Vec<usize>> {
    let (n, d) = (rows.len(), rows.first().map_or(0, Vec::len));
    let k = k.min(n);
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    let data = Array2::from_shape_vec((n, d), flat).map_err(|e| Error::Select(e.to_string()))?;
    let data = match pca {
        // A projection on no component (linfa's PCA may keep none) clusters nothing.
        Some(dims) => Some(project(data.clone(), dims)?)
            .filter(|p| p.ncols() > 0)
            .unwrap_or(data),
        None => data,
    };
    if data.ncols() == 0 || n == 0 {
        return Err(Error::Select("k-means of no rows or no columns".into()));
    }
    let ds = DatasetBase::from(data);
    let model = KMeans::params(k)
        .max_n_iterations(300)
        .tolerance(1e-6)
        .fit(&ds)
        .map_err(|e| Error::Select(format!("k-means: {e}")))?;
    Ok(model.predict(ds.records()).to_vec())
}

/// The rows projected on their first `dims` principal components (fewer where there are
/// too few rows or columns for `dims`; unchanged for a single row or column, and where
/// linfa's eigen-solver fails).
fn project(data: Array2<f64>, dims: usize) -> Result<Array2<f64>> {
    let (n, d) = data.dim();
    // PCA needs more features than dimensions, and at least two samples.
    if n < 2 || d < 2 {
        return Ok(data);
    }
    let dims = dims.min(d - 1).min(n - 1).max(1);
    // linfa's LOBPCG panics ("NaN values in array") on some exactly degenerate matrices,
    // e.g. one-hot rows after a cutoff: k-means then clusters the rows unprojected
    // rather than the whole choice failing.
    let fitted =
        std::panic::catch_unwind(|| Pca::params(dims).fit(&DatasetBase::from(data.clone())));
    let Ok(fitted) = fitted else {
        return Ok(data);
    };
    let model = fitted.map_err(|e| Error::Select(format!("pca: {e}")))?;
    // On a bare array, linfa's `predict` returns the projection (on a dataset it would
    // return the dataset, its records unchanged, with the projection as targets).
    Ok(model.predict(&data))
}

/// One configuration per cluster: the best geometric mean over its members, distinct.
fn representatives(perf: &Perf, labels: &[usize], k: usize) -> Vec<usize> {
    let mut clusters: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (row, &l) in labels.iter().enumerate() {
        if let Some(c) = clusters.get_mut(l) {
            c.push(row);
        }
    }
    // Larger clusters pick first: they weigh more in the geometric mean.
    clusters.sort_by_key(|c| std::cmp::Reverse(c.len()));
    let mut set = Vec::new();
    for members in clusters.iter().filter(|c| !c.is_empty()) {
        if let Some(c) = perf.best_over(members, &set) {
            set.push(c);
        }
    }
    set
}

/// Adds configurations to `set` until it has `k`, each the one that raises the summed log
/// of the best chosen performance over the training inputs most.
fn greedy_fill(perf: &Perf, set: &mut Vec<usize>, k: usize) {
    let floor = UNMEASURED.ln();
    let mut best: Vec<f64> = perf
        .log
        .iter()
        .map(|row| set.iter().map(|&c| row[c]).fold(floor, f64::max))
        .collect();
    while set.len() < k {
        let pick = perf
            .candidates
            .iter()
            .filter(|c| !set.contains(c))
            .map(|&c| {
                let gain: f64 = perf
                    .log
                    .iter()
                    .zip(&best)
                    .map(|(row, b)| (row[c] - b).max(0.0))
                    .sum();
                (c, gain)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((c, _)) = pick else { break };
        for (row, b) in perf.log.iter().zip(best.iter_mut()) {
            *b = b.max(row[c]);
        }
        set.push(c);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::matrix::{best_in, score, Input};

    /// A bug: on one-hot rows (every input has one configuration within 90% of its best;
    /// groups of 10 inputs share it), PCA after the cutoff made linfa's eigen-solver panic
    /// inside `choose`.
    /// Was: rows that are all alike (every input with the same relative performance)
    /// left linfa's PCA no component, and k-means on zero columns panicked in linfa-nn
    /// (`EmptyInput`).
    #[test]
    fn pca_of_identical_rows_does_not_panic() {
        for rows in [
            vec![vec![1.0, 0.5, 0.25]; 5],
            vec![vec![0.0, 0.0]; 3],
            vec![vec![1.0]; 4],
        ] {
            for k in [1, 2, 4] {
                let labels = kmeans(&rows, k, Some(k));
                assert!(labels.is_ok_and(|l| l.len() == rows.len()), "{rows:?} {k}");
            }
        }
    }

    #[test]
    fn pca_on_one_hot_rows_does_not_panic() {
        let m = crate::select::nested::tests::staircase();
        // 32 of the first 40 inputs (one fold of a 5-fold split left out).
        let train = [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 19, 20, 21, 22, 25, 26, 27, 28,
            29, 30, 32, 34, 35, 37, 38, 39,
        ];
        for norm in Normalisation::ALL {
            let set = choose(&m, &train, 4, SetMethod::PcaKMeans(norm)).unwrap();
            assert_eq!(set.len(), 4, "{norm:?}");
        }
    }

    /// Two kinds of inputs: small ones, fastest with configurations 0..4 (one of which
    /// wins each), and large ones, where configuration 5 is the only good one.
    fn two_kinds() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..6 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for i in 0..20 {
            let n = if i < 16 { 10 + i } else { 1000 + i };
            let inp = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![f64::from(n as u32)],
                groups: vec![],
            });
            for c in 0..6usize {
                let cost = if i < 16 {
                    if c == i % 4 {
                        1.0
                    } else if c < 4 {
                        1.05
                    } else {
                        4.0
                    }
                } else if c == 5 {
                    1.0
                } else {
                    3.0
                };
                m.set(inp, c, cost).unwrap();
            }
        }
        m
    }

    #[test]
    fn top_n_misses_what_clustering_and_greedy_cover() {
        let m = two_kinds();
        let all: Vec<usize> = (0..20).collect();
        let top = choose(&m, &all, 2, SetMethod::TopN).unwrap();
        // Configurations 0..4 win 4 small inputs each; 5 wins 4 large ones: a tie broken
        // by overall performance, which the small ones dominate.
        let s = |set: &[usize]| score(&m, &all, |i| best_in(&m, i, set)).geomean;
        for method in [
            SetMethod::Greedy,
            SetMethod::KMeans(Normalisation::Standard),
            SetMethod::PcaKMeans(Normalisation::Standard),
            SetMethod::KMeans(Normalisation::Sigmoid),
        ] {
            let set = choose(&m, &all, 2, method).unwrap();
            assert_eq!(set.len(), 2, "{method:?}");
            assert!(set.contains(&5), "{method:?} chose {set:?}");
            assert!(s(&set) >= s(&top), "{method:?}: {set:?} against {top:?}");
        }
        assert_eq!(choose(&m, &all, 6, SetMethod::TopN).unwrap().len(), 6);
        assert_eq!(choose(&m, &all, 9, SetMethod::Greedy).unwrap().len(), 6);
    }

    /// PCA + k-means clusters the projection, not the rows themselves (it once clustered
    /// the rows: linfa's `predict` on a dataset keeps its records and puts the projection
    /// in its targets).
    #[test]
    fn pca_projects_on_the_leading_components() {
        // Points along the direction (1, 1, 1, 1), with little noise across it.
        let rows: Vec<f64> = (0..12)
            .flat_map(|i| {
                let t = f64::from(i);
                let e = if i % 2 == 0 { 0.01 } else { -0.01 };
                [t, t + e, t - e, t]
            })
            .collect();
        let data = Array2::from_shape_vec((12, 4), rows).unwrap();
        let p = project(data, 1).unwrap();
        assert_eq!(p.dim(), (12, 1));
        // The one component keeps the spread along the line: 0..11 scaled by 2 = |(1,1,1,1)|.
        let span = p.column(0).iter().fold(0.0f64, |a, &x| a.max(x))
            - p.column(0).iter().fold(0.0f64, |a, &x| a.min(x));
        assert!((span - 22.0).abs() < 0.1, "span {span}");
        assert_eq!(project(Array2::zeros((1, 4)), 2).unwrap().dim(), (1, 4));
    }

    #[test]
    fn no_data_is_an_error() {
        let m = two_kinds();
        assert!(choose(&m, &[], 2, SetMethod::Greedy).is_err());
        assert!(choose(&m, &[0], 0, SetMethod::Greedy).is_err());
        // One input, more clusters than inputs: still a set.
        assert_eq!(
            choose(&m, &[0], 3, SetMethod::PcaKMeans(Normalisation::Standard))
                .unwrap()
                .len(),
            3
        );
    }
}
