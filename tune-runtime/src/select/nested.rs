//! Choosing how to choose, without peeking: the set method (with its normalisation) and
//! the tree's limits that ship are picked by cross-validation inside the training inputs.
//! The training inputs are cut into folds; every [`Recipe`] is fitted on all folds but
//! one and scored on the one left out; the recipe with the best geometric mean over every
//! left-out input is fitted on all the training inputs. Inputs outside `train` (a
//! report's test inputs) are never read, so the choice is nested inside any split and a
//! test score of the result is an honest estimate.

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::classify::TreeLimits;
use super::cost::{train_tree_for, Objective};
use super::deploy::{Guard, Selector};
use super::features::{fit_features, Derived, Tiling};
use super::fit_guard::FitGuard;
use super::matrix::{score_or_worst, Matrix, Normalisation, Score};
use super::model::Basis;
use super::set::{self, SetMethod};
use crate::{Error, Result};

/// A way to build a selector: how the set is chosen and the tree that picks among it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Recipe {
    /// The set method.
    pub method: SetMethod,
    /// The tree's limits.
    pub limits: TreeLimits,
    /// Whether the tree reads [`Nested::derived`] besides the input's own features.
    #[serde(default)]
    pub derived: bool,
    /// What the tree's splits optimise (select6).
    #[serde(default)]
    pub objective: Objective,
    /// Whether inputs outside the training range run the set's most robust
    /// configuration ([`Guard`]; select6).
    #[serde(default)]
    pub guard: bool,
    /// Whether the tree also reads how well each tile of the chosen set fits the input
    /// ([`fit_features`] of [`Nested::tilings`]; select7).
    #[serde(default)]
    pub fit: bool,
    /// Whether a configuration whose tile wastes half the best-fitting one's useful work
    /// or more never runs ([`FitGuard`] over [`Nested::tilings`]; select9).
    #[serde(default)]
    pub fit_guard: bool,
}

impl Recipe {
    /// A name for tables: `greedy, tree A`.
    pub fn name(&self) -> String {
        let tree = match (self.objective, self.limits) {
            (Objective::Model(b), _) => b.name().into(),
            (_, TreeLimits::A) => "tree A".into(),
            (_, TreeLimits::B) => "tree B".into(),
            (_, TreeLimits::C) => "tree C".into(),
            (_, l) => format!(
                "tree (depth {}, leaf {})",
                l.max_depth.map_or("any".into(), |d| d.to_string()),
                l.min_leaf
            ),
        };
        let features = if self.derived {
            ", derived features"
        } else {
            ""
        };
        let cost = match self.objective {
            Objective::Label | Objective::Model(_) => "",
            Objective::GeoMean => "cost ",
        };
        let guard = if self.guard { ", range guard" } else { "" };
        let fit = if self.fit { ", tile fit" } else { "" };
        let fit_guard = if self.fit_guard { ", fit guard" } else { "" };
        format!(
            "{}, {cost}{tree}{features}{fit}{guard}{fit_guard}",
            self.method.name()
        )
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
                [TreeLimits::A, TreeLimits::B, TreeLimits::C].map(|limits| Recipe {
                    method,
                    limits,
                    derived: false,
                    objective: Objective::Label,
                    guard: false,
                    fit: false,
                    fit_guard: false,
                })
            })
            .collect()
    }

    /// `recipes`, then each again with a cost-sensitive tree ([`Objective::GeoMean`]).
    pub fn and_cost(recipes: &[Recipe]) -> Vec<Recipe> {
        let mut v = recipes.to_vec();
        v.extend(recipes.iter().map(|r| Recipe {
            objective: Objective::GeoMean,
            ..*r
        }));
        v
    }

    /// `recipes`, then each again with a [`Guard`] for inputs outside the training range.
    pub fn and_guarded(recipes: &[Recipe]) -> Vec<Recipe> {
        let mut v = recipes.to_vec();
        v.extend(recipes.iter().map(|r| Recipe { guard: true, ..*r }));
        v
    }

    /// `recipes`, then each again with a [`FitGuard`] of its set.
    pub fn and_fit_guarded(recipes: &[Recipe]) -> Vec<Recipe> {
        let mut v = recipes.to_vec();
        v.extend(recipes.iter().map(|r| Recipe {
            fit_guard: true,
            ..*r
        }));
        v
    }

    /// `recipes`, then each again reading the tile-fit features of its set.
    pub fn and_fit(recipes: &[Recipe]) -> Vec<Recipe> {
        let mut v = recipes.to_vec();
        v.extend(recipes.iter().map(|r| Recipe { fit: true, ..*r }));
        v
    }

    /// `recipes`, then, for each of them with a label tree A and no guard (one per set
    /// method and features), the same with a model per configuration of each basis
    /// instead of a tree ([`Objective::Model`]; the tree's limits are not read, and
    /// the models clamp each feature to its training range, as a guard would).
    pub fn and_models(recipes: &[Recipe]) -> Vec<Recipe> {
        let mut v = recipes.to_vec();
        for basis in [Basis::Linear, Basis::Quadratic] {
            v.extend(
                recipes
                    .iter()
                    .filter(|r| {
                        r.objective == Objective::Label && r.limits == TreeLimits::A && !r.guard
                    })
                    .map(|r| Recipe {
                        objective: Objective::Model(basis),
                        ..*r
                    }),
            );
        }
        v
    }

    /// `recipes`, then each again with derived features.
    pub fn and_derived(recipes: &[Recipe]) -> Vec<Recipe> {
        let mut v = recipes.to_vec();
        v.extend(recipes.iter().map(|r| Recipe {
            derived: true,
            ..*r
        }));
        v
    }
}

