// BEAST's local-memory direct convolution (forward, NCHW, cross-correlation as in cuDNN and
// PyTorch), written for tune once for OpenCL C and CUDA C (prelude.cl / prelude.cu define
// the dialect). An implicit GEMM: O[KO x NB*P*Q] = F[KO x C*R*S] * I_col[C*R*S x NB*P*Q],
// where I_col is never formed: each k step gathers its BK x BN tile of I_col straight from
// the input (zero outside the padded image) into local memory, beside the BM x BK tile of
// the filters.
//
// BWDF=1: the same tiles, loop and split reduction compute backward-filter,
// dW[KO x C*R*S] = dY[KO x NB*P*Q] * I_col^T[NB*P*Q x C*R*S]: the reduction runs over
// batch x output pixels (k = n*P*Q + p*Q + q), the A tile is read from the output gradient
// (the `filter` argument) along its pixels, a column of the B tile is a tap (c, r, s) whose
// input offset and window position each work-item computes once, and the output is the
// dense KO x C*R*S filter gradient (columns past C*R*S are computed as zeros and not
// stored). Only the filters' order, FLAYOUT 0 and PRE 0 apply.
//
// Layer (fixed defines): NB batch, C in channels, H x W input, KO out channels, R x S
// filter, SU x SV stride, PH x PW padding, P x Q output.
// Tuning parameters (BEAST's families):
//   BM, BN, BK   block sizes: a work-group computes BM out channels x BN output pixels,
//                stepping BK along C*R*S
//   MDIM, NDIM   thread dimensions: MDIM x NDIM work-items; each computes
//                TM = BM/MDIM channels x TN = BN/NDIM pixels in registers
//   VS           vector width (1, 2, 4) of the local-memory reads: a work-item's TM x TN
//                come in VS x VS groups spread over the tile; also the width of the output
//                stores where VS pixels are contiguous (P*Q a multiple of VS)
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
//   VA           vector width (1, 4) of the filter tile's global loads: VA consecutive
//                floats, out channels for FLAYOUT 1 (then one 16-byte local store), the
//                reduction for FLAYOUT 0
//   VB           pixels (1, 2, 4) a work-item gathers side by side in a row of the input
//                tile, written to local memory as one VB-wide store (fewer stores; the
//                loads stay scalar: a window's pixels are not aligned in the input)
//   I32          1: 32-bit offsets and pixel indices (every tensor under 2^31 elements),
//                0: 64-bit
//   PRE          (KORDER 0) 1: each reduction index's input offset and tap (r, s), packed
//                in one int, computed once per work-group into local memory, so a gathered
//                element costs a local read instead of three divisions; 0: the divisions
//   SPLITK       work-groups per output tile, each reducing a contiguous slice of the k
//                steps (more work-groups where the tiles alone fill the compute units in
//                few waves): each writes its partial tile to the workspace `ws`, and the
//                last to arrive at the tile's counter in `cnt` adds the others' partials
//                and writes the output (no order between work-groups is assumed)
//   LCOLS        work-items per row of the B tile's loads (0: as many as fit): 8 or 16 put
//                4 or 2 neighbouring taps of the filters' order in a warp (AlexNet L1's
//                stride-4 gathers then share sectors instead of spreading over 16)
//   PATCH        (forward, the filters' order with PRE) 0: a tile is BN consecutive pixels
//                (n, p, q) gathered from global memory every k step; 8, 16, 32: a tile is
//                TH = BN/PATCH rows x PATCH columns of output pixels of one image, whose input
//                patch (C x ((TH-1)*SU + R) rows) is staged in local memory once, each row
//                split by column phase modulo SV (so that neighbouring pixels read
//                neighbouring words at stride 4 too); the offset table then holds each
//                reduction index's offset in the patch and a gathered element costs one local
//                read and an add, with no bounds check (the patch is zero outside the image).
//                Tiles past the image's last row or column compute and do not store.
//                1: a tile is BN consecutive pixels of one image (ceil(P*Q/BN) tiles per
//                image, the last partly past its end), its patch the full-width input rows
//                under the NR output rows it spans (fewer pixels wasted where P and Q are
//                not multiples of a tile's sides: AlexNet L1's 55 x 55).
//   OSTAGE       1: the output tile goes through local memory ([BM][OLD]) and is written
//                by runs of consecutive pixels of a channel (a patch tile's rows, or PATCH
//                0's BN pixels: a warp's stores then cover whole sectors instead of VS
//                pixels of each of several rows); 0: from the registers
//   MASK         (forward, the filters' order with PRE, PATCH 0, I32) 1: the gather's bounds
//                checks by tap masks: each table entry holds a reduction index's input
//                offset and its tap as one bit of r and one of s, each gathered pixel the
//                taps of its window that fall outside the image (computed once per
//                work-group), so an element costs one AND with a predicate, one address
//                (the row's pointer plus the pixel's 32-bit base) and the load, where the
//                packed table cost two adds, two compares, the unpacking and a 64-bit
//                address built from a sign-extended offset (about 13 instructions per
//                element on sm_90, AlexNet L1's non-FFMA issue); 0: that. The table holds
//                32-bit offsets in two scalar ints per entry: session 6's 64-bit pointers
//                cast from integers, read as int4, failed to launch on NVIDIA's OpenCL
//   TILES        (forward, PATCH 0, OSTAGE 0, SPLITK 1) consecutive pixel tiles per
//                work-group, in one pipeline: the next tile's gather in flight while this
//                one is multiplied, its outputs stored as soon as its last k step is done,
//                and with one k step per tile the filter tile loaded once (VGG16 conv1_1:
//                27 multiply-adds per output and 1.6 GB of outputs, where one tile per
//                work-group waited on its gather, then on nothing but its stores)
//   KEXACT       1: the last k step multiplies only the rows up to C*R*S (27 of conv1_1's
//                32), not the zeros padding the reduction to a multiple of BK
//   STCS         (CUDA) 1: the output stored with the streaming hint (__stcs, evict first:
//                it is never read back); OpenCL has no such hint
//   MINB         (CUDA) minimum resident work-groups per compute unit, __launch_bounds__
// Launch: 1-D, NT = MDIM*NDIM work-items per group, SPLITK * (KO/BM) * (NB*P*Q/BN) / TILES
// groups (PATCH: SPLITK * (KO/BM) * NB * ceil(P/TH) * ceil(Q/PATCH); PATCH 1:
// SPLITK * (KO/BM) * NB * ceil(P*Q/BN)); local memory
// (DB+1) * BK * (BM+PADA + BN+PADB) floats, KPAD ints more with PRE (2 * KPAD with MASK),
// and the patch with PATCH; with OSTAGE at least BM * OLD floats (CUDA: dynamic shared
// memory; OpenCL: the local-memory argument).
//
// The filters come prepared once (host side) with the reduction padded by zeros to CRSP
// (a multiple of every BK), so their loads need no bounds check past C*R*S and vectors of
// 4 along the reduction stay aligned whatever C*R*S is.

