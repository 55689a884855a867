//! Tuning parameters: typed value ranges and the constraints attached to them.
//!
//! A [`Param<T>`] names a parameter, gives its candidate values (an integer interval with a
//! step, an explicit list, a generated list, `bool`, or the variants of a user enum) and
//! carries its constraints. Constraints read already-bound parameters through [`Bound`].
//!
//! ```
//! use tune_runtime::param::{Bound, Param};
//! let n = 1024usize;
//! // WPT divides n; LS divides n / WPT (WPT is parameter 0).
//! let wpt = Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n);
//! let ls = Param::<usize>::range("LS", 1..=n).divides(&[0], move |b: &Bound| n / b.get::<usize>(0));
//! # let _ = (wpt, ls);
//! ```

use std::fmt;
use std::ops::{Bound as RangeEnd, RangeBounds};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The kind of values a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Kind {
    /// Signed integer.
    Int,
    /// Unsigned integer.
    UInt,
    /// Floating point.
    Float,
    /// `bool`.
    Bool,
    /// A variant of a user enum, by name.
    Enum,
}

/// A parameter value in a type-erased form, as stored in result files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// Any integer that fits `i64`.
    Int(i64),
    /// An unsigned integer above `i64::MAX`.
    UInt(u64),
    /// Floating point.
    Float(f64),
    /// An enum variant's name.
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::UInt(u) => write!(f, "{u}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

impl Value {
    /// The value as an `i128`, when it is an integer or a `bool`.
    pub fn as_i128(&self) -> Option<i128> {
        match *self {
            Value::Bool(b) => Some(b as i128),
            Value::Int(i) => Some(i as i128),
            Value::UInt(u) => Some(u as i128),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Some(x as i128),
            _ => None,
        }
    }
    /// The value as an `f64`, when it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Bool(b) => Some(b as u8 as f64),
            Value::Int(i) => Some(i as f64),
            Value::UInt(u) => Some(u as f64),
            Value::Float(x) => Some(x),
            Value::Str(_) => None,
        }
    }
}

/// A type that a tuning parameter can have.
///
/// Values are stored in the space as a `u64` "raw" word: integers as their two's complement
/// bits, floats as their IEEE bits, `bool` as 0/1 and enums as the variant's index.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the type of a tuning parameter",
    label = "not a parameter type",
    note = "parameters are integers, floats, `bool`, or enums with `#[derive(tune::Enum)]`"
)]
pub trait ParamType: Copy + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// What kind of value this is.
    const KIND: Kind;
    /// The raw word of a value.
    fn to_raw(self) -> u64;
    /// The value of a raw word made by [`ParamType::to_raw`].
    fn from_raw(raw: u64) -> Self;
    /// The type-erased value.
    fn to_value(self) -> Value;
    /// The typed value of an erased one, if it has this type and fits.
    fn from_value(value: &Value) -> Option<Self>;
    /// Whether raw words of this type compare like the values (for ordered neighbours).
    fn raw_cmp(a: u64, b: u64) -> std::cmp::Ordering {
        a.cmp(&b)
    }
}

/// Integer parameter types: they get interval ranges and pruning aliases.
pub trait Integer: ParamType + Ord {
    /// The value as an `i128`.
    fn to_i128(self) -> i128;
    /// The value of an `i128`, if it fits.
    fn from_i128(v: i128) -> Option<Self>;
}

macro_rules! impl_int {
    ($kind:ident: $($t:ty),*) => {$(
        impl ParamType for $t {
            const KIND: Kind = Kind::$kind;
            #[inline]
            fn to_raw(self) -> u64 { self as i128 as u64 }
            #[inline]
            fn from_raw(raw: u64) -> Self { raw as $t }
            fn to_value(self) -> Value {
                match i64::try_from(self) {
                    Ok(i) => Value::Int(i),
                    Err(_) => Value::UInt(self as u64),
                }
            }
            fn from_value(value: &Value) -> Option<Self> {
                value.as_i128().and_then(|v| <$t>::try_from(v).ok())
            }
            fn raw_cmp(a: u64, b: u64) -> std::cmp::Ordering {
                Self::from_raw(a).cmp(&Self::from_raw(b))
            }
        }
        impl Integer for $t {
            #[inline]
            fn to_i128(self) -> i128 { self as i128 }
            #[inline]
            fn from_i128(v: i128) -> Option<Self> { <$t>::try_from(v).ok() }
        }
    )*};
}
impl_int!(Int: i8, i16, i32, i64, isize);
impl_int!(UInt: u8, u16, u32, u64, usize);

