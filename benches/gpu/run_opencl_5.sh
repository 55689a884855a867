#!/bin/bash
# GPU run 5 (session 3): the OpenCL case studies tuned by tune::Tuner (default technique:
# the bandit ensemble), on NVIDIA's OpenCL. Binaries in $B (see GPU-REPORT-opencl.md).
# Part a: copy, saxpy, convolution 3x3/7x7/11x11 + Table III, XgemmDirect IS1-IS4, cuBLAS.
B=${B:-.device-bin/ocl5}
export TUNE_OPENCL_DEVICE=${TUNE_OPENCL_DEVICE:-nvidia}
mkdir -p $OUT
run() { local t=$1; shift; echo "### $*"; timeout $t "$@" 2>&1 | grep -vE '^(setup|device):'; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
run 30 $B/opencl_devices
PYTHONUNBUFFERED=1 run 90 python3 $B/cublas_back_to_back.py
PYTHONUNBUFFERED=1 run 60 python3 $B/cublas_kernel_time.py
TUNE_SECONDS=30 run 60 $B/opencl_copy 67108864
TUNE_EVALS=100 TUNE_SECONDS=30 run 70 $B/opencl_saxpy 67108864
TUNE_EVALS=1000 TUNE_SECONDS=60 run 260 $B/opencl_conv 8192 4096 3 7 11
TUNE_EVALS=1000 TUNE_SECONDS=40 run 220 $B/opencl_xgemm_direct 20x1*1x576 20x25*25x576 50x1*1x64 10x64*64x500
tar czf $OUT/records5a.tgz target/tune tuning
