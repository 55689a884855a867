//! The arguments of `#[tunable(..)]`: parsed into [`Options`], every problem recorded.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{Ident, Path, Token};

use crate::decl::parse_crate_path;
use crate::diag::{closest, list, Errors};

/// The keys of `#[tunable(..)]`.
pub const KEYS: [&str; 10] = [
    "crate",
    "technique",
    "abort",
    "cost",
    "repetitions",
    "input",
    "device",
    "name",
    "where",
    "online",
];

/// The search techniques that `technique = ..` may name.
pub const TECHNIQUES: [&str; 10] = [
    "exhaustive",
    "random",
    "annealing",
    "pso",
    "mcmc",
    "genetic",
    "diff_evo",
    "bandit",
    "bayes",
    "local",
];

/// What the tuning entry point measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CostMode {
    /// The wall time of the call.
    Time,
    /// The function's return value.
    Value,
}

/// `input = expr` or `input(n = expr, ..)`.
pub enum InputKey {
    /// An expression whose `Display` is the key.
    Expr(syn::Expr),
    /// Named components: `n=..,m=..`.
    List(Vec<(Ident, syn::Expr)>),
}

/// The options of `#[tunable(..)]`.
#[derive(Default)]
pub struct Options {
    /// `crate = "path"`.
    pub krate: Option<Path>,
    /// `technique = name`.
    pub technique: Option<String>,
    /// `abort = ..`: the condition's expression, checked later against the crate path.
    pub abort: Option<syn::Expr>,
    /// `cost = time | value`.
    pub cost: Option<CostMode>,
    /// `repetitions = n`.
    pub repetitions: Option<syn::LitInt>,
    /// `input = ..`.
    pub input: Option<InputKey>,
    /// `device = expr`.
    pub device: Option<syn::Expr>,
    /// `name = "..."`.
    pub name: Option<syn::LitStr>,
    /// `where = EXPR`, any number: stand-alone constraints over the `#[tp]` arguments.
    pub wheres: Vec<syn::Expr>,
    /// `online`: generate an online tuner too.
    pub online: Option<Path>,
}

fn once<T>(slot: &mut Option<T>, v: T, key: &Path, errors: &mut Errors) {
    if slot.replace(v).is_some() {
        let k = key.to_token_stream().to_string();
        errors.spanned(key, format!("`{k}` is given twice; keep one"));
    }
}

/// A name written as an identifier or a string literal.
fn word(v: ParseStream) -> syn::Result<(String, Span)> {
    if v.peek(syn::LitStr) {
        let s: syn::LitStr = v.parse()?;
        Ok((s.value(), s.span()))
    } else {
        let i: Ident = Ident::parse_any(v)?;
        Ok((i.to_string(), i.span()))
    }
}