macro_rules! impl_float {
    ($($t:ty),*) => {$(
        impl ParamType for $t {
            const KIND: Kind = Kind::Float;
            #[inline]
            fn to_raw(self) -> u64 { (self as f64).to_bits() }
            #[inline]
            fn from_raw(raw: u64) -> Self { f64::from_bits(raw) as $t }
            fn to_value(self) -> Value { Value::Float(self as f64) }
            fn from_value(value: &Value) -> Option<Self> { value.as_f64().map(|x| x as $t) }
            fn raw_cmp(a: u64, b: u64) -> std::cmp::Ordering {
                Self::from_raw(a).total_cmp(&Self::from_raw(b))
            }
        }
    )*};
}
impl_float!(f32, f64);

impl ParamType for bool {
    const KIND: Kind = Kind::Bool;
    #[inline]
    fn to_raw(self) -> u64 {
        self as u64
    }
    #[inline]
    fn from_raw(raw: u64) -> Self {
        raw != 0
    }
    fn to_value(self) -> Value {
        Value::Bool(self)
    }
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Bool(b) => Some(*b),
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
            Value::Str(s) if s == "true" || s == "True" => Some(true),
            Value::Str(s) if s == "false" || s == "False" => Some(false),
            _ => None,
        }
    }
}

/// A user enum whose variants are the values of a parameter; derive it with
/// `#[derive(tune::Enum)]`.
pub trait EnumParam: ParamType {
    /// Every variant, in declaration order.
    const VARIANTS: &'static [Self];
    /// The variants' names, in the same order.
    const NAMES: &'static [&'static str];
}

/// The values of the parameters bound so far, read by constraints.
///
/// Slots are in declaration order: the macros give parameter `i` of a declaration slot `i`.
/// While a space is built, a constraint may read only the slots it declared (and its own
/// parameter's): reading another one gives 0 there and makes the build fail with
/// [`Error::UndeclaredRead`], since such a value would not be bound yet, or would belong to
/// another independent group.
#[derive(Clone, Copy)]
pub struct Bound<'a> {
    raw: &'a [u64],
    /// Bit set of the readable slots; empty: every slot.
    readable: &'a [u64],
    /// Where a read of another slot is reported (slot + 1).
    stray: Option<&'a AtomicUsize>,
}

impl<'a> Bound<'a> {
    /// Wraps raw slots, every one readable (for tests and custom engines).
    pub fn new(raw: &'a [u64]) -> Self {
        Bound {
            raw,
            readable: &[],
            stray: None,
        }
    }
    /// Wraps raw slots of which only those in the bit set `readable` may be read; a read of
    /// another one is recorded in `stray` (as slot + 1) and gives 0.
    pub(crate) fn restricted(raw: &'a [u64], readable: &'a [u64], stray: &'a AtomicUsize) -> Self {
        Bound {
            raw,
            readable,
            stray: Some(stray),
        }
    }
    /// The value of parameter `slot`, typed.
    ///
    /// The caller names the parameter's declared type; reading a slot with another type
    /// reinterprets its bits (the macros always use the declared type).
    #[inline]
    pub fn get<T: ParamType>(&self, slot: usize) -> T {
        if !self.readable.is_empty()
            && self
                .readable
                .get(slot / 64)
                .is_none_or(|w| (w >> (slot % 64)) & 1 == 0)
        {
            if let Some(s) = self.stray {
                s.store(slot + 1, Ordering::Relaxed);
            }
            return T::from_raw(0);
        }
        T::from_raw(self.raw.get(slot).copied().unwrap_or(0))
    }
    /// The raw words of every slot, unchecked: only the slots the constraint declared (and
    /// its own) hold values that belong to the configuration being built.
    pub fn raw(&self) -> &'a [u64] {
        self.raw
    }
}

/// A constraint's right-hand side, computed from the bound parameters.
pub(crate) type IntExpr<'a> = Arc<dyn Fn(&Bound<'_>) -> Option<i128> + Send + Sync + 'a>;
/// A boolean constraint over the bound parameters (the owner's slot is bound too).
pub(crate) type Pred<'a> = Arc<dyn Fn(&Bound<'_>) -> bool + Send + Sync + 'a>;

/// The integer aliases that prune by generating candidates instead of testing all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntOp {
    /// `rhs % self == 0`
    Divides,
    /// `self % rhs == 0`
    MultipleOf,
    LessThan,
    GreaterThan,
    AtMost,
    AtLeast,
    Equal,
    Unequal,
}

