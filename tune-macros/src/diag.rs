//! Error collection and "did you mean" suggestions.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// Collects every error of one declaration, to report them together.
#[derive(Default)]
pub struct Errors {
    errors: Option<syn::Error>,
}

impl Errors {
    /// Records an error at the span of `tokens`.
    pub fn spanned(&mut self, tokens: impl ToTokens, msg: impl Display) {
        self.push(syn::Error::new_spanned(tokens, msg));
    }

    /// Records an error at `span`.
    pub fn at(&mut self, span: Span, msg: impl Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// Records an error.
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.errors {
            Some(all) => all.combine(e),
            None => self.errors = Some(e),
        }
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.errors.is_none()
    }

    /// The combined error, if any.
    #[cfg(test)]
    pub fn finish(self) -> syn::Result<()> {
        match self.errors {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The errors as `compile_error!` invocations (empty when there are none).
    pub fn to_compile_errors(&self) -> proc_macro2::TokenStream {
        self.errors
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}

/// Optimal string alignment distance (Levenshtein with adjacent transpositions).
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a likely misspelling.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Tokens as a user would write them (`-2..=4`, `Kernel::Naive`), for messages.
pub fn show(t: &impl ToTokens) -> String {
    let s = t.to_token_stream().to_string();
    let mut s = s
        .replace(" ..= ", "..=")
        .replace(" .. ", "..")
        .replace(" :: ", "::")
        .replace("[ ", "[")
        .replace(" ]", "]")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",");
    if s.starts_with(":: ") {
        s.replace_range(..3, "::");
    }
    // Unary minus: no space after it.
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let mut last = ' ';
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '-' && chars.peek() == Some(&' ') && (out.len() == 1 || "=.[(,".contains(last)) {
            chars.next();
        }
        if c != ' ' {
            last = c;
        }
    }
    out
}

/// The candidate that `name` is one typo away from (a changed, swapped, or, in names of five
/// characters or more, added or dropped character), compared case-sensitively. Stricter than
/// [`closest`]: used where `name` may well be a variable or function of the user's.
pub fn misspelling<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = name.chars().count();
    candidates.into_iter().find(|c| {
        let clen = c.chars().count();
        *c != name && len >= 3 && distance(name, c) == 1 && (clen == len || len.min(clen) >= 5)
    })
}

/// "`a`, `b`, `c`".
pub fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_only() {
        assert_eq!(distance("divide", "divides"), 1);
        assert_eq!(distance("WTP", "WPT"), 1);
        assert_eq!(closest("divide", ["divides", "at_most"]), Some("divides"));
        assert_eq!(closest("atmost", ["divides", "at_most"]), Some("at_most"));
        assert_eq!(closest("foo", ["divides", "at_most"]), None);
        assert_eq!(closest("divides", ["divides"]), None);
        assert_eq!(misspelling("WTP", ["LS", "WPT"]), Some("WPT"));
        assert_eq!(misspelling("wpt", ["WPT"]), None);
        assert_eq!(misspelling("WPT2", ["WPT"]), None);
        assert_eq!(misspelling("divide", ["divides"]), Some("divides"));
        assert_eq!(misspelling("at_least_one", ["at_least"]), None);
        let e: syn::Expr = syn::parse_quote!(-2..=-4);
        assert_eq!(show(&e), "-2..=-4");
        let e: syn::Expr = syn::parse_quote!(Kernel::Naive);
        assert_eq!(show(&e), "Kernel::Naive");
        let e: syn::Expr = syn::parse_quote!(a - 1);
        assert_eq!(show(&e), "a - 1");
    }
}
