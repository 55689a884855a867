// CLTune's GEMM case study (CLTune paper, Table IV), written for tune:
// C = alpha * A^T * B + beta * C, with A stored K x M (m fastest), B stored K x N (n fastest)
// and C stored N x M (m fastest). M, N, K are multiples of MWG, NWG, KWG.
//
// Tuning parameters:
//   MWG, NWG, KWG   tile of C computed by a work-group (MWG x NWG), k-step (KWG)
//   MDIMC, NDIMC    work-group size; each work-item computes (MWG/MDIMC) x (NWG/NDIMC)
//   MDIMA, NDIMB    shape of the work-group when loading the A and B tiles (re-shaped)
//   KWI             unroll factor of the k loop
//   VWM, VWN        vector widths of the loads of A (along m) and B (along n)
//   STRM, STRN      0: a work-item's elements are contiguous; 1: strided by MDIMC*VWM / NDIMC*VWN
//   SA, SB          stage the A / B tile in local memory (1) or read global memory (0)
// Global size: (M * MDIMC / MWG, N * NDIMC / NWG); local size: (MDIMC, NDIMC).
#define MWI (MWG / MDIMC)
#define NWI (NWG / NDIMC)
#define KDIMA ((MDIMC * NDIMC) / MDIMA)
#define KDIMB ((MDIMC * NDIMC) / NDIMB)

#if VWM == 1
  typedef float floatM;
  #define LOADM(p) (*(p))
  #define STOREM(v, p) (*(p) = (v))
  #define UNPACKM(a, i, v) a[i] = (v)
#elif VWM == 2
  typedef float2 floatM;
  #define LOADM(p) vload2(0, (p))
  #define STOREM(v, p) vstore2((v), 0, (p))
  #define UNPACKM(a, i, v) a[i] = (v).s0; a[i + 1] = (v).s1
#elif VWM == 4
  typedef float4 floatM;
  #define LOADM(p) vload4(0, (p))
  #define STOREM(v, p) vstore4((v), 0, (p))
  #define UNPACKM(a, i, v) a[i] = (v).s0; a[i + 1] = (v).s1; a[i + 2] = (v).s2; a[i + 3] = (v).s3
#elif VWM == 8
  typedef float8 floatM;
  #define LOADM(p) vload8(0, (p))
  #define STOREM(v, p) vstore8((v), 0, (p))
  #define UNPACKM(a, i, v) a[i] = (v).s0; a[i + 1] = (v).s1; a[i + 2] = (v).s2; a[i + 3] = (v).s3; \
      a[i + 4] = (v).s4; a[i + 5] = (v).s5; a[i + 6] = (v).s6; a[i + 7] = (v).s7
#endif

#if VWN == 1
  typedef float floatN;
  #define LOADN(p) (*(p))
  #define STOREN(v, p) (*(p) = (v))
  #define UNPACKN(a, i, v) a[i] = (v)
#elif VWN == 2
  typedef float2 floatN;
  #define LOADN(p) vload2(0, (p))
  #define STOREN(v, p) vstore2((v), 0, (p))
  #define UNPACKN(a, i, v) a[i] = (v).s0; a[i + 1] = (v).s1
#elif VWN == 4
  typedef float4 floatN;
  #define LOADN(p) vload4(0, (p))
  #define STOREN(v, p) vstore4((v), 0, (p))
  #define UNPACKN(a, i, v) a[i] = (v).s0; a[i + 1] = (v).s1; a[i + 2] = (v).s2; a[i + 3] = (v).s3
#elif VWN == 8
  typedef float8 floatN;
  #define LOADN(p) vload8(0, (p))
  #define STOREN(v, p) vstore8((v), 0, (p))
  #define UNPACKN(a, i, v) a[i] = (v).s0; a[i + 1] = (v).s1; a[i + 2] = (v).s2; a[i + 3] = (v).s3; \
      a[i + 4] = (v).s4; a[i + 5] = (v).s5; a[i + 6] = (v).s6; a[i + 7] = (v).s7
#endif

// Offset in the tile of a work-item's vector `v` (of MWI / VWM) along m, and along n.
#if STRM == 0
  #define MOFF(tid, v) ((tid) * MWI + (v) * VWM)
#else
  #define MOFF(tid, v) ((v) * MDIMC * VWM + (tid) * VWM)
