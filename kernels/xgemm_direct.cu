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

    for (int k0 = 0; k0 < K; k0 += WGD) {
        // Rows of a partial last tile past K are neither staged nor read.
        const int kmax = min(WGD, K - k0);
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
                float v = alpha * acc[i][j];
                if (beta != 0.0f) v += beta * C[gm * N + gn];
                C[gm * N + gn] = v;
            }
        }
    }
}
