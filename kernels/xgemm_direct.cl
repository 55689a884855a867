// A GEMM of CLBlast's XgemmDirect class (one kernel, any M, N, K, no pre/post-processing),
// with the tuning parameters ATF tunes, written for tune:
// C = alpha * A^T * B + beta * C, A stored K x M (m fastest), B K x N (n fastest),
// C N x M (m fastest).
//
// Tuning parameters:
//   WGD             tile size in m, n and k of a work-group
//   MDIMCD, NDIMCD  work-group size; a work-item computes (WGD/MDIMCD) x (WGD/NDIMCD)
//   MDIMAD, NDIMBD  shape of the work-group when loading the A and B tiles
//   KWID            unroll factor of the k loop
//   VWMD, VWND      vector widths of the tile loads along m and n
//   PADA, PADB      an extra column in the local tiles against bank conflicts
// Global size (CLBlast's): (ceil(M / WGD) * MDIMCD, ceil(N / WGD) * NDIMCD); local (MDIMCD, NDIMCD).
#define MWID (WGD / MDIMCD)
#define NWID (WGD / NDIMCD)
#define KDIMAD ((MDIMCD * NDIMCD) / MDIMAD)
#define KDIMBD ((MDIMCD * NDIMCD) / NDIMBD)
#define APITCH (WGD + PADA)
#define BPITCH (WGD + PADB)
// Loads per work-item and tile: A as NA_M x NA_K vectors of VWMD, B as NB_N x NB_K of VWND.
#define NA_M (WGD / (MDIMAD * VWMD))
#define NA_K (WGD / KDIMAD)
#define NB_N (WGD / (NDIMBD * VWND))
#define NB_K (WGD / KDIMBD)
// With small per-work-item tiles (the small and odd shapes this kernel is for), the next k
// tile is loaded into registers while the current one is multiplied, and C is read before
// the k loop, so that global-memory latencies overlap instead of adding up. Large tiles
// would need too many registers for it.
#define PREFETCH (MWID * NWID <= 32)

#if VWMD == 1
  #define LOADA(p) (*(p))
  #define ARRAYA(t) ((t)[0])
  typedef float floatA;
  #define PUTA(t, i, v) t[i] = (v)
#elif VWMD == 2
  #define LOADA(p) vload2(0, (p))
  #define ARRAYA(t) vload2(0, (t))
  typedef float2 floatA;
  #define PUTA(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1
#elif VWMD == 4
  #define LOADA(p) vload4(0, (p))
  #define ARRAYA(t) vload4(0, (t))
  typedef float4 floatA;
  #define PUTA(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3
#elif VWMD == 8
  #define LOADA(p) vload8(0, (p))
  #define ARRAYA(t) vload8(0, (t))
  typedef float8 floatA;
  #define PUTA(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3; \
      t[i + 4] = (v).s4; t[i + 5] = (v).s5; t[i + 6] = (v).s6; t[i + 7] = (v).s7
#endif
#if VWND == 1
  #define LOADB(p) (*(p))
  #define ARRAYB(t) ((t)[0])
  typedef float floatB;
  #define PUTB(t, i, v) t[i] = (v)
#elif VWND == 2
  #define LOADB(p) vload2(0, (p))
  #define ARRAYB(t) vload2(0, (t))
  typedef float2 floatB;
  #define PUTB(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1
#elif VWND == 4
  #define LOADB(p) vload4(0, (p))
  #define ARRAYB(t) vload4(0, (t))
  typedef float4 floatB;
  #define PUTB(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3
#elif VWND == 8
  #define LOADB(p) vload8(0, (p))
  #define ARRAYB(t) vload8(0, (t))
  typedef float8 floatB;
  #define PUTB(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3; \
      t[i + 4] = (v).s4; t[i + 5] = (v).s5; t[i + 6] = (v).s6; t[i + 7] = (v).s7
#endif

