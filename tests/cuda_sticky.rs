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
