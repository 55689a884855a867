// OpenCL C dialect of kernels/dnn_conv/body.c (tune prepends this file to it).
#define KERNEL(name) __kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void name
#define REF_KERNEL(name) __kernel void name
#define IN __global const float* restrict
#define OUT __global float* restrict
#define IN_PTR __global const float*
#define SHARED_PARAM , __local float* smem
#define SHARED_DECL
#define SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#define TID ((int)get_local_id(0))
#define GROUP ((long)get_group_id(0))
#define GID ((long)get_global_id(0))
#define LDG(p) (*(p))
#define FMA(a, b, c) fma(a, b, c)
#define LOCAL_PTR __local float*
#define SMEM_LOAD2(p) vload2(0, (p))
#define SMEM_LOAD4(p) vload4(0, (p))
#define PRAGMA(x) _Pragma(#x)
#define OUT_PTR __global float*
#define LOCAL_INT_PTR __local int*
#define LDG4(p) vload4(0, (p))
#define VSTORE2(p, a, b) vstore2((float2)(a, b), 0, (p))
#define VSTORE4(p, a, b, c, d) vstore4((float4)(a, b, c, d), 0, (p))
// Output stores with a streaming hint: OpenCL C has none (STCS is offered on CUDA only).
#define STREAM1(p, a) (*(p) = (a))
#define STREAM2(p, a, b) VSTORE2(p, a, b)
#define STREAM4(p, a, b, c, d) VSTORE4(p, a, b, c, d)
#define GLOBAL_PTR __global float*
#define GLOBAL_UINT_PTR __global unsigned int*
#define GFENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
// Reads another work-group's partial tile from memory, not a cached copy.
#define LDCG(p) (*(volatile __global const float*)(p))
#define ATOMIC_INC(p) atomic_inc(p)
// Local-memory float4 store (the staged output, direct.c's DOST); no bulk copies here.
#define SMEM_STORE4(p, a, b, c, d) vstore4((float4)(a, b, c, d), 0, (p))
#define HAS_BULK 0
#define BULK_WAIT_READ1()
#define BULK_WAIT_ALL()
#define BULK_FENCE()
// Backward-filter's reference kernel accumulates in double.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
