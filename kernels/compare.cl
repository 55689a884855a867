// The largest absolute difference of two float arrays, on the device: validation of an
// output against a reference output without copying either to the host. `out` holds the
// float's bits (non-negative floats order like their bits; a NaN difference is above
// infinity's bits: a mismatch); zero it first.
__kernel void maxdiff(__global const float* a, __global const float* b, const uint n,
                      volatile __global uint* out) {
    float m = 0.0f;
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        const float d = fabs(a[i] - b[i]);
        m = (isnan(d) || isnan(m)) ? NAN : fmax(m, d);
    }
    atomic_max(out, as_uint(m));
}
