#!/bin/bash
# GPU run 3: XgemmDirect at IS1-IS4 and 1024^3 (per-work-item tile bounded), saxpy.
B=.device-bin/opencl
export TUNE_OPENCL_DEVICE=${TUNE_OPENCL_DEVICE:-nvidia}
TUNE_EVALS=300 TUNE_SECONDS=30 timeout 250 $B/opencl_xgemm_direct
TUNE_EVALS=200 TUNE_SECONDS=30 timeout 80 $B/opencl_saxpy $((1 << 26))
mkdir -p $OUT && tar czf $OUT/records3.tgz target/tune
