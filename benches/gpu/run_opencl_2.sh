#!/bin/bash
# GPU run 2 of the OpenCL case studies: CLTune GEMM at 4096^3, XgemmDirect at IS1-IS4 and
# 1024^3, saxpy, and the 3x3 convolution with a larger budget.
B=.device-bin/opencl
export TUNE_OPENCL_DEVICE=${TUNE_OPENCL_DEVICE:-nvidia}
TUNE_EVALS=500 TUNE_SECONDS=170 timeout 220 $B/opencl_gemm 4096 4096 4096
TUNE_EVALS=300 TUNE_SECONDS=28 timeout 190 $B/opencl_xgemm_direct
TUNE_EVALS=200 TUNE_SECONDS=25 timeout 50 $B/opencl_saxpy $((1 << 26))
TUNE_EVALS=500 TUNE_SECONDS=60 timeout 90 $B/opencl_conv 8192 4096 3
mkdir -p $OUT && tar czf $OUT/records2.tgz target/tune