impl IntOp {
    /// The alias's name, as the macros spell it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            IntOp::Divides => "divides",
            IntOp::MultipleOf => "multiple_of",
            IntOp::LessThan => "less_than",
            IntOp::GreaterThan => "greater_than",
            IntOp::AtMost => "at_most",
            IntOp::AtLeast => "at_least",
            IntOp::Equal => "equal",
            IntOp::Unequal => "unequal",
        }
    }
    #[inline]
    pub(crate) fn holds(self, v: i128, rhs: i128) -> bool {
        match self {
            IntOp::Divides => v != 0 && rhs % v == 0,
            IntOp::MultipleOf => rhs != 0 && v % rhs == 0,
            IntOp::LessThan => v < rhs,
            IntOp::GreaterThan => v > rhs,
            IntOp::AtMost => v <= rhs,
            IntOp::AtLeast => v >= rhs,
            IntOp::Equal => v == rhs,
            IntOp::Unequal => v != rhs,
        }
    }
}

#[derive(Clone)]
pub(crate) enum RuleKind<'a> {
    /// An integer alias on the owner: the space generates candidates from it.
    Int { op: IntOp, rhs: IntExpr<'a> },
    /// Any boolean expression.
    Pred(Pred<'a>),
}

/// One constraint on a parameter, with the slots it reads (besides the owner's).
#[derive(Clone)]
pub(crate) struct Rule<'a> {
    pub(crate) deps: Vec<usize>,
    pub(crate) kind: RuleKind<'a>,
    /// How error messages name it (the macros pass the expression as written).
    pub(crate) label: Option<Arc<str>>,
}

/// The candidate values of one parameter, as the builder stores them.
#[derive(Clone, Debug)]
pub(crate) enum Domain {
    /// `lo, lo + step, ...` (`len` values), integers only.
    Ints { lo: i128, step: i128, len: u64 },
    /// Explicit raw values in order.
    Set(Vec<u64>),
}

/// A tuning parameter of type `T`: name, candidate values and constraints.
///
/// Built with consuming methods; added to a [`crate::space::SpaceBuilder`].
#[must_use]
pub struct Param<'a, T: ParamType> {
    pub(crate) name: String,
    pub(crate) domain: Result<Domain>,
    pub(crate) rules: Vec<Rule<'a>>,
    pub(crate) default: Option<T>,
}

impl<T: ParamType> fmt::Debug for Param<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Param")
            .field("name", &self.name)
            .field("type", &std::any::type_name::<T>())
            .field("rules", &self.rules.len())
            .finish()
    }
}

impl<'a, T: ParamType> Param<'a, T> {
    /// A parameter taking the given values, in order. Duplicates are an error at build time.
    pub fn values(name: impl Into<String>, values: impl IntoIterator<Item = T>) -> Self {
        let name = name.into();
        let raw: Vec<u64> = values.into_iter().map(T::to_raw).collect();
        let mut seen = raw.clone();
        seen.sort_unstable();
        let domain = match seen.windows(2).find(|w| w[0] == w[1]) {
            Some(w) => Err(Error::InvalidParam {
                name: name.clone(),
                reason: format!("value `{:?}` is listed twice", T::from_raw(w[0])),
            }),
            None => Ok(Domain::Set(raw)),
        };
        Param {
            name,
            domain,
            rules: Vec::new(),
            default: None,
        }
    }

    /// A constraint: `pred` must hold once this parameter and the slots in `deps` are bound.
    ///
    /// `deps` lists the slots of the other parameters `pred` reads; it decides when the
    /// constraint is checked and which parameters form a group, so it must be complete.
    pub fn constraint(
        mut self,
        deps: &[usize],
        pred: impl Fn(&Bound<'_>) -> bool + Send + Sync + 'a,
    ) -> Self {
        self.rules.push(Rule {
            deps: deps.to_vec(),
            kind: RuleKind::Pred(Arc::new(pred)),
            label: None,
        });
        self
    }

    /// Names the constraint added last (e.g. with the expression as written), for error
    /// messages such as an empty space's.
    pub fn label(mut self, text: impl Into<String>) -> Self {
        if let Some(r) = self.rules.last_mut() {
            r.label = Some(Arc::from(text.into()));
        }
        self
    }

    /// The value production code uses when no tuning result is known.
    pub fn default_value(mut self, value: T) -> Self {
        self.default = Some(value);
        self
    }

    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Param<'_, bool> {
    /// A `bool` parameter: `false`, then `true`.
    pub fn bool(name: impl Into<String>) -> Self {
        Param::values(name, [false, true])
    }
}

impl<T: EnumParam> Param<'_, T> {
    /// An enum parameter taking every variant.
    pub fn variants(name: impl Into<String>) -> Self {
        Param::values(name, T::VARIANTS.iter().copied())
    }
}

