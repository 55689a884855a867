//! Selecting one of the deployed configurations for an input at run time (Lawson,
//! section 5): a decision tree over the input features (CART, with depth and leaf-size
//! limits; see [`train_tree`] for why not linfa's), 1-nearest-neighbour on the sizes, and
//! the nearest recorded input of `Database::choose` restricted to the set.
//!
//! Trees are trained on `log2(1 + x)` of each feature, so that a split falls halfway
//! between two sizes on a log scale (sizes scale multiplicatively), and are kept with
//! thresholds in the features' own units, ready to compile to nested comparisons
//! ([`Selector::rust`](super::deploy::Selector::rust)).

use serde::{Deserialize, Serialize};

use super::cost::{best_position, log_shares, train_cost_tree};
use super::matrix::{best_in, Matrix};
use super::model::{train_models, Basis, Models};
use crate::results::database::key_distance;
use crate::{Error, Result};

/// A decision tree over input features, leaves naming a position in the deployed set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// Run the set's configuration at this position.
    Leaf {
        /// Position in the set.
        choice: usize,
    },
    /// Go `below` when `features[feature] <= threshold`, else `above`.
    Split {
        /// The feature's index.
        feature: usize,
        /// The threshold, in the feature's units.
        threshold: f64,
        /// Where inputs at or below the threshold go.
        below: Box<Node>,
        /// Where the others go.
        above: Box<Node>,
    },
    /// Run the set position whose model predicts the best share ([`Models`]; select8).
    Models(Box<Models>),
}

impl Node {
    /// A split on `feature` at `t` (in the trees' scaled units, `log2(1 + x)`) between the
    /// neighbouring training values `(x, y)` (in the feature's units) over two grown
    /// subtrees; one leaf where both sides chose the same configuration.
    pub(super) fn joined(
        feature: usize,
        t: f64,
        (x, y): (f64, f64),
        below: Node,
        above: Node,
    ) -> Node {
        if let (Node::Leaf { choice: a }, Node::Leaf { choice: b }) = (&below, &above) {
            if a == b {
                return below;
            }
        }
        Node::Split {
            feature,
            // Back in the feature's units: `log2(1 + x) <= t` is `x <= 2^t - 1`, kept
            // between the neighbours (the round trip may cross one of two close values).
            threshold: (t.exp2() - 1.0).min(float_below(y)).max(x),
            below: Box::new(below),
            above: Box::new(above),
        }
    }

    /// The set position for an input with these features.
    pub fn choose(&self, features: &[f64]) -> usize {
        let mut node = self;
        loop {
            match node {
                Node::Leaf { choice } => return *choice,
                Node::Split {
                    feature,
                    threshold,
                    below,
                    above,
                } => {
                    let x = features.get(*feature).copied().unwrap_or(0.0);
                    node = if x <= *threshold { below } else { above };
                }
                Node::Models(models) => return models.choose(features),
            }
        }
    }

    /// The leaf an input with these features reaches, numbered from 0 in the order the
    /// generated source lists them (each split's `below` side first); a [`Node::Models`]
    /// is one leaf.
    pub fn leaf(&self, features: &[f64]) -> usize {
        let (mut node, mut first) = (self, 0);
        loop {
            match node {
                Node::Leaf { .. } | Node::Models(_) => return first,
                Node::Split {
                    feature,
                    threshold,
                    below,
                    above,
                } => {
                    let x = features.get(*feature).copied().unwrap_or(0.0);
                    if x <= *threshold {
                        node = below;
                    } else {
                        first += below.leaves();
                        node = above;
                    }
                }
            }
        }
    }

    /// How many leaves [`Node::leaf`] numbers.
    pub fn leaves(&self) -> usize {
        match self {
            Node::Leaf { .. } | Node::Models(_) => 1,
            Node::Split { below, above, .. } => below.leaves() + above.leaves(),
        }
    }

    /// Its depth (a leaf alone is 0) and number of leaves.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Node::Leaf { .. } => (0, 1),
            // One leaf per configuration it may pick.
            Node::Models(models) => (0, models.models.len()),
            Node::Split { below, above, .. } => {
                let (db, lb) = below.shape();
                let (da, la) = above.shape();
                (1 + db.max(da), lb + la)
            }
        }
    }
}

