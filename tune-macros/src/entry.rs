//! The tuning entry point and the dispatch that `#[tunable]` generates beside the config
//! struct: `XConfig::tuner`, `XConfig::tuner_with`, `XConfig::best`, `XConfig::best_in`
//! and the free function `x_auto`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::VisitMut;
use syn::{GenericParam, Ident, ItemFn, Lifetime, Path, ReturnType, Type};

use crate::attr::{CostMode, InputKey};

/// How a non-tuning argument is passed.
#[derive(Clone, Copy, PartialEq)]
pub enum Pass {
    /// By value (cloned for every call).
    Value,
    /// `&T`.
    Ref,
    /// `&mut T`.
    Mut,
}

/// A non-tuning argument, named.
pub struct Arg {
    /// Its name (the identifier, or a generated one for other patterns).
    pub name: Ident,
    /// Its type as written.
    pub ty: Type,
    /// How it is passed.
    pub pass: Pass,
}

/// The argument's type as `space` and `best` take it: `&mut T` as `&T`.
pub fn shared(ty: &Type) -> Type {
    match ty {
        Type::Reference(r) if r.mutability.is_some() => {
            let mut r = r.clone();
            r.mutability = None;
            Type::Reference(r)
        }
        t => t.clone(),
    }
}

impl Arg {
    /// How it is passed.
    pub fn classify(ty: &Type) -> Pass {
        match ty {
            Type::Reference(r) if r.mutability.is_some() => Pass::Mut,
            Type::Reference(_) => Pass::Ref,
            _ => Pass::Value,
        }
    }
}

/// What the entry points need to know.
pub struct Entry<'a> {
    /// The function.
    pub f: &'a ItemFn,
    /// The facade path.
    pub krate: &'a Path,
    /// The config struct.
    pub cfg: &'a Ident,
    /// The non-tuning arguments.
    pub args: &'a [Arg],
    /// The call of the function with `__tune_cfg`'s fields and the arguments bound by
    /// name as `&mut` to each argument (inside the tuning closure).
    pub call_in_closure: TokenStream,
    /// `tune::__private::Tunable::NAME`.
    pub cost: CostMode,
    /// Whether the written return type is a `Result` (time mode: its `Err` is a failure).
    pub returns_result: bool,
    /// Timed calls per configuration.
    pub repetitions: u32,
    /// The input key expression.
    pub input: Option<&'a InputKey>,
    /// The device expression.
    pub device: Option<&'a syn::Expr>,
    /// `.technique(..)`.
    pub technique: Option<&'a str>,
    /// The abort condition's expression.
    pub abort: Option<TokenStream>,
    /// Whether `tuner` and `x_auto` can be generated (not async, not unsafe, no `impl
    /// Trait` argument).
    pub callable: bool,
}

/// The cost mode a return type implies when `cost = ..` is not given: the value for
/// `f64`, `f32`, `Duration`, `Measured<..>`, tuples, and `Result`s of these; else the time.
pub fn default_cost(output: &ReturnType) -> CostMode {
    fn is_cost(t: &Type) -> bool {
        match t {
            Type::Tuple(t) => !t.elems.is_empty() && t.elems.iter().all(is_cost),
            Type::Paren(p) => is_cost(&p.elem),
            Type::Group(g) => is_cost(&g.elem),
            Type::Path(p) => {
                let Some(last) = p.path.segments.last() else {
                    return false;
                };
                match last.ident.to_string().as_str() {
                    "f64" | "f32" | "Duration" | "Measured" => true,
                    "Result" => first_type_arg(&last.arguments).is_some_and(is_cost),
                    _ => false,
                }
            }
            _ => false,
        }
    }
    match output {
        ReturnType::Type(_, t) if is_cost(t) => CostMode::Value,
        _ => CostMode::Time,
    }
}

fn first_type_arg(a: &syn::PathArguments) -> Option<&Type> {
    match a {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    }
}

/// Whether the written return type is a `Result<..>`.
pub fn returns_result(output: &ReturnType) -> bool {
    match output {
        ReturnType::Type(_, t) => match &**t {
            Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Result"),
            _ => false,
        },
        ReturnType::Default => false,
    }
}

/// Names every elided lifetime of a type `'__tune`.
struct NameLifetimes;

