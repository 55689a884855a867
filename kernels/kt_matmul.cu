// Kernel Tuner throughput comparison kernel: the project's benchmark kernel of
// shared/bench/gpu/matmul.cu, unchanged below, so that both tuners tune the same code.
// Register-tiled SGEMM (C = A * B, n x n, row-major) used only to measure tuner throughput.
extern "C" __global__ void matmul(float* __restrict__ C, const float* __restrict__ A,
                                  const float* __restrict__ B, int n) {
    const int col0 = (blockIdx.x * block_size_x + threadIdx.x) * tile_size_x;
    const int row0 = (blockIdx.y * block_size_y + threadIdx.y) * tile_size_y;
    float acc[tile_size_y][tile_size_x];
    #pragma unroll
    for (int i = 0; i < tile_size_y; i++)
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++) acc[i][j] = 0.0f;
    #pragma unroll loop_unroll
    for (int k = 0; k < n; k++) {
        float b[tile_size_x];
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++) b[j] = B[k * n + col0 + j];
        #pragma unroll
        for (int i = 0; i < tile_size_y; i++) {
            const float a = A[(row0 + i) * n + k];
            #pragma unroll
            for (int j = 0; j < tile_size_x; j++) acc[i][j] += a * b[j];
        }
    }
    #pragma unroll
    for (int i = 0; i < tile_size_y; i++)
        #pragma unroll
        for (int j = 0; j < tile_size_x; j++) C[(row0 + i) * n + col0 + j] = acc[i][j];
}