/// Limits of a decision tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TreeLimits {
    /// The deepest a leaf may be (`None`: no limit).
    pub max_depth: Option<usize>,
    /// The fewest training inputs a leaf holds.
    pub min_leaf: usize,
}

impl TreeLimits {
    /// The paper's tree A: no depth limit, leaves of one input.
    pub const A: TreeLimits = TreeLimits {
        max_depth: None,
        min_leaf: 1,
    };
    /// The paper's tree B: depth 6, at least 3 inputs per leaf.
    pub const B: TreeLimits = TreeLimits {
        max_depth: Some(6),
        min_leaf: 3,
    };
    /// The paper's tree C: depth 3, at least 4 inputs per leaf.
    pub const C: TreeLimits = TreeLimits {
        max_depth: Some(3),
        min_leaf: 4,
    };
}

/// How an input is mapped to a configuration of the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Classifier {
    /// A decision tree over the features.
    Tree(TreeLimits),
    /// A cost-sensitive decision tree over the features ([`Objective::GeoMean`](super::cost::Objective::GeoMean)).
    CostTree(TreeLimits),
    /// The label of the nearest training input, on standardised `log2(1 + x)` features.
    NearestNeighbour,
    /// A model per configuration of its share of the best ([`train_models`]; select8).
    Model(Basis),
    /// The set position with the best summed log share over the `k` nearest training
    /// inputs (their whole rows of the set, not their labels; as 1-NN measures distance;
    /// select8). With one neighbour it is 1-NN; a table row only: the generated dispatch
    /// would scan every training input.
    CostNeighbours(usize),
    /// The label of the nearest training input by the input key's distance
    /// ([`key_distance`]: what `Database::choose` falls back to), restricted to the set.
    NearestInput,
}

impl Classifier {
    /// A name for tables.
    pub fn name(&self) -> String {
        match *self {
            Classifier::Tree(TreeLimits::A) => "tree A".into(),
            Classifier::Tree(TreeLimits::B) => "tree B".into(),
            Classifier::Tree(TreeLimits::C) => "tree C".into(),
            Classifier::Tree(l) => format!(
                "tree (depth {}, leaf {})",
                l.max_depth.map_or("any".into(), |d| d.to_string()),
                l.min_leaf
            ),
            Classifier::CostTree(l) => format!("cost {}", Classifier::Tree(l).name()),
            Classifier::Model(b) => b.name().into(),
            Classifier::NearestNeighbour => "1-NN".into(),
            Classifier::CostNeighbours(k) => format!("cost {k}-NN"),
            Classifier::NearestInput => "nearest input".into(),
        }
    }

    /// The classifiers of the tables.
    pub const ALL: [Classifier; 5] = [
        Classifier::Tree(TreeLimits::A),
        Classifier::Tree(TreeLimits::B),
        Classifier::Tree(TreeLimits::C),
        Classifier::NearestNeighbour,
        Classifier::NearestInput,
    ];

    /// The per-configuration models (select8).
    pub const MODELS: [Classifier; 2] = [
        Classifier::Model(Basis::Linear),
        Classifier::Model(Basis::Quadratic),
    ];

    /// Cost-sensitive nearest neighbours (select8; 3 neighbours, fixed a priori).
    pub const COST_NEIGHBOURS: Classifier = Classifier::CostNeighbours(3);

    /// The cost-sensitive trees with the paper's limits A, B and C.
    pub const COST: [Classifier; 3] = [
        Classifier::CostTree(TreeLimits::A),
        Classifier::CostTree(TreeLimits::B),
        Classifier::CostTree(TreeLimits::C),
    ];
}

/// The largest float below a positive `y` (`f64::next_down`, newer than the MSRV); `y`
/// itself otherwise.
fn float_below(y: f64) -> f64 {
    if y > 0.0 && y.is_finite() {
        f64::from_bits(y.to_bits() - 1)
    } else {
        y
    }
}

