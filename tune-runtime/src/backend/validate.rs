//! How outputs are checked: tolerances, user comparators, and references (a host closure or a
//! reference kernel).

use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;

use super::host::{Element, HostArgs, HostData};
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
        match (expected, actual) {
            (HostData::F32(e), HostData::F32(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::F64(e), HostData::F64(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::I8(e), HostData::I8(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::U8(e), HostData::U8(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::I16(e), HostData::I16(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::U16(e), HostData::U16(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::I32(e), HostData::I32(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::U32(e), HostData::U32(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::I64(e), HostData::I64(a)) => self.compare(e, Actual::Typed(a)),
            (HostData::U64(e), HostData::U64(a)) => self.compare(e, Actual::Typed(a)),
            _ => Err(format!(
                "output is {}, the reference {}",
                actual.type_name(),
                expected.type_name()
            )),
        }
    }

    /// [`Tolerance::check`] of an output read back as bytes (native order, the reference's
    /// element type), without converting it first: the evaluator checks every
    /// configuration's outputs this way.
    pub(crate) fn check_bytes(&self, expected: &HostData, actual: &[u8]) -> Result<(), String> {
        let n = expected.len();
        if actual.len() != n * expected.elem_bytes() {
            return Err(format!(
                "output has {} bytes, the reference {n} x {} ({} bytes)",
                actual.len(),
                expected.type_name(),
                n * expected.elem_bytes()
            ));
        }
        match expected {
            HostData::F32(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::F64(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::I8(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::U8(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::I16(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::U16(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::I32(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::U32(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::I64(e) => self.compare(e, Actual::Bytes(actual)),
            HostData::U64(e) => self.compare(e, Actual::Bytes(actual)),
        }
    }

    /// The comparison on typed slices of one length, in chunks on rayon's pool (an output of
    /// tens of millions of elements is checked for every configuration); the chunks' results
    /// are combined in order, so the count, the first mismatch and the norms do not depend
    /// on the number of threads.
    fn compare<T: Element>(&self, expected: &[T], actual: Actual<'_, T>) -> Result<(), String> {
        let n = expected.len();
        let one = |k: usize| {
            let (lo, hi) = (k * CHUNK, ((k + 1) * CHUNK).min(n));
            let e = &expected[lo..hi];
            match actual {
                Actual::Typed(a) => self.chunk(lo, e, a[lo..hi].iter().copied()),
                Actual::Bytes(b) => self.chunk(
                    lo,
                    e,
                    b[lo * T::BYTES..hi * T::BYTES]
                        .chunks_exact(T::BYTES)
                        .map(T::read_ne),
                ),
            }
        };
        let count = n.div_ceil(CHUNK);
        let chunks: Vec<Chunk> = if count <= 1 {
            (0..count).map(one).collect()
        } else {
            (0..count).into_par_iter().map(one).collect()
        };
        match *self {
            Tolerance::Norm(eps) => {
                let (mut diff, mut norm) = (0.0f64, 0.0f64);
                for c in &chunks {
                    if let Some((i, e, a)) = c.first {
                        return Err(format!("element {i}: {a} where {e} was expected"));
                    }
                    diff += c.diff;
                    norm += c.norm;
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
                let bad: usize = chunks.iter().map(|c| c.bad).sum();
                match chunks.iter().find_map(|c| c.first) {
                    None => Ok(()),
                    Some((i, e, a)) => Err(format!(
                        "{bad} of {n} elements differ; first at {i}: {a} where {e} was expected"
                    )),
                }
            }
        }
    }

    /// One chunk starting at element `offset`: for the norm, the sums of squares and the
    /// first non-finite output where the reference is finite; otherwise the count of
    /// elements out of tolerance and the first of them.
    fn chunk<T: Element>(
        &self,
        offset: usize,
        expected: &[T],
        actual: impl Iterator<Item = T>,
    ) -> Chunk {
        let mut c = Chunk::default();
        let pairs = expected
            .iter()
            .zip(actual)
            .enumerate()
            .map(|(i, (e, a))| (offset + i, e.to_f64(), a.to_f64()));
        if let Tolerance::Norm(_) = self {
            for (i, e, a) in pairs {
                if !a.is_finite() && e.is_finite() {
                    c.first = Some((i, e, a));
                    return c;
                }
                c.diff += (a - e) * (a - e);
                c.norm += e * e;
            }
            return c;
        }
        let (abs, rel, exact) = match *self {
            Tolerance::Absolute(a) => (a, 0.0, false),
            Tolerance::Relative(r) => (0.0, r, false),
            Tolerance::PerElement { abs, rel } => (abs, rel, false),
            Tolerance::Exact | Tolerance::Norm(_) => (0.0, 0.0, true),
        };
        for (i, e, a) in pairs {
            let ok = if exact {
                a == e || (a.is_nan() && e.is_nan())
            } else {
                (a - e).abs() <= abs + rel * e.abs()
            };
            if !ok {
                c.bad += 1;
                c.first.get_or_insert((i, e, a));
            }
        }
        c
    }
}

/// Elements per chunk of a parallel comparison: large enough that a chunk's work (tens of
/// microseconds) outweighs handing it to a thread.
const CHUNK: usize = 1 << 16;

/// The output being checked: typed, or as read back from the device.
#[derive(Clone, Copy)]
enum Actual<'a, T> {
    Typed(&'a [T]),
    Bytes(&'a [u8]),
}

/// What one chunk of a comparison found.
#[derive(Default)]
struct Chunk {
    /// Elements out of tolerance.
    bad: usize,
    /// The first of them (index, expected, actual); for the norm, the first non-finite one.
    first: Option<(usize, f64, f64)>,
    /// Sum of squared differences (norm only).
    diff: f64,
    /// Sum of squared reference values (norm only).
    norm: f64,
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
