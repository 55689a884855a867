// CLTune's 2D convolution case study (CLTune paper, Table II), written for tune.
//
// dst[y][x] = sum over fy, fx of filt[fy][fx] * src[y + fy][x + fx], where src is the image
// padded by HFS = FS / 2 on every side: (IMG_W + 2 HFS) x (IMG_H + 2 HFS), row-major.
//
// Fixed defines: IMG_W, IMG_H (multiples of the tile), FS (odd filter size).
// Tuning parameters:
//   TBX, TBY       work-group size of the computing work-items
//   WPTX, WPTY     outputs per work-item in x (contiguous) and y (strided by TBY)
//   LOCAL          0: read the image from global memory; 1: the work-group stages its tile
//                  and halo in local memory, looping over it; 2: the work-group is enlarged to
//                  TBX_XL x TBY_XL so that every work-item loads WPTX x WPTY elements of the
//                  tile and halo once (the extra work-items only load)
//   VECTOR         width of the vector stores of the outputs (divides WPTX)
//   UNROLL_FACTOR  1 or FS: unroll the filter loops fully
//   PADDING        extra column in the local tile against bank conflicts
#define HFS (FS / 2)
#define SRC_W (IMG_W + 2 * HFS)
#define TILE_W (TBX * WPTX + 2 * HFS)
#define TILE_H (TBY * WPTY + 2 * HFS)
#if LOCAL == 2
  #define TBX_XL (TBX + (2 * HFS + WPTX - 1) / WPTX)
  #define TBY_XL (TBY + (2 * HFS + WPTY - 1) / WPTY)
#endif
#define PITCH (TILE_W + PADDING)

#if VECTOR == 1
  #define STOREV(v, p) (p)[0] = (v)[0]
#elif VECTOR == 2
  #define STOREV(v, p) vstore2((float2)((v)[0], (v)[1]), 0, (p))
#elif VECTOR == 4
  #define STOREV(v, p) vstore4((float4)((v)[0], (v)[1], (v)[2], (v)[3]), 0, (p))
#elif VECTOR == 8
  #define STOREV(v, p) vstore8((float8)((v)[0], (v)[1], (v)[2], (v)[3], (v)[4], (v)[5], (v)[6], (v)[7]), 0, (p))
#endif

#if LOCAL > 0
  #define IN(x, y) tile[(y) * PITCH + (x)]
#else
  #define IN(x, y) src[(gy0 + (y)) * SRC_W + gx0 + (x)]
#endif

__kernel void conv(const __global float* restrict src, __constant float* restrict filt,
                   __global float* restrict dst) {
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int gx0 = get_group_id(0) * TBX * WPTX;
    const int gy0 = get_group_id(1) * TBY * WPTY;

#if LOCAL > 0
    __local float tile[TILE_H * PITCH];
  #if LOCAL == 1
    for (int y = ly; y < TILE_H; y += TBY) {
        for (int x = lx; x < TILE_W; x += TBX) {
            tile[y * PITCH + x] = src[(gy0 + y) * SRC_W + gx0 + x];
        }
    }
  #else
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++) {
        #pragma unroll
        for (int wx = 0; wx < WPTX; wx++) {
            const int x = wx * TBX_XL + lx;
            const int y = wy * TBY_XL + ly;
            if (x < TILE_W && y < TILE_H) {
                tile[y * PITCH + x] = src[(gy0 + y) * SRC_W + gx0 + x];
            }
        }
    }
  #endif
    barrier(CLK_LOCAL_MEM_FENCE);
  #if LOCAL == 2
    if (lx >= TBX || ly >= TBY) {
        return;
    }
  #endif
#endif

    float acc[WPTY][WPTX];
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++) {
        #pragma unroll
        for (int wx = 0; wx < WPTX; wx++) {
            acc[wy][wx] = 0.0f;
        }
    }
#if UNROLL_FACTOR > 1
    #pragma unroll
#endif
    for (int fy = 0; fy < FS; fy++) {
#if UNROLL_FACTOR > 1
        #pragma unroll
#endif
        for (int fx = 0; fx < FS; fx++) {
            const float f = filt[fy * FS + fx];
            #pragma unroll
            for (int wy = 0; wy < WPTY; wy++) {
                #pragma unroll
                for (int wx = 0; wx < WPTX; wx++) {
                    acc[wy][wx] += f * IN(lx * WPTX + wx + fx, wy * TBY + ly + fy);
                }
            }
        }
    }
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++) {
        const int oy = gy0 + wy * TBY + ly;
        #pragma unroll
        for (int wv = 0; wv < WPTX; wv += VECTOR) {
            STOREV(&acc[wy][wv], &dst[oy * IMG_W + gx0 + lx * WPTX + wv]);
        }
    }
}
