//! Kernel Tuner's T1 input format: a tuning problem described in JSON, as
//! `kernel_tuner <T1.json>` reads it.
//!
//! A T1 file holds `ConfigurationSpace` (tuning parameters whose values are Python
//! expressions, and conditions that are Python boolean expressions over the parameters),
//! `KernelSpecification` (language, kernel file and name, problem size, grid divisors,
//! arguments with their fill types) and optional `BenchmarkConfig`, `Search` and `Budget`.
//! [`T1::read`] parses it; [`T1::space`] builds the constrained space (each condition is
//! checked as soon as the parameters it reads are bound, as for any space); [`T1::kernel`]
//! describes the kernel as a [`crate::backend::KernelSpec`] with Kernel Tuner's launch
//! conventions.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("add.json");
//! # std::fs::write(&path, r#"{"ConfigurationSpace": {
//! #   "TuningParameters": [
//! #     {"Name": "block_size_x", "Type": "int", "Values": "[2**i for i in range(5, 11)]"},
//! #     {"Name": "tile", "Type": "int", "Values": "[1, 2, 4]"}],
//! #   "Conditions": [{"Expression": "block_size_x * tile <= 1024"}]}}"#).unwrap();
//! use tune_runtime::t1::T1;
//! let t1 = T1::read(&path)?;
//! let space = t1.space()?;
//! assert_eq!(space.space.len(), 6 + 5 + 4);
//! # Ok::<(), tune_runtime::Error>(())
//! ```

pub mod expr;
mod kernel;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value as Json;

pub use kernel::{Language, T1Kernel};

use self::expr::{Binding, Env, Expr, ExprError, NoVars, PyValue, Resolve};
use crate::param::{Bound, Param, ParamType};
use crate::space::{Config, Space, SpaceBuilder};
use crate::{Error, Result};

/// One tuning parameter as the file declares it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TuningParameter {
    /// The parameter's name (also its preprocessor define).
    pub name: String,
    /// `int`, `float`, `bool` or `string`.
    #[serde(default, rename = "Type")]
    pub kind: Option<String>,
    /// A Python expression for the list of values (or a JSON list).
    pub values: Json,
    /// The default value (a value, or a list of one).
    #[serde(default)]
    pub default: Option<Json>,
}

/// A condition (Kernel Tuner's restriction).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Condition {
    /// A Python boolean expression over the parameters.
    pub expression: String,
    /// The parameters it reads, as the file lists them (the reader computes its own list).
    #[serde(default)]
    pub parameters: Vec<String>,
}

/// The `ConfigurationSpace` section.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConfigurationSpace {
    /// The parameters, in order.
    pub tuning_parameters: Vec<TuningParameter>,
    /// The conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// One kernel argument.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Argument {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Element type: `float`, `double`, `int32`, ...
    #[serde(rename = "Type")]
    pub kind: String,
    /// `Vector` or `Scalar`.
    pub memory_type: String,
    /// `ReadOnly`, `WriteOnly`, `ReadWrite`.
    #[serde(default)]
    pub access_type: Option<String>,
    /// `Constant` for constant memory.
    #[serde(default)]
    pub mem_type: Option<String>,
    /// `Constant` or `Random` (vectors).
    #[serde(default)]
    pub fill_type: Option<String>,
    /// Number of elements: a number or a Python expression over `ProblemSize` and the
    /// parameters' value lists.
    #[serde(default)]
    pub size: Option<Json>,
    /// The fill value (constant vectors, scalars).
    #[serde(default)]
    pub fill_value: Option<f64>,
    /// 1 for an output.
    #[serde(default)]
    pub output: Option<Json>,
}

/// The `KernelSpecification` section.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KernelSpecification {
    /// `CUDA` or `OpenCL` (`HIP` is not supported).
    pub language: String,
    /// Extra compiler options.
    #[serde(default)]
    pub compiler_options: Vec<String>,
    /// The kernel function's name.
    pub kernel_name: String,
    /// The kernel source file, relative to the T1 file (or its parent folder).
    pub kernel_file: String,
    /// The problem size per dimension: numbers or Python expressions.
    #[serde(default)]
    pub problem_size: Vec<Json>,
    /// Grid divisors per dimension: Python expressions whose product divides the problem
    /// size into thread blocks (default: `block_size_x` etc. when it is a parameter).
    #[serde(default, rename = "GridDivX")]
    pub grid_div_x: Option<Vec<String>>,
    /// See `GridDivX`.
    #[serde(default, rename = "GridDivY")]
    pub grid_div_y: Option<Vec<String>>,
    /// See `GridDivX`.
    #[serde(default, rename = "GridDivZ")]
    pub grid_div_z: Option<Vec<String>>,
    /// The arguments, in the kernel's parameter order.
    #[serde(default)]
    pub arguments: Vec<Argument>,
    /// The device (`{"Name": ...}`), if the file names one.
    #[serde(default)]
    pub device: Option<Json>,
}

