#!/bin/bash
# GPU run 2 of the OpenCL case studies: CLTune GEMM at 4096^3 and XgemmDirect at IS1-IS4, 1024^3.
B=.device-bin/opencl
export TUNE_OPENCL_DEVICE=${TUNE_OPENCL_DEVICE:-nvidia}
TUNE_EVALS=400 TUNE_SECONDS=200 timeout 300 $B/opencl_gemm 4096 4096 4096
TUNE_EVALS=300 TUNE_SECONDS=40 timeout 280 $B/opencl_xgemm_direct
mkdir -p $OUT && tar czf $OUT/records2.tgz target/tune
