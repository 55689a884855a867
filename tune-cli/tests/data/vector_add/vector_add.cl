// c = a + b, each work-item adding tile_size_x elements block_size_x apart.
__kernel void vector_add(__global float *c, __global const float *a, __global const float *b,
                         const int n) {
    int i = get_group_id(0) * block_size_x * tile_size_x + get_local_id(0);
    for (int t = 0; t < tile_size_x; t++) {
        int j = i + t * block_size_x;
        if (j < n) {
            c[j] = a[j] + b[j];
        }
    }
}
