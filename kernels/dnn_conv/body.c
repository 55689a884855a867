// BEAST's local-memory direct convolution (forward, NCHW, cross-correlation as in cuDNN and
// PyTorch), written for tune once for OpenCL C and CUDA C (prelude.cl / prelude.cu define
// the dialect). An implicit GEMM: O[KO x NB*P*Q] = F[KO x C*R*S] * I_col[C*R*S x NB*P*Q],
// where I_col is never formed: each k step gathers its BK x BN tile of I_col straight from
// the input (zero outside the padded image) into local memory, beside the BM x BK tile of
// the filters.
//
// Layer (fixed defines): NB batch, C in channels, H x W input, KO out channels, R x S
// filter, SU x SV stride, PH x PW padding, P x Q output.
// Tuning parameters (BEAST's families):
//   BM, BN, BK   block sizes: a work-group computes BM out channels x BN output pixels,
//                stepping BK along C*R*S
//   MDIM, NDIM   thread dimensions: MDIM x NDIM work-items; each computes
//                TM = BM/MDIM channels x TN = BN/NDIM pixels in registers
//   VS           vector width (1, 2, 4) of the local-memory reads: a work-item's TM x TN
//                come in VS x VS groups spread over the tile
//   DB           local-memory staging: 1 double-buffered with the next tile loaded into
//                registers while this one is multiplied; 0 single buffer
//   PADA, PADB   padding of the local-memory rows (bank conflicts)
//   UNR          1: unroll the loop over BK fully
//   KORDER       order of the reduction: 0 c*R*S + r*S + s (the filters' own order);
//                1 (r*S + s)*C + c, channels innermost (needs BK to divide C): a k step
//                then has one filter tap (r, s), so each pixel's window is checked once
//                per step and each element costs an address add, not a division
//   FLAYOUT      filter layout: 0 out channel major (KCRS, or KRSC for KORDER 1), 1 out
//                channel minor (CRSK or RSCK); both prepared once on the host
//   MINB         (CUDA) minimum resident work-groups per compute unit, __launch_bounds__
// Launch: 1-D, NT = MDIM*NDIM work-items per group, (KO/BM) * (NB*P*Q/BN) groups; local
// memory (DB+1) * BK * (BM+PADA + BN+PADB) floats (CUDA: dynamic shared memory; OpenCL: the
// local-memory argument).

#define NT (MDIM * NDIM)
#define TM (BM / MDIM)
#define TN (BN / NDIM)
#define RS (R * S)
#define CRS (C * RS)
#define PQ (P * Q)
#define NPQ ((long)NB * PQ)
#define LDA_S (BM + PADA)
#define LDB_S (BN + PADB)
#define NBUF (DB + 1)
// B-tile loads: the work-items form rows of BCOLS consecutive pixels.
#define BCOLS (NT < BN ? NT : BN)
#define BROWS (NT / BCOLS)
#define LPX (BN / BCOLS)
#define LBK (BK / BROWS)
// A-tile loads: elements per work-item.
#define LA ((BM * BK) / NT)

#if UNR
#define INNER_UNROLL PRAGMA(unroll)
#else
#define INNER_UNROLL PRAGMA(unroll 1)
#endif

// The filter element (out channel m, reduction index crs), or 0 past C*R*S.
#if KORDER == 0
#define FILTER_K_MAJOR filter_kcrs
#define FILTER_K_MINOR filter_crsk
#else
#define FILTER_K_MAJOR filter_krsc
#define FILTER_K_MINOR filter_rsck
#endif
#if FLAYOUT == 0
#define FILTER_AT(m, crs) ((crs) < CRS ? LDG(FILTER_K_MAJOR + (long)(m) * CRS + (crs)) : 0.0f)
#else
#define FILTER_AT(m, crs) ((crs) < CRS ? LDG(FILTER_K_MINOR + (long)(crs) * KO + (m)) : 0.0f)
#endif

