//! The OpenCL backend on a real device (PoCL in CI): evaluator behaviour, every failure kind,
//! validation, and each case study with an OpenCL kernel end to end at small sizes and short
//! budgets (`case_studies`, written once for every backend).
//!
//! Without an OpenCL device the tests are reported as ignored (the runner says how to get
//! one), unless `CI` is set: then they fail. They run one at a time (see `harness`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod build_processes;
mod case_studies;
#[path = "../examples/common/mod.rs"]
mod common;
mod harness;
mod kernel_checks;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use common::cases::copy::Copy;
use common::{Language, Study, Target};
use tune::backend::opencl::OpenCl;
use tune::backend::{Backend, BufferArg, KernelEvaluator, KernelSpec, ReferenceKernel};
use tune::evaluate::Cause;
use tune::{Error, Evaluator, Failure, Param, Space, SpaceBuilder};

/// The device: `TUNE_OPENCL_DEVICE` if set, else PoCL if present, else the first one.
fn probe() -> harness::Probe<Arc<OpenCl>> {
    let found = match std::env::var("TUNE_OPENCL_DEVICE") {
        Ok(q) => OpenCl::select(&q),
        Err(_) => OpenCl::select("portable").or_else(|_| OpenCl::first()),
    };
    let found = found.map(Arc::new).map_err(|e| e.to_string());
    harness::Probe::new("opencl", found, "CI")
}

fn one_param() -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::values("WPT", [1, 2]))
        .build()
        .unwrap()
}

const N: usize = 1024;

/// The copy case's spec around `source`, at a local size of 16 (the space is [`one_param`]).
fn copy_spec(source: &str) -> KernelSpec {
    Copy { n: N }
        .spec(&Target::without_device(Language::OpenCl), source)
        .unwrap()
        .local(|_| [16])
}

fn eval(
    ev: &KernelEvaluator<OpenCl>,
    s: &Space,
    i: u128,
) -> Result<tune::Measured<Duration>, Failure> {
    let c = s.get(i).unwrap();
    let p = ev.prepare(s, &c)?;
    ev.measure(s, &c, p)
}

fn device_listing_and_selection(dev: Arc<OpenCl>) {
    let all = OpenCl::devices().unwrap();
    assert!(!all.is_empty());
    assert!(all.iter().any(|d| d.name == dev.device().name));
    let by_index = OpenCl::by_index(all[0].platform_index, all[0].device_index).unwrap();
    assert_eq!(by_index.device().name, all[0].name);
    match OpenCl::select("no such device, surely") {
        Err(Error::DeviceNotFound { available, .. }) => {
            assert!(available.contains(&all[0].name), "{available}")
        }
        other => panic!("{other:?}"),
    }
    let info = dev.device();
    assert!(info.max_work_group_size > 0 && info.local_mem_bytes > 0);
    assert!(dev.device().describe().contains("opencl"));
}

fn measures_validates_and_keeps_samples(dev: Arc<OpenCl>) {
    let s = one_param();
    let ev = KernelEvaluator::<OpenCl>::new(
        dev,
        &s,
        copy_spec(include_str!("../kernels/copy.cl")).repetitions(3),
    )
    .unwrap();
    for i in 0..s.len() {
        let m = eval(&ev, &s, i).unwrap();
        assert_eq!(m.samples.len(), 3);
        assert!(m.samples.iter().all(|&t| t > 0.0));
        assert!(m.cost > Duration::ZERO);
        assert!(m.validation.is_some());
    }
    assert!(ev.device().contains("opencl"));
}

fn build_errors_keep_the_log(dev: Arc<OpenCl>) {
    let s = one_param();
    let ev = KernelEvaluator::<OpenCl>::new(
        dev,
        &s,
        copy_spec("__kernel void copy(int n) { this is not C; }"),
    )
    .unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::Compile(log)) => {
            assert!(log.contains("-DWPT=1"), "{log}");
            assert!(log.to_lowercase().contains("error"), "{log}");
        }
        other => panic!("{other:?}"),
    }
}

