//! Numeric input features from input keys: `m=64,n=3136,k=576` gives `m`, `n` and `k`.
//! The same keys the tuning database records, split as [`key_distance`] splits them.
//! And features derived from them ([`Derived`]: products, ratios, harmonic means), which
//! a tree splits on where no single size separates the inputs (e.g. `m * n`, the
//! parallelism of a GEMM kernel that does not split K), and from the candidate
//! configurations: how well a configuration's tile fits the sizes ([`Derived::Fit`],
//! [`Tiling`], [`fit_features`]; select7), where the best configuration changes with how
//! a 64-row tile fits 32 rows.
//!
//! [`key_distance`]: crate::results::database::key_distance

use serde::{Deserialize, Serialize};

use crate::param::Value;
use crate::results::Named;
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
    /// The useful share of a tiled kernel's padded work: the product over the terms
    /// `(i, t)` of `features[i] / (ceil(features[i] / t) * t)`; for a GEMM tiled
    /// `MWG x NWG x KWG`, `m n k` over the padded `m n k`.
    Fit {
        /// A name (a Rust identifier).
        name: String,
        /// `(feature index, tile size)`, sizes at least 1.
        tiles: Vec<(usize, u32)>,
    },
}

impl Derived {
    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            Derived::Product { name, .. }
            | Derived::Harmonic { name, .. }
            | Derived::Fit { name, .. } => name,
        }
    }

    /// Its value for an input's own features; 0 where it is not finite (a size of 0
    /// divided by).
    pub fn value(&self, own: &[f64]) -> f64 {
        let x = |i: usize| own.get(i).copied().unwrap_or(0.0);
        let v = match self {
            Derived::Product { terms, .. } => terms.iter().map(|&(i, e)| x(i).powi(e)).product(),
            Derived::Harmonic { of, .. } => 1.0 / of.iter().map(|&i| 1.0 / x(i)).sum::<f64>(),
            Derived::Fit { tiles, .. } => return tile_fit(tiles, own),
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
            Derived::Fit { tiles, .. } => {
                let parts: Vec<String> = tiles
                    .iter()
                    .map(|&(i, t)| format!("{x} / (({x} / {t}.0).ceil() * {t}.0)", x = name(i)))
                    .collect();
                // One term stands alone: parentheses around it would warn in the caller.
                match parts.as_slice() {
                    [] => "1.0".to_string(),
                    [one] => one.clone(),
                    _ => format!("({})", parts.join(") * (")),
                }
            }
        };
        format!("{{ let v: f64 = {v}; if v.is_finite() {{ v }} else {{ 0.0 }} }}")
    }
}

/// The useful share of the padded work of a tile `(feature index, size)` per dimension
/// on an input's own features, as [`Derived::Fit`] computes it: 0 where it is not finite
/// (a size of 0), 1 for no tile.
pub fn tile_fit(tiles: &[(usize, u32)], own: &[f64]) -> f64 {
    let x = |i: usize| own.get(i).copied().unwrap_or(0.0);
    let v: f64 = tiles
        .iter()
        .map(|&(i, t)| {
            let t = f64::from(t);
            x(i) / ((x(i) / t).ceil() * t)
        })
        .product();
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// How a kernel's configuration tiles the input: feature `i` in tiles of the value of its
/// parameter `param`, for each `(i, param)` of `dims` (e.g. a GEMM tiled by `WGD` in
/// `m`, `n` and `k`, or by `BM`, `BN` and `BK`). A configuration without every parameter
/// (another kernel) is not tiled so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tiling {
    /// `(feature index, parameter name)`.
    pub dims: Vec<(usize, String)>,
}

impl Tiling {
    /// The tile of `config`: `(feature index, size)` per dimension; `None` where a
    /// parameter is missing or not a positive integer.
    pub fn tile(&self, config: &Named<Value>) -> Option<Vec<(usize, u32)>> {
        self.dims
            .iter()
            .map(|(i, p)| match config.get(p) {
                Some(Value::Int(v)) => u32::try_from(*v).ok().filter(|&t| t > 0).map(|t| (*i, t)),
                _ => None,
            })
            .collect()
    }
}

