#!/bin/bash
# GPU run 1 of the OpenCL case studies: devices, cuBLAS + copy bandwidth, copy, saxpy, conv.
# Run from the repository root with the release examples in .device-bin/opencl.
B=.device-bin/opencl
export TUNE_OPENCL_DEVICE=${TUNE_OPENCL_DEVICE:-nvidia}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv
$B/opencl_devices
python3 $B/cublas_sgemm.py
TUNE_EVALS=1000 TUNE_SECONDS=30 timeout 100 $B/opencl_copy $((1 << 26))
TUNE_EVALS=200 TUNE_SECONDS=30 timeout 100 $B/opencl_saxpy $((1 << 26))
TUNE_EVALS=150 TUNE_SECONDS=40 timeout 280 $B/opencl_conv 8192 4096 3 7 11
mkdir -p $OUT && tar czf $OUT/records1.tgz target/tune
