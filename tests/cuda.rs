//! CUDA backend tests. Without a usable CUDA device the GPU tests are reported as ignored,
//! unless `TUNE_REQUIRE_CUDA=1` (then they fail). On the GPU machine:
//! `TUNE_REQUIRE_CUDA=1 cargo test --release --features cuda --test cuda`
//!
//! Besides the tests below, each case study with a CUDA kernel runs end to end at a small
//! size (`case_studies`, written once for every backend).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod case_studies;
#[path = "../examples/common/mod.rs"]
mod common;
mod harness;
mod kernel_checks;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use case_studies::failures;
use common::cases::gemm::{Check, Gemm, Layout};
use common::cases::saxpy::{self, Saxpy};
use common::cases::xgemm_direct::XgemmDirect;
use common::cases::{floats, Language, Study, Target};
use common::cuda as cc;
use tune::abort::Evaluations;
use tune::backend::{BufferArg, HostData, KernelEvaluator, KernelSpec, Tolerance};
use tune::cuda::Cuda;
use tune::evaluate::Cause;
use tune::search::Random;
use tune::{Error, Evaluator, Failure, Space, Tuner, TuningResult};

/// The backend, or why there is none (the GPU tests are then ignored, or fail with
/// `TUNE_REQUIRE_CUDA=1`).
fn probe() -> harness::Probe<Arc<Cuda>> {
    let gpu = Cuda::open(0).map(Arc::new).map_err(|e| e.to_string());
    harness::Probe::new("cuda", gpu, "TUNE_REQUIRE_CUDA")
}

/// The machine has no CUDA driver library: what the no-driver test needs.
fn no_driver() -> harness::Probe<()> {
    // SAFETY: only tries to load the library.
    let driver = unsafe { tune::cuda::cudarc::driver::sys::is_culib_present() };
    let absent = if driver {
        Err("the CUDA driver is installed here; the GPU tests cover this machine".into())
    } else {
        Ok(())
    };
    harness::Probe::optional("no-driver", absent)
}

fn missing_cuda_is_backend_unavailable(_: ()) {
    match Cuda::open(0) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, "cuda");
            assert!(reason.contains("libcuda"), "{reason}");
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("opened a CUDA device without libcuda"),
    }
    assert!(Cuda::open("H200").is_err());
}

fn target(cuda: &Cuda) -> Target {
    Target::of(cuda).unwrap()
}

/// The saxpy case's space at `n`, and its spec around `source`.
fn saxpy_case(cuda: &Cuda, n: usize, source: &str) -> (Space, KernelSpec) {
    let study = Saxpy::new(n);
    let t = target(cuda);
    (study.space(&t).unwrap(), study.spec(&t, source).unwrap())
}

fn saxpy_measures_and_validates_on_the_gpu(cuda: Arc<Cuda>) {
    let n = 1 << 16;
    let t = target(&cuda);
    let (space, spec) = saxpy_case(&cuda, n, Saxpy::new(n).source(&t).unwrap());
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, spec).unwrap();
    let mut valid = 0;
    let fits = |c: &tune::Config| (32..=1024).contains(&c.get::<usize>(saxpy::LS));
    for c in space.iter().filter(fits).take(12) {
        let p = eval.prepare(&space, &c).unwrap();
        let m = eval.measure(&space, &c, p).unwrap();
        assert!(m.cost.as_secs_f64() > 0.0);
        assert_eq!(m.samples.len(), 10);
        assert!(m.validation.is_some());
        valid += 1;
    }
    assert!(valid > 0);
    assert!(eval.device().contains("cuda"));
}

