//! A fit shift (select10): where a tree's pick would run on a shape its tile fits worse
//! than on every training shape of the leaf that chose it, the pick is re-weighed.
//!
//! A tree places a threshold halfway (on a log scale) between the training sizes it saw;
//! a shape in a gap of them takes the side the threshold puts it on. MobileNet's 32-row
//! GEMMs, with ResNet and VGG trained (sizes 3 and 64 or more), reach leaves of 64-row
//! and larger shapes and run a 64-row tile, which pads half their rows away (37-45% of
//! their optimum on the H200, where the set's 32-row tile reaches 84-100%: select10's
//! item 1 in bench/select/RESULTS.md). select9's fit guard compared the tiles with each
//! other on the shape and excluded too much where every tile fits badly (tiny `k`); this
//! compares each configuration's output fit (`m` and `n` only: a block of C computed and
//! thrown away; padding in `k` costs a few loop steps where `k` is tiny) with the least
//! the leaf's training shapes gave it, and does nothing inside that range.
//!
//! Per leaf it keeps, per set position, the geometric-mean share of the best over the
//! leaf's training shapes and the least output fit among them. On a shape where the pick
//! fits below its least, each position scores its share times `min(1, fit / least)`
//! (its fit lost against what the leaf saw; time taken as proportional to the padded
//! work), the pick with the leaf's best share (the tree chose it there), and the best
//! score runs (ties to the pick, then to the lower position). No measurement, no
//! allocation: the generated dispatch computes the pick's fit in each leaf and the
//! others' only where it is short ([`Selector::rust`](super::Selector::rust)).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::cost::log_shares;
use super::deploy::Selector;
use super::features::{tile_fit, Derived, Tiling};
use super::matrix::Matrix;

/// Per leaf, per set position: (its geometric-mean share of the best over the leaf's
/// training inputs, the least output fit among them).
pub type LeafStats = Vec<(f64, f64)>;

/// What a selector's leaves saw of its tiles, for re-weighing picks outside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitShift {
    /// Per set position, its output tile: `(own feature index, size)` per dimension;
    /// empty for a configuration not tiled (fit 1).
    pub tiles: Vec<Vec<(usize, u32)>>,
    /// Per leaf of the tree, in [`Node::leaf`](super::Node::leaf)'s order.
    pub leaves: Vec<LeafStats>,
}

impl FitShift {
    /// The shift of the set `set` (configuration indices of `m`) from its training inputs
    /// and the leaf each reached (`reached`: `(input, leaf)`; `leaves` leaves), each
    /// configuration tiled by the first of `tilings` that fits it (output dimensions
    /// only). A leaf no training input reached with a measured configuration of the set
    /// keeps shares and fits of 0 (nothing shifts there).
    pub fn fit(
        m: &Matrix,
        reached: &[(usize, usize)],
        leaves: usize,
        set: &[usize],
        tilings: &[Tiling],
    ) -> FitShift {
        let tiles: Vec<Vec<(usize, u32)>> = set
            .iter()
            .map(|&c| {
                m.configs()
                    .get(c)
                    .and_then(|cfg| tilings.iter().find_map(|t| t.tile(cfg)))
                    .unwrap_or_default()
            })
            .collect();
        let mut sums = vec![(vec![0.0; set.len()], vec![f64::INFINITY; set.len()], 0usize); leaves];
        for &(i, leaf) in reached {
            let (Some(shares), Some((sum, least, n))) = (log_shares(m, i, set), sums.get_mut(leaf))
            else {
                continue;
            };
            let own = &m.inputs()[i].features;
            for (p, s) in shares.into_iter().enumerate() {
                sum[p] += s;
                least[p] = least[p].min(tiles.get(p).map_or(1.0, |t| tile_fit(t, own)));
            }
            *n += 1;
        }
        let leaves = sums
            .into_iter()
            .map(|(sum, least, n)| {
                if n == 0 {
                    return vec![(0.0, 0.0); set.len()];
                }
                sum.iter()
                    .zip(least)
                    .map(|(s, l)| ((s / n as f64).exp(), l))
                    .collect()
            })
            .collect();
        FitShift { tiles, leaves }
    }

    /// The output fit of set position `p` on an input with these own features.
    pub fn fit_of(&self, p: usize, own: &[f64]) -> f64 {
        self.tiles.get(p).map_or(1.0, |t| tile_fit(t, own))
    }

    /// The set position that runs where the tree chose `pick` in leaf `leaf` (see the
    /// module docs); the generated dispatch does the same operations in the same order.
    pub fn apply(&self, leaf: usize, pick: usize, own: &[f64]) -> usize {
        let Some(stats) = self.leaves.get(leaf) else {
            return pick;
        };
        let Some(&(_, least)) = stats.get(pick) else {
            return pick;
        };
        if self.fit_of(pick, own) >= least {
            return pick;
        }
        let ratio = |p: usize, l: f64| {
            if l > 0.0 {
                (self.fit_of(p, own) / l).min(1.0)
            } else {
                1.0
            }
        };
        let top = stats.iter().fold(0.0f64, |a, s| a.max(s.0));
        let mut best = (pick, top * ratio(pick, least));
        for (p, s) in stats.iter().enumerate() {
            // A ratio is at most 1: a share at or below the best score cannot beat it.
            if s.0 > best.1 {
                let v = s.0 * ratio(p, s.1);
                if v > best.1 {
                    best = (p, v);
                }
            }
        }
        best.0
    }

