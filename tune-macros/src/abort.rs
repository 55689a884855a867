//! `#[tunable(abort = ..)]`: abort conditions checked at compile time.
//!
//! ```text
//! ABORT := TERM (("|" | "&") TERM)*          (`|`: either stops; `&`: both must)
//! TERM  := "(" ABORT ")" | NAME "(" ARGS ")" | "whole_space"
//! ```
//!
//! Durations are literals with a unit (`500ms`, `30s`, `5min`, `1h`); counts are integer
//! literals; factors and fractions are numeric literals.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Lit, Path};

use crate::decl::strip;
use crate::diag::{closest, list, Errors};

/// The abort conditions, with their arguments.
pub const ABORTS: [&str; 8] = [
    "duration",
    "evaluations",
    "valid_evaluations",
    "fraction",
    "cost",
    "speedup_over_time",
    "speedup_over_evaluations",
    "whole_space",
];

/// What a condition's arguments are, for messages.
fn signature(name: &str) -> &'static str {
    match name {
        "duration" => "`duration(30s)`",
        "evaluations" => "`evaluations(100)`",
        "valid_evaluations" => "`valid_evaluations(50)`",
        "fraction" => "`fraction(0.1)` (of the space, in (0, 1])",
        "cost" => "`cost(0.001)` (stop once the best cost is at or below it)",
        "speedup_over_time" => "`speedup_over_time(1.05, 10s)`",
        "speedup_over_evaluations" => "`speedup_over_evaluations(1.05, 50)`",
        _ => "`whole_space()`",
    }
}

