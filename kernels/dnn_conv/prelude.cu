// CUDA C dialect of kernels/dnn_conv/body.c (tune prepends this file to it).
#define KERNEL(name) extern "C" __global__ void __launch_bounds__(NT, MINB) name
#define REF_KERNEL(name) extern "C" __global__ void name
#define IN const float* __restrict__
#define OUT float* __restrict__
#define IN_PTR const float*
#define SHARED_PARAM
#define SHARED_DECL extern __shared__ __align__(16) float smem[];
#define SYNC() __syncthreads()
#define TID ((int)threadIdx.x)
#define GROUP ((long)blockIdx.x)
#define GID ((long)blockIdx.x * blockDim.x + threadIdx.x)
#define LDG(p) __ldg(p)
#define FMA(a, b, c) fmaf(a, b, c)
#define LOCAL_PTR float*
#define SMEM_LOAD2(p) (*reinterpret_cast<const float2*>(p))
#define SMEM_LOAD4(p) (*reinterpret_cast<const float4*>(p))
#define PRAGMA(x) _Pragma(#x)
#define OUT_PTR float*
#define LOCAL_INT_PTR int*
#define LDG4(p) __ldg(reinterpret_cast<const float4*>(p))
#define VSTORE2(p, a, b) (*reinterpret_cast<float2*>(p) = make_float2(a, b))
#define VSTORE4(p, a, b, c, d) (*reinterpret_cast<float4*>(p) = make_float4(a, b, c, d))
// Output stores with the streaming hint (evict first: the output is never read back).
#define STREAM1(p, a) __stcs((p), (a))
#define STREAM2(p, a, b) __stcs(reinterpret_cast<float2*>(p), make_float2(a, b))
#define STREAM4(p, a, b, c, d) __stcs(reinterpret_cast<float4*>(p), make_float4(a, b, c, d))
#define GLOBAL_PTR float*
#define GLOBAL_UINT_PTR unsigned int*
#define GFENCE() __threadfence()
// Reads past L1 (not coherent between multiprocessors): another block's partial tile.
#define LDCG(p) __ldcg(p)
#define ATOMIC_INC(p) atomicAdd(p, 1u)
// Local-memory float4 store (the staged output, direct.c's DOST).
#define SMEM_STORE4(p, a, b, c, d) (*reinterpret_cast<float4*>(p) = make_float4(a, b, c, d))
// Asynchronous bulk copies from shared to global memory (sm_90: the copy engine, tracked
// per thread in bulk groups); direct.c falls back to plain stores without them.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define HAS_BULK 1
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
#define BULK_STORE(g, s, bytes)                                                          \
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(g), \
                 "r"(smem_u32(s)), "r"(bytes)                                            \
                 : "memory")
#define BULK_COMMIT() asm volatile("cp.async.bulk.commit_group;" ::: "memory")
#define BULK_WAIT_READ1() asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory")
#define BULK_WAIT_ALL() asm volatile("cp.async.bulk.wait_group 0;" ::: "memory")
#define BULK_FENCE() asm volatile("fence.proxy.async.shared::cta;" ::: "memory")
#else
#define HAS_BULK 0
#define BULK_WAIT_READ1()
#define BULK_WAIT_ALL()
#define BULK_FENCE()
#endif
