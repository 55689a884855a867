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
