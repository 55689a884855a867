//! The kernel of a T1 file as a [`KernelSpec`], launched as Kernel Tuner launches it: the
//! thread block is `(block_size_x, block_size_y, block_size_z)` (256, 1, 1 for the names
//! that are not parameters), the grid is `ceil(ProblemSize[i] / product(GridDiv[i]))`, every
//! parameter is a define, and so are `kernel_tuner` and the block sizes that are not
//! parameters. A CUDA source without `extern "C"` is wrapped in one, so that its kernel keeps
//! its name. `GlobalSize`/`LocalSize` are ignored, as Kernel Tuner ignores them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::expr::{self, Expr, PyValue};
use super::{expr_err, format_err, json_or_expr, ConfigEnv, Names, T1Space, T1};
use crate::backend::{BufferArg, KernelSpec};
use crate::space::Config;
use crate::{Error, Result};

/// The kernel language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// CUDA C++, compiled with NVRTC.
    Cuda,
    /// OpenCL C.
    OpenCl,
}

const BLOCK_NAMES: [&str; 3] = ["block_size_x", "block_size_y", "block_size_z"];
const BLOCK_DEFAULTS: [usize; 3] = [256, 1, 1];

/// A T1 file's kernel, ready to become a [`KernelSpec`].
#[derive(Clone, Debug)]
pub struct T1Kernel {
    /// The language.
    pub language: Language,
    /// The kernel function's name.
    pub name: String,
    /// The source file found.
    pub source_path: PathBuf,
    /// The source as compiled (for CUDA, wrapped in `extern "C"` when needed).
    pub source: String,
    /// Compiler options: the file's, then `-I` the kernel's folder.
    pub options: Vec<String>,
    /// The evaluated problem size, three dimensions.
    pub problem_size: [i64; 3],
    /// Timed repetitions: `BenchmarkConfig.iterations`, else 7 (Kernel Tuner's default).
    pub repetitions: usize,
    /// What differs from Kernel Tuner's run of the same file.
    pub warnings: Vec<String>,
    grid_divs: [Vec<Expr>; 3],
    block_slots: [Option<usize>; 3],
    args: Vec<ArgPlan>,
}

#[derive(Clone, Debug)]
enum ArgPlan {
    Vector {
        elem: String,
        len: usize,
        fill: Fill,
        output: bool,
        /// CUDA: the `__constant__` array of the argument's name, filled with the same data
        /// (Kernel Tuner passes a `Constant` argument both ways).
        symbol: Option<String>,
    },
    Scalar {
        elem: String,
        value: f64,
    },
}

#[derive(Clone, Copy, Debug)]
enum Fill {
    Constant(f64),
    Random,
}