fn every_failure_kind_is_recorded(cuda: Arc<Cuda>) {
    let n = 1 << 12;
    let (space, spec) = saxpy_case(&cuda, n, include_str!("../kernels/saxpy.cu"));
    let c = space
        .config_from_values([("WPT", tune::Value::Int(1)), ("LS", tune::Value::Int(128))])
        .unwrap();

    // Compile error: the log comes back.
    let bad = KernelSpec::new("extern \"C\" __global__ void saxpy() { nope; }", "saxpy")
        .global(move |_| [n])
        .local(|_| [128]);
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, bad).unwrap();
    match eval.prepare(&space, &c) {
        Err(Failure::Compile(log)) => assert!(log.contains("nope"), "{log}"),
        other => panic!("expected a compile failure, got {other:?}"),
    }

    // Over the kernel's own limit: __launch_bounds__(64) and a block of 128.
    let bounded = KernelSpec::new(
        "extern \"C\" __global__ void __launch_bounds__(64) saxpy(float* y) { y[threadIdx.x] = 1.0f; }",
        "saxpy",
    )
    .global(|_| [128])
    .local(|_| [128])
    .buffer(BufferArg::zeros::<f32>(128));
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, bounded).unwrap();
    match eval.prepare(&space, &c) {
        Err(Failure::Rejected {
            cause: Cause::WorkGroupSize,
            detail: m,
        }) => assert!(m.contains("limit"), "{m}"),
        other => panic!("expected an invalid configuration, got {other:?}"),
    }

    // Over the device's limit: 2048 threads per block, rejected before compiling.
    let big = spec.local(|_| [2048]);
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, big).unwrap();
    assert!(matches!(
        eval.prepare(&space, &c),
        Err(Failure::Rejected {
            cause: Cause::WorkGroupSize,
            ..
        })
    ));

    // Wrong result: forgets `+ y`.
    let (_, wrong) = saxpy_case(
        &cuda,
        n,
        "extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = a * x[i]; }",
    );
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, wrong).unwrap();
    let p = eval.prepare(&space, &c).unwrap();
    assert!(matches!(
        eval.measure(&space, &c, p),
        Err(Failure::WrongResult(_))
    ));
}

/// `n` random configurations of `space` measured by `eval`, 16 compiled at a time.
fn random_run<E: Evaluator<Cost = Duration>>(
    space: Space,
    eval: E,
    n: u64,
) -> TuningResult<Duration> {
    Tuner::new(space, eval)
        .technique(Random::new())
        .abort(Evaluations(n))
        .seed(5)
        .batch(16)
        .progress(false)
        .run()
        .unwrap()
}

/// 48 random configurations of `study` on the GPU compute the right result.
fn random_configurations_are_right(cuda: Arc<Cuda>, study: &dyn Study) {
    let (info, spec) = study.case(&target(&cuda)).unwrap().split();
    let eval = KernelEvaluator::<Cuda>::new(cuda, &info.space, spec).unwrap();
    let r = random_run(info.space.clone(), &eval, 48);
    // Every configuration that compiled and fits must compute the right result.
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", failures(&r));
    assert_eq!(r.failures.get("launch"), None, "{:?}", failures(&r));
    assert!(r.valid >= 24, "{} valid: {:?}", r.valid, failures(&r));
}

fn sgemm_configurations_are_right_on_the_gpu(cuda: Arc<Cuda>) {
    random_configurations_are_right(cuda, &Gemm::new(256, 512, 128).check(Check::Host));
}

fn xgemm_direct_is_right_on_the_gpu(cuda: Arc<Cuda>) {
    // IS2, timed over 64 back-to-back launches per sample.
    random_configurations_are_right(cuda, &XgemmDirect(Gemm::new(20, 576, 25)));
}

fn sgemm_tune_case_completes_with_no_wrong_results(cuda: Arc<Cuda>) {
    let budget = common::Budget {
        evaluations: 40,
        seconds: 120.0,
    };
    let options = common::Options {
        progress: false,
        record: false,
        ..common::Options::new(11)
    };
    // Starts from the case's known good (classic) configuration.
    let study = Gemm::new(256, 256, 256).check(Check::Host);
    let (_, r) = common::tune_study(cuda, &study, budget, options).unwrap();
    assert_eq!(r.evaluations, 40);
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", failures(&r));
    assert_eq!(r.failures.get("launch"), None, "{:?}", failures(&r));
    assert!(r.valid >= 20, "{} valid: {:?}", r.valid, failures(&r));
    assert!(r.best.scalar > 0.0);
}

fn cublas_is_timed_per_call_and_right(cuda: Arc<Cuda>) {
    let gemm = Gemm::new(20, 576, 25);
    let [a, b, c] = gemm.inputs();
    let want = gemm.host(Layout::RowMajor, floats(&a), floats(&b), floats(&c));
    let (one, c1) = cc::cublas_sgemm(&cuda, &gemm, 1, 20).unwrap();
    let (per_call, c64) = cc::cublas_sgemm(&cuda, &gemm, 64, 20).unwrap();
    for got in [c1, c64] {
        Tolerance::Norm(1e-5)
            .check(&HostData::F32(want.clone()), &HostData::F32(got))
            .unwrap();
    }
    // Back to back, a call costs at most about what it costs alone (less launch latency).
    assert!(
        per_call > 0.0 && per_call < one * 2.0,
        "{per_call} vs {one}"
    );
}

