// CLTune's 2D convolution case study (CLTune paper, Table II), written for tune.
//
// dst[y][x] = sum over fy, fx of filt[fy][fx] * src[y + fy][x + fx], where src is the image
// padded by HFS = FS / 2 on every side: IMG_H + 2 HFS rows of SRC_W floats (SRC_W >= IMG_W +
// 2 HFS; a multiple of 4 keeps vector loads aligned).
//
// Fixed defines: IMG_W, IMG_H (multiples of the tile), FS (odd filter size), SRC_W.
// Tuning parameters:
//   TBX, TBY       work-group size of the computing work-items
//   WPTX, WPTY     outputs per work-item in x (contiguous) and y (strided by TBY)
//   LOCAL          0: read the image from global memory, a work-item computing WPTY
//                  consecutive rows: each input row it needs is loaded once into registers
//                  (vector loads of VECTOR floats) and used for every output row it touches;
//                  1: the work-group stages its tile
//                  and halo in local memory, looping over it; 2: the work-group is enlarged to
//                  TBX_XL x TBY_XL so that every work-item loads WPTX x WPTY elements of the
//                  tile and halo once (the extra work-items only load)
//   VECTOR         width of the vector loads (LOCAL 0) and stores of the outputs (divides WPTX)
//   UNROLL_FACTOR  1 or FS: unroll the filter loops fully
//   PADDING        extra column in the local tile against bank conflicts
#define HFS (FS / 2)
#ifndef SRC_W
  #define SRC_W (IMG_W + 2 * HFS)
#endif
#define TILE_W (TBX * WPTX + 2 * HFS)
#define TILE_H (TBY * WPTY + 2 * HFS)
#if LOCAL == 2
  #define TBX_XL (TBX + (2 * HFS + WPTX - 1) / WPTX)
  #define TBY_XL (TBY + (2 * HFS + WPTY - 1) / WPTY)
#endif
#define PITCH (TILE_W + PADDING)

// Outputs start at multiples of WPTX (a multiple of VECTOR), so the vector casts are aligned.
#if VECTOR == 1
  #define STOREV(v, p) (p)[0] = (v)[0]
#elif VECTOR == 2
  #define STOREV(v, p) *(__global float2*)(p) = (float2)((v)[0], (v)[1])
#elif VECTOR == 4
  #define STOREV(v, p) *(__global float4*)(p) = (float4)((v)[0], (v)[1], (v)[2], (v)[3])
#endif
// Loads VECTOR floats of a source row at p (aligned when SRC_W is a multiple of VECTOR).
#if VECTOR == 1
  #define LOADV(r, p) (r)[0] = (p)[0]
#elif VECTOR == 2
  #define LOADV(r, p) { const float2 t = *(const __global float2*)(p); (r)[0] = t.x; (r)[1] = t.y; }
#elif VECTOR == 4
  #define LOADV(r, p) { const float4 t = *(const __global float4*)(p); \
      (r)[0] = t.x; (r)[1] = t.y; (r)[2] = t.z; (r)[3] = t.w; }
#endif

#define IN(x, y) tile[(y) * PITCH + (x)]

__kernel void conv(const __global float* restrict src, __constant float* restrict filt,
                   __global float* restrict dst) {
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int gx0 = get_group_id(0) * TBX * WPTX;
    const int gy0 = get_group_id(1) * TBY * WPTY;

#if LOCAL == 0
    // Rows ly * WPTY .. + WPTY, columns lx * WPTX .. + WPTX of the group's tile.
    const __global float* in = src + (gy0 + ly * WPTY) * SRC_W + gx0 + lx * WPTX;
    __global float* out = dst + (gy0 + ly * WPTY) * IMG_W + gx0 + lx * WPTX;
    float acc[WPTY][WPTX];
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++) {
        #pragma unroll
        for (int wx = 0; wx < WPTX; wx++) {
            acc[wy][wx] = 0.0f;
        }
    }
    // Input row r feeds output row wy through filter row r - wy.
    #pragma unroll
    for (int r = 0; r < WPTY + 2 * HFS; r++) {
        float row[WPTX + 2 * HFS];
        #pragma unroll
        for (int v = 0; v < WPTX; v += VECTOR) {
            LOADV(&row[v], in + r * SRC_W + v);
        }
        #pragma unroll
        for (int h = 0; h < 2 * HFS; h++) {
            row[WPTX + h] = in[r * SRC_W + WPTX + h];
        }
        #pragma unroll
        for (int wy = 0; wy < WPTY; wy++) {
            const int fy = r - wy;
            if (fy >= 0 && fy < FS) {
                #pragma unroll
                for (int fx = 0; fx < FS; fx++) {
                    const float f = filt[fy * FS + fx];
                    #pragma unroll
                    for (int wx = 0; wx < WPTX; wx++) {
                        acc[wy][wx] += f * row[wx + fx];
                    }
                }
            }
        }
    }
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++) {
        #pragma unroll
        for (int wv = 0; wv < WPTX; wv += VECTOR) {
            STOREV(&acc[wy][wv], out + wy * IMG_W + wv);
        }
    }
#else
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
#endif
}
