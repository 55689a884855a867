//! Records of the kernel on other devices pooled with the run's own measurements in the
//! surrogate's training rows (see [`Surrogate::pool`]).

use super::Surrogate;
use crate::space::Space;

/// Rows from other devices, each `(target index, ln(time / that device's optimum))`.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    rows: Vec<(u128, f64)>,
    /// Each of the run's own measurements counts as this many rows from the pool.
    weight: usize,
    /// Whether a feature tells the run's own rows (1) from the pool's (0).
    pub(super) flag: bool,
    /// The pool's rows as features (set by [`Surrogate::place_pool`] in `init`).
    x: Vec<Vec<f64>>,
    y: Vec<f64>,
}

impl Surrogate {
    /// Trains the model on `rows` from other devices (target index and
    /// `ln(time / that device's optimum)`) beside the run's own measurements, each of which
    /// counts as `weight` of those rows. The run's costs enter on the same scale, as
    /// `ln(cost / the best cost measured so far)`. With `flag`, a feature tells the run's
    /// rows from the others, so the trees can split the device off where it differs.
    #[must_use]
    pub(crate) fn pool(mut self, rows: Vec<(u128, f64)>, weight: usize, flag: bool) -> Self {
        self.pool = Some(Pool {
            rows,
            weight: weight.max(1),
            flag,
            x: Vec::new(),
            y: Vec::new(),
        });
        self
    }

    /// The pool's features on `space` (after `all` is built, so that the flag is in place).
    pub(super) fn place_pool(&mut self, space: &Space) {
        let Some(rows) = self.pool.as_ref().map(|p| p.rows.clone()) else {
            return;
        };
        let flag = self.pool.as_ref().is_some_and(|p| p.flag);
        let (mut x, mut y) = (
            Vec::with_capacity(rows.len()),
            Vec::with_capacity(rows.len()),
        );
        for (i, g) in rows {
            if let Some(mut f) = self.features_of(space, i) {
                if flag {
                    if let Some(last) = f.last_mut() {
                        *last = 0.0;
                    }
                }
                x.push(f);
                y.push(g);
            }
        }
        if let Some(p) = &mut self.pool {
            p.x = x;
            p.y = y;
        }
    }

    /// The run's rows on the pool's scale (log cost minus the lowest), each repeated by
    /// the weight, then the pool's rows; unchanged without a pool.
    pub(super) fn pooled(&self, x: Vec<Vec<f64>>, y: Vec<f64>) -> (Vec<Vec<f64>>, Vec<f64>) {
        let Some(p) = &self.pool else {
            return (x, y);
        };
        let best = y.iter().copied().fold(f64::INFINITY, f64::min);
        let n = y.len() * p.weight + p.y.len();
        let (mut px, mut py) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (f, v) in x.into_iter().zip(y) {
            for _ in 0..p.weight {
                px.push(f.clone());
                py.push(v - best);
            }
        }
        px.extend(p.x.iter().cloned());
        py.extend(p.y.iter().copied());
        (px, py)
    }
}
