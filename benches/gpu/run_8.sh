#!/bin/bash
# GPU run 8 (session 3): OpenCL XgemmDirect IS3 and IS4 with a longer budget (one launch at
# a time), and a second, independent CUDA XgemmDirect run against cuBLAS (the example).
B=${B:-.device-bin/g7}
mkdir -p $OUT
echo "### opencl xgemm"; TUNE_OPENCL_DEVICE=nvidia TUNE_EVALS=1000 TUNE_SECONDS=60 timeout 200 $B/opencl_xgemm_direct 50x1*1x64 10x64*64x500 2>&1 | grep -vE '^(setup|device):'
echo "### cuda_xgemm_direct"; TUNE_SECONDS=20 timeout 200 bash benches/gpu-logs/cuda/run.sh $B/cuda_xgemm_direct 200 2>&1 | grep -vE '^(setup|device):' | tail -30
tar czf $OUT/records8.tgz target/tune 2>/dev/null
