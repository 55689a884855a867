// A 2D filter (convolution) of a frame, written for tune's online-tuning example:
// dst[y][x] = sum over fy, fx < FS of filt[fy][fx] * src[y + fy][x + fx], where src is the
// W x H frame padded by FS / 2 on every side (rows of W + 2 (FS / 2) floats).
//
// Fixed defines: W, H (multiples of the tile), FS (odd). Tuning parameters:
//   TBX, TBY   work-group size
//   WPTX, WPTY outputs per work-item in x and y (a work-group's tile is TBX WPTX x TBY WPTY;
//              a work-item's outputs are TBX and TBY apart, so neighbours write neighbours)
//   LOCAL      1: the work-group stages its tile and halo in local memory first;
//              0: every work-item reads the frame from global memory
#define HFS (FS / 2)
#define TW (TBX * WPTX)
#define TH (TBY * WPTY)
#define PITCH (W + 2 * HFS)

__kernel __attribute__((reqd_work_group_size(TBX, TBY, 1)))
void filter(__global const float* restrict src, __constant float* restrict filt,
            __global float* restrict dst) {
    const int lx = get_local_id(0);
    const int ly = get_local_id(1);
    const int x0 = get_group_id(0) * TW;
    const int y0 = get_group_id(1) * TH;
#if LOCAL
    __local float tile[TH + 2 * HFS][TW + 2 * HFS];
    for (int y = ly; y < TH + 2 * HFS; y += TBY)
        for (int x = lx; x < TW + 2 * HFS; x += TBX)
            tile[y][x] = src[(y0 + y) * PITCH + x0 + x];
    barrier(CLK_LOCAL_MEM_FENCE);
  #define IN(y, x) tile[y][x]
#else
  #define IN(y, x) src[(y0 + (y)) * PITCH + x0 + (x)]
#endif
    float acc[WPTY][WPTX];
    for (int wy = 0; wy < WPTY; wy++)
        for (int wx = 0; wx < WPTX; wx++) acc[wy][wx] = 0.0f;
    for (int fy = 0; fy < FS; fy++) {
        for (int fx = 0; fx < FS; fx++) {
            const float f = filt[fy * FS + fx];
            #pragma unroll
            for (int wy = 0; wy < WPTY; wy++)
                #pragma unroll
                for (int wx = 0; wx < WPTX; wx++)
                    acc[wy][wx] += f * IN(ly + wy * TBY + fy, lx + wx * TBX + fx);
        }
    }
    for (int wy = 0; wy < WPTY; wy++)
        for (int wx = 0; wx < WPTX; wx++)
            dst[(y0 + ly + wy * TBY) * W + x0 + lx + wx * TBX] = acc[wy][wx];
}