/// The expression building the condition (`tune::abort::..`), or `None` after recording
/// errors.
pub fn expand(e: &Expr, krate: &Path, errors: &mut Errors) -> Option<TokenStream> {
    let e = strip(e);
    let a = quote!(#krate::abort);
    match e {
        Expr::Binary(b) => {
            let op = match b.op {
                BinOp::BitOr(_) => quote!(Or),
                BinOp::BitAnd(_) => quote!(And),
                BinOp::Or(_) | BinOp::And(_) => {
                    let (bad, good) = if matches!(b.op, BinOp::Or(_)) {
                        ("||", "|")
                    } else {
                        ("&&", "&")
                    };
                    errors.spanned(
                        b.op,
                        format!("combine abort conditions with `{good}`, not `{bad}`"),
                    );
                    // Check both sides too, to report every mistake at once.
                    expand(&b.left, krate, errors);
                    expand(&b.right, krate, errors);
                    return None;
                }
                _ => {
                    errors.spanned(
                        b.op,
                        "combine abort conditions with `|` (stop when either says so) or `&` (when both do)",
                    );
                    return None;
                }
            };
            let l = expand(&b.left, krate, errors);
            let r = expand(&b.right, krate, errors);
            let (l, r) = (l?, r?);
            Some(quote!(#a::#op(#l, #r)))
        }
        Expr::Call(c) => {
            let name = match strip(&c.func) {
                Expr::Path(p) => p.path.get_ident().cloned(),
                _ => None,
            };
            let Some(name) = name else {
                errors.spanned(&c.func, unknown_msg(&show_path(&c.func)));
                return None;
            };
            let n = name.to_string();
            if !ABORTS.contains(&n.as_str()) {
                errors.spanned(&name, unknown_msg(&n));
                return None;
            }
            let args: Vec<&Expr> = c.args.iter().collect();
            let expected = match n.as_str() {
                "whole_space" => 0,
                "speedup_over_time" | "speedup_over_evaluations" => 2,
                _ => 1,
            };
            if args.len() != expected {
                errors.spanned(
                    c,
                    format!(
                        "`{n}` takes {expected} argument{}: {}",
                        if expected == 1 { "" } else { "s" },
                        signature(&n)
                    ),
                );
                return None;
            }
            let sp = name.span();
            Some(match n.as_str() {
                "whole_space" => quote_spanned!(sp=> #a::whole_space()),
                "duration" => {
                    let d = duration(args[0], errors)?;
                    quote_spanned!(sp=> #a::duration(#d))
                }
                "evaluations" | "valid_evaluations" => {
                    let k = count(args[0], errors)?;
                    quote_spanned!(sp=> #a::#name(#k))
                }
                "fraction" => {
                    let f = number(args[0], errors)?;
                    if !(f > 0.0 && f <= 1.0) {
                        errors.spanned(
                            args[0],
                            format!("`fraction` takes a number in (0, 1], not {f}; e.g. `fraction(0.1)` for a tenth of the space"),
                        );
                        return None;
                    }
                    quote_spanned!(sp=> #a::fraction(#f))
                }
                "cost" => {
                    let f = number(args[0], errors)?;
                    quote_spanned!(sp=> #a::cost(#f))
                }
                "speedup_over_time" => {
                    let f = factor(args[0], errors);
                    let d = duration(args[1], errors);
                    let (f, d) = (f?, d?);
                    quote_spanned!(sp=> #a::speedup_over_time(#f, #d))
                }
                _ => {
                    let f = factor(args[0], errors);
                    let k = count(args[1], errors);
                    let (f, k) = (f?, k?);
                    quote_spanned!(sp=> #a::speedup_over_evaluations(#f, #k))
                }
            })
        }
        Expr::Path(p) if p.path.is_ident("whole_space") => {
            Some(quote_spanned!(p.span()=> #a::whole_space()))
        }
        Expr::Path(p) if p.path.get_ident().is_some() => {
            let n = show_path(e);
            if ABORTS.contains(&n.as_str()) {
                errors.spanned(p, format!("`{n}` needs its argument: {}", signature(&n)));
            } else {
                errors.spanned(p, unknown_msg(&n));
            }
            None
        }
        _ => {
            errors.spanned(
                e,
                "expected an abort condition, e.g. `evaluations(100) | duration(30s)`",
            );
            None
        }
    }
}

fn show_path(e: &Expr) -> String {
    crate::diag::show(e)
}

fn unknown_msg(name: &str) -> String {
    let hint = closest(name, ABORTS)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    format!(
        "unknown abort condition `{name}`{hint}; expected one of: {}",
        list(&ABORTS)
    )
}

/// A literal, with its suffix.
fn literal(e: &Expr) -> Option<(f64, String, Span)> {
    let Expr::Lit(l) = strip(e) else { return None };
    match &l.lit {
        Lit::Int(i) => Some((
            i.base10_digits().parse().ok()?,
            i.suffix().to_string(),
            i.span(),
        )),
        Lit::Float(f) => Some((
            f.base10_digits().parse().ok()?,
            f.suffix().to_string(),
            f.span(),
        )),
        _ => None,
    }
}

/// `::core::time::Duration::from_secs_f64(..)` of `30s`, `500ms`, `5min`, `1h`.
fn duration(e: &Expr, errors: &mut Errors) -> Option<TokenStream> {
    let msg = "expected a duration with a unit, e.g. `500ms`, `30s`, `5min` or `1h`";
    let Some((v, unit, span)) = literal(e) else {
        errors.spanned(e, msg);
        return None;
    };
    let scale = match unit.as_str() {
        "ms" => 1e-3,
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "" => {
            errors.at(
                span,
                format!("give the duration a unit: `{v}s`, `{v}ms`, `{v}min` or `{v}h`"),
            );
            return None;
        }
        u => {
            errors.at(span, format!("unknown unit `{u}`; {msg}"));
            return None;
        }
    };
    let secs = v * scale;
    Some(quote_spanned!(span=> ::core::time::Duration::from_secs_f64(#secs)))
}

/// A count: an integer literal without suffix (or `u64`).
fn count(e: &Expr, errors: &mut Errors) -> Option<u64> {
    if let Expr::Lit(l) = strip(e) {
        if let Lit::Int(i) = &l.lit {
            if matches!(i.suffix(), "" | "u64") {
                if let Ok(n) = i.base10_parse::<u64>() {
                    return Some(n);
                }
            }
        }
    }
    errors.spanned(e, "expected a count, an integer literal such as `100`");
    None
}

/// A plain number (no suffix, or `f64`).
fn number(e: &Expr, errors: &mut Errors) -> Option<f64> {
    match literal(e) {
        Some((v, s, _)) if matches!(s.as_str(), "" | "f64" | "f32") => Some(v),
        _ => {
            errors.spanned(e, "expected a number, e.g. `0.5`");
            None
        }
    }
}

/// A speedup factor: a number above 1.
fn factor(e: &Expr, errors: &mut Errors) -> Option<f64> {
    let f = number(e, errors)?;
    if f <= 1.0 {
        errors.spanned(
            e,
            format!("a speedup factor is above 1, not {f}: `1.05` stops when the best cost improved by less than 5%"),
        );
        return None;
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn run(e: Expr) -> Result<String, Vec<String>> {
        let mut errors = Errors::default();
        let out = expand(&e, &syn::parse_quote!(::tune), &mut errors);
        match errors.finish() {
            Ok(()) => Ok(out.map(|t| t.to_string()).unwrap_or_default()),
            Err(e) => Err(e.into_iter().map(|e| e.to_string()).collect()),
        }
    }

    #[test]
    fn conditions_expand() {
        let s = run(syn::parse_quote!(evaluations(100) | duration(30s))).unwrap();
        assert!(s.contains("Or"), "{s}");
        assert!(s.contains("evaluations (100u64)"), "{s}");
        assert!(s.contains("from_secs_f64 (30f64)"), "{s}");
        let s = run(syn::parse_quote!(
            (fraction(0.5) & valid_evaluations(3)) | speedup_over_time(1.1, 500ms)
        ))
        .unwrap();
        assert!(s.contains("And") && s.contains("0.5f64"), "{s}");
        assert!(run(syn::parse_quote!(whole_space)).is_ok());
        assert!(run(syn::parse_quote!(cost(1e-3))).is_ok());
    }

    #[test]
    fn mistakes_are_reported_together() {
        let e = run(syn::parse_quote!(
            evaluation(10) | duration(30)
                || fraction(2.0) | speedup_over_evaluations(0.9, 5) | evaluations
        ))
        .unwrap_err();
        assert!(e.iter().any(|m| m.contains("not `||`")), "{e:?}");
        let e = run(syn::parse_quote!(
            evaluation(10)
                | duration(30)
                | fraction(2.0)
                | speedup_over_evaluations(0.9, 5)
                | evaluations
        ))
        .unwrap_err();
        assert_eq!(e.len(), 5, "{e:?}");
        assert!(e[0].contains("did you mean `evaluations`"));
        assert!(e[1].contains("`30s`"));
        assert!(e[2].contains("(0, 1]"));
        assert!(e[3].contains("above 1"));
        assert!(e[4].contains("needs its argument"));
    }
}
