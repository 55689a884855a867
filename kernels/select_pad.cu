// Zero-padded copies around the tiled SGEMM (kernels/sgemm.cu with SIZE_ARGS), which needs
// M, N and K to be multiples of its tiles: a library that runs it on any shape copies A, B
// (and C when beta is not 0) into padded buffers and the product back out. The zeros in
// K's padding keep the product exact; the padding along M and N is computed and dropped.

// dst (rows_p x cols_p) = src (rows x cols), zeros outside it; row-major, one thread per
// element of dst.
extern "C" __global__ void pad(float* __restrict__ dst, const float* __restrict__ src,
                               const int rows, const int cols, const int rows_p,
                               const int cols_p) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows_p * cols_p) return;
    const int r = (int)(i / cols_p);
    const int c = (int)(i % cols_p);
    dst[i] = (r < rows && c < cols) ? src[(size_t)r * cols + c] : 0.0f;
}

// dst (rows x cols) = the top-left rows x cols of src (row length cols_p).
extern "C" __global__ void unpad(float* __restrict__ dst, const float* __restrict__ src,
                                 const int rows, const int cols, const int cols_p) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * cols) return;
    const int r = (int)(i / cols);
    const int c = (int)(i % cols);
    dst[i] = src[(size_t)r * cols_p + c];
}