/// What the cross-validation chooses among, and its folds.
#[derive(Clone, Debug, PartialEq)]
pub struct Nested {
    /// The candidates.
    pub recipes: Vec<Recipe>,
    /// Folds of the training inputs (at least 2), when not `by_group`.
    pub folds: usize,
    /// Seed of the folds' shuffle.
    pub seed: u64,
    /// One fold per group of the training inputs instead: each group left out in turn,
    /// fitted on the inputs of no group left out, as a split by group tests (random folds
    /// always leave each input a close neighbour among the fitted ones; a group left out
    /// need not). Random folds where the training inputs span fewer than 2 groups.
    pub by_group: bool,
    /// The features a recipe with `derived` reads besides the input's own.
    pub derived: Vec<Derived>,
    /// How the configurations tile the input, for a recipe with `fit`: one
    /// [`Derived::Fit`] per distinct tile of its chosen set (empty: no tile fits).
    pub tilings: Vec<Tiling>,
}

impl Default for Nested {
    /// [`Recipe::all`], 5 random folds, no derived features.
    fn default() -> Self {
        Nested {
            recipes: Recipe::all(),
            folds: 5,
            seed: 1,
            by_group: false,
            derived: Vec::new(),
            tilings: Vec::new(),
        }
    }
}

/// The cross-validation's result: the recipe chosen and every recipe's score over the
/// left-out inputs (best first).
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The recipe with the best score.
    pub recipe: Recipe,
    /// Every recipe's score on the left-out folds, best first, over every left-out input:
    /// a chosen configuration not measured on its input counts as that input's worst
    /// measured one ([`score_or_worst`]; `unmeasured` counts them). Skipping them, as
    /// before, over-predicted the test scores.
    pub scores: Vec<(Recipe, Score)>,
}

