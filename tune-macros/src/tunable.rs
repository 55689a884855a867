//! `#[tunable]` on a host function whose tuning parameters are `#[tp(..)]` arguments.
//!
//! Beside the function (unchanged, `#[tp]` attributes removed) it generates, for `fn saxpy`:
//! - `struct SaxpyConfig { pub wpt: usize, .. }`, one field per `#[tp]` argument, with the
//!   function's visibility;
//! - `SaxpyConfig::space(other args) -> tune::Result<tune::Space>`: the function's search
//!   space for its non-tuning arguments (`&mut T` arguments are taken as `&T`);
//! - `SaxpyConfig::call(self, other args)`: calls `saxpy` with this configuration;
//! - `From<SaxpyConfig> for Config`, `TryFrom<&Config>`/`TryFrom<Config>`, `Display`
//!   (`wpt=4 ls=64`) and the hidden descriptor `tune::__private::Tunable` (function name,
//!   parameter names, technique), on which later entry points (tuning, dispatch) build.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::{FnArg, Ident, ItemFn, Meta, Pat, Path, Type};

use crate::attr::{parse_options, Options};
use crate::check::{check, Refs};
use crate::decl::ParamDecl;
use crate::diag::Errors;
use crate::entry::{blocks_tuner, default_cost, returns_result, Arg, Entry, Pass};
use crate::expand::space_expr;

/// A non-tuning argument.
struct Other {
    /// The name `call` gives it.
    name: Ident,
    /// The pattern `space` binds it with.
    pat: Pat,
    ty: Type,
}

enum Slot {
    Tuning(usize),
    Other(usize),
}

