// Sum of floats, written for tune after KTT's reduction example (thesis, section 6.1); the
// CUDA twin of reduction.cl, with the same arguments and tuning parameters.
//
// `reduce` sums `n` floats of `src`: every block adds its share to one partial sum, which
// it writes to dst[block] (multi-pass: the host launches again over the partial sums until
// one remains) or adds to dst[0] with atomicAdd (one launch).
//
// Tuning parameters:
//   WG      threads per block (a multiple of 32)
//   VW      floats per load: 1, 2 or 4 (float, float2, float4 loads)
//   UNROLL  independent loads in flight per thread and loop step
//   ATOMICS 1: atomicAdd of the block's sum to dst[0]; 0: write dst[block]

#if VW == 1
  typedef float vtype;
  #define HSUM(a) (a)
#elif VW == 2
  typedef float2 vtype;
  #define HSUM(a) ((a).x + (a).y)
#elif VW == 4
  typedef float4 vtype;
  #define HSUM(a) (((a).x + (a).y) + ((a).z + (a).w))
#endif

extern "C" __global__ void __launch_bounds__(WG)
reduce(const float* __restrict__ src, float* __restrict__ dst, const unsigned n) {
    __shared__ float part[WG / 32];
    const unsigned lid = threadIdx.x;
    const unsigned step = gridDim.x * WG;
    const unsigned nv = n / VW;
    const vtype* v = reinterpret_cast<const vtype*>(src);

    float acc[UNROLL];
    #pragma unroll
    for (int u = 0; u < UNROLL; u++) acc[u] = 0.0f;
    unsigned i = blockIdx.x * WG + lid;
    // UNROLL loads in flight per step, each a whole grid apart (coalesced).
    for (; i + (UNROLL - 1) * step < nv; i += UNROLL * step) {
        vtype x[UNROLL];
        #pragma unroll
        for (int u = 0; u < UNROLL; u++) x[u] = __ldg(&v[i + u * step]);
        #pragma unroll
        for (int u = 0; u < UNROLL; u++) acc[u] += HSUM(x[u]);
    }
    for (; i < nv; i += step) acc[0] += HSUM(__ldg(&v[i]));
    // The last n % VW floats.
    const unsigned tail = nv * VW + blockIdx.x * WG + lid;
    if (tail < n) acc[0] += src[tail];
    float sum = 0.0f;
    #pragma unroll
    for (int u = 0; u < UNROLL; u++) sum += acc[u];

    // Within each warp by shuffles, then across the block's warps.
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
    if ((lid & 31) == 0) part[lid / 32] = sum;
    __syncthreads();
    if (lid < 32) {
        sum = lid < WG / 32 ? part[lid] : 0.0f;
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o);
        if (lid == 0) {
#if ATOMICS
            atomicAdd(dst, sum);
#else
            dst[blockIdx.x] = sum;
#endif
        }
    }
}

// A copy of n4 float4s (grid-stride): the device's copy bandwidth, timed the same way.
extern "C" __global__ void copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                const unsigned n4) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x)
        dst[i] = src[i];
}