fn the_compile_cache_spares_a_second_run_nvrtc(_: Arc<Cuda>) {
    let dir = tempfile::tempdir().unwrap();
    let n = 1 << 12;
    let compiles = || {
        let cuda = Cuda::open(0).unwrap().compile_cache(dir.path());
        let t = target(&cuda);
        let (space, spec) = saxpy_case(&cuda, n, Saxpy::new(n).source(&t).unwrap());
        let eval = KernelEvaluator::new(cuda, &space, spec).unwrap();
        let config = space
            .iter()
            .find(|c| (32..=1024).contains(&c.get::<usize>(saxpy::LS)))
            .unwrap();
        let prepared = eval.prepare(&space, &config).unwrap();
        assert!(eval.measure(&space, &config, prepared).is_ok());
        eval.backend().compile_stats().1
    };
    assert_eq!(compiles(), 1);
    assert_eq!(compiles(), 0);
}

/// A `__constant__` array filled from the spec (Kernel Tuner's `cmem_args`; T1 files'
/// `MemType: Constant`): every configuration reads the data, a kernel without the array and
/// data larger than it fail with what is wrong.
fn constant_arrays_are_filled_before_the_kernel_runs(cuda: Arc<Cuda>) {
    const SRC: &str = r#"
__constant__ float taps[8];
extern "C" __global__ void weigh(float *y, const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * taps[i % 8];
}
"#;
    let n = 4096;
    let space = tune::SpaceBuilder::new()
        .param(tune::Param::<usize>::values("LS", [64, 128, 256]))
        .build()
        .unwrap();
    let taps: Vec<f32> = (1..=8).map(|v| v as f32).collect();
    let spec = |source: &str, name: &str, data: Vec<f32>| {
        let expected = taps.clone();
        KernelSpec::new(source, "weigh")
            .global(move |_| [n])
            .local(|c| [c.get::<usize>(0)])
            .buffer(BufferArg::zeros::<f32>(n).output())
            .buffer(BufferArg::random::<f32>(n, 3))
            .scalar(n as i32)
            .constant(name, BufferArg::from_vec(data))
            .reference(move |a| {
                let x = a.buffer::<f32>(1)?;
                let y: Vec<f32> = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| v * expected[i % 8])
                    .collect();
                Ok(vec![y.into()])
            })
    };
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, spec(SRC, "taps", taps.clone()))
        .unwrap();
    for c in space.iter() {
        let p = eval.prepare(&space, &c).unwrap();
        let m = eval.measure(&space, &c, p).unwrap();
        assert!(m.validation.is_some(), "{c:?}");
    }
    let c = space.iter().next().unwrap();
    let eval =
        KernelEvaluator::<Cuda>::new(cuda.clone(), &space, spec(SRC, "weights", taps.clone()))
            .unwrap();
    match eval.prepare(&space, &c) {
        Err(Failure::Compile(m)) => assert!(m.contains("no `__constant__` array `weights`"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let eval = KernelEvaluator::<Cuda>::new(cuda, &space, spec(SRC, "taps", vec![1.0; 9])).unwrap();
    match eval.prepare(&space, &c) {
        Err(Failure::Other(m)) => assert!(m.contains("36 bytes do not fit"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

fn main() -> ExitCode {
    let mut suite = harness::Suite::new();
    suite.device(
        &no_driver(),
        "missing_cuda_is_backend_unavailable",
        missing_cuda_is_backend_unavailable,
    );
    let gpu = probe();
    let tests: [harness::DeviceTest<Arc<Cuda>>; 8] = [
        (
            "saxpy_measures_and_validates_on_the_gpu",
            saxpy_measures_and_validates_on_the_gpu,
        ),
        (
            "every_failure_kind_is_recorded",
            every_failure_kind_is_recorded,
        ),
        (
            "sgemm_configurations_are_right_on_the_gpu",
            sgemm_configurations_are_right_on_the_gpu,
        ),
        (
            "xgemm_direct_is_right_on_the_gpu",
            xgemm_direct_is_right_on_the_gpu,
        ),
        (
            "sgemm_tune_case_completes_with_no_wrong_results",
            sgemm_tune_case_completes_with_no_wrong_results,
        ),
        (
            "cublas_is_timed_per_call_and_right",
            cublas_is_timed_per_call_and_right,
        ),
        (
            "the_compile_cache_spares_a_second_run_nvrtc",
            the_compile_cache_spares_a_second_run_nvrtc,
        ),
        (
            "constant_arrays_are_filled_before_the_kernel_runs",
            constant_arrays_are_filled_before_the_kernel_runs,
        ),
    ];
    for (name, f) in tests
        .into_iter()
        .chain(case_studies::tests(Language::Cuda))
        .chain(kernel_checks::tests())
    {
        suite.device(&gpu, name, f);
    }
    suite.run()
}
