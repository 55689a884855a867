//! How well a deployed set does on inputs it was not chosen on: splits of the inputs
//! (random 70/30, and by group: train on the others, test on one), and the tables of
//! Lawson's Tables 1-2 for every set method x classifier x k, with each set's upper
//! bound (the best of the set for every test input) and two baselines: one configuration
//! for every input, and today's fallback (the best configuration of the nearest recorded
//! input, by [`key_distance`]).
//!
//! Sets and classifiers learn from `train` (what the cross-evaluation measured); scores
//! come from `truth` (a matrix where every deployed configuration was measured on the test
//! inputs). Both may be the same matrix.
//!
//! [`key_distance`]: crate::results::database::key_distance

use std::fmt::Write as _;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::classify::{self, Classifier};
use super::matrix::{best_in, score, Matrix, Score};
use super::set::{self, SetMethod};
use crate::results::database::key_distance;
use crate::Result;

/// Training and test inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// A name for tables (`random 70/30`, `test: vgg`).
    pub name: String,
    /// Training inputs.
    pub train: Vec<usize>,
    /// Test inputs.
    pub test: Vec<usize>,
}

/// A random split: `train_fraction` of the inputs to train on, the rest to test.
pub fn random_split(m: &Matrix, train_fraction: f64, seed: u64) -> Split {
    let mut all: Vec<usize> = (0..m.inputs().len()).collect();
    all.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(seed));
    let n = ((all.len() as f64) * train_fraction).round() as usize;
    let test = all.split_off(n.min(all.len()));
    let mut train = all;
    train.sort_unstable();
    let mut test = test;
    test.sort_unstable();
    Split {
        name: format!(
            "random {:.0}/{:.0}",
            100.0 * train_fraction,
            100.0 * (1.0 - train_fraction)
        ),
        train,
        test,
    }
}

/// One split per group: test on the inputs of that group, train on the inputs of no
/// group that is tested (an input in two groups is never on both sides).
pub fn group_splits(m: &Matrix) -> Vec<Split> {
    let mut groups: Vec<&str> = m
        .inputs()
        .iter()
        .flat_map(|i| i.groups.iter().map(String::as_str))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
        .iter()
        .map(|g| {
            let (test, train): (Vec<usize>, Vec<usize>) =
                (0..m.inputs().len()).partition(|&i| m.inputs()[i].groups.iter().any(|x| x == g));
            Split {
                name: format!("test: {g}"),
                train,
                test,
            }
        })
        .collect()
}

/// One cell of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The set method.
    pub method: SetMethod,
    /// The classifier, or `None` for the set's upper bound.
    pub classifier: Option<Classifier>,
    /// The set size.
    pub k: usize,
    /// The score on the test inputs.
    pub score: Score,
}

/// The results on one split.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The split.
    pub split: Split,
    /// Every method x classifier x k, and the bounds.
    pub rows: Vec<Row>,
    /// The configuration with the best geometric mean on the training inputs, used for
    /// every test input.
    pub single_best: Score,
    /// Today's fallback: the best configuration of the nearest training input.
    pub nearest_best: Score,
    /// How many configurations today's fallback deploys (the training inputs' distinct
    /// bests).
    pub nearest_deployed: usize,
}

/// Evaluates every method x classifier x k on a split.
///
/// # Errors
/// As [`set::choose`] and [`classify::train`].
pub fn evaluate(
    train: &Matrix,
    truth: &Matrix,
    split: &Split,
    methods: &[SetMethod],
    classifiers: &[Classifier],
    ks: &[usize],
) -> Result<Report> {
    let test = |i: usize| truth.inputs()[i].key.clone();
    // Test inputs by their index in `truth` (the matrices may order inputs differently).
    let tested: Vec<usize> = split
        .test
        .iter()
        .filter_map(|&i| truth.input_index(&train.inputs()[i].key))
        .collect();
    let config_in_truth = |c: usize| {
        truth
            .configs()
            .iter()
            .position(|x| *x == train.configs()[c])
    };
    let mut rows = Vec::new();
    for &method in methods {
        for &k in ks {
            let chosen = set::choose(train, &split.train, k, method)?;
            let in_truth: Vec<usize> = chosen.iter().filter_map(|&c| config_in_truth(c)).collect();
            rows.push(Row {
                method,
                classifier: None,
                k,
                score: score(truth, &tested, |i| best_in(truth, i, &in_truth)),
            });
            for &classifier in classifiers {
                let model = classify::train(train, &split.train, &chosen, classifier)?;
                let s = score(truth, &tested, |i| {
                    let p = model.choose(&truth.inputs()[i].features, &test(i))?;
                    config_in_truth(*chosen.get(p)?)
                });
                rows.push(Row {
                    method,
                    classifier: Some(classifier),
                    k,
                    score: s,
                });
            }
        }
    }
    let single = set::choose(train, &split.train, 1, SetMethod::Greedy)?;
    let single_best = score(truth, &tested, |_| {
        single.first().and_then(|&c| config_in_truth(c))
    });
    let nearest_best = score(truth, &tested, |i| {
        fallback(train, split, &test(i)).and_then(config_in_truth)
    });
    let mut winners: Vec<usize> = split
        .train
        .iter()
        .filter_map(|&j| train.best(j))
        .map(|(c, _)| c)
        .collect();
    winners.sort_unstable();
    winners.dedup();
    Ok(Report {
        split: split.clone(),
        rows,
        single_best,
        nearest_best,
        nearest_deployed: winners.len(),
    })
}