/// A T1 file.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct T1File {
    /// `General` (`BenchmarkName`, ...).
    #[serde(default)]
    pub general: Option<serde_json::Map<String, Json>>,
    /// The search space.
    pub configuration_space: ConfigurationSpace,
    /// The kernel; absent in files that only describe a space.
    #[serde(default)]
    pub kernel_specification: Option<KernelSpecification>,
    /// Free-form settings (`iterations`, ...).
    #[serde(default)]
    pub benchmark_config: Option<serde_json::Map<String, Json>>,
    /// `{"Name": strategy, "Attributes": [...]}`.
    #[serde(default)]
    pub search: Option<Json>,
    /// `[{"Type": "ConfigurationCount" | "TuningDuration", "BudgetValue": n}]`.
    #[serde(default)]
    pub budget: Option<Vec<Json>>,
}

/// A T1 file read from disk.
#[derive(Clone, Debug)]
pub struct T1 {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its content.
    pub file: T1File,
}

/// How the values of one parameter are stored in the space.
#[derive(Clone, Debug)]
pub(crate) enum Column {
    Int(Vec<i64>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
    /// Strings are stored as their position in the list.
    Str(Vec<Arc<str>>),
}

impl Column {
    fn decode(&self, raw: u64) -> PyValue {
        match self {
            Column::Int(_) => PyValue::Int(raw as i64),
            Column::Float(_) => PyValue::Float(f64::from_bits(raw)),
            Column::Bool(_) => PyValue::Bool(raw != 0),
            Column::Str(v) => v
                .get(raw as usize)
                .map_or(PyValue::None, |s| PyValue::Str(s.clone())),
        }
    }
    fn values(&self) -> Vec<PyValue> {
        match self {
            Column::Int(v) => v.iter().map(|&x| PyValue::Int(x)).collect(),
            Column::Float(v) => v.iter().map(|&x| PyValue::Float(x)).collect(),
            Column::Bool(v) => v.iter().map(|&x| PyValue::Bool(x)).collect(),
            Column::Str(v) => v.iter().map(|s| PyValue::Str(s.clone())).collect(),
        }
    }
}

/// The values of a configuration's parameters, read by compiled expressions.
pub(crate) struct ConfigEnv<'a> {
    pub(crate) raw: &'a [u64],
    pub(crate) columns: &'a [Column],
}

impl Env for ConfigEnv<'_> {
    fn get(&self, slot: usize) -> PyValue {
        match (self.columns.get(slot), self.raw.get(slot)) {
            (Some(c), Some(&r)) => c.decode(r),
            _ => PyValue::None,
        }
    }
}

/// Names of a T1 file's parameters, bound to their slots (conditions, grid divisors) or to
/// their value lists (argument sizes, as Kernel Tuner evaluates them), plus `ProblemSize`.
pub(crate) struct Names<'a> {
    pub(crate) names: Vec<&'a str>,
    pub(crate) lists: Option<Vec<PyValue>>,
    pub(crate) problem_size: Option<PyValue>,
}

impl Resolve for Names<'_> {
    fn resolve(&self, name: &str) -> Option<Binding> {
        if name == "ProblemSize" {
            return self.problem_size.clone().map(Binding::Value);
        }
        let slot = self.names.iter().position(|n| *n == name)?;
        Some(match &self.lists {
            Some(l) => Binding::Value(l[slot].clone()),
            None => Binding::Slot(slot),
        })
    }
    fn known(&self) -> String {
        let mut k = self.names.join(", ");
        if self.problem_size.is_some() {
            k.push_str(", ProblemSize");
        }
        if k.is_empty() {
            k.push_str("(none)");
        }
        k
    }
}

/// Errors raised by a condition while the space was built: the configurations are left
/// out, as Kernel Tuner's solver would not list them, and reported.
#[derive(Debug, Default)]
struct Raised {
    count: AtomicU64,
    first: Mutex<Option<String>>,
    /// The parameters the condition reads, `(name, slot)`, to show their values.
    reads: Vec<(String, usize)>,
}

