// CLTune's copy case study (CLTune paper, Fig. 1), written for tune.
// Tuning parameters (defines): WPT, elements copied by each work-item.
// The global size is n / WPT; work-item i copies elements i, i + G, ..., i + (WPT-1) G
// where G is the global size, so neighbouring work-items touch neighbouring elements.
__kernel void copy(const int n, const __global float* restrict src, __global float* restrict dst) {
    const int gid = get_global_id(0);
    const int stride = get_global_size(0);
    #pragma unroll
    for (int w = 0; w < WPT; w++) {
        const int i = gid + w * stride;
        if (i < n) {
            dst[i] = src[i];
        }
    }
}
