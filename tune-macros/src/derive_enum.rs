//! `#[derive(tune::Enum)]`: a fieldless enum whose variants are a parameter's values.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Fields, Path};

use crate::decl::parse_crate_path;
use crate::diag::Errors;

/// Expands the derive; errors come back as `compile_error!`s.
pub fn expand(input: DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let mut krate: Option<Path> = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("tune")) {
        let r = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                krate = Some(parse_crate_path(meta.value()?)?);
                Ok(())
            } else {
                Err(meta.error("unknown key in `#[tune(..)]`; expected one of: `crate`"))
            }
        });
        if let Err(e) = r {
            errors.push(e);
        }
    }
    let krate = krate.unwrap_or_else(|| syn::parse_quote!(::tune));
    let ident = &input.ident;
    if !input.generics.params.is_empty() {
        errors.spanned(
            &input.generics,
            "`tune::Enum` cannot be derived for a generic type; a parameter's values must be known without type arguments",
        );
    }
    let variants = match &input.data {
        Data::Enum(e) => {
            if e.variants.is_empty() {
                errors.spanned(ident, format!("`{ident}` has no variants, so a parameter of this type would have no values; add a variant"));
            }
            for v in &e.variants {
                if !matches!(v.fields, Fields::Unit) {
                    errors.spanned(
                        &v.fields,
                        format!(
                            "`tune::Enum` needs fieldless variants, but `{}` has fields; make each field a tuning parameter of its own",
                            v.ident
                        ),
                    );
                }
            }
            e.variants
                .iter()
                .map(|v| v.ident.clone())
                .collect::<Vec<_>>()
        }
        Data::Struct(s) => {
            errors.spanned(s.struct_token, "`#[derive(tune::Enum)]` applies to enums with fieldless variants; a struct is not a parameter value");
            Vec::new()
        }
        Data::Union(u) => {
            errors.spanned(
                u.union_token,
                "`#[derive(tune::Enum)]` applies to enums with fieldless variants",
            );
            Vec::new()
        }
    };
    if !errors.is_empty() {
        return errors.to_compile_errors();
    }
    let p = quote!(#krate::__private);
    let u64_ty = quote!(::core::primitive::u64);
    let str_ty = quote!(::core::primitive::str);
    let names: Vec<String> = variants
        .iter()
        .map(|v| v.to_string().trim_start_matches("r#").to_string())
        .collect();
    let idx: Vec<Literal> = (0..variants.len() as u64)
        .map(Literal::u64_suffixed)
        .collect();
    let last = &variants[variants.len() - 1];
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #p::ParamType for #ident {
                const KIND: #p::Kind = #p::Kind::Enum;
                #[inline]
                fn to_raw(self) -> #u64_ty {
                    match self { #( Self::#variants => #idx, )* }
                }
                #[inline]
                fn from_raw(raw: #u64_ty) -> Self {
                    match raw { #( #idx => Self::#variants, )* _ => Self::#last }
                }
                fn to_value(self) -> #p::Value {
                    let name: &'static #str_ty = match self { #( Self::#variants => #names, )* };
                    #p::Value::Str(::std::string::String::from(name))
                }
                fn from_value(value: &#p::Value) -> ::core::option::Option<Self> {
                    match value {
                        #p::Value::Str(s) => match ::std::string::String::as_str(s) {
                            #( #names => ::core::option::Option::Some(Self::#variants), )*
                            _ => ::core::option::Option::None,
                        },
                        _ => ::core::option::Option::None,
                    }
                }
            }

            #[automatically_derived]
            impl #p::EnumParam for #ident {
                const VARIANTS: &'static [Self] = &[#(Self::#variants),*];
                const NAMES: &'static [&'static #str_ty] = &[#(#names),*];
            }
        };
    }
}
