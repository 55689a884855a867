//! Cost-sensitive decision trees: each leaf runs the configuration of the set with the best
//! geometric mean over its training inputs, and each split is the one that wins the most
//! performance, rather than the one that best separates the inputs' argmax labels (the
//! paper's CART trees, [`train_tree`]). Where two configurations are near-equal on a
//! group of inputs, a label tree still spends splits separating them, and a leaf may run
//! a configuration that loses badly on a minority of its inputs; this tree weighs each
//! input's loss instead. linfa's trees classify labels only, hence this file.
//!
//! The trees are [`Node`]s like [`train_tree`]'s, so they compile to the same nested
//! comparisons.

use serde::{Deserialize, Serialize};

use super::classify::{midpoint, scaled, train_tree, Node, TreeLimits};
use super::matrix::{best_in, Matrix};
use super::model::{train_models, Basis};
use crate::{Error, Result};

/// What a tree's splits optimise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Classify each training input's best of the set (CART, Gini impurity): the paper's
    /// trees ([`train_tree`]).
    #[default]
    Label,
    /// The geometric mean, over the training inputs of each leaf, of the leaf's one
    /// configuration's share of the input's best ([`train_cost_tree`]): a split pays for
    /// the performance it wins, not for separating labels whose configurations are
    /// near-equal on those inputs.
    GeoMean,
    /// No tree: a model per configuration of its share of the input's best, fitted on
    /// every training cell of the set, and the best predicted runs
    /// ([`Models`](super::model::Models); select8).
    /// The tree's limits are not read.
    Model(Basis),
}

/// [`train_tree`] or [`train_cost_tree`], by `objective`.
///
/// # Errors
/// As theirs.
pub fn train_tree_for(
    m: &Matrix,
    train: &[usize],
    set: &[usize],
    limits: TreeLimits,
    objective: Objective,
) -> Result<Node> {
    match objective {
        Objective::Label => train_tree(m, train, set, limits),
        Objective::GeoMean => train_cost_tree(m, train, set, limits),
        Objective::Model(basis) => Ok(Node::Models(Box::new(train_models(m, train, set, basis)?))),
    }
}

/// The log share of each set position on input `i`: `ln(best / cost)` against the input's
/// best measured configuration (of all, not only of the set); a position not measured
/// there counts as the input's worst measured (as the nested cross-validation scores an
/// unmeasured pick). `None` when no configuration of the set was measured on `i`.
pub(super) fn log_shares(m: &Matrix, i: usize, set: &[usize]) -> Option<Vec<f64>> {
    best_in(m, i, set)?;
    let (_, best) = m.best(i)?;
    let worst = (0..m.configs().len())
        .filter_map(|c| m.get(i, c))
        .fold(best, f64::max);
    Some(
        set.iter()
            .map(|&c| (best / m.get(i, c).unwrap_or(worst)).ln())
            .collect(),
    )
}

/// The set position with the best geometric mean share of the best over the training
/// inputs (an unmeasured cell counts as the input's worst measured, as in
/// [`train_cost_tree`]): what a selector runs where its tree has no data. Ties to the
/// lower position; `None` when no training input has a measured configuration of the set.
pub fn robust(m: &Matrix, train: &[usize], set: &[usize]) -> Option<usize> {
    summed_log_shares(m, train, set).map(|sums| best_position(&sums).0)
}

/// Each set position's [`log_shares`] summed over the training inputs; `None` when no
/// training input has a measured configuration of the set.
pub(super) fn summed_log_shares(m: &Matrix, train: &[usize], set: &[usize]) -> Option<Vec<f64>> {
    let mut sums = vec![0.0; set.len()];
    let mut any = false;
    for &i in train {
        if let Some(shares) = log_shares(m, i, set) {
            any = true;
            for (s, v) in sums.iter_mut().zip(shares) {
                *s += v;
            }
        }
    }
    any.then_some(sums)
}

