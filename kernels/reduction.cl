// Sum of floats, written for tune after KTT's reduction example (thesis, section 6.1).
//
// `reduce` sums `n` floats of `src`: every work-group adds its share to one partial sum,
// which it writes to dst[group] (multi-pass: the host launches again over the partial sums
// until one remains) or adds to dst[0] with an atomic (one launch).
//
// Tuning parameters:
//   WG      work-group size (the kernel requires it)
//   VW      floats per load: 1, 2, 4, 8 or 16 (floatN vector loads)
//   UNROLL  independent loads in flight per work-item and loop step
//   ATOMICS 1: add the group's sum to dst[0] atomically; 0: write dst[group]
// The host chooses the number of work-groups: as many as the data needs (one loop step per
// work-item) or a fixed number per compute unit (a grid-stride loop).

#if VW == 1
  #define VTYPE float
  #define HSUM(x) (x)
#elif VW == 2
  #define VTYPE float2
  #define HSUM(x) ((x).s0 + (x).s1)
#elif VW == 4
  #define VTYPE float4
  #define HSUM(x) (((x).s0 + (x).s1) + ((x).s2 + (x).s3))
#elif VW == 8
  #define VTYPE float8
  #define HSUM4(x) (((x).s0 + (x).s1) + ((x).s2 + (x).s3))
  #define HSUM(x) (HSUM4((x).lo) + HSUM4((x).hi))
#elif VW == 16
  #define VTYPE float16
  #define HSUM4(x) (((x).s0 + (x).s1) + ((x).s2 + (x).s3))
  #define HSUM8(x) (HSUM4((x).lo) + HSUM4((x).hi))
  #define HSUM(x) (HSUM8((x).lo) + HSUM8((x).hi))
#endif

#if ATOMICS
// Float addition with a compare-and-swap loop (OpenCL 1.2 has no float atomics).
inline void atomic_add_float(volatile __global float* p, float v) {
    union { uint u; float f; } old, sum;
    do {
        old.f = *p;
        sum.f = old.f + v;
    } while (atomic_cmpxchg((volatile __global uint*)p, old.u, sum.u) != old.u);
}
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce(__global const float* restrict src, __global float* restrict dst, const uint n) {
    __local float part[WG];
    const uint lid = get_local_id(0);
    const uint step = get_global_size(0);
    const uint nv = n / VW;
    __global const VTYPE* v = (__global const VTYPE*)src;

    float acc[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = 0.0f;
    uint i = get_global_id(0);
    // UNROLL loads in flight per step, each from a whole-grid stride apart (coalesced).
    for (; i + (UNROLL - 1) * step < nv; i += UNROLL * step) {
        #pragma unroll
        for (int u = 0; u < UNROLL; u++) acc[u] += HSUM(v[i + u * step]);
    }
    for (; i < nv; i += step) acc[0] += HSUM(v[i]);
    // The last n % VW floats.
    const uint tail = nv * VW + get_global_id(0);
    if (tail < n) acc[0] += src[tail];
    float sum = 0.0f;
    for (int u = 0; u < UNROLL; u++) sum += acc[u];

    part[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
#if ATOMICS
        atomic_add_float(dst, part[0]);
#else
        dst[get_group_id(0)] = part[0];
#endif
    }
}

// A copy of n4 float4s (grid-stride): the device's copy bandwidth, timed the same way.
__kernel void copy(__global const float4* restrict src, __global float4* restrict dst,
                   const uint n4) {
    for (uint i = get_global_id(0); i < n4; i += get_global_size(0)) dst[i] = src[i];
}
