//! `#[tunable(select = "path")]`: `XConfig::select`, the dispatch over a generated
//! decision tree (tune-runtime's `select::Selector::rust` writes the file), and its checks.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attr::{InputKey, Options};
use crate::diag::Errors;
use crate::entry::{shared, Entry};

/// Checks `select = ".."`: it needs named input components (the features the tree reads)
/// and an existing file.
pub fn check(opts: &mut Options, errors: &mut Errors) {
    let Some(path) = &opts.select else { return };
    if !matches!(opts.input, Some(InputKey::List(_))) {
        errors.spanned(
            path,
            "`select` needs the input's features by name: add `input(m = .., n = ..)` with the numeric components the selector reads",
        );
    }
    // Relative to the crate being compiled, as `include!` below reads it.
    if let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") {
        let file = std::path::Path::new(&dir).join(path.value());
        if !file.is_file() {
            opts.select_missing = true;
            errors.spanned(
                path,
                format!(
                    "`{}` does not exist: create it containing `None` (the dispatch then reads the tuning database), and replace it with the selector generated after tuning (`tune::select::Selector::rust`)",
                    path.value()
                ),
            );
        }
    }
}

impl Entry<'_> {
    /// `fn select(..) -> Option<Self>` inside `impl XConfig`.
    pub fn select_method(&self) -> TokenStream {
        let (Some(path), Some(InputKey::List(parts))) = (self.select, self.input) else {
            return TokenStream::new();
        };
        let p = self.p();
        let vis = &self.f.vis;
        let generics = &self.f.sig.generics;
        let where_clause = &generics.where_clause;
        let fn_name = self.f.sig.ident.to_string();
        let args = self.args.iter().map(|a| {
            let (n, t) = (&a.name, shared(&a.ty));
            quote!(#n: #t)
        });
        let names = parts.iter().map(|(n, _)| n);
        let exprs = parts.iter().map(|(_, e)| quote!(#p::feature(&(#e))));
        let floats = parts.iter().map(|_| quote!(::core::primitive::f64));
        // A missing file is reported by `check`; no second error from `include!`.
        let selected = if self.select_missing {
            quote!(::core::option::Option::None)
        } else {
            quote!(::core::include!(
                ::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/", #path)
            ))
        };
        let doc = format!(
            "The configuration of [`{fn_name}`] for these arguments that the selector `{}` \
             picks: a decision tree over the input's features, compiled in (no allocation, \
             no lock, no search space). `None` when the file holds no selector yet, or one \
             generated for another declaration of `{fn_name}`.",
            path.value()
        );
        quote! {
            #[doc = #doc]
            #[allow(unused_variables, clippy::too_many_arguments, clippy::float_cmp)]
            #[inline]
            #vis fn select #generics (#(#args),*) -> ::core::option::Option<Self> #where_clause {
                let (#(#names,)*): (#(#floats,)*) = (#(#exprs,)*);
                let __tune_selected: ::core::option::Option<(&'static ::core::primitive::str, Self)> =
                    #selected;
                match __tune_selected {
                    ::core::option::Option::Some((__tune_fp, __tune_cfg))
                        if __tune_fp == <Self as #p::Tunable>::FINGERPRINT =>
                    {
                        ::core::option::Option::Some(__tune_cfg)
                    }
                    _ => ::core::option::Option::None,
                }
            }
        }
    }

    /// The start of `x_auto` with a selector: its configuration when it has one (checked
    /// against the space when the space depends on the arguments).
    pub fn select_first(&self) -> TokenStream {
        if self.select.is_none() || !matches!(self.input, Some(InputKey::List(_))) {
            return TokenStream::new();
        }
        let p = self.p();
        let cfg = self.cfg;
        let to_space = self.to_space();
        let names = self.args.iter().map(|a| &a.name);
        let valid = if self.space_reads_args {
            let to_space = self.to_space();
            quote! {
                #p::Space::contains(&#cfg::space(#(#to_space),*)?, &#p::Tunable::to_config(&__tune_cfg))
            }
        } else {
            quote!(true)
        };
        quote! {
            if let ::core::option::Option::Some(__tune_cfg) = #cfg::select(#(#to_space),*) {
                if #valid {
                    return ::core::result::Result::Ok(__tune_cfg.call(#(#names),*));
                }
            }
        }
    }
}
