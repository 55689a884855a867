//! The third pass: a checked declaration becomes calls of tune-runtime's builder API.

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Expr, Ident, Path};

use crate::check::{alias_call, conjuncts, deps, deps_all, is_integer, Refs, ALIASES};
use crate::decl::{DomainKind, ParamDecl};
use crate::diag::show;

/// The builder chain of a declaration: `SpaceBuilder::new().param(..)...build()`, which
/// evaluates to `Result<Space>`. Stand-alone constraints (`wheres`) go to the builder,
/// which checks each once the last parameter it reads is bound.
pub fn space_expr(krate: &Path, decls: &[ParamDecl], wheres: &[Expr]) -> TokenStream {
    let params = decls
        .iter()
        .enumerate()
        .map(|(i, d)| param(krate, decls, i, d));
    let krate_ts = krate.to_token_stream();
    let wheres = wheres.iter().flat_map(conjuncts).map(|w| {
        let refs = Refs::of(w);
        let slots = deps_all(&refs, decls);
        let ret = quote_spanned!(w.span()=> ::core::primitive::bool);
        let body = closure(&krate_ts, decls, &slots, &refs, None, ret, w);
        let deps = slot_list(&slots);
        let label = show(w);
        quote!(.constraint(#deps, #body).label(#label))
    });
    quote! {
        #krate::__private::SpaceBuilder::new() #(#params)* #(#wheres)* .build()
    }
}

/// `.param(..)` for parameter `i`, then the constraints that belong to no parameter.
fn param(krate: &Path, decls: &[ParamDecl], i: usize, d: &ParamDecl) -> TokenStream {
    let ty = &d.ty;
    let name = d.name.unraw().to_string();
    let tspan = ty.span();
    // The crate path at the type, so that rustc's notes point at the declaration.
    let krate = &respan(krate.to_token_stream(), tspan);
    let mut p = match &d.domain {
        None => quote_spanned! {tspan=>
            <#ty as #krate::__private::Unranged>::unranged(#name)
        },
        Some(dom) => {
            let e = &dom.expr;
            match dom.kind() {
                DomainKind::Range(_) => {
                    let mut p = quote_spanned! {tspan=>
                        #krate::__private::Param::<#ty>::range(#name, #e)
                    };
                    if let Some((kw, s)) = &dom.step {
                        p.extend(quote_spanned!(*kw=> .step(#s)));
                    }
                    p
                }
                DomainKind::List(_) | DomainKind::Generator => quote_spanned! {tspan=>
                    #krate::__private::Param::<#ty>::values(#name, #e)
                },
            }
        }
    };
    let mut free = TokenStream::new();
    for c in d.constraints.iter().flat_map(conjuncts) {
        if let (Some((alias, arg)), true) = (alias_call(c), is_integer(d)) {
            let refs = Refs::of(arg);
            let slots = deps(&refs, decls, i);
            let body = closure(krate, decls, &slots, &refs, None, ty.to_token_stream(), arg);
            let deps = slot_list(&slots);
            let label = format!("{}: {}", name, show(c));
            p.extend(quote_spanned!(alias.span()=> .#alias(#deps, #body).label(#label)));
            continue;
        }
        let refs = Refs::of(c);
        let slots = deps(&refs, decls, i);
        let uses_self = refs.uses(&d.name) || has_alias(&refs);
        let me = uses_self.then_some(i);
        let ret = quote_spanned!(c.span()=> ::core::primitive::bool);
        let body = closure(krate, decls, &slots, &refs, me, ret, c);
        let deps = slot_list(&slots);
        let label = show(c);
        if me.is_none() && !slots.is_empty() {
            // Reads only earlier parameters: it belongs to the last of them.
            free.extend(quote!(.constraint(#deps, #body).label(#label)));
        } else {
            p.extend(quote!(.constraint(#deps, #body).label(#label)));
        }
    }
    if let Some(v) = d.option("default") {
        p.extend(quote_spanned!(v.span()=> .default_value(#v)));
    }
    quote!(.param(#p) #free)
}

/// The tokens with every span replaced by `span`.
fn respan(ts: TokenStream, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut n = Group::new(g.delimiter(), respan(g.stream(), span));
                n.set_span(span);
                tt = TokenTree::Group(n);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

fn has_alias(refs: &Refs<'_>) -> bool {
    refs.calls.iter().any(|c| {
        crate::check::call_name(c).is_some_and(|n| ALIASES.contains(&n.to_string().as_str()))
    })
}

fn slot_list(slots: &[usize]) -> TokenStream {
    let s = slots.iter().map(|&s| Literal::usize_unsuffixed(s));
    quote!(&[#(#s),*])
}

/// `|b: &Bound| -> ret { let A: T = b.get::<T>(0); ...; body }`, binding only the
/// parameters the body reads (`me`: the owner, bound too, with the aliases as local
/// closures over it).
fn closure(
    krate: &TokenStream,
    decls: &[ParamDecl],
    slots: &[usize],
    refs: &Refs<'_>,
    me: Option<usize>,
    ret: TokenStream,
    body: &Expr,
) -> TokenStream {
    let b = Ident::new("__tune_bound", Span::mixed_site());
    let mut binds = TokenStream::new();
    let mut bind = |j: usize| {
        let d = &decls[j];
        let (n, t) = (&d.name, &d.ty);
        let slot = Literal::usize_unsuffixed(j);
        binds.extend(quote! {
            #[allow(non_snake_case, unused_variables)]
            let #n: #t = #b.get::<#t>(#slot);
        });
    };
    for &j in slots {
        bind(j);
    }
    if let Some(i) = me {
        bind(i);
        let (n, t) = (&decls[i].name, &decls[i].ty);
        let e = Ident::new("__tune_arg", Span::mixed_site());
        let mut done: Vec<String> = Vec::new();
        for call in &refs.calls {
            let Some(alias) = crate::check::call_name(call) else {
                continue;
            };
            let a = alias.to_string();
            if !ALIASES.contains(&a.as_str()) || done.contains(&a) {
                continue;
            }
            let sp = alias.span();
            let test = match a.as_str() {
                "divides" => quote_spanned!(sp=> #n != 0 && #e % #n == 0),
                "multiple_of" => quote_spanned!(sp=> #e != 0 && #n % #e == 0),
                "less_than" => quote_spanned!(sp=> #n < #e),
                "greater_than" => quote_spanned!(sp=> #n > #e),
                "at_most" => quote_spanned!(sp=> #n <= #e),
                "at_least" => quote_spanned!(sp=> #n >= #e),
                "equal" => quote_spanned!(sp=> #n == #e),
                _ => quote_spanned!(sp=> #n != #e),
            };
            binds.extend(quote_spanned! {alias.span()=>
                #[allow(unused_variables)]
                let #alias = |#e: #t| -> ::core::primitive::bool { #test };
            });
            done.push(a);
        }
    }
    // At the user's expression, so that rustc's notes about the closure point there.
    quote_spanned! {body.span()=>
        |#b: &#krate::__private::Bound<'_>| -> #ret {
            #binds
            #body
        }
    }
}
