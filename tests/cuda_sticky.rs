//! A kernel that faults (illegal address: a sticky error) is a `Failure::Launch`, not a panic,
//! and every later launch fails cleanly too. Its own test binary, because the driver keeps
//! the whole process in the error state. On the GPU machine:
//! `TUNE_REQUIRE_CUDA=1 cargo test --release --features cuda --test cuda_sticky`
//! Without a usable CUDA device the tests are reported as ignored, unless
//! `TUNE_REQUIRE_CUDA=1` (then they fail).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use std::process::ExitCode;
use std::sync::Arc;

use tune::backend::isolated::Isolated;
use tune::backend::{BufferArg, KernelEvaluator, KernelSpec};
use tune::cuda::Cuda;
use tune::{Evaluator, Failure, Param, SpaceBuilder};

fn a_faulting_kernel_is_a_launch_failure(cuda: Arc<Cuda>) {
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

/// A tuning run in a process whose CUDA context a fault poisoned stops with
/// `Error::DeviceLost` (current drivers refuse a new context), its evaluations in the log,
/// instead of recording every later configuration as a failure; a driver that lets the
/// context be rebuilt goes on measuring.
fn a_tuning_run_on_a_lost_device_stops_with_its_log(cuda: Arc<Cuda>) {
    let space = SpaceBuilder::new()
        .param(Param::<u32>::values("MODE", [0, 1, 2, 3, 4, 5]))
        .build()
        .unwrap();
    let spec = KernelSpec::new(
        "extern \"C\" __global__ void k(float* y) {
            if (MODE == 0) { float* p = (float*)0x10; p[threadIdx.x] = y[0]; }
            else { y[threadIdx.x] = MODE; }
        }",
        "k",
    )
    .global(|_| [128])
    .local(|_| [128])
    .buffer(BufferArg::zeros::<f32>(128));
    let eval = KernelEvaluator::<Cuda>::new(cuda.clone(), &space, spec);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    // The first test of this binary may have poisoned the process already: creating the
    // evaluator (its buffers) can be what finds the device lost.
    let run = eval.and_then(|eval| {
        tune::Tuner::new(space.clone(), eval)
            .start_from([space.get(0).unwrap()])
            .log(&log)
            .progress(false)
            .run()
    });
    match run {
        Err(tune::Error::DeviceLost { reason, .. }) => {
            eprintln!("device lost: {reason}");
            let logged = tune::results::log::read(&log).unwrap();
            assert!(
                logged.len() <= 2,
                "{} evaluations after the loss",
                logged.len()
            );
        }
        Err(tune::Error::Backend { message, .. }) => {
            assert!(message.contains("sticky"), "{message}")
        }
        Ok(r) => assert!(
            r.valid > 0,
            "a driver that rebuilds the context measures again"
        ),
        Err(e) => panic!("expected the device lost or the run to go on, got {e}"),
    }
}

/// The CUDA device in a worker process. The parent never touches the GPU itself: the test
/// above may have poisoned this process's CUDA state already.
fn isolated_a_faulting_kernel_is_a_launch_failure_and_the_next_configuration_measures(
    cuda: Arc<Isolated>,
) {
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

fn isolated_cuda_without_a_driver_is_unavailable_not_a_panic(_: ()) {
    match tune::backend::isolated::Isolated::cuda("0") {
        Err(tune::Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, "cuda");
            assert!(!reason.is_empty());
        }
        other => panic!("expected the backend to be unavailable, got {other:?}"),
    }
}

fn main() -> ExitCode {
    // Probed before any test runs: the first one poisons this process's CUDA state.
    let gpu = Cuda::open(0).map(Arc::new).map_err(|e| e.to_string());
    let gpu = harness::Probe::new("cuda", gpu, "TUNE_REQUIRE_CUDA");
    let worker = Isolated::cuda("0").map(Arc::new).map_err(|e| e.to_string());
    let worker = harness::Probe::new("cuda", worker, "TUNE_REQUIRE_CUDA");
    // SAFETY: only checks whether the libraries can be loaded.
    let present = unsafe {
        tune::cuda::cudarc::driver::sys::is_culib_present()
            && tune::cuda::cudarc::nvrtc::sys::is_culib_present()
    };
    let no_driver = harness::Probe::optional(
        "no-driver",
        if present {
            Err("CUDA is installed here; the GPU tests cover this machine".to_string())
        } else {
            Ok(())
        },
    );
    let mut suite = harness::Suite::new();
    suite.device(
        &gpu,
        "a_faulting_kernel_is_a_launch_failure",
        a_faulting_kernel_is_a_launch_failure,
    );
    suite.device(
        &gpu,
        "a_tuning_run_on_a_lost_device_stops_with_its_log",
        a_tuning_run_on_a_lost_device_stops_with_its_log,
    );
    suite.device(
        &worker,
        "isolated_a_faulting_kernel_is_a_launch_failure_and_the_next_configuration_measures",
        isolated_a_faulting_kernel_is_a_launch_failure_and_the_next_configuration_measures,
    );
    suite.device(
        &no_driver,
        "isolated_cuda_without_a_driver_is_unavailable_not_a_panic",
        isolated_cuda_without_a_driver_is_unavailable_not_a_panic,
    );
    suite.run()
}
