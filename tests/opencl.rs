//! The OpenCL backend on a real device (PoCL in CI): evaluator behaviour, every failure kind,
//! validation, and each case study end to end at small sizes and short budgets.
//!
//! Without an OpenCL device the tests are reported as ignored (the runner says how to get
//! one), unless `CI` is set: then they fail. They run one at a time (see `harness`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/common/mod.rs"]
mod common;
mod harness;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tune::backend::opencl::OpenCl;
use tune::backend::{Backend, BufferArg, KernelEvaluator, KernelSpec, ReferenceKernel, Tolerance};
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

/// A compile time limit that no compilation reaches.
const NO_COMPILE_LIMIT: Duration = Duration::from_secs(24 * 3600);

fn one_param() -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::values("WPT", [1, 2]))
        .build()
        .unwrap()
}

const N: usize = 1024;

fn copy_spec(source: &str) -> KernelSpec {
    KernelSpec::new(source, "copy")
        .global(|c| [N / c.get::<usize>(0)])
        .local(|_| [16])
        .scalar(N as i32)
        .buffer(BufferArg::random::<f32>(N, 1))
        .buffer(BufferArg::zeros::<f32>(N).output())
        .reference(|a| Ok(vec![a.buffer::<f32>(1)?.to_vec().into()]))
        .tolerance(Tolerance::Exact)
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
        Err(Failure::Invalid(m)) => assert!(m.contains("exceeds the device limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    let ev = KernelEvaluator::<OpenCl>::new(
        dev.clone(),
        &s,
        copy_spec("not even compiled").local_buffer::<f32>(move |_| lm),
    )
    .unwrap();
    match eval(&ev, &s, 0) {
        Err(Failure::Invalid(m)) => assert!(m.contains("local memory"), "{m}"),
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

fn run_case(dev: Arc<OpenCl>, case: common::Case, n: u64) -> tune::TuningResult<Duration> {
    // No limit that a busy compiler could hit: no time budget for the run, no compile time
    // limit (these tests check results, not budgets).
    let case = common::Case {
        spec: case.spec.compile_time_limit(NO_COMPILE_LIMIT),
        ..case
    };
    let budget = common::Budget {
        evaluations: n,
        seconds: 3600.0,
    };
    let options = common::Options {
        progress: false,
        record: false,
        ..common::Options::new(7)
    };
    let (_, r) = common::tune_case(dev, case, budget, options).unwrap();
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", r.records);
    assert_eq!(r.failures.get("compile"), None, "{:?}", r.records);
    assert!(r.valid > 0);
    r
}

fn case_copy(dev: Arc<OpenCl>) {
    // The whole space (15 configurations), then the run stops by itself.
    let r = run_case(dev, common::cases::copy(4096).unwrap(), 100);
    assert_eq!(r.evaluations, 15);
    // Every evaluation is in the log, from which a killed run resumes, and after them the
    // re-measurement of the finalists.
    let log = std::fs::read_to_string(r.log.unwrap()).unwrap();
    let again = log
        .lines()
        .filter(|l| l.contains(r#""remeasured":"#))
        .count();
    assert_eq!(
        (log.lines().count() - again, again),
        (15, r.finalists.len())
    );
}

fn case_saxpy(dev: Arc<OpenCl>) {
    let case = common::cases::saxpy(1 << 12, 1).unwrap();
    assert_eq!(case.space.len(), 13 * 14 / 2);
    run_case(dev, case, 6);
}

fn case_conv(dev: Arc<OpenCl>) {
    run_case(dev, common::cases::conv(64, 32, 3).unwrap(), 4);
}

fn case_gemm(dev: Arc<OpenCl>) {
    assert_eq!(
        common::cases::gemm(128, 128, 32, common::cases::Check::Host)
            .unwrap()
            .space
            .len(),
        241_600
    );
    run_case(
        dev,
        common::cases::gemm(64, 64, 32, common::cases::Check::Host).unwrap(),
        3,
    );
}

fn case_xgemm_direct(dev: Arc<OpenCl>) {
    // IS3: 50x1 * 1x64.
    let case =
        common::cases::xgemm_direct(50, 64, 1, dev.device(), common::cases::Check::Host).unwrap();
    run_case(dev, case, 4);
}

fn xgemm_direct_configurations_are_right_at_odd_sizes(dev: Arc<OpenCl>) {
    // 23 x 37 x 70: partial tiles in m, n and k, and several k tiles (with and without the
    // register prefetch of the next tile, which small per-work-item tiles switch on).
    let case =
        common::cases::xgemm_direct(23, 37, 70, dev.device(), common::cases::Check::Host).unwrap();
    let (info, spec) = case.split();
    let spec = spec
        .repetitions(1)
        .warmups(0)
        .compile_time_limit(NO_COMPILE_LIMIT);
    let ev = KernelEvaluator::<OpenCl>::new(dev, &info.space, spec).unwrap();
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(3);
    let (mut measured, mut prefetch) = (0, 0);
    while measured < 8 {
        let c = info.space.sample(&mut rng).unwrap();
        let (wgd, mdimcd, ndimcd): (usize, usize, usize) = (c.get(0), c.get(1), c.get(2));
        if wgd < 4 || (wgd / mdimcd) * (wgd / ndimcd) > 64 {
            continue; // keep PoCL's compile times short
        }
        match ev
            .prepare(&info.space, &c)
            .and_then(|p| ev.measure(&info.space, &c, p))
        {
            Ok(_) => {}
            // Over a device limit.
            Err(Failure::Invalid(_)) => continue,
            Err(f) => panic!("{}: {f}", info.space.describe(&c)),
        }
        measured += 1;
        prefetch += usize::from((wgd / mdimcd) * (wgd / ndimcd) <= 32);
    }
    assert!(
        prefetch > 0 && prefetch < measured,
        "{prefetch} of {measured}"
    );
}

const SCALE: &str = "__kernel void scale(const int n, const __global float* x, __global float* y) {
        const int i = get_global_id(0);
        if (i < n) y[i] = 2.0f * x[i];
    }";

const BROKEN: &str = "__kernel void scale(const int n) { syntax error }";

fn main() -> ExitCode {
    let probe = probe();
    let mut suite = harness::Suite::new();
    let tests: [harness::DeviceTest<Arc<OpenCl>>; 13] = [
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
        ("case_xgemm_direct", case_xgemm_direct),
        (
            "xgemm_direct_configurations_are_right_at_odd_sizes",
            xgemm_direct_configurations_are_right_at_odd_sizes,
        ),
        ("case_copy", case_copy),
        ("case_saxpy", case_saxpy),
        ("case_conv", case_conv),
        ("case_gemm", case_gemm),
    ];
    for (name, f) in tests {
        suite.device(&probe, name, f);
    }
    harness::conformance(&mut suite, &probe, SCALE, BROKEN);
    suite.run()
}
