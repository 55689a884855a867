//! A kernel that faults (illegal address: a sticky error) is a `Failure::Launch`, not a panic,
//! and every later launch fails cleanly too. Its own test binary, because the driver keeps
//! the whole process in the error state. On the GPU machine:
//! `TUNE_REQUIRE_CUDA=1 cargo test --release --features cuda --test cuda_sticky`
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use tune::backend::{BufferArg, KernelEvaluator, KernelSpec};
use tune::cuda::Cuda;
use tune::{Evaluator, Failure, Param, SpaceBuilder};

#[test]
fn a_faulting_kernel_is_a_launch_failure() {
    let cuda = match Cuda::open(0) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            assert!(
                std::env::var("TUNE_REQUIRE_CUDA").as_deref() != Ok("1"),
                "{e}"
            );
            return;
        }
    };
    let space = SpaceBuilder::new()
        .param(Param::<u32>::values("BS", [128]))
        .build()
        .unwrap();
    let c = space.get(0).unwrap();
    let crash = KernelSpec::new(
        "extern \"C\" __global__ void crash(float* y) { float* p = (float*)0x10; p[threadIdx.x] = y[0]; }",
        "crash",
    )
    .global(|_| [128])
    .local(|c| [c.get::<u32>(0) as usize])
    .buffer(BufferArg::zeros::<f32>(128));
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, crash).unwrap();
    let p = eval.prepare(&space, &c).unwrap();
    match eval.measure(&space, &c, p) {
        Err(Failure::Launch(m)) => {
            assert!(m.contains("ILLEGAL_ADDRESS") && m.contains("sticky"), "{m}")
        }
        other => panic!("expected a launch failure, got {other:?}"),
    }
    assert!(cuda.is_poisoned());
    // The next configuration: a failure that says what to do, never a panic.
    let p = eval.prepare(&space, &c);
    let r = p.and_then(|p| eval.measure(&space, &c, p));
    match r {
        Ok(_) => {} // a driver that recovers: fine too
        Err(Failure::Launch(m)) | Err(Failure::Other(m)) | Err(Failure::Compile(m)) => {
            eprintln!("after the fault: {m}")
        }
        Err(f) => panic!("unexpected failure kind {f:?}"),
    }
}

/// The CUDA device in a worker process (`None` to skip). The parent never touches the GPU
/// itself: the test above may have poisoned this process's CUDA state already.
fn isolated_cuda() -> Option<tune::backend::isolated::Isolated> {
    match tune::backend::isolated::Isolated::cuda("0") {
        Ok(c) => Some(c),
        Err(e) => {
            assert!(
                std::env::var("TUNE_REQUIRE_CUDA").as_deref() != Ok("1"),
                "{e}"
            );
            eprintln!("skipped: no CUDA device ({e})");
            None
        }
    }
}

#[test]
fn isolated_a_faulting_kernel_is_a_launch_failure_and_the_next_configuration_measures() {
    use tune::backend::isolated::Isolated;
    let Some(cuda) = isolated_cuda() else { return };
    const N: usize = 1024;
    let space = SpaceBuilder::new()
        .param(Param::<u32>::values("MODE", [0, 1]))
        .build()
        .unwrap();
    let spec = KernelSpec::new(
        r#"extern "C" __global__ void scale(int n, const float* x, float* y) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
        #if MODE == 1
            float* p = (float*)0x10; p[threadIdx.x] = x[0];
        #endif
            if (i < n) y[i] = 2.0f * x[i];
        }"#,
        "scale",
    )
    .global(|_| [N])
    .local(|_| [128])
    .scalar(N as i32)
    .buffer(BufferArg::random::<f32>(N, 1))
    .buffer(BufferArg::zeros::<f32>(N).output())
    .reference(|a| {
        let x = a.buffer::<f32>(1)?;
        Ok(vec![x.iter().map(|v| 2.0 * v).collect::<Vec<f32>>().into()])
    });
    let eval = KernelEvaluator::<Isolated>::new(cuda, &space, spec).unwrap();
    let run = |mode: u128| {
        let c = space.get(mode).unwrap();
        assert_eq!(c.get::<u32>(0), mode as u32);
        let p = eval.prepare(&space, &c)?;
        eval.measure(&space, &c, p)
    };
    assert!(run(0).unwrap().validation.is_some());
    match run(1) {
        // The backend's own message (the worker exits after sending it), or the worker's
        // death if the driver took the process down.
        Err(Failure::Launch(m)) => {
            eprintln!("the fault, in a worker: {m}");
            assert!(m.contains("ILLEGAL_ADDRESS") || m.contains("died"), "{m}")
        }
        other => panic!("expected a launch failure, got {other:?}"),
    }
    // The next configuration runs in a new worker, on a clean CUDA context.
    let m = run(0).unwrap();
    assert!(m.validation.is_some());
    assert_eq!(eval.backend().restarts(), 1);
}

#[test]
fn isolated_cuda_without_a_driver_is_unavailable_not_a_panic() {
    // SAFETY: only checks whether the libraries can be loaded.
    let present = unsafe {
        tune::cuda::cudarc::driver::sys::is_culib_present()
            && tune::cuda::cudarc::nvrtc::sys::is_culib_present()
    };
    if present {
        return;
    }
    match tune::backend::isolated::Isolated::cuda("0") {
        Err(tune::Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, "cuda");
            assert!(!reason.is_empty());
        }
        other => panic!("expected the backend to be unavailable, got {other:?}"),
    }
}
