// Tunable SGEMM of the CLBlast Xgemm class, written for tune: C = alpha * A * B + beta * C,
// row-major, A is M x K, B is K x N, C is M x N. Plain fp32 FFMA (no tensor cores).
//
// Tuning parameters (preprocessor defines):
//   BM, BN, BK   block tile: a block computes BM x BN of C, stepping BK along K
//   TM, TN       thread tile (multiples of 4): each thread computes TM x TN of C, held in
//                registers, as (TM/4) x (TN/4) groups of 4 x 4 spread over the block tile so
//                that shared-memory reads are 16-byte and conflict-free
//   VA, VB       vector width (1, 2, 4) of the global loads of A and B
//   PADA, PADB   padding (0 or 4 floats) of the shared-memory rows of A^T and B
//   DB           1: double-buffered shared memory with register prefetch (one barrier per
//                K step); 0: single buffer (two barriers)
//   UNR          1: fully unrolled inner loop over BK; 0: not unrolled
//   SWZ          block rasterisation: SWZ consecutive block rows share B tiles in L2
//   MINB         minimum resident blocks per multiprocessor (__launch_bounds__)
// Fixed defines: M, N, K (multiples of BM, BN, BK; the tuner's constraints ensure it), or
// SIZE_ARGS: M, N, K are the last three arguments instead (one binary for every size; the
// caller pads to multiples of BM, BN, BK, as examples/select_gemm does).
// Launch: block (BM/TM)*(BN/TN) threads, grid (N/BN, M/BM), dynamic shared memory
// (DB+1) * BK * ((BM+PADA) + (BN+PADB)) * 4 bytes.

#define NT ((BM / TM) * (BN / TN))
#define LDA_S (BM + PADA)
#define LDB_S (BN + PADB)
#define NBUF (DB + 1)
// Vectors each thread loads per tile.
#define LA ((BM * BK) / (VA * NT))
#define LB ((BK * BN) / (VB * NT))

#if UNR
#define INNER_UNROLL _Pragma("unroll")
#else
#define INNER_UNROLL _Pragma("unroll 1")
#endif

__device__ __forceinline__ void load_vec_a(float* r, const float* __restrict__ p) {
#if VA == 4
    float4 v = __ldg(reinterpret_cast<const float4*>(p));
    r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
#elif VA == 2
    float2 v = __ldg(reinterpret_cast<const float2*>(p));
    r[0] = v.x; r[1] = v.y;
#else
    r[0] = __ldg(p);
#endif
}

__device__ __forceinline__ void load_vec_b(float* r, const float* __restrict__ p) {
#if VB == 4
    float4 v = __ldg(reinterpret_cast<const float4*>(p));
    r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
#elif VB == 2
    float2 v = __ldg(reinterpret_cast<const float2*>(p));
    r[0] = v.x; r[1] = v.y;
#else
    r[0] = __ldg(p);
#endif
}

