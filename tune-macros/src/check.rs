//! The second pass: checks on parsed declarations. Each check is a plain function that
//! records errors with the narrowest span, so that every error of a declaration is reported
//! in one build.

use std::collections::{BTreeSet, HashMap};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;
use syn::{Expr, ExprCall, Ident, Lit, Type, UnOp};

use crate::decl::{strip, DomainKind, ParamDecl};
use crate::diag::{closest, list, misspelling, show, Errors};

/// The constraint aliases; each applies to the parameter being declared.
pub const ALIASES: [&str; 8] = [
    "divides",
    "multiple_of",
    "less_than",
    "greater_than",
    "at_most",
    "at_least",
    "equal",
    "unequal",
];

/// The keys of `key = value` items in a declaration.
pub const KEYS: [&str; 1] = ["default"];

/// Identifiers and alias calls found in an expression.
#[derive(Default)]
pub struct Refs<'a> {
    /// Every single-segment path used as a value (`WPT`, `n`).
    pub names: Vec<Ident>,
    /// Identifiers inside macro invocations (`matches!(K, ..)`): possibly parameters.
    pub macro_names: Vec<Ident>,
    /// Calls of a single identifier with one argument: `divides(n)`, `foo(x)`.
    pub calls: Vec<&'a ExprCall>,
}

impl<'a> Refs<'a> {
    /// The references of `e`.
    pub fn of(e: &'a Expr) -> Self {
        let mut r = Refs::default();
        r.visit_expr(e);
        r
    }

    /// Whether the expression names `name`.
    pub fn uses(&self, name: &Ident) -> bool {
        self.names
            .iter()
            .chain(&self.macro_names)
            .any(|n| n == name)
    }
}

/// The function name of a call like `divides(n)`.
pub fn call_name(c: &ExprCall) -> Option<&Ident> {
    match &*c.func {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    }
}

/// `alias(arg)` at the top of an expression: the alias and its argument.
pub fn alias_call(e: &Expr) -> Option<(&Ident, &Expr)> {
    let Expr::Call(c) = strip(e) else { return None };
    let name = call_name(c)?;
    (ALIASES.contains(&name.to_string().as_str()) && c.args.len() == 1).then(|| (name, &c.args[0]))
}

impl<'a> Visit<'a> for Refs<'a> {
    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        if p.qself.is_none() {
            if let Some(id) = p.path.get_ident() {
                self.names.push(id.clone());
            }
        }
        syn::visit::visit_expr_path(self, p);
    }
    fn visit_expr_call(&mut self, c: &'a ExprCall) {
        if call_name(c).is_some() {
            // The function itself is not a parameter (parameters are not callable).
            self.calls.push(c);
            for a in &c.args {
                self.visit_expr(a);
            }
            return;
        }
        syn::visit::visit_expr_call(self, c);
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        fn walk(ts: TokenStream, out: &mut Vec<Ident>) {
            for tt in ts {
                match tt {
                    TokenTree::Ident(i) => out.push(i),
                    TokenTree::Group(g) => walk(g.stream(), out),
                    _ => {}
                }
            }
        }
        walk(m.tokens.clone(), &mut self.macro_names);
    }
}

/// Splits a constraint at its top-level `&&`.
pub fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match strip(e) {
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) && b.attrs.is_empty() => {
            let mut v = conjuncts(&b.left);
            v.extend(conjuncts(&b.right));
            v
        }
        _ => vec![e],
    }
}

/// The bounds of a primitive integer type written by name.
pub fn int_bounds(ty: &Type) -> Option<(i128, i128)> {
    let name = prim_name(ty)?;
    Some(match name.as_str() {
        "u8" => (0, u8::MAX as i128),
        "u16" => (0, u16::MAX as i128),
        "u32" => (0, u32::MAX as i128),
        "u64" | "usize" => (0, u64::MAX as i128),
        "i8" => (i8::MIN as i128, i8::MAX as i128),
        "i16" => (i16::MIN as i128, i16::MAX as i128),
        "i32" => (i32::MIN as i128, i32::MAX as i128),
        "i64" | "isize" => (i64::MIN as i128, i64::MAX as i128),
        _ => return None,
    })
}

/// The name of a type written as a single identifier (`usize`, `bool`, `Kernel`).
pub fn prim_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(Ident::to_string),
        Type::Group(g) => prim_name(&g.elem),
        Type::Paren(p) => prim_name(&p.elem),
        _ => None,
    }
}