/// The threshold between neighbouring scaled values `x < y`: halfway, or `x` where halfway
/// rounds to `y` (neighbouring floats), so that `<= t` always parts them. (Halfway that
/// rounded to `y` sent both sides one way and grew the same node until the stack ran out.)
pub(super) fn midpoint(x: f64, y: f64) -> f64 {
    let t = x + (y - x) / 2.0;
    if t < y {
        t
    } else {
        x
    }
}

/// `log2(1 + x)`, the scale trees and 1-NN see features on (0 and 1 flags stay 0 and 1).
pub(super) fn scaled(x: f64) -> f64 {
    (1.0 + x.max(0.0)).log2()
}

/// The training inputs that some configuration of `set` was measured on, with the set
/// position of their best.
fn labelled(m: &Matrix, train: &[usize], set: &[usize]) -> Vec<(usize, usize)> {
    train
        .iter()
        .filter_map(|&i| {
            let best = best_in(m, i, set)?;
            set.iter().position(|&c| c == best).map(|p| (i, p))
        })
        .collect()
}

/// Trains a decision tree that maps the features of the training inputs to the set
/// position of their best configuration: CART with Gini impurity, splits halfway between
/// neighbouring values (on the `log2(1 + x)` scale), leaves of at least `min_leaf` inputs,
/// ties to the lower set position.
///
/// Written here rather than taken from linfa-trees (0.8.1): in a subtree, linfa passes
/// over a split whenever the next value in the whole data set's order, which may belong to
/// an input outside the subtree, equals the current one, so on sizes that repeat across
/// inputs (GEMM shapes do) an unlimited tree leaves training inputs misclassified that one
/// split separates (`tests/select_dispatch.rs` failed with it).
///
/// # Errors
/// [`Error::Select`] when no training input has a measured configuration of the set.
pub fn train_tree(m: &Matrix, train: &[usize], set: &[usize], limits: TreeLimits) -> Result<Node> {
    let data = labelled(m, train, set);
    if data.is_empty() {
        return Err(Error::Select(
            "no training input has a measured configuration of the set".into(),
        ));
    }
    let samples: Vec<(Vec<f64>, usize)> = data
        .iter()
        .map(|&(i, l)| {
            (
                m.inputs()[i].features.iter().map(|&x| scaled(x)).collect(),
                l,
            )
        })
        .collect();
    let raw: Vec<&[f64]> = data
        .iter()
        .map(|&(i, _)| m.inputs()[i].features.as_slice())
        .collect();
    let grower = Grower {
        samples: &samples,
        raw: &raw,
        classes: set.len(),
        limits,
    };
    Ok(grower.grow((0..samples.len()).collect(), 0))
}

struct Grower<'a> {
    samples: &'a [(Vec<f64>, usize)],
    /// The samples' features in their own units.
    raw: &'a [&'a [f64]],
    classes: usize,
    limits: TreeLimits,
}

/// Gini impurity of class counts, times their total.
fn gini(counts: &[usize], total: usize) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let t = total as f64;
    t - counts.iter().map(|&c| (c as f64) * (c as f64)).sum::<f64>() / t
}

