//! A guard that needs no measurement (select9): at dispatch, a deployed configuration
//! whose tile wastes half the useful work of the best-fitting deployed one, or more, is
//! never run. A tree picks by thresholds it learnt where it saw shapes; between and
//! beyond them it may send a 32-row GEMM to a 64-row tile (half the work padding). The
//! fit (`m n k` over the padded `m n k`, [`tile_fit`]) is known for every configuration
//! on every shape without running it, so the guard holds where no shape was trained.
//!
//! A configuration is **excluded** on a shape when its fit is below the best fit of the
//! set and at most [`FitGuard::ratio`] (1/2: [`RATIO`]) times it. The tree's (or the
//! range guard's) choice, if excluded, falls back to the first configuration of
//! [`FitGuard::order`] (the set ranked by its geometric mean share over the training
//! inputs, as [`robust`](super::cost::robust) ranks it) that is not excluded; the
//! best-fitting configuration never is, so every shape gets one. A configuration
//! without tiles fits 1; a shape whose fits are all 0 (a size of 0) excludes none.

use serde::{Deserialize, Serialize};

use super::cost::summed_log_shares;
use super::features::{tile_fit, Tiling};
use super::matrix::Matrix;

/// The ratio of [`FitGuard`], fixed before select9's GPU run (see the module docs): the
/// known misses are 64-row tiles on 32-row shapes, a fit of exactly 1/2 of the best, so
/// the rule includes 1/2.
pub const RATIO: f64 = 0.5;

/// Which deployed configurations a shape may run, by their tiles' fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitGuard {
    /// Per set position, its tile: `(own feature index, size)` per dimension; empty for a
    /// configuration not tiled (fit 1).
    pub tiles: Vec<Vec<(usize, u32)>>,
    /// Set positions in the order the fallback tries them (best first).
    pub order: Vec<usize>,
    /// A configuration below the best fit and at most `ratio` times it is excluded.
    pub ratio: f64,
}

impl FitGuard {
    /// The guard of the set `set` (configuration indices of `m`) fitted on `train`, with
    /// each configuration tiled by the first of `tilings` that fits it; the fallback
    /// order ranks the set by its summed log shares over `train` (ties to the lower
    /// position). `None` when no training input has a measured configuration of the set.
    pub fn fit(m: &Matrix, train: &[usize], set: &[usize], tilings: &[Tiling]) -> Option<FitGuard> {
        let sums = summed_log_shares(m, train, set)?;
        let mut order: Vec<usize> = (0..set.len()).collect();
        // Stable: equal sums keep the lower position first.
        order.sort_by(|&a, &b| sums[b].total_cmp(&sums[a]));
        let tiles = set
            .iter()
            .map(|&c| {
                m.configs()
                    .get(c)
                    .and_then(|cfg| tilings.iter().find_map(|t| t.tile(cfg)))
                    .unwrap_or_default()
            })
            .collect();
        Some(FitGuard {
            tiles,
            order,
            ratio: RATIO,
        })
    }

    /// Whether a configuration of fit `fit` may run where the set's best fit is `top`
    /// (the generated dispatch tests the same: `fit >= top || fit > ratio * top`).
    pub fn allowed(&self, fit: f64, top: f64) -> bool {
        fit >= top || fit > self.ratio * top
    }

