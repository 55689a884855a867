// ATF's saxpy case study, written for tune: y = a * x + y.
// Tuning parameters (defines): WPT, elements per work-item (divides n); the local size LS is
// a launch parameter only.
__kernel void saxpy(const int n, const float a, const __global float* restrict x,
                    __global float* restrict y) {
    const int gid = get_global_id(0);
    const int stride = get_global_size(0);
    #pragma unroll
    for (int w = 0; w < WPT; w++) {
        const int i = gid + w * stride;
        y[i] = a * x[i] + y[i];
    }
}