// The filters come in the four layouts; KORDER and FLAYOUT pick one.
KERNEL(dnn_conv)(OUT out, IN in, IN filter_kcrs, IN filter_crsk, IN filter_krsc,
                 IN filter_rsck SHARED_PARAM) {
    SHARED_DECL
    LOCAL_PTR As = smem;                       // [NBUF][BK][LDA_S]: filters, transposed
    LOCAL_PTR Bs = smem + NBUF * BK * LDA_S;   // [NBUF][BK][LDB_S]: gathered input

    const int tid = TID;
    const int tx = tid % NDIM;
    const int ty = tid / NDIM;
    // Work-groups sharing a pixel tile run one after the other (they share its input in L2).
    const long group = GROUP;
    const int bm = (int)(group % (KO / BM)) * BM;
    const long bn = (group / (KO / BM)) * BN;

    // The pixels this work-item loads: where their windows start in the input.
    const int col0 = tid % BCOLS;
    const int row0 = tid / BCOLS;
    long pix_base[LPX];
    int pix_h[LPX], pix_w[LPX];
    PRAGMA(unroll)
    for (int c = 0; c < LPX; ++c) {
        const long npq = bn + col0 + c * BCOLS;
        const int n = (int)(npq / PQ);
        const int pq = (int)(npq % PQ);
        pix_h[c] = (pq / Q) * SU - PH;
        pix_w[c] = (pq % Q) * SV - PW;
        pix_base[c] = (long)n * C * H * W + (long)pix_h[c] * W + pix_w[c];
    }

    float acc[TM][TN];
    PRAGMA(unroll)
    for (int i = 0; i < TM; ++i)
        PRAGMA(unroll)
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    float ra[LA];
    float rb[LBK * LPX];

// Global memory -> registers: the tiles of the k step starting at k0.
#define LOAD_TILE(k0)                                                                   \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LA; ++l) {                                   \
            const int i = tid + l * NT;                                                 \
            const int m = FLAYOUT == 0 ? i / BK : i % BM;                               \
            const int kk = FLAYOUT == 0 ? i % BK : i / BM;                              \
            ra[l] = FILTER_AT(bm + m, (k0) + kk);                                      \
        }                                                                               \
        LOAD_B(k0)                                                                      \
    }
#if KORDER == 0
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l) {                                  \
            const int crs = (k0) + row0 + l * BROWS;                                    \
            const int c = crs / RS;                                                     \
            const int r = (crs % RS) / S;                                               \
            const int s = crs % S;                                                      \
            const long off = (long)c * H * W + (long)r * W + s;                         \
            PRAGMA(unroll) for (int p = 0; p < LPX; ++p) {                              \
                const int h = pix_h[p] + r;                                             \
                const int w = pix_w[p] + s;                                             \
                const int inside = crs < CRS && h >= 0 && h < H && w >= 0 && w < W;    \
                rb[l * LPX + p] = inside ? LDG(in + pix_base[p] + off) : 0.0f;          \
            }                                                                           \
        }                                                                               \
    }
#else
// One tap (r, s) per k step (BK divides C): the window is checked once per pixel.
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        const int tap = (k0) / C;                                                       \
        const int r = tap / S;                                                          \
        const int s = tap % S;                                                          \
        const int c0 = (k0) % C + row0;                                                 \
        PRAGMA(unroll) for (int p = 0; p < LPX; ++p) {                                  \
            const int h = pix_h[p] + r;                                                 \
            const int w = pix_w[p] + s;                                                 \
            const int inside = (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;  \
            IN_PTR at = in + pix_base[p] + (long)c0 * H * W + r * W + s;                \
            PRAGMA(unroll) for (int l = 0; l < LBK; ++l)                                \
                rb[l * LPX + p] = inside ? LDG(at + (long)(l * BROWS) * H * W) : 0.0f;  \
        }                                                                               \
    }
#endif
// Registers -> local buffer `buf`.
#define STORE_TILE(buf)                                                                 \
    {                                                                                   \
        LOCAL_PTR as = As + (buf) * BK * LDA_S;                                         \
        LOCAL_PTR bs = Bs + (buf) * BK * LDB_S;                                         \
        PRAGMA(unroll) for (int l = 0; l < LA; ++l) {                                   \
            const int i = tid + l * NT;                                                 \
            const int m = FLAYOUT == 0 ? i / BK : i % BM;                               \
            const int kk = FLAYOUT == 0 ? i % BK : i / BM;                              \
            as[kk * LDA_S + m] = ra[l];                                                 \
        }                                                                               \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l)                                    \
            PRAGMA(unroll) for (int p = 0; p < LPX; ++p)                                \
                bs[(row0 + l * BROWS) * LDB_S + col0 + p * BCOLS] = rb[l * LPX + p];    \
    }
