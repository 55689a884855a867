//! How outputs are checked: tolerances, user comparators, and references (a host closure or a
//! reference kernel).

use std::fmt;
use std::sync::Arc;

use super::host::{HostArgs, HostData};
use crate::space::Config;
use crate::Result;

/// How close an output must be to the reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// Bit-for-bit equal values.
    Exact,
    /// Every element: `|actual - expected| <= eps`.
    Absolute(f64),
    /// Every element: `|actual - expected| <= eps * |expected|`.
    Relative(f64),
    /// Every element: `|actual - expected| <= abs + rel * |expected|` (numpy's `allclose`).
    PerElement {
        /// Absolute part.
        abs: f64,
        /// Relative part.
        rel: f64,
    },
    /// The whole buffer: `||actual - expected||_2 <= eps * ||expected||_2`.
    Norm(f64),
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance::PerElement {
            abs: 1e-4,
            rel: 1e-4,
        }
    }
}

impl Tolerance {
    /// Compares `actual` with `expected`; the error says where and by how much they differ.
    ///
    /// # Errors
    /// A description of the first mismatch (or of the norm) when they are not close enough.
    pub fn check(&self, expected: &HostData, actual: &HostData) -> Result<(), String> {
        if expected.len() != actual.len() || expected.type_name() != actual.type_name() {
            return Err(format!(
                "output has {} x {}, the reference {} x {}",
                actual.len(),
                actual.type_name(),
                expected.len(),
                expected.type_name()
            ));
        }
        let n = expected.len();
        let pairs = (0..n).filter_map(|i| Some((i, expected.get_f64(i)?, actual.get_f64(i)?)));
        match *self {
            Tolerance::Norm(eps) => {
                let (mut diff, mut norm) = (0.0f64, 0.0f64);
                for (i, e, a) in pairs {
                    if !a.is_finite() && e.is_finite() {
                        return Err(format!("element {i}: {a} where {e} was expected"));
                    }
                    diff += (a - e) * (a - e);
                    norm += e * e;
                }
                let (diff, norm) = (diff.sqrt(), norm.sqrt());
                if diff <= eps * norm || diff == 0.0 {
                    Ok(())
                } else {
                    Err(format!(
                        "relative error norm {:.3e} exceeds {eps:.1e}",
                        diff / norm.max(f64::MIN_POSITIVE)
                    ))
                }
            }
            _ => {
                let (abs, rel, exact) = match *self {
                    Tolerance::Exact => (0.0, 0.0, true),
                    Tolerance::Absolute(a) => (a, 0.0, false),
                    Tolerance::Relative(r) => (0.0, r, false),
                    Tolerance::PerElement { abs, rel } => (abs, rel, false),
                    Tolerance::Norm(_) => (0.0, 0.0, false),
                };
                let mut bad = 0usize;
                let mut first = None;
                for (i, e, a) in pairs {
                    let ok = if exact {
                        a == e || (a.is_nan() && e.is_nan())
                    } else {
                        (a - e).abs() <= abs + rel * e.abs()
                    };
                    if !ok {
                        bad += 1;
                        first.get_or_insert((i, e, a));
                    }
                }
                match first {
                    None => Ok(()),
                    Some((i, e, a)) => Err(format!(
                        "{bad} of {n} elements differ; first at {i}: {a} where {e} was expected"
                    )),
                }
            }
        }
    }
}

/// Checks every output against its reference (none: nothing to check), with the comparator
/// where there is one, else the tolerance: one check for single kernels and compositions.
pub(crate) fn check_outputs(
    expected: Option<&[HostData]>,
    actual: &[HostData],
    comparator: Option<&Comparator>,
    tolerance: &Tolerance,
) -> std::result::Result<(), crate::evaluate::Failure> {
    let Some(expected) = expected else {
        return Ok(());
    };
    for (k, (e, a)) in expected.iter().zip(actual).enumerate() {
        let r = match comparator {
            Some(c) => c(e, a),
            None => tolerance.check(e, a),
        };
        r.map_err(|m| crate::evaluate::Failure::WrongResult(format!("output {k}: {m}")))?;
    }
    Ok(())
}

/// A user comparator: `(expected, actual) -> Ok(())` or a description of the mismatch.
pub type Comparator = Arc<dyn Fn(&HostData, &HostData) -> Result<(), String> + Send + Sync>;

/// A reference closure: computes the expected contents of every output buffer, in argument
/// order, from the initial arguments.
pub type ReferenceFn = Arc<dyn Fn(&HostArgs<'_>) -> Result<Vec<HostData>> + Send + Sync>;

/// A reference kernel run once with a fixed configuration; its outputs are the expected ones.
/// It takes the same arguments as the tuned kernel.
#[derive(Clone, Debug)]
#[must_use]
pub struct ReferenceKernel {
    pub(super) source: Option<String>,
    pub(super) name: Option<String>,
    pub(super) config: Option<Config>,
    pub(super) defines: Vec<(String, String)>,
    pub(super) options: Vec<String>,
    pub(super) global: Option<Vec<usize>>,
    pub(super) local: Option<Vec<usize>>,
}

impl ReferenceKernel {
    /// Kernel `name` in `source` (usually a simple, obviously right implementation).
    pub fn new(source: impl Into<String>, name: impl Into<String>) -> Self {
        ReferenceKernel {
            source: Some(source.into()),
            name: Some(name.into()),
            config: None,
            defines: Vec::new(),
            options: Vec::new(),
            global: None,
            local: None,
        }
    }
    /// The tuned kernel itself, run with a configuration known to be right.
    pub fn same_kernel(config: Config) -> Self {
        ReferenceKernel {
            source: None,
            name: None,
            config: Some(config),
            defines: Vec::new(),
            options: Vec::new(),
            global: None,
            local: None,
        }
    }
    /// The configuration that defines, argument expressions and (unless given) sizes are
    /// evaluated with.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }
    /// A fixed define.
    pub fn define(mut self, name: impl Into<String>, value: impl fmt::Display) -> Self {
        self.defines.push((name.into(), value.to_string()));
        self
    }
    /// A compiler option.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }
    /// The global size (1 to 3 dimensions).
    pub fn global(mut self, global: impl Into<Vec<usize>>) -> Self {
        self.global = Some(global.into());
        self
    }
    /// The local size (1 to 3 dimensions).
    pub fn local(mut self, local: impl Into<Vec<usize>>) -> Self {
        self.local = Some(local.into());
        self
    }
}

#[derive(Clone)]
pub(super) enum Reference {
    Closure(ReferenceFn),
    Kernel(ReferenceKernel),
}
