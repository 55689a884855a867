#!/bin/bash
# GPU checks of the backend rooms (issue 10, backend items): the CUDA tests with a device
# required (the unsafe context accessor is used by the cuBLAS test), the README's NVIDIA
# OpenCL command at the default number of test threads with a cold compiler cache (it failed
# 2 of 17 before the device tests ran one at a time), and the isolated backend on NVIDIA's
# OpenCL, including a worker served by `worker_main`.
#
# Build the test binaries where cargo is (no GPU needed), then run this on the GPU machine:
#   cargo test --release --features cuda,opencl --no-run \
#     --test cuda --test cuda_sticky --test opencl --test isolated
#   mkdir -p .device-bin/backend && for t in cuda cuda_sticky opencl isolated; do
#     cp "$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)" .device-bin/backend/${t}_test
#   done
#   B=.device-bin/backend bash benches/gpu/run_backend.sh
# Or with cargo on the GPU machine: B= bash benches/gpu/run_backend.sh
B=${B-.device-bin/backend}

run() { # seconds, test name, then the arguments of the test binary
  local limit=$1 t=$2
  shift 2
  if [ -n "$B" ]; then
    timeout "$limit" "$B/${t}_test" "$@"
  else
    timeout "$limit" cargo test --release --features cuda,opencl --test "$t" -- "$@"
  fi
}

export TUNE_REQUIRE_CUDA=1
echo "### cuda (TUNE_REQUIRE_CUDA=1: a missing GPU fails)"
run 600 cuda --test-threads=1 2>&1 | grep -E "^test |test result|panicked|note:"
echo "### cuda_sticky"
run 300 cuda_sticky 2>&1 | grep -E "^test |test result|panicked|note:|after the fault|in a worker"

echo "### opencl on NVIDIA, default test threads, cold compiler cache"
rm -rf "$HOME/.nv/ComputeCache"
TUNE_OPENCL_DEVICE=nvidia CI=1 run 600 opencl 2>&1 | grep -E "^test |test result|panicked|note:"

echo "### isolated on NVIDIA OpenCL (its crash and hang tests need a CPU device)"
TUNE_OPENCL_DEVICE=nvidia CI=1 run 300 isolated --skip a_hanging --skip a_crashing \
  --skip a_tuning_run 2>&1 | grep -E "^test |test result|panicked|note:"
