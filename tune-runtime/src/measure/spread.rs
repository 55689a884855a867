//! How far repeated measurements of one thing scatter.

use serde::{Deserialize, Serialize};

/// The median of repeated measurements and how they scatter around it: range and
/// quartiles (linear interpolation between order statistics, as numpy's default).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// How many values.
    pub n: usize,
    /// The median.
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The first quartile.
    pub q1: f64,
    /// The third quartile.
    pub q3: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none or one is not finite.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Some(Spread {
            n: v.len(),
            median: quantile(&v, 0.5),
            min: v[0],
            max: v[v.len() - 1],
            q1: quantile(&v, 0.25),
            q3: quantile(&v, 0.75),
        })
    }

    /// The interquartile range, `q3 - q1`.
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }

    /// The range relative to the median, `(max - min) / |median|` (0 when all values are
    /// equal, infinite when they differ around a median of 0).
    pub fn relative_range(&self) -> f64 {
        let width = self.max - self.min;
        if width == 0.0 {
            0.0
        } else {
            width / self.median.abs()
        }
    }

    /// The interquartile range relative to the median (see [`Spread::relative_range`]).
    pub fn relative_iqr(&self) -> f64 {
        let width = self.iqr();
        if width == 0.0 {
            0.0
        } else {
            width / self.median.abs()
        }
    }
}

impl std::fmt::Display for Spread {
    /// `1.234e-3 [1.200e-3, 1.300e-3] ±4.1% (n = 5)`: median, range, half the relative range.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.4e} [{:.4e}, {:.4e}] ±{:.1}% (n = {})",
            self.median,
            self.min,
            self.max,
            50.0 * self.relative_range(),
            self.n
        )
    }
}

/// The `p`-quantile of sorted, non-empty values, interpolating linearly.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn median_quartiles_and_range() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (5, 3.0, 1.0, 5.0));
        assert_eq!((s.q1, s.q3, s.iqr()), (2.0, 4.0, 2.0));
        assert_eq!(s.relative_range(), 4.0 / 3.0);
        let s = Spread::of(&[1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.q1, s.q3), (1.5, 1.25, 1.75));
        let s = Spread::of(&[7.0]).unwrap();
        assert_eq!((s.median, s.iqr(), s.relative_range()), (7.0, 0.0, 0.0));
        assert_eq!(Spread::of(&[0.0, 0.0]).unwrap().relative_range(), 0.0);
    }

    #[test]
    fn nothing_or_non_finite_has_no_spread() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[1.0, f64::NAN]), None);
        assert_eq!(Spread::of(&[f64::INFINITY]), None);
    }

    #[test]
    fn display_names_median_range_and_count() {
        let s = Spread::of(&[1.0, 1.1, 0.9]).unwrap().to_string();
        assert_eq!(s, "1.0000e0 [9.0000e-1, 1.1000e0] ±10.0% (n = 3)");
    }
}