/// Parses `#[tunable(..)]`'s arguments, recording every problem in `errors`.
pub fn parse_options(args: TokenStream, errors: &mut Errors) -> Options {
    let mut o = Options::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta.path.to_token_stream().to_string().replace(' ', "");
        if meta.path.is_ident("crate") {
            let p = parse_crate_path(meta.value()?)?;
            once(&mut o.krate, p, &meta.path, errors);
        } else if meta.path.is_ident("technique") {
            let (name, span) = word(meta.value()?)?;
            if !TECHNIQUES.contains(&name.as_str()) {
                let hint = closest(&name, TECHNIQUES)
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                errors.at(
                    span,
                    format!(
                        "unknown search technique `{name}`{hint}; expected one of: {}",
                        list(&TECHNIQUES)
                    ),
                );
            } else {
                once(&mut o.technique, name, &meta.path, errors);
            }
        } else if meta.path.is_ident("abort") {
            let v = meta.value()?;
            let e: syn::Expr = if v.peek(syn::LitStr) {
                let s = v.parse::<syn::LitStr>()?;
                s.parse().map_err(|e| {
                    syn::Error::new(
                        s.span(),
                        format!("cannot read the abort condition: {e}; write e.g. `evaluations(100) | duration(30s)`"),
                    )
                })?
            } else {
                v.parse()?
            };
            once(&mut o.abort, e, &meta.path, errors);
        } else if meta.path.is_ident("cost") {
            let (name, span) = word(meta.value()?)?;
            let mode = match name.as_str() {
                "time" => CostMode::Time,
                "value" => CostMode::Value,
                _ => {
                    errors.at(
                        span,
                        format!("unknown cost `{name}`; expected `time` (the call's wall time) or `value` (the returned cost)"),
                    );
                    return Ok(());
                }
            };
            once(&mut o.cost, mode, &meta.path, errors);
        } else if meta.path.is_ident("repetitions") {
            let n: syn::LitInt = meta.value()?.parse()?;
            match n.base10_parse::<u32>() {
                Ok(k) if k >= 1 => once(&mut o.repetitions, n, &meta.path, errors),
                _ => errors.spanned(&n, "`repetitions` is the number of timed calls, at least 1"),
            }
        } else if meta.path.is_ident("input") {
            if meta.input.peek(Token![=]) {
                let e: syn::Expr = meta.value()?.parse()?;
                once(&mut o.input, InputKey::Expr(e), &meta.path, errors);
            } else {
                let mut parts: Vec<(Ident, syn::Expr)> = Vec::new();
                meta.parse_nested_meta(|m| {
                    let Some(name) = m.path.get_ident().cloned() else {
                        return Err(
                            m.error("expected `name = expression`, e.g. `input(n = x.len())`")
                        );
                    };
                    if parts.iter().any(|(n, _)| *n == name) {
                        errors.spanned(
                            &name,
                            format!("`{name}` is given twice in `input(..)`; keep one"),
                        );
                    }
                    parts.push((name, m.value()?.parse()?));
                    Ok(())
                })?;
                once(&mut o.input, InputKey::List(parts), &meta.path, errors);
            }
        } else if meta.path.is_ident("device") {
            let e: syn::Expr = meta.value()?.parse()?;
            once(&mut o.device, e, &meta.path, errors);
        } else if meta.path.is_ident("where") {
            o.wheres.push(meta.value()?.parse()?);
        } else if meta.path.is_ident("name") {
            let s: syn::LitStr = meta.value()?.parse()?;
            once(&mut o.name, s, &meta.path, errors);
        } else if meta.path.is_ident("online") {
            if meta.input.peek(Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
                errors.spanned(
                    &meta.path,
                    "`online` takes no value; write `#[tunable(online)]`",
                );
            } else {
                once(&mut o.online, meta.path.clone(), &meta.path, errors);
            }
        } else {
            let hint = closest(&key, KEYS)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            errors.spanned(
                &meta.path,
                format!(
                    "unknown key `{key}` in `#[tunable(..)]`{hint}; expected one of: {}",
                    list(&KEYS)
                ),
            );
            // Skip the value, to go on with the next key.
            if meta.input.peek(Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                meta.input.parse::<TokenTree>()?;
            }
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, args) {
        errors.push(e);
    }
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use quote::quote;

    #[test]
    fn options() {
        let mut e = Errors::default();
        let o = parse_options(
            quote!(crate = "renamed", technique = annealing, where = a * b <= 64, where = a != b),
            &mut e,
        );
        assert!(e.is_empty());
        assert_eq!(o.wheres.len(), 2);
        assert!(o.krate.is_some());
        assert_eq!(o.technique.as_deref(), Some("annealing"));
        let mut e = Errors::default();
        parse_options(quote!(crat = "x", technique = anealing, foo), &mut e);
        let msgs: Vec<String> = e
            .finish()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(msgs[0].contains("did you mean `crate`"));
        assert!(msgs[1].contains("did you mean `annealing`"));
    }

    /// `technique = ..` accepts exactly the names the runtime builds.
    #[test]
    fn technique_names_are_the_runtimes() {
        for name in TECHNIQUES {
            assert!(
                tune_runtime::technique_by_name(name).is_ok(),
                "the macro accepts `{name}`, which the runtime does not build"
            );
        }
        for kind in tune_runtime::TechniqueKind::ALL {
            assert!(
                TECHNIQUES.contains(&kind.name()),
                "the runtime builds `{}`, which `#[tunable(technique = ..)]` rejects",
                kind.name()
            );
        }
    }
}
