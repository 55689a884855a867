// convolution_milo.cu (shared/data/t1, from benchmark_hub, MIT) in OpenCL C, for timing
// `tune run` on PoCL: the same tiling, unrolling and tuning parameters, on a 512x512 image
// so that a CPU measures it in milliseconds. The parameter read_only is named use_ldg (read_only
// is an OpenCL keyword); it and use_shmem change nothing in the code here (as use_shmem in
// the CUDA original): they only shape the space.
#define image_height 512
#define image_width 512

#ifndef filter_height
    #define filter_height 17
#endif
#ifndef filter_width
    #define filter_width 17
#endif

#define border_height ((filter_height/2)*2)
#define border_width ((filter_width/2)*2)
#define input_height (image_height + border_height)
#define input_width (image_width + border_width)

#define i_end min(block_size_y*tile_size_y+border_height, input_height)
#define j_end min(block_size_x*tile_size_x+border_width, input_width)

#define shared_mem_width (block_size_x*tile_size_x+border_width)
#if use_padding == 1
    #if (((block_size_x % 32)!=0) && (((shared_mem_width-block_size_x)%32) != 0))
        #define padding_columns ((32 - (border_width + block_size_x*tile_size_x - block_size_x)) & 31)
        #undef shared_mem_width
        #define shared_mem_width (block_size_x*tile_size_x+border_width+padding_columns)
    #endif
#endif

__kernel void convolution_kernel(__global float *output, __global const float *input,
                                 __constant float *d_filter) {
    int ty = get_local_id(1);
    int tx = get_local_id(0);
    int by = get_group_id(1) * block_size_y * tile_size_y;
    int bx = get_group_id(0) * block_size_x * tile_size_x;

    __local float sh_input[block_size_y*tile_size_y+border_height][shared_mem_width];

    #pragma unroll
    for (int i=ty; i<i_end; i+=block_size_y) {
        #pragma unroll
        for (int j=tx; j<j_end; j+=block_size_x) {
            int y = by+i;
            int x = bx+j;
            if (y < input_height && x < input_width) {
                sh_input[i][j] = input[y*input_width+x];
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    float sum[tile_size_y][tile_size_x];
    #pragma unroll
    for (int yi=0; yi<tile_size_y; yi++) {
        #pragma unroll
        for (int xi=0; xi<tile_size_x; xi++) {
             sum[yi][xi] = 0.0f;
        }
    }

    #pragma unroll
    for (int i=0; i < filter_height; i++) {
        #pragma unroll
        for (int j=0; j < filter_width; j++) {
            #pragma unroll
            for (int yi=0; yi<tile_size_y; yi++) {
                #pragma unroll
                for (int xi=0; xi<tile_size_x; xi++) {
                    sum[yi][xi] += sh_input[ty+yi*block_size_y+i][tx+xi*block_size_x+j] * d_filter[i*filter_width+j];
                }
            }
        }
    }

    #pragma unroll
    for (int yi=0; yi<tile_size_y; yi++) {
        #pragma unroll
        for (int xi=0; xi<tile_size_x; xi++) {
            int y = by+ty+yi*block_size_y;
            int x = bx+tx+xi*block_size_x;
            if (y < image_height && x < image_width) {
                output[y * image_width + x] = sum[yi][xi];
            }
        }
    }
}