/// Whether the parameter is an integer, so that its aliases can prune by generation.
pub fn is_integer(decl: &ParamDecl) -> bool {
    int_bounds(&decl.ty).is_some()
        || decl
            .domain
            .as_ref()
            .is_some_and(|d| matches!(d.kind(), DomainKind::Range(_)))
}

/// A bound of an integer type, as `usize::MAX` when it is long.
fn fmt_bound(v: i128, ty: &str) -> String {
    match v {
        v if v > 65535 => format!("{ty}::MAX"),
        v if v < -65536 => format!("{ty}::MIN"),
        v => v.to_string(),
    }
}

/// The value of an integer literal, possibly negated and in parentheses.
pub fn lit_int(e: &Expr) -> Option<i128> {
    match strip(e) {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<i128>().ok(),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => lit_int(&u.expr).map(|v| -v),
        _ => None,
    }
}

/// A comparable form of a literal list member (`None` for computed members).
fn lit_key(e: &Expr) -> Option<String> {
    if let Some(i) = lit_int(e) {
        return Some(format!("int {i}"));
    }
    match strip(e) {
        Expr::Lit(l) => match &l.lit {
            Lit::Float(f) => f.base10_parse::<f64>().ok().map(|x| format!("float {x:?}")),
            Lit::Bool(b) => Some(format!("bool {}", b.value)),
            Lit::Str(s) => Some(format!("str {}", s.value())),
            Lit::Char(c) => Some(format!("char {}", c.value())),
            _ => None,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => {
            lit_key(&u.expr).map(|k| format!("neg {k}"))
        }
        Expr::Path(p) => Some(format!("path {}", p.to_token_stream())),
        _ => None,
    }
}

/// Runs every check on a declaration: its parameters and its stand-alone constraints
/// (`wheres`). `captured` names the values that are known not to be parameters (a
/// `#[tunable]` function's other arguments).
pub fn check(decls: &[ParamDecl], wheres: &[Expr], captured: &[Ident], errors: &mut Errors) {
    check_names(decls, errors);
    for (i, d) in decls.iter().enumerate() {
        if d.broken {
            continue;
        }
        check_values(d, decls, errors);
        check_options(d, decls, errors);
        check_constraints(i, decls, captured, errors);
    }
    for w in wheres {
        check_where(w, decls, captured, errors);
    }
}

/// A stand-alone constraint: it reads at least one parameter, uses no alias (an alias
/// constrains the parameter it is written on), and is not an assignment.
pub fn check_where(w: &Expr, decls: &[ParamDecl], captured: &[Ident], errors: &mut Errors) {
    if let Expr::Assign(a) = strip(w) {
        errors.spanned(
            a.eq_token,
            "a stand-alone constraint is a condition; compare with `==`, e.g. `A == 4`",
        );
        return;
    }
    let refs = Refs::of(w);
    if deps_all(&refs, decls).is_empty() {
        errors.spanned(
            w,
            format!(
                "the constraint `{}` reads no tuning parameter, so it cannot be checked on any; make it read one (e.g. `A * B <= n`), or remove it",
                show(w)
            ),
        );
    }
    let names: Vec<String> = decls.iter().map(|d| d.name.to_string()).collect();
    let mut reported = BTreeSet::new();
    for n in &refs.names {
        let s = n.to_string();
        if names.contains(&s) || captured.iter().any(|c| *c == s) || !reported.insert(s.clone()) {
            continue;
        }
        misspelled_param(n, &names, errors);
    }
    for call in &refs.calls {
        let Some(f) = call_name(call) else { continue };
        let fs = f.to_string();
        if ALIASES.contains(&fs.as_str()) {
            errors.spanned(
                f,
                format!(
                    "`{fs}(..)` constrains the parameter it is written on, and a stand-alone constraint has none; write the condition out (e.g. `n % X == 0` for `X: .., divides(n)`), or write `{fs}(..)` on the parameter"
                ),
            );
        } else if let Some(a) = misspelled_alias(call, &fs, &names, captured) {
            errors.spanned(
                f,
                format!(
                    "unknown function `{fs}`; the alias `{a}` only applies to a parameter, not in a stand-alone constraint (a function of your own named `{fs}` can be called by path, e.g. `self::{fs}(..)`)"
                ),
            );
        }
    }
}

/// Duplicate parameter names: one error at each declaration involved.
pub fn check_names(decls: &[ParamDecl], errors: &mut Errors) {
    let mut first: HashMap<String, &Ident> = HashMap::new();
    for d in decls {
        let key = d.name.to_string();
        match first.get(&key) {
            Some(prev) => {
                errors.spanned(
                    &d.name,
                    format!("duplicate parameter `{key}`; rename one of the two declarations"),
                );
                errors.spanned(*prev, format!("`{key}` is first declared here"));
            }
            None => {
                first.insert(key, &d.name);
            }
        }
    }
}

/// Range, step and list checks on one parameter's values.
pub fn check_values(d: &ParamDecl, decls: &[ParamDecl], errors: &mut Errors) {
    let ty_name = prim_name(&d.ty).unwrap_or_default();
    let ty_str = d.ty.to_token_stream().to_string();
    let Some(domain) = &d.domain else {
        let example = if int_bounds(&d.ty).is_some() {
            "in 1..=64` or `in [1, 2, 4]"
        } else if ty_name == "f32" || ty_name == "f64" {
            "in [0.5, 1.0, 2.0]"
        } else {
            return;
        };
        errors.spanned(
            &d.ty,
            format!(
                "`{}` needs values: write e.g. `{}: {ty_str} {example}`",
                d.name, d.name
            ),
        );
        return;
    };
    let what = format!("the values of `{}`", d.name);
    no_param_refs(&domain.expr, decls, &what, errors);
    if let Some((_, s)) = &domain.step {
        no_param_refs(s, decls, &format!("the step of `{}`", d.name), errors);
    }
    if let Some((alias, _)) = alias_call(&domain.expr) {
        errors.spanned(
            &domain.expr,
            format!(
                "`{alias}(..)` is a constraint, not a list of values; give the values first, e.g. `1..=n, {alias}(n)`"
            ),
        );
        return;
    }
    match domain.kind() {
        DomainKind::Range(r) => {
            if ty_name == "bool" {
                errors.spanned(
                    &domain.expr,
                    format!(
                        "a `bool` parameter takes `false` and `true`; remove the range `{}`",
                        show(&domain.expr)
                    ),
                );
                return;
            }
            if ty_name == "f32" || ty_name == "f64" {
                errors.spanned(
                    &domain.expr,
                    "a range needs an integer type; list the values, e.g. `[0.5, 1.0, 2.0]`, or map an integer range, e.g. `(1..=4).map(|i| i as f32 * 0.5)`",
                );
                return;
            }
            let (Some(lo), Some(hi)) = (&r.start, &r.end) else {
                errors.spanned(
                    &domain.expr,
                    "a range needs both bounds, e.g. `1..=n` or `0..64`",
                );
                return;
            };
            let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
            let (l, h) = (lit_int(lo), lit_int(hi));
            if let Some(bounds) = int_bounds(&d.ty) {
                for (e, v) in [(lo, l), (hi, h)] {
                    if let Some(v) = v {
                        if v < bounds.0 || v > bounds.1 {
                            errors.spanned(
                                e,
                                format!(
                                    "`{}` does not fit `{ty_str}` (`{}..={}`); widen the type or narrow the range",
                                    show(e),
                                    fmt_bound(bounds.0, &ty_str),
                                    fmt_bound(bounds.1, &ty_str)
                                ),
                            );
                        }
                    }
                }
            }
            if let (Some(l), Some(h)) = (l, h) {
                let shown = show(&domain.expr);
                if l > h {
                    let fix = if inclusive {
                        format!("{h}..={l}")
                    } else {
                        format!("{h}..{l}")
                    };
                    errors.spanned(
                        &domain.expr,
                        format!(
                            "the range `{shown}` is empty; write the lower bound first: `{fix}`"
                        ),
                    );
                } else if l == h && !inclusive {
                    errors.spanned(
                        &domain.expr,
                        format!(
                            "the range `{shown}` is empty, since `..` excludes its end; write `{l}..={h}` for the single value `{l}`"
                        ),
                    );
                }
            }
            if let Some((_, s)) = &domain.step {
                if let Some(v) = lit_int(s) {
                    if v < 1 {
                        errors.spanned(s, "`step` must be at least 1, e.g. `0..=64 step 8`");
                    }
                }
            }
        }
        DomainKind::List(a) => {
            if let Some((kw, _)) = &domain.step {
                errors.at(
                    *kw,
                    "`step` applies to ranges; list only the values you want instead",
                );
            }
            if a.elems.is_empty() {
                errors.spanned(a, "an empty list gives no values; list at least one value");
            }
            let bounds = int_bounds(&d.ty);
            let mut seen: HashMap<String, &Expr> = HashMap::new();
            for e in &a.elems {
                if let (Some(v), Some(b)) = (lit_int(e), bounds) {
                    if v < b.0 || v > b.1 {
                        errors.spanned(
                            e,
                            format!(
                                "`{}` does not fit `{ty_str}` (`{}..={}`); widen the type or remove the value",
                                show(e),
                                fmt_bound(b.0, &ty_str),
                                fmt_bound(b.1, &ty_str)
                            ),
                        );
                    }
                }
                let Some(key) = lit_key(e) else { continue };
                if let std::collections::hash_map::Entry::Vacant(v) = seen.entry(key) {
                    v.insert(e);
                } else {
                    errors.spanned(
                        e,
                        format!(
                            "`{}` is listed twice in the values of `{}`; remove the duplicate",
                            show(e),
                            d.name
                        ),
                    );
                }
            }
        }
        DomainKind::Generator => {
            if let Some((kw, _)) = &domain.step {
                errors.at(
                    *kw,
                    "`step` applies to ranges; for an iterator, use `.step_by(..)`",
                );
            }
        }
    }
}

/// Values, steps and defaults are evaluated once, before any parameter is bound.
fn no_param_refs(e: &Expr, decls: &[ParamDecl], what: &str, errors: &mut Errors) {
    let refs = Refs::of(e);
    let mut reported = BTreeSet::new();
    for n in refs.names.iter().chain(&refs.macro_names) {
        if decls.iter().any(|d| &d.name == n) && reported.insert(n.to_string()) {
            errors.spanned(
                n,
                format!(
                    "{what} cannot depend on parameter `{n}`; keep fixed values and add a constraint instead, e.g. `, at_most({n})`"
                ),
            );
        }
    }
}

/// `key = value` items: known keys, given once.
pub fn check_options(d: &ParamDecl, decls: &[ParamDecl], errors: &mut Errors) {
    let mut seen = BTreeSet::new();
    for (k, v) in &d.options {
        let key = k.to_string();
        if decls.iter().any(|p| p.name == key) {
            errors.spanned(
                k,
                format!(
                    "unexpected `{key} = ..`; a constraint compares with `==`, e.g. `{key} == 4`"
                ),
            );
            continue;
        }
        if !KEYS.contains(&key.as_str()) {
            let hint = closest(&key, KEYS)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            errors.spanned(
                k,
                format!(
                    "unknown key `{key}`{hint}; expected one of: {}",
                    list(&KEYS)
                ),
            );
            continue;
        }
        if !seen.insert(key.clone()) {
            errors.spanned(k, format!("`{key}` is given twice; keep one"));
            continue;
        }
        if key == "default" {
            no_param_refs(v, decls, &format!("the default of `{}`", d.name), errors);
        }
    }
}

/// Constraint checks of parameter `i`: references to later parameters (and cycles), an
/// alias that reads its own parameter, misspelled aliases and parameter names.
pub fn check_constraints(i: usize, decls: &[ParamDecl], captured: &[Ident], errors: &mut Errors) {
    let me = &decls[i];
    let names: Vec<String> = decls.iter().map(|d| d.name.to_string()).collect();
    for c in &me.constraints {
        let refs = Refs::of(c);
        let mut reported = BTreeSet::new();
        let all = refs.names.iter().map(|n| (n, false));
        for (n, in_macro) in all.chain(refs.macro_names.iter().map(|n| (n, true))) {
            let s = n.to_string();
            match names.iter().position(|x| *x == s) {
                Some(j) if j > i => {
                    if !reported.insert(s.clone()) {
                        continue;
                    }
                    let later = &decls[j];
                    let cycle = later
                        .constraints
                        .iter()
                        .any(|lc| Refs::of(lc).uses(&me.name));
                    let msg = if cycle {
                        format!(
                            "the constraints of `{}` and `{s}` read each other (a cycle); keep one constraint over both, on `{s}`, the later of the two",
                            me.name
                        )
                    } else {
                        format!(
                            "`{s}` is declared after `{}`; a constraint may only read parameters declared before it: move this constraint to `{s}`, write it on its own as `where ..;` (it is then checked once every parameter it reads is bound), or declare `{s}` first",
                            me.name
                        )
                    };
                    errors.spanned(n, msg);
                }
                Some(_) => {}
                None => {
                    if in_macro || captured.iter().any(|c| *c == s) || !reported.insert(s.clone()) {
                        continue;
                    }
                    misspelled_param(n, &names, errors);
                }
            }
        }
        for call in &refs.calls {
            let Some(f) = call_name(call) else { continue };
            let fs = f.to_string();
            if ALIASES.contains(&fs.as_str()) {
                if call.args.len() != 1 {
                    errors.spanned(
                        call,
                        format!(
                            "`{fs}` takes one argument, e.g. `{fs}(n)`; it constrains `{}` itself",
                            me.name
                        ),
                    );
                    continue;
                }
                let ty_name = prim_name(&me.ty).unwrap_or_default();
                if matches!(fs.as_str(), "divides" | "multiple_of")
                    && matches!(ty_name.as_str(), "f32" | "f64" | "bool")
                {
                    errors.spanned(
                        f,
                        format!(
                            "`{fs}` needs an integer parameter, but `{}` is `{ty_name}`; write the condition as an expression instead",
                            me.name
                        ),
                    );
                }
                for n in Refs::of(&call.args[0]).names {
                    if n == me.name {
                        errors.spanned(
                            &n,
                            format!(
                                "`{fs}(..)` constrains `{me_name}` itself, so its argument cannot read `{me_name}`; write a plain expression instead, e.g. `{me_name} * {me_name} <= 64`",
                                me_name = me.name
                            ),
                        );
                    }
                }
            } else if let Some(a) = misspelled_alias(call, &fs, &names, captured) {
                errors.spanned(
                    f,
                    format!(
                        "unknown constraint alias `{fs}`; did you mean `{a}`? the aliases are: {} (a function of your own named `{fs}` can be called by path, e.g. `self::{fs}(..)`)",
                        list(&ALIASES)
                    ),
                );
            }
        }
    }
}

/// A name that is neither a parameter nor a captured value: an error when it is one edit away
/// from a parameter's name.
fn misspelled_param(n: &Ident, names: &[String], errors: &mut Errors) {
    let s = n.to_string();
    if let Some(p) = misspelling(&s, names.iter().map(String::as_str)) {
        errors.spanned(n, format!("unknown parameter `{s}`; did you mean `{p}`?"));
    }
}

/// The alias that `fs(..)`, a call of one argument to something that is neither a
/// parameter nor a captured value, is one edit away from.
fn misspelled_alias(
    call: &ExprCall,
    fs: &str,
    names: &[String],
    captured: &[Ident],
) -> Option<&'static str> {
    let user_value = names.iter().any(|n| n == fs) || captured.iter().any(|c| *c == fs);
    if call.args.len() != 1 || user_value {
        return None;
    }
    misspelling(fs, ALIASES)
}

