//! `#[tunable(online)]`: an online tuner of the function, `XOnline`, made by
//! `XConfig::online()`, whose `call(arguments, check)` runs the function with the next
//! configuration to try (or the best one, once settled) and returns its result.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{ReturnType, Type};

use crate::attr::CostMode;
use crate::entry::{Entry, Pass};

/// The online tuner's struct, its methods and `XConfig::online`. `call` is the function's
/// call with the configuration's fields as `__tune_cfg.x` and the arguments by name (as the
/// method takes them).
pub fn expand(e: &Entry<'_>, call: TokenStream, cfgs: &[&syn::Attribute]) -> TokenStream {
    let k = e.krate;
    let p = quote!(#k::__private);
    let cfg = e.cfg;
    let vis = &e.f.vis;
    let fn_name =
        e.f.sig
            .ident
            .to_string()
            .trim_start_matches("r#")
            .to_string();
    let online = format_ident!("{}Online", cfg.to_string().trim_end_matches("Config"));
    let generics = &e.f.sig.generics;
    let where_clause = &generics.where_clause;
    let ret: Type = match &e.f.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    let args: Vec<TokenStream> = e
        .args
        .iter()
        .map(|a| {
            let (n, t) = (&a.name, &a.ty);
            quote!(#n: #t)
        })
        .collect();
    let to_space = e.args.iter().map(|a| {
        let n = &a.name;
        match a.pass {
            Pass::Value => quote!(::core::clone::Clone::clone(&#n)),
            Pass::Ref => quote!(#n),
            Pass::Mut => quote!(&*#n),
        }
    });
    // What `check` gets: the result, then every argument shared (`&mut` ones as `&`).
    let check_tys = e.args.iter().map(|a| match &a.ty {
        Type::Reference(r) => {
            let el = &r.elem;
            quote!(&#el)
        }
        t => quote!(&#t),
    });
    let check_pass = e.args.iter().map(|a| {
        let n = &a.name;
        match a.pass {
            Pass::Value => quote!(&#n),
            Pass::Ref => quote!(#n),
            Pass::Mut => quote!(&*#n),
        }
    });
    let failure_check = match (e.cost, e.returns_result) {
        (CostMode::Value, _) => quote! {
            if let ::core::option::Option::Some(f) = #p::IntoCost::failure(&__tune_r) {
                return ::core::result::Result::Err(f);
            }
        },
        (CostMode::Time, true) => quote! {
            if let ::core::option::Option::Some(f) = #p::result_failure(&__tune_r) {
                return ::core::result::Result::Err(f);
            }
        },
        (CostMode::Time, false) => TokenStream::new(),
    };
    let cost = match e.cost {
        CostMode::Value => quote!(#p::OnlineCost::online_cost(&__tune_r).unwrap_or(__tune_wall)),
        CostMode::Time => quote!(__tune_wall),
    };
    let technique = e
        .technique
        .map(|t| quote!(.technique_with(|| #p::technique(#t))));
    let explore = e.abort.as_ref().map(|a| quote!(.explore(#a)));
    let name = e.name();
    let key_and_device = e.key_and_device();
    let struct_doc = format!(
        "An online tuner of [`{fn_name}`]: made by [`{cfg}::online`], called in the \
         application's loop with [`{online}::call`]."
    );
    let online_doc = format!(
        "An online tuner of [`{fn_name}`] (KTT's online tuning): each [`{online}::call`] \
         runs `{fn_name}` with the next configuration the technique of `#[tunable(..)]` \
         proposes, checking its first result, until the exploration ends (the abort \
         condition of `#[tunable(..)]`, else 50 configurations); then it runs the best. \
         Adjust it (log, database, exploration) with [`{online}::with`]; compile ahead with \
         [`{online}::prepare`]."
    );
    let call_doc = format!(
        "Calls [`{fn_name}`] with these arguments and the configuration of this call, and \
         returns its result. On the first run of a configuration `check(&result, \
         arguments..)` (`&mut` arguments as `&`) returns `Err(Failure::WrongResult(..))` for \
         a wrong result: the call then runs `{fn_name}` again with a validated configuration, \
         so a wrong result never reaches the caller. The input key and device (from \
         `#[tunable(..)]`) select the search; a new key starts a new one.\n\n# Errors\n\
         The space cannot be built for these arguments; no configuration could be \
         validated yet; the settled configuration failed; the log could not be written."
    );
    quote! {
        #(#cfgs)*
        #[doc = #struct_doc]
        #vis struct #online {
            inner: #p::Online<()>,
            prepare: ::core::option::Option<
                ::std::sync::Arc<
                    dyn ::core::ops::Fn(#cfg) -> ::core::result::Result<(), #p::Failure>
                        + ::core::marker::Send
                        + ::core::marker::Sync,
                >,
            >,
        }

        #(#cfgs)*
        impl #cfg {
            #[doc = #online_doc]
            #vis fn online() -> #online {
                #online {
                    inner: #p::Online::new(#name)
                        .fingerprint(<Self as #p::Tunable>::FINGERPRINT)
                        #technique
                        #explore,
                    prepare: ::core::option::Option::None,
                }
            }
        }

        #(#cfgs)*
        impl #online {
            /// Adjusts the online tuner, e.g. `.with(|o| o.log(path).explore(..))`.
            #[must_use]
            #vis fn with(mut self, f: impl ::core::ops::FnOnce(#p::Online<()>) -> #p::Online<()>) -> Self {
                self.inner = f(self.inner);
                self
            }

            /// Prepares each configuration ahead, on a background thread, before a call
            /// runs it (e.g. compiles its kernels into the queue's cache), so that the
            /// caller does not wait for it.
            #[must_use]
            #vis fn prepare(
                mut self,
                f: impl ::core::ops::Fn(#cfg) -> ::core::result::Result<(), #p::Failure>
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static,
            ) -> Self {
                self.prepare = ::core::option::Option::Some(::std::sync::Arc::new(f));
                self
            }

            /// The online tuner: its statistics, whether it settled, and on what.
            #vis fn tuner(&self) -> &#p::Online<()> {
                &self.inner
            }

            #[doc = #call_doc]
            #[allow(clippy::too_many_arguments, unused_variables)]
            #vis fn call #generics (
                &mut self,
                #(#args,)*
                mut __tune_check: impl ::core::ops::FnMut(&#ret, #(#check_tys),*)
                    -> ::core::result::Result<(), #p::Failure>,
            ) -> #p::Result<#ret> #where_clause {
                #key_and_device
                let __tune_prepare = ::core::clone::Clone::clone(&self.prepare);
                self.inner.select_on(&__tune_device, &__tune_key, || {
                    let __tune_space = #cfg::space(#(#to_space),*)?;
                    ::core::result::Result::Ok(#p::OnlineInput::new(
                        __tune_space,
                        move |_: &#p::Space, __tune_c: &#p::Config| match &__tune_prepare {
                            ::core::option::Option::Some(f) => f(
                                <#cfg as #p::Tunable>::from_config(__tune_c)
                                    .map_err(|e| #p::AsFailure::as_failure(&e))?,
                            ),
                            ::core::option::Option::None => ::core::result::Result::Ok(()),
                        },
                    ))
                })?;
                self.inner.call(|__tune_t| {
                    let __tune_cfg = <#cfg as #p::Tunable>::from_config(__tune_t.config())
                        .map_err(|e| #p::AsFailure::as_failure(&e))?;
                    let __tune_start = ::std::time::Instant::now();
                    let __tune_r = #call;
                    let __tune_wall = __tune_start.elapsed();
                    #failure_check
                    if __tune_t.validate() {
                        __tune_check(&__tune_r, #(#check_pass),*)?;
                    }
                    let __tune_cost = #cost;
                    ::core::result::Result::Ok((__tune_r, __tune_cost))
                })
            }
        }
    }
}
