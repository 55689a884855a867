//! The backend conformance suite, written once and instantiated for every backend.

/// Generates the backend conformance tests for a [`Backend`] type: compile, launch, device
/// timing, build errors, wrong results and device limits, through [`KernelEvaluator`].
///
/// Arguments: the backend type; an expression giving `Option<Arc<Backend>>` (`None` skips the
/// tests, e.g. when no device is present); the source of a kernel
/// `scale(int n, const float* x, float* y)` that sets `y[i] = 2 * x[i]` for `i < n`, in the
/// backend's language; and a source that does not compile.
///
/// ```ignore
/// tune::testgen_backend!(OpenCl, device(), OPENCL_SCALE, "__kernel void scale( {");
/// ```
#[macro_export]
macro_rules! testgen_backend {
    ($backend:ty, $make:expr, $scale:expr, $broken:expr) => {
        mod backend_conformance {
            #![allow(
                clippy::unwrap_used,
                clippy::expect_used,
                clippy::panic,
                unused_imports
            )]
            use super::*;
            use $crate::backend::{Backend as _, BufferArg, KernelEvaluator, KernelSpec};
            use $crate::{Evaluator as _, Failure};

            const N: usize = 1000;

            fn make() -> ::core::option::Option<::std::sync::Arc<$backend>> {
                $make
            }

            fn space() -> $crate::Space {
                $crate::SpaceBuilder::new()
                    .param($crate::Param::<usize>::values("UNUSED", [1]))
                    .build()
                    .unwrap()
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

            fn eval(
                b: ::std::sync::Arc<$backend>,
                spec: KernelSpec,
            ) -> ::core::result::Result<$crate::Measured<::std::time::Duration>, Failure> {
                let s = space();
                let ev = KernelEvaluator::<$backend>::new(b, &s, spec).unwrap();
                let c = s.get(0).unwrap();
                let p = ev.prepare(&s, &c)?;
                ev.measure(&s, &c, p)
            }

            #[test]
            fn conformance_compiles_launches_and_times() {
                let Some(b) = make() else { return };
                let m = eval(b.clone(), spec($scale, 2.0).repetitions(4)).unwrap();
                assert_eq!(m.samples.len(), 4);
                assert!(m.samples.iter().all(|&t| t > 0.0), "{:?}", m.samples);
                assert!(m.validation.is_some());
                // Inputs are restored: a second evaluation sees the same inputs.
                assert!(eval(b.clone(), spec($scale, 2.0)).is_ok());
                // Back-to-back launches: one device time per sample, divided per launch.
                let m = eval(b, spec($scale, 2.0).launches_per_sample(3).repetitions(2)).unwrap();
                assert_eq!(m.samples.len(), 2);
                assert!(m.samples.iter().all(|&t| t > 0.0), "{:?}", m.samples);
            }

            #[test]
            fn conformance_build_errors_are_compile_failures() {
                let Some(b) = make() else { return };
                match eval(b, spec($broken, 2.0)) {
                    Err(Failure::Compile(log)) => assert!(!log.is_empty()),
                    other => panic!("expected a compile failure, got {other:?}"),
                }
            }

            #[test]
            fn conformance_wrong_results_are_caught() {
                let Some(b) = make() else { return };
                assert!(matches!(
                    eval(b, spec($scale, 3.0)),
                    Err(Failure::WrongResult(_))
                ));
            }

            #[test]
            fn conformance_limits_are_invalid() {
                let Some(b) = make() else { return };
                let max = b.device().max_work_group_size.max(1);
                assert!(matches!(
                    eval(b.clone(), spec($scale, 2.0).local(move |_| [2 * max])),
                    Err(Failure::Invalid(_))
                ));
                let lm = b.device().local_mem_bytes;
                assert!(matches!(
                    eval(b, spec($scale, 2.0).static_local_memory(move |_| lm + 1)),
                    Err(Failure::Invalid(_))
                ));
            }
        }
    };
}