extern "C" __global__ void __launch_bounds__(NT, MINB)
#ifdef SIZE_ARGS
sgemm(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
      float alpha, float beta, const int M, const int N, const int K) {
#else
sgemm(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,
      float alpha, float beta) {
#endif
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                          // [NBUF][BK][LDA_S], A transposed
    float* Bs = smem + NBUF * BK * LDA_S;      // [NBUF][BK][LDB_S]

    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);
    const int ty = tid / (BN / TN);

    // Block rasterisation: groups of SWZ block rows walk along N together.
    const int num_n = N / BN;
    const int num_m = M / BM;
    const int pid = blockIdx.y * gridDim.x + blockIdx.x;
    const int group = SWZ * num_n;
    const int first_m = (pid / group) * SWZ;
    const int gsz = min(num_m - first_m, SWZ);
    const int bm = (first_m + (pid % group) % gsz) * BM;
    const int bn = ((pid % group) / gsz) * BN;

    const float* Ab = A + (size_t)bm * K;
    const float* Bb = B + bn;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    float ra[LA * VA];
    float rb[LB * VB];

    // Global -> registers for the tile starting at k0.
#define LOAD_TILE(k0)                                                              \
    {                                                                              \
        _Pragma("unroll") for (int l = 0; l < LA; ++l) {                           \
            const int i = tid + l * NT;                                            \
            const int m = i / (BK / VA);                                           \
            const int kv = i % (BK / VA);                                          \
            load_vec_a(&ra[l * VA], Ab + (size_t)m * K + (k0) + kv * VA);          \
        }                                                                          \
        _Pragma("unroll") for (int l = 0; l < LB; ++l) {                           \
            const int i = tid + l * NT;                                            \
            const int k = i / (BN / VB);                                           \
            const int nv = i % (BN / VB);                                          \
            load_vec_b(&rb[l * VB], Bb + (size_t)((k0) + k) * N + nv * VB);        \
        }                                                                          \
    }
    // Registers -> shared buffer `buf` (A transposed).
#define STORE_TILE(buf)                                                            \
    {                                                                              \
        float* as = As + (buf) * BK * LDA_S;                                       \
        float* bs = Bs + (buf) * BK * LDB_S;                                       \
        _Pragma("unroll") for (int l = 0; l < LA; ++l) {                           \
            const int i = tid + l * NT;                                            \
            const int m = i / (BK / VA);                                           \
            const int kv = i % (BK / VA);                                          \
            _Pragma("unroll") for (int v = 0; v < VA; ++v)                         \
                as[(kv * VA + v) * LDA_S + m] = ra[l * VA + v];                    \
        }                                                                          \
        _Pragma("unroll") for (int l = 0; l < LB; ++l) {                           \
            const int i = tid + l * NT;                                            \
            const int k = i / (BN / VB);                                           \
            const int nv = i % (BN / VB);                                          \
            _Pragma("unroll") for (int v = 0; v < VB; ++v)                         \
                bs[k * LDB_S + nv * VB + v] = rb[l * VB + v];                      \
        }                                                                          \
    }

    // Multiply the tile in shared buffer `buf`.
#define COMPUTE_TILE(buf)                                                          \
    {                                                                              \
        const float* as = As + (buf) * BK * LDA_S;                                 \
        const float* bs = Bs + (buf) * BK * LDB_S;                                 \
        INNER_UNROLL for (int kk = 0; kk < BK; ++kk) {                             \
            float a[TM], b[TN];                                                    \
            _Pragma("unroll") for (int g = 0; g < TM / 4; ++g) {                   \
                const float4 v = *reinterpret_cast<const float4*>(                 \
                    as + kk * LDA_S + g * (BM * 4 / TM) + ty * 4);                 \
                a[g * 4 + 0] = v.x; a[g * 4 + 1] = v.y;                            \
                a[g * 4 + 2] = v.z; a[g * 4 + 3] = v.w;                            \
            }                                                                      \
            _Pragma("unroll") for (int g = 0; g < TN / 4; ++g) {                   \
                const float4 v = *reinterpret_cast<const float4*>(                 \
                    bs + kk * LDB_S + g * (BN * 4 / TN) + tx * 4);                 \
                b[g * 4 + 0] = v.x; b[g * 4 + 1] = v.y;                            \
                b[g * 4 + 2] = v.z; b[g * 4 + 3] = v.w;                            \
            }                                                                      \
            _Pragma("unroll") for (int i = 0; i < TM; ++i)                         \
                _Pragma("unroll") for (int j = 0; j < TN; ++j)                     \
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);                       \
        }                                                                          \
    }

    LOAD_TILE(0);
    STORE_TILE(0);
    __syncthreads();
#if DB
    int buf = 0;
    for (int k0 = BK; k0 < K; k0 += BK) {
        LOAD_TILE(k0);       // next tile in flight while this one is multiplied
        COMPUTE_TILE(buf);
        STORE_TILE(buf ^ 1);
        __syncthreads();
        buf ^= 1;
    }
    COMPUTE_TILE(buf);
#else
    for (int k0 = BK; k0 < K; k0 += BK) {
        LOAD_TILE(k0);
        COMPUTE_TILE(0);
        __syncthreads();
        STORE_TILE(0);
        __syncthreads();
    }
    COMPUTE_TILE(0);
#endif

    // Epilogue: 16-byte stores of 4 x 4 groups.
#pragma unroll
    for (int gi = 0; gi < TM / 4; ++gi) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = bm + gi * (BM * 4 / TM) + ty * 4 + r;
#pragma unroll
            for (int gj = 0; gj < TN / 4; ++gj) {
                const int col = bn + gj * (BN * 4 / TN) + tx * 4;
                float4* dst = reinterpret_cast<float4*>(C + (size_t)row * N + col);
                float4 v;
                v.x = alpha * acc[gi * 4 + r][gj * 4 + 0];
                v.y = alpha * acc[gi * 4 + r][gj * 4 + 1];
                v.z = alpha * acc[gi * 4 + r][gj * 4 + 2];
                v.w = alpha * acc[gi * 4 + r][gj * 4 + 3];
                if (beta != 0.0f) {
                    const float4 c = *dst;
                    v.x += beta * c.x; v.y += beta * c.y; v.z += beta * c.z; v.w += beta * c.w;
                }
                *dst = v;
            }
        }
    }
}