#endif
#if STRN == 0
  #define NOFF(tid, v) ((tid) * NWI + (v) * VWN)
#else
  #define NOFF(tid, v) ((v) * NDIMC * VWN + (tid) * VWN)
#endif

__kernel __attribute__((reqd_work_group_size(MDIMC, NDIMC, 1)))
void gemm(const int M, const int N, const int K, const float alpha, const float beta,
          const __global float* restrict A, const __global float* restrict B,
          __global float* C) {
    const int tm = get_local_id(0);
    const int tn = get_local_id(1);
    const int m0 = get_group_id(0) * MWG;
    const int n0 = get_group_id(1) * NWG;
#if SA || SB
    const int tid = tn * MDIMC + tm;
#endif
#if SA
    __local float Alm[KWG * MWG];
    const int la_m = tid % MDIMA;
    const int la_k = tid / MDIMA;
#endif
#if SB
    __local float Blm[KWG * NWG];
    const int lb_n = tid % NDIMB;
    const int lb_k = tid / NDIMB;
#endif

    float acc[MWI][NWI];
    #pragma unroll
    for (int mi = 0; mi < MWI; mi++) {
        #pragma unroll
        for (int ni = 0; ni < NWI; ni++) {
            acc[mi][ni] = 0.0f;
        }
    }

    for (int k0 = 0; k0 < K; k0 += KWG) {
#if SA
        #pragma unroll
        for (int ia = 0; ia < MWG / (MDIMA * VWM); ia++) {
            #pragma unroll
            for (int ka = 0; ka < KWG / KDIMA; ka++) {
                const int m = (ia * MDIMA + la_m) * VWM;
                const int k = ka * KDIMA + la_k;
                STOREM(LOADM(&A[(k0 + k) * M + m0 + m]), &Alm[k * MWG + m]);
            }
        }
#endif
#if SB
        #pragma unroll
        for (int ib = 0; ib < NWG / (NDIMB * VWN); ib++) {
            #pragma unroll
            for (int kb = 0; kb < KWG / KDIMB; kb++) {
                const int n = (ib * NDIMB + lb_n) * VWN;
                const int k = kb * KDIMB + lb_k;
                STOREN(LOADN(&B[(k0 + k) * N + n0 + n]), &Blm[k * NWG + n]);
            }
        }
#endif
#if SA || SB
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        for (int kw = 0; kw < KWG; kw += KWI) {
            #pragma unroll
            for (int ki = 0; ki < KWI; ki++) {
                const int k = kw + ki;
                float apm[MWI];
                float bpm[NWI];
                #pragma unroll
                for (int v = 0; v < MWI / VWM; v++) {
#if SA
                    const floatM a = LOADM(&Alm[k * MWG + MOFF(tm, v)]);
#else
                    const floatM a = LOADM(&A[(k0 + k) * M + m0 + MOFF(tm, v)]);
#endif
                    UNPACKM(apm, v * VWM, a);
                }
                #pragma unroll
                for (int v = 0; v < NWI / VWN; v++) {
#if SB
                    const floatN b = LOADN(&Blm[k * NWG + NOFF(tn, v)]);
#else
                    const floatN b = LOADN(&B[(k0 + k) * N + n0 + NOFF(tn, v)]);
#endif
                    UNPACKN(bpm, v * VWN, b);
                }
                #pragma unroll
                for (int mi = 0; mi < MWI; mi++) {
                    #pragma unroll
                    for (int ni = 0; ni < NWI; ni++) {
                        acc[mi][ni] = mad(apm[mi], bpm[ni], acc[mi][ni]);
                    }
                }
            }
        }
#if SA || SB
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
    }

    #pragma unroll
    for (int vn = 0; vn < NWI / VWN; vn++) {
        #pragma unroll
        for (int jn = 0; jn < VWN; jn++) {
            const int n = n0 + NOFF(tn, vn) + jn;
            #pragma unroll
            for (int vm = 0; vm < MWI / VWM; vm++) {
                #pragma unroll
                for (int jm = 0; jm < VWM; jm++) {
                    const int m = m0 + MOFF(tm, vm) + jm;
                    const int i = n * M + m;
                    C[i] = alpha * acc[vm * VWM + jm][vn * VWN + jn] + beta * C[i];
                }
            }
        }
    }
}