impl T1 {
    /// The kernel: its source (the `KernelFile` beside the T1 file or its parent folder, as
    /// Kernel Tuner looks for it), launch geometry and arguments.
    ///
    /// # Errors
    /// [`Error::Format`] for a file without `KernelSpecification`, an unsupported language or
    /// argument type; [`Error::Expression`] for an expression outside the subset;
    /// [`Error::Io`] for a missing kernel file (`NotFound`).
    pub fn kernel(&self, space: &T1Space) -> Result<T1Kernel> {
        let k = self.file.kernel_specification.as_ref().ok_or_else(|| {
            format_err(
                &self.path,
                "no `KernelSpecification`: this file describes a space only; `tune space` reads it",
            )
        })?;
        let mut warnings = Vec::new();
        let language = match k.language.to_ascii_lowercase().as_str() {
            "cuda" => Language::Cuda,
            "opencl" => Language::OpenCl,
            other => {
                return Err(format_err(
                    &self.path,
                    format!(
                        "Language `{other}` is not supported; tune runs CUDA and OpenCL kernels"
                    ),
                ))
            }
        };
        for (p, col) in names_and_columns(self, space) {
            match col {
                super::Column::Str(_) => warnings.push(format!(
                    "parameter `{p}` has string values: the kernel sees their position in the list (0, 1, ...), where Kernel Tuner defines the string itself"
                )),
                super::Column::Bool(_) => warnings.push(format!(
                    "parameter `{p}` is a bool: the kernel sees 0 or 1, where Kernel Tuner defines False or True"
                )),
                _ => {}
            }
        }
        let source_path = self.find_kernel_file(&k.kernel_file, &mut warnings)?;
        let mut source = std::fs::read_to_string(&source_path).map_err(|source| Error::Io {
            path: source_path.display().to_string(),
            source,
        })?;
        if language == Language::Cuda && !source.contains("extern \"C\"") {
            source = format!("extern \"C\" {{\n{source}\n}}\n");
        }
        let mut options = k.compiler_options.clone();
        if let Some(dir) = source_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            options.push(format!("-I{}", dir.display()));
        }
        let ps = self.problem_size_with(&space.columns)?;
        let problem_size = [0, 1, 2].map(|i| ps.get(i).copied().unwrap_or(1));
        let names = Names {
            names: self.param_names(),
            lists: None,
            problem_size: Some(PyValue::List(ps.iter().map(|&x| PyValue::Int(x)).collect())),
        };
        let block_slots = BLOCK_NAMES.map(|b| names.names.iter().position(|n| *n == b));
        let divs = [&k.grid_div_x, &k.grid_div_y, &k.grid_div_z];
        let mut grid_divs: [Vec<Expr>; 3] = Default::default();
        for (d, list) in divs.iter().enumerate() {
            grid_divs[d] = match list {
                Some(list) => list
                    .iter()
                    .map(|s| {
                        expr::parse(s, &names).map_err(|e| {
                            expr_err(
                                &self.path,
                                format!("GridDiv{} `{s}`", ["X", "Y", "Z"][d]),
                                e,
                            )
                        })
                    })
                    .collect::<Result<_>>()?,
                // Kernel Tuner divides by the block size when no divisor is given.
                None => match block_slots[d] {
                    Some(_) => vec![expr::parse(BLOCK_NAMES[d], &names)
                        .map_err(|e| expr_err(&self.path, BLOCK_NAMES[d], e))?],
                    None => Vec::new(),
                },
            };
        }
        let lists = Names {
            names: self.param_names(),
            lists: Some(
                space
                    .columns
                    .iter()
                    .map(|c| PyValue::List(c.values().into()))
                    .collect(),
            ),
            problem_size: names.problem_size.clone(),
        };
        let mut args = Vec::new();
        for (i, a) in k.arguments.iter().enumerate() {
            let what = format!("argument {} `{}`", i + 1, a.name);
            let elem = element(&a.kind).ok_or_else(|| {
                format_err(
                    &self.path,
                    format!("{what}: type `{}` is not supported; use float, double, int32, uint32, int64, uint64, int8, uint8, int16 or uint16", a.kind),
                )
            })?;
            let constant = a.mem_type.as_deref() == Some("Constant");
            if constant && language == Language::OpenCl {
                warnings.push(format!(
                    "{what} is constant memory: on OpenCL it is the kernel's `__constant` argument, passed as an ordinary buffer"
                ));
            }
            match a.memory_type.as_str() {
                "Vector" => {
                    let size = a.size.as_ref().ok_or_else(|| {
                        format_err(&self.path, format!("{what}: a Vector needs a Size"))
                    })?;
                    let v = json_or_expr(size, &lists, &format!("{what} Size"), &self.path)?;
                    let len = match v {
                        PyValue::Float(x) if x >= 0.0 => x as usize,
                        v => v
                            .as_int()
                            .and_then(|n| usize::try_from(n).ok())
                            .ok_or_else(|| {
                                format_err(
                                    &self.path,
                                    format!("{what}: Size is `{v}`, not a count"),
                                )
                            })?,
                    };
                    let fill = match a.fill_type.as_deref() {
                        Some("Constant") => Fill::Constant(a.fill_value.unwrap_or(0.0)),
                        Some("Random") | None => Fill::Random,
                        Some(other) => {
                            return Err(format_err(
                                &self.path,
                                format!("{what}: FillType `{other}` is not supported; use Constant or Random"),
                            ))
                        }
                    };
                    let output = match &a.output {
                        Some(serde_json::Value::Bool(b)) => *b,
                        Some(v) => v.as_i64().unwrap_or(0) != 0,
                        None => matches!(a.access_type.as_deref(), Some("WriteOnly" | "ReadWrite")),
                    };
                    args.push(ArgPlan::Vector {
                        elem: elem.into(),
                        len,
                        fill,
                        output,
                        symbol: (constant && language == Language::Cuda).then(|| a.name.clone()),
                    });
                }
                "Scalar" => args.push(ArgPlan::Scalar {
                    elem: elem.into(),
                    value: a.fill_value.unwrap_or(0.0),
                }),
                other => {
                    return Err(format_err(
                        &self.path,
                        format!(
                            "{what}: MemoryType `{other}` is not supported; use Vector or Scalar"
                        ),
                    ))
                }
            }
        }
        let repetitions = self
            .file
            .benchmark_config
            .as_ref()
            .and_then(|b| b.get("iterations"))
            .and_then(serde_json::Value::as_u64)
            .map_or(7, |n| n.max(1) as usize);
        Ok(T1Kernel {
            language,
            name: k.kernel_name.clone(),
            source_path,
            source,
            options,
            problem_size,
            repetitions,
            warnings,
            grid_divs,
            block_slots,
            args,
        })
    }

    fn find_kernel_file(&self, file: &str, warnings: &mut Vec<String>) -> Result<PathBuf> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut candidates = vec![PathBuf::from(file), dir.join(file)];
        if let Some(up) = dir.parent() {
            candidates.push(up.join(file));
        }
        if let Some(p) = candidates.iter().find(|p| p.is_file()) {
            return Ok(p.clone());
        }
        // benchmark_hub names a HIP copy (`x.cu.hip`) of a CUDA source it ships as `x.cu`.
        if let Some(stem) = file.strip_suffix(".hip") {
            if let Ok(p) = self.find_kernel_file(stem, warnings) {
                warnings.push(format!(
                    "KernelFile `{file}` does not exist; using the CUDA source `{}`",
                    p.display()
                ));
                return Ok(p);
            }
        }
        Err(Error::Io {
            path: self.path.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "KernelFile `{file}` not found (looked in: {}); put the kernel beside the T1 file",
                    candidates
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        })
    }
}