impl VisitMut for NameLifetimes {
    fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
        if r.lifetime.is_none() {
            r.lifetime = Some(tune_lifetime());
        }
        syn::visit_mut::visit_type_reference_mut(self, r);
    }
    fn visit_lifetime_mut(&mut self, l: &mut Lifetime) {
        if l.ident == "_" {
            *l = tune_lifetime();
        }
    }
    // Elision in `fn(&T)` and `Fn(&T)` means a higher-ranked lifetime: leave it.
    fn visit_type_fn_ptr_mut(&mut self, _: &mut syn::TypeFnPtr) {}
    fn visit_parenthesized_generic_arguments_mut(
        &mut self,
        _: &mut syn::ParenthesizedGenericArguments,
    ) {
    }
}

fn tune_lifetime() -> Lifetime {
    Lifetime::new("'__tune", Span::call_site())
}

fn named(ty: &Type) -> Type {
    let mut t = ty.clone();
    NameLifetimes.visit_type_mut(&mut t);
    t
}

fn has_impl_trait(ty: &Type) -> bool {
    ty.to_token_stream()
        .into_iter()
        .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "impl"))
}

/// Whether an argument type rules out the tuning entry point.
pub fn blocks_tuner(args: &[Arg]) -> bool {
    args.iter().any(|a| has_impl_trait(&a.ty))
}

