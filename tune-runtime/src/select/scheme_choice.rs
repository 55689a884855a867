//! Choosing the scheme that ships, nested once more (select11). A [`Nested`] scheme
//! chooses a recipe by cross-validation inside the training inputs; which scheme (which
//! recipes, with or without a fit shift, ...) ships was chosen by people, by looking at
//! earlier runs' test scores (select10's caveat). Here each candidate scheme is fitted on
//! all folds of the training inputs but one (its own cross-validation inside those) and
//! its selector scored on the fold left out; the scheme with the best geometric mean over
//! every left-out input is fitted on all the training inputs. The folds are the first
//! scheme's (`Nested::folds_of`: one per group where it folds by group); inputs outside
//! `train` are never read.

use std::collections::HashMap;

use rayon::prelude::*;

use super::deploy::Selector;
use super::matrix::{score_or_worst, Matrix, Score};
use super::nested::{Choice, Nested};
use crate::{Error, Result};

/// Candidate schemes, each with a name for reports; the first wins ties.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemeChoice {
    /// `(name, scheme)`.
    pub schemes: Vec<(String, Nested)>,
}

/// The cross-validation's result: the index of the chosen scheme and every scheme's
/// score on the left-out folds (in [`SchemeChoice::schemes`]' order; a selector's pick
/// not measured on its input, or a fold the scheme could not be fitted on, counts as the
/// input's worst measured configuration).
#[derive(Clone, Debug, PartialEq)]
pub struct SchemeScores {
    /// Index into [`SchemeChoice::schemes`].
    pub chosen: usize,
    /// Per scheme.
    pub scores: Vec<Score>,
}

impl SchemeChoice {
    /// Chooses the scheme for `k` configurations by cross-validation over `train`.
    ///
    /// # Errors
    /// [`Error::Select`] for no scheme, or fewer than 2 folds of `train`.
    pub fn choose(&self, m: &Matrix, train: &[usize], k: usize) -> Result<SchemeScores> {
        let first = self
            .schemes
            .first()
            .ok_or_else(|| Error::Select("no scheme to choose among".into()))?;
        let (folds, _) = first.1.folds_of(m, train);
        if folds.len() < 2 {
            return Err(Error::Select(format!(
                "choosing a scheme needs at least 2 folds of the {} training inputs",
                train.len()
            )));
        }
        let held_all: Vec<usize> = folds.iter().flat_map(|(_, h)| h.iter().copied()).collect();
        // Every (scheme, fold) fit is independent: on every core (each is a whole nested
        // choice of hundreds of recipes).
        let jobs: Vec<(usize, usize)> = (0..self.schemes.len())
            .flat_map(|s| (0..folds.len()).map(move |f| (s, f)))
            .collect();
        let fitted: Vec<(usize, Vec<(usize, usize)>)> = jobs
            .par_iter()
            .map(|&(s, f)| {
                let (fit, held) = &folds[f];
                // A fold the scheme cannot be fitted on scores its inputs' worst.
                let Ok((sel, _)) = self.schemes[s].1.fit(m, fit, k) else {
                    return (s, Vec::new());
                };
                let picks = held
                    .iter()
                    .filter_map(|&i| {
                        sel.choose(&m.inputs()[i].features)
                            .and_then(|cfg| m.configs().iter().position(|x| x == cfg))
                            .map(|c| (i, c))
                    })
                    .collect();
                (s, picks)
            })
            .collect();
        let scores = (0..self.schemes.len())
            .map(|s| {
                let picks: HashMap<usize, usize> = fitted
                    .iter()
                    .filter(|(t, _)| *t == s)
                    .flat_map(|(_, p)| p.iter().copied())
                    .collect();
                score_or_worst(m, &held_all, |i| picks.get(&i).copied())
            })
            .collect::<Vec<Score>>();
        // The first of the best: ties keep the earlier scheme.
        let mut chosen = 0;
        for (i, s) in scores.iter().enumerate() {
            if s.geomean > scores[chosen].geomean {
                chosen = i;
            }
        }
        Ok(SchemeScores { chosen, scores })
    }

    /// The selector of `k` configurations that ships from `train`: the scheme
    /// [`SchemeChoice::choose`] picks, fitted on all of `train`.
    ///
    /// # Errors
    /// As [`SchemeChoice::choose`] and [`Nested::fit`].
    pub fn fit(
        &self,
        m: &Matrix,
        train: &[usize],
        k: usize,
    ) -> Result<(Selector, Choice, SchemeScores)> {
        let scores = self.choose(m, train, k)?;
        let (s, choice) = self.schemes[scores.chosen].1.fit(m, train, k)?;
        Ok((s, choice, scores))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::select::nested::tests::staircase;
    use crate::select::nested::Recipe;
    use crate::select::{SetMethod, TreeLimits};

    /// A scheme whose only recipe is a greedy set under a tree of depth `depth`.
    fn scheme(depth: usize) -> Nested {
        Nested {
            recipes: vec![Recipe::tree(
                SetMethod::Greedy,
                TreeLimits {
                    max_depth: Some(depth),
                    min_leaf: 1,
                },
            )],
            ..Nested::default()
        }
    }

    #[test]
    fn the_scheme_that_scores_better_on_the_left_out_folds_ships() {
        let m = staircase();
        let train: Vec<usize> = (0..60).collect();
        // Depth 1 cannot separate 6 steps; depth 3 can. Listed first, depth 1 loses.
        let choice = SchemeChoice {
            schemes: vec![("depth 1".into(), scheme(1)), ("depth 3".into(), scheme(3))],
        };
        let s = choice.choose(&m, &train, 6).unwrap();
        assert_eq!(s.chosen, 1);
        assert!(s.scores[1].geomean > s.scores[0].geomean + 0.1, "{s:?}");
        let (sel, c, t) = choice.fit(&m, &train, 6).unwrap();
        assert_eq!(t, s);
        assert_eq!(c.recipe.limits.max_depth, Some(3));
        assert_eq!(sel.configs.len(), 6);
        // Equal schemes: the first wins.
        let twice = SchemeChoice {
            schemes: vec![("a".into(), scheme(3)), ("b".into(), scheme(3))],
        };
        let t = twice.choose(&m, &train, 6).unwrap();
        assert_eq!(t.scores[0], t.scores[1]);
        assert_eq!(t.chosen, 0);
    }

    #[test]
    fn the_choice_reads_only_the_training_inputs() {
        let m = staircase();
        let train: Vec<usize> = (0..40).collect();
        let choice = SchemeChoice {
            schemes: vec![("depth 1".into(), scheme(1)), ("depth 3".into(), scheme(3))],
        };
        let a = choice.choose(&m, &train, 4).unwrap();
        let other = m.filtered(|i, _| i < 40);
        assert_eq!(a, choice.choose(&other, &train, 4).unwrap());
    }

    #[test]
    fn no_scheme_is_an_error() {
        let m = staircase();
        let train: Vec<usize> = (0..60).collect();
        let none = SchemeChoice { schemes: vec![] };
        assert!(none.choose(&m, &train, 2).is_err());
    }
}
