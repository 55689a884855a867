//! Support code for the expansions of `tune::space!`, `#[tunable]` and `#[derive(tune::Enum)]`.
//!
//! Not public API: reached only through [`crate::__private`], and may change in any release.

use crate::param::{EnumParam, Param, ParamType};
use crate::space::{Config, Space};
use crate::{Error, Result};

/// Parameter types that need no list of values: `bool` and enums with `#[derive(tune::Enum)]`.
#[diagnostic::on_unimplemented(
    message = "the parameter of type `{Self}` needs a list of values",
    label = "add `in` and the values after this type",
    note = "give the values after `in`, e.g. `X: {Self} in [..]`; only `bool` and enums with `#[derive(tune::Enum)]` may omit them"
)]
pub trait Unranged: ParamType {
    /// The parameter taking every value of the type.
    fn unranged<'a>(name: &str) -> Param<'a, Self>;
}

impl Unranged for bool {
    fn unranged<'a>(name: &str) -> Param<'a, Self> {
        Param::bool(name)
    }
}

impl<T: EnumParam> Unranged for T {
    fn unranged<'a>(name: &str) -> Param<'a, Self> {
        Param::variants(name)
    }
}

/// What a `#[tunable]` function's configuration struct knows about itself.
///
/// The struct converts to and from [`Config`] by slot (the `#[tp]` arguments in order).
pub trait Tunable: Copy + Sized + 'static {
    /// `module::path::function` of the tunable function.
    const NAME: &'static str;
    /// The tuning parameters' names, in slot order.
    const PARAMS: &'static [&'static str];
    /// The search technique named in `#[tunable(technique = ..)]`, if any.
    const TECHNIQUE: Option<&'static str>;
    /// The engine's form of this configuration.
    fn to_config(&self) -> Config;
    /// The typed form of an engine configuration.
    ///
    /// # Errors
    /// The configuration has another number of values, or a value that does not have its
    /// parameter's type.
    fn from_config(config: &Config) -> Result<Self>;
}

/// Checks that `config` has one value per name.
///
/// # Errors
/// [`Error::NotInSpace`] when the lengths differ.
pub fn check_len(config: &Config, names: &[&str]) -> Result<()> {
    if config.raw().len() == names.len() {
        return Ok(());
    }
    Err(Error::NotInSpace(format!(
        "expected {} values ({}), got {}",
        names.len(),
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        config.raw().len()
    )))
}

/// The value in `slot`, if its raw word is one that type `T` produces.
///
/// # Errors
/// [`Error::WrongType`] when the word does not round-trip through `T`.
pub fn field<T: ParamType>(config: &Config, slot: usize, name: &str) -> Result<T> {
    let raw = config.raw().get(slot).copied().unwrap_or(0);
    let value = T::from_raw(raw);
    if value.to_raw() == raw {
        return Ok(value);
    }
    Err(Error::WrongType {
        name: name.into(),
        value: format!("raw word {raw:#x}"),
        expected: std::any::type_name::<T>().into(),
    })
}

/// What a declaration with compile errors evaluates to (the errors are reported by rustc).
///
/// # Errors
/// Always [`Error::InvalidSpace`].
pub fn invalid_declaration() -> Result<Space> {
    Err(Error::InvalidSpace(
        "the declaration has compile errors; fix them and rebuild".into(),
    ))
}

/// The index of `name` in `names`.
pub fn position(names: &[&str], name: &str) -> Option<usize> {
    names.iter().position(|n| *n == name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn field_round_trips_and_rejects_foreign_words() {
        let c = Config::from_raw(vec![300, 1, 2]);
        assert_eq!(field::<u16>(&c, 0, "a").unwrap(), 300);
        assert!(field::<u8>(&c, 0, "a").is_err());
        assert!(field::<bool>(&c, 1, "b").unwrap());
        assert!(field::<bool>(&c, 2, "b").is_err());
        assert!(check_len(&c, &["a", "b"]).is_err());
        assert!(check_len(&c, &["a", "b", "c"]).is_ok());
    }
}