/// The space of a T1 file.
#[derive(Clone, Debug)]
pub struct T1Space {
    /// The valid configurations.
    pub space: Space,
    /// Size of the Cartesian product of the parameters' values.
    pub cartesian: u128,
    /// Things the user should know (conditions that raised errors for some
    /// configurations, which were left out).
    pub warnings: Vec<String>,
    pub(crate) columns: Arc<Vec<Column>>,
}

impl T1Space {
    /// The parameter values of a configuration, in parameter order.
    pub fn values(&self, config: &Config) -> Vec<PyValue> {
        ConfigEnv {
            raw: config.raw(),
            columns: &self.columns,
        }
        .all()
    }
    /// Kernel Tuner's cache key of a configuration: its values as Python prints them,
    /// joined by commas (`"16,1,1,1,0,0,0,1,15,15"`).
    pub fn key(&self, config: &Config) -> String {
        self.values(config)
            .iter()
            .map(py_str)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl ConfigEnv<'_> {
    fn all(&self) -> Vec<PyValue> {
        (0..self.columns.len()).map(|s| self.get(s)).collect()
    }
}

/// `str(v)` in Python (strings without quotes).
pub(crate) fn py_str(v: &PyValue) -> String {
    match v {
        PyValue::Str(s) => s.to_string(),
        other => other.to_string(),
    }
}

fn format_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Format {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// An expression of the file at `path` that does not parse or evaluate; `context` says
/// where it stands.
fn expr_err(path: &Path, context: impl Into<String>, source: ExprError) -> Error {
    Error::Expression {
        path: path.display().to_string(),
        context: context.into(),
        source,
    }
}

impl T1 {
    /// Reads a T1 file.
    ///
    /// # Errors
    /// [`Error::Io`], or [`Error::Format`] for JSON that is not a T1 file.
    pub fn read(path: impl AsRef<Path>) -> Result<T1> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text, path)
    }