fn names_and_columns<'a>(
    t1: &'a T1,
    space: &'a T1Space,
) -> impl Iterator<Item = (&'a str, &'a super::Column)> {
    t1.param_names().into_iter().zip(space.columns.iter())
}

fn element(kind: &str) -> Option<&'static str> {
    Some(match kind.to_ascii_lowercase().as_str() {
        "float" | "float32" => "f32",
        "double" | "float64" => "f64",
        "int" | "int32" => "i32",
        "uint" | "uint32" | "unsigned int" => "u32",
        "long" | "int64" => "i64",
        "ulong" | "uint64" => "u64",
        "char" | "int8" => "i8",
        "uchar" | "uint8" | "unsigned char" => "u8",
        "short" | "int16" => "i16",
        "ushort" | "uint16" => "u16",
        _ => return None,
    })
}

macro_rules! by_elem {
    ($elem:expr, $f:ident) => {
        match $elem {
            "f64" => $f!(f64),
            "i32" => $f!(i32),
            "u32" => $f!(u32),
            "i64" => $f!(i64),
            "u64" => $f!(u64),
            "i8" => $f!(i8),
            "u8" => $f!(u8),
            "i16" => $f!(i16),
            "u16" => $f!(u16),
            _ => $f!(f32),
        }
    };
}