macro_rules! alias {
    ($(#[$doc:meta] $fn:ident => $op:ident;)*) => {$(
        #[$doc]
        ///
        /// `deps` lists the slots that `rhs` reads; the owner's own slot must not be among them.
        pub fn $fn(
            mut self,
            deps: &[usize],
            rhs: impl Fn(&Bound<'_>) -> T + Send + Sync + 'a,
        ) -> Self {
            self.rules.push(Rule {
                deps: deps.to_vec(),
                kind: RuleKind::Int { op: IntOp::$op, rhs: Arc::new(move |b| Some(rhs(b).to_i128())) },
                label: None,
            });
            self
        }
    )*};
}

impl<'a, T: Integer> Param<'a, T> {
    /// An integer interval, e.g. `1..=n` or `0..64`, with step 1.
    pub fn range(name: impl Into<String>, range: impl RangeBounds<T>) -> Self {
        let name = name.into();
        let lo = match range.start_bound() {
            RangeEnd::Included(v) => Some(v.to_i128()),
            RangeEnd::Excluded(v) => Some(v.to_i128() + 1),
            RangeEnd::Unbounded => None,
        };
        let hi = match range.end_bound() {
            RangeEnd::Included(v) => Some(v.to_i128()),
            RangeEnd::Excluded(v) => Some(v.to_i128() - 1),
            RangeEnd::Unbounded => None,
        };
        let domain = match (lo, hi) {
            (Some(lo), Some(hi)) => interval(&name, lo, hi, 1),
            _ => Err(Error::InvalidParam {
                name: name.clone(),
                reason: "a range needs both bounds, e.g. `1..=n`".into(),
            }),
        };
        Param {
            name,
            domain,
            rules: Vec::new(),
            default: None,
        }
    }

    /// Keeps every `step`-th value of an interval, starting at its lower bound.
    pub fn step(mut self, step: T) -> Self {
        let step = step.to_i128();
        self.domain = match self.domain {
            Ok(Domain::Ints { lo, step: 1, len }) => {
                let hi = lo + len as i128 - 1;
                interval(&self.name, lo, hi, step)
            }
            Ok(Domain::Ints { .. }) => Err(Error::InvalidParam {
                name: self.name.clone(),
                reason: "`step` is given twice".into(),
            }),
            Ok(Domain::Set(_)) => Err(Error::InvalidParam {
                name: self.name.clone(),
                reason: "`step` applies to ranges, not to value lists".into(),
            }),
            Err(e) => Err(e),
        };
        self
    }

    alias! {
        /// This parameter divides `rhs` (`rhs % self == 0`); candidates are `rhs`'s divisors.
        divides => Divides;
        /// `self % rhs == 0`; candidates are the multiples of `rhs`.
        multiple_of => MultipleOf;
        /// `self < rhs`.
        less_than => LessThan;
        /// `self > rhs`.
        greater_than => GreaterThan;
        /// `self <= rhs`.
        at_most => AtMost;
        /// `self >= rhs`.
        at_least => AtLeast;
        /// `self == rhs`.
        equal => Equal;
        /// `self != rhs`.
        unequal => Unequal;
    }
}

/// Largest number of candidate values one parameter may have.
pub(crate) const MAX_DOMAIN: u64 = u32::MAX as u64;

fn interval(name: &str, lo: i128, hi: i128, step: i128) -> Result<Domain> {
    if step <= 0 {
        return Err(Error::InvalidParam {
            name: name.into(),
            reason: format!("step must be positive, got {step}"),
        });
    }
    let len = if hi < lo { 0 } else { (hi - lo) / step + 1 };
    if len as u128 > MAX_DOMAIN as u128 {
        return Err(Error::InvalidParam {
            name: name.into(),
            reason: format!("the range has {len} values; at most {MAX_DOMAIN} are supported"),
        });
    }
    Ok(Domain::Ints {
        lo,
        step,
        len: len as u64,
    })
}

impl Domain {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Domain::Ints { len, .. } => *len,
            Domain::Set(v) => v.len() as u64,
        }
    }
}
