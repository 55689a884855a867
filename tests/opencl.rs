//! The OpenCL backend on a real device (PoCL in CI): evaluator behaviour, every failure kind,
//! validation, and each case study end to end at small sizes and short budgets.
//!
//! Without an OpenCL device the tests print how to get one and pass, unless `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/common/mod.rs"]
mod common;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tune::backend::opencl::OpenCl;
use tune::backend::{Backend, BufferArg, KernelEvaluator, KernelSpec, ReferenceKernel, Tolerance};
use tune::{Error, Evaluator, Failure, Param, Space, SpaceBuilder};

/// The device: `TUNE_OPENCL_DEVICE` if set, else PoCL if present, else the first one.
fn device() -> Option<Arc<OpenCl>> {
    static DEV: OnceLock<Option<Arc<OpenCl>>> = OnceLock::new();
    DEV.get_or_init(|| {
        let found = match std::env::var("TUNE_OPENCL_DEVICE") {
            Ok(q) => OpenCl::select(&q),
            Err(_) => OpenCl::select("portable").or_else(|_| OpenCl::first()),
        };
        match found {
            Ok(d) => Some(Arc::new(d)),
            Err(e) if std::env::var_os("CI").is_some() => {
                panic!("CI needs an OpenCL device: {e}")
            }
            Err(e) => {
                eprintln!(
                    "skipped: no OpenCL device ({e}); get one with `apt-get install pocl-opencl-icd`"
                );
                None
            }
        }
    })
    .clone()
}

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

#[test]
fn device_listing_and_selection() {
    let Some(dev) = device() else { return };
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

#[test]
fn measures_validates_and_keeps_samples() {
    let Some(dev) = device() else { return };
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

#[test]
fn build_errors_keep_the_log() {
    let Some(dev) = device() else { return };
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

#[test]
fn launch_errors_are_recorded() {
    let Some(dev) = device() else { return };
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

#[test]
fn wrong_results_are_caught() {
    let Some(dev) = device() else { return };
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

#[test]
fn device_limits_are_rejected_before_compiling() {
    let Some(dev) = device() else { return };
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

#[test]
fn reference_kernel_validation() {
    let Some(dev) = device() else { return };
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

fn run_case(case: common::Case, n: u64) -> tune::TuningResult<Duration> {
    let dev = device().unwrap();
    // No time limit that could cut the run short on a slow compiler (NVIDIA's OpenCL with
    // the tests compiling in parallel).
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

#[test]
fn case_copy() {
    if device().is_none() {
        return;
    }
    // The whole space (15 configurations), then the run stops by itself.
    let r = run_case(common::cases::copy(4096).unwrap(), 100);
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

#[test]
fn case_saxpy() {
    if device().is_none() {
        return;
    }
    let case = common::cases::saxpy(1 << 12, 1).unwrap();
    assert_eq!(case.space.len(), 13 * 14 / 2);
    run_case(case, 6);
}

#[test]
fn case_conv() {
    if device().is_none() {
        return;
    }
    run_case(common::cases::conv(64, 32, 3).unwrap(), 4);
}

#[test]
fn case_gemm() {
    if device().is_none() {
        return;
    }
    assert_eq!(
        common::cases::gemm(128, 128, 32, common::cases::Check::Host)
            .unwrap()
            .space
            .len(),
        241_600
    );
    run_case(
        common::cases::gemm(64, 64, 32, common::cases::Check::Host).unwrap(),
        3,
    );
}

#[test]
fn case_xgemm_direct() {
    let Some(dev) = device() else { return };
    // IS3: 50x1 * 1x64.
    let case =
        common::cases::xgemm_direct(50, 64, 1, dev.device(), common::cases::Check::Host).unwrap();
    run_case(case, 4);
}

tune::testgen_backend!(
    OpenCl,
    device(),
    "__kernel void scale(const int n, const __global float* x, __global float* y) {
        const int i = get_global_id(0);
        if (i < n) y[i] = 2.0f * x[i];
    }",
    "__kernel void scale(const int n) { syntax error }"
);

#[test]
fn xgemm_direct_configurations_are_right_at_odd_sizes() {
    use tune::Evaluator;
    let Some(dev) = device() else { return };
    // 23 x 37 x 70: partial tiles in m, n and k, and several k tiles (with and without the
    // register prefetch of the next tile, which small per-work-item tiles switch on).
    let case =
        common::cases::xgemm_direct(23, 37, 70, dev.device(), common::cases::Check::Host).unwrap();
    let (info, spec) = case.split();
    let ev =
        KernelEvaluator::<OpenCl>::new(dev, &info.space, spec.repetitions(1).warmups(0)).unwrap();
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
            // Over a device limit, or a compilation past the case's time limit.
            Err(Failure::Invalid(_) | Failure::Timeout(_)) => continue,
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
