//! A small regression forest: the surrogate model of [`super::Surrogate`].
//!
//! Written here rather than taken from a crate because the search needs what the crates'
//! forests do not expose: the spread of the trees' predictions (the model's uncertainty,
//! which expected improvement needs) and a fit on a few hundred rows in well under a
//! millisecond, repeated after every evaluation.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;

/// How the trees are grown.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Growth {
    /// Number of trees.
    pub trees: usize,
    /// A node with fewer rows is a leaf.
    pub min_split: usize,
    /// The share of the features each split considers (at least one).
    pub features: f64,
    /// Each tree sees a bootstrap sample of the rows (else all of them).
    pub bootstrap: bool,
    /// Extremely randomised trees: each feature considered gets one cut drawn uniformly
    /// between its smallest and largest value in the node, and the best of those cuts
    /// splits (else the best cut of all, midway between neighbouring values).
    pub random_cuts: bool,
}

#[derive(Clone, Debug)]
enum Node {
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
    Leaf {
        mean: f64,
        var: f64,
    },
}

#[derive(Clone, Debug)]
struct Tree {
    nodes: Vec<Node>,
}

/// A random forest of regression trees (best split by squared error among a random subset
/// of the features).
#[derive(Clone, Debug)]
pub(crate) struct Forest {
    trees: Vec<Tree>,
}

impl Forest {
    /// Fits the forest to rows `x` (one feature vector each) and targets `y`.
    pub(crate) fn fit(x: &[Vec<f64>], y: &[f64], growth: &Growth, rng: &mut SmallRng) -> Forest {
        let n = x.len().min(y.len());
        let d = x.first().map_or(0, Vec::len);
        let mtry = ((d as f64 * growth.features).ceil() as usize).clamp(1, d.max(1));
        let trees = (0..growth.trees.max(1))
            .map(|_| {
                let rows: Vec<usize> = if growth.bootstrap && n > 1 {
                    (0..n).map(|_| rng.random_range(0..n)).collect()
                } else {
                    (0..n).collect()
                };
                let sorted: Vec<Vec<usize>> = (0..d)
                    .map(|f| {
                        let mut v = rows.clone();
                        v.sort_by(|&a, &b| x[a][f].total_cmp(&x[b][f]));
                        v
                    })
                    .collect();
                let mut t = Tree { nodes: Vec::new() };
                let mut b = Builder {
                    x,
                    y,
                    d,
                    mtry,
                    min_split: growth.min_split.max(2),
                    random_cuts: growth.random_cuts,
                    rng,
                    feats: Vec::new(),
                };
                b.grow(&mut t, sorted, 0);
                t
            })
            .collect();
        Forest { trees }
    }

    /// The predicted mean and variance at `q`: the mean of the trees' leaf means, and the
    /// variance of the mixture of the trees' leaves (spread between trees plus within
    /// leaves).
    pub(crate) fn predict(&self, q: &[f64]) -> (f64, f64) {
        let mut s = 0.0;
        let mut s2 = 0.0;
        for t in &self.trees {
            let (m, v) = t.leaf(q);
            s += m;
            s2 += v + m * m;
        }
        let n = self.trees.len().max(1) as f64;
        let mean = s / n;
        (mean, (s2 / n - mean * mean).max(0.0))
    }

    /// Number of trees.
    pub(crate) fn len(&self) -> usize {
        self.trees.len()
    }

    /// The prediction of tree `k` alone at `q` (its leaf's mean): one draw from the
    /// forest's spread of models, for Thompson sampling.
    pub(crate) fn tree_mean(&self, k: usize, q: &[f64]) -> f64 {
        self.trees.get(k).map_or(0.0, |t| t.leaf(q).0)
    }
}

impl Tree {
    fn leaf(&self, q: &[f64]) -> (f64, f64) {
        let mut k = 0;
        loop {
            match self.nodes.get(k) {
                Some(&Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                }) => {
                    k = if q.get(feature).copied().unwrap_or(0.0) <= threshold {
                        left
                    } else {
                        right
                    };
                }
                Some(&Node::Leaf { mean, var }) => return (mean, var),
                None => return (0.0, 0.0),
            }
        }
    }
}