impl Nested {
    /// Chooses the recipe for `k` configurations by cross-validation over `train`.
    ///
    /// # Errors
    /// [`Error::Select`] for fewer training inputs than folds, fewer than 2 folds or no
    /// recipe; a recipe that fails on every fold is passed over.
    pub fn choose(&self, m: &Matrix, train: &[usize], k: usize) -> Result<Choice> {
        let (folds, grouped) = self.folds_of(m, train);
        let random_ok = self.folds >= 2 && train.len() >= self.folds;
        if !(if grouped { folds.len() >= 2 } else { random_ok }) || self.recipes.is_empty() {
            return Err(Error::Select(format!(
                "cross-validation needs at least 2 folds (one per group, or as many training inputs as random folds) and a recipe ({} folds, {} inputs, {} recipes)",
                if grouped { folds.len() } else { self.folds },
                train.len(),
                self.recipes.len()
            )));
        }
        let extended = m.with_derived(&self.derived);
        // Per recipe, the chosen configuration of every left-out input.
        let mut picks: Vec<HashMap<usize, usize>> = vec![HashMap::new(); self.recipes.len()];
        let held_all: Vec<usize> = folds.iter().flat_map(|(_, h)| h.iter().copied()).collect();
        for (fit, held) in &folds {
            let fit = fit.clone();
            // One set per method, shared by its trees.
            let mut sets: Vec<(SetMethod, Option<Vec<usize>>)> = Vec::new();
            // A fit-guarded recipe reuses its unguarded twin's picks (the same tree).
            let mut base_picks: HashMap<Recipe, Vec<(usize, usize)>> = HashMap::new();
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
                let base = Recipe {
                    fit_guard: false,
                    ..*recipe
                };
                let p = base_picks
                    .entry(base)
                    .or_insert_with(|| self.fold_picks(m, &extended, (&fit, held), &base, &chosen));
                let guard = if recipe.fit_guard {
                    let Some(g) = FitGuard::fit(m, &fit, &chosen, &self.tilings) else {
                        continue;
                    };
                    Some(g)
                } else {
                    None
                };
                for &(i, pos) in p.iter() {
                    let pos = match &guard {
                        Some(g) => g.apply(pos, &m.inputs()[i].features),
                        None => pos,
                    };
                    if let Some(&c) = chosen.get(pos) {
                        picks[r].insert(i, c);
                    }
                }
            }
        }

