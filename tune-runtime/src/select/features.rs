//! Numeric input features from input keys: `m=64,n=3136,k=576` gives `m`, `n` and `k`.
//! The same keys the tuning database records, split as [`key_distance`] splits them.
//!
//! [`key_distance`]: crate::results::database::key_distance

use crate::{Error, Result};

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
