// GEMM for small and odd sizes in the style of CLBlast's XgemmDirect (written for tune):
// C = alpha * A * B + beta * C, row-major, any M, N, K (bounds are checked, nothing padded).
//
// Tuning parameters (the names of CLBlast/ATF):
//   WGD     tile size of a block in M, N and K
//   MDIMCD  threads along M (block x), NDIMCD threads along N (block y)
//   MDIMAD  threads along M when loading the A tile (the rest go along K)
//   NDIMBD  threads along N when loading the B tile (the rest go along K)
//   KWID    unroll factor of the loop over K inside a tile
//   VWMD    a thread's rows come in runs of VWMD consecutive rows
//   VWND    a thread's columns come in runs of VWND consecutive columns
//   PADA, PADB  pad the shared-memory tiles by one word per row (bank conflicts)
// Launch: block (MDIMCD, NDIMCD), grid (ceil(M / WGD), ceil(N / WGD)); with the OpenCL-style
// global size of CLBlast: global = (ceil(M / WGD) * MDIMCD, ceil(N / WGD) * NDIMCD).

#define MWID (WGD / MDIMCD)
#define NWID (WGD / NDIMCD)
#define NTD (MDIMCD * NDIMCD)
#define KDIMAD (NTD / MDIMAD)
#define KDIMBD (NTD / NDIMBD)
// Loads per thread and tile (the last ones may fall outside the tile).
#define NA_M ((WGD + MDIMAD - 1) / MDIMAD)
#define NA_K ((WGD + KDIMAD - 1) / KDIMAD)
#define NB_N ((WGD + NDIMBD - 1) / NDIMBD)
#define NB_K ((WGD + KDIMBD - 1) / KDIMBD)
// With small per-thread tiles (the small and odd shapes this kernel is for), the next k
// tile is loaded into registers while the current one is multiplied, and C is read before
// the k loop, so that global-memory latencies overlap instead of adding up.
#define PREFETCH (MWID * NWID <= 32)

__device__ __forceinline__ float load_or_zero(const float* p, bool in) {
    return in ? *p : 0.0f;
}