/// The slots of every parameter that `refs` names, sorted and unique.
pub fn deps_all(refs: &Refs<'_>, decls: &[ParamDecl]) -> Vec<usize> {
    deps(refs, decls, decls.len())
}

/// The slots of the earlier parameters that `refs` names, sorted and unique.
pub fn deps(refs: &Refs<'_>, decls: &[ParamDecl], before: usize) -> Vec<usize> {
    let mut out = BTreeSet::new();
    for n in refs.names.iter().chain(&refs.macro_names) {
        if let Some(j) = decls[..before].iter().position(|d| &d.name == n) {
            out.insert(j);
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::decl::SpaceInput;

    fn errors_of(input: SpaceInput) -> Vec<String> {
        let mut e = Errors::default();
        check(&input.params, &input.wheres, &[], &mut e);
        match e.finish() {
            Ok(()) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn accepts_the_full_syntax() {
        let errs = errors_of(syn::parse_quote! {
            WPT: usize in 1..=n, divides(n);
            LS:  usize in 1..=n, divides(n / WPT) && at_most(max_wg);
            VW:  u32   in [1, 2, 4, 8];
            PAD: bool;
            TS:  usize in (0..=10).map(|i| 1 << i);
            ST:  usize in 0..=64 step 8, default = 8;
            F:   f32 in [0.5, 1.0, 2.0];
            X:   usize in 1..=64, WPT * X <= 1024 || PAD;
        });
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn duplicate_names() {
        let errs = errors_of(syn::parse_quote! { A: bool; A: bool; });
        assert_eq!(errs.len(), 2);
        assert!(errs[0].contains("duplicate parameter `A`"));
    }

    #[test]
    fn ranges() {
        let errs = errors_of(syn::parse_quote! {
            A: usize in 5..=1;
            B: usize in 1..1;
            C: u8 in 0..=300;
            D: u32 in -1..4;
            E: bool in 0..=1;
            F: usize in 0..=8 step 0;
            G: usize in 1..;
        });
        assert_eq!(errs.len(), 7, "{errs:?}");
        assert!(errs[0].contains("empty"));
        assert!(errs[2].contains("`300` does not fit `u8`"));
        assert!(errs[3].contains("`-1` does not fit `u32` (`0..=u32::MAX`)"));
        assert!(errs[4].contains("`bool`"));
        assert!(errs[5].contains("`step` must be at least 1"));
        assert!(errs[6].contains("both bounds"));
    }

    #[test]
    fn lists() {
        let errs = errors_of(syn::parse_quote! {
            A: u32 in [1, 2, 2];
            B: f32 in [0.5, 0.50];
            C: u32 in [];
            D: u32 in [1, 2] step 2;
        });
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(errs[0].contains("`2` is listed twice"));
    }

    #[test]
    fn constraint_references() {
        let errs = errors_of(syn::parse_quote! {
            A: usize in 1..=8, divides(B);
            B: usize in 1..=8, divides(B);
            C: usize in 1..=8, WTP < 4 && n < 4;
            WPT: usize in 1..=8, divide(8);
            F: f32 in [1.0], divides(2.0);
        });
        assert_eq!(errs.len(), 5, "{errs:?}");
        assert!(errs[0].contains("`B` is declared after `A`"));
        assert!(errs[1].contains("cannot read `B`"));
        assert!(errs[2].contains("unknown parameter `WTP`; did you mean `WPT`?"));
        assert!(errs[3].contains("did you mean `divides`?"));
    }

    #[test]
    fn stand_alone_constraints() {
        let errs = errors_of(syn::parse_quote! {
            where A * B <= 64;
            A: usize in 1..=8;
            B: usize in 1..=8;
            where n > 4;
            where divides(A);
            where A = 2;
            where WTP < 3 && B < 8;
            WPT: usize in 1..=8;
        });
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(errs[0].contains("reads no tuning parameter"));
        assert!(errs[1].contains("`divides(..)` constrains the parameter it is written on"));
        assert!(errs[2].contains("compare with `==`"));
        assert!(errs[3].contains("unknown parameter `WTP`; did you mean `WPT`?"));
    }

    #[test]
    fn cycles() {
        let errs = errors_of(syn::parse_quote! {
            A: usize in 1..=8, A < B;
            B: usize in 1..=8, A < B;
        });
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("cycle"));
    }

    #[test]
    fn values_do_not_read_parameters() {
        let errs = errors_of(syn::parse_quote! {
            A: usize in 1..=8;
            B: usize in 1..=A, default = A;
        });
        assert_eq!(errs.len(), 2, "{errs:?}");
    }

    #[test]
    fn keys() {
        let errs = errors_of(syn::parse_quote! {
            A: usize in 1..=8, defualt = 4, A = 2;
        });
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].contains("did you mean `default`"));
        assert!(errs[1].contains("`==`"));
    }

    #[test]
    fn splits_conjuncts_and_finds_deps() {
        let s: SpaceInput = syn::parse_quote! {
            A: usize in 1..=8;
            B: usize in 1..=8;
            C: usize in 1..=8, (divides(n / A) && C < B) && !PAD;
        };
        let c = &s.params[2].constraints[0];
        let parts = conjuncts(c);
        assert_eq!(parts.len(), 3);
        assert!(alias_call(parts[0]).is_some());
        assert_eq!(deps(&Refs::of(c), &s.params, 2), vec![0, 1]);
    }
}
