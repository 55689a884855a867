// A 2D filter (convolution) of a frame, written for tune's online-tuning example; the CUDA
// twin of frame_filter.cl, with the same arguments and tuning parameters:
// dst[y][x] = sum over fy, fx < FS of filt[fy][fx] * src[y + fy][x + fx], src padded by
// FS / 2 on every side (rows of W + 2 (FS / 2) floats).
//
// Fixed defines: W, H (multiples of the tile), FS (odd). Tuning parameters: TBX, TBY
// (block), WPTX, WPTY (outputs per thread, TBX and TBY apart), LOCAL (stage the tile and
// halo in shared memory).
#define HFS (FS / 2)
#define TW (TBX * WPTX)
#define TH (TBY * WPTY)
#define PITCH (W + 2 * HFS)

extern "C" __global__ void __launch_bounds__(TBX * TBY)
filter(const float* __restrict__ src, const float* __restrict__ filt, float* __restrict__ dst) {
    const int lx = threadIdx.x;
    const int ly = threadIdx.y;
    const int x0 = blockIdx.x * TW;
    const int y0 = blockIdx.y * TH;
    __shared__ float f[FS * FS];
    for (int i = ly * TBX + lx; i < FS * FS; i += TBX * TBY) f[i] = filt[i];
#if LOCAL
    __shared__ float tile[TH + 2 * HFS][TW + 2 * HFS];
    for (int y = ly; y < TH + 2 * HFS; y += TBY)
        for (int x = lx; x < TW + 2 * HFS; x += TBX)
            tile[y][x] = src[(y0 + y) * PITCH + x0 + x];
  #define IN(y, x) tile[y][x]
#else
  #define IN(y, x) __ldg(&src[(y0 + (y)) * PITCH + x0 + (x)])
#endif
    __syncthreads();
    float acc[WPTY][WPTX];
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++)
        #pragma unroll
        for (int wx = 0; wx < WPTX; wx++) acc[wy][wx] = 0.0f;
    for (int fy = 0; fy < FS; fy++) {
        for (int fx = 0; fx < FS; fx++) {
            const float c = f[fy * FS + fx];
            #pragma unroll
            for (int wy = 0; wy < WPTY; wy++)
                #pragma unroll
                for (int wx = 0; wx < WPTX; wx++)
                    acc[wy][wx] += c * IN(ly + wy * TBY + fy, lx + wx * TBX + fx);
        }
    }
    #pragma unroll
    for (int wy = 0; wy < WPTY; wy++)
        #pragma unroll
        for (int wx = 0; wx < WPTX; wx++)
            dst[(y0 + ly + wy * TBY) * W + x0 + lx + wx * TBX] = acc[wy][wx];
}
