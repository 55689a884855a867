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

#if VWMD == 1
  #define LOADA(p) (*(p))
  typedef float floatA;
  #define PUTA(t, i, v) t[i] = (v)
#elif VWMD == 2
  #define LOADA(p) vload2(0, (p))
  typedef float2 floatA;
  #define PUTA(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1
#elif VWMD == 4
  #define LOADA(p) vload4(0, (p))
  typedef float4 floatA;
  #define PUTA(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3
#elif VWMD == 8
  #define LOADA(p) vload8(0, (p))
  typedef float8 floatA;
  #define PUTA(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3; \
      t[i + 4] = (v).s4; t[i + 5] = (v).s5; t[i + 6] = (v).s6; t[i + 7] = (v).s7
#endif
#if VWND == 1
  #define LOADB(p) (*(p))
  typedef float floatB;
  #define PUTB(t, i, v) t[i] = (v)
#elif VWND == 2
  #define LOADB(p) vload2(0, (p))
  typedef float2 floatB;
  #define PUTB(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1
#elif VWND == 4
  #define LOADB(p) vload4(0, (p))
  typedef float4 floatB;
  #define PUTB(t, i, v) t[i] = (v).s0; t[i + 1] = (v).s1; t[i + 2] = (v).s2; t[i + 3] = (v).s3
#elif VWND == 8
  #define LOADB(p) vload8(0, (p))
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

    for (int k0 = 0; k0 < K; k0 += WGD) {
        const bool full_k = k0 + WGD <= K;
        // Stage the A tile (k x m) and the B tile (k x n); zeros outside the matrices.
        #pragma unroll
        for (int ia = 0; ia < WGD / (MDIMAD * VWMD); ia++) {
            #pragma unroll
            for (int ka = 0; ka < WGD / KDIMAD; ka++) {
                const int m = (ia * MDIMAD + la_m) * VWMD;
                const int k = ka * KDIMAD + la_k;
                if (full_m && full_k) {
                    const floatA v = LOADA(&A[(k0 + k) * M + m0 + m]);
                    PUTA(alm, k * APITCH + m, v);
                } else if (k0 + k < K) {
                    // Rows past K are never read (the k loop stops at K): not staged.
                    for (int j = 0; j < VWMD; j++) {
                        const bool in = m0 + m + j < M;
                        alm[k * APITCH + m + j] = in ? A[(k0 + k) * M + m0 + m + j] : 0.0f;
                    }
                }
            }
        }
        #pragma unroll
        for (int ib = 0; ib < WGD / (NDIMBD * VWND); ib++) {
            #pragma unroll
            for (int kb = 0; kb < WGD / KDIMBD; kb++) {
                const int n = (ib * NDIMBD + lb_n) * VWND;
                const int k = kb * KDIMBD + lb_k;
                if (full_n && full_k) {
                    const floatB v = LOADB(&B[(k0 + k) * N + n0 + n]);
                    PUTB(blm, k * BPITCH + n, v);
                } else if (k0 + k < K) {
                    for (int j = 0; j < VWND; j++) {
                        const bool in = n0 + n + j < N;
                        blm[k * BPITCH + n + j] = in ? B[(k0 + k) * N + n0 + n + j] : 0.0f;
                    }
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
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
                C[i] = alpha * acc[mi][ni] + beta * C[i];
            }
        }
    }
}