#define NT (MDIM * NDIM)
#define TM (BM / MDIM)
#define TN (BN / NDIM)
#define RS (R * S)
#define CRS (C * RS)
#define PQ (P * Q)
#define LDA_S (BM + PADA)
#define LDB_S (BN + PADB)
#define NBUF (DB + 1)
// The last k step runs past C*R*S (zeros there).
#ifndef BWDF
#define BWDF 0
#endif
// 0: this file's implicit GEMM; 1: direct.c's direct convolution (short reductions).
#ifndef ALGO
#define ALGO 0
#endif
#ifndef PATCH
#define PATCH 0
#endif
#ifndef OSTAGE
#define OSTAGE 0
#endif
#ifndef MASK
#define MASK 0
#endif
#ifndef TILES
#define TILES 1
#endif
#ifndef KEXACT
#define KEXACT 0
#endif
#ifndef STCS
#define STCS 0
#endif
#if TILES > 1 && (BWDF || PATCH || OSTAGE || SPLITK > 1)
#error "TILES > 1 needs the forward pass, PATCH 0, OSTAGE 0 and SPLITK 1"
#endif
#if PATCH == 1
// The output tile: BN consecutive pixels of one image, over at most NR output rows; the
// tile's pixel j at row PIX_ROW(j) of them and column PIX_COL(j).
#define TPI ((PQ + BN - 1) / BN)
#define NR ((BN + Q - 2) / Q + 1)
#define PROWS ((NR - 1) * SU + R)
#define PCOLS (Q - 1 + (S + SV - 1) / SV)
#define PIX_ROW(j) ((g0 + (j)) / Q - p0)
#define PIX_COL(j) ((g0 + (j)) % Q)
#define PIX_IN(j) (g0 + (j) < PQ)
#define PROW_LEN Q
#elif PATCH
// The output tile: PTH x PTW pixels of one image; TP x TQ tiles per image.
#define PTW PATCH
#define PTH (BN / PTW)
#define TP ((P + PTH - 1) / PTH)
#define TQ ((Q + PTW - 1) / PTW)
#define PROWS ((PTH - 1) * SU + R)
#define PCOLS (PTW - 1 + (S + SV - 1) / SV)
#define PIX_ROW(j) ((j) / PTW)
#define PIX_COL(j) ((j) % PTW)
#define PIX_IN(j) (p0 + (j) / PTW < P && q0 + (j) % PTW < Q)
#define PROW_LEN PTW
#endif
#if PATCH
// The staged patch: [C][PROWS][PRS], a row holding SV runs of PCOLS (the input column
// w0 + phase + SV * col at phase * PCOLS + col) and PPAD unused words, so that the tile's
// next output row (SU input rows on) starts PROW_LEN banks on, or within SU of it, where
// that fits in 8 words: the pixels of a warp's read then fall in different banks
// (unpadded, AlexNet L1's rows of 4 x 10 words put 8 output rows of a column in one bank).
#define PFIT(t) ((((SU * (SV * PCOLS + (t)) - PROW_LEN) % 32) + 32) % 32 < SU)
#define PPAD (PFIT(0) ? 0 : PFIT(1) ? 1 : PFIT(2) ? 2 : PFIT(3) ? 3 : PFIT(4) ? 4 : \
              PFIT(5) ? 5 : PFIT(6) ? 6 : PFIT(7) ? 7 : 0)