extern "C" __global__ void __launch_bounds__(NTD)
xgemm_direct(const int M, const int N, const int K, const float alpha, const float beta,
             const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    __shared__ float Als[WGD][WGD + PADA];  // [k][m]
    __shared__ float Bls[WGD][WGD + PADB];  // [k][n]

    const int tm = threadIdx.x;
    const int tn = threadIdx.y;
    const int tid = tn * MDIMCD + tm;
    const int bm = blockIdx.x * WGD;
    const int bn = blockIdx.y * WGD;

    float acc[MWID][NWID];
#pragma unroll
    for (int i = 0; i < MWID; ++i)
#pragma unroll
        for (int j = 0; j < NWID; ++j) acc[i][j] = 0.0f;

    const int la_m = tid % MDIMAD, la_k = tid / MDIMAD;
    const int lb_n = tid % NDIMBD, lb_k = tid / NDIMBD;

#if PREFETCH
    float cpre[MWID][NWID];
#pragma unroll
    for (int i = 0; i < MWID; ++i) {
        const int gm = bm + (i / VWMD) * (MDIMCD * VWMD) + tm * VWMD + i % VWMD;
#pragma unroll
        for (int j = 0; j < NWID; ++j) {
            const int gn = bn + (j / VWND) * (NDIMCD * VWND) + tn * VWND + j % VWND;
            cpre[i][j] = load_or_zero(&C[gm * N + gn], beta != 0.0f && gm < M && gn < N);
        }
    }
    float ra[NA_M][NA_K], rb[NB_N][NB_K];
#define LOAD_TILES(kb)                                                                     \
    {                                                                                      \
        _Pragma("unroll") for (int i = 0; i < NA_M; ++i) {                                 \
            _Pragma("unroll") for (int q = 0; q < NA_K; ++q) {                             \
                const int mi = la_m + i * MDIMAD, ki = la_k + q * KDIMAD;                  \
                ra[i][q] = load_or_zero(&A[(bm + mi) * K + (kb) + ki],                     \
                                        mi < WGD && ki < WGD && bm + mi < M && (kb) + ki < K); \
            }                                                                              \
        }                                                                                  \
        _Pragma("unroll") for (int i = 0; i < NB_N; ++i) {                                 \
            _Pragma("unroll") for (int q = 0; q < NB_K; ++q) {                             \
                const int ni = lb_n + i * NDIMBD, ki = lb_k + q * KDIMBD;                  \
                rb[i][q] = load_or_zero(&B[((kb) + ki) * N + bn + ni],                     \
                                        ni < WGD && ki < WGD && bn + ni < N && (kb) + ki < K); \
            }                                                                              \
        }                                                                                  \
    }
    LOAD_TILES(0)
#endif

    for (int k0 = 0; k0 < K; k0 += WGD) {
        const int kmax = min(WGD, K - k0);
#if PREFETCH
        // Stage the tile loaded in the previous step, then load the next one.
#pragma unroll
        for (int i = 0; i < NA_M; ++i)
#pragma unroll
            for (int q = 0; q < NA_K; ++q) {
                const int mi = la_m + i * MDIMAD, ki = la_k + q * KDIMAD;
                if (mi < WGD && ki < WGD) Als[ki][mi] = ra[i][q];
            }
#pragma unroll
        for (int i = 0; i < NB_N; ++i)
#pragma unroll
            for (int q = 0; q < NB_K; ++q) {
                const int ni = lb_n + i * NDIMBD, ki = lb_k + q * KDIMBD;
                if (ni < WGD && ki < WGD) Bls[ki][ni] = rb[i][q];
            }
        __syncthreads();
        if (k0 + WGD < K) LOAD_TILES(k0 + WGD)
#else
        // Rows of a partial last tile past K are neither staged nor read.
        for (int mi = la_m; mi < WGD; mi += MDIMAD)
            for (int ki = la_k; ki < kmax; ki += KDIMAD) {
                const int gm = bm + mi, gk = k0 + ki;
                Als[ki][mi] = gm < M ? A[gm * K + gk] : 0.0f;
            }
        for (int ni = lb_n; ni < WGD; ni += NDIMBD)
            for (int ki = lb_k; ki < kmax; ki += KDIMBD) {
                const int gn = bn + ni, gk = k0 + ki;
                Bls[ki][ni] = gn < N ? B[gk * N + gn] : 0.0f;
            }
        __syncthreads();
#endif
#pragma unroll KWID
        for (int kk = 0; kk < kmax; ++kk) {
            float a[MWID], b[NWID];
#pragma unroll
            for (int i = 0; i < MWID; ++i)
                a[i] = Als[kk][(i / VWMD) * (MDIMCD * VWMD) + tm * VWMD + i % VWMD];
#pragma unroll
            for (int j = 0; j < NWID; ++j)
                b[j] = Bls[kk][(j / VWND) * (NDIMCD * VWND) + tn * VWND + j % VWND];
#pragma unroll
            for (int i = 0; i < MWID; ++i)
#pragma unroll
                for (int j = 0; j < NWID; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < MWID; ++i) {
        const int gm = bm + (i / VWMD) * (MDIMCD * VWMD) + tm * VWMD + i % VWMD;
#pragma unroll
        for (int j = 0; j < NWID; ++j) {
            const int gn = bn + (j / VWND) * (NDIMCD * VWND) + tn * VWND + j % VWND;
            if (gm < M && gn < N) {
#if PREFETCH
                C[gm * N + gn] = alpha * acc[i][j] + beta * cpre[i][j];
#else
                float v = alpha * acc[i][j];
                if (beta != 0.0f) v += beta * C[gm * N + gn];
                C[gm * N + gn] = v;
#endif
            }
        }
    }
}
