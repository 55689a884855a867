//! The backend conformance suite, written once and run for every backend: compile, launch,
//! device timing, build errors, wrong results and device limits, through
//! [`KernelEvaluator`].
//!
//! [`checks`] lists the checks as plain functions, for a test runner that decides at run time
//! whether a device is there (tune's own GPU tests report them as ignored when it is not);
//! [`testgen_backend!`](crate::testgen_backend) turns them into `#[test]` functions.

use std::sync::Arc;
use std::time::Duration;

use super::{Backend, BufferArg, KernelEvaluator, KernelSpec};
use crate::evaluate::{Cause, Evaluator, Failure, Measured};
use crate::param::Param;
use crate::space::{Space, SpaceBuilder};

/// The kernels of the checks, in the backend's language.
#[derive(Clone, Copy, Debug)]
pub struct Kernels<'a> {
    /// A kernel `scale(int n, const float* x, float* y)` that sets `y[i] = 2 * x[i]` for
    /// `i < n`.
    pub scale: &'a str,
    /// A source that does not compile.
    pub broken: &'a str,
}

/// One conformance check: its name and the function that runs it, which says what went
/// wrong in its error.
pub struct Check<B: Backend> {
    /// The check's name, e.g. `compiles_launches_and_times`.
    pub name: &'static str,
    /// Runs the check on a backend.
    pub run: fn(Arc<B>, Kernels<'_>) -> Result<(), String>,
}

impl<B: Backend> std::fmt::Debug for Check<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every conformance check for backend `B`.
pub fn checks<B: Backend>() -> Vec<Check<B>> {
    vec![
        Check {
            name: "compiles_launches_and_times",
            run: compiles_launches_and_times::<B>,
        },
        Check {
            name: "build_errors_are_compile_failures",
            run: build_errors_are_compile_failures::<B>,
        },
        Check {
            name: "wrong_results_are_caught",
            run: wrong_results_are_caught::<B>,
        },
        Check {
            name: "limits_are_invalid",
            run: limits_are_invalid::<B>,
        },
    ]
}

/// Runs the check called `name` (see [`checks`]).
///
/// # Errors
/// What went wrong, or that there is no such check.
pub fn run<B: Backend>(name: &str, backend: Arc<B>, kernels: Kernels<'_>) -> Result<(), String> {
    let check = checks::<B>()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| format!("no conformance check `{name}`"))?;
    (check.run)(backend, kernels)
}

const N: usize = 1000;

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn spec(source: &str, factor: f32) -> KernelSpec {
    KernelSpec::new(source, "scale")
        .global(|_| [N])
        .local(|_| [8])
        .round_up_global(true)
        .scalar(N as i32)
        .buffer(BufferArg::random::<f32>(N, 5))
        .buffer(BufferArg::zeros::<f32>(N).output())
        .reference(move |a| {
            let x = a.buffer::<f32>(1)?;
            Ok(vec![x
                .iter()
                .map(|v| factor * v)
                .collect::<Vec<f32>>()
                .into()])
        })
}

/// Evaluates the one configuration of a one-parameter space; the outer error is a setup
/// failure (the check fails), the inner result what the evaluator said.
fn eval<B: Backend>(
    backend: Arc<B>,
    spec: KernelSpec,
) -> Result<Result<Measured<Duration>, Failure>, String> {
    let space: Space = SpaceBuilder::new()
        .param(Param::<usize>::values("UNUSED", [1]))
        .build()
        .map_err(|e| e.to_string())?;
    let ev = KernelEvaluator::<B>::new(backend, &space, spec).map_err(|e| e.to_string())?;
    let c = space.get(0).ok_or("the space is empty")?;
    Ok(ev
        .prepare(&space, &c)
        .and_then(|p| ev.measure(&space, &c, p)))
}

fn measured<B: Backend>(backend: Arc<B>, spec: KernelSpec) -> Result<Measured<Duration>, String> {
    eval(backend, spec)?.map_err(|f| format!("expected a measurement, got {f}"))
}