    /// The locals the generated dispatch binds before the tree (`own`: the own features'
    /// locals): `__tune_fit(p)`, each position's output fit, and `__tune_shift(pick,
    /// least, top, stats)`, [`FitShift::apply`] for one leaf's stats and best share where
    /// the pick's fit is short.
    pub(super) fn rust_prelude(&self, own: &[String], out: &mut String) {
        out.push_str("    let __tune_fit = |p: usize| -> f64 {\n        match p {\n");
        for (p, t) in self.tiles.iter().enumerate() {
            if !t.is_empty() {
                let expr = Derived::Fit {
                    name: String::new(),
                    tiles: t.clone(),
                }
                .rust(own);
                let _ = writeln!(out, "            {p} => {expr},");
            }
        }
        out.push_str("            _ => 1.0,\n        }\n    };\n");
        // The re-weighing reads most positions' fits: each distinct tile side's share
        // (`x / (ceil(x / t) * t)`, a libm call and a division) once, the fits their
        // products in `tile_fit`'s order (select11: the same values, from 16 sides to 6
        // on a GEMM set of 8; the out-of-range calls' cost).
        let mut sides: Vec<(usize, u32)> = Vec::new();
        for &d in self.tiles.iter().flatten() {
            if !sides.contains(&d) {
                sides.push(d);
            }
        }
        out.push_str(
            "    let __tune_shift = |pick: usize, least: f64, top: f64, stats: &[(f64, f64)]| -> usize {\n",
        );
        let side: Vec<String> = sides
            .iter()
            .map(|&(i, t)| {
                let x = own.get(i).map_or("0.0", String::as_str);
                format!("{x} / (({x} / {t}.0).ceil() * {t}.0)")
            })
            .collect();
        let _ = writeln!(
            out,
            "        let d: [f64; {}] = [{}];",
            side.len(),
            side.join(", ")
        );
        out.push_str("        let fit = |p: usize| -> f64 {\n            let v: f64 = match p {\n");
        for (p, t) in self.tiles.iter().enumerate() {
            if !t.is_empty() {
                let product: Vec<String> = t
                    .iter()
                    .filter_map(|d| sides.iter().position(|s| s == d))
                    .map(|j| format!("d[{j}]"))
                    .collect();
                let _ = writeln!(out, "                {p} => {},", product.join(" * "));
            }
        }
        out.push_str(
            "                _ => 1.0,
            };
            if v.is_finite() { v } else { 0.0 }
        };
        let ratio = |p: usize, l: f64| if l > 0.0 { (fit(p) / l).min(1.0) } else { 1.0 };
        let mut best = (pick, top * ratio(pick, least));
        for (p, s) in stats.iter().enumerate() {
            // A ratio is at most 1: a share at or below the best score cannot beat it.
            if s.0 > best.1 {
                let v = s.0 * ratio(p, s.1);
                if v > best.1 {
                    best = (p, v);
                }
            }
        }
        best.0
    };
",
        );
    }

    /// The generated expression of leaf `leaf` where the tree chose `pick`.
    pub(super) fn rust_leaf(&self, leaf: usize, pick: usize) -> String {
        let Some(stats) = self.leaves.get(leaf) else {
            return format!("{pick}usize");
        };
        let Some(&(_, least)) = stats.get(pick) else {
            return format!("{pick}usize");
        };
        let list: Vec<String> = stats
            .iter()
            .map(|(s, l)| format!("({s:?}, {l:?})"))
            .collect();
        // The leaf's best share is a constant of the leaf (select11: folded at run time
        // before).
        let top = stats.iter().fold(0.0f64, |a, s| a.max(s.0));
        // The pick's own fit inline (the common case), the re-weighing a call.
        format!(
            "if __tune_fit({pick}) >= {least:?} {{ {pick}usize }} else {{ __tune_shift({pick}, {least:?}, {top:?}, &[{}]) }}",
            list.join(", ")
        )
    }
}

impl Selector {
    /// This selector with a [`FitShift`] of its tree, fitted on `train` of `m` (the
    /// matrix it was fitted on, with its own features first), each configuration tiled
    /// by the first of `tilings` that fits it. Unchanged where its tree is a model or no
    /// configuration has a tile of `tilings`.
    ///
    /// # Errors
    /// [`crate::Error::Select`] when `m` lacks a deployed configuration or the selector
    /// has a fit guard (one or the other).
    pub fn with_fit_shift(
        mut self,
        m: &Matrix,
        train: &[usize],
        tilings: &[Tiling],
    ) -> crate::Result<Selector> {
        if self.fit_guard.is_some() {
            return Err(crate::Error::Select(
                "a selector has a fit guard or a fit shift, not both".into(),
            ));
        }
        if matches!(self.tree, super::Node::Models(_)) {
            return Ok(self);
        }
        let set = self.positions_in(m)?;
        let reached: Vec<(usize, usize)> = train
            .iter()
            .map(|&i| {
                let all = super::features::extend(&m.inputs()[i].features, &self.derived);
                (i, self.tree.leaf(&all))
            })
            .collect();
        let shift = FitShift::fit(m, &reached, self.tree.leaves(), &set, tilings);
        // No configuration with a tile: every fit is 1 and nothing shifts; no code for it
        // in the dispatch (a CPU GEMM's blocks, select12).
        self.fit_shift = shift.tiles.iter().any(|t| !t.is_empty()).then_some(shift);
        Ok(self)
    }
}

#[cfg(test)]
#[path = "fit_shift_tests.rs"]
mod tests;
