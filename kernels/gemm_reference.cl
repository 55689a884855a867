// A plain GEMM used as the reference kernel: C = alpha * A^T * B + beta * C with
// A stored K x M (m fastest), B stored K x N (n fastest), C stored N x M (m fastest).
// One work-item per element of C; global size M x N.
__kernel void gemm_reference(const int M, const int N, const int K, const float alpha,
                             const float beta, const __global float* restrict A,
                             const __global float* restrict B, __global float* C) {
    const int m = get_global_id(0);
    const int n = get_global_id(1);
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        acc += A[k * M + m] * B[k * N + n];
    }
    C[n * M + m] = alpha * acc + beta * C[n * M + m];
}