// Row k of the staged tiles into the work-item's accumulators.
#define MULTIPLY_ROW(k) { \
    float apm[MWID]; \
    float bpm[NWID]; \
    _Pragma("unroll") \
    for (int mi = 0; mi < MWID; mi++) { \
        apm[mi] = alm[(k) * APITCH + mi * MDIMCD + tm]; \
    } \
    _Pragma("unroll") \
    for (int ni = 0; ni < NWID; ni++) { \
        bpm[ni] = blm[(k) * BPITCH + ni * NDIMCD + tn]; \
    } \
    _Pragma("unroll") \
    for (int mi = 0; mi < MWID; mi++) { \
        _Pragma("unroll") \
        for (int ni = 0; ni < NWID; ni++) { \
            acc[mi][ni] = mad(apm[mi], bpm[ni], acc[mi][ni]); \
        } \
    } \
}

// One vector of the A tile starting at row k0: a vector load when the tile is whole,
// element by element (zeros outside the matrix) at the edges.
inline floatA load_a(const __global float* restrict A, const int M, const int K, const int m0,
                     const int k0, const int m, const int k, const bool full) {
    if (full) {
        return LOADA(&A[(k0 + k) * M + m0 + m]);
    }
    float t[VWMD];
    #pragma unroll
    for (int j = 0; j < VWMD; j++) {
        t[j] = (k0 + k < K && m0 + m + j < M) ? A[(k0 + k) * M + m0 + m + j] : 0.0f;
    }
    return ARRAYA(t);
}

inline floatB load_b(const __global float* restrict B, const int N, const int K, const int n0,
                     const int k0, const int n, const int k, const bool full) {
    if (full) {
        return LOADB(&B[(k0 + k) * N + n0 + n]);
    }
    float t[VWND];
    #pragma unroll
    for (int j = 0; j < VWND; j++) {
        t[j] = (k0 + k < K && n0 + n + j < N) ? B[(k0 + k) * N + n0 + n + j] : 0.0f;
    }
    return ARRAYB(t);
}

// Position of load (i, kk) of this work-item in the A (B) tile.
#define A_M(i) (((i) * MDIMAD + la_m) * VWMD)
#define A_K(kk) ((kk) * KDIMAD + la_k)
#define B_N(i) (((i) * NDIMBD + lb_n) * VWND)
#define B_K(kk) ((kk) * KDIMBD + lb_k)