    /// Parses the text of a T1 file; `path` names it in errors and locates its kernel file.
    ///
    /// # Errors
    /// [`Error::Format`] for JSON that is not a T1 file.
    pub fn from_json(text: &str, path: &Path) -> Result<T1> {
        let file: T1File = serde_json::from_str(text).map_err(|e| {
            format_err(
                path,
                format!("not a Kernel Tuner T1 file: {e}; see Kernel Tuner's T1 input schema"),
            )
        })?;
        Ok(T1 {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The benchmark's name: `General.BenchmarkName`, else the file's stem.
    pub fn name(&self) -> String {
        self.file
            .general
            .as_ref()
            .and_then(|g| g.get("BenchmarkName"))
            .and_then(Json::as_str)
            .map(str::to_owned)
            .or_else(|| {
                self.path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "t1".into())
    }

    fn param_names(&self) -> Vec<&str> {
        self.file
            .configuration_space
            .tuning_parameters
            .iter()
            .map(|p| p.name.as_str())
            .collect()
    }

    /// The problem size (`KernelSpecification.ProblemSize`), evaluated.
    ///
    /// # Errors
    /// [`Error::Expression`] for an expression outside the supported Python subset, or
    /// [`Error::Format`] for one that does not evaluate to an integer.
    pub fn problem_size(&self) -> Result<Vec<i64>> {
        self.problem_size_with(&self.value_lists()?)
    }

    /// The problem size, with the parameters' value lists already evaluated (sizes may
    /// name them, as `max(filter_width)`).
    pub(crate) fn problem_size_with(&self, columns: &[Column]) -> Result<Vec<i64>> {
        let Some(k) = &self.file.kernel_specification else {
            return Ok(Vec::new());
        };
        let names = Names {
            names: self.param_names(),
            lists: Some(
                columns
                    .iter()
                    .map(|c| PyValue::List(c.values().into()))
                    .collect(),
            ),
            problem_size: None,
        };
        k.problem_size
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let what = format!("ProblemSize[{i}]");
                let value = json_or_expr(v, &names, &what, &self.path)?;
                value.as_int().ok_or_else(|| {
                    format_err(&self.path, format!("{what} is `{value}`, not an integer"))
                })
            })
            .collect()
    }

    /// Every parameter's values, evaluated and typed.
    pub(crate) fn value_lists(&self) -> Result<Vec<Column>> {
        let none = Names {
            names: Vec::new(),
            lists: None,
            problem_size: None,
        };
        self.file
            .configuration_space
            .tuning_parameters
            .iter()
            .map(|p| {
                let what = format!("the values of parameter `{}`", p.name);
                let v = json_or_expr(&p.values, &none, &what, &self.path)?;
                let PyValue::List(items) = v else {
                    return Err(format_err(
                        &self.path,
                        format!("{what} are `{v}`, not a list; write e.g. \"[1, 2, 4]\""),
                    ));
                };
                column(&p.name, p.kind.as_deref(), &items).map_err(|e| format_err(&self.path, e))
            })
            .collect()
    }

    /// Builds the space: the parameters' values, constrained by every condition.
    ///
    /// # Errors
    /// [`Error::Expression`] for a value list or condition outside the supported Python
    /// subset (naming the parameter or condition, with the column), [`Error::Format`] for
    /// values of the wrong type or a condition that is always false, or the space builder's
    /// errors (duplicate values or names).
    pub fn space(&self) -> Result<T1Space> {
        let columns = Arc::new(self.value_lists()?);
        let names = Names {
            names: self.param_names(),
            lists: None,
            problem_size: Some(PyValue::List(
                self.problem_size_with(&columns)?
                    .into_iter()
                    .map(PyValue::Int)
                    .collect(),
            )),
        };
        let mut warnings = Vec::new();
        let mut b = SpaceBuilder::new();
        let cartesian = columns
            .iter()
            .map(|c| c.values().len() as u128)
            .try_fold(1u128, |a, n| a.checked_mul(n))
            .unwrap_or(u128::MAX);
        for (p, col) in self
            .file
            .configuration_space
            .tuning_parameters
            .iter()
            .zip(columns.iter())
        {
            b = add_param(b, p, col);
        }
        let mut raised = Vec::new();
        for (i, c) in self.file.configuration_space.conditions.iter().enumerate() {
            let what = format!("condition {} `{}`", i + 1, c.expression);
            let (e, slots) = expr::slots_of(&c.expression, &names)
                .map_err(|e| expr_err(&self.path, &what, e))?;
            if slots.is_empty() {
                match e.eval(&NoVars) {
                    Ok(v) if v.truthy() => {}
                    Ok(_) => {
                        return Err(format_err(
                            &self.path,
                            format!("{what} is always false: no configuration is valid"),
                        ))
                    }
                    Err(e) => return Err(expr_err(&self.path, what, e)),
                }
                continue;
            }
            let r = Arc::new(Raised {
                reads: slots
                    .iter()
                    .map(|&k| (names.names[k].to_string(), k))
                    .collect(),
                ..Raised::default()
            });
            raised.push((what, Arc::clone(&r)));
            let cols = Arc::clone(&columns);
            b = b
                .constraint(&slots, move |bound: &Bound<'_>| check(&e, bound, &cols, &r))
                .label(format!("`{}`", c.expression));
        }
        let space = b.build().map_err(|e| match e {
            Error::InvalidParam { name, reason } => {
                format_err(&self.path, format!("parameter `{name}`: {reason}"))
            }
            other => other,
        })?;
        for (what, r) in raised {
            let n = r.count.load(Ordering::Relaxed);
            if n > 0 {
                let first = r
                    .first
                    .lock()
                    .ok()
                    .and_then(|f| f.clone())
                    .unwrap_or_default();
                warnings.push(format!(
                    "{what} raised an error for {n} partial configuration(s), which were left out; first: {first}"
                ));
            }
        }
        Ok(T1Space {
            space,
            cartesian,
            warnings,
            columns,
        })
    }
}

fn check(e: &Expr, bound: &Bound<'_>, cols: &[Column], raised: &Raised) -> bool {
    let env = ConfigEnv {
        raw: bound.raw(),
        columns: cols,
    };
    match e.eval(&env) {
        Ok(v) => v.truthy(),
        Err(err) => {
            if raised.count.fetch_add(1, Ordering::Relaxed) == 0 {
                let vals: Vec<String> = raised
                    .reads
                    .iter()
                    .map(|(n, k)| format!("{n}={}", py_str(&env.get(*k))))
                    .collect();
                if let Ok(mut f) = raised.first.lock() {
                    *f = Some(format!("{err} at {}", vals.join(" ")));
                }
            }
            false
        }
    }
}

fn add_param<'a>(b: SpaceBuilder<'a>, p: &TuningParameter, col: &Column) -> SpaceBuilder<'a> {
    let default = p.default.as_ref().map(|d| match d {
        Json::Array(a) if a.len() == 1 => a[0].clone(),
        other => other.clone(),
    });
    let default = default.as_ref();
    let name = p.name.clone();
    match col {
        Column::Int(v) => b.param(listed(name, v, default.and_then(Json::as_i64))),
        Column::Float(v) => b.param(listed(name, v, default.and_then(Json::as_f64))),
        Column::Bool(v) => b.param(listed(name, v, default.and_then(Json::as_bool))),
        Column::Str(v) => {
            let codes: Vec<i64> = (0..v.len() as i64).collect();
            let code = default
                .and_then(Json::as_str)
                .and_then(|d| v.iter().position(|s| &**s == d))
                .map(|i| i as i64);
            b.param(listed(name, &codes, code))
        }
    }
}

/// A parameter taking `values`, with `default` as its default where it is one of them.
fn listed<'a, T: ParamType + PartialEq>(
    name: String,
    values: &[T],
    default: Option<T>,
) -> Param<'a, T> {
    let param = Param::values(name, values.iter().copied());
    match default.filter(|d| values.contains(d)) {
        Some(d) => param.default_value(d),
        None => param,
    }
}