/// One [`Derived::Fit`] per distinct tile among `configs` (each tiled by the first of
/// `tilings` that fits it), named `fit_` and the tile (`fit_m64_n64_k64` for the own
/// features `names`), in the order first met: features derived from the candidate
/// configurations, not from measurements.
pub fn fit_features(
    tilings: &[Tiling],
    configs: &[Named<Value>],
    names: &[String],
) -> Vec<Derived> {
    let mut out: Vec<Derived> = Vec::new();
    for c in configs {
        let Some(tiles) = tilings.iter().find_map(|t| t.tile(c)) else {
            continue;
        };
        let name = tiles
            .iter()
            .map(|&(i, t)| format!("{}{t}", names.get(i).map_or("x", String::as_str)))
            .collect::<Vec<_>>()
            .join("_");
        let name = format!("fit_{name}");
        if !out.iter().any(|d| d.name() == name) {
            out.push(Derived::Fit { name, tiles });
        }
    }
    out
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

    #[test]
    fn tile_fit_is_the_useful_share_of_the_padded_work() {
        let fit = Derived::Fit {
            name: "fit_m64_n32_k8".into(),
            tiles: vec![(0, 64), (1, 32), (2, 8)],
        };
        // m = 32 fills half of a 64-row tile; n = 64 and k = 16 fill theirs.
        assert_eq!(fit.value(&[32.0, 64.0, 16.0]), 0.5);
        // 100 x 33 x 9 pads to 128 x 64 x 16.
        let v = fit.value(&[100.0, 33.0, 9.0]);
        assert!((v - (100.0 * 33.0 * 9.0) / (128.0 * 64.0 * 16.0)).abs() < 1e-12);
        // A size of 0 is no work: 0, not NaN.
        assert_eq!(fit.value(&[0.0, 64.0, 16.0]), 0.0);
        let names: Vec<String> = ["m", "n", "k"].map(String::from).to_vec();
        assert_eq!(
            fit.rust(&names),
            "{ let v: f64 = (m / ((m / 64.0).ceil() * 64.0)) * (n / ((n / 32.0).ceil() * 32.0)) * (k / ((k / 8.0).ceil() * 8.0)); if v.is_finite() { v } else { 0.0 } }"
        );
    }

    #[test]
    fn fit_features_come_from_the_configurations_tiles() {
        let cfg = |kv: &[(&str, i64)]| {
            Named(
                kv.iter()
                    .map(|(k, v)| (k.to_string(), Value::Int(*v)))
                    .collect(),
            )
        };
        let tilings = [
            Tiling {
                dims: vec![(0, "WGD".into()), (1, "WGD".into()), (2, "WGD".into())],
            },
            Tiling {
                dims: vec![(0, "BM".into()), (1, "BN".into()), (2, "BK".into())],
            },
        ];
        let configs = [
            cfg(&[("WGD", 32), ("KWID", 2)]),
            cfg(&[("BM", 64), ("BN", 32), ("BK", 8)]),
            cfg(&[("WGD", 32), ("KWID", 8)]),
            cfg(&[("OTHER", 4)]),
        ];
        let names: Vec<String> = ["m", "n", "k", "batch"].map(String::from).to_vec();
        let f = fit_features(&tilings, &configs, &names);
        let got: Vec<&str> = f.iter().map(Derived::name).collect();
        // One per distinct tile; the untiled configuration adds none.
        assert_eq!(got, ["fit_m32_n32_k32", "fit_m64_n32_k8"]);
        assert_eq!(f[1].value(&[32.0, 32.0, 8.0, 1.0]), 0.5);
        assert!(Tiling {
            dims: vec![(0, "WGD".into())]
        }
        .tile(&cfg(&[("WGD", 0)]))
        .is_none());
    }
}
