//! The fingerprint of a `#[tunable]` declaration: a stable hash of its tokens, so that
//! results recorded for an older declaration are not served for a new one.
//!
//! Each token is hashed by its own text (identifiers, punctuation with its spacing,
//! literals as written, delimiters), not by the token stream's `Display`, whose spacing may
//! change between compiler releases. Doc comments are left out: editing them changes
//! nothing the results depend on. The hash is 64-bit FNV-1a, as 16 hex digits.

use std::hash::Hasher;

use fnv::FnvHasher;
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// The fingerprint of `item` (the function as written, `#[tp]` attributes included) and of
/// the options that change what its cost means.
pub fn of(item: &TokenStream, options: &[String]) -> String {
    let mut h = FnvHasher::default();
    h.write(b"tune-declaration-1");
    for o in options {
        h.write(&(o.len() as u64).to_le_bytes());
        h.write(o.as_bytes());
    }
    walk(item.clone(), &mut h);
    format!("{:016x}", h.finish())
}

fn walk(tokens: TokenStream, h: &mut FnvHasher) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let Some(skip) = doc_attribute(&tokens[i..]) {
            i += skip;
            continue;
        }
        match &tokens[i] {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => (b'(', b')'),
                    Delimiter::Brace => (b'{', b'}'),
                    Delimiter::Bracket => (b'[', b']'),
                    Delimiter::None => (1, 2),
                };
                h.write_u8(open);
                walk(g.stream(), h);
                h.write_u8(close);
            }
            TokenTree::Ident(id) => {
                h.write_u8(b'i');
                h.write(id.to_string().as_bytes());
                h.write_u8(0);
            }
            TokenTree::Punct(p) => {
                h.write_u8(b'p');
                h.write(p.as_char().encode_utf8(&mut [0; 4]).as_bytes());
                h.write_u8(u8::from(p.spacing() == Spacing::Joint));
            }
            TokenTree::Literal(l) => {
                h.write_u8(b'l');
                h.write(l.to_string().as_bytes());
                h.write_u8(0);
            }
        }
        i += 1;
    }
}

/// The number of tokens of a doc attribute (`# [doc ..]` or `# ! [doc ..]`) starting
/// `tokens`, if it starts with one.
fn doc_attribute(tokens: &[TokenTree]) -> Option<usize> {
    let TokenTree::Punct(hash) = tokens.first()? else {
        return None;
    };
    if hash.as_char() != '#' {
        return None;
    }
    let bang = matches!(tokens.get(1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
    let at = if bang { 2 } else { 1 };
    let TokenTree::Group(g) = tokens.get(at)? else {
        return None;
    };
    let is_doc = g.delimiter() == Delimiter::Bracket
        && matches!(g.stream().into_iter().next(), Some(TokenTree::Ident(i)) if i == "doc");
    is_doc.then_some(at + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn declarations_hash_by_tokens_not_layout_or_docs() {
        let a = of(
            &quote!(
                fn f(#[tp([1, 2])] x: u32) {
                    g(x)
                }
            ),
            &[],
        );
        assert_eq!(a.len(), 16);
        let spaced: TokenStream = "fn f ( # [ tp ( [ 1 , 2 ] ) ] x : u32 ) { g ( x ) }"
            .parse()
            .unwrap_or_default();
        assert_eq!(a, of(&spaced, &[]));
        let documented = quote! {
            /// Outer docs.
            fn f(#[tp([1, 2])] x: u32) {
                //! Inner docs.
                g(x)
            }
        };
        assert_eq!(a, of(&documented, &[]));
        // What the results depend on: values, body, options.
        assert_ne!(
            a,
            of(
                &quote!(
                    fn f(#[tp([1, 4])] x: u32) {
                        g(x)
                    }
                ),
                &[]
            )
        );
        assert_ne!(
            a,
            of(
                &quote!(
                    fn f(#[tp([1, 2])] x: u32) {
                        h(x)
                    }
                ),
                &[]
            )
        );
        assert_ne!(
            a,
            of(
                &quote!(
                    fn f(#[tp([1, 2])] x: u32) {
                        g(x)
                    }
                ),
                &["cost=value".into()]
            )
        );
        assert_ne!(
            of(
                &quote!(
                    fn f() {
                        a::b
                    }
                ),
                &[]
            ),
            of(&quote!(fn f() { a: :b }), &[])
        );
    }
}
