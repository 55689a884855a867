//! Choosing how to choose, without peeking: the set method (with its normalisation) and
//! the tree's limits that ship are picked by cross-validation inside the training inputs.
//! The training inputs are cut into folds; every [`Recipe`] is fitted on all folds but
//! one and scored on the one left out; the recipe with the best geometric mean over every
//! left-out input is fitted on all the training inputs. Inputs outside `train` (a
//! report's test inputs) are never read, so the choice is nested inside any split and a
//! test score of the result is an honest estimate.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::classify::{train_tree, TreeLimits};
use super::deploy::Selector;
use super::matrix::{score, Matrix, Normalisation, Score};
use super::set::{self, SetMethod};
use crate::{Error, Result};

/// A way to build a selector: how the set is chosen and the tree that picks among it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Recipe {
    /// The set method.
    pub method: SetMethod,
    /// The tree's limits.
    pub limits: TreeLimits,
}

impl Recipe {
    /// A name for tables: `greedy, tree A`.
    pub fn name(&self) -> String {
        let tree = match self.limits {
            TreeLimits::A => "tree A".into(),
            TreeLimits::B => "tree B".into(),
            TreeLimits::C => "tree C".into(),
            l => format!(
                "tree (depth {}, leaf {})",
                l.max_depth.map_or("any".into(), |d| d.to_string()),
                l.min_leaf
            ),
        };
        format!("{}, {tree}", self.method.name())
    }

    /// Every set method (clustering with every normalisation) with the paper's trees A,
    /// B and C.
    pub fn all() -> Vec<Recipe> {
        let mut methods = vec![SetMethod::TopN, SetMethod::Greedy];
        for n in Normalisation::ALL {
            methods.push(SetMethod::KMeans(n));
            methods.push(SetMethod::PcaKMeans(n));
        }
        methods
            .into_iter()
            .flat_map(|method| {
                [TreeLimits::A, TreeLimits::B, TreeLimits::C]
                    .map(|limits| Recipe { method, limits })
            })
            .collect()
    }
}

/// What the cross-validation chooses among, and its folds.
#[derive(Clone, Debug, PartialEq)]
pub struct Nested {
    /// The candidates.
    pub recipes: Vec<Recipe>,
    /// Folds of the training inputs (at least 2).
    pub folds: usize,
    /// Seed of the folds' shuffle.
    pub seed: u64,
}

impl Default for Nested {
    /// [`Recipe::all`], 5 folds.
    fn default() -> Self {
        Nested {
            recipes: Recipe::all(),
            folds: 5,
            seed: 1,
        }
    }
}

/// The cross-validation's result: the recipe chosen and every recipe's score over the
/// left-out inputs (best first).
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The recipe with the best score.
    pub recipe: Recipe,
    /// Every recipe's score on the left-out folds, best first. Inputs whose chosen
    /// configuration was not measured on them are not scored (the score counts them).
    pub scores: Vec<(Recipe, Score)>,
}

