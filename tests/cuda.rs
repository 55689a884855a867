//! CUDA backend tests. Without a usable CUDA device the GPU tests are reported as ignored,
//! unless `TUNE_REQUIRE_CUDA=1` (then they fail). On the GPU machine:
//! `TUNE_REQUIRE_CUDA=1 cargo test --release --features cuda --test cuda`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/common/mod.rs"]
mod common;
mod harness;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use common::cuda as cc;
use tune::abort::Evaluations;
use tune::backend::{BufferArg, HostData, KernelEvaluator, KernelSpec, Tolerance};
use tune::cuda::Cuda;
use tune::search::Random;
use tune::{Error, Evaluator, Failure, Param, Space, SpaceBuilder, Tuner, TuningResult};

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

fn spaces_of_the_case_studies() {
    let s = cc::sgemm_space(4096, 4096, 4096).unwrap();
    assert!(s.len() > 1000, "{}", s.len());
    for c in s.iter().take(3000) {
        let g = |n: &str| c.get::<u32>(s.slot(n).unwrap());
        let nt = (g("BM") / g("TM")) * (g("BN") / g("TN"));
        assert!((64..=1024).contains(&nt));
        assert_eq!((g("BM") * g("BK")) % (g("VA") * nt), 0);
        assert_eq!((g("BN") * g("BK")) % (g("VB") * nt), 0);
        assert!(cc::sgemm_smem(&c) <= 227 * 1024);
    }
    assert!(cc::sgemm_classic(&s).is_some());
    let x = cc::xgemm_direct_space().unwrap();
    assert!(x.len() > 1000, "{}", x.len());
    // 4 x 5 x 4 x 4 x 4 = 1280, less (16, 1) and (128, 16) of the block sizes.
    assert_eq!(cc::kt_matmul_space().unwrap().len(), 1280 - 2 * 64);
    // The cases wrap the same spaces.
    assert_eq!(
        cc::sgemm(256, 256, 64, cc::SgemmCheck::Host)
            .unwrap()
            .space
            .len(),
        cc::sgemm_space(256, 256, 64).unwrap().len()
    );
    assert_eq!(cc::xgemm_direct(20, 576, 25).unwrap().space.len(), x.len());
    assert_eq!(cc::kt_matmul(256).unwrap().space.len(), 1280 - 2 * 64);
    assert_eq!(
        cc::conv(256, 128, 3).unwrap().space.len(),
        cc::conv_space(256, 128, 3).unwrap().len()
    );
    // n = 2^12: 13 choices of WPT, then LS among the divisors of n / WPT.
    assert_eq!(
        cc::saxpy(1 << 12).unwrap().space.len(),
        (1..=13).sum::<u128>()
    );
}

fn small_gemms_are_timed_back_to_back() {
    // ATF's IS1-IS4 (M, N, K), then a large size: 64 launches per sample for XgemmDirect and
    // for cuBLAS alike below 1e8 flops.
    for (m, n, k) in [(20, 576, 1), (20, 576, 25), (50, 64, 1), (10, 500, 64)] {
        assert_eq!(cc::back_to_back(m, n, k), 64);
    }
    assert_eq!(cc::back_to_back(512, 512, 256), 1);
    assert_eq!(cc::back_to_back(4096, 4096, 4096), 1);
    let spec = format!("{:?}", cc::xgemm_direct(20, 576, 25).unwrap().spec);
    assert!(spec.contains("launches_per_sample: 64"), "{spec}");
}

fn saxpy_space(n: usize) -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n))
        .param(Param::<usize>::range("LS", 1..=1024).divides(&[0], move |b| n / b.get::<usize>(0)))
        .build()
        .unwrap()
}

/// saxpy's arguments and reference, around a given kernel source.
fn saxpy_like(source: &str, n: usize) -> KernelSpec {
    let x = cc::random_f32(n, 1);
    let y = cc::random_f32(n, 2);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
    KernelSpec::new(source, "saxpy")
        .global(move |c| [n / c.get::<usize>(0)])
        .local(|c| [c.get::<usize>(1)])
        .scalar(n as i32)
        .scalar(2.0f32)
        .buffer(BufferArg::from_vec(x))
        .buffer(BufferArg::from_vec(y).output())
        .tolerance(Tolerance::PerElement {
            abs: 1e-6,
            rel: 1e-6,
        })
        .reference(move |_| Ok(vec![HostData::F32(want.clone())]))
}

fn saxpy_spec(n: usize) -> KernelSpec {
    saxpy_like(include_str!("../kernels/saxpy.cu"), n)
}

fn saxpy_measures_and_validates_on_the_gpu(cuda: Arc<Cuda>) {
    let n = 1 << 16;
    let space = saxpy_space(n);
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, saxpy_spec(n)).unwrap();
    let mut valid = 0;
    for c in space.iter().filter(|c| c.get::<usize>(1) >= 32).take(12) {
        let p = eval.prepare(&space, &c).unwrap();
        let m = eval.measure(&space, &c, p).unwrap();
        assert!(m.cost.as_secs_f64() > 0.0);
        assert_eq!(m.samples.len(), 5);
        assert!(m.validation.is_some());
        valid += 1;
    }
    assert!(valid > 0);
    assert!(eval.device().contains("cuda"));
}