        let mut scores: Vec<(Recipe, Score)> = self
            .recipes
            .iter()
            .zip(&picks)
            .filter(|(_, p)| !p.is_empty())
            // Every recipe on every left-out input: a pick not measured there (or a fold
            // the recipe could not be fitted on) counts as the input's worst measured.
            .map(|(&recipe, p)| (recipe, score_or_worst(m, &held_all, |i| p.get(&i).copied())))
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
        let r = choice.recipe;
        let derived: &[Derived] = if r.derived { &self.derived } else { &[] };
        let tilings: &[Tiling] = if r.fit { &self.tilings } else { &[] };
        let s = Selector::fit_tiled(
            m,
            train,
            k,
            (r.method, r.limits, r.objective, r.guard),
            (derived, tilings),
        )?;
        let s = if r.fit_guard {
            s.with_fit_guard(m, train, &self.tilings)?
        } else {
            s
        };
        Ok((s, choice))
    }

    /// The set position `recipe` (its fit guard not read) picks for each input of `held`
    /// when fitted on `fit` with the set `chosen`; none where it cannot be fitted.
    /// `extended`: `m` with [`Nested::derived`].
    fn fold_picks(
        &self,
        m: &Matrix,
        extended: &Matrix,
        (fit, held): (&[usize], &[usize]),
        recipe: &Recipe,
        chosen: &[usize],
    ) -> Vec<(usize, usize)> {
        // The tile-fit features of this set, after the derived ones where read.
        let fitted;
        let features = if recipe.fit {
            fitted = m.with_derived(&self.features_of(recipe, m, chosen));
            &fitted
        } else if recipe.derived {
            extended
        } else {
            m
        };
        let Ok(tree) = train_tree_for(features, fit, chosen, recipe.limits, recipe.objective)
        else {
            return Vec::new();
        };
        let guard = if recipe.guard {
            let Some(g) = Guard::fit(features, fit, chosen) else {
                return Vec::new();
            };
            Some(g)
        } else {
            None
        };
        held.iter()
            .map(|&i| {
                let x = &features.inputs()[i].features;
                let p = match &guard {
                    Some(g) if !g.inside(x) => g.choice,
                    _ => tree.choose(x),
                };
                (i, p)
            })
            .collect()
    }

    /// The features `recipe` reads besides the input's own, for the set `chosen` of `m`:
    /// [`Nested::derived`] where it reads them, then the set's tile fits where it reads
    /// those.
    fn features_of(&self, recipe: &Recipe, m: &Matrix, chosen: &[usize]) -> Vec<Derived> {
        let mut v = if recipe.derived {
            self.derived.clone()
        } else {
            Vec::new()
        };
        if recipe.fit {
            let configs: Vec<_> = chosen.iter().map(|&c| m.configs()[c].clone()).collect();
            v.extend(fit_features(&self.tilings, &configs, &m.features));
        }
        v
    }

    /// The folds of `train`: (inputs fitted on, inputs left out), and whether they are
    /// by group.
    #[allow(clippy::type_complexity)]
    fn folds_of(&self, m: &Matrix, train: &[usize]) -> (Vec<(Vec<usize>, Vec<usize>)>, bool) {
        let groups = |i: usize| &m.inputs()[i].groups;
        let mut names: Vec<&String> = train.iter().flat_map(|&i| groups(i)).collect();
        names.sort_unstable();
        names.dedup();
        if self.by_group && names.len() >= 2 {
            let mut held_once: Vec<usize> = Vec::new();
            let folds = names
                .iter()
                .filter_map(|&g| {
                    let (held, fit): (Vec<usize>, Vec<usize>) =
                        train.iter().partition(|&&i| groups(i).contains(g));
                    // An input of two groups is scored once, in the first.
                    let held: Vec<usize> = held
                        .into_iter()
                        .filter(|i| !held_once.contains(i))
                        .collect();
                    held_once.extend(&held);
                    (!fit.is_empty() && !held.is_empty()).then_some((fit, held))
                })
                .collect();
            return (folds, true);
        }
        let mut shuffled = train.to_vec();
        shuffled.shuffle(&mut rand::rngs::SmallRng::seed_from_u64(self.seed));
        let folds = (0..self.folds)
            .map(|f| {
                let held: Vec<usize> = shuffled
                    .iter()
                    .skip(f)
                    .step_by(self.folds)
                    .copied()
                    .collect();
                let fit = train
                    .iter()
                    .copied()
                    .filter(|i| !held.contains(i))
                    .collect();
                (fit, held)
            })
            .collect();
        (folds, false)
    }
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::{Input, Node};

    /// 60 inputs along `n`; configuration `c` (of 6) is best on the tenth of inputs
    /// `10c..10c+10`, and every configuration is measured everywhere.
    pub(in crate::select) fn staircase() -> Matrix {
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
                    derived: false,
                    objective: Objective::Label,
                    guard: false,
                    fit_guard: false,
                    fit: false,
                },
                Recipe {
                    method: SetMethod::Greedy,
                    limits: TreeLimits::A,
                    derived: false,
                    objective: Objective::Label,
                    guard: false,
                    fit_guard: false,
                    fit: false,
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

    /// Inputs on a grid of m x n; configuration 0 is best where `m * n < 2^14`, 1 above:
    /// a boundary no split on `m` or `n` alone follows.
    fn product_boundary() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["m".into(), "n".into()]);
        for c in 0..2 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for a in 0..12 {
            for b in 0..12 {
                let (x, y) = (f64::from(1 << (a + 2)), f64::from(1 << (b + 2)));
                let group = ["a", "b", "c"][(a + b) % 3].to_string();
                let i = m.add_input(Input {
                    key: format!("m={x},n={y}"),
                    features: vec![x, y],
                    groups: vec![group],
                });
                let best = usize::from(x * y >= 16384.0);
                for c in 0..2 {
                    m.set(i, c, if c == best { 1.0 } else { 3.0 }).unwrap();
                }
            }
        }
        m
    }

    #[test]
    fn derived_features_are_chosen_where_they_separate_the_inputs() {
        let m = product_boundary();
        let train: Vec<usize> = (0..m.inputs().len()).collect();
        let shallow = TreeLimits {
            max_depth: Some(2),
            min_leaf: 1,
        };
        let own = Recipe {
            method: SetMethod::Greedy,
            limits: shallow,
            derived: false,
            objective: Objective::Label,
            guard: false,
            fit_guard: false,
            fit: false,
        };
        let nested = Nested {
            recipes: Recipe::and_derived(&[own]),
            derived: vec![Derived::Product {
                name: "mn".into(),
                terms: vec![(0, 1), (1, 1)],
            }],
            ..Nested::default()
        };
        let (s, choice) = nested.fit(&m, &train, 2).unwrap();
        assert!(choice.recipe.derived, "{:?}", choice.scores);
        assert!(choice.scores[0].1.geomean > 0.99, "{:?}", choice.scores);
        assert!(choice.scores[1].1.geomean < 0.95, "{:?}", choice.scores);
        assert_eq!(s.tree.shape(), (1, 2), "{:?}", s.tree);
        // Outside the grid, by the product.
        let c = |x: f64, y: f64| s.choose(&[x, y]).and_then(|c| c.get("C")).cloned();
        assert_eq!(c(1e6, 1e-3), Some(Value::Int(0)));
        assert_eq!(c(2.0, 1e5), Some(Value::Int(1)));
        let src = s.rust("fp").unwrap();
        assert!(
            src.contains("let __tune_mn: f64 = { let v: f64 = m * n;"),
            "{src}"
        );
        assert!(src.contains("if __tune_mn <= "), "{src}");
    }

    #[test]
    fn model_recipes_are_chosen_where_a_shallow_tree_cannot_follow_the_boundary() {
        // The boundary `m n = 2^14` is a line on the log sizes: a model per configuration
        // over them follows it; a depth-2 tree over `m` and `n` cannot.
        let m = product_boundary();
        let train: Vec<usize> = (0..m.inputs().len()).collect();
        let shallow = Recipe {
            method: SetMethod::Greedy,
            limits: TreeLimits {
                max_depth: Some(2),
                min_leaf: 1,
            },
            derived: false,
            objective: Objective::Label,
            guard: false,
            fit_guard: false,
            fit: false,
        };
        let a = Recipe {
            limits: TreeLimits::A,
            ..shallow
        };
        // Models are added once per tree-A recipe without a guard, for each basis.
        let recipes = Recipe::and_models(&[shallow, a, Recipe { guard: true, ..a }]);
        assert_eq!(recipes.len(), 5);
        assert_eq!(recipes[3].objective, Objective::Model(Basis::Linear));
        assert_eq!(recipes[4].name(), "greedy, quadratic model");
        let nested = Nested {
            recipes: vec![shallow, recipes[3]],
            ..Nested::default()
        };
        let (s, choice) = nested.fit(&m, &train, 2).unwrap();
        assert_eq!(choice.recipe, recipes[3], "{:?}", choice.scores);
        assert!(choice.scores[0].1.geomean > choice.scores[1].1.geomean + 0.02);
        assert!(matches!(s.tree, Node::Models(_)), "{:?}", s.tree);
        let c = |x: f64, y: f64| s.choose(&[x, y]).and_then(|c| c.get("C")).cloned();
        assert_eq!(c(4.0, 8.0), Some(Value::Int(0)));
        assert_eq!(c(8192.0, 4096.0), Some(Value::Int(1)));
        let src = s.rust("fp").unwrap();
        assert!(src.contains("if __tune_s1 > __tune_best.1"), "{src}");
    }

    #[test]
    fn group_folds_leave_each_group_out() {
        let mut m = product_boundary();
        // One input in two groups.
        let shared = m.add_input(Input {
            key: "m=3,n=3".into(),
            features: vec![3.0, 3.0],
            groups: vec!["a".into(), "b".into()],
        });
        let train: Vec<usize> = (0..m.inputs().len()).collect();
        let nested = Nested {
            by_group: true,
            ..Nested::default()
        };
        let (folds, grouped) = nested.folds_of(&m, &train);
        assert!(grouped);
        assert_eq!(folds.len(), 3);
        let groups = |i: usize| m.inputs()[i].groups.clone();
        for (g, (fit, held)) in ["a", "b", "c"].iter().zip(&folds) {
            assert!(
                fit.iter().all(|&i| !groups(i).contains(&g.to_string())),
                "{g}"
            );
            assert!(
                held.iter().all(|&i| groups(i).contains(&g.to_string())),
                "{g}"
            );
        }
        let scored: usize = folds.iter().map(|(_, h)| h.len()).sum();
        assert_eq!(scored, train.len(), "every input scored once");
        assert!(folds[0].1.contains(&shared) && !folds[1].1.contains(&shared));
        assert!(
            !folds[1].0.contains(&shared),
            "never fitted on while its group is out"
        );
        // One group only: random folds.
        let one = m.filtered(|_, _| true);
        let a: Vec<usize> = train
            .iter()
            .copied()
            .filter(|&i| groups(i) == ["c".to_string()])
            .collect();
        let (random, grouped) = nested.folds_of(&one, &a);
        assert_eq!((random.len(), grouped), (5, false));
        // Group folds need no more inputs than groups.
        let few: Vec<usize> = [0, 1, 2].into_iter().chain([shared]).collect();
        assert!(nested.choose(&m, &few, 2).is_ok());
        assert!(Nested::default().choose(&m, &few[..3], 2).is_err());
    }

    #[test]
    fn an_unmeasured_pick_counts_against_its_recipe() {
        // A (cost 1) and W (cost 4) measured everywhere; B (cost 0.5) only on 3 inputs of
        // 5, where it wins: Top-N's one configuration is B, greedy's is A.
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..3 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for i in 0..60 {
            let row = m.add_input(Input {
                key: format!("n={i}"),
                features: vec![i as f64],
                groups: vec![],
            });
            m.set(row, 0, 1.0).unwrap();
            m.set(row, 1, 4.0).unwrap();
            if i % 5 < 3 {
                m.set(row, 2, 0.5).unwrap();
            }
        }
        let recipe = |method| Recipe {
            method,
            limits: TreeLimits::A,
            derived: false,
            objective: Objective::Label,
            guard: false,
            fit_guard: false,
            fit: false,
        };
        let nested = Nested {
            recipes: vec![recipe(SetMethod::TopN), recipe(SetMethod::Greedy)],
            ..Nested::default()
        };
        let train: Vec<usize> = (0..60).collect();
        let choice = nested.choose(&m, &train, 1).unwrap();
        // Scoring only B's measured inputs gave Top-N 100% and the choice; each of the 24
        // inputs without B counts as its worst measured (W, 25%): 0.25^0.4 = 57%, below
        // greedy's 0.5^0.6 = 66%.
        assert_eq!(
            choice.recipe.method,
            SetMethod::Greedy,
            "{:?}",
            choice.scores
        );
        let top = &choice.scores[1].1;
        assert_eq!((top.scored, top.unmeasured), (60, 24), "{top:?}");
        assert!((top.geomean - 0.25f64.powf(0.4)).abs() < 1e-9, "{top:?}");
        assert!((choice.scores[0].1.geomean - 0.5f64.powf(0.6)).abs() < 1e-9);
    }

    /// Three groups along `n`: `a` (0-19), `b` (20-39), `c` (40-59). X wins `a` by 20%
    /// and `c` by 3 times, Y wins `b` by 4%: X is the robust one, and a tree fitted on
    /// two groups extrapolates the wrong label into the third where it lies beyond them.
    fn three_networks() -> Matrix {
        let mut m = Matrix::new("t", "d", vec!["n".into()]);
        for c in 0..2 {
            m.add_config(Named(vec![("C".into(), Value::Int(c))]));
        }
        for n in 0..60 {
            let i = m.add_input(Input {
                key: format!("n={n}"),
                features: vec![f64::from(n)],
                groups: vec![["a", "b", "c"][n as usize / 20].into()],
            });
            let (x, y) = match n {
                0..20 => (1.0, 1.2),
                20..40 => (1.04, 1.0),
                _ => (1.0, 3.0),
            };
            m.set(i, 0, x).unwrap();
            m.set(i, 1, y).unwrap();
        }
        m
    }

    #[test]
    fn a_range_guard_is_chosen_where_the_left_out_group_lies_beyond_the_others() {
        let m = three_networks();
        let train: Vec<usize> = (0..60).collect();
        let plain = Recipe {
            method: SetMethod::Greedy,
            limits: TreeLimits::A,
            derived: false,
            objective: Objective::Label,
            guard: false,
            fit_guard: false,
            fit: false,
        };
        let nested = Nested {
            recipes: Recipe::and_guarded(&[plain]),
            by_group: true,
            ..Nested::default()
        };
        let (s, choice) = nested.fit(&m, &train, 2).unwrap();
        // Left out, `a` and `c` lie outside the others' range: unguarded, the tree runs
        // Y there (83% and 33%); guarded, X (100%).
        assert!(choice.recipe.guard, "{:?}", choice.scores);
        assert!(
            (choice.scores[0].1.geomean - 1.04f64.powf(-1.0 / 3.0)).abs() < 1e-9,
            "{:?}",
            choice.scores
        );
        assert!(choice.scores[1].1.geomean < 0.7, "{:?}", choice.scores);
        assert_eq!(choice.recipe.name(), "greedy, tree A, range guard");
        let g = s.guard.clone().unwrap();
        assert_eq!((g.ranges, g.choice), (vec![(0.0, 59.0)], 0));
        let c = |n: f64| s.choose(&[n]).and_then(|c| c.get("C")).cloned();
        assert_eq!(c(30.0), Some(Value::Int(1)));
        assert_eq!(c(500.0), Some(Value::Int(0)));
        assert_eq!(c(-1.0), Some(Value::Int(0)));
        // Cost trees enter the same way.
        let both = Nested {
            recipes: Recipe::and_cost(&[plain]),
            ..nested
        };
        let choice = both.choose(&m, &train, 2).unwrap();
        assert_eq!(choice.scores.len(), 2);
        assert!(choice
            .scores
            .iter()
            .any(|(r, _)| r.objective == Objective::GeoMean && r.name() == "greedy, cost tree A"));
    }

    #[test]
    fn too_few_inputs_for_the_folds_is_an_error() {
        let m = staircase();
        assert!(Nested::default().choose(&m, &[0, 1, 2], 2).is_err());
    }

    #[test]
    fn tile_fit_recipes_are_chosen_where_the_best_tile_alternates_with_the_size() {
        // A 64-row tile does a row in 0.85 of a 32-row one's time but pads m to 64s.
        let mut m = Matrix::new("t", "d", vec!["m".into()]);
        for t in [32, 64] {
            m.add_config(Named(vec![("tile".into(), Value::Int(t))]));
        }
        for x in (32u32..=1024).step_by(32) {
            let i = m.add_input(Input {
                key: format!("m={x}"),
                features: vec![f64::from(x)],
                groups: vec![],
            });
            for (c, t) in [32u32, 64].into_iter().enumerate() {
                let per_row = if t == 64 { 0.85 } else { 1.0 };
                m.set(i, c, f64::from(x.div_ceil(t) * t) * per_row).unwrap();
            }
        }
        // Depth 2: too shallow to follow three alternations on `m`, enough on a fit.
        let own = Recipe {
            method: SetMethod::Greedy,
            limits: TreeLimits {
                max_depth: Some(2),
                min_leaf: 1,
            },
            derived: false,
            objective: Objective::Label,
            guard: false,
            fit_guard: false,
            fit: false,
        };
        let nested = Nested {
            recipes: Recipe::and_fit(&[own]),
            tilings: vec![Tiling {
                dims: vec![(0, "tile".into())],
            }],
            folds: 4,
            ..Nested::default()
        };
        let train: Vec<usize> = (0..m.inputs().len()).collect();
        let (s, choice) = nested.fit(&m, &train, 2).unwrap();
        assert!(choice.recipe.fit, "{:?}", choice.scores);
        assert!(choice.scores[0].1.geomean > choice.scores[1].1.geomean);
        assert!(s.derived.iter().any(|d| d.name() == "fit_m64"));
        // Without tilings a fit recipe reads nothing more than its plain twin.
        let bare = Nested {
            tilings: Vec::new(),
            ..nested
        };
        let c = bare.choose(&m, &train, 2).unwrap();
        assert_eq!(c.scores[0].1.geomean, c.scores[1].1.geomean);
    }
}