/// Trains a cost-sensitive decision tree for the set: each leaf runs the one configuration
/// of the set with the best geometric mean over its training inputs, and each split is
/// the one that raises the sum of the two leaves' log shares most (on the `log2(1 + x)`
/// scale, halfway between neighbouring values, leaves of at least `min_leaf` inputs, ties
/// to the lower set position and the first split found). A node whose split would win
/// nothing stays a leaf. The result is a [`Node`] like [`train_tree`]'s, so it compiles
/// to the same nested comparisons.
///
/// # Errors
/// [`Error::Select`] when no training input has a measured configuration of the set.
pub fn train_cost_tree(
    m: &Matrix,
    train: &[usize],
    set: &[usize],
    limits: TreeLimits,
) -> Result<Node> {
    let kept: Vec<(usize, Vec<f64>)> = train
        .iter()
        .filter_map(|&i| Some((i, log_shares(m, i, set)?)))
        .collect();
    let raw: Vec<&[f64]> = kept
        .iter()
        .map(|(i, _)| m.inputs()[*i].features.as_slice())
        .collect();
    let samples: Vec<(Vec<f64>, Vec<f64>)> = kept
        .into_iter()
        .map(|(i, shares)| {
            let x = m.inputs()[i].features.iter().map(|&x| scaled(x)).collect();
            (x, shares)
        })
        .collect();
    if samples.is_empty() {
        return Err(Error::Select(
            "no training input has a measured configuration of the set".into(),
        ));
    }
    let grower = CostGrower {
        samples: &samples,
        raw: &raw,
        positions: set.len(),
        limits,
    };
    Ok(grower.grow((0..samples.len()).collect(), 0))
}

struct CostGrower<'a> {
    /// (scaled features, log share of each set position).
    samples: &'a [(Vec<f64>, Vec<f64>)],
    /// The samples' features in their own units.
    raw: &'a [&'a [f64]],
    positions: usize,
    limits: TreeLimits,
}

/// The best position of summed log shares and its sum; ties to the lower position.
pub(super) fn best_position(sums: &[f64]) -> (usize, f64) {
    sums.iter()
        .copied()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bp, bv), (p, v)| {
            if v > bv + 1e-12 {
                (p, v)
            } else {
                (bp, bv)
            }
        })
}

