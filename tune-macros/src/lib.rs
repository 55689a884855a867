//! Procedural macros of tune: `space!`, `#[tunable]` and `#[derive(Enum)]`.
//!
//! Use them through the facade crate `tune`, which documents them with examples. Each macro
//! runs three passes: `decl` parses (syntax only), `check` reports every error of the
//! declaration with the narrowest span, and `expand` emits calls of tune-runtime's builder
//! API through `tune::__private`.
#![warn(missing_docs)]

mod abort;
mod attr;
mod check;
mod decl;
mod derive_enum;
mod diag;
mod entry;
mod expand;
mod fingerprint;
mod online;
mod space;
mod test_attr;
mod tunable;

use proc_macro::TokenStream;

/// Declares a search space; evaluates to `tune::Result<tune::Space>`.
///
/// See the documentation of `tune::space!` in the facade crate.
#[proc_macro]
pub fn space(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as decl::SpaceInput);
    space::expand(input).into()
}

/// Makes a host function tunable: its `#[tp(..)]` arguments are tuning parameters.
///
/// See the documentation of `tune::tunable` in the facade crate.
#[proc_macro_attribute]
pub fn tunable(args: TokenStream, item: TokenStream) -> TokenStream {
    tunable::expand(args.into(), item.into()).into()
}

/// Turns a function whose body ends with a tuner into a tuning test.
///
/// See the documentation of `tune::test` in the facade crate.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    test_attr::expand(args.into(), item.into()).into()
}

/// Derives `ParamType` and `EnumParam` for a fieldless enum.
///
/// See the documentation of `tune::Enum` in the facade crate.
#[proc_macro_derive(Enum, attributes(tune))]
pub fn derive_enum(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    derive_enum::expand(input).into()
}
