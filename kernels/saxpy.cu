// ATF's saxpy case study, written for tune: y = a * x + y over N elements.
// Tuning parameters: WPT (elements per thread, divides N), LS (threads per block, divides
// N / WPT). Launch: global size N / WPT, block LS. Each thread handles WPT elements strided
// by the global size, so that a warp's accesses stay coalesced.
extern "C" __global__ void saxpy(const int n, const float a, const float* __restrict__ x,
                                 float* __restrict__ y) {
    const int gid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = n / WPT;
#pragma unroll 8
    for (int w = 0; w < WPT; ++w) {
        const int i = gid + w * stride;
        y[i] = a * x[i] + y[i];
    }
}