#define PRS (SV * PCOLS + PPAD)
#define PSIZE (C * PROWS * PRS)
// Loads of the patch in flight per work-item.
#define PLOADS 8
#endif
// The GEMM's reduction length and columns.
#if BWDF
#define KLEN (NB * PQ)
#define NCOLS (((CRS + BN - 1) / BN) * BN)
#else
#define KLEN CRS
#define NCOLS NPQ
#endif
#define KTAIL ((KLEN % BK) != 0)
#define KPAD (((KLEN + BK - 1) / BK) * BK)
#define SSTEPS ((KPAD / BK + SPLITK - 1) / SPLITK)
#if I32
#define IDX int
#else
#define IDX long
#endif
#define NPQ ((IDX)NB * PQ)
// B-tile loads: the work-items form rows of BCOLS groups of VB consecutive pixels: LCOLS
// of them, or as many as fit (0). Narrow rows put neighbouring rows (taps in the filters'
// order, pixels backward) in one warp, whose loads then share sectors.
#if LCOLS
#define BCOLS LCOLS
#else
#define BCOLS (NT < BN / VB ? NT : BN / VB)
#endif
#define BROWS (NT / BCOLS)
#define LPX (BN / (BCOLS * VB))
#define NPX (LPX * VB)
#define LBK (BK / BROWS)
// A-tile loads: vectors of VA per work-item.
#define LA ((BM * BK) / (NT * VA))
// OSTAGE: the staged output tile's rows (vectors of VS stay aligned without a patch), and
// how a work-group's stores cover it: OROWS channels a round of OCOLS pixels a work-item.
#if PATCH
#define OLD (BN + 1)
#else
#define OLD (BN + 4)
#endif
#define OROWS (NT >= BN ? NT / BN : 1)
#define OCOLS (NT >= BN ? 1 : BN / NT)
#if PATCH
#define STORE_VS(p, r) PRAGMA(unroll) for (int v_ = 0; v_ < VS; ++v_) (p)[v_] = (r)[v_];
#elif VS == 4
#define STORE_VS(p, r) VSTORE4(p, (r)[0], (r)[1], (r)[2], (r)[3]);
#elif VS == 2
#define STORE_VS(p, r) VSTORE2(p, (r)[0], (r)[1]);
#else
#define STORE_VS(p, r) *(p) = (r)[0];
#endif
// MASK: the bits t of [0, T) with 0 <= o + t < N (the taps of a window starting at o that
// fall inside a dimension of N).
#define TAPS_LO(o) ((o) < 0 ? -(o) : 0)
#define TAPS_HI(o, N, T) ((N) - (o) < (T) ? (N) - (o) : (T))
#define TAPS_INSIDE(o, N, T)                                                            \
    (TAPS_HI(o, N, T) > TAPS_LO(o) ? (1 << TAPS_HI(o, N, T)) - (1 << TAPS_LO(o)) : 0)

#if UNR
#define INNER_UNROLL PRAGMA(unroll)
#else
#define INNER_UNROLL PRAGMA(unroll 1)
#endif

// The filters' layout for the reduction order: KORDER picks the order, FLAYOUT whether
// the out channels are major (k contiguous) or minor (m contiguous).
#if KORDER == 0
#define FILTER_K_MAJOR filter_kcrs
#define FILTER_K_MINOR filter_crsk
#else
#define FILTER_K_MAJOR filter_krsc
#define FILTER_K_MINOR filter_rsck
#endif
#if BWDF
// The output gradient dY[n][m][p][q] at reduction index k = n*P*Q + p*Q + q.
#define FILTER_PTR(m, k) (filter + ((IDX)((k) / PQ) * KO + (m)) * PQ + (k) % PQ)
#elif FLAYOUT == 0
#define FILTER_PTR(m, crs) (FILTER_K_MAJOR + (IDX)(m) * CRSP + (crs))
#else
#define FILTER_PTR(m, crs) (FILTER_K_MINOR + (IDX)(crs) * KO + (m))
#endif
// Where a filter vector (l-th of the work-item's) sits in the BM x BK tile.
#if FLAYOUT == 0
#define A_M(i) ((i) / (BK / VA))
#define A_K(i) (((i) % (BK / VA)) * VA)
#else
#define A_M(i) (((i) % (BM / VA)) * VA)
#define A_K(i) ((i) / (BM / VA))
#endif

#if VA == 4
#define LOAD_VA(r, p) { const float4 v_ = LDG4(p); (r)[0] = v_.x; (r)[1] = v_.y; (r)[2] = v_.z; (r)[3] = v_.w; }
#else
#define LOAD_VA(r, p) { (r)[0] = LDG(p); }
#endif
#if VB == 4
#define STORE_VB(p, r) { VSTORE4(p, (r)[0], (r)[1], (r)[2], (r)[3]); }
#elif VB == 2
#define STORE_VB(p, r) { VSTORE2(p, (r)[0], (r)[1]); }
#else
#define STORE_VB(p, r) { *(p) = (r)[0]; }
#endif

