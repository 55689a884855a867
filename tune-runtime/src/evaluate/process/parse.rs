//! Reading a cost from a program's text output, unambiguously or not at all.
//!
//! A number is a token (words are split at white space and `,` `;` `=` `:`) that starts
//! like a decimal number and may carry a unit (`1.5`, `2.5e-3`, `12ms`, `(3`, `98%`), or
//! is `nan` / `inf` (which are numbers, and invalid costs). `x86`, `v1.2` and `1.2.3` are
//! words.

use crate::evaluate::Failure;

/// The number a token holds, if it is one.
fn number(token: &str) -> Option<f64> {
    let t = token
        .trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\'' | '!'))
        .trim_end_matches('.');
    let unsigned = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if matches!(unsigned.as_str(), "nan" | "inf" | "infinity") {
        return t.parse().ok();
    }
    if !t.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '.' | '+' | '-')) {
        return None;
    }
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-' | 'e' | 'E')))
        .unwrap_or(t.len());
    let (digits, unit) = t.split_at(end);
    let unit_ok = unit
        .chars()
        .all(|c| c.is_alphabetic() || matches!(c, '%' | '/' | 'µ'));
    // `5e` or `3E` before a unit: the exponent letter starts the unit.
    let (digits, unit_ok) = match digits.strip_suffix(['e', 'E']) {
        Some(d) if digits.parse::<f64>().is_err() => (d, unit_ok),
        _ => (digits, unit_ok),
    };
    if !unit_ok {
        return None;
    }
    digits.parse().ok()
}

/// Every number on a line, in order.
fn numbers(line: &str) -> Vec<f64> {
    line.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '=' | ':'))
        .filter_map(number)
        .collect()
}

/// A number that can be a cost, or why not.
fn finite(v: f64, line: &str, source: &str) -> Result<f64, Failure> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Failure::InvalidCost(format!(
            "the cost in {source} is {v} (`{}`); a cost must be a finite number",
            line.trim()
        )))
    }
}

/// The cost in `text`: the only number on the last line that holds a number. Two numbers
/// on that line are ambiguous (`kernel 3 took 1.5 s`) and an error, as is no number at
/// all. `source` names the text in messages (`standard output`, a file).
///
/// # Errors
/// [`Failure::InvalidCost`] saying what was found and how to print the cost.
pub(super) fn last_number(text: &str, source: &str) -> Result<f64, Failure> {
    let Some((line, found)) = text
        .lines()
        .rev()
        .map(|l| (l, numbers(l)))
        .find(|(_, n)| !n.is_empty())
    else {
        return Err(Failure::InvalidCost(format!(
            "no number in {source}; print the cost alone on the last line (`1.25e-3`), or \
             choose where to read it with `Process::cost_from`{}",
            excerpt(text)
        )));
    };
    match found[..] {
        [v] => finite(v, line, source),
        _ => Err(Failure::InvalidCost(format!(
            "the last line of {source} with a number holds {} of them (`{}`), so which one \
             is the cost is ambiguous; print the cost alone on a line, or as `key=value` \
             and use `CostFrom::Key`",
            found.len(),
            line.trim()
        ))),
    }
}

/// The cost in the last line `key=value` of `text` (spaces around `=` allowed; the value
/// may carry a unit).
///
/// # Errors
/// [`Failure::InvalidCost`] when there is no such line, or its value is not one finite
/// number.
pub(super) fn key_value(text: &str, key: &str) -> Result<f64, Failure> {
    let Some((line, value)) = text.lines().rev().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then_some((line, v))
    }) else {
        return Err(Failure::InvalidCost(format!(
            "no line `{key}=<number>` on standard output{}",
            excerpt(text)
        )));
    };
    match numbers(value)[..] {
        [v] => finite(v, line, "standard output"),
        _ => Err(Failure::InvalidCost(format!(
            "the line `{}` does not hold one number after `=`",
            line.trim()
        ))),
    }
}

/// `: ...<the end of text>` for messages, or nothing for empty text.
fn excerpt(text: &str) -> String {
    let t = text.trim_end();
    if t.is_empty() {
        return " (it is empty)".into();
    }
    let mut k = t.len().saturating_sub(300);
    while !t.is_char_boundary(k) {
        k += 1;
    }
    format!(
        "; it ends with: {}{}",
        if k > 0 { "..." } else { "" },
        &t[k..]
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn invalid(r: Result<f64, Failure>) -> String {
        match r {
            Err(Failure::InvalidCost(m)) => m,
            other => format!("not an invalid cost: {other:?}"),
        }
    }

    #[test]
    fn tokens_that_are_numbers() {
        for (t, v) in [
            ("1.5", 1.5),
            ("2.5e-3", 2.5e-3),
            ("12ms", 12.0),
            ("(3", 3.0),
            ("98%", 98.0),
            ("-4", -4.0),
            ("1.5.", 1.5),
            ("7GB/s", 7.0),
            ("5e", 5.0),
            ("3µs", 3.0),
        ] {
            assert_eq!(number(t), Some(v), "{t}");
        }
        for t in [
            "x86", "v1.2", "1.2.3", "ms", "-", "0x1F", "e5", "runs)", "1-2",
        ] {
            assert_eq!(number(t), None, "{t}");
        }
        assert!(number("NaN").unwrap().is_nan());
        assert_eq!(number("-inf"), Some(f64::NEG_INFINITY));
    }

    #[test]
    fn the_only_number_of_the_last_line_with_one() {
        assert_eq!(last_number("a 1\nb 2.5e-3 ms\n", "out").unwrap(), 2.5e-3);
        assert_eq!(last_number("time: 12ms", "out").unwrap(), 12.0);
        assert_eq!(last_number("1.5\ndone\n\n", "out").unwrap(), 1.5);
        let m = invalid(last_number("kernel 3 took 1.5 s", "standard output"));
        assert!(
            m.contains("holds 2 of them") && m.contains("ambiguous"),
            "{m}"
        );
        let m = invalid(last_number("none", "standard output"));
        assert!(
            m.contains("no number in standard output") && m.contains("none"),
            "{m}"
        );
        let m = invalid(last_number("time: nan", "standard output"));
        assert!(m.contains("is NaN"), "{m}");
        assert!(invalid(last_number("", "out")).contains("empty"));
    }

    #[test]
    fn key_value_lines() {
        assert_eq!(key_value("x = 3\nx=4\n", "x").unwrap(), 4.0);
        assert_eq!(key_value("time_ms = 1.5 ms\nend", "time_ms").unwrap(), 1.5);
        assert!(invalid(key_value("xy=3", "x")).contains("no line `x=<number>`"));
        for bad in ["time=nan", "time=-inf", "time=inf", "time = NaN"] {
            let m = invalid(key_value(bad, "time"));
            assert!(m.contains("finite"), "{bad}: {m}");
        }
        assert!(invalid(key_value("time=fast", "time")).contains("one number"));
        assert!(invalid(key_value("time=1 2", "time")).contains("one number"));
    }
}
