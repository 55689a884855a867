// The largest absolute difference of two float arrays, on the device (the CUDA twin of
// compare.cl): `out` holds the float's bits (non-negative floats order like their bits);
// zero it first.
extern "C" __global__ void maxdiff(const float* a, const float* b, const unsigned n,
                                   unsigned* out) {
    float m = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float d = fabsf(a[i] - b[i]);
        m = (d != d || m != m) ? __int_as_float(0x7fc00000) : fmaxf(m, d);
    }
    atomicMax(out, __float_as_uint(m));
}
