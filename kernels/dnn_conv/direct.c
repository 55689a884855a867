// ALGO 1: a direct, register-blocked convolution for short reductions (C*R*S at most 64:
// VGG16 conv1_1's 27), beside body.c's implicit GEMM (ALGO 0). tune prepends a dialect
// prelude and body.c (whose GEMM kernel it compiles out) to this file. There the GEMM's
// gather costs an address, a mask test and a local store per element for 27 multiply-adds
// per output; here each work-item keeps DQK out channels x DPX output pixels of one row
// in registers (DPX / 4 quads of 4 consecutive pixels, quad g of work-item x at column
// (g * DWX + x) * 4 of the block, so that a warp's float4 stores of a quad cover DWX * 16
// contiguous bytes: call r on the H200 had consecutive quads per work-item, whose stores
// covered half of each sector per instruction), loads the DNQ input values under each quad
// once per input row (c, r), and multiplies each by the S weights of its channels: DPX
// FMAs per weight read, the input reused S times from registers, no per-element address
// or bounds check.
//
// Parameters (ALGO 1; the GEMM's are fixed at their first values by the space):
//   DPX    output pixels along W per work-item, in quads of 4 (float4 stores)
//   DQK    out channels per work-item (a multiple of 4: float4 weight reads)
//   DWX, DWY, DWK  work-items per work-group along W, along H and over out-channel groups
//   DWMEM  the weights: 0 in local memory ([C*R*S][DWK*DQK], staged once per work-group,
//          one float4 read feeds 4*DPX FMAs and a warp of one channel group reads one
//          address), 1 straight from global memory (the same reads through L1)
//   DXMEM  the input: 0 from global memory (L1/L2), each element checked against the
//          image; 1 a halo tile ([C][XROWS][XLD], zero outside the image) staged in local
//          memory per row block, read as float4 without checks
//   DROWS  row blocks of DWY output rows per work-group (the weights staged once for all;
//          with the halo tile, the next block's is loaded into registers while this one is
//          multiplied: session 8's staged each block after a barrier, its loads unhidden)
//   UNR    1: the channel loop unrolled too (R and S always are); 0: rolled (less code)
//   STCS   (CUDA) the output stored with the streaming hint
//   DOST   the output: 0 stored from registers by each work-item; 1 staged per row block in
//          local memory ([DBM][DWY][DCOLS], two buffers) and written from there, on sm_90
//          by asynchronous bulk copies (`cp.async.bulk`, one per channel row), so that the
//          work-group multiplies the next row block while the copy engine drains this one
//          (session 9: the H100's stores did not overlap the multiply-adds); elsewhere by
//          the work-group's float4 stores from the staged tile (Q a multiple of 4);
//          2 (CUDA) staged, and always stored by the work-group (1 without the copy engine)
// Launch: 1-D, NT = DWX*DWY*DWK work-items, NB * DTP * DTQ * (KO/DBM) work-groups; local
// memory DLOCAL floats.
#if ALGO == 1
#undef NT
#define NT (DWX * DWY * DWK)
#define DBM (DWK * DQK)                          // out channels per work-group
#define DCOLS (DWX * DPX)                        // output columns per work-group
#define DG (DPX / 4)                             // quads of pixels per work-item
#define DNQ (3 * SV + S)                         // input columns under a quad
#define DNQ4 (((DNQ + 3) / 4) * 4)
#define DTQ ((Q + DCOLS - 1) / DCOLS)            // column blocks per output row
#define DTP ((P + DWY * DROWS - 1) / (DWY * DROWS))  // row-block groups per image
// The halo tile: XROWS input rows of XLD floats per channel; quad g of work-item x starts
// (g*DWX + x)*4*SV floats into its row (16-byte aligned) and reads DNQ4. XLD is padded so that
// the next row starts 4 banks on where it would start in the same bank (a quarter warp's
// float4 reads of two rows then fall in different banks).
#define XROWS ((DWY - 1) * SU + R)
#define XW ((DCOLS - 4) * SV + DNQ4)
#define XLD0 (((XW + 3) / 4) * 4)
#define XLD (XLD0 % 32 == 0 ? XLD0 + 4 : XLD0)
#define WFLOATS (DWMEM == 0 ? CRS * DBM : 0)
#define XFLOATS (DXMEM == 1 ? C * XROWS * XLD : 0)
#define OSTG (DBM * DWY * DCOLS)                 // one staged row block of output
#define WN (CRS * DBM)                           // weights staged per work-group
#define WPER ((WN + NT - 1) / NT)                // of them per work-item
#define XN (C * XROWS * XW)                      // halo tile elements loaded per row block
#define XPER ((XN + NT - 1) / NT)                // of them per work-item