// The filters come in the four layouts, padded to CRSP; KORDER and FLAYOUT pick one.
// `filter` (unpadded KCRS) is the reference kernel's. ALGO 1 is direct.c's kernel instead.
#if ALGO == 0
KERNEL(dnn_conv)(OUT out, IN in, IN filter, IN filter_kcrs, IN filter_crsk, IN filter_krsc,
                 IN filter_rsck, GLOBAL_PTR ws, GLOBAL_UINT_PTR cnt SHARED_PARAM) {
    SHARED_DECL
    LOCAL_PTR As = smem;                       // [NBUF][BK][LDA_S]: filters, transposed
    LOCAL_PTR Bs = smem + NBUF * BK * LDA_S;   // [NBUF][BK][LDB_S]: gathered input

    const int tid = TID;
    const int tx = tid % NDIM;
    const int ty = tid / NDIM;
    // Work-groups sharing a pixel tile run one after the other (they share its input in L2),
    // and so do the slices of one output tile.
    const IDX group = (IDX)GROUP;
#if SPLITK > 1
    const int slice = (int)(group % SPLITK);
    const IDX tile = group / SPLITK;
#else
    const int slice = 0;
    const IDX tile = group;
#endif
    const int bm = (int)(tile % (KO / BM)) * BM;
#if PATCH == 1
    // The image, the tile's first pixel in it and that pixel's output row.
    const IDX ptile = tile / (KO / BM);
    const IDX pn = ptile / TPI;
    const int g0 = (int)(ptile % TPI) * BN;
    const int p0 = g0 / Q;
    const int q0 = 0;
#elif PATCH
    // The image and the first output row and column of this tile.
    const IDX ptile = tile / (KO / BM);
    const IDX pn = ptile / (TP * TQ);
    const int p0 = (int)((ptile % (TP * TQ)) / TQ) * PTH;
    const int q0 = (int)(ptile % TQ) * PTW;
#else
    // The first of the work-group's TILES consecutive pixel tiles.
    const IDX bn = (tile / (KO / BM)) * (TILES * BN);
#endif
    // This work-group's slice of the reduction: SSTEPS k steps (fewer in the last slice).
    const int kbeg = slice * (SSTEPS * BK);
    const int kend = kbeg + SSTEPS * BK < KLEN ? kbeg + SSTEPS * BK : KLEN;

#if MASK
    // Each reduction index's input offset and its tap as bits (1 << r) | (1 << 16 + s), two
    // ints (scalars: no vector alignment to assume of the local memory, no pointer made
    // from an integer); past C*R*S, offset 0 and every tap bit, so that no pixel loads it
    // (the filters' zero padding would multiply it). Written once, read by every k step.
    LOCAL_INT_PTR ktab = (LOCAL_INT_PTR)(Bs + NBUF * BK * LDB_S);
    for (int i = tid; i < KPAD; i += NT) {
        const int c = i / RS;
        const int r = (i % RS) / S;
        const int s = i % S;
        ktab[2 * i] = i < CRS ? c * H * W + r * W + s : 0;
        ktab[2 * i + 1] = i < CRS ? (int)((1u << r) | (1u << (16 + s))) : -1;
    }
    SYNC();
#elif KORDER == 0 && PRE && !BWDF
    // Each reduction index's offset in the input and tap, packed (offset << 8 | r << 4 | s);
    // 0 past C*R*S (a pixel's own window corner, multiplied by the filters' zero padding).
    // Written once, read by every k step.
    LOCAL_INT_PTR ktab = (LOCAL_INT_PTR)(Bs + NBUF * BK * LDB_S);
    for (int i = tid; i < KPAD; i += NT) {
        const int c = i / RS;
        const int r = (i % RS) / S;
        const int s = i % S;
#if PATCH
        // The offset in the patch of tap (c, r, s) for the tile's first pixel; 0 past C*R*S.
        ktab[i] = i < CRS ? (c * PROWS + r) * PRS + (s % SV) * PCOLS + s / SV : 0;
#else
        ktab[i] = i < CRS ? (((c * H * W + r * W + s) << 8) | (r << 4) | s) : 0;
#endif
    }
#if PATCH
    // The input under the tile, read along its rows (coalesced) and written by column
    // phase, zero outside the image: once per work-group instead of every k step.
    LOCAL_PTR patch = (LOCAL_PTR)(ktab + KPAD);
    {
        const int h0 = p0 * SU - PH;
        const int w0 = q0 * SV - PW;
        IN_PTR img = in + pn * C * H * W;
        // PLOADS loads in flight per work-item before their stores: one at a time, a
        // work-item waited on each (AlexNet L1's runs: 138 round trips per work-group).
        for (int i0 = 0; i0 < C * PROWS * SV * PCOLS; i0 += NT * PLOADS) {
            float v[PLOADS];
            PRAGMA(unroll)
            for (int u = 0; u < PLOADS; ++u) {
                const int i = i0 + u * NT + tid;
                const int dw = i % (SV * PCOLS);
                const int cr = i / (SV * PCOLS);  // c * PROWS + row
                const int h = h0 + cr % PROWS;
                const int w = w0 + dw;
                const int inside = i < C * PROWS * SV * PCOLS && (unsigned)h < (unsigned)H &&
                                   (unsigned)w < (unsigned)W;
                v[u] = inside ? LDG(img + (IDX)((cr / PROWS) * H + h) * W + w) : 0.0f;
            }
            PRAGMA(unroll)
            for (int u = 0; u < PLOADS; ++u) {
                const int i = i0 + u * NT + tid;
                const int dw = i % (SV * PCOLS);
                if (i < C * PROWS * SV * PCOLS)
                    patch[(i / (SV * PCOLS)) * PRS + (dw % SV) * PCOLS + dw / SV] = v[u];
            }
        }
    }
#endif
    SYNC();
#endif

    const int col0 = tid % BCOLS;
    const int row0 = tid / BCOLS;
#if BWDF
    // The taps (columns) this work-item loads: their offset in an image and (r, s); a tap
    // past C*R*S gets r far outside every window, so it loads zeros.
    int tap_off[NPX], tap_r[NPX], tap_s[NPX];
    PRAGMA(unroll)
    for (int x = 0; x < NPX; ++x) {
        const int j = (int)bn + (col0 + (x / VB) * BCOLS) * VB + x % VB;
        const int c = j / RS;
        tap_r[x] = j < CRS ? (j % RS) / S : (1 << 20);
        tap_s[x] = j % S;
        tap_off[x] = j < CRS ? c * H * W + tap_r[x] * W + tap_s[x] : 0;
    }
#elif PATCH
    // The pixels this work-item loads: their offset in the patch (row i, column j of the
    // tile: i * SU rows and j words in from the tap's offset).
    int pix_off[NPX];
    PRAGMA(unroll)
    for (int x = 0; x < NPX; ++x) {
        const int j = (col0 + (x / VB) * BCOLS) * VB + x % VB;
        pix_off[x] = PIX_ROW(j) * (SU * PRS) + PIX_COL(j);
    }
#elif MASK
    // The pixels this work-item loads (of the tile starting at b0): where their windows
    // start in the input, and the taps of their windows outside the image (bits of r and
    // 16 + s, as the table's).
    int pix_base[NPX];
    unsigned pix_out[NPX];
#define SET_PIXELS(b0)                                                                  \
    PRAGMA(unroll) for (int x = 0; x < NPX; ++x) {                                      \
        const int npq = (int)(b0) + (col0 + (x / VB) * BCOLS) * VB + x % VB;            \
        const int pq = npq % PQ;                                                        \
        const int h0 = (pq / Q) * SU - PH;                                              \
        const int w0 = (pq % Q) * SV - PW;                                              \
        pix_base[x] = (npq / PQ) * C * H * W + h0 * W + w0;                             \
        pix_out[x] = ~((unsigned)TAPS_INSIDE(h0, H, R) | ((unsigned)TAPS_INSIDE(w0, W, S) << 16)); \
    }
    SET_PIXELS(bn)
#else
    // The pixels this work-item loads (of the tile starting at b0): where their windows
    // start in the input.
    IDX pix_base[NPX];
    int pix_h[NPX], pix_w[NPX];
#define SET_PIXELS(b0)                                                                  \
    PRAGMA(unroll) for (int x = 0; x < NPX; ++x) {                                      \
        const IDX npq = (b0) + (col0 + (x / VB) * BCOLS) * VB + x % VB;                 \
        const IDX n = npq / PQ;                                                         \
        const int pq = (int)(npq % PQ);                                                 \
        pix_h[x] = (pq / Q) * SU - PH;                                                  \
        pix_w[x] = (pq % Q) * SV - PW;                                                  \
        pix_base[x] = n * C * H * W + (IDX)pix_h[x] * W + pix_w[x];                     \
    }
    SET_PIXELS(bn)
#endif

    float acc[TM][TN];
    PRAGMA(unroll)
    for (int i = 0; i < TM; ++i)
        PRAGMA(unroll)
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    float ra[LA * VA];
    float rb[LBK * NPX];

// Global memory -> registers: the tiles of the k step starting at k0 (the filters are
// zero up to CRSP, past the end of the reduction).
#define LOAD_A_AT(r, m, crs) LOAD_VA(r, FILTER_PTR(m, crs))
#define LOAD_A(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LA; ++l) {                                   \
            const int i = tid + l * NT;                                                 \
            LOAD_A_AT(ra + l * VA, bm + A_M(i), (k0) + A_K(i));                         \
        }                                                                               \
    }