impl Grower<'_> {
    fn grow(&self, idx: Vec<usize>, depth: usize) -> Node {
        let mut counts = vec![0usize; self.classes];
        for &i in &idx {
            counts[self.samples[i].1] += 1;
        }
        // The most frequent label; ties to the lower position.
        let majority = (0..self.classes)
            .max_by(|&a, &b| counts[a].cmp(&counts[b]).then(b.cmp(&a)))
            .unwrap_or(0);
        let leaf = Node::Leaf { choice: majority };
        let min_leaf = self.limits.min_leaf.max(1);
        if counts[majority] == idx.len()
            || self.limits.max_depth.is_some_and(|d| depth >= d)
            || idx.len() < 2 * min_leaf
        {
            return leaf;
        }
        let parent = gini(&counts, idx.len());
        let mut best: Option<(f64, usize, f64, (f64, f64))> = None;
        let features = self.samples[idx[0]].0.len();
        for f in 0..features {
            let mut order = idx.clone();
            order.sort_by(|&a, &b| self.samples[a].0[f].total_cmp(&self.samples[b].0[f]));
            let mut left = vec![0usize; self.classes];
            let mut right = counts.clone();
            for (n, pair) in order.windows(2).enumerate() {
                let label = self.samples[pair[0]].1;
                left[label] += 1;
                right[label] -= 1;
                let (x, y) = (self.samples[pair[0]].0[f], self.samples[pair[1]].0[f]);
                let (nl, nr) = (n + 1, idx.len() - n - 1);
                if x == y || nl < min_leaf || nr < min_leaf {
                    continue;
                }
                let impurity = gini(&left, nl) + gini(&right, nr);
                if best.is_none_or(|(b, ..)| impurity < b - 1e-12) {
                    let raw = (self.raw[pair[0]][f], self.raw[pair[1]][f]);
                    best = Some((impurity, f, midpoint(x, y), raw));
                }
            }
        }
        let Some((_, feature, t, raw)) = best.filter(|(imp, ..)| *imp < parent - 1e-12) else {
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

/// A trained classifier, ready to choose set positions for inputs of `m`.
pub enum Trained<'a> {
    /// A decision tree.
    Tree(Node),
    /// Training inputs with their labels, and the features' mean and spread.
    Neighbours {
        /// The matrix.
        m: &'a Matrix,
        /// (input, label).
        data: Vec<(usize, usize)>,
        /// Per feature: mean and standard deviation of the scaled values.
        scale: Vec<(f64, f64)>,
    },
    /// Training inputs with their log shares of each set position
    /// ([`Classifier::CostNeighbours`]), the features' mean and spread, and how many
    /// neighbours vote.
    CostNeighbours {
        /// The matrix.
        m: &'a Matrix,
        /// (input, log share of each set position).
        data: Vec<(usize, Vec<f64>)>,
        /// Per feature: mean and standard deviation of the scaled values.
        scale: Vec<(f64, f64)>,
        /// Neighbours summed.
        k: usize,
    },
    /// Training inputs with their labels, compared by input key.
    Keys {
        /// The matrix.
        m: &'a Matrix,
        /// (input, label).
        data: Vec<(usize, usize)>,
    },
}

impl Trained<'_> {
    /// The set position chosen for an input of the matrix.
    pub fn choose(&self, features: &[f64], key: &str) -> Option<usize> {
        match self {
            Trained::Tree(t) => Some(t.choose(features)),
            Trained::Neighbours { m, data, scale } => {
                let q = standard(features, scale);
                data.iter()
                    .map(|&(i, l)| (distance(&standard(&m.inputs()[i].features, scale), &q), l))
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, l)| l)
            }
            Trained::CostNeighbours { m, data, scale, k } => {
                let q = standard(features, scale);
                let mut near: Vec<(f64, &Vec<f64>)> = data
                    .iter()
                    .map(|(i, s)| (distance(&standard(&m.inputs()[*i].features, scale), &q), s))
                    .collect();
                // Stable: among equal distances the earlier training input.
                near.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut sums = vec![0.0; near.first()?.1.len()];
                for (_, s) in near.iter().take((*k).max(1)) {
                    for (t, v) in sums.iter_mut().zip(s.iter()) {
                        *t += v;
                    }
                }
                Some(best_position(&sums).0)
            }
            Trained::Keys { m, data } => data
                .iter()
                .filter_map(|&(i, l)| key_distance(key, &m.inputs()[i].key).map(|d| (d, l)))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, l)| l),
        }
    }
}

/// Standardised `log2(1 + x)` features.
fn standard(f: &[f64], scale: &[(f64, f64)]) -> Vec<f64> {
    f.iter()
        .zip(scale)
        .map(|(&x, &(mu, sd))| (scaled(x) - mu) / sd)
        .collect()
}

fn distance(p: &[f64], q: &[f64]) -> f64 {
    p.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum()
}

/// Per feature of `m`: mean and standard deviation of the scaled values of `inputs`
/// (a constant feature's spread is infinite: it adds nothing to any distance).
fn spread(m: &Matrix, inputs: impl Iterator<Item = usize> + Clone) -> Vec<(f64, f64)> {
    (0..m.features.len())
        .map(|f| {
            let v: Vec<f64> = inputs
                .clone()
                .map(|i| scaled(m.inputs()[i].features[f]))
                .collect();
            let n = v.len().max(1) as f64;
            let mu = v.iter().sum::<f64>() / n;
            let var = v.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / n;
            (mu, if var > 0.0 { var.sqrt() } else { f64::INFINITY })
        })
        .collect()
}