// Multiply the tiles in local buffer `buf`.
#define COMPUTE_TILE(buf)                                                               \
    {                                                                                   \
        LOCAL_PTR as = As + (buf) * BK * LDA_S;                                         \
        LOCAL_PTR bs = Bs + (buf) * BK * LDB_S;                                         \
        INNER_UNROLL for (int kk = 0; kk < BK; ++kk) {                                  \
            float a[TM], b[TN];                                                         \
            PRAGMA(unroll) for (int g = 0; g < TM / VS; ++g)                            \
                READ_VEC(a, g, as + kk * LDA_S + g * (MDIM * VS) + ty * VS);            \
            PRAGMA(unroll) for (int g = 0; g < TN / VS; ++g)                            \
                READ_VEC(b, g, bs + kk * LDB_S + g * (NDIM * VS) + tx * VS);            \
            PRAGMA(unroll) for (int i = 0; i < TM; ++i)                                 \
                PRAGMA(unroll) for (int j = 0; j < TN; ++j)                             \
                    acc[i][j] = FMA(a[i], b[j], acc[i][j]);                             \
        }                                                                               \
    }

#if VS == 4
#define READ_VEC(dst, g, p)                                                             \
    {                                                                                   \
        const float4 v = SMEM_LOAD4(p);                                                 \
        dst[(g) * 4] = v.x; dst[(g) * 4 + 1] = v.y;                                     \
        dst[(g) * 4 + 2] = v.z; dst[(g) * 4 + 3] = v.w;                                 \
    }
#elif VS == 2
#define READ_VEC(dst, g, p)                                                             \
    {                                                                                   \
        const float2 v = SMEM_LOAD2(p);                                                 \
        dst[(g) * 2] = v.x; dst[(g) * 2 + 1] = v.y;                                     \
    }
#else
#define READ_VEC(dst, g, p) { dst[g] = *(p); }
#endif

    LOAD_TILE(0);
    STORE_TILE(0);
    SYNC();
#if DB
    int buf = 0;
    for (int k0 = BK; k0 < CRS; k0 += BK) {
        LOAD_TILE(k0);  // the next tile in flight while this one is multiplied
        COMPUTE_TILE(buf);
        STORE_TILE(buf ^ 1);
        SYNC();
        buf ^= 1;
    }
    COMPUTE_TILE(buf);
#else
    for (int k0 = BK; k0 < CRS; k0 += BK) {
        LOAD_TILE(k0);
        COMPUTE_TILE(0);
        SYNC();
        STORE_TILE(0);
        SYNC();
    }
    COMPUTE_TILE(0);
#endif

    // Epilogue: out[n][m][p][q]; consecutive work-items write consecutive pixels.
    PRAGMA(unroll)
    for (int j = 0; j < TN; ++j) {
        const long npq = bn + (j / VS) * (NDIM * VS) + tx * VS + j % VS;
        const long n = npq / PQ;
        const long base = n * KO * PQ + npq % PQ;
        PRAGMA(unroll)
        for (int i = 0; i < TM; ++i) {
            const int m = bm + (i / VS) * (MDIM * VS) + ty * VS + i % VS;
            out[base + (long)m * PQ] = acc[i][j];
        }
    }
}

// The reference: one work-item per output element, the definition read literally.
REF_KERNEL(dnn_conv_reference)(OUT out, IN in, IN filter, IN unused1, IN unused2,
                               IN unused3 SHARED_PARAM) {
    const long g = GID;
    if (g >= NPQ * KO) return;
    const int q = (int)(g % Q);
    const int p = (int)((g / Q) % P);
    const int m = (int)((g / PQ) % KO);
    const long n = g / ((long)PQ * KO);
    float sum = 0.0f;
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) {
                const int h = p * SU - PH + r;
                const int w = q * SV - PW + s;
                if (h >= 0 && h < H && w >= 0 && w < W)
                    sum += in[((n * C + c) * H + h) * W + w] * filter[((m * C + c) * R + r) * S + s];
            }
    out[g] = sum;
}