impl T1Kernel {
    /// The launch geometry of `config`, as `(grid, block)`: work-groups per dimension and
    /// work-items per work-group. `None` where a divisor did not evaluate to a positive
    /// number.
    pub fn launch(&self, space: &T1Space, config: &Config) -> Option<([usize; 3], [usize; 3])> {
        let env = ConfigEnv {
            raw: config.raw(),
            columns: &space.columns,
        };
        let mut grid = [0; 3];
        for (d, g) in grid.iter_mut().enumerate() {
            *g = grid_dim(self.problem_size[d], &self.grid_divs[d], &env)?;
        }
        Some((grid, block_dims(&self.block_slots, &env)))
    }

    /// The kernel as a [`KernelSpec`] over `space`; random inputs are seeded with `seed`.
    pub fn spec(&self, space: &T1Space, seed: u64) -> KernelSpec {
        let mut spec = KernelSpec::new(self.source.clone(), self.name.clone())
            .repetitions(self.repetitions)
            .define("kernel_tuner", 1);
        for o in &self.options {
            spec = spec.option(o.clone());
        }
        for (d, slot) in self.block_slots.iter().enumerate() {
            if slot.is_none() {
                spec = spec.define(BLOCK_NAMES[d], BLOCK_DEFAULTS[d]);
            }
        }
        let cols = Arc::clone(&space.columns);
        let slots = self.block_slots;
        let block = move |c: &Config| -> [usize; 3] {
            let env = ConfigEnv {
                raw: c.raw(),
                columns: &cols,
            };
            block_dims(&slots, &env)
        };
        let cols = Arc::clone(&space.columns);
        let divs = self.grid_divs.clone();
        let ps = self.problem_size;
        let grid = move |c: &Config| -> [usize; 3] {
            let env = ConfigEnv {
                raw: c.raw(),
                columns: &cols,
            };
            [0, 1, 2].map(|d| grid_dim(ps[d], &divs[d], &env).unwrap_or(0))
        };
        spec = spec.grid(grid).local(block);
        for (i, a) in self.args.iter().enumerate() {
            spec = match a {
                ArgPlan::Vector {
                    elem,
                    len,
                    fill,
                    output,
                    symbol,
                } => {
                    let s = seed.wrapping_add(i as u64);
                    macro_rules! vector {
                        ($t:ty) => {
                            match fill {
                                Fill::Constant(v) => BufferArg::from_vec(vec![*v as $t; *len]),
                                Fill::Random => BufferArg::random::<$t>(*len, s),
                            }
                        };
                    }
                    let b = by_elem!(elem.as_str(), vector);
                    if let Some(name) = symbol {
                        spec = spec.constant(name.clone(), b.clone());
                    }
                    spec.buffer(if *output { b.output() } else { b })
                }
                ArgPlan::Scalar { elem, value } => {
                    macro_rules! scalar {
                        ($t:ty) => {
                            spec.scalar(*value as $t)
                        };
                    }
                    by_elem!(elem.as_str(), scalar)
                }
            };
        }
        spec
    }
}

impl ConfigEnv<'_> {
    fn get_value(&self, slot: usize) -> PyValue {
        expr::Env::get(self, slot)
    }
}

/// The block size: the value of `block_size_x/y/z` where the space has that parameter
/// (0 if it is not a non-negative integer), else Kernel Tuner's default.
fn block_dims(slots: &[Option<usize>; 3], env: &ConfigEnv<'_>) -> [usize; 3] {
    [0, 1, 2].map(|d| match slots[d] {
        Some(s) => env
            .get_value(s)
            .as_int()
            .and_then(|v| usize::try_from(v).ok())
            .unwrap_or(0),
        None => BLOCK_DEFAULTS[d],
    })
}

/// `ceil(problem / product(divisors))`, as Kernel Tuner computes a grid dimension.
fn grid_dim(problem: i64, divs: &[Expr], env: &ConfigEnv<'_>) -> Option<usize> {
    let mut d = 1f64;
    for e in divs {
        let v = e.eval(env).ok()?;
        // Kernel Tuner takes `int()` of each divisor.
        d *= v.as_f64()?.trunc();
    }
    if d <= 0.0 {
        return None;
    }
    let g = (problem as f64 / d).ceil();
    (g >= 0.0 && g.is_finite()).then_some(g as usize)
}
