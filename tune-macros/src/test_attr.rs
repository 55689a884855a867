//! `#[tune::test]`: a test whose body evaluates to a tuner, run with
//! `tune::testing::tune_test` (a short budget unless `TUNE_FULL=1`).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{ItemFn, Path, Stmt};

use crate::decl::parse_crate_path;
use crate::diag::Errors;

/// Expands `#[tune::test(args)] item`.
pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let mut krate: Option<Path> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            krate = Some(parse_crate_path(meta.value()?)?);
            Ok(())
        } else {
            let key = meta.path.to_token_stream().to_string().replace(' ', "");
            Err(meta.error(format!(
                "unknown key `{key}` in `#[tune::test(..)]`; expected `crate`"
            )))
        }
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, args) {
        errors.push(e);
    }
    let f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[tune::test]` applies to a function whose body ends with a tuner",
            )
            .to_compile_error();
            return quote!(#e #item);
        }
    };
    let krate = krate.unwrap_or_else(|| syn::parse_quote!(::tune));
    if !f.sig.inputs.is_empty() {
        errors.spanned(
            &f.sig.inputs,
            "a `#[tune::test]` function takes no arguments",
        );
    }
    if let syn::ReturnType::Type(_, t) = &f.sig.output {
        errors.spanned(
            t,
            "leave out the return type: a `#[tune::test]` function's body ends with a tuner (e.g. `SaxpyConfig::tuner(&x)?`) and the test returns `tune::Result<()>`",
        );
    }
    let mut stmts = f.block.stmts.clone();
    let last = match stmts.pop() {
        Some(Stmt::Expr(e, None)) => Some(e),
        other => {
            let span = other.as_ref().map_or_else(|| f.block.span(), |s| s.span());
            errors.at(
                span,
                "end the body of a `#[tune::test]` function with the tuner to run, without a semicolon, e.g. `SaxpyConfig::tuner(&x)?`",
            );
            None
        }
    };
    let compile_errors = errors.to_compile_errors();
    let (attrs, vis, ident) = (&f.attrs, &f.vis, &f.sig.ident);
    let body = match last {
        Some(last) if errors.is_empty() => quote_spanned! {last.span()=>
            #(#stmts)*
            let __tune_tuner = #last;
            #krate::testing::tune_test(__tune_tuner).map(|_| ())
        },
        _ => quote!(::core::result::Result::Ok(())),
    };
    quote! {
        #compile_errors
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis fn #ident() -> #krate::Result<()> {
            #body
        }
    }
}
