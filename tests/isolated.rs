//! The process-isolated backend on a real OpenCL device (PoCL in CI, which runs kernels on
//! CPU threads, so a bad kernel can hang or crash the process that runs it): hangs, crashes,
//! build errors and wrong results through `KernelEvaluator<Isolated>`, a whole tuning run over
//! configurations that hang and crash, and the backend conformance suite.
//!
//! Without an OpenCL device the tests print how to get one and pass, unless `CI` is set.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tune::backend::isolated::Isolated;
use tune::backend::{Backend, BufferArg, KernelEvaluator, KernelSpec};
use tune::tuner::Tuner;
use tune::{Error, Evaluator, Failure, Param, Space, SpaceBuilder};

/// The device query: `TUNE_OPENCL_DEVICE` if set, else PoCL.
fn query() -> String {
    std::env::var("TUNE_OPENCL_DEVICE").unwrap_or_else(|_| "portable".into())
}

/// A new isolated backend (each test that kills workers has its own), or `None` to skip.
fn isolated() -> Option<Isolated> {
    let found = match Isolated::opencl(query()) {
        Err(Error::DeviceNotFound { .. }) if std::env::var_os("TUNE_OPENCL_DEVICE").is_none() => {
            Isolated::opencl("")
        }
        other => other,
    };
    match found {
        Ok(d) => Some(d),
        Err(e) if std::env::var_os("CI").is_some() => panic!("CI needs an OpenCL device: {e}"),
        Err(e) => {
            eprintln!(
                "skipped: no OpenCL device ({e}); get one with `apt-get install pocl-opencl-icd`"
            );
            None
        }
    }
}

/// One backend shared by the tests that never kill its worker.
fn shared() -> Option<Arc<Isolated>> {
    static DEV: OnceLock<Option<Arc<Isolated>>> = OnceLock::new();
    DEV.get_or_init(|| isolated().map(Arc::new)).clone()
}

/// `y = 2 x`, or, by `MODE`: 1 loops forever on a volatile store (the compiler cannot see
/// that `n > 0` always holds), 2 writes through a pointer made from `n` (address 4096: never
/// mapped), which kills the process.
const SCALE: &str = r#"
__kernel void scale(const int n, const __global float* x, __global float* y) {
    const int i = get_global_id(0);
#if MODE == 1
    __global volatile float* v = y;
    while (n > 0) { v[0] += 1.0f; }
#elif MODE == 2
    *((__global volatile int*)((ulong)n * 4UL)) = 1;
#endif
    if (i < n) y[i] = 2.0f * x[i];
}
"#;

const N: usize = 1024;

fn space(modes: &[usize], locals: &[usize]) -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::values("MODE", modes.to_vec()))
        .param(Param::<usize>::values("LS", locals.to_vec()))
        .build()
        .unwrap()
}

fn spec(source: &str, factor: f32) -> KernelSpec {
    KernelSpec::new(source, "scale")
        .global(|_| [N])
        .local(|c| [c.get::<usize>(1)])
        .scalar(N as i32)
        .buffer(BufferArg::random::<f32>(N, 3))
        .buffer(BufferArg::zeros::<f32>(N).output())
        .reference(move |a| {
            let x = a.buffer::<f32>(1)?;
            Ok(vec![x
                .iter()
                .map(|v| factor * v)
                .collect::<Vec<f32>>()
                .into()])
        })
        .repetitions(2)
}

/// Evaluates the first configuration with `MODE == mode`.
fn eval(
    ev: &KernelEvaluator<Isolated>,
    s: &Space,
    mode: usize,
) -> Result<tune::Measured<Duration>, Failure> {
    let c = (0..s.len())
        .map(|i| s.get(i).unwrap())
        .find(|c| c.get::<usize>(0) == mode)
        .unwrap();
    let p = ev.prepare(s, &c)?;
    ev.measure(s, &c, p)
}

