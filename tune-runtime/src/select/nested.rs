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
use super::fit_shift::FitShift;
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
    /// Whether a tree's pick is re-weighed where its output tile fits the input worse
    /// than every training input of its leaf ([`FitShift`] over [`Nested::shift_tilings`];
    /// select10).
    #[serde(default)]
    pub fit_shift: bool,
}

impl Recipe {
    /// A set method and a plain tree: on the input's own features, label-optimised, none
    /// of the guards, fits or shifts (each added with struct update or the `and_*` lists).
    pub fn tree(method: SetMethod, limits: TreeLimits) -> Recipe {
        Recipe {
            method,
            limits,
            derived: false,
            objective: Objective::Label,
            guard: false,
            fit: false,
            fit_guard: false,
            fit_shift: false,
        }
    }

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
        let fit_shift = if self.fit_shift { ", fit shift" } else { "" };
        format!(
            "{}, {cost}{tree}{features}{fit}{guard}{fit_guard}{fit_shift}",
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
                [TreeLimits::A, TreeLimits::B, TreeLimits::C]
                    .map(|limits| Recipe::tree(method, limits))
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

/// A recipe's picks on a fold: `(input, set position, the tree's leaf where the tree
/// chose)` for each left-out input, and the leaf each fitted input reached.
#[derive(Default)]
struct FoldPicks {
    picks: Vec<(usize, usize, Option<usize>)>,
    reached: Vec<(usize, usize)>,
    leaves: usize,
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
    /// How the configurations tile the output, for a recipe with `fit_shift` and for
    /// [`Nested::shift_chosen`] ([`FitShift`]; empty: nothing shifts).
    pub shift_tilings: Vec<Tiling>,
    /// Whether the chosen recipe, where it is a tree without a fit guard, ships with a
    /// [`FitShift`] (its [`Recipe::fit_shift`] set in the [`Choice`]); the folds score
    /// the recipes as they are. The shift moves no training input's pick, so it leaves
    /// the choice among the recipes alone (select10).
    pub shift_chosen: bool,
    /// Whether a model recipe ([`Objective::Model`]) may ship. Off by default: the issue
    /// asks for a decision tree in the dispatch (a model per configuration costs 5x its
    /// time, select11), so models are scored beside the trees but the best tree ships.
    pub models_ship: bool,
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
            shift_tilings: Vec::new(),
            shift_chosen: false,
            models_ship: false,
        }
    }
}

/// The cross-validation's result: the recipe chosen and every recipe's score over the
/// left-out inputs (best first).
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The shippable recipe ([`Nested::ships`]) with the best score.
    pub recipe: Recipe,
    /// Its score on the left-out folds.
    pub inner: Score,
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
            // A fit-guarded or fit-shifted recipe reuses its plain twin's picks (the same
            // tree).
            let mut base_picks: HashMap<Recipe, FoldPicks> = HashMap::new();
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
                    fit_shift: false,
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
                let shift = recipe
                    .fit_shift
                    .then(|| FitShift::fit(m, &p.reached, p.leaves, &chosen, &self.shift_tilings));
                for &(i, pos, leaf) in &p.picks {
                    let own = &m.inputs()[i].features;
                    let pos = match (&shift, leaf) {
                        (Some(f), Some(l)) => f.apply(l, pos, own),
                        _ => pos,
                    };
                    let pos = match &guard {
                        Some(g) => g.apply(pos, own),
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
        // Every recipe is scored; only a shippable one is chosen.
        let (recipe, inner) = scores
            .iter()
            .find(|(r, _)| self.ships(r))
            .cloned()
            .ok_or_else(|| {
                Error::Select("no shippable recipe could be fitted on any fold".into())
            })?;
        Ok(Choice {
            recipe,
            inner,
            scores,
        })
    }

    /// Whether `recipe` may ship: a tree, or any recipe where [`Nested::models_ship`].
    pub fn ships(&self, recipe: &Recipe) -> bool {
        self.models_ship || !matches!(recipe.objective, Objective::Model(_))
    }

    /// The selector of `k` configurations that ships from `train`: the recipe
    /// [`Nested::choose`] picks, fitted on all of `train`.
    ///
    /// # Errors
    /// As [`Nested::choose`] and [`Selector::fit`].
    pub fn fit(&self, m: &Matrix, train: &[usize], k: usize) -> Result<(Selector, Choice)> {
        let mut choice = self.choose(m, train, k)?;
        if self.shift_chosen
            && !matches!(choice.recipe.objective, Objective::Model(_))
            && !choice.recipe.fit_guard
        {
            choice.recipe.fit_shift = true;
        }
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
        let s = if r.fit_shift {
            s.with_fit_shift(m, train, &self.shift_tilings)?
        } else {
            s
        };
        Ok((s, choice))
    }

    /// The set position `recipe` (its fit guard and shift not read) picks for each input
    /// of `held` when fitted on `fit` with the set `chosen`; none where it cannot be
    /// fitted. `extended`: `m` with [`Nested::derived`].
    fn fold_picks(
        &self,
        m: &Matrix,
        extended: &Matrix,
        (fit, held): (&[usize], &[usize]),
        recipe: &Recipe,
        chosen: &[usize],
    ) -> FoldPicks {
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
            return FoldPicks::default();
        };
        let guard = if recipe.guard {
            let Some(g) = Guard::fit(features, fit, chosen) else {
                return FoldPicks::default();
            };
            Some(g)
        } else {
            None
        };
        let leaf = |i: usize| tree.leaf(&features.inputs()[i].features);
        FoldPicks {
            picks: held
                .iter()
                .map(|&i| {
                    let x = &features.inputs()[i].features;
                    match &guard {
                        Some(g) if !g.inside(x) => (i, g.choice, None),
                        _ => (i, tree.choose(x), Some(leaf(i))),
                    }
                })
                .collect(),
            reached: fit.iter().map(|&i| (i, leaf(i))).collect(),
            leaves: tree.leaves(),
        }
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
    pub(super) fn folds_of(
        &self,
        m: &Matrix,
        train: &[usize],
    ) -> (Vec<(Vec<usize>, Vec<usize>)>, bool) {
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
#[path = "nested_tests.rs"]
pub(super) mod tests;