impl Nested {
    /// Chooses the recipe for `k` configurations by cross-validation over `train`.
    ///
    /// # Errors
    /// [`Error::Select`] for fewer training inputs than folds, fewer than 2 folds or no
    /// recipe; a recipe that fails on every fold is passed over.
    pub fn choose(&self, m: &Matrix, train: &[usize], k: usize) -> Result<Choice> {
        if self.folds < 2 || train.len() < self.folds || self.recipes.is_empty() {
            return Err(Error::Select(format!(
                "cross-validation needs at least 2 folds, as many training inputs as folds and a recipe ({} folds, {} inputs, {} recipes)",
                self.folds,
                train.len(),
                self.recipes.len()
            )));
        }
        let mut shuffled = train.to_vec();
        shuffled.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(self.seed));
        let folds: Vec<Vec<usize>> = (0..self.folds)
            .map(|f| {
                shuffled
                    .iter()
                    .skip(f)
                    .step_by(self.folds)
                    .copied()
                    .collect()
            })
            .collect();
        // Per recipe, the chosen configuration of every left-out input.
        let mut picks: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.recipes.len()];
        for held in &folds {
            let fit: Vec<usize> = train
                .iter()
                .copied()
                .filter(|i| !held.contains(i))
                .collect();
            // One set per method, shared by its trees.
            let mut sets: Vec<(SetMethod, Option<Vec<usize>>)> = Vec::new();
            for (r, recipe) in self.recipes.iter().enumerate() {
                let chosen = match sets.iter().find(|(mm, _)| *mm == recipe.method) {
                    Some((_, s)) => s.clone(),
                    None => {
                        let s = set::choose(m, &fit, k, recipe.method).ok();
                        sets.push((recipe.method, s.clone()));
                        s
                    }
                };
                let Some(chosen) = chosen else { continue };
                let Ok(tree) = train_tree(m, &fit, &chosen, recipe.limits) else {
                    continue;
                };
                for &i in held {
                    if let Some(&c) = chosen.get(tree.choose(&m.inputs()[i].features)) {
                        picks[r].push((i, c));
                    }
                }
            }
        }
        let mut scores: Vec<(Recipe, Score)> = self
            .recipes
            .iter()
            .zip(&picks)
            .filter(|(_, p)| !p.is_empty())
            .map(|(&recipe, p)| {
                let inputs: Vec<usize> = p.iter().map(|&(i, _)| i).collect();
                let s = score(m, &inputs, |i| {
                    p.iter().find(|&&(j, _)| j == i).map(|&(_, c)| c)
                });
                (recipe, s)
            })
            .collect();
        // Stable: among equal scores the earlier recipe of the list wins.
        scores.sort_by(|a, b| b.1.geomean.total_cmp(&a.1.geomean));
        let recipe = scores
            .first()
            .map(|(r, _)| *r)
            .ok_or_else(|| Error::Select("no recipe could be fitted on any fold".into()))?;
        Ok(Choice { recipe, scores })
    }

    /// The selector of `k` configurations that ships from `train`: the recipe
    /// [`Nested::choose`] picks, fitted on all of `train`.
    ///
    /// # Errors
    /// As [`Nested::choose`] and [`Selector::fit`].
    pub fn fit(&self, m: &Matrix, train: &[usize], k: usize) -> Result<(Selector, Choice)> {
        let choice = self.choose(m, train, k)?;
        let s = Selector::fit(m, train, k, choice.recipe.method, choice.recipe.limits)?;
        Ok((s, choice))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::Input;

    /// 60 inputs along `n`; configuration `c` (of 6) is best on the tenth of inputs
    /// `10c..10c+10`, and every configuration is measured everywhere.
    fn staircase() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..6 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for i in 0..60 {
            let row = m.add_input(Input {
                key: format!("n={i}"),
                features: vec![i as f64],
                groups: vec![],
            });
            for c in 0..6 {
                let own = i / 10 == c;
                m.set(row, c, if own { 1.0 } else { 2.0 + c as f64 })
                    .unwrap();
            }
        }
        m
    }

    #[test]
    fn the_choice_reads_only_the_training_inputs() {
        let m = staircase();
        let train: Vec<usize> = (0..40).collect();
        let nested = Nested::default();
        let a = nested.choose(&m, &train, 4).unwrap();
        // Whatever the inputs outside `train` hold, the choice is the same.
        let other = m.filtered(|i, _| i < 40);
        let b = nested.choose(&other, &train, 4).unwrap();
        assert_eq!(a, b);
        assert!(!a.scores.is_empty());
    }

    #[test]
    fn a_recipe_that_separates_the_steps_is_chosen() {
        let m = staircase();
        let train: Vec<usize> = (0..60).collect();
        let nested = Nested {
            recipes: vec![
                // Depth 1 cannot separate 6 steps; an unlimited tree can.
                Recipe {
                    method: SetMethod::Greedy,
                    limits: TreeLimits {
                        max_depth: Some(1),
                        min_leaf: 1,
                    },
                },
                Recipe {
                    method: SetMethod::Greedy,
                    limits: TreeLimits::A,
                },
            ],
            ..Nested::default()
        };
        let (s, choice) = nested.fit(&m, &train, 6).unwrap();
        assert_eq!(choice.recipe.limits, TreeLimits::A);
        // Held-out inputs next to a step may fall on the wrong side of it.
        assert!(choice.scores[0].1.geomean > 0.8, "{:?}", choice.scores);
        assert!(choice.scores[1].1.geomean < choice.scores[0].1.geomean);
        assert_eq!(s.limits, TreeLimits::A);
        assert_eq!(s.choose(&[55.0]).unwrap().get("C"), Some(&Value::Int(5)));
    }

    #[test]
    fn too_few_inputs_for_the_folds_is_an_error() {
        let m = staircase();
        assert!(Nested::default().choose(&m, &[0, 1, 2], 2).is_err());
    }
}
