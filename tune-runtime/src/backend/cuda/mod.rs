//! The CUDA backend: cudarc's driver API and NVRTC, loaded at run time.
//!
//! tune builds without a CUDA toolkit; at run time [`probe`] (called by every entry point)
//! checks that `libcuda` and `libnvrtc` can be loaded and returns
//! [`Error::BackendUnavailable`](crate::Error::BackendUnavailable) otherwise, never a panic.
//!
//! [`Cuda`] implements [`Backend`](crate::backend::Backend), so a
//! [`KernelSpec`](crate::backend::KernelSpec) is evaluated on an NVIDIA GPU by
//! [`KernelEvaluator<Cuda>`](crate::backend::KernelEvaluator):
//! 1. [`Cuda::open`] picks a device by index or name and reads its limits ([`CudaProps`]).
//! 2. `compile` runs NVRTC on the calling thread (the evaluator calls it from several threads
//!    while the GPU measures): every tuning parameter becomes `-DNAME=value`, the architecture
//!    is the device's own (`--gpu-architecture=sm_90` on Hopper, see [`Arch::for_device`]),
//!    the output is a CUBIN, and the compile log is kept in [`Failure::Compile`](crate::Failure).
//!    The kernel is loaded once to read its own limits (registers,
//!    `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`, static shared memory). With
//!    [`Cuda::compile_cache`], NVRTC's outputs (and its refusals) are kept on disk and
//!    reused by later runs.
//! 3. `launch` converts the OpenCL-style sizes to a grid ([`Geometry`]), rejects a launch over
//!    the device's or the kernel's limits as [`Failure::Invalid`](crate::Failure), opts in to
//!    more than 48 KiB of dynamic shared memory when asked, optionally flushes the L2 cache
//!    ([`Cuda::flush_l2`]), and times the kernel with CUDA events.
//! 4. A launch error is [`Failure::Launch`](crate::Failure) and never a panic. After a sticky
//!    one (illegal address, kernel fault) the backend tries to replace its context before the
//!    next launch (a new context and stream, the buffers re-allocated and restored by the
//!    evaluator, the modules reloaded); current drivers keep the whole process in the error
//!    state, and then every later launch is a `Failure::Launch` that says to restart the
//!    process. Kernels that may fault are best tuned in a child process.

mod backend;
mod compile;
mod device;
mod disk;
mod launch;

pub use backend::{Cuda, CudaBuffer, CudaKernel};
pub use compile::{compile, nvrtc_version, options, supported_archs, Arch, Compiled};
pub use device::{list_devices, probe, CudaDevice, CudaProps, DeviceSelector};
pub use launch::{check_device_limits, check_kernel_limits, Geometry, KernelAttributes};

/// cudarc, re-exported for work beside tune (cuBLAS baselines, own kernels).
pub use cudarc;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// On a machine without the NVIDIA driver every entry point reports the backend as
    /// unavailable instead of panicking. (With a driver, the probe succeeds.)
    #[test]
    fn missing_cuda_is_an_error_not_a_panic() {
        // SAFETY: only tries to load the libraries; no CUDA function is called.
        let has_driver = unsafe { cudarc::driver::sys::is_culib_present() };
        // SAFETY: as above.
        let has_nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        match probe() {
            Ok(()) => assert!(has_driver && has_nvrtc),
            Err(e) => {
                assert!(
                    matches!(e, crate::Error::BackendUnavailable { ref backend, .. } if backend == "cuda")
                );
                let msg = e.to_string();
                assert!(
                    msg.contains("LD_LIBRARY_PATH") || msg.contains("device"),
                    "{msg}"
                );
                assert!(Cuda::open(0).is_err());
                assert!(Cuda::open("H100").is_err());
                assert!(list_devices().is_err());
            }
        }
    }

    #[test]
    fn compile_without_nvrtc_is_a_failure_not_a_panic() {
        // SAFETY: only tries to load the library.
        if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return;
        }
        let arch = Arch {
            sm: 90,
            cubin: true,
        };
        assert!(compile(
            "extern \"C\" __global__ void k() {}",
            "k.cu",
            &arch,
            &[],
            &[]
        )
        .is_err());
    }

    #[test]
    fn arch_choice() {
        assert_eq!(
            Arch::choose(90, &[75, 80, 86, 89, 90, 100]),
            Arch {
                sm: 90,
                cubin: true
            }
        );
        assert_eq!(
            Arch::choose(90, &[]),
            Arch {
                sm: 90,
                cubin: true
            }
        );
        // A device newer than NVRTC: PTX for the newest older architecture.
        assert_eq!(
            Arch::choose(121, &[75, 80, 90, 100, 120]),
            Arch {
                sm: 120,
                cubin: false
            }
        );
        assert_eq!(
            Arch {
                sm: 90,
                cubin: true
            }
            .option(),
            "--gpu-architecture=sm_90"
        );
        assert_eq!(
            Arch {
                sm: 120,
                cubin: false
            }
            .option(),
            "--gpu-architecture=compute_120"
        );
        let opts = options(
            &Arch {
                sm: 90,
                cubin: true,
            },
            &[("BM".into(), "128".into())],
            &["-lineinfo".into()],
        );
        assert_eq!(opts, ["--gpu-architecture=sm_90", "-DBM=128", "-lineinfo"]);
    }
}
