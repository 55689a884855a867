//! The typed syntax tree of parameter declarations, shared by `space!` and `#[tp(..)]`, and
//! its parser (the first pass: syntax only; everything else is checked in `check`).
//!
//! ```text
//! space!   := ("crate" "=" PATH ";")? (ENTRY (";" ENTRY)* ";"?)?
//! ENTRY    := NAME ":" TYPE ("in" DOMAIN)? ("," ITEM)* | WHERE
//! WHERE    := "where" EXPR ("," EXPR)*       (stand-alone constraints, anywhere)
//! #[tp]    := "#[tp]" | "#[tp(" (DOMAIN | ITEM) ("," ITEM)* ")]"
//! DOMAIN   := RANGE ("step" EXPR)? | "[" EXPR,* "]" | EXPR     (interval, list, generator)
//! ITEM     := "default" "=" EXPR | CONSTRAINT                    (a boolean expression)
//! ```

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, ExprArray, ExprRange, Ident, LitStr, Path, Token, Type};

syn::custom_keyword!(step);

/// One tuning parameter as declared.
pub struct ParamDecl {
    /// Its name (a `space!` entry's name or a `#[tp]` argument's identifier).
    pub name: Ident,
    /// Its Rust type.
    pub ty: Type,
    /// Its values; `None` for `bool` and enums.
    pub domain: Option<Domain>,
    /// Constraint expressions, one per comma-separated item (a conjunction).
    pub constraints: Vec<Expr>,
    /// `key = value` items (`default = 4`), validated in `check`.
    pub options: Vec<(Ident, Expr)>,
    /// The declaration did not parse; only its name and type are known.
    pub broken: bool,
}

/// The values a parameter takes, as written.
pub struct Domain {
    /// The interval, list or generator.
    pub expr: Expr,
    /// `step EXPR`, with the keyword's span.
    pub step: Option<(Span, Expr)>,
}

/// What kind of values a domain expression denotes.
pub enum DomainKind<'a> {
    /// `lo..=hi` or `lo..hi` (possibly in parentheses).
    Range(&'a ExprRange),
    /// `[a, b, c]`.
    List(&'a ExprArray),
    /// Any other expression: an iterator of values (a generator).
    Generator,
}

impl Domain {
    /// Classifies the domain expression.
    pub fn kind(&self) -> DomainKind<'_> {
        match strip(&self.expr) {
            Expr::Range(r) => DomainKind::Range(r),
            Expr::Array(a) => DomainKind::List(a),
            _ => DomainKind::Generator,
        }
    }
}

/// Removes parentheses and invisible groups around an expression.
pub fn strip(mut e: &Expr) -> &Expr {
    loop {
        match e {
            Expr::Paren(p) => e = &p.expr,
            Expr::Group(g) => e = &g.expr,
            _ => return e,
        }
    }
}

impl ParamDecl {
    /// A parameter with no values or constraints yet.
    pub fn new(name: Ident, ty: Type) -> Self {
        ParamDecl {
            name,
            ty,
            domain: None,
            constraints: Vec::new(),
            options: Vec::new(),
            broken: false,
        }
    }

    /// The expression of option `key`, if given.
    pub fn option(&self, key: &str) -> Option<&Expr> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, e)| e)
    }

    /// Parses the inside of `#[tp(..)]` for the argument `name: ty`.
    pub fn parse_tp(name: Ident, ty: Type, input: ParseStream) -> syn::Result<Self> {
        let mut decl = ParamDecl::new(name, ty);
        let mut first = true;
        while !input.is_empty() {
            let expr: Expr = input.parse()?;
            if first && key_value(&expr).is_none() {
                decl.domain = Some(Domain {
                    expr,
                    step: parse_step(input)?,
                });
            } else {
                decl.push_item(expr);
            }
            first = false;
            if input.is_empty() {
                break;
            }
            if !input.peek(Token![,]) {
                return Err(input.error("expected `,` between the values and each constraint"));
            }
            input.parse::<Token![,]>()?;
        }
        Ok(decl)
    }

    fn push_item(&mut self, expr: Expr) {
        match key_value(&expr) {
            Some((k, v)) => self.options.push((k.clone(), v.clone())),
            None => self.constraints.push(expr),
        }
    }
}

/// `key = value` with a plain identifier as the key.
fn key_value(e: &Expr) -> Option<(&Ident, &Expr)> {
    let Expr::Assign(a) = e else { return None };
    let Expr::Path(p) = &*a.left else { return None };
    if !p.attrs.is_empty() || p.qself.is_some() {
        return None;
    }
    Some((p.path.get_ident()?, &a.right))
}