#define LOAD_TILE(k0)                                                                   \
    {                                                                                   \
        LOAD_A(k0)                                                                      \
        LOAD_B(k0)                                                                      \
    }
#if BWDF
// A row is an output pixel (n, p, q) of the reduction, a column a tap: the window corner
// is computed once per row, each element costs two adds and the bounds check.
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l) {                                  \
            const int k = (k0) + row0 + l * BROWS;                                      \
            const int pq = k % PQ;                                                      \
            const int h0 = (pq / Q) * SU - PH;                                          \
            const int w0 = (pq % Q) * SV - PW;                                          \
            IN_PTR at = in + (IDX)(k / PQ) * C * H * W + (IDX)h0 * W + w0;              \
            PRAGMA(unroll) for (int x = 0; x < NPX; ++x) {                              \
                const int h = h0 + tap_r[x];                                            \
                const int w = w0 + tap_s[x];                                            \
                const int inside = (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;  \
                rb[l * NPX + x] = inside ? LDG(at + tap_off[x]) : 0.0f;                 \
            }                                                                           \
        }                                                                               \
    }
#elif PATCH
// From the staged patch: a local read per element, its tap's offset read once per row.
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l) {                                  \
            LOCAL_PTR at = patch + ktab[(k0) + row0 + l * BROWS];                       \
            PRAGMA(unroll) for (int x = 0; x < NPX; ++x)                                \
                rb[l * NPX + x] = at[pix_off[x]];                                       \
        }                                                                               \
    }
#elif MASK
// A row's offset and taps read once, each element checked by one AND.
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l) {                                  \
            const int e = 2 * ((k0) + row0 + l * BROWS);                                \
            const unsigned taps = (unsigned)ktab[e + 1];                                \
            IN_PTR at = in + ktab[e];                                                   \
            PRAGMA(unroll) for (int x = 0; x < NPX; ++x)                                \
                rb[l * NPX + x] = (taps & pix_out[x]) == 0 ? LDG(at + pix_base[x]) : 0.0f; \
        }                                                                               \
    }
#elif KORDER == 0 && PRE
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l) {                                  \
            const int e = ktab[(k0) + row0 + l * BROWS];                                \
            const int r = (e >> 4) & 15;                                                \
            const int s = e & 15;                                                       \
            const IDX off = e >> 8;                                                     \
            PRAGMA(unroll) for (int x = 0; x < NPX; ++x) {                              \
                const int h = pix_h[x] + r;                                             \
                const int w = pix_w[x] + s;                                             \
                const int inside = (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;  \
                rb[l * NPX + x] = inside ? LDG(in + pix_base[x] + off) : 0.0f;          \
            }                                                                           \
        }                                                                               \
    }
#elif KORDER == 0
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l) {                                  \
            const int crs = (k0) + row0 + l * BROWS;                                    \
            const int c = crs / RS;                                                     \
            const int r = (crs % RS) / S;                                               \
            const int s = crs % S;                                                      \
            const IDX off = (IDX)c * H * W + r * W + s;                                 \
            PRAGMA(unroll) for (int x = 0; x < NPX; ++x) {                              \
                const int h = pix_h[x] + r;                                             \
                const int w = pix_w[x] + s;                                             \
                const int inside = (!KTAIL || crs < CRS) && (unsigned)h < (unsigned)H && \
                                   (unsigned)w < (unsigned)W;                           \
                rb[l * NPX + x] = inside ? LDG(in + pix_base[x] + off) : 0.0f;          \
            }                                                                           \
        }                                                                               \
    }