/// Trains `classifier` on the training inputs of `m` for the deployed `set`.
///
/// # Errors
/// As [`train_tree`].
pub fn train<'a>(
    m: &'a Matrix,
    train: &[usize],
    set: &[usize],
    classifier: Classifier,
) -> Result<Trained<'a>> {
    Ok(match classifier {
        Classifier::Tree(limits) => Trained::Tree(train_tree(m, train, set, limits)?),
        Classifier::CostTree(limits) => Trained::Tree(train_cost_tree(m, train, set, limits)?),
        Classifier::Model(basis) => {
            Trained::Tree(Node::Models(Box::new(train_models(m, train, set, basis)?)))
        }
        Classifier::NearestNeighbour => {
            let data = labelled(m, train, set);
            let scale = spread(m, data.iter().map(|&(i, _)| i));
            Trained::Neighbours { m, data, scale }
        }
        Classifier::CostNeighbours(k) => {
            let data: Vec<(usize, Vec<f64>)> = train
                .iter()
                .filter_map(|&i| Some((i, log_shares(m, i, set)?)))
                .collect();
            let scale = spread(m, data.iter().map(|(i, _)| *i));
            Trained::CostNeighbours { m, data, scale, k }
        }
        Classifier::NearestInput => Trained::Keys {
            m,
            data: labelled(m, train, set),
        },
    })
}

