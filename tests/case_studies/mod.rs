//! The case studies end to end on a device, written once for every backend: each case
//! whose kernel is written in the backend's language is tuned briefly at a small size
//! (every configuration validated), and XgemmDirect's configurations are checked at odd
//! sizes. `tests/opencl.rs` and `tests/cuda.rs` register them with their device.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

mod dnn_conv;
mod dnn_conv_direct;

use std::sync::Arc;
use std::time::Duration;

use tune::backend::{Backend, KernelEvaluator};
use tune::{Evaluator, TuningResult};

use crate::common::cases::conv::Conv;
use crate::common::cases::copy::Copy;
use crate::common::cases::dnn_conv::DnnConv;
use crate::common::cases::gemm::{Check, Gemm};
use crate::common::cases::kt_matmul::KtMatmul;
use crate::common::cases::saxpy::Saxpy;
use crate::common::cases::xgemm_direct::{self, XgemmDirect};
use crate::common::{self, Case, Language, Study, Target};
use crate::harness::DeviceTest;

/// A compile time limit that no compilation reaches.
pub const NO_COMPILE_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// A test of a case on a backend.
pub type CaseTest<B> = (&'static str, Box<dyn Study>, fn(Arc<B>));

/// The failure messages of a run, for assertion messages.
pub fn failures(r: &TuningResult<Duration>) -> Vec<String> {
    r.records
        .iter()
        .filter(|x| !x.is_ok())
        .map(|x| {
            format!(
                "{} {}: {}",
                x.status,
                x.config,
                x.detail.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Tunes `study` on `backend` for at most `n` evaluations (known good configurations
/// first), without a time budget or compile time limit (these tests check results, not
/// budgets), and checks that no configuration failed to compile or computed a wrong result.
pub fn run_case<B: Backend>(backend: Arc<B>, study: &dyn Study, n: u64) -> TuningResult<Duration> {
    let target = Target::of(backend.as_ref()).unwrap();
    let case = study.case(&target).unwrap();
    let start = study.known_good(&target, &case.space);
    let case = Case {
        spec: case.spec.compile_time_limit(NO_COMPILE_LIMIT),
        ..case
    };
    let budget = common::Budget {
        evaluations: n,
        seconds: 3600.0,
    };
    let options = common::Options {
        start,
        progress: false,
        record: false,
        ..common::Options::new(7)
    };
    let (_, r) = common::tune_case(backend, case, budget, options).unwrap();
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", failures(&r));
    assert_eq!(r.failures.get("compile"), None, "{:?}", failures(&r));
    assert!(r.valid > 0, "{:?}", failures(&r));
    r
}

fn case_copy<B: Backend>(backend: Arc<B>) {
    // The whole space (15 configurations), then the run stops by itself.
    let r = run_case(backend, &Copy { n: 4096 }, 100);
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

fn case_saxpy<B: Backend>(backend: Arc<B>) {
    run_case(backend, &Saxpy::new(1 << 12).min_global(16), 6);
}

fn case_conv<B: Backend>(backend: Arc<B>) {
    run_case(
        backend,
        &Conv {
            w: 64,
            h: 32,
            fs: 3,
        },
        4,
    );
}

/// BEAST's convolution at a small layer (validated against the host convolution); the
/// run's rejections, if any, carry their cause.
fn case_dnn_conv<B: Backend>(backend: Arc<B>) {
    let r = run_case(backend, &DnnConv::new(crate::common::beast::SMALL[1]), 4);
    for status in r.failures.keys() {
        assert!(status.starts_with("invalid: "), "{:?}", failures(&r));
    }
}

fn case_gemm<B: Backend>(backend: Arc<B>) {
    run_case(backend, &Gemm::new(64, 64, 32), 3);
}

fn case_xgemm_direct<B: Backend>(backend: Arc<B>) {
    // IS3: 50x1 * 1x64.
    run_case(backend, &XgemmDirect(Gemm::new(50, 64, 1)), 4);
}

fn case_kt_matmul<B: Backend>(backend: Arc<B>) {
    run_case(backend, &KtMatmul { n: 256 }, 4);
}

/// 8 random XgemmDirect configurations at 23 x 37 x 70 are right: partial tiles in m, n and
/// k, and several k tiles, with and without the register prefetch of the next tile (which
/// small per-work-item tiles switch on).
fn xgemm_direct_configurations_are_right_at_odd_sizes<B: Backend>(backend: Arc<B>) {
    use xgemm_direct::{MDIMCD, NDIMCD, WGD};
    let target = Target::of(backend.as_ref()).unwrap();
    let study = XgemmDirect(Gemm::new(23, 37, 70).check(Check::Host));
    let (info, spec) = study.case(&target).unwrap().split();
    let spec = spec
        .repetitions(1)
        .warmups(0)
        .launches_per_sample(1)
        .compile_time_limit(NO_COMPILE_LIMIT);
    let ev = KernelEvaluator::<B>::new(backend, &info.space, spec).unwrap();
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(3);
    let (mut measured, mut prefetch) = (0, 0);
    while measured < 8 {
        let c = info.space.sample(&mut rng).unwrap();
        let (wgd, mdimcd, ndimcd): (usize, usize, usize) =
            (c.get(WGD), c.get(MDIMCD), c.get(NDIMCD));
        if wgd < 4 || (wgd / mdimcd) * (wgd / ndimcd) > 64 {
            continue; // keep PoCL's compile times short
        }
        match ev
            .prepare(&info.space, &c)
            .and_then(|p| ev.measure(&info.space, &c, p))
        {
            Ok(_) => {}
            // Over a device limit.
            Err(f) if f.is_invalid() => continue,
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

/// The case tests for a backend compiling `language`: one per case written in it.
pub fn tests<B: Backend>(language: Language) -> Vec<DeviceTest<Arc<B>>> {
    let cases: [CaseTest<B>; 7] = [
        ("case_copy", Box::new(Copy { n: 1 }), case_copy::<B>),
        ("case_saxpy", Box::new(Saxpy::new(1)), case_saxpy::<B>),
        (
            "case_conv",
            Box::new(Conv { w: 1, h: 1, fs: 1 }),
            case_conv::<B>,
        ),
        ("case_gemm", Box::new(Gemm::new(1, 1, 1)), case_gemm::<B>),
        (
            "case_dnn_conv",
            Box::new(DnnConv::new(crate::common::beast::SMALL[0])),
            case_dnn_conv::<B>,
        ),
        (
            "case_xgemm_direct",
            Box::new(XgemmDirect(Gemm::new(1, 1, 1))),
            case_xgemm_direct::<B>,
        ),
        (
            "case_kt_matmul",
            Box::new(KtMatmul { n: 1 }),
            case_kt_matmul::<B>,
        ),
    ];
    let mut out: Vec<DeviceTest<Arc<B>>> = cases
        .into_iter()
        .filter(|(_, study, _)| study.sources().get(language).is_some())
        .map(|(name, _, f)| (name, f))
        .collect();
    out.push((
        "dnn_conv_loads_and_offsets_are_right",
        dnn_conv::dnn_conv_loads_and_offsets_are_right::<B>,
    ));
    out.push((
        "dnn_conv_backward_filter_is_right",
        dnn_conv::dnn_conv_backward_filter_is_right::<B>,
    ));
    out.push((
        "dnn_conv_staged_patch_is_right",
        dnn_conv::dnn_conv_staged_patch_is_right::<B>,
    ));
    out.push((
        "dnn_conv_tap_masks_are_right",
        dnn_conv::dnn_conv_tap_masks_are_right::<B>,
    ));
    out.push((
        "dnn_conv_pixel_tiles_are_right",
        dnn_conv::dnn_conv_pixel_tiles_are_right::<B>,
    ));
    out.push((
        "dnn_conv_direct_is_right",
        dnn_conv_direct::dnn_conv_direct_is_right::<B>,
    ));
    out.push((
        "dnn_conv_validates_the_tuned_configuration_once",
        dnn_conv::dnn_conv_validates_the_tuned_configuration_once::<B>,
    ));
    out.push((
        "xgemm_direct_configurations_are_right_at_odd_sizes",
        xgemm_direct_configurations_are_right_at_odd_sizes::<B>,
    ));
    out
}