#[test]
fn a_correct_kernel_measures_and_validates() {
    let Some(dev) = shared() else { return };
    let s = space(&[0], &[16, 64]);
    let ev = KernelEvaluator::<Isolated>::new(dev.clone(), &s, spec(SCALE, 2.0)).unwrap();
    for i in 0..s.len() {
        let c = s.get(i).unwrap();
        let m = ev.measure(&s, &c, ev.prepare(&s, &c).unwrap()).unwrap();
        assert_eq!(m.samples.len(), 2);
        assert!(m.samples.iter().all(|&t| t > 0.0));
        assert!(m.validation.is_some());
    }
    assert!(ev.device().contains("opencl"), "{}", ev.device());
    assert_ne!(dev.worker_pid(), Some(std::process::id()));
}

#[test]
fn a_build_error_is_a_compile_failure_with_the_log() {
    let Some(dev) = shared() else { return };
    let s = space(&[0], &[16]);
    let ev = KernelEvaluator::<Isolated>::new(
        dev,
        &s,
        spec("__kernel void scale(int n) { this is not C; }", 2.0),
    )
    .unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::Compile(log)) => {
            assert!(log.contains("-DMODE=0"), "{log}");
            assert!(log.to_lowercase().contains("error"), "{log}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_result_is_caught() {
    let Some(dev) = shared() else { return };
    let s = space(&[0], &[16]);
    let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 3.0)).unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::WrongResult(m)) => assert!(m.contains("elements differ"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hanging_kernel_times_out_and_the_next_configuration_measures() {
    let Some(dev) = isolated() else { return };
    let dev = dev.hang_timeout(Duration::from_secs(2));
    let s = space(&[0, 1], &[16]);
    let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
    let first = ev.backend().worker_pid();
    let t = Instant::now();
    match eval(&ev, &s, 1) {
        Err(Failure::Timeout(d)) => assert!(d >= Duration::from_secs(2), "{d:?}"),
        other => panic!("{other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let m = eval(&ev, &s, 0).unwrap();
    assert!(m.validation.is_some());
    assert_eq!(ev.backend().restarts(), 1);
    assert_ne!(ev.backend().worker_pid(), first);
}

#[test]
fn a_crashing_kernel_is_a_launch_failure_and_the_next_configuration_measures() {
    let Some(dev) = isolated() else { return };
    let s = space(&[0, 2], &[16]);
    let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
    // A configuration measured before the crash: its kernel is compiled again afterwards.
    eval(&ev, &s, 0).unwrap();
    match eval(&ev, &s, 2) {
        Err(Failure::Launch(m)) => {
            assert!(m.contains("the worker process died"), "{m}");
            assert!(m.contains("signal"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    let m = eval(&ev, &s, 0).unwrap();
    assert!(m.validation.is_some());
    assert_eq!(ev.backend().restarts(), 1);
}

#[test]
fn a_tuning_run_survives_hangs_and_crashes() {
    let Some(dev) = isolated() else { return };
    let dev = dev.hang_timeout(Duration::from_secs(2));
    let s = space(&[0, 1, 2], &[16, 64]);
    let ev = KernelEvaluator::<Isolated>::new(dev, &s, spec(SCALE, 2.0)).unwrap();
    let r = Tuner::new(s, ev)
        .progress(false)
        .batch(2)
        .name("isolated")
        .run()
        .unwrap();
    assert_eq!(r.evaluations, 6);
    assert_eq!(r.valid, 2, "{:?}", r.failures);
    assert_eq!(r.failures.get("timeout"), Some(&2), "{:?}", r.failures);
    assert_eq!(r.failures.get("launch"), Some(&2), "{:?}", r.failures);
    assert_eq!(r.best.config.get::<usize>(0), 0);
    let detail = r
        .records
        .iter()
        .filter(|rec| rec.status == "launch")
        .filter_map(|rec| rec.detail.clone())
        .collect::<Vec<_>>();
    assert!(detail.iter().all(|d| d.contains("died")), "{detail:?}");
}

tune::testgen_backend!(
    Isolated,
    shared(),
    SCALE,
    "__kernel void scale(const int n) { syntax error }"
);
