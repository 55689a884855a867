// LSD radix sort of 32-bit keys as a composition of three kernels, written for tune after
// KTT's sorting example (thesis, section 6.2); the CUDA twin of radix_sort.cl, with the same
// arguments, tuning parameters and algorithm:
//   histogram: block g counts the digits of its chunk of keys into hist[d * G + g];
//   scan:      one block scans hist in place (exclusive prefix sums);
//   scatter:   block g sorts each tile of its chunk by digit in shared memory (stable
//              1-bit splits) and writes every key to its place.
//
// Tuning parameters: RADIX_BITS (bits per pass), WG (threads per block), ITEMS (keys per
// thread in a tile of WG * ITEMS keys).

#define RADIX (1u << RADIX_BITS)
#define MASK (RADIX - 1u)
#define TILE (WG * ITEMS)

// Exclusive prefix sum of one value per thread over the block; `total` gets the sum.
__device__ unsigned scan_block(unsigned v, unsigned* s, unsigned lid, unsigned* total) {
    s[lid] = v;
    __syncthreads();
    for (unsigned off = 1; off < WG; off <<= 1) {
        const unsigned t = lid >= off ? s[lid - off] : 0u;
        __syncthreads();
        s[lid] += t;
        __syncthreads();
    }
    const unsigned incl = s[lid];
    *total = s[WG - 1];
    __syncthreads();
    return incl - v;
}

extern "C" __global__ void __launch_bounds__(WG)
histogram(const unsigned* __restrict__ keys, unsigned* __restrict__ hist, const unsigned n,
          const unsigned shift, const unsigned chunk) {
    __shared__ unsigned count[RADIX];
    const unsigned lid = threadIdx.x;
    const unsigned g = blockIdx.x;
    for (unsigned d = lid; d < RADIX; d += WG) count[d] = 0u;
    __syncthreads();
    const unsigned begin = g * chunk;
    const unsigned end = min(n, begin + chunk);
    for (unsigned i = begin + lid; i < end; i += WG) atomicAdd(&count[(keys[i] >> shift) & MASK], 1u);
    __syncthreads();
    for (unsigned d = lid; d < RADIX; d += WG) hist[d * gridDim.x + g] = count[d];
}

extern "C" __global__ void __launch_bounds__(WG) scan(unsigned* hist, const unsigned len) {
    __shared__ unsigned s[WG];
    const unsigned lid = threadIdx.x;
    unsigned carry = 0u;
    for (unsigned base = 0; base < len; base += TILE) {
        unsigned v[ITEMS];
        unsigned mine = 0u;
        #pragma unroll
        for (unsigned j = 0; j < ITEMS; j++) {
            const unsigned i = base + lid * ITEMS + j;
            v[j] = i < len ? hist[i] : 0u;
            mine += v[j];
        }
        unsigned total;
        unsigned run = carry + scan_block(mine, s, lid, &total);
        #pragma unroll
        for (unsigned j = 0; j < ITEMS; j++) {
            const unsigned i = base + lid * ITEMS + j;
            if (i < len) hist[i] = run;
            run += v[j];
        }
        carry += total;
    }
}

extern "C" __global__ void __launch_bounds__(WG)
scatter(const unsigned* __restrict__ in, unsigned* __restrict__ out,
        const unsigned* __restrict__ hist, const unsigned n, const unsigned shift,
        const unsigned chunk) {
    __shared__ unsigned tile[TILE];
    __shared__ unsigned s[WG];
    __shared__ unsigned place[RADIX];
    __shared__ unsigned first[RADIX];
    __shared__ unsigned last[RADIX];
    const unsigned lid = threadIdx.x;
    const unsigned g = blockIdx.x;
    for (unsigned d = lid; d < RADIX; d += WG) place[d] = hist[d * gridDim.x + g];
    const unsigned begin = g * chunk;
    const unsigned end = min(n, begin + chunk);
    for (unsigned base = begin; base < end; base += TILE) {
        const unsigned valid = min((unsigned)TILE, end - base);
        #pragma unroll
        for (unsigned j = 0; j < ITEMS; j++) {
            const unsigned k = j * WG + lid;
            tile[k] = k < valid ? in[base + k] : 0xffffffffu;
        }
        for (unsigned d = lid; d < RADIX; d += WG) {
            first[d] = 0u;
            last[d] = 0u;
        }
        __syncthreads();
        for (unsigned bit = 0; bit < RADIX_BITS; bit++) {
            unsigned k[ITEMS];
            unsigned zeros = 0u;
            #pragma unroll
            for (unsigned j = 0; j < ITEMS; j++) {
                k[j] = tile[lid * ITEMS + j];
                zeros += ((k[j] >> (shift + bit)) & 1u) ^ 1u;
            }
            unsigned all_zeros;
            unsigned z = scan_block(zeros, s, lid, &all_zeros);
            #pragma unroll
            for (unsigned j = 0; j < ITEMS; j++) {
                const unsigned i = lid * ITEMS + j;
                const unsigned one = (k[j] >> (shift + bit)) & 1u;
                const unsigned to = one ? all_zeros + (i - z) : z;
                z += one ^ 1u;
                tile[to] = k[j];
            }
            __syncthreads();
        }
        #pragma unroll
        for (unsigned j = 0; j < ITEMS; j++) {
            const unsigned i = lid * ITEMS + j;
            if (i < valid) {
                const unsigned d = (tile[i] >> shift) & MASK;
                if (i == 0 || d != ((tile[i - 1] >> shift) & MASK)) first[d] = i;
                if (i == valid - 1 || d != ((tile[i + 1] >> shift) & MASK)) last[d] = i + 1;
            }
        }
        __syncthreads();
        #pragma unroll
        for (unsigned j = 0; j < ITEMS; j++) {
            const unsigned i = j * WG + lid;
            if (i < valid) {
                const unsigned key = tile[i];
                const unsigned d = (key >> shift) & MASK;
                out[place[d] + i - first[d]] = key;
            }
        }
        __syncthreads();
        for (unsigned d = lid; d < RADIX; d += WG) place[d] += last[d] - first[d];
        __syncthreads();
    }
}
