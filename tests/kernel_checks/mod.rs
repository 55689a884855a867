//! Kernel-property constraints on a real compiler, written once for every backend:
//! what only the compiled kernel knows (its static local memory, registers, private
//! memory, the occupancy it allows) rejects a configuration right after compilation, with
//! its cause, before it runs. `tests/opencl.rs` and `tests/cuda.rs` register them.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use tune::backend::{Backend, BufferArg, KernelEvaluator, KernelSpec};
use tune::evaluate::Cause;
use tune::{Evaluator, Failure, Param, Space, SpaceBuilder};

use crate::common::{Language, Target};
use crate::harness::DeviceTest;

/// A kernel with a static local array of `STATIC_WORDS` floats, a dynamic one (a local
/// argument in OpenCL, dynamic shared memory in CUDA) and a private array of `PRIVATE`
/// floats indexed at run time (which a GPU compiler keeps in memory, not registers).
fn source(language: Language) -> &'static str {
    match language {
        Language::OpenCl => {
            "__kernel void k(__global float* y, __local float* dyn) {
                __local float fixed[STATIC_WORDS];
                float priv[PRIVATE];
                const int i = get_local_id(0);
                for (int j = 0; j < PRIVATE; ++j) priv[j] = y[(i + j) % 64];
                fixed[i % STATIC_WORDS] = priv[(i * 7) % PRIVATE];
                dyn[i] = 1.0f;
                barrier(CLK_LOCAL_MEM_FENCE);
                y[get_global_id(0)] = fixed[(i + 1) % STATIC_WORDS] + dyn[(i + 3) % 64];
            }"
        }
        Language::Cuda => {
            "extern \"C\" __global__ void k(float* y) {
                __shared__ float fixed[STATIC_WORDS];
                extern __shared__ float dyn[];
                float priv[PRIVATE];
                const int i = threadIdx.x;
                for (int j = 0; j < PRIVATE; ++j) priv[j] = y[(i + j) % 64];
                fixed[i % STATIC_WORDS] = priv[(i * 7) % PRIVATE];
                dyn[i] = 1.0f;
                __syncthreads();
                y[blockIdx.x * blockDim.x + i] = fixed[(i + 1) % STATIC_WORDS] + dyn[(i + 3) % 64];
            }"
        }
    }
}

/// One configuration: the static local array's size in floats.
fn space(static_words: usize) -> Space {
    SpaceBuilder::new()
        .param(Param::<usize>::values("STATIC_WORDS", [static_words]))
        .build()
        .unwrap()
}

/// The kernel with `dynamic` bytes of dynamic local memory and `private` private floats,
/// 64 work-items per work-group; the host does not know the static array's size.
fn spec(language: Language, dynamic: usize, private: usize) -> KernelSpec {
    KernelSpec::new(source(language), "k")
        .define("PRIVATE", private)
        .global(|_| [256])
        .local(|_| [64])
        .buffer(BufferArg::zeros::<f32>(256))
        .local_buffer::<f32>(move |_| dynamic / 4)
}

/// Prepares (compiles and checks) the one configuration.
fn prepare<B: Backend>(b: &Arc<B>, static_words: usize, spec: KernelSpec) -> Result<(), Failure> {
    let s = space(static_words);
    let ev = KernelEvaluator::<B>::new(b.clone(), &s, spec).unwrap();
    let c = s.get(0).unwrap();
    ev.prepare(&s, &c).map(|_| ())
}

fn language<B: Backend>(b: &Arc<B>) -> Language {
    Target::of(b.as_ref()).unwrap().language
}

/// Static local memory, known only after compilation, plus the dynamic part, over the
/// device's limit: `invalid: local_memory`, though the dynamic part alone fits.
fn local_memory_of_the_compiled_kernel_is_checked<B: Backend>(b: Arc<B>) {
    let lang = language(&b);
    let limit = b.device().local_mem_bytes;
    let static_bytes = (limit / 4).min(16 * 1024);
    let dynamic = limit - static_bytes + 256;
    match prepare(&b, static_bytes / 4, spec(lang, dynamic, 4)) {
        Err(Failure::Rejected {
            cause: Cause::LocalMemory,
            detail,
        }) => assert!(detail.contains(&limit.to_string()), "{detail}"),
        other => panic!("expected `invalid: local_memory`, got {other:?}"),
    }
    // The same kernel with room to spare is fine.
    prepare(&b, static_bytes / 4, spec(lang, 1024, 4)).unwrap();
}

/// A work-group that takes more than half a compute unit's local memory leaves room for
/// one: `invalid: occupancy` when two are required (BEAST's constraint); CUDA asks the
/// driver, OpenCL estimates it.
fn occupancy_below_the_minimum_is_rejected<B: Backend>(b: Arc<B>) {
    let lang = language(&b);
    let dev = b.device();
    let per_cu = match dev.local_mem_per_compute_unit {
        0 => dev.local_mem_bytes,
        n => n,
    };
    let static_bytes = 8 * 1024;
    let big = (per_cu / 2 + 1024).min(dev.local_mem_bytes) - static_bytes;
    match prepare(&b, static_bytes / 4, spec(lang, big, 4).min_occupancy(2)) {
        Err(Failure::Rejected {
            cause: Cause::Occupancy,
            detail,
        }) => assert!(detail.contains("1 work-groups"), "{detail}"),
        other => panic!("expected `invalid: occupancy`, got {other:?}"),
    }
    prepare(&b, static_bytes / 4, spec(lang, 1024, 4).min_occupancy(2)).unwrap();
}

/// Registers and private (spilled) memory, where the backend reports them: CUDA always,
/// OpenCL not the registers (no standard query) and the private memory as the driver
/// tells it.
fn registers_and_private_memory_are_checked_where_known<B: Backend>(b: Arc<B>) {
    let lang = language(&b);
    match prepare(&b, 64, spec(lang, 1024, 4).max_registers(1)) {
        Err(Failure::Rejected {
            cause: Cause::Registers,
            ..
        }) => assert_eq!(lang, Language::Cuda),
        Ok(()) => assert_eq!(lang, Language::OpenCl, "CUDA reports registers"),
        other => panic!("expected `invalid: registers`, got {other:?}"),
    }
    // 256 floats indexed at run time live in private memory.
    match prepare(&b, 64, spec(lang, 1024, 256).max_spill_bytes(0)) {
        Err(Failure::Rejected {
            cause: Cause::Spills,
            detail,
        }) => assert!(detail.contains("bytes of private"), "{detail}"),
        Ok(()) => assert_eq!(lang, Language::OpenCl, "CUDA reports local memory"),
        other => panic!("expected `invalid: spills`, got {other:?}"),
    }
}

/// The kernel-property tests for a backend.
pub fn tests<B: Backend>() -> Vec<DeviceTest<Arc<B>>> {
    vec![
        (
            "local_memory_of_the_compiled_kernel_is_checked",
            local_memory_of_the_compiled_kernel_is_checked::<B>,
        ),
        (
            "occupancy_below_the_minimum_is_rejected",
            occupancy_below_the_minimum_is_rejected::<B>,
        ),
        (
            "registers_and_private_memory_are_checked_where_known",
            registers_and_private_memory_are_checked_where_known::<B>,
        ),
    ]
}