__kernel __attribute__((reqd_work_group_size(MDIMCD, NDIMCD, 1)))
void xgemm_direct(const int M, const int N, const int K, const float alpha, const float beta,
                  const __global float* restrict A, const __global float* restrict B,
                  __global float* C) {
    const int tm = get_local_id(0);
    const int tn = get_local_id(1);
    const int tid = tn * MDIMCD + tm;
    const int m0 = get_group_id(0) * WGD;
    const int n0 = get_group_id(1) * WGD;
    __local float alm[WGD * APITCH];
    __local float blm[WGD * BPITCH];
    const int la_m = tid % MDIMAD;
    const int la_k = tid / MDIMAD;
    const int lb_n = tid % NDIMBD;
    const int lb_k = tid / NDIMBD;
    const bool full_m = m0 + WGD <= M;
    const bool full_n = n0 + WGD <= N;

    float acc[MWID][NWID];
    #pragma unroll
    for (int mi = 0; mi < MWID; mi++) {
        #pragma unroll
        for (int ni = 0; ni < NWID; ni++) {
            acc[mi][ni] = 0.0f;
        }
    }

#if PREFETCH
    float cpre[MWID][NWID];
    #pragma unroll
    for (int ni = 0; ni < NWID; ni++) {
        const int n = n0 + ni * NDIMCD + tn;
        #pragma unroll
        for (int mi = 0; mi < MWID; mi++) {
            const int m = m0 + mi * MDIMCD + tm;
            cpre[mi][ni] = (beta != 0.0f && m < M && n < N) ? C[n * M + m] : 0.0f;
        }
    }
    floatA ra[NA_M][NA_K];
    floatB rb[NB_N][NB_K];
    #pragma unroll
    for (int i = 0; i < NA_M; i++) {
        #pragma unroll
        for (int kk = 0; kk < NA_K; kk++) {
            ra[i][kk] = load_a(A, M, K, m0, 0, A_M(i), A_K(kk), full_m && WGD <= K);
        }
    }
    #pragma unroll
    for (int i = 0; i < NB_N; i++) {
        #pragma unroll
        for (int kk = 0; kk < NB_K; kk++) {
            rb[i][kk] = load_b(B, N, K, n0, 0, B_N(i), B_K(kk), full_n && WGD <= K);
        }
    }
#endif

    for (int k0 = 0; k0 < K; k0 += WGD) {
        const bool full_k = k0 + WGD <= K;
#if PREFETCH
        // Stage the tile loaded in the previous step, then load the next one.
        #pragma unroll
        for (int i = 0; i < NA_M; i++) {
            #pragma unroll
            for (int kk = 0; kk < NA_K; kk++) {
                PUTA(alm, A_K(kk) * APITCH + A_M(i), ra[i][kk]);
            }
        }
        #pragma unroll
        for (int i = 0; i < NB_N; i++) {
            #pragma unroll
            for (int kk = 0; kk < NB_K; kk++) {
                PUTB(blm, B_K(kk) * BPITCH + B_N(i), rb[i][kk]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const int k1 = k0 + WGD;
        if (k1 < K) {
            const bool next_full = k1 + WGD <= K;
            #pragma unroll
            for (int i = 0; i < NA_M; i++) {
                #pragma unroll
                for (int kk = 0; kk < NA_K; kk++) {
                    ra[i][kk] = load_a(A, M, K, m0, k1, A_M(i), A_K(kk), full_m && next_full);
                }
            }
            #pragma unroll
            for (int i = 0; i < NB_N; i++) {
                #pragma unroll
                for (int kk = 0; kk < NB_K; kk++) {
                    rb[i][kk] = load_b(B, N, K, n0, k1, B_N(i), B_K(kk), full_n && next_full);
                }
            }
        }
#else
        // Stage the A tile (k x m) and the B tile (k x n) straight from global memory; rows
        // past K are never read (the k loop stops at K), so they are not staged.
        #pragma unroll
        for (int i = 0; i < NA_M; i++) {
            #pragma unroll
            for (int kk = 0; kk < NA_K; kk++) {
                if (full_k || k0 + A_K(kk) < K) {
                    const floatA v = load_a(A, M, K, m0, k0, A_M(i), A_K(kk), full_m && full_k);
                    PUTA(alm, A_K(kk) * APITCH + A_M(i), v);
                }
            }
        }
        #pragma unroll
        for (int i = 0; i < NB_N; i++) {
            #pragma unroll
            for (int kk = 0; kk < NB_K; kk++) {
                if (full_k || k0 + B_K(kk) < K) {
                    const floatB v = load_b(B, N, K, n0, k0, B_N(i), B_K(kk), full_n && full_k);
                    PUTB(blm, B_K(kk) * BPITCH + B_N(i), v);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        if (full_k) {
            for (int kw = 0; kw < WGD; kw += KWID) {
                #pragma unroll
                for (int ki = 0; ki < KWID; ki++) {
                    MULTIPLY_ROW(kw + ki);
                }
            }
        } else {
            // The last, partial k tile (all of K when K < WGD): only its K - k0 rows.
            for (int k = 0; k < K - k0; k++) {
                MULTIPLY_ROW(k);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    #pragma unroll
    for (int ni = 0; ni < NWID; ni++) {
        const int n = n0 + ni * NDIMCD + tn;
        #pragma unroll
        for (int mi = 0; mi < MWID; mi++) {
            const int m = m0 + mi * MDIMCD + tm;
            if (m < M && n < N) {
                const int i = n * M + m;
#if PREFETCH
                C[i] = alpha * acc[mi][ni] + beta * cpre[mi][ni];
#else
                C[i] = alpha * acc[mi][ni] + beta * C[i];
#endif
            }
        }
    }
}
