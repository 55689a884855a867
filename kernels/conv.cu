// 2D convolution with CLTune's tuning parameters, written for tune in CUDA C.
// out[y][x] = sum_{fy, fx} coeff[fy][fx] * in[y + fy][x + fx], where `in` is the image padded
// by HFS = FS / 2 on every side (width W + 2 HFS, height H + 2 HFS) and `out` is W x H.
//
// Tuning parameters (CLTune, Table II):
//   TBX, TBY     threads per block in x and y
//   WPTX, WPTY   outputs per thread in x and y
//   VECTOR       width (1, 2, 4) of the vector loads from the padded image (LOCAL == 2)
//   LOCAL        0: read the image through the read-only cache; 1: stage the block's tile
//                plus halo in shared memory with scalar loads; 2: the same with VECTOR-wide
//                loads
//   PADDING      pad each shared-memory row by one word (bank conflicts)
//   UNROLL       1: unroll the filter loops fully; 0: leave them rolled
// Fixed defines: FS (filter size), W, H (image size; multiples of TBX*WPTX and TBY*WPTY).
// Launch: block (TBX, TBY), global (W / WPTX, H / WPTY).

#define HFS (FS / 2)
#define PW (W + 2 * HFS)
#define TILE_X (TBX * WPTX)
#define TILE_Y (TBY * WPTY)
#define SX (TILE_X + 2 * HFS)
#define SY (TILE_Y + 2 * HFS)

#if UNROLL
#define FUNROLL _Pragma("unroll")
#else
#define FUNROLL _Pragma("unroll 1")
#endif

extern "C" __global__ void __launch_bounds__(TBX * TBY)
conv(const float* __restrict__ in, const float* __restrict__ coeff, float* __restrict__ out) {
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = blockIdx.x * TILE_X;
    const int y0 = blockIdx.y * TILE_Y;
    __shared__ float fc[FS * FS];
    for (int i = ty * TBX + tx; i < FS * FS; i += TBX * TBY) fc[i] = coeff[i];

#if LOCAL > 0
    __shared__ __align__(16) float tile[SY][SX + PADDING];
#if LOCAL == 2 && VECTOR > 1
    // Vector loads where a whole vector lies inside the tile row and is aligned in memory;
    // scalar loads for the rest.
    for (int r = ty; r < SY; r += TBY) {
        const float* row = in + (size_t)(y0 + r) * PW + x0;
        for (int c = tx * VECTOR; c < SX; c += TBX * VECTOR) {
            if (c + VECTOR <= SX && ((size_t)(row + c) % (VECTOR * 4)) == 0) {
#if VECTOR == 4
                const float4 v = __ldg(reinterpret_cast<const float4*>(row + c));
                tile[r][c] = v.x; tile[r][c + 1] = v.y; tile[r][c + 2] = v.z; tile[r][c + 3] = v.w;
#else
                const float2 v = __ldg(reinterpret_cast<const float2*>(row + c));
                tile[r][c] = v.x; tile[r][c + 1] = v.y;
#endif
            } else {
                for (int v = 0; v < VECTOR && c + v < SX; ++v) tile[r][c + v] = __ldg(row + c + v);
            }
        }
    }
#else
    for (int r = ty; r < SY; r += TBY)
        for (int c = tx; c < SX; c += TBX) tile[r][c] = __ldg(in + (size_t)(y0 + r) * PW + x0 + c);
#endif
#endif
    __syncthreads();

#pragma unroll
    for (int wy = 0; wy < WPTY; ++wy) {
#pragma unroll
        for (int wx = 0; wx < WPTX; ++wx) {
            // Outputs of a thread are strided by the block size, so a warp stays coalesced.
            const int lx = wx * TBX + tx;
            const int ly = wy * TBY + ty;
            float acc = 0.0f;
            FUNROLL for (int fy = 0; fy < FS; ++fy) {
                FUNROLL for (int fx = 0; fx < FS; ++fx) {
#if LOCAL > 0
                    const float v = tile[ly + fy][lx + fx];
#else
                    const float v = __ldg(in + (size_t)(y0 + ly + fy) * PW + x0 + lx + fx);
#endif
                    acc = fmaf(fc[fy * FS + fx], v, acc);
                }
            }
            out[(size_t)(y0 + ly) * W + x0 + lx] = acc;
        }
    }
}
