//! Numeric input features from input keys: `m=64,n=3136,k=576` gives `m`, `n` and `k`.
//! The same keys the tuning database records, split as [`key_distance`] splits them.
//! And features derived from them ([`Derived`]: products, ratios, harmonic means), which
//! a tree splits on where no single size separates the inputs (e.g. `m * n`, the
//! parallelism of a GEMM kernel that does not split K).
//!
//! [`key_distance`]: crate::results::database::key_distance

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A feature computed from an input's own features (by their index).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Derived {
    /// The product of `features[i]^e` over the terms `(i, e)`: `m * n`, `m / n`.
    Product {
        /// A name (a Rust identifier).
        name: String,
        /// `(feature index, exponent)`.
        terms: Vec<(usize, i32)>,
    },
    /// `1 / sum(1 / features[i])`: for `m, n, k`, a GEMM's arithmetic intensity
    /// `m n k / (m k + k n + m n)`.
    Harmonic {
        /// A name (a Rust identifier).
        name: String,
        /// Feature indices.
        of: Vec<usize>,
    },
}

impl Derived {
    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Derived::Product { name, .. } | Derived::Harmonic { name, .. } => name,
        }
    }

    /// Its value for an input's own features; 0 where it is not finite (a size of 0
    /// divided by).
    pub fn value(&self, own: &[f64]) -> f64 {
        let x = |i: usize| own.get(i).copied().unwrap_or(0.0);
        let v = match self {
            Derived::Product { terms, .. } => terms.iter().map(|&(i, e)| x(i).powi(e)).product(),
            Derived::Harmonic { of, .. } => 1.0 / of.iter().map(|&i| 1.0 / x(i)).sum::<f64>(),
        };
        if v.is_finite() {
            v
        } else {
            0.0
        }
    }

    /// A Rust expression of its value over `f64` locals holding the own features
    /// (`names`, as identifiers), as [`Derived::value`] computes it.
    pub fn rust(&self, names: &[String]) -> String {
        let name = |i: usize| names.get(i).map_or("0.0", String::as_str);
        let v = match self {
            Derived::Product { terms, .. } => {
                let mut num = Vec::new();
                let mut den = Vec::new();
                for &(i, e) in terms {
                    let side = if e >= 0 { &mut num } else { &mut den };
                    for _ in 0..e.unsigned_abs() {
                        side.push(name(i));
                    }
                }
                let num = if num.is_empty() {
                    "1.0".to_string()
                } else {
                    num.join(" * ")
                };
                if den.is_empty() {
                    num
                } else {
                    format!("({num}) / ({})", den.join(" * "))
                }
            }
            Derived::Harmonic { of, .. } => {
                let parts: Vec<String> = of.iter().map(|&i| format!("1.0 / {}", name(i))).collect();
                format!("1.0 / ({})", parts.join(" + "))
            }
        };
        format!("{{ let v: f64 = {v}; if v.is_finite() {{ v }} else {{ 0.0 }} }}")
    }
}

/// An input's own features followed by the derived ones.
pub fn extend(own: &[f64], derived: &[Derived]) -> Vec<f64> {
    let mut v = own.to_vec();
    v.extend(derived.iter().map(|d| d.value(own)));
    v
}

/// The `name=value` components of an input key, in their order (`,`, `;` or spaces apart).
pub fn components(key: &str) -> impl Iterator<Item = (&str, &str)> {
    key.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (t, ""),
        })
}

/// The names of the numeric components of `key`, in order (`true`/`false` count as 1/0).
pub fn names(key: &str) -> Vec<String> {
    components(key)
        .filter(|(_, v)| value(v).is_some())
        .map(|(k, _)| k.to_string())
        .collect()
}

fn value(v: &str) -> Option<f64> {
    match v {
        "true" => Some(1.0),
        "false" => Some(0.0),
        _ => v.parse::<f64>().ok().filter(|x| x.is_finite()),
    }
}

/// The values of the features `names` in `key`.
///
/// # Errors
/// [`Error::Select`] when `key` lacks a feature or its value is not a finite number.
pub fn of(key: &str, names: &[String]) -> Result<Vec<f64>> {
    names
        .iter()
        .map(|n| {
            components(key)
                .find(|(k, _)| k == n)
                .and_then(|(_, v)| value(v))
                .ok_or_else(|| {
                    Error::Select(format!(
                        "input key `{key}` has no numeric component `{n}`; every input of a selector needs the features {}",
                        names.join(", ")
                    ))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn derived_features_and_their_rust_agree() {
        let own = [64.0, 3136.0, 576.0];
        let d = [
            Derived::Product {
                name: "mn".into(),
                terms: vec![(0, 1), (1, 1)],
            },
            Derived::Product {
                name: "k2_per_mn".into(),
                terms: vec![(2, 2), (0, -1), (1, -1)],
            },
            Derived::Harmonic {
                name: "intensity".into(),
                of: vec![0, 1, 2],
            },
        ];
        let v = extend(&own, &d);
        assert_eq!(v.len(), 6);
        assert_eq!(v[3], 64.0 * 3136.0);
        assert!((v[4] - 576.0 * 576.0 / (64.0 * 3136.0)).abs() < 1e-12);
        let ai = 64.0 * 3136.0 * 576.0 / (64.0 * 576.0 + 576.0 * 3136.0 + 64.0 * 3136.0);
        assert!((v[5] - ai).abs() < 1e-9);
        let names: Vec<String> = ["m", "n", "k"].map(String::from).to_vec();
        assert_eq!(
            d[1].rust(&names),
            "{ let v: f64 = (k * k) / (m * n); if v.is_finite() { v } else { 0.0 } }"
        );
        assert_eq!(
            d[2].rust(&names),
            "{ let v: f64 = 1.0 / (1.0 / m + 1.0 / n + 1.0 / k); if v.is_finite() { v } else { 0.0 } }"
        );
        // A size of 0 divided by gives 0, not infinity.
        assert_eq!(d[1].value(&[0.0, 1.0, 2.0]), 0.0);
    }

    #[test]
    fn features_from_keys() {
        let key = "m=64, n=3136;k=576 batch=16 ta=false dtype=f32";
        assert_eq!(names(key), ["m", "n", "k", "batch", "ta"]);
        let want: Vec<String> = ["k", "ta", "m"].map(String::from).to_vec();
        assert_eq!(of(key, &want).unwrap(), [576.0, 0.0, 64.0]);
        let e = of(key, &["dtype".to_string()]).unwrap_err().to_string();
        assert!(e.contains("no numeric component `dtype`"), "{e}");
        assert!(of("n=inf", &["n".to_string()]).is_err());
    }
}