/// A default input key component for an argument, from its written type: the length of
/// slices, `Vec`s, arrays and strings; the value of integers.
fn default_component(a: &Arg) -> Option<TokenStream> {
    fn kind(t: &Type) -> Option<bool> {
        // Some(true): length; Some(false): value.
        match t {
            Type::Reference(r) => kind(&r.elem),
            Type::Slice(_) | Type::Array(_) => Some(true),
            Type::Paren(p) => kind(&p.elem),
            Type::Group(g) => kind(&g.elem),
            Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last()?;
                match last.ident.to_string().as_str() {
                    "Vec" | "String" | "str" => Some(true),
                    "usize" | "u8" | "u16" | "u32" | "u64" | "u128" | "isize" | "i8" | "i16"
                    | "i32" | "i64" | "i128" => Some(false),
                    _ => None,
                }
            }
            _ => None,
        }
    }
    let n = &a.name;
    if n.to_string().starts_with("__tune_arg") {
        return None;
    }
    let label = n.to_string().trim_start_matches("r#").to_string();
    Some(match kind(&a.ty)? {
        true => quote!((#label, &#n.len() as &dyn ::core::fmt::Display)),
        false => quote!((#label, &#n as &dyn ::core::fmt::Display)),
    })
}

impl Entry<'_> {
    fn p(&self) -> TokenStream {
        let k = self.krate;
        quote!(#k::__private)
    }

    /// `let __tune_key: String = ..; let __tune_device: String = ..;` over the arguments.
    pub(crate) fn key_and_device(&self) -> TokenStream {
        let p = self.p();
        let key = match self.input {
            Some(InputKey::Expr(e)) => quote!(#p::to_string(&(#e))),
            Some(InputKey::List(parts)) => {
                let parts = parts.iter().map(|(n, e)| {
                    let label = n.to_string();
                    quote!((#label, &(#e) as &dyn ::core::fmt::Display))
                });
                quote!(#p::input_key(&[#(#parts),*]))
            }
            None => {
                let parts = self.args.iter().filter_map(default_component);
                quote!(#p::input_key(&[#(#parts),*]))
            }
        };
        let device = match self.device {
            Some(e) => quote!(#p::to_string(&(#e))),
            None => quote!(#p::to_string(&"cpu")),
        };
        quote! {
            let __tune_key: ::std::string::String = #key;
            let __tune_device: ::std::string::String = #device;
        }
    }

    pub(crate) fn name(&self) -> TokenStream {
        let (p, cfg) = (self.p(), self.cfg);
        quote!(<#cfg as #p::Tunable>::NAME)
    }

    /// The arguments as `space` takes them, from bindings by name of the original types.
    fn to_space(&self) -> Vec<TokenStream> {
        self.args
            .iter()
            .map(|a| {
                let n = &a.name;
                match a.pass {
                    Pass::Value => quote!(::core::clone::Clone::clone(&#n)),
                    Pass::Ref => quote!(#n),
                    Pass::Mut => quote!(&*#n),
                }
            })
            .collect()
    }

    /// Items inside `impl XConfig`.
    pub fn methods(&self) -> TokenStream {
        let p = self.p();
        let vis = &self.f.vis;
        let fn_name = self.f.sig.ident.to_string();
        let generics = &self.f.sig.generics;
        let where_clause = &generics.where_clause;
        let name = self.name();
        let key_and_device = self.key_and_device();
        let best_args: Vec<TokenStream> = self
            .args
            .iter()
            .map(|a| {
                let (n, t) = (&a.name, shared(&a.ty));
                quote!(#n: #t)
            })
            .collect();
        let space_pass: Vec<TokenStream> =
            self.args.iter().map(|a| a.name.to_token_stream()).collect();
        let arg_names: Vec<&Ident> = self.args.iter().map(|a| &a.name).collect();
        let best_doc = format!(
            "The configuration of [`{fn_name}`] to run for these arguments on this device, \
             from the tuning database (`$TUNE_DB`, else `tuning/` in this crate), and where \
             it came from ([`Choice::source`]({p_doc}::results::Choice)): the best recorded \
             for this input key, else for the nearest recorded one, else the declared \
             defaults, else the first valid configuration. Set `TUNE_VERBOSE=1` to have \
             every choice told on standard error.\n\n# Errors\nAn unreadable database file, \
             or a space without a valid configuration.",
            p_doc = self.krate.to_token_stream().to_string().replace(' ', "")
        );
        let best_in_doc =
            "[`Self::best`] with the tuning database `db`.\n\n# Errors\nSee [`Self::best`].";
        let mut out = quote! {
            #[doc = #best_doc]
            #[allow(unused_variables, clippy::too_many_arguments)]
            #vis fn best #generics (#(#best_args),*) -> #p::Result<(Self, #p::Choice)> #where_clause {
                Self::best_in(
                    &#p::default_database(::core::env!("CARGO_MANIFEST_DIR")),
                    #(#arg_names),*
                )
            }

            #[doc = #best_in_doc]
            #[allow(unused_variables, clippy::too_many_arguments)]
            #vis fn best_in #generics (__tune_db: &#p::Database, #(#best_args),*) -> #p::Result<(Self, #p::Choice)> #where_clause {
                #key_and_device
                let __tune_space = Self::space(#(#space_pass),*)?;
                let __tune_choice = #p::choose(__tune_db, #name, <Self as #p::Tunable>::FINGERPRINT, &__tune_device, &__tune_key, &__tune_space)?;
                let __tune_cfg = <Self as #p::Tunable>::from_config(&__tune_choice.config)?;
                ::core::result::Result::Ok((__tune_cfg, __tune_choice))
            }
        };
        if self.callable {
            out.extend(self.tuner());
        }
        out
    }

    fn tuner(&self) -> TokenStream {
        let p = self.p();
        let vis = &self.f.vis;
        let fn_name = self.f.sig.ident.to_string();
        let krate_doc = self.krate.to_token_stream().to_string().replace(' ', "");
        let user = &self.f.sig.generics;
        let lt = tune_lifetime();
        let check = format_ident!("__TuneCheck");
        // Generics: '__tune, the function's own, the check closure.
        let mut g = user.clone();
        g.params.insert(0, syn::parse_quote!(#lt));
        let with_check = {
            let mut g = g.clone();
            g.params.push(syn::parse_quote!(#check));
            g
        };
        let captures: Vec<TokenStream> = with_check
            .params
            .iter()
            .map(|gp| match gp {
                GenericParam::Lifetime(l) => l.lifetime.to_token_stream(),
                GenericParam::Type(t) => t.ident.to_token_stream(),
                GenericParam::Const(c) => c.ident.to_token_stream(),
            })
            .collect();
        let captures_plain: Vec<&TokenStream> = captures[..captures.len() - 1].iter().collect();
        let ret: Type = match &self.f.sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, t) => named(t),
        };
        let cost_ty = match self.cost {
            CostMode::Time => quote!(::core::time::Duration),
            CostMode::Value => quote!(<#ret as #p::IntoCost>::Cost),
        };
        let args: Vec<TokenStream> = self
            .args
            .iter()
            .map(|a| {
                let (n, t) = (&a.name, named(&a.ty));
                quote!(#n: #t)
            })
            .collect();
        let names: Vec<&Ident> = self.args.iter().map(|a| &a.name).collect();
        // What the check closure receives: `&T` for every argument (shared, reborrowed).
        let check_tys: Vec<TokenStream> = self
            .args
            .iter()
            .map(|a| match &a.ty {
                Type::Reference(r) => {
                    let e = named(&r.elem);
                    quote!(&#e)
                }
                t => {
                    let t = named(t);
                    quote!(&#t)
                }
            })
            .collect();
        let check_pass: Vec<TokenStream> = self
            .args
            .iter()
            .map(|a| {
                let n = &a.name;
                match a.pass {
                    Pass::Value => quote!(&*#n),
                    Pass::Ref => quote!(*#n),
                    Pass::Mut => quote!(&**#n),
                }
            })
            .collect();
        let mut where_clause = with_check.make_where_clause_ref();
        where_clause.predicates.push(syn::parse_quote! {
            #check: ::core::ops::Fn(&#ret, #(#check_tys),*) -> ::core::result::Result<(), #p::Failure>
                + ::core::marker::Send + ::core::marker::Sync + #lt
        });
        let plain_where = &g.where_clause;
        let (with_params, plain_params) = (&with_check.params, &g.params);
        let key_and_device = self.key_and_device();
        let to_space = self.to_space();
        let name = self.name();
        let call = &self.call_in_closure;
        let failure_check = match (self.cost, self.returns_result) {
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
        let measure = match self.cost {
            CostMode::Value => quote! {
                let mut __tune_m = #p::IntoCost::into_measured(__tune_r)?;
                __tune_m.validation = ::core::option::Option::Some(__tune_validation);
                ::core::result::Result::Ok(__tune_m)
            },
            CostMode::Time => {
                let reps = self.repetitions as usize;
                quote! {
                    ::core::mem::drop(__tune_r);
                    let mut __tune_samples = [::core::time::Duration::ZERO; #reps];
                    for __tune_sample in &mut __tune_samples {
                        let __tune_t = ::std::time::Instant::now();
                        let __tune_r = #call;
                        *__tune_sample = __tune_t.elapsed();
                        #failure_check
                        ::core::mem::drop(__tune_r);
                    }
                    ::core::result::Result::Ok(#p::timed(&__tune_samples, ::core::option::Option::Some(__tune_validation)))
                }
            }
        };
        let technique = self
            .technique
            .map(|t| quote!(.technique(#p::technique(#t))));
        let abort = self.abort.as_ref().map(|a| quote!(.abort(#a)));
        let checks = self.args.iter().map(|_| quote!(_));
        let tuner_doc = format!(
            "A tuner of [`{fn_name}`] for these arguments: it calls `{fn_name}` with each \
             configuration it tries, with the technique, abort condition, input key, device \
             and name of `#[tunable(..)]`, and records the best configuration in the tuning \
             database that [`Self::best`] reads (`$TUNE_DB`, else `tuning/` in this crate). \
             Adjust it with the tuner's builder methods; run it with `.run()`, or \
             `.run_test()` inside a `#[test]`.\n\n\
             The cost is {}. The first call of each configuration is not timed.\n\n\
             # Errors\nThe space cannot be built for these arguments.",
            match self.cost {
                CostMode::Time => format!("the median wall time of {} calls", self.repetitions),
                CostMode::Value => "the value the function returns".to_string(),
            }
        );
        let tuner_with_doc = format!(
            "[`Self::tuner`] with a check of each configuration's result: `check` gets the \
             first call's return value and the arguments after it (`&mut` ones as `&`), and \
             returns `Err(Failure::WrongResult(..))` when the output is wrong. Failed checks \
             are recorded; `run_test` fails on them.\n\n# Errors\nSee [`Self::tuner`].\n\n\
             See [`{krate_doc}::Failure`]."
        );
        quote! {
            #[doc = #tuner_doc]
            #[allow(clippy::too_many_arguments, clippy::type_complexity)]
            #vis fn tuner<#plain_params>(#(#args),*)
                -> #p::Result<#p::Tuner<impl #p::Evaluator<Cost = #cost_ty> + use<#(#captures_plain),*>>>
                #plain_where
            {
                Self::tuner_with(#(#names,)* |_: &_, #(#checks),*| ::core::result::Result::Ok(()))
            }

            #[doc = #tuner_with_doc]
            #[allow(clippy::too_many_arguments, clippy::type_complexity)]
            #vis fn tuner_with<#with_params>(#(#args,)* __tune_check: #check)
                -> #p::Result<#p::Tuner<impl #p::Evaluator<Cost = #cost_ty> + use<#(#captures),*>>>
                #where_clause
            {
                #key_and_device
                let __tune_space = Self::space(#(#to_space),*)?;
                let __tune_args = ::std::sync::Mutex::new((#(#names,)*));
                let __tune_eval = #p::Closure::new(move |__tune_config: &#p::Config|
                    -> ::core::result::Result<#p::Measured<#cost_ty>, #p::Failure>
                {
                    let __tune_cfg = <Self as #p::Tunable>::from_config(__tune_config)
                        .map_err(|e| #p::AsFailure::as_failure(&e))?;
                    let mut __tune_guard = #p::lock(&__tune_args);
                    #[allow(unused_variables)]
                    let (#(#names,)*) = &mut *__tune_guard;
                    let __tune_r = #call;
                    #failure_check
                    let __tune_v = ::std::time::Instant::now();
                    __tune_check(&__tune_r, #(#check_pass),*)?;
                    let __tune_validation = __tune_v.elapsed();
                    #measure
                })
                .device_name(__tune_device);
                ::core::result::Result::Ok(
                    #p::Tuner::new(__tune_space, __tune_eval)
                        .name(#name)
                        .fingerprint(<Self as #p::Tunable>::FINGERPRINT)
                        .input_key(__tune_key)
                        .database(#p::default_database(::core::env!("CARGO_MANIFEST_DIR")))
                        #technique
                        #abort
                )
            }
        }
    }

    /// The free function `x_auto`, beside the function.
    pub fn auto(&self) -> TokenStream {
        if !self.callable {
            return TokenStream::new();
        }
        let p = self.p();
        let (vis, cfg) = (&self.f.vis, self.cfg);
        let fn_ident = &self.f.sig.ident;
        let fn_name = fn_ident.to_string().trim_start_matches("r#").to_string();
        let auto = Ident::new(&format!("{fn_name}_auto"), fn_ident.span());
        let generics = &self.f.sig.generics;
        let where_clause = &generics.where_clause;
        let args = self.args.iter().map(|a| {
            let (n, t) = (&a.name, &a.ty);
            quote!(#n: #t)
        });
        let names: Vec<&Ident> = self.args.iter().map(|a| &a.name).collect();
        let to_space = self.to_space();
        let ret = match &self.f.sig.output {
            ReturnType::Default => quote!(()),
            ReturnType::Type(_, t) => t.to_token_stream(),
        };
        let doc = format!(
            "Calls [`{fn_name}`] with the configuration [`{cfg}::best`] picks for these \
             arguments on this device (the best recorded, else the nearest recorded input's, \
             else the declared defaults, else the first valid configuration). \
             `TUNE_VERBOSE=1` tells each choice on standard error.\n\n\
             It builds the search space on every call: in a hot loop, call \
             [`{cfg}::best`] once and then [`{cfg}::call`].\n\n\
             # Errors\nSee [`{cfg}::best`]."
        );
        quote! {
            #[doc = #doc]
            #[allow(clippy::too_many_arguments)]
            #vis fn #auto #generics (#(#args),*) -> #p::Result<#ret> #where_clause {
                let (__tune_cfg, _) = #cfg::best(#(#to_space),*)?;
                ::core::result::Result::Ok(__tune_cfg.call(#(#names),*))
            }
        }
    }
}

/// `make_where_clause` on a clone, returning the owned clause.
trait WhereClauseRef {
    fn make_where_clause_ref(&self) -> syn::WhereClause;
}

impl WhereClauseRef for syn::Generics {
    fn make_where_clause_ref(&self) -> syn::WhereClause {
        self.where_clause
            .clone()
            .unwrap_or_else(|| syn::WhereClause {
                where_token: Default::default(),
                predicates: Default::default(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_modes_from_return_types() {
        let m = |t: ReturnType| default_cost(&t);
        assert_eq!(m(syn::parse_quote!()), CostMode::Time);
        assert_eq!(m(syn::parse_quote!(-> usize)), CostMode::Time);
        assert_eq!(m(syn::parse_quote!(-> f64)), CostMode::Value);
        assert_eq!(
            m(syn::parse_quote!(-> std::time::Duration)),
            CostMode::Value
        );
        assert_eq!(
            m(syn::parse_quote!(-> Result<(f64, f32), Failure>)),
            CostMode::Value
        );
        assert_eq!(m(syn::parse_quote!(-> Result<(), Failure>)), CostMode::Time);
        assert!(returns_result(&syn::parse_quote!(-> tune::Result<()>)));
        assert!(!returns_result(&syn::parse_quote!(-> f64)));
    }

    #[test]
    fn elided_lifetimes_are_named() {
        let t: Type = syn::parse_quote!(&mut [&'_ f32]);
        let n = named(&t).to_token_stream().to_string();
        assert_eq!(n, "& '__tune mut [& '__tune f32]");
        let t: Type = syn::parse_quote!(&dyn Fn(&f32) -> f32);
        let n = named(&t).to_token_stream().to_string();
        assert_eq!(n, "& '__tune dyn Fn (& f32) -> f32");
    }
}