#if UNR
#define C_UNROLL PRAGMA(unroll)
#else
#define C_UNROLL PRAGMA(unroll 1)
#endif
#if STCS
#define DSTORE4(p, a, b, c, d) STREAM4(p, a, b, c, d)
#define DSTORE1(p, a) STREAM1(p, a)
#else
#define DSTORE4(p, a, b, c, d) VSTORE4(p, a, b, c, d)
#define DSTORE1(p, a) (*(p) = (a))
#endif
// The staged output's copies by the copy engine (DOST 1 where the device has it).
#define DBULK (HAS_BULK && DOST == 1)
#if !DBULK
#undef BULK_WAIT_READ1
#undef BULK_WAIT_ALL
#undef BULK_FENCE
#define BULK_WAIT_READ1()
#define BULK_WAIT_ALL()
#define BULK_FENCE()
#endif
#if DWMEM == 0
#define WLOAD4(p) SMEM_LOAD4(p)
#else
#define WLOAD4(p) LDG4(p)
#endif

// `filter_crsk` holds the filters as [CRSP][KO] (out channels contiguous): both the
// staging and the global reads run along the out channels.
KERNEL(dnn_conv)(OUT out, IN in, IN filter, IN filter_kcrs, IN filter_crsk, IN filter_krsc,
                 IN filter_rsck, GLOBAL_PTR ws, GLOBAL_UINT_PTR cnt SHARED_PARAM) {
    SHARED_DECL
    const int tid = TID;
    const int x = tid % DWX;
    const int y = (tid / DWX) % DWY;
    const int kg = tid / (DWX * DWY);
    // Work-groups of one pixel block (the same input) run one after the other.
    const long group = GROUP;
    const int bm = (int)(group % (KO / DBM)) * DBM;
    const long pblock = group / (KO / DBM);
    const int tq = (int)(pblock % DTQ);
    const int tp = (int)((pblock / DTQ) % DTP);
    const long n = pblock / ((long)DTQ * DTP);
    const int q0 = tq * DCOLS;
    // The first column of quad g of this work-item.
#define QUAD(g) (q0 + ((g) * DWX + x) * 4)
    IN_PTR img = in + n * (C * H * W);
    OUT_PTR obase = out + (n * KO + bm + kg * DQK) * (long)PQ;

#if DWMEM == 0
    // The work-group's weights, [C*R*S][DBM]: read once, every row block reuses them. All of
    // a work-item's WPER loads are issued before any is stored (one memory latency, not one
    // per few loads: call t's profile on the H100 had 23% of the stall samples here, each
    // store waiting on its load), and with the halo tile they are stored only after the
    // first row block's loads are issued too (rb = -1 below).
    // More than 32 a work-item (small work-groups, long reductions): loaded and stored in
    // turn, as before.
    LOCAL_PTR wl = smem;
#if WPER <= 32
    float wpre[WPER];
    PRAGMA(unroll)
    for (int u = 0; u < WPER; ++u) {
        const int i = tid + u * NT;
        wpre[u] = WN % NT == 0 || i < WN ? LDG(filter_crsk + (i / DBM) * KO + bm + i % DBM) : 0.0f;
    }
#define WPUT()                                                                          \
    PRAGMA(unroll) for (int u = 0; u < WPER; ++u) {                                     \
        const int i = tid + u * NT;                                                     \
        if (WN % NT == 0 || i < WN) wl[i] = wpre[u];                                    \
    }
#else
    for (int i = tid; i < WN; i += NT)
        wl[i] = LDG(filter_crsk + (i / DBM) * KO + bm + i % DBM);
#define WPUT()
#endif
    LOCAL_PTR wk = wl + kg * DQK;
#define WROW(crs) (wk + (crs) * DBM)
#if DXMEM == 0
    WPUT()
    SYNC();
#endif
#else
#define WPUT()
    IN_PTR wk = filter_crsk + bm + kg * DQK;
#define WROW(crs) (wk + (crs) * KO)
#endif
#if DXMEM == 1
    LOCAL_PTR xt = smem + WFLOATS;
#endif
#if DOST >= 1
    LOCAL_PTR ost = smem + WFLOATS + XFLOATS;  // 16-byte aligned: both are multiples of 4
    // The work-group's first channel's output row segments start here (add ch*PQ + p*Q).
    OUT_PTR oblk = out + (n * KO + bm) * (long)PQ + q0;
    const int obytes = 4 * (Q - q0 < DCOLS ? Q - q0 : DCOLS);
#endif

    // Row blocks, the next one's halo tile loaded into registers (XPER per work-item) while
    // this one is multiplied, so that only the first block's loads wait; rb = -1 loads it.
#if DXMEM == 1
    float xpre[XPER];
    const int w0 = q0 * SV - PW;
    for (int rb = -1; rb < DROWS; ++rb) {
        const int p0 = (tp * DROWS + rb) * DWY;
        if (rb >= 0) {
            if (p0 >= P) break;  // the same for the whole work-group
            SYNC();  // the previous block's reads (and the weights' staging) done
            PRAGMA(unroll)
            for (int u = 0; u < XPER; ++u) {
                const int i = tid + u * NT;
                if (XN % NT == 0 || i < XN) xt[(i / XW) * XLD + i % XW] = xpre[u];
            }
            SYNC();
        }
        const int pn = p0 + DWY;
        if (rb + 1 < DROWS && pn < P) {
            const int h0 = pn * SU - PH;
            PRAGMA(unroll)
            for (int u = 0; u < XPER; ++u) {
                const int i = tid + u * NT;
                const int cr = i / XW;  // c * XROWS + row
                const int h = h0 + cr % XROWS;
                const int w = w0 + i % XW;
                const int inside = (XN % NT == 0 || i < XN) && (unsigned)h < (unsigned)H &&
                                   (unsigned)w < (unsigned)W;
                xpre[u] = inside ? LDG(img + ((cr / XROWS) * H + h) * W + w) : 0.0f;
            }
        }
        if (rb < 0) {
            WPUT()  // the weights' loads are older than the first block's: stored first
            continue;
        }
#else
    for (int rb = 0; rb < DROWS; ++rb) {
        const int p0 = (tp * DROWS + rb) * DWY;
        if (p0 >= P) break;  // the same for the whole work-group
#endif
        const int p = p0 + y;
        float acc[DQK][DPX];
        PRAGMA(unroll)
        for (int k = 0; k < DQK; ++k)
            PRAGMA(unroll)
            for (int j = 0; j < DPX; ++j) acc[k][j] = 0.0f;
        if (p < P) {
            C_UNROLL
            for (int c = 0; c < C; ++c) {
                PRAGMA(unroll)
                for (int r = 0; r < R; ++r) {
                    // The input row under each quad, once: DNQ values, read S times.
                    float xin[DG][DNQ4];
#if DXMEM == 1
                    LOCAL_PTR xr = xt + (c * XROWS + y * SU + r) * XLD + x * (4 * SV);
                    PRAGMA(unroll)
                    for (int g = 0; g < DG; ++g)
                        PRAGMA(unroll)
                        for (int e = 0; e < DNQ4; e += 4) {
                            const float4 v = SMEM_LOAD4(xr + g * (DWX * 4 * SV) + e);
                            xin[g][e] = v.x; xin[g][e + 1] = v.y;
                            xin[g][e + 2] = v.z; xin[g][e + 3] = v.w;
                        }
#else
                    const int h = p * SU - PH + r;
                    const int row_in = (unsigned)h < (unsigned)H;
                    PRAGMA(unroll)
                    for (int g = 0; g < DG; ++g) {
                        const int w0 = QUAD(g) * SV - PW;
                        IN_PTR xr = img + (c * H + h) * W + w0;
                        PRAGMA(unroll)
                        for (int e = 0; e < DNQ4; ++e) {
                            const int inside = row_in && (unsigned)(w0 + e) < (unsigned)W;
                            xin[g][e] = e < DNQ && inside ? LDG(xr + e) : 0.0f;
                        }
                    }
#endif
                    PRAGMA(unroll)
                    for (int s = 0; s < S; ++s) {
                        // The DQK weights of tap (c, r, s), float4 at a time.
                        float wv[DQK];
                        PRAGMA(unroll)
                        for (int k = 0; k < DQK; k += 4) {
                            const float4 v = WLOAD4(WROW((c * R + r) * S + s) + k);
                            wv[k] = v.x; wv[k + 1] = v.y; wv[k + 2] = v.z; wv[k + 3] = v.w;
                        }
                        PRAGMA(unroll)
                        for (int k = 0; k < DQK; ++k)
                            PRAGMA(unroll)
                            for (int j = 0; j < DPX; ++j)
                                acc[k][j] = FMA(wv[k], xin[j / 4][(j % 4) * SV + s], acc[k][j]);
                    }
                }
            }
#if DOST == 0
            // out[n][bm + kg*DQK + k][p][QUAD(g) + j]: float4 where the quad is whole and
            // rows start 16-byte aligned (Q a multiple of 4), else one at a time.
            OUT_PTR o = obase + p * Q;
            PRAGMA(unroll)
            for (int g = 0; g < DG; ++g) {
                const int qq = QUAD(g);
                if (Q % 4 == 0 && qq + 4 <= Q) {
                    PRAGMA(unroll)
                    for (int k = 0; k < DQK; ++k)
                        DSTORE4(o + k * PQ + qq, acc[k][4 * g], acc[k][4 * g + 1],
                                acc[k][4 * g + 2], acc[k][4 * g + 3]);
                } else {
                    PRAGMA(unroll)
                    for (int k = 0; k < DQK; ++k)
                        PRAGMA(unroll)
                        for (int j = 0; j < 4; ++j)
                            if (qq + j < Q) DSTORE1(o + k * PQ + qq + j, acc[k][4 * g + j]);
                }
            }
#endif
        }
#if DOST >= 1
        {
            // Buffer rb % 2 was last read by the copies of row block rb - 2: each work-item
            // waits for its own (all but its latest group), the barrier for everyone's.
            LOCAL_PTR ob = ost + (rb & 1) * OSTG;
            BULK_WAIT_READ1();
            SYNC();
            if (p < P) {
                PRAGMA(unroll)
                for (int k = 0; k < DQK; ++k)
                    PRAGMA(unroll)
                    for (int g = 0; g < DG; ++g)
                        SMEM_STORE4(ob + ((kg * DQK + k) * DWY + y) * DCOLS + (g * DWX + x) * 4,
                                    acc[k][4 * g], acc[k][4 * g + 1], acc[k][4 * g + 2],
                                    acc[k][4 * g + 3]);
            }
            BULK_FENCE();  // the generic proxy's writes visible to the copy engine
            SYNC();
#if DBULK
            // One copy per (channel, row) segment of the block: DCOLS floats (fewer in the
            // last column block), contiguous in the output and in the staged tile. Issued by
            // each warp's first lane: the copy instruction takes uniform operands, and call w
            // (an H200) had every lane issue its own, which the compiler serialised over the
            // warp (R2UR and PLOP3 a third of the instructions added, 1.47x slower).
            if (tid % 32 == 0)
                for (int sg = tid / 32; sg < DBM * DWY; sg += NT / 32) {
                    const int pp = p0 + sg % DWY;
                    if (pp < P)
                        BULK_STORE(oblk + (sg / DWY) * (long)PQ + pp * Q, ob + sg * DCOLS, obytes);
                }
            BULK_COMMIT();
#else
            // The work-group's float4 stores of the staged tile, consecutive work-items on
            // consecutive quads of a segment.
            for (int i = tid; i < DBM * DWY * (DCOLS / 4); i += NT) {
                const int sg = i / (DCOLS / 4);
                const int col = (i % (DCOLS / 4)) * 4;
                const int pp = p0 + sg % DWY;
                if (pp < P && 4 * col < obytes) {
                    const float4 v = SMEM_LOAD4(ob + sg * DCOLS + col);
                    DSTORE4(oblk + (sg / DWY) * (long)PQ + pp * Q + col, v.x, v.y, v.z, v.w);
                }
            }
#endif
        }
#endif
    }
#if DOST >= 1
    BULK_WAIT_ALL();  // the staged tile stays valid until the last copies have read it
#endif
}
#undef WROW
#undef WPUT
#undef QUAD
#endif  // ALGO == 1