#else
// One tap (r, s) per k step (BK divides C): the window is checked once per pixel.
// With several pixel tiles per work-group, through NVRTC (CUDA 13, sm_90) the read-only
// loads (__ldg) of this gather gave wrong results on every tile of a 4-channel layer (32
// work-items, k steps of 4: relative error 0.69; benches/gpu/tiles_diag.py, call u of
// session 9 on an H100): plain loads were right, and so was the same kernel compiled with
// -G, while ptxas -O0 kept the error, so it comes from NVRTC's optimizer, not ptxas; not
// understood further. Plain loads there (TILE_PLAIN_LOADS 0 restores __ldg, for the diag).
#ifndef TILE_PLAIN_LOADS
#define TILE_PLAIN_LOADS (TILES > 1)
#endif
#if TILE_PLAIN_LOADS
#define LDG_B(p) (*(p))
#else
#define LDG_B(p) LDG(p)
#endif
#define LOAD_B(k0)                                                                      \
    {                                                                                   \
        const int tap = (k0) / C;                                                       \
        const int r = tap / S;                                                          \
        const int s = tap % S;                                                          \
        const int c0 = (k0) % C + row0;                                                 \
        PRAGMA(unroll) for (int x = 0; x < NPX; ++x) {                                  \
            const int h = pix_h[x] + r;                                                 \
            const int w = pix_w[x] + s;                                                 \
            const int inside = (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;  \
            IN_PTR at = in + pix_base[x] + (IDX)c0 * H * W + r * W + s;                 \
            PRAGMA(unroll) for (int l = 0; l < LBK; ++l)                                \
                rb[l * NPX + x] = inside ? LDG_B(at + (IDX)(l * BROWS) * H * W) : 0.0f; \
        }                                                                               \
    }
#endif
// Registers -> local buffer `buf`.
#if FLAYOUT == 1 && VA == 4
#define STORE_A(as, l, i)                                                               \
    {                                                                                   \
        VSTORE4(as + A_K(i) * LDA_S + A_M(i), ra[(l) * 4], ra[(l) * 4 + 1],            \
                ra[(l) * 4 + 2], ra[(l) * 4 + 3]);                                      \
    }
#else
#define STORE_A(as, l, i)                                                               \
    {                                                                                   \
        PRAGMA(unroll) for (int v = 0; v < VA; ++v)                                     \
            as[(A_K(i) + (FLAYOUT == 0 ? v : 0)) * LDA_S + A_M(i) + (FLAYOUT == 0 ? 0 : v)] = \
                ra[(l) * VA + v];                                                       \
    }
#endif
#define STORE_A_TILE(buf)                                                               \
    {                                                                                   \
        LOCAL_PTR as = As + (buf) * BK * LDA_S;                                         \
        PRAGMA(unroll) for (int l = 0; l < LA; ++l) {                                   \
            const int i = tid + l * NT;                                                 \
            STORE_A(as, l, i)                                                           \
        }                                                                               \
    }
#define STORE_B_TILE(buf)                                                               \
    {                                                                                   \
        LOCAL_PTR bs = Bs + (buf) * BK * LDB_S;                                         \
        PRAGMA(unroll) for (int l = 0; l < LBK; ++l)                                    \
            PRAGMA(unroll) for (int p = 0; p < LPX; ++p)                                \
                STORE_VB(bs + (row0 + l * BROWS) * LDB_S + (col0 + p * BCOLS) * VB,     \
                         rb + l * NPX + p * VB)                                         \
    }
#define STORE_TILE(buf)                                                                 \
    {                                                                                   \
        STORE_A_TILE(buf)                                                               \
        STORE_B_TILE(buf)                                                               \
    }
// Multiply the first `rows` rows of the tiles in local buffer `buf`.
#define COMPUTE_TILE(buf) COMPUTE_ROWS(buf, BK)
#define COMPUTE_ROWS(buf, rows)                                                         \
    {                                                                                   \
        LOCAL_PTR as = As + (buf) * BK * LDA_S;                                         \
        LOCAL_PTR bs = Bs + (buf) * BK * LDB_S;                                         \
        INNER_UNROLL for (int kk = 0; kk < (rows); ++kk) {                              \
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

// Output stores: with the streaming hint (STCS) or plain.
#if STCS
#define OSTORE1(p, a) STREAM1(p, a)
#define OSTORE2(p, a, b) STREAM2(p, a, b)
#define OSTORE4(p, a, b, c, d) STREAM4(p, a, b, c, d)
#else
#define OSTORE1(p, a) (*(p) = (a))
#define OSTORE2(p, a, b) VSTORE2(p, a, b)
#define OSTORE4(p, a, b, c, d) VSTORE4(p, a, b, c, d)
#endif
// The epilogue from the registers (PATCH 0, OSTAGE 0) of the tile of pixels from b0:
// out[n][m][p][q]; consecutive work-items write consecutive pixels, VS at a time where a
// group of VS pixels cannot straddle two images.
#if VS > 1 && PQ % VS == 0
#if VS == 4
#define STORE_GROUP(p, i, g)                                                            \
    OSTORE4(p, acc[i][(g) * 4], acc[i][(g) * 4 + 1], acc[i][(g) * 4 + 2], acc[i][(g) * 4 + 3]);
#else
#define STORE_GROUP(p, i, g) OSTORE2(p, acc[i][(g) * 2], acc[i][(g) * 2 + 1]);
#endif
#define STORE_OUT(b0)                                                                   \
    PRAGMA(unroll) for (int g = 0; g < TN / VS; ++g) {                                  \
        const IDX npq = (b0) + g * (NDIM * VS) + tx * VS;                               \
        OUT_PTR base = out + (npq / PQ) * KO * PQ + npq % PQ;                           \
        PRAGMA(unroll) for (int i = 0; i < TM; ++i) {                                   \
            const int m = bm + (i / VS) * (MDIM * VS) + ty * VS + i % VS;               \
            STORE_GROUP(base + (IDX)m * PQ, i, g)                                       \
        }                                                                               \
    }
#else
#define STORE_OUT(b0)                                                                   \
    PRAGMA(unroll) for (int g = 0; g < TN / VS; ++g) {                                  \
        const IDX npq = (b0) + g * (NDIM * VS) + tx * VS;                               \
        PRAGMA(unroll) for (int j = 0; j < VS; ++j) {                                   \
            const IDX at = npq + j;                                                     \
            OUT_PTR base = out + (at / PQ) * KO * PQ + at % PQ;                         \
            PRAGMA(unroll) for (int i = 0; i < TM; ++i) {                               \
                const int m = bm + (i / VS) * (MDIM * VS) + ty * VS + i % VS;           \
                OSTORE1(base + (IDX)m * PQ, acc[i][g * VS + j]);                        \
            }                                                                           \
        }                                                                               \
    }
#endif
// The reduction's last k step: with KEXACT only its rows up to C*R*S (the rest multiply
// the filters' zero padding). A slice of a split reduction ends there only if it is the
// last.
#if KEXACT && KTAIL
#define COMPUTE_LAST(buf) COMPUTE_ROWS(buf, KLEN % BK)
#if SPLITK > 1
#define COMPUTE_END(buf)                                                                \
    if (kend == KLEN) COMPUTE_LAST(buf) else COMPUTE_TILE(buf)
#else
#define COMPUTE_END(buf) COMPUTE_LAST(buf)
#endif
#else
#define COMPUTE_LAST(buf) COMPUTE_TILE(buf)
#define COMPUTE_END(buf) COMPUTE_TILE(buf)
#endif

#if TILES > 1
    // TILES pixel tiles of KSTEPS k steps each (SPLITK 1), one pipeline: step t + 1's
    // loads (the next tile's first after a tile's last) in flight while step t is
    // multiplied, a tile's outputs stored right after its last step. With one k step a
    // tile, the filter tile is loaded once and stays in local memory.
#define KSTEPS (KPAD / BK)
#define AFIX (KSTEPS == 1)
    LOAD_TILE(kbeg);
    STORE_TILE(0);
#if AFIX && DB
    STORE_A_TILE(1);
#endif
    SYNC();
    int buf = 0;
    for (int t = 0; t < TILES * KSTEPS; ++t) {
        const int step = t % KSTEPS;
        const int more = t + 1 < TILES * KSTEPS;
        if (more) {
            const int next = (t + 1) % KSTEPS;
            if (next == 0) {
                SET_PIXELS(bn + (IDX)((t + 1) / KSTEPS) * BN)
            }
#if !AFIX
            LOAD_A(next * BK)
#endif
            LOAD_B(next * BK)
        }
        if (step == KSTEPS - 1) {
            COMPUTE_LAST(buf)
            STORE_OUT(bn + (IDX)(t / KSTEPS) * BN)
            PRAGMA(unroll)
            for (int i = 0; i < TM; ++i)
                PRAGMA(unroll)
                for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
        } else {
            COMPUTE_TILE(buf)
        }
        if (more) {
#if DB
            buf ^= 1;
#else
            SYNC();
#endif
#if !AFIX
            STORE_A_TILE(buf)
#endif
            STORE_B_TILE(buf)
            SYNC();
        }
    }
#else
    LOAD_TILE(kbeg);
    STORE_TILE(0);
    SYNC();
#if DB
    int buf = 0;
    for (int k0 = kbeg + BK; k0 < kend; k0 += BK) {
        LOAD_TILE(k0);  // the next tile in flight while this one is multiplied
        COMPUTE_TILE(buf);
        STORE_TILE(buf ^ 1);
        SYNC();
        buf ^= 1;
    }
    COMPUTE_END(buf);
#else
    for (int k0 = kbeg + BK; k0 < kend; k0 += BK) {
        LOAD_TILE(k0);
        COMPUTE_TILE(0);
        SYNC();
        STORE_TILE(0);
        SYNC();
    }
    COMPUTE_END(0);
#endif

#if SPLITK > 1
    // Split reduction: every slice leaves its partial tile in the workspace (coalesced:
    // element e of work-item t at e * NT + t); the last slice to arrive adds the others'.
    // The counter only grows, so the last slice of each launch is the one that finds
    // SPLITK - 1 modulo SPLITK, and no reset is needed between launches.
    {
        GLOBAL_PTR part = ws + (tile * SPLITK + slice) * (BM * BN) + tid;
        PRAGMA(unroll)
        for (int i = 0; i < TM; ++i)
            PRAGMA(unroll)
            for (int j = 0; j < TN; ++j) part[(i * TN + j) * NT] = acc[i][j];
        GFENCE();
        SYNC();  // every partial store fenced, and the last tile's local reads done
        LOCAL_INT_PTR arrived = (LOCAL_INT_PTR)smem;
        if (tid == 0) arrived[0] = (int)(ATOMIC_INC(cnt + tile) % SPLITK);
        SYNC();
        if (arrived[0] != SPLITK - 1) return;
        GFENCE();
        for (int o = 0; o < SPLITK; ++o) {
            if (o == slice) continue;
            GLOBAL_PTR other = ws + (tile * SPLITK + o) * (BM * BN) + tid;
            PRAGMA(unroll)
            for (int i = 0; i < TM; ++i)
                PRAGMA(unroll)
                for (int j = 0; j < TN; ++j) acc[i][j] += LDCG(other + (i * TN + j) * NT);
        }
    }
#endif

#if BWDF
    // Epilogue: dW[m][c*R*S + r*S + s], the columns past C*R*S left out.
    PRAGMA(unroll)
    for (int g = 0; g < TN / VS; ++g) {
        PRAGMA(unroll)
        for (int jj = 0; jj < VS; ++jj) {
            const int j = (int)bn + g * (NDIM * VS) + tx * VS + jj;
            if (j >= CRS) continue;
            PRAGMA(unroll)
            for (int i = 0; i < TM; ++i) {
                const int m = bm + (i / VS) * (MDIM * VS) + ty * VS + i % VS;
                out[(IDX)m * CRS + j] = acc[i][g * VS + jj];
            }
        }
    }
#elif OSTAGE
    // Epilogue through local memory ([BM][OLD], over the tiles (and the patch), which are
    // read no more): consecutive work-items then write consecutive pixels of a channel, a
    // patch tile's row or the tile's run of pixels, in whole sectors (from the registers, a
    // warp's store covers every VS-th pixel of a few channels, one float at a time where
    // P*Q is odd: AlexNet L1).
    SYNC();
    {
        LOCAL_PTR ot = smem;
        PRAGMA(unroll)
        for (int g = 0; g < TN / VS; ++g)
            PRAGMA(unroll)
            for (int i = 0; i < TM; ++i)
                STORE_VS(ot + ((i / VS) * (MDIM * VS) + ty * VS + i % VS) * OLD +
                             g * (NDIM * VS) + tx * VS,
                         acc[i] + g * VS)
        SYNC();
#if PATCH
        OUT_PTR base = out + (pn * KO + bm) * PQ;
        for (int e = tid; e < BM * BN; e += NT) {
            const int ml = e / BN;
            const int j = e % BN;
            const int p = p0 + PIX_ROW(j);
            const int q = q0 + PIX_COL(j);
            if (PIX_IN(j)) base[(IDX)ml * PQ + p * Q + q] = ot[ml * OLD + j];
        }
#else
        // A work-item's pixels are the same in every channel (BN and NT are powers of 2):
        // their output address is computed once, the channels are constant offsets from it.
        PRAGMA(unroll)
        for (int t = 0; t < OCOLS; ++t) {
            const int j = NT >= BN ? tid % BN : tid + t * NT;
            const int m0 = NT >= BN ? tid / BN : 0;
            const IDX npq = bn + j;
            OUT_PTR o = out + ((npq / PQ) * KO + bm + m0) * PQ + npq % PQ;
            PRAGMA(unroll)
            for (int ml = 0; ml < BM / OROWS; ++ml)
                OSTORE1(o + (IDX)(ml * OROWS) * PQ, ot[(m0 + ml * OROWS) * OLD + j]);
        }
#endif
    }
#elif PATCH
    // Epilogue: out[n][m][p][q] of the tile's pixels inside the image, one at a time (a
    // row of the tile need not start at a vector boundary of the output).
    PRAGMA(unroll)
    for (int g = 0; g < TN / VS; ++g) {
        PRAGMA(unroll)
        for (int jj = 0; jj < VS; ++jj) {
            const int j = g * (NDIM * VS) + tx * VS + jj;
            const int p = p0 + PIX_ROW(j);
            const int q = q0 + PIX_COL(j);
            if (!PIX_IN(j)) continue;
            OUT_PTR base = out + pn * KO * PQ + p * Q + q;
            PRAGMA(unroll)
            for (int i = 0; i < TM; ++i) {
                const int m = bm + (i / VS) * (MDIM * VS) + ty * VS + i % VS;
                base[(IDX)m * PQ] = acc[i][g * VS + jj];
            }
        }
    }
#else
    STORE_OUT(bn)
#endif
#endif  // TILES
}
#endif  // ALGO == 0

// The reference: one work-item per output element, the definition read literally.
REF_KERNEL(dnn_conv_reference)(OUT out, IN in, IN filter, IN unused1, IN unused2,
                               IN unused3, IN unused4, GLOBAL_PTR unused5,
                               GLOBAL_UINT_PTR unused6 SHARED_PARAM) {
    const long g = GID;
    if (g >= (long)NB * PQ * KO) return;
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

// Backward-filter's reference: one work-item per filter-gradient element dW[m][c][r][s],
// the sum over the batch and output pixels read literally (`filter` is dY).
REF_KERNEL(dnn_conv_reference_bwd_filter)(OUT out, IN in, IN filter, IN unused1, IN unused2,
                                          IN unused3, IN unused4, GLOBAL_PTR unused5,
                                          GLOBAL_UINT_PTR unused6 SHARED_PARAM) {
    const long g = GID;
    if (g >= (long)KO * CRS) return;
    const int s = (int)(g % S);
    const int r = (int)((g / S) % R);
    const int c = (int)((g / RS) % C);
    const int m = (int)(g / CRS);
    double sum = 0.0;  // batch x pixels terms (387200 on AlexNet L1): f32 would round off
    for (long n = 0; n < NB; ++n)
        for (int p = 0; p < P; ++p)
            for (int q = 0; q < Q; ++q) {
                const int h = p * SU - PH + r;
                const int w = q * SV - PW + s;
                if (h >= 0 && h < H && w >= 0 && w < W)
                    sum += (double)in[((n * C + c) * H + h) * W + w] *
                           filter[((n * KO + m) * P + p) * Q + q];
            }
    out[g] = (float)sum;
}
