#!/bin/bash
# GPU run 6 (session 3): GEMM 4096^3 (CLTune's Table IV), convolution 3x3/7x7/11x11 with each
# search starting from the best of the smaller filters (+ Table III), XgemmDirect IS1-IS4
# timed one launch at a time (+ the launch floor) and 1024^3; tuned by tune::Tuner on
# NVIDIA's OpenCL. Binaries in $B (see GPU-REPORT-opencl.md).
B=${B:-.device-bin/ocl6}
export TUNE_OPENCL_DEVICE=${TUNE_OPENCL_DEVICE:-nvidia}
mkdir -p $OUT
run() { local t=$1; shift; echo "### $*"; timeout $t "$@" 2>&1 | grep -vE '^(setup|device):'; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
TUNE_EVALS=1000 TUNE_SECONDS=130 run 190 $B/opencl_gemm 4096
TUNE_EVALS=1000 TUNE_SECONDS=40 run 230 $B/opencl_conv 8192 4096 3 7 11
TUNE_EVALS=1000 TUNE_SECONDS=22 run 150 $B/opencl_xgemm_direct 20x1*1x576 20x25*25x576 50x1*1x64 10x64*64x500 1024x1024*1024x1024
tar czf $OUT/records6.tgz target/tune tuning