/// Expands `#[tunable(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let opts = parse_options(args, &mut errors);
    // Before `#[tp]` attributes are taken off: the declaration as written.
    let fingerprint = crate::fingerprint::of(
        &item,
        &[
            format!("cost={:?}", opts.cost),
            format!(
                "repetitions={}",
                opts.repetitions
                    .as_ref()
                    .map(|r| r.to_string())
                    .unwrap_or_default()
            ),
        ],
    );
    let mut f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[tunable]` applies to a free function whose tuning parameters are arguments marked `#[tp(..)]`",
            )
            .to_compile_error();
            return quote!(#e #item);
        }
    };
    let krate = opts
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::tune));
    let mut tps: Vec<ParamDecl> = Vec::new();
    let mut others: Vec<Other> = Vec::new();
    let mut order: Vec<Slot> = Vec::new();
    let mut complete = true;
    for (k, arg) in f.sig.inputs.iter_mut().enumerate() {
        let pt = match arg {
            FnArg::Receiver(r) => {
                errors.spanned(
                    &*r,
                    "`#[tunable]` applies to free functions, not methods; make the method call a free `#[tunable]` function",
                );
                complete = false;
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let (tp, rest): (Vec<_>, Vec<_>) =
            pt.attrs.drain(..).partition(|a| a.path().is_ident("tp"));
        pt.attrs = rest;
        if tp.is_empty() {
            let name = match &*pt.pat {
                Pat::Ident(p) if p.subpat.is_none() => p.ident.clone(),
                _ => format_ident!("__tune_arg{}", k),
            };
            let pat = match &*pt.pat {
                Pat::Ident(p) if p.subpat.is_none() => Pat::Ident(syn::PatIdent {
                    attrs: Vec::new(),
                    by_ref: None,
                    mutability: None,
                    ident: p.ident.clone(),
                    subpat: None,
                }),
                p => p.clone(),
            };
            order.push(Slot::Other(others.len()));
            others.push(Other {
                name,
                pat,
                ty: (*pt.ty).clone(),
            });
            continue;
        }
        for extra in &tp[1..] {
            errors.spanned(
                extra,
                "`#[tp]` is given twice; merge the two into one `#[tp(..)]`",
            );
        }
        let ident = match &*pt.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            p => {
                errors.spanned(
                    p,
                    "`#[tp]` needs a plain identifier as the argument's pattern, e.g. `wpt: usize`: the identifier names the tuning parameter",
                );
                complete = false;
                continue;
            }
        };
        let ty = (*pt.ty).clone();
        let parsed = match &tp[0].meta {
            Meta::Path(_) => Ok(ParamDecl::new(ident.clone(), ty.clone())),
            Meta::List(l) => l.parse_args_with(|input: ParseStream| {
                ParamDecl::parse_tp(ident.clone(), ty.clone(), input)
            }),
            Meta::NameValue(nv) => Err(syn::Error::new_spanned(
                nv.eq_token,
                "write the values in parentheses, e.g. `#[tp(1..=64)]`",
            )),
        };
        let decl = parsed.unwrap_or_else(|e| {
            errors.push(e);
            let mut d = ParamDecl::new(ident, ty);
            d.broken = true;
            d
        });
        order.push(Slot::Tuning(tps.len()));
        tps.push(decl);
    }
    if tps.is_empty() && complete {
        errors.spanned(
            &f.sig.ident,
            "`#[tunable]` needs at least one tuning parameter: mark arguments with `#[tp(..)]`, e.g. `#[tp(1..=64)] wpt: usize`",
        );
    }
    if f.sig.receiver().is_some() {
        // Nothing can be generated beside a method: report and keep the method as it is.
        let errors = errors.to_compile_errors();
        return quote!(#errors #f);
    }
    let captured: Vec<Ident> = others.iter().map(|o| o.name.clone()).collect();
    // An argument that only the `#[tp]` bounds read is used: say so, against `unused_variables`.
    let read = read_by_tps(&tps, &opts.wheres);
    let touched: Vec<&Ident> = captured.iter().filter(|c| read.contains(c)).collect();
    if !touched.is_empty() {
        let stmt: syn::Stmt = syn::parse_quote!(let _ = (#(&#touched,)*););
        f.block.stmts.insert(0, stmt);
    }
    check(&tps, &opts.wheres, &captured, &mut errors);
    let abort = opts
        .abort
        .as_ref()
        .and_then(|e| crate::abort::expand(e, &krate, &mut errors));

    let ok = errors.is_empty();
    let compile_errors = errors.to_compile_errors();
    let space = if ok {
        space_expr(&krate, &tps, &opts.wheres)
    } else {
        quote!(#krate::__private::invalid_declaration())
    };
    let generated = generate(
        &f,
        &krate,
        &opts,
        abort,
        &tps,
        &others,
        &order,
        space,
        complete,
        &fingerprint,
    );
    quote! {
        #compile_errors
        #f
        #generated
    }
}

/// Every identifier that the `#[tp]` attributes' expressions and the stand-alone
/// constraints mention.
fn read_by_tps(tps: &[ParamDecl], wheres: &[syn::Expr]) -> Vec<Ident> {
    let mut out = Vec::new();
    for e in wheres {
        let r = Refs::of(e);
        out.extend(r.names.into_iter().chain(r.macro_names));
    }
    for d in tps {
        let exprs = d
            .domain
            .iter()
            .flat_map(|dom| std::iter::once(&dom.expr).chain(dom.step.as_ref().map(|s| &s.1)))
            .chain(&d.constraints)
            .chain(d.options.iter().map(|(_, e)| e));
        for e in exprs {
            let r = Refs::of(e);
            out.extend(r.names.into_iter().chain(r.macro_names));
        }
    }
    out
}

/// `snake_case` -> `CamelCase`.
fn camel(s: &str) -> String {
    s.trim_start_matches("r#")
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn generate(
    f: &ItemFn,
    krate: &Path,
    opts: &Options,
    abort: Option<TokenStream>,
    tps: &[ParamDecl],
    others: &[Other],
    order: &[Slot],
    space: TokenStream,
    complete: bool,
    fingerprint: &str,
) -> TokenStream {
    let vis = &f.vis;
    let fn_ident = &f.sig.ident;
    let fn_name = fn_ident.to_string().trim_start_matches("r#").to_string();
    let cfg = Ident::new(&format!("{}Config", camel(&fn_name)), fn_ident.span());
    let names: Vec<&Ident> = tps.iter().map(|d| &d.name).collect();
    let name_strs: Vec<String> = names.iter().map(|n| n.unraw().to_string()).collect();
    let tys: Vec<&Type> = tps.iter().map(|d| &d.ty).collect();
    let slots = (0..tps.len()).map(Literal::usize_unsuffixed);
    let generics = &f.sig.generics;
    let where_clause = &generics.where_clause;
    let str_ty = quote!(::core::primitive::str);
    // The generated items exist exactly when the function does.
    let cfgs: Vec<&syn::Attribute> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect();

    let struct_doc = format!(
        "Tuning parameters of [`{fn_name}`]: one field per `#[tp]` argument.\n\n\
         Generated by `#[tunable]`. [`{cfg}::space`] builds the search space and \
         [`{cfg}::call`] calls `{fn_name}` with a configuration; it converts to and from \
         the engine's `Config` by slot."
    );
    let field_docs = name_strs
        .iter()
        .map(|n| format!("The tuning parameter `{n}`."));

    let space_args = others.iter().map(|o| {
        let pat = &o.pat;
        let ty = match &o.ty {
            Type::Reference(r) if r.mutability.is_some() => {
                let mut r = r.clone();
                r.mutability = None;
                Type::Reference(r)
            }
            t => t.clone(),
        };
        quote!(#pat: #ty)
    });
    let space_doc = format!(
        "The search space of [`{fn_name}`] for these arguments (its non-tuning arguments, \
         `&mut` ones taken as `&`).\n\n# Errors\nA range or list that is invalid for these \
         arguments (e.g. empty), or a constraint that panicked."
    );
    let fn_doc = format!("Calls [`{fn_name}`] with this configuration's tuning arguments.");

    let call = if complete {
        let call_args = others.iter().map(|o| {
            let (n, t) = (&o.name, &o.ty);
            quote!(#n: #t)
        });
        let pass = order.iter().map(|a| match a {
            Slot::Tuning(i) => {
                let n = &tps[*i].name;
                quote!(self.#n)
            }
            Slot::Other(i) => others[*i].name.to_token_stream(),
        });
        let output = &f.sig.output;
        let asyncness = &f.sig.asyncness;
        let unsafety = match &f.sig.safety {
            syn::Safety::Unsafe(u) => Some(u),
            _ => None,
        };
        let mut invoke = quote_spanned!(fn_ident.span()=> #fn_ident(#(#pass),*));
        if asyncness.is_some() {
            invoke = quote!(#invoke.await);
        }
        if unsafety.is_some() {
            invoke = quote!(unsafe { #invoke });
        }
        let safety_doc = unsafety.map(|_| {
            quote!(#[doc = ""] #[doc = "# Safety"] #[doc = "The contract of the function it calls."])
        });
        quote! {
            #[doc = #fn_doc]
            #safety_doc
            #[allow(clippy::too_many_arguments)]
            #vis #asyncness #unsafety fn call #generics (self, #(#call_args),*) #output #where_clause {
                #invoke
            }
        }
    } else {
        TokenStream::new()
    };

    let technique = match &opts.technique {
        Some(t) => quote!(::core::option::Option::Some(#t)),
        None => quote!(::core::option::Option::None),
    };
    let args: Vec<Arg> = others
        .iter()
        .map(|o| Arg {
            name: o.name.clone(),
            ty: o.ty.clone(),
            pass: Arg::classify(&o.ty),
        })
        .collect();
    let pass = order.iter().map(|a| match a {
        Slot::Tuning(i) => {
            let n = &tps[*i].name;
            quote!(__tune_cfg.#n)
        }
        Slot::Other(i) => {
            let n = &args[*i].name;
            match args[*i].pass {
                Pass::Value => quote!(::core::clone::Clone::clone(&*#n)),
                Pass::Ref => quote!(*#n),
                Pass::Mut => quote!(&mut **#n),
            }
        }
    });
    let call_in_closure = quote_spanned!(fn_ident.span()=> #fn_ident(#(#pass),*));
    // The same call inside the online tuner, where the arguments are the method's own.
    let pass_online = order.iter().map(|a| match a {
        Slot::Tuning(i) => {
            let n = &tps[*i].name;
            quote!(__tune_cfg.#n)
        }
        Slot::Other(i) => {
            let n = &args[*i].name;
            match args[*i].pass {
                Pass::Value => quote!(::core::clone::Clone::clone(&#n)),
                Pass::Ref => quote!(#n),
                Pass::Mut => quote!(&mut *#n),
            }
        }
    });
    let call_online = quote_spanned!(fn_ident.span()=> #fn_ident(#(#pass_online),*));
    let entry = Entry {
        f,
        krate,
        cfg: &cfg,
        args: &args,
        call_in_closure,
        cost: opts.cost.unwrap_or_else(|| default_cost(&f.sig.output)),
        returns_result: returns_result(&f.sig.output),
        repetitions: opts
            .repetitions
            .as_ref()
            .and_then(|r| r.base10_parse().ok())
            .unwrap_or(5),
        input: opts.input.as_ref(),
        device: opts.device.as_ref(),
        technique: opts.technique.as_deref(),
        abort,
        callable: complete
            && f.sig.asyncness.is_none()
            && matches!(f.sig.safety, syn::Safety::Default)
            && !blocks_tuner(&args),
    };
    let (methods, auto) = if complete {
        (entry.methods(), entry.auto())
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    let online = match &opts.online {
        Some(_) if entry.callable => crate::online::expand(&entry, call_online, &cfgs),
        Some(key) if complete => syn::Error::new_spanned(
            key,
            "`online` needs a function the tuner can call: not `async` or `unsafe`, and no \
             `impl Trait` argument",
        )
        .to_compile_error(),
        _ => TokenStream::new(),
    };
    let tunable_name = match &opts.name {
        Some(n) => n.to_token_stream(),
        None => quote!(::core::concat!(::core::module_path!(), "::", #fn_name)),
    };
    let p = quote!(#krate::__private);
    let display = name_strs.iter().zip(&names).enumerate().map(|(i, (s, n))| {
        let label = if i == 0 {
            format!("{s}=")
        } else {
            format!(" {s}=")
        };
        quote! {
            f.write_str(#label)?;
            ::core::fmt::Display::fmt(&#p::ParamType::to_value(self.#n), f)?;
        }
    });

    quote! {
        #(#cfgs)*
        #[doc = #struct_doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::cmp::PartialEq)]
        #vis struct #cfg {
            #( #[doc = #field_docs] pub #names: #tys, )*
        }

        #(#cfgs)*
        impl #cfg {
            #[doc = #space_doc]
            #[allow(unused_variables, clippy::too_many_arguments)]
            #vis fn space #generics (#(#space_args),*) -> #p::Result<#p::Space> #where_clause {
                #space
            }

            #call

            #methods
        }

        #(#cfgs)*
        #auto

        #online

        #(#cfgs)*
        const _: () = {
            #[automatically_derived]
            impl #p::Tunable for #cfg {
                const NAME: &'static #str_ty = #tunable_name;
                const PARAMS: &'static [&'static #str_ty] = &[#(#name_strs),*];
                const TECHNIQUE: ::core::option::Option<&'static #str_ty> = #technique;
                const FINGERPRINT: &'static #str_ty = #fingerprint;
                fn to_config(&self) -> #p::Config {
                    #p::Config::from_raw([#( #p::ParamType::to_raw(self.#names) ),*])
                }
                fn from_config(config: &#p::Config) -> #p::Result<Self> {
                    #p::check_len(config, <Self as #p::Tunable>::PARAMS)?;
                    ::core::result::Result::Ok(Self {
                        #( #names: #p::field::<#tys>(config, #slots, #name_strs)?, )*
                    })
                }
            }

            #[automatically_derived]
            impl ::core::convert::From<#cfg> for #p::Config {
                fn from(c: #cfg) -> Self {
                    #p::Tunable::to_config(&c)
                }
            }

            #[automatically_derived]
            impl ::core::convert::TryFrom<&#p::Config> for #cfg {
                type Error = #p::Error;
                fn try_from(c: &#p::Config) -> #p::Result<Self> {
                    <Self as #p::Tunable>::from_config(c)
                }
            }

            #[automatically_derived]
            impl ::core::convert::TryFrom<#p::Config> for #cfg {
                type Error = #p::Error;
                fn try_from(c: #p::Config) -> #p::Result<Self> {
                    <Self as #p::Tunable>::from_config(&c)
                }
            }

            #[automatically_derived]
            impl ::core::fmt::Display for #cfg {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    #(#display)*
                    ::core::result::Result::Ok(())
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn camel_case_names() {
        assert_eq!(camel("saxpy"), "Saxpy");
        assert_eq!(camel("gemm_nn_v2"), "GemmNnV2");
        assert_eq!(camel("r#type"), "Type");
    }
}