/// Today's fallback for an input key: the best configuration (in `train`) of the nearest
/// training input by [`key_distance`].
fn fallback(train: &Matrix, split: &Split, key: &str) -> Option<usize> {
    split
        .train
        .iter()
        .filter_map(|&j| {
            let (c, _) = train.best(j)?;
            key_distance(key, &train.inputs()[j].key).map(|d| (d, c))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// The cells of the test inputs that [`evaluate`]`(m, truth, ..)` reads and `m` lacks:
/// the single best and today's fallback choice of every test input, then every
/// configuration of every set the methods choose (in the order of `ks`, then of
/// `methods`: most important first, should the measuring stop early). Every classifier
/// picks within a set, so these cells score any classifier, trained on any features.
///
/// Measure them into a copy of `m` (the truth) and evaluate with `m` as the training
/// matrix: measured into `m` itself, the cells of one split's test inputs would become
/// training cells of another split (whose sets then change and read cells not listed).
///
/// # Errors
/// As [`set::choose`].
pub fn needed(
    m: &Matrix,
    splits: &[Split],
    methods: &[SetMethod],
    ks: &[usize],
) -> Result<Vec<(usize, usize)>> {
    let mut cells = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut add = |i: usize, c: usize, cells: &mut Vec<(usize, usize)>| {
        if m.get(i, c).is_none() && seen.insert((i, c)) {
            cells.push((i, c));
        }
    };
    for split in splits {
        let single = set::choose(m, &split.train, 1, SetMethod::Greedy)?;
        for &i in &split.test {
            for &c in &single {
                add(i, c, &mut cells);
            }
            if let Some(c) = fallback(m, split, &m.inputs()[i].key) {
                add(i, c, &mut cells);
            }
        }
    }
    for &k in ks {
        for &method in methods {
            for split in splits {
                let chosen = set::choose(m, &split.train, k, method)?;
                for &i in &split.test {
                    for &c in &chosen {
                        add(i, c, &mut cells);
                    }
                }
            }
        }
    }
    Ok(cells)
}

fn pct(s: &Score) -> String {
    if s.scored == 0 {
        return "-".into();
    }
    let mut t = format!("{:.2}", 100.0 * s.geomean);
    if s.unmeasured > 0 {
        let _ = write!(t, " ({} unmeasured)", s.unmeasured);
    }
    t
}

impl Report {
    /// The score of a method, classifier (`None`: the bound) and k.
    pub fn get(
        &self,
        method: SetMethod,
        classifier: Option<Classifier>,
        k: usize,
    ) -> Option<&Score> {
        self.rows
            .iter()
            .find(|r| r.method == method && r.classifier == classifier && r.k == k)
            .map(|r| &r.score)
    }

    /// A markdown table: one row per method and classifier (and each method's bound), one
    /// column per k; percentages of the per-input optimum (geometric means over the test
    /// inputs), then the baselines.
    pub fn markdown(&self) -> String {
        let mut ks: Vec<usize> = self.rows.iter().map(|r| r.k).collect();
        ks.sort_unstable();
        ks.dedup();
        let mut methods: Vec<SetMethod> = Vec::new();
        let mut classifiers: Vec<Option<Classifier>> = Vec::new();
        for r in &self.rows {
            if !methods.contains(&r.method) {
                methods.push(r.method);
            }
            if !classifiers.contains(&r.classifier) {
                classifiers.push(r.classifier);
            }
        }
        let mut out = format!(
            "{}: {} training inputs, {} test inputs; % of the per-input optimum (geometric mean over the test inputs)\n\n| set | selection |",
            self.split.name,
            self.split.train.len(),
            self.split.test.len()
        );
        for k in &ks {
            let _ = write!(out, " k = {k} |");
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---:|".repeat(ks.len()));
        out.push('\n');
        for &m in &methods {
            for c in &classifiers {
                let label = c.map_or("upper bound".to_string(), |c| c.name());
                let _ = write!(out, "| {} | {label} |", m.name());
                for &k in &ks {
                    let cell = self.get(m, *c, k).map_or("-".to_string(), pct);
                    let _ = write!(out, " {cell} |");
                }
                out.push('\n');
            }
        }
        let _ = write!(
            out,
            "\nBaselines: one configuration for every input {}%; today's fallback (the best configuration of the nearest training input, {} configurations deployed) {}%.\n",
            pct(&self.single_best),
            self.nearest_deployed,
            pct(&self.nearest_best),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::matrix::Input;

    #[test]
    fn splits_never_share_inputs() {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for i in 0..10 {
            let groups = match i {
                0..=3 => vec!["a".to_string()],
                4..=7 => vec!["b".to_string()],
                _ => vec!["a".to_string(), "c".to_string()],
            };
            m.add_input(Input {
                key: format!("n={i}"),
                features: vec![i as f64],
                groups,
            });
        }
        let s = random_split(&m, 0.7, 1);
        assert_eq!((s.train.len(), s.test.len()), (7, 3));
        assert!(s.test.iter().all(|i| !s.train.contains(i)));
        assert_eq!(random_split(&m, 0.7, 1), s, "seeded");
        let g = group_splits(&m);
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].test, vec![0, 1, 2, 3, 8, 9]);
        assert_eq!(g[0].train, vec![4, 5, 6, 7]);
        assert_eq!(g[2].name, "test: c");
        assert_eq!(g[2].train, (0..8).collect::<Vec<_>>());
    }

    /// 40 inputs in two groups, 12 configurations, a cost for every cell; the training
    /// matrix holds a sparse, seeded third of the cells.
    fn sparse_and_full() -> (Matrix, Matrix) {
        let mut full = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..12 {
            full.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for i in 0..40u64 {
            let n = 8 * (i + 1);
            let inp = full.add_input(Input {
                key: format!("n={n}"),
                features: vec![n as f64],
                groups: vec![if i % 2 == 0 { "a" } else { "b" }.to_string()],
            });
            for c in 0..12u64 {
                let cost = 1.0 + ((i / 10 + c) % 4) as f64 + 0.01 * ((i * 7 + c * 3) % 5) as f64;
                full.set(inp, c as usize, cost).unwrap();
            }
        }
        let sparse = full.filtered(|i, c| (i * 5 + c * 3) % 3 == 0);
        (sparse, full)
    }

    #[test]
    fn the_needed_cells_score_every_row_and_baseline() {
        let (train, full) = sparse_and_full();
        let mut splits = vec![random_split(&train, 0.7, 2)];
        splits.extend(group_splits(&train));
        let methods = SetMethod::MAIN;
        let cells = needed(&train, &splits, &methods, &[2, 4]).unwrap();
        assert!(!cells.is_empty());
        assert!(cells.iter().all(|&(i, c)| train.get(i, c).is_none()));
        let mut truth = train.clone();
        for &(i, c) in &cells {
            truth.set(i, c, full.get(i, c).unwrap()).unwrap();
        }
        for split in &splits {
            let r = evaluate(&train, &truth, split, &methods, &Classifier::ALL, &[2, 4]).unwrap();
            for row in &r.rows {
                assert_eq!(row.score.unmeasured, 0, "{} {row:?}", split.name);
            }
            assert_eq!(r.single_best.unmeasured, 0, "{}", split.name);
            assert_eq!(r.nearest_best.unmeasured, 0, "{}", split.name);
        }
    }

    #[test]
    fn tables_hold_every_method_classifier_and_k() {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..4 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for i in 0..30u64 {
            let n = 10 * (i + 1);
            let inp = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![n as f64],
                groups: vec![],
            });
            let best = (i / 8) as usize;
            for c in 0..4 {
                m.set(inp, c, if c == best { 1.0 } else { 1.5 }).unwrap();
            }
        }
        let split = random_split(&m, 0.7, 3);
        let r = evaluate(&m, &m, &split, &SetMethod::MAIN, &Classifier::ALL, &[1, 4]).unwrap();
        assert_eq!(r.rows.len(), 4 * 2 * 6);
        // With the four configurations deployed, the bound is the optimum, and a tree on
        // the sizes that separate them gets there too.
        let bound = r.get(SetMethod::Greedy, None, 4).unwrap();
        assert!((bound.geomean - 1.0).abs() < 1e-12);
        let tree = r
            .get(SetMethod::Greedy, Some(Classifier::ALL[0]), 4)
            .unwrap();
        assert!(tree.geomean > 0.9, "{tree:?}");
        let md = r.markdown();
        assert!(md.contains("| greedy | upper bound | "), "{md}");
        assert!(md.contains("| k = 4 |"), "{md}");
    }
}