fn parse_step(input: ParseStream) -> syn::Result<Option<(Span, Expr)>> {
    if !input.peek(step) {
        return Ok(None);
    }
    let kw: step = input.parse()?;
    Ok(Some((kw.span, input.parse()?)))
}

impl Parse for ParamDecl {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        if !input.peek(Token![:]) {
            return Err(input.error(format!(
                "expected `:` and a type after `{name}`, e.g. `{name}: usize in 1..=64`"
            )));
        }
        input.parse::<Token![:]>()?;
        let ty: Type = input.parse()?;
        let mut decl = ParamDecl::new(name, ty);
        if input.peek(Token![in]) {
            input.parse::<Token![in]>()?;
            decl.domain = Some(Domain {
                expr: input.parse()?,
                step: parse_step(input)?,
            });
        }
        while input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
            if input.is_empty() || input.peek(Token![;]) {
                break;
            }
            decl.push_item(input.parse()?);
        }
        if !input.is_empty() && !input.peek(Token![;]) {
            let what = if decl.domain.is_some() || !decl.constraints.is_empty() {
                "expected `,` or `;`"
            } else {
                "expected one of: `in`, `,`, `;`"
            };
            return Err(input.error(what));
        }
        Ok(decl)
    }
}

/// The input of `space!`.
pub struct SpaceInput {
    /// `crate = path;`: the path of the facade crate.
    pub krate: Option<Path>,
    /// The parameters in declaration order.
    pub params: Vec<ParamDecl>,
    /// Stand-alone constraints (`where EXPR, ..;`), in order.
    pub wheres: Vec<Expr>,
}

/// A crate path written as a path or a string literal.
pub fn parse_crate_path(input: ParseStream) -> syn::Result<Path> {
    if input.peek(LitStr) {
        let s: LitStr = input.parse()?;
        s.parse::<Path>()
            .map_err(|_| syn::Error::new(s.span(), "expected a crate path, e.g. `\"tune\"`"))
    } else {
        Path::parse_mod_style(input)
    }
}

impl Parse for SpaceInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut krate = None;
        if input.peek(Token![crate]) && input.peek2(Token![=]) {
            input.parse::<Token![crate]>()?;
            input.parse::<Token![=]>()?;
            krate = Some(parse_crate_path(input)?);
            input.parse::<Token![;]>()?;
        }
        let mut params = Vec::new();
        let mut wheres = Vec::new();
        while !input.is_empty() {
            if input.peek(Token![where]) {
                input.parse::<Token![where]>()?;
                loop {
                    wheres.push(input.parse()?);
                    if !input.peek(Token![,]) {
                        break;
                    }
                    input.parse::<Token![,]>()?;
                    if input.is_empty() || input.peek(Token![;]) {
                        break;
                    }
                }
                if !input.is_empty() && !input.peek(Token![;]) {
                    return Err(input.error("expected `,` or `;` after the constraint"));
                }
            } else {
                params.push(input.parse()?);
            }
            if !input.is_empty() {
                input.parse::<Token![;]>()?;
            }
        }
        Ok(SpaceInput {
            krate,
            params,
            wheres,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use quote::ToTokens;

    #[test]
    fn parses_every_item() {
        let s: SpaceInput = syn::parse_quote! {
            crate = renamed;
            WPT: usize in 1..=n, divides(n);
            ST: usize in 0..=64 step 8, default = 16;
            PAD: bool;
            where WPT * ST <= 256, X != ST;
            X: usize in [1, 2], WPT * X <= 1024 || PAD, at_most(4)
        };
        assert_eq!(s.krate.unwrap().to_token_stream().to_string(), "renamed");
        assert_eq!(s.params.len(), 4);
        let st = &s.params[1];
        assert!(matches!(
            st.domain.as_ref().unwrap().kind(),
            DomainKind::Range(_)
        ));
        assert!(st.domain.as_ref().unwrap().step.is_some());
        assert!(st.option("default").is_some());
        assert!(s.params[2].domain.is_none());
        assert_eq!(s.params[3].constraints.len(), 2);
        assert_eq!(s.wheres.len(), 2);
    }

    #[test]
    fn parses_tp() {
        let d = syn::parse::Parser::parse2(
            |i: ParseStream| {
                ParamDecl::parse_tp(syn::parse_quote!(wpt), syn::parse_quote!(usize), i)
            },
            quote::quote!(1..=x.len(), divides(x.len()), default = 1),
        )
        .unwrap();
        assert!(d.domain.is_some());
        assert_eq!(d.constraints.len(), 1);
        assert_eq!(d.options.len(), 1);
    }

    #[test]
    fn reports_a_missing_separator() {
        let r: syn::Result<SpaceInput> = syn::parse2(quote::quote!(A: usize 1..=4;));
        assert!(r.is_err());
    }
}
