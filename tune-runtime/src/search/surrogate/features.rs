//! The surrogate's features: what the forest sees of a configuration.

use super::Surrogate;
use crate::param::Value;
use crate::space::{Config, Space};

impl Surrogate {
    /// One feature per parameter (its value, the logarithm where every value is positive,
    /// the position for strings), then the interactions and alignments that are on.
    pub(super) fn features(&self, space: &Space, cfg: &Config) -> Vec<f64> {
        let mut f: Vec<f64> = space
            .params()
            .iter()
            .zip(cfg.raw())
            .zip(&self.log)
            .map(|((p, &r), &log)| match p.value_of_raw(r) {
                Value::Str(_) => p.domain_index(r).unwrap_or(0) as f64,
                v => {
                    let x = v.as_f64().unwrap_or(0.0);
                    if log {
                        x.ln()
                    } else {
                        x
                    }
                }
            })
            .collect();
        for &(i, j) in &self.pairs {
            f.push(f[i] + f[j]);
            f.push(f[i] - f[j]);
        }
        for &k in &self.aligned {
            let v = space.params()[k]
                .value_of_raw(cfg.raw()[k])
                .as_f64()
                .unwrap_or(0.0);
            f.push(f64::from(alignment(v)));
        }
        f
    }
}

/// The exponent of the largest power of two dividing `v` (a positive integer), at most 16;
/// 0 for anything else.
pub(super) fn alignment(v: f64) -> u32 {
    if v >= 1.0 && v.fract() == 0.0 && v < 9.0e15 {
        (v as u64).trailing_zeros().min(16)
    } else {
        0
    }
}

/// Whether a parameter's alignment says something its value does not: positive integer
/// values, more than two of them, not all powers of two (there the alignment is the
/// logarithm, a feature already).
pub(super) fn aligns(p: &crate::space::ParamInfo) -> bool {
    let len = p.domain_len();
    if !(3..=4096).contains(&len) {
        return false;
    }
    let vals: Option<Vec<f64>> = (0..len)
        .map(|i| p.domain_value(i).and_then(|v| v.as_f64()))
        .collect();
    vals.is_some_and(|v| {
        v.iter().all(|&x| x >= 1.0 && x.fract() == 0.0)
            && !v.iter().all(|&x| (x as u64).is_power_of_two())
    })
}