fn launch_errors_are_recorded(dev: Arc<OpenCl>) {
    let s = one_param();
    // `n` is an int in the kernel; an 8-byte scalar is rejected when the argument is set.
    let spec = KernelSpec::new(include_str!("../kernels/copy.cl"), "copy")
        .global(|c| [N / c.get::<usize>(0)])
        .scalar(N as i64)
        .buffer(BufferArg::random::<f32>(N, 1))
        .buffer(BufferArg::zeros::<f32>(N));
    let ev = KernelEvaluator::<OpenCl>::new(dev, &s, spec).unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::Launch(m)) => assert!(m.contains("argument 0"), "{m}"),
        other => panic!("{other:?}"),
    }
}

fn wrong_results_are_caught(dev: Arc<OpenCl>) {
    let s = one_param();
    // Copies only the first half when WPT = 2: wrong.
    let src = include_str!("../kernels/copy.cl").replace("w < WPT", "w < 1");
    let ev = KernelEvaluator::<OpenCl>::new(dev, &s, copy_spec(&src)).unwrap();
    assert!(eval(&ev, &s, 0).is_ok());
    match eval(&ev, &s, 1) {
        Err(Failure::WrongResult(m)) => assert!(m.contains("512 of 1024"), "{m}"),
        other => panic!("{other:?}"),
    }
}

fn device_limits_are_rejected_before_compiling(dev: Arc<OpenCl>) {
    let s = one_param();
    let max = dev.device().max_work_group_size;
    let lm = dev.device().local_mem_bytes;
    let ev = KernelEvaluator::<OpenCl>::new(
        dev.clone(),
        &s,
        copy_spec("not even compiled")
            .local(move |_| [2 * max])
            .round_up_global(true),
    )
    .unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::Rejected {
            cause: Cause::WorkGroupSize,
            detail: m,
        }) => assert!(m.contains("exceeds the device limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    let ev = KernelEvaluator::<OpenCl>::new(
        dev.clone(),
        &s,
        copy_spec("not even compiled").local_buffer::<f32>(move |_| lm),
    )
    .unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::Rejected {
            cause: Cause::LocalMemory,
            detail: m,
        }) => assert!(m.contains("local memory"), "{m}"),
        other => panic!("{other:?}"),
    }
}

fn reference_kernel_validation(dev: Arc<OpenCl>) {
    let s = one_param();
    let spec = copy_spec(include_str!("../kernels/copy.cl"));
    let spec = spec.reference_kernel(
        ReferenceKernel::new(include_str!("../kernels/copy.cl"), "copy")
            .define("WPT", 1)
            .global([N]),
    );
    let ev = KernelEvaluator::<OpenCl>::new(dev, &s, spec).unwrap();
    assert!(ev.expected().is_some());
    assert!(eval(&ev, &s, 1).is_ok());
}

const SCALE: &str = "__kernel void scale(const int n, const __global float* x, __global float* y) {
        const int i = get_global_id(0);
        if (i < n) y[i] = 2.0f * x[i];
    }";

const BROKEN: &str = "__kernel void scale(const int n) { syntax error }";

fn main() -> ExitCode {
    let probe = probe();
    let mut suite = harness::Suite::new();
    let tests: [harness::DeviceTest<Arc<OpenCl>>; 7] = [
        ("device_listing_and_selection", device_listing_and_selection),
        (
            "measures_validates_and_keeps_samples",
            measures_validates_and_keeps_samples,
        ),
        ("build_errors_keep_the_log", build_errors_keep_the_log),
        ("launch_errors_are_recorded", launch_errors_are_recorded),
        ("wrong_results_are_caught", wrong_results_are_caught),
        (
            "device_limits_are_rejected_before_compiling",
            device_limits_are_rejected_before_compiling,
        ),
        ("reference_kernel_validation", reference_kernel_validation),
    ];
    for (name, f) in tests
        .into_iter()
        .chain(case_studies::tests(Language::OpenCl))
        .chain(kernel_checks::tests())
        .chain(build_processes::tests())
    {
        suite.device(&probe, name, f);
    }
    harness::conformance(&mut suite, &probe, SCALE, BROKEN);
    suite.run()
}
