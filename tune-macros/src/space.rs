//! `space! { .. }`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::check::check;
use crate::decl::SpaceInput;
use crate::diag::Errors;
use crate::expand::space_expr;

/// Checks and expands a `space!` invocation; on errors, the expression still has type
/// `Result<Space>`, so that the code around it type-checks.
pub fn expand(input: SpaceInput) -> TokenStream {
    let krate = input.krate.unwrap_or_else(|| syn::parse_quote!(::tune));
    let mut errors = Errors::default();
    check(&input.params, &input.wheres, &[], &mut errors);
    if !errors.is_empty() {
        let errors = errors.to_compile_errors();
        return quote! {{
            #errors
            #krate::__private::invalid_declaration()
        }};
    }
    let space = space_expr(&krate, &input.params, &input.wheres);
    quote! {{ #space }}
}