impl CostGrower<'_> {
    fn sums(&self, idx: &[usize]) -> Vec<f64> {
        let mut sums = vec![0.0; self.positions];
        for &i in idx {
            for (s, v) in sums.iter_mut().zip(&self.samples[i].1) {
                *s += v;
            }
        }
        sums
    }

    fn grow(&self, idx: Vec<usize>, depth: usize) -> Node {
        let sums = self.sums(&idx);
        let (choice, value) = best_position(&sums);
        let leaf = Node::Leaf { choice };
        let min_leaf = self.limits.min_leaf.max(1);
        if self.limits.max_depth.is_some_and(|d| depth >= d) || idx.len() < 2 * min_leaf {
            return leaf;
        }
        // (gain, feature, threshold on the scaled axis, the neighbours in their units)
        let mut best: Option<(f64, usize, f64, (f64, f64))> = None;
        let features = self.samples[idx[0]].0.len();
        for f in 0..features {
            let mut order = idx.clone();
            order.sort_by(|&a, &b| self.samples[a].0[f].total_cmp(&self.samples[b].0[f]));
            let mut left = vec![0.0; self.positions];
            for (n, pair) in order.windows(2).enumerate() {
                for (s, v) in left.iter_mut().zip(&self.samples[pair[0]].1) {
                    *s += v;
                }
                let (x, y) = (self.samples[pair[0]].0[f], self.samples[pair[1]].0[f]);
                let (nl, nr) = (n + 1, idx.len() - n - 1);
                if x == y || nl < min_leaf || nr < min_leaf {
                    continue;
                }
                let right: Vec<f64> = sums.iter().zip(&left).map(|(a, b)| a - b).collect();
                let gain = best_position(&left).1 + best_position(&right).1 - value;
                if best.is_none_or(|(b, ..)| gain > b + 1e-12) {
                    let raw = (self.raw[pair[0]][f], self.raw[pair[1]][f]);
                    best = Some((gain, f, midpoint(x, y), raw));
                }
            }
        }
        // A split must win something (in summed log shares) to be worth a comparison.
        let Some((_, feature, t, raw)) = best.filter(|(gain, ..)| *gain > 1e-9) else {
            return leaf;
        };
        let (below, above): (Vec<usize>, Vec<usize>) = idx
            .into_iter()
            .partition(|&i| self.samples[i].0[feature] <= t);
        Node::joined(
            feature,
            t,
            raw,
            self.grow(below, depth + 1),
            self.grow(above, depth + 1),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::matrix::Input;

    /// Inputs `n = 0..30` in three groups of ten; `costs(n)` gives each configuration's.
    fn matrix(configs: usize, costs: impl Fn(usize) -> Vec<f64>) -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..configs {
            m.add_config(Named(vec![("C".into(), Value::Int(c as i64))]));
        }
        for n in 0..30 {
            let i = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![n as f64],
                groups: vec![],
            });
            for (c, v) in costs(n).into_iter().enumerate() {
                m.set(i, c, v).unwrap();
            }
        }
        m
    }

    #[test]
    fn a_leaf_runs_the_best_geometric_mean_not_the_most_frequent_label() {
        // B (1) wins 18 inputs by 1%; A (0) wins 12 where B is 3 times slower.
        let m = matrix(2, |n| {
            if n < 18 {
                vec![1.01, 1.0]
            } else {
                vec![1.0, 3.0]
            }
        });
        let all: Vec<usize> = (0..30).collect();
        let one_leaf = TreeLimits {
            max_depth: Some(0),
            min_leaf: 1,
        };
        assert_eq!(
            train_tree(&m, &all, &[0, 1], one_leaf).unwrap(),
            Node::Leaf { choice: 1 }
        );
        assert_eq!(
            train_cost_tree(&m, &all, &[0, 1], one_leaf).unwrap(),
            Node::Leaf { choice: 0 }
        );
        assert_eq!(robust(&m, &all, &[0, 1]), Some(0));
        assert_eq!(robust(&m, &all, &[1, 0]), Some(1), "a position of the set");
    }

    #[test]
    fn a_split_goes_where_the_performance_is() {
        // A and B near-equal below 20 (A wins 0-9, B 10-19), both 5 times slower than C
        // above. One split: a label tree separates A from the rest (the first of two
        // equally pure splits) and runs B above 10, C's inputs included; the cost tree
        // separates C.
        let m = matrix(3, |n| match n {
            0..10 => vec![1.0, 1.01, 5.0],
            10..20 => vec![1.01, 1.0, 5.0],
            _ => vec![5.0, 5.0, 1.0],
        });
        let all: Vec<usize> = (0..30).collect();
        let stump = TreeLimits {
            max_depth: Some(1),
            min_leaf: 1,
        };
        let label = train_tree(&m, &all, &[0, 1, 2], stump).unwrap();
        assert_ne!(label.choose(&[25.0]), 2, "{label:?}");
        let cost = train_cost_tree(&m, &all, &[0, 1, 2], stump).unwrap();
        assert_eq!(cost.choose(&[25.0]), 2, "{cost:?}");
        assert_eq!(cost.choose(&[1e9]), 2);
        assert!(cost.choose(&[5.0]) < 2);
        assert_eq!(cost.shape(), (1, 2));
        // Unlimited, it separates A from B as well: each input its own best.
        let full = train_cost_tree(&m, &all, &[0, 1, 2], TreeLimits::A).unwrap();
        for (i, input) in m.inputs().iter().enumerate() {
            assert_eq!(
                Some(full.choose(&input.features)),
                m.best(i).map(|b| b.0),
                "{}",
                input.key
            );
        }
        assert_eq!(
            train_tree_for(&m, &all, &[0, 1, 2], stump, Objective::GeoMean).unwrap(),
            cost
        );
    }

    #[test]
    fn an_unmeasured_cell_counts_as_the_worst_and_no_data_is_an_error() {
        // B is unmeasured on the inputs where it would lose: as the worst (A's 1 against
        // C's 9), it still loses there.
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..3 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for n in 0..10 {
            let i = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![f64::from(n)],
                groups: vec![],
            });
            m.set(i, 0, 1.0).unwrap();
            m.set(i, 2, 9.0).unwrap();
            if n < 3 {
                m.set(i, 1, 0.9).unwrap();
            }
        }
        let all: Vec<usize> = (0..10).collect();
        let leaf = TreeLimits {
            max_depth: Some(0),
            min_leaf: 1,
        };
        assert_eq!(
            train_cost_tree(&m, &all, &[0, 1], leaf).unwrap(),
            Node::Leaf { choice: 0 }
        );
        // No input has the set measured.
        let m2 = m.filtered(|_, c| c == 2);
        assert!(train_cost_tree(&m2, &all, &[0, 1], leaf).is_err());
        assert_eq!(robust(&m2, &all, &[0, 1]), None);
    }

    #[test]
    fn a_cost_split_between_neighbouring_floats_separates_them() {
        // As `classify`'s: halfway between neighbouring floats must not send both one way.
        let m = crate::select::classify::tests::neighbours();
        let t = train_cost_tree(&m, &[0, 1], &[0, 1], TreeLimits::A).unwrap();
        assert_eq!(t.choose(&m.inputs()[0].features), 0);
        assert_eq!(t.choose(&m.inputs()[1].features), 1);
    }
}
