//! The subset of Python expressions that Kernel Tuner's T1 files use: parameter value lists
//! (`"[2**i for i in range(6)]"`), conditions (`"32 <= block_size_x * block_size_y <= 1024"`)
//! and size expressions (`"ProblemSize[0] * ProblemSize[1]"`), parsed once and evaluated with
//! Python's semantics (floor division and modulo, true division, chained comparisons,
//! `and`/`or` returning an operand, `bool` as an integer).
//!
//! What is outside the subset (lambdas, attribute access, slices, dictionaries, keyword
//! arguments, unknown functions) is an error that names the construct and its column.
//! Integers are 64-bit; an overflow is an error rather than Python's big integers.

use std::fmt;
use std::sync::Arc;

/// A Python value.
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer (64-bit here).
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(Arc<str>),
    /// A list or tuple.
    List(Arc<[PyValue]>),
}

impl fmt::Display for PyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PyValue::None => f.write_str("None"),
            PyValue::Bool(true) => f.write_str("True"),
            PyValue::Bool(false) => f.write_str("False"),
            PyValue::Int(i) => write!(f, "{i}"),
            PyValue::Float(x) if x.fract() == 0.0 && x.is_finite() => write!(f, "{x:.1}"),
            PyValue::Float(x) => write!(f, "{x}"),
            PyValue::Str(s) => write!(f, "'{s}'"),
            PyValue::List(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    write!(f, "{}{x}", if i == 0 { "" } else { ", " })?;
                }
                f.write_str("]")
            }
        }
    }
}

impl PyValue {
    /// Python's truth value.
    pub fn truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(i) => *i != 0,
            PyValue::Float(x) => *x != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::List(v) => !v.is_empty(),
        }
    }
    fn type_name(&self) -> &'static str {
        match self {
            PyValue::None => "NoneType",
            PyValue::Bool(_) => "bool",
            PyValue::Int(_) => "int",
            PyValue::Float(_) => "float",
            PyValue::Str(_) => "str",
            PyValue::List(_) => "list",
        }
    }
    /// The value as an integer, when it is one (`bool` counts, as in Python).
    pub fn as_int(&self) -> Option<i64> {
        match *self {
            PyValue::Int(i) => Some(i),
            PyValue::Bool(b) => Some(b as i64),
            _ => None,
        }
    }
    /// The value as a float, when it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            PyValue::Float(x) => Some(x),
            _ => self.as_int().map(|i| i as f64),
        }
    }
}

/// An error in an expression, with the 0-based character column it points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// Character offset in the expression.
    pub column: usize,
    /// What is wrong, and what to write instead where that is known.
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column + 1, self.message)
    }
}

impl std::error::Error for ExprError {}

fn err<T>(column: usize, message: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError {
        column,
        message: message.into(),
    })
}

// -------------------------------------------------------------------------------------------
// The syntax tree
// -------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builtin {
    Range,
    Min,
    Max,
    Abs,
    Int,
    Float,
    Bool,
    Len,
    Sum,
    List,
    Round,
    Pow,
}

const BUILTINS: [(&str, Builtin); 13] = [
    ("range", Builtin::Range),
    ("min", Builtin::Min),
    ("max", Builtin::Max),
    ("abs", Builtin::Abs),
    ("int", Builtin::Int),
    ("float", Builtin::Float),
    ("bool", Builtin::Bool),
    ("len", Builtin::Len),
    ("sum", Builtin::Sum),
    ("list", Builtin::List),
    ("tuple", Builtin::List),
    ("round", Builtin::Round),
    ("pow", Builtin::Pow),
];

#[derive(Clone, Debug)]
enum Node {
    Const(PyValue),
    /// A variable, by the slot the resolver gave it.
    Var(usize),
    /// A comprehension's loop variable, by depth.
    Local(usize),
    Neg(Box<Expr>),
    Pos(Box<Expr>),
    Invert(Box<Expr>),
    Not(Box<Expr>),
    Bin(Bin, Box<Expr>, Box<Expr>),
    /// `a < b <= c`: the first operand, then each operator with its right operand.
    Compare(Box<Expr>, Vec<(Cmp, Expr)>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    IfElse {
        cond: Box<Expr>,
        then: Box<Expr>,
        other: Box<Expr>,
    },
    List(Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Call(Builtin, Vec<Expr>),
    /// `[elem for x in iter if cond ...]`, with one or more `for` clauses.
    Comprehension {
        elem: Box<Expr>,
        clauses: Vec<(Expr, Vec<Expr>)>,
    },
}

/// A parsed expression, ready to evaluate many times.
#[derive(Clone, Debug)]
pub struct Expr {
    node: Node,
    column: usize,
}

/// How a name in an expression is bound.
#[derive(Clone, Debug)]
pub enum Binding {
    /// A variable read at evaluation time from the slot given.
    Slot(usize),
    /// A constant.
    Value(PyValue),
}

/// What the parser asks about each free name.
pub trait Resolve {
    /// The binding of `name`, or `None` if it is unknown.
    fn resolve(&self, name: &str) -> Option<Binding>;
    /// The names that are known, for the error message about an unknown one.
    fn known(&self) -> String;
}
// -------------------------------------------------------------------------------------------
// Evaluation
// -------------------------------------------------------------------------------------------

/// Where evaluation reads variables: slot -> value.
pub trait Env {
    /// The value of slot `slot`.
    fn get(&self, slot: usize) -> PyValue;
}

/// Variables given as a slice, slot `i` at position `i`.
pub struct Vars<'a>(pub &'a [PyValue]);

impl Env for Vars<'_> {
    fn get(&self, slot: usize) -> PyValue {
        self.0.get(slot).cloned().unwrap_or(PyValue::None)
    }
}

/// An environment without variables (for constant expressions).
pub struct NoVars;

impl Env for NoVars {
    fn get(&self, _slot: usize) -> PyValue {
        PyValue::None
    }
}

mod eval;
mod parse;

pub use parse::{parse, slots_of};

#[cfg(test)]
mod tests;