fn every_failure_kind_is_recorded(cuda: Arc<Cuda>) {
    let n = 1 << 12;
    let space = saxpy_space(n);
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
        Err(Failure::Invalid(m)) => assert!(m.contains("limit"), "{m}"),
        other => panic!("expected an invalid configuration, got {other:?}"),
    }

    // Over the device's limit: 2048 threads per block, rejected before compiling.
    let big = saxpy_spec(n).local(|_| [2048]);
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, big).unwrap();
    assert!(matches!(eval.prepare(&space, &c), Err(Failure::Invalid(_))));

    // Wrong result: forgets `+ y`.
    let wrong = saxpy_like(
        "extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; y[i] = a * x[i]; }",
        n,
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

/// The failure messages of a run, for assertion messages.
fn failures(r: &TuningResult<Duration>) -> Vec<String> {
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

fn sgemm_configurations_are_right_on_the_gpu(cuda: Arc<Cuda>) {
    let (m, n, k) = (256usize, 512usize, 128usize);
    let a = cc::random_f32(m * k, 3);
    let b = cc::random_f32(k * n, 4);
    let c = cc::sgemm_host(m, n, k, &a, &b);
    let space = cc::sgemm_space(m as u32, n as u32, k as u32).unwrap();
    let spec = cc::sgemm_spec(m as u32, n as u32, k as u32, a, b, Some(c));
    let eval = KernelEvaluator::<Cuda>::new(cuda, &space, spec).unwrap();
    let r = random_run(space, &eval, 48);
    // Every configuration that compiled and fits must compute the right product.
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", failures(&r));
    assert_eq!(r.failures.get("launch"), None, "{:?}", failures(&r));
    assert!(r.valid >= 24, "{} valid: {:?}", r.valid, failures(&r));
}

fn xgemm_direct_is_right_on_the_gpu(cuda: Arc<Cuda>) {
    // IS2, timed over 64 back-to-back launches per sample.
    let (info, spec) = cc::xgemm_direct(20, 576, 25).unwrap().split();
    let eval = KernelEvaluator::<Cuda>::new(cuda, &info.space, spec).unwrap();
    let r = random_run(info.space.clone(), &eval, 48);
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", failures(&r));
    assert_eq!(r.failures.get("launch"), None, "{:?}", failures(&r));
    assert!(r.valid >= 24, "{} valid: {:?}", r.valid, failures(&r));
}

fn sgemm_tune_case_completes_with_no_wrong_results(cuda: Arc<Cuda>) {
    let case = cc::sgemm(256, 256, 256, cc::SgemmCheck::Host).unwrap();
    let start = cc::sgemm_classic(&case.space).into_iter().collect();
    let budget = common::Budget {
        evaluations: 40,
        seconds: 120.0,
    };
    let options = common::Options {
        start,
        progress: false,
        record: false,
        ..common::Options::new(11)
    };
    let (_, r) = common::tune_case(cuda, case, budget, options).unwrap();
    assert_eq!(r.evaluations, 40);
    assert_eq!(r.failures.get("wrong_result"), None, "{:?}", failures(&r));
    assert_eq!(r.failures.get("launch"), None, "{:?}", failures(&r));
    assert!(r.valid >= 20, "{} valid: {:?}", r.valid, failures(&r));
    assert!(r.best.scalar > 0.0);
}

fn cublas_is_timed_per_call_and_right(cuda: Arc<Cuda>) {
    let (m, n, k) = (20usize, 576usize, 25usize);
    let (a, b) = cc::xgemm_direct_inputs(m, n, k);
    let want = cc::sgemm_host(m, n, k, &a, &b);
    let (one, c) = cc::cublas_sgemm(&cuda, m, n, k, &a, &b, 1, 20).unwrap();
    let (per_call, c64) = cc::cublas_sgemm(&cuda, m, n, k, &a, &b, 64, 20).unwrap();
    for got in [&c, &c64] {
        Tolerance::Norm(1e-5)
            .check(&HostData::F32(want.clone()), &HostData::F32(got.clone()))
            .unwrap();
    }
    // Back to back, a call costs at most about what it costs alone (less launch latency).
    assert!(
        per_call > 0.0 && per_call < one * 2.0,
        "{per_call} vs {one}"
    );
}

fn main() -> ExitCode {
    let mut suite = harness::Suite::new();
    suite.device(
        &no_driver(),
        "missing_cuda_is_backend_unavailable",
        missing_cuda_is_backend_unavailable,
    );
    suite.test("spaces_of_the_case_studies", spaces_of_the_case_studies);
    suite.test(
        "small_gemms_are_timed_back_to_back",
        small_gemms_are_timed_back_to_back,
    );
    let gpu = probe();
    let tests: [harness::DeviceTest<Arc<Cuda>>; 6] = [
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
    ];
    for (name, f) in tests {
        suite.device(&gpu, name, f);
    }
    suite.run()
}
