//! Which recorded entry a lookup uses: the exact input key if it is current, else the
//! nearest recorded input key among current entries; and which stale entry to tell about.

use super::database::{Choice, Entry, Source, TunableFile};
use super::fingerprint::{Expected, Stale};
use crate::space::Config;

/// The recorded configuration to run for `input_key`, if any, and the stale entry that was
/// passed over on the way (the exact key's, or a nearer one than the one used).
pub(crate) fn choose_recorded(
    file: &TunableFile,
    input_key: &str,
    expected: &Expected<'_>,
) -> (Option<Choice>, Option<Stale>) {
    let mut stale = None;
    if let Some(e) = file.entries.iter().find(|e| e.input_key == input_key) {
        match expected.exact(e.fingerprint.as_ref()) {
            Ok(()) => {
                if let Ok(config) = e.best.config(expected.space) {
                    return (Some(choice(config, Source::Exact, e)), None);
                }
            }
            Err(reason) => {
                stale = Some(Stale {
                    input_key: e.input_key.clone(),
                    reason,
                })
            }
        }
    }
    let mut best: Option<(f64, &Entry, Config)> = None;
    let mut nearest_stale: Option<(f64, Stale)> = None;
    for e in &file.entries {
        if e.input_key == input_key {
            continue;
        }
        let Some(d) = key_distance(input_key, &e.input_key) else {
            continue;
        };
        if let Err(reason) = expected.same_code(e.fingerprint.as_ref()) {
            if nearest_stale.as_ref().is_none_or(|(sd, _)| d < *sd) {
                let s = Stale {
                    input_key: e.input_key.clone(),
                    reason,
                };
                nearest_stale = Some((d, s));
            }
            continue;
        }
        if best.as_ref().is_some_and(|(bd, _, _)| *bd <= d) {
            continue;
        }
        // The space differs between input keys: what counts is that the configuration is
        // valid for this input.
        if let Ok(config) = e.best.config(expected.space) {
            best = Some((d, e, config));
        }
    }
    if stale.is_none() {
        stale = nearest_stale
            .filter(|(sd, _)| best.as_ref().is_none_or(|(bd, _, _)| sd < bd))
            .map(|(_, s)| s);
    }
    let chosen = best.map(|(_, e, config)| choice(config, Source::NearestInput, e));
    (chosen, stale)
}

fn choice(config: Config, source: Source, e: &Entry) -> Choice {
    Choice {
        config,
        source,
        input_key: Some(e.input_key.clone()),
        stale: None,
    }
}

/// The components of an input key: `k=v` pairs separated by `,`, `;` or spaces.
fn components(key: &str) -> Vec<(&str, &str)> {
    let mut v: Vec<(&str, &str)> = key
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (t, ""),
        })
        .collect();
    v.sort_unstable();
    v
}

/// How far apart two input keys are: `None` if they name different components or differ in
/// a non-numeric one; else the sum over numeric components of `|ln(a / b)|` (sizes scale
/// multiplicatively), or `|a - b|` where a value is not positive.
pub fn key_distance(a: &str, b: &str) -> Option<f64> {
    let (ca, cb) = (components(a), components(b));
    if ca.len() != cb.len() {
        return None;
    }
    let mut d = 0.0;
    for ((ka, va), (kb, vb)) in ca.iter().zip(&cb) {
        if ka != kb {
            return None;
        }
        match (va.parse::<f64>(), vb.parse::<f64>()) {
            (Ok(x), Ok(y)) if x > 0.0 && y > 0.0 => d += (x / y).ln().abs(),
            (Ok(x), Ok(y)) => d += (x - y).abs(),
            _ if va == vb => {}
            _ => return None,
        }
    }
    // A non-finite distance (e.g. from `n=inf`) is no distance at all.
    d.is_finite().then_some(d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn key_distances() {
        assert_eq!(key_distance("n=4", "n=4"), Some(0.0));
        assert!(key_distance("n=4,m=2", "m=2 n=8").unwrap() > 0.0);
        assert_eq!(key_distance("n=4,t=f32", "n=4,t=f64"), None);
        assert_eq!(key_distance("n=4", "n=4,m=1"), None);
        assert_eq!(key_distance("", ""), Some(0.0));
        assert_eq!(key_distance("n=inf", "n=4"), None);
        assert_eq!(key_distance("n=NaN", "n=4"), None);
    }
}
