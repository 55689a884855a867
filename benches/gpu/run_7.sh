#!/bin/bash
# GPU run 7 (session 3): the CUDA tests (in-process and isolated), the OpenCL XgemmDirect
# shapes that run 6 did not reach (one launch at a time), then the CUDA bench (SGEMM vs
# cuBLAS, compile pipeline, XgemmDirect IS1-IS4 vs cuBLAS with graph-replayed back-to-back
# calls on both sides, Kernel Tuner's throughput case). Binaries in $B.
B=${B:-.device-bin/g7}
mkdir -p $OUT
R=benches/gpu-logs/cuda/run.sh
echo "### cuda tests"; TUNE_REQUIRE_CUDA=1 timeout 60 bash $R $B/cuda_test --test-threads=1 2>&1 | tail -25
echo "### cuda_sticky"; TUNE_REQUIRE_CUDA=1 timeout 45 bash $R $B/cuda_sticky --test-threads=1 2>&1 | tail -12
echo "### opencl xgemm"; TUNE_OPENCL_DEVICE=nvidia TUNE_EVALS=1000 TUNE_SECONDS=20 timeout 120 $B/opencl_xgemm_direct 50x1*1x64 10x64*64x500 1024x1024*1024x1024 2>&1 | grep -vE '^(setup|device):'
echo "### cuda_bench"; timeout 340 bash $R $B/cuda_bench $OUT 2>&1 | tee $OUT/bench.log | grep -vE '^ *$' | tail -70
tar czf $OUT/records7.tgz target/tune tuning 2>/dev/null