    /// The set position that runs on an input with these own features when the tree (or
    /// the range guard) chose `pick`.
    pub fn apply(&self, pick: usize, own: &[f64]) -> usize {
        let fit = |p: usize| self.tiles.get(p).map_or(1.0, |t| tile_fit(t, own));
        let top = (0..self.tiles.len())
            .map(fit)
            .fold(f64::NEG_INFINITY, f64::max);
        if self.allowed(fit(pick), top) {
            return pick;
        }
        self.order
            .iter()
            .copied()
            .find(|&p| self.allowed(fit(p), top))
            .unwrap_or(pick)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param::Value;
    use crate::results::Named;
    use crate::select::Input;

    /// Tiles of 64, 32 and 16 rows and an untiled configuration; the 64-row one is best
    /// on every training input (so the fallback order starts with it).
    fn matrix() -> Matrix {
        let mut m = Matrix::new("gemm", "gpu", vec!["m".into(), "n".into()]);
        for t in [64, 32, 16] {
            m.add_config(Named(vec![("BM".into(), Value::Int(t))]));
        }
        m.add_config(Named(vec![("OTHER".into(), Value::Int(1))]));
        for x in [64.0, 128.0, 256.0] {
            let i = m.add_input(Input {
                key: format!("m={x},n=1"),
                features: vec![x, 1.0],
                groups: vec![],
            });
            for (c, t) in [1.0, 2.0, 3.0, 4.0].into_iter().enumerate() {
                m.set(i, c, t).unwrap();
            }
        }
        m
    }

    fn tilings() -> Vec<Tiling> {
        vec![Tiling {
            dims: vec![(0, "BM".into())],
        }]
    }

    #[test]
    fn the_fallback_ranks_the_set_and_untiled_configurations_fit_one() {
        let g = FitGuard::fit(&matrix(), &[0, 1, 2], &[3, 1, 0, 2], &tilings()).unwrap();
        // Set positions: 0 untiled, 1 BM=32, 2 BM=64, 3 BM=16; best first.
        assert_eq!(g.order, [2, 1, 3, 0]);
        assert_eq!(
            g.tiles,
            [vec![], vec![(0, 32)], vec![(0, 64)], vec![(0, 16)]]
        );
        assert_eq!(g.ratio, RATIO);
        assert!(FitGuard::fit(&matrix(), &[], &[0], &tilings()).is_none());
    }

    #[test]
    fn a_tile_at_half_the_best_fit_or_worse_falls_back_in_order() {
        // Positions: 0 BM=64, 1 BM=32, 2 BM=16 (order: 0, 1, 2).
        let g = FitGuard::fit(&matrix(), &[0, 1, 2], &[0, 1, 2], &tilings()).unwrap();
        assert_eq!(g.order, [0, 1, 2]);
        let run = |pick: usize, m: f64| g.apply(pick, &[m, 1.0]);
        // m = 32: the 64-row tile fits 1/2 of the best (1): excluded; the next in order
        // (32 rows) runs, whichever was picked.
        assert_eq!(run(0, 32.0), 1);
        assert_eq!(run(1, 32.0), 1);
        assert_eq!(run(2, 32.0), 2);
        // m = 16: 64 rows fit 1/4, 32 rows 1/2: both excluded, 16 rows runs.
        assert_eq!(run(0, 16.0), 2);
        assert_eq!(run(1, 16.0), 2);
        // m = 48: 64 rows fit 3/4, 32 rows 3/4, 16 rows 1: all may run.
        for p in 0..3 {
            assert_eq!(run(p, 48.0), p);
        }
        // m = 40: 64 rows 0.625, 32 rows 0.625, 16 rows 0.833: above half, all run.
        assert_eq!(run(0, 40.0), 0);
        // m = 1: every tile pads to 1/16 or worse; the best fit (16 rows) runs.
        assert_eq!(run(0, 1.0), 2);
        // No work (m = 0) or no number: every fit is 0, nothing is excluded.
        assert_eq!(run(0, 0.0), 0);
        assert_eq!(run(1, f64::NAN), 1);
        // Far beyond any size: every tile fits (nearly) 1.
        assert_eq!(run(0, f64::from(u32::MAX)), 0);
        assert_eq!(run(0, 1e300), 0);
        // Back from its JSON.
        let back: FitGuard = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }

    #[test]
    fn an_untiled_configuration_is_never_excluded() {
        // Positions: 0 BM=64, 1 untiled.
        let g = FitGuard::fit(&matrix(), &[0, 1, 2], &[0, 3], &tilings()).unwrap();
        assert_eq!(g.apply(1, &[1.0, 1.0]), 1);
        // m = 16: the 64-row tile fits 1/4 of the untiled configuration's 1.
        assert_eq!(g.apply(0, &[16.0, 1.0]), 1);
        assert_eq!(g.apply(0, &[64.0, 1.0]), 0);
    }
}