struct Builder<'a> {
    x: &'a [Vec<f64>],
    y: &'a [f64],
    d: usize,
    mtry: usize,
    min_split: usize,
    random_cuts: bool,
    rng: &'a mut SmallRng,
    feats: Vec<usize>,
}

impl Builder<'_> {
    /// Grows the subtree of the rows in `sorted` (the same rows once per feature, each list
    /// in the order of that feature's values); returns its node's position. Splitting keeps
    /// every list sorted, so no node sorts: a tree costs O(rows × features × depth).
    fn grow(&mut self, tree: &mut Tree, sorted: Vec<Vec<usize>>, depth: usize) -> usize {
        let at = tree.nodes.len();
        let rows = sorted.first().map_or(&[][..], Vec::as_slice);
        let n = rows.len().max(1) as f64;
        let mean = rows.iter().map(|&r| self.y[r]).sum::<f64>() / n;
        let var = rows
            .iter()
            .map(|&r| (self.y[r] - mean).powi(2))
            .sum::<f64>()
            / n;
        tree.nodes.push(Node::Leaf { mean, var });
        if rows.len() < self.min_split || var <= 1e-12 || depth >= 64 {
            return at;
        }
        let Some((feature, threshold)) = self.best_split(&sorted) else {
            return at;
        };
        let x = self.x;
        let (mut l, mut r) = (Vec::with_capacity(self.d), Vec::with_capacity(self.d));
        for list in sorted {
            let (a, b): (Vec<usize>, Vec<usize>) =
                list.into_iter().partition(|&i| x[i][feature] <= threshold);
            l.push(a);
            r.push(b);
        }
        let left = self.grow(tree, l, depth + 1);
        let right = self.grow(tree, r, depth + 1);
        tree.nodes[at] = Node::Split {
            feature,
            threshold,
            left,
            right,
        };
        at
    }

    /// The split of the most squared error, among `mtry` random features that vary here.
    fn best_split(&mut self, sorted: &[Vec<usize>]) -> Option<(usize, f64)> {
        self.feats.clear();
        self.feats.extend(0..self.d);
        self.feats.shuffle(self.rng);
        let (x, y) = (self.x, self.y);
        let rows = sorted.first()?;
        let total: f64 = rows.iter().map(|&r| y[r]).sum();
        let n = rows.len() as f64;
        let mut best: Option<(f64, usize, f64)> = None;
        let mut tried = 0;
        for k in 0..self.feats.len() {
            let f = self.feats[k];
            if tried >= self.mtry && best.is_some() {
                break;
            }
            let order = &sorted[f];
            let (Some(&first), Some(&last)) = (order.first(), order.last()) else {
                continue;
            };
            if x[first][f] == x[last][f] {
                continue; // constant here: does not count as tried
            }
            tried += 1;
            if self.random_cuts {
                let (lo, hi) = (x[first][f], x[last][f]);
                let cut = lo + (hi - lo) * self.rng.random::<f64>();
                // Below `hi`, so the right side is never empty.
                let cut = if cut >= hi { lo } else { cut };
                let (mut left, mut nl) = (0.0, 0.0);
                for &r in order.iter().take_while(|&&r| x[r][f] <= cut) {
                    left += y[r];
                    nl += 1.0;
                }
                let gain = left * left / nl + (total - left).powi(2) / (n - nl);
                if best.is_none_or(|b| gain > b.0) {
                    best = Some((gain, f, cut));
                }
                continue;
            }
            let mut left = 0.0;
            for j in 0..order.len() - 1 {
                left += y[order[j]];
                let (a, b) = (x[order[j]][f], x[order[j + 1]][f]);
                if a == b {
                    continue;
                }
                let nl = (j + 1) as f64;
                let nr = n - nl;
                // Maximising this is minimising the children's squared error.
                let gain = left * left / nl + (total - left).powi(2) / nr;
                // Ties broken at random, so that trees differ even without bootstrap.
                let gain = gain * (1.0 + 1e-12 * self.rng.random::<f64>());
                if best.is_none_or(|b| gain > b.0) {
                    best = Some((gain, f, 0.5 * (a + b)));
                }
            }
        }
        best.map(|b| (b.1, b.2))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    const GROWTH: Growth = Growth {
        trees: 16,
        min_split: 2,
        features: 1.0,
        bootstrap: true,
        random_cuts: false,
    };

    #[test]
    fn learns_a_step_and_knows_where_it_has_not_looked() {
        // y = 1 when x0 > 0.5, else 0; x1 is noise.
        let mut rng = SmallRng::seed_from_u64(1);
        let x: Vec<Vec<f64>> = (0..40)
            .map(|i| vec![i as f64 / 40.0, rng.random::<f64>()])
            .collect();
        let y: Vec<f64> = x.iter().map(|r| f64::from(u8::from(r[0] > 0.5))).collect();
        let f = Forest::fit(&x, &y, &GROWTH, &mut rng);
        let (lo, _) = f.predict(&[0.1, 0.5]);
        let (hi, _) = f.predict(&[0.9, 0.5]);
        assert!(lo < 0.1 && hi > 0.9, "{lo} {hi}");
        // Near the step the trees disagree more than far from it.
        let (_, v_edge) = f.predict(&[0.5, 0.5]);
        let (_, v_far) = f.predict(&[0.05, 0.5]);
        assert!(v_edge > v_far, "{v_edge} {v_far}");
    }

    #[test]
    fn the_same_seed_grows_the_same_forest() {
        let x: Vec<Vec<f64>> = (0..30)
            .map(|i| vec![(i % 7) as f64, (i % 5) as f64])
            .collect();
        let y: Vec<f64> = x.iter().map(|r| r[0] * 2.0 - r[1]).collect();
        let a = Forest::fit(&x, &y, &GROWTH, &mut SmallRng::seed_from_u64(9));
        let b = Forest::fit(&x, &y, &GROWTH, &mut SmallRng::seed_from_u64(9));
        for q in &x {
            assert_eq!(a.predict(q), b.predict(q));
        }
    }

    #[test]
    fn random_cuts_grade_the_prediction_between_measurements() {
        // Two measurements, 0 at x = 0 and 1 at x = 10: best cuts all fall at 5, so the
        // forest predicts one step; random cuts spread over (0, 10) give a ramp.
        let x = vec![vec![0.0], vec![10.0]];
        let y = vec![0.0, 1.0];
        let growth = Growth {
            trees: 64,
            bootstrap: false,
            random_cuts: true,
            ..GROWTH
        };
        let mut rng = SmallRng::seed_from_u64(3);
        let et = Forest::fit(&x, &y, &growth, &mut rng);
        let at = |f: &Forest, v: f64| f.predict(&[v]).0;
        assert!(at(&et, 2.0) < at(&et, 5.0) && at(&et, 5.0) < at(&et, 8.0));
        assert!(at(&et, 0.0) == 0.0 && at(&et, 10.0) == 1.0);
        let best = Forest::fit(
            &x,
            &y,
            &Growth {
                bootstrap: false,
                ..GROWTH
            },
            &mut rng,
        );
        assert_eq!(at(&best, 2.0), at(&best, 4.0));
        // And it still learns a step from enough rows.
        let x: Vec<Vec<f64>> = (0..40).map(|i| vec![i as f64 / 40.0]).collect();
        let y: Vec<f64> = x.iter().map(|r| f64::from(u8::from(r[0] > 0.5))).collect();
        let et = Forest::fit(&x, &y, &growth, &mut rng);
        assert!(at(&et, 0.1) < 0.1 && at(&et, 0.9) > 0.9);
    }
}