#[cfg(test)]
pub(in crate::select) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::matrix::Input;

    /// Configuration 0 is best below n = 100, 1 from there to 10,000, 2 above.
    fn bands() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into(), "b".into()]);
        for c in 0..3 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for e in 0..40 {
            let n = (2f64.powf(f64::from(e) * 0.5)).round();
            let i = m.add_input(Input {
                key: format!("n={n},b=1"),
                features: vec![n, 1.0],
                groups: vec![],
            });
            let best = if n < 100.0 {
                0
            } else if n < 10_000.0 {
                1
            } else {
                2
            };
            for c in 0..3 {
                m.set(i, c, if c == best { 1.0 } else { 2.0 }).unwrap();
            }
        }
        m
    }

    #[test]
    fn trees_split_on_sizes_and_extrapolate() {
        let m = bands();
        let all: Vec<usize> = (0..40).collect();
        for limits in [TreeLimits::A, TreeLimits::B, TreeLimits::C] {
            let t = train_tree(&m, &all, &[0, 1, 2], limits).unwrap();
            assert_eq!(t.shape(), (2, 3), "{t:?}");
            assert_eq!(t.choose(&[50.0, 1.0]), 0);
            assert_eq!(t.choose(&[5000.0, 1.0]), 1);
            // Far outside the training range: still a configuration of the set.
            assert_eq!(t.choose(&[1e12, 1.0]), 2);
            assert_eq!(t.choose(&[0.0, 0.0]), 0);
        }
        // Set positions, not configuration indices.
        let t = train_tree(&m, &all, &[2, 0], TreeLimits::B).unwrap();
        assert_eq!(t.choose(&[1e9, 1.0]), 0);
        assert_eq!(t.choose(&[3.0, 1.0]), 1);
    }

    #[test]
    fn neighbours_and_keys_agree_on_clear_cases() {
        let m = bands();
        let even: Vec<usize> = (0..40).step_by(2).collect();
        for c in [Classifier::NearestNeighbour, Classifier::NearestInput] {
            let t = train(&m, &even, &[0, 1, 2], c).unwrap();
            assert_eq!(t.choose(&[20.0, 1.0], "n=20,b=1"), Some(0), "{c:?}");
            assert_eq!(t.choose(&[1e6, 1.0], "n=1000000,b=1"), Some(2), "{c:?}");
        }
    }

    #[test]
    fn cost_neighbours_weigh_the_neighbours_rows_not_their_labels() {
        // The nearest input (n = 10) is 2% faster with configuration 1; the next two
        // (n = 12, 14) three times slower with it: 1-NN runs 1, the cost 3-NN runs 0.
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..2 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for (n, (a, b)) in [(10.0, (1.02, 1.0)), (12.0, (1.0, 3.0)), (14.0, (1.0, 3.0))] {
            let i = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![n],
                groups: vec![],
            });
            m.set(i, 0, a).unwrap();
            m.set(i, 1, b).unwrap();
        }
        let all = [0, 1, 2];
        let one = train(&m, &all, &[0, 1], Classifier::NearestNeighbour).unwrap();
        assert_eq!(one.choose(&[9.0], "n=9"), Some(1));
        let three = train(&m, &all, &[0, 1], Classifier::COST_NEIGHBOURS).unwrap();
        assert_eq!(three.choose(&[9.0], "n=9"), Some(0));
        // One neighbour: its own best, as 1-NN.
        let cost1 = train(&m, &all, &[0, 1], Classifier::CostNeighbours(1)).unwrap();
        assert_eq!(cost1.choose(&[9.0], "n=9"), Some(1));
        assert_eq!(Classifier::COST_NEIGHBOURS.name(), "cost 3-NN");
    }

    /// Was (linfa-trees 0.8.1): on a grid of sizes, whose values repeat across inputs, the
    /// unlimited tree left `m=16, n=8192` with the label of the other `m=16` inputs.
    #[test]
    fn unlimited_trees_fit_grids_of_repeated_sizes() {
        let mut m = Matrix::new("t", "d", vec!["m".into(), "n".into()]);
        for c in 0..2 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        let sizes = [16.0, 128.0, 1024.0, 8192.0];
        for &a in &sizes {
            for &b in &sizes {
                let i = m.add_input(Input {
                    key: format!("m={a},n={b}"),
                    features: vec![a, b],
                    groups: vec![],
                });
                let best = usize::from(a * b > 100_000.0);
                for c in 0..2 {
                    m.set(i, c, if c == best { 1.0 } else { 2.0 }).unwrap();
                }
            }
        }
        let all: Vec<usize> = (0..16).collect();
        let t = train_tree(&m, &all, &[0, 1], TreeLimits::A).unwrap();
        for (i, input) in m.inputs().iter().enumerate() {
            assert_eq!(
                Some(t.choose(&input.features)),
                m.best(i).map(|b| b.0),
                "{}",
                input.key
            );
        }
    }

    #[test]
    fn one_label_is_one_leaf() {
        let m = bands();
        let t = train_tree(&m, &[0, 1, 2], &[0, 1], TreeLimits::A).unwrap();
        assert_eq!(t, Node::Leaf { choice: 0 });
        assert!(train_tree(&m, &[], &[0], TreeLimits::A).is_err());
    }

    /// Two inputs whose scaled sizes are neighbouring floats (e.g. a derived ratio, 64 /
    /// 3136 against 128 / 6272, computed two ways), each best with another configuration.
    pub(in crate::select) fn neighbours() -> Matrix {
        // `scaled(a)` odd in its last bit: halfway to the next float rounds up, to it.
        let (a, b) = (0..1000)
            .map(|d| 1e15 + f64::from(d))
            .find_map(|a| {
                let s = scaled(a).to_bits();
                let b = (1..1000)
                    .map(|d| a + f64::from(d))
                    .find(|&b| scaled(b).to_bits() == s + 1)?;
                (s % 2 == 1).then_some((a, b))
            })
            .unwrap();
        let mut m = Matrix::new("t", "d", vec!["x".into()]);
        for c in 0..2 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for (n, x) in [a, b].into_iter().enumerate() {
            let i = m.add_input(Input {
                key: format!("x={x}"),
                features: vec![x],
                groups: vec![],
            });
            m.set(i, n, 1.0).unwrap();
            m.set(i, 1 - n, 2.0).unwrap();
        }
        m
    }

    #[test]
    fn a_split_between_neighbouring_floats_separates_them() {
        // Halfway between two neighbouring floats rounds to one of them: the split sent
        // both inputs one way and grew the same node again until the stack overflowed.
        let m = neighbours();
        let t = train_tree(&m, &[0, 1], &[0, 1], TreeLimits::A).unwrap();
        assert_eq!(t.choose(&m.inputs()[0].features), 0);
        assert_eq!(t.choose(&m.inputs()[1].features), 1);
    }
}