/// A JSON value of the file at `path` as a Python value: strings are expressions, numbers
/// and lists are literal.
pub(crate) fn json_or_expr(
    v: &Json,
    names: &Names<'_>,
    what: &str,
    path: &Path,
) -> Result<PyValue> {
    match v {
        Json::String(s) => {
            let at = |e| expr_err(path, format!("{what} `{s}`"), e);
            expr::parse(s, names).map_err(at)?.eval(&NoVars).map_err(at)
        }
        other => json_value(other).ok_or_else(|| {
            format_err(
                path,
                format!("{what}: `{other}` is not a value this reader supports"),
            )
        }),
    }
}

fn json_value(v: &Json) -> Option<PyValue> {
    Some(match v {
        Json::Null => PyValue::None,
        Json::Bool(b) => PyValue::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => PyValue::Int(i),
            None => PyValue::Float(n.as_f64()?),
        },
        Json::String(s) => PyValue::Str(s.as_str().into()),
        Json::Array(a) => {
            PyValue::List(a.iter().map(json_value).collect::<Option<Vec<_>>>()?.into())
        }
        Json::Object(_) => return None,
    })
}

/// Types a parameter's values as its declared `Type` says (or, without one, as they are).
fn column(
    name: &str,
    kind: Option<&str>,
    items: &[PyValue],
) -> std::result::Result<Column, String> {
    let bad = |v: &PyValue, t: &str| {
        format!("parameter `{name}` is declared `{t}`, but its value `{v}` is not; fix its Type or Values")
    };
    let kind = match kind.map(str::to_ascii_lowercase).as_deref() {
        Some(k @ ("int" | "float" | "bool" | "string" | "str")) => k.to_string(),
        Some(other) => {
            return Err(format!(
                "parameter `{name}` has Type `{other}`; expected one of: int, float, bool, string"
            ))
        }
        None if items.iter().all(|v| matches!(v, PyValue::Int(_))) => "int".into(),
        None if items.iter().all(|v| matches!(v, PyValue::Bool(_))) => "bool".into(),
        None if items.iter().all(|v| v.as_f64().is_some()) => "float".into(),
        None => "string".into(),
    };
    Ok(match kind.as_str() {
        "int" => Column::Int(
            items
                .iter()
                .map(|v| match v {
                    PyValue::Int(i) => Ok(*i),
                    v => Err(bad(v, "int")),
                })
                .collect::<std::result::Result<_, _>>()?,
        ),
        "float" => Column::Float(
            items
                .iter()
                .map(|v| v.as_f64().ok_or_else(|| bad(v, "float")))
                .collect::<std::result::Result<_, _>>()?,
        ),
        "bool" => Column::Bool(
            items
                .iter()
                .map(|v| match v {
                    PyValue::Bool(b) => Ok(*b),
                    PyValue::Int(0) => Ok(false),
                    PyValue::Int(1) => Ok(true),
                    v => Err(bad(v, "bool")),
                })
                .collect::<std::result::Result<_, _>>()?,
        ),
        _ => Column::Str(items.iter().map(|v| Arc::from(py_str(v))).collect()),
    })
}

#[cfg(test)]
mod tests;