fn compiles_launches_and_times<B: Backend>(b: Arc<B>, k: Kernels<'_>) -> Result<(), String> {
    let m = measured(b.clone(), spec(k.scale, 2.0).repetitions(4))?;
    ensure(m.samples.len() == 4, || {
        format!("{} samples, not 4", m.samples.len())
    })?;
    ensure(m.samples.iter().all(|&t| t > 0.0), || {
        format!("samples not positive: {:?}", m.samples)
    })?;
    ensure(m.validation.is_some(), || {
        "the output was not validated".into()
    })?;
    // Inputs are restored: a second evaluation sees the same inputs.
    measured(b.clone(), spec(k.scale, 2.0))?;
    // Back-to-back launches: one device time per sample, divided per launch.
    let m = measured(b, spec(k.scale, 2.0).launches_per_sample(3).repetitions(2))?;
    ensure(m.samples.len() == 2, || {
        format!("{} samples, not 2", m.samples.len())
    })?;
    ensure(m.samples.iter().all(|&t| t > 0.0), || {
        format!("back-to-back samples not positive: {:?}", m.samples)
    })
}

fn build_errors_are_compile_failures<B: Backend>(b: Arc<B>, k: Kernels<'_>) -> Result<(), String> {
    match eval(b, spec(k.broken, 2.0))? {
        Err(Failure::Compile(log)) => ensure(!log.is_empty(), || "an empty build log".into()),
        other => Err(format!("expected a compile failure, got {other:?}")),
    }
}

fn wrong_results_are_caught<B: Backend>(b: Arc<B>, k: Kernels<'_>) -> Result<(), String> {
    match eval(b, spec(k.scale, 3.0))? {
        Err(Failure::WrongResult(_)) => Ok(()),
        other => Err(format!("expected a wrong result, got {other:?}")),
    }
}

fn limits_are_invalid<B: Backend>(b: Arc<B>, k: Kernels<'_>) -> Result<(), String> {
    let max = b.device().max_work_group_size.max(1);
    match eval(b.clone(), spec(k.scale, 2.0).local(move |_| [2 * max]))? {
        Err(Failure::Rejected {
            cause: Cause::WorkGroupSize,
            ..
        }) => {}
        other => return Err(format!("a work-group of {}: {other:?}", 2 * max)),
    }
    let lm = b.device().local_mem_bytes;
    match eval(b, spec(k.scale, 2.0).static_local_memory(move |_| lm + 1))? {
        Err(Failure::Rejected {
            cause: Cause::LocalMemory,
            ..
        }) => Ok(()),
        other => Err(format!("{} bytes of local memory: {other:?}", lm + 1)),
    }
}

/// Generates the backend conformance tests for a [`Backend`] type as `#[test]` functions in a
/// module `backend_conformance`, one per [`checks`] entry.
///
/// Arguments: the backend type; an expression giving `Option<Arc<Backend>>`; the source of a
/// kernel `scale(int n, const float* x, float* y)` that sets `y[i] = 2 * x[i]` for `i < n`,
/// in the backend's language; and a source that does not compile.
///
/// `None` makes every test return at once, which libtest reports as passed: it cannot mark a
/// test ignored at run time. A test runner that can (tune's own GPU tests use
/// `libtest-mimic`) should call [`checks`] instead and report them as ignored.
///
/// ```ignore
/// tune::testgen_backend!(OpenCl, device(), OPENCL_SCALE, "__kernel void scale( {");
/// ```
#[macro_export]
macro_rules! testgen_backend {
    ($backend:ty, $make:expr, $scale:expr, $broken:expr) => {
        mod backend_conformance {
            #![allow(clippy::panic, unused_imports)]
            use super::*;

            fn run(name: &str) {
                let make = || -> ::core::option::Option<::std::sync::Arc<$backend>> { $make };
                let ::core::option::Option::Some(backend) = make() else {
                    ::std::eprintln!("skipped: no device for `{name}`");
                    return;
                };
                let kernels = $crate::backend::conformance::Kernels {
                    scale: $scale,
                    broken: $broken,
                };
                if let ::core::result::Result::Err(e) =
                    $crate::backend::conformance::run::<$backend>(name, backend, kernels)
                {
                    ::core::panic!("conformance check `{name}`: {e}");
                }
            }

            #[test]
            fn conformance_compiles_launches_and_times() {
                run("compiles_launches_and_times")
            }

            #[test]
            fn conformance_build_errors_are_compile_failures() {
                run("build_errors_are_compile_failures")
            }

            #[test]
            fn conformance_wrong_results_are_caught() {
                run("wrong_results_are_caught")
            }

            #[test]
            fn conformance_limits_are_invalid() {
                run("limits_are_invalid")
            }
        }
    };
}
