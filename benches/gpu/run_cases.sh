#!/bin/bash
# GPU checks of the case studies described once for every backend (issue 11, cases item):
# the CUDA tests with a device required (every case study with a CUDA kernel end to end,
# XgemmDirect at odd sizes, cuBLAS with alpha and beta), the OpenCL tests on NVIDIA's
# OpenCL, and each case-study example on both backends at short budgets. Three parts, each
# under 10 minutes: `tests`, `cuda` (the examples on CUDA) and `opencl` (on NVIDIA's OpenCL).
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features cuda,opencl --examples
#   cargo test --release --features cuda,opencl --no-run --test cuda --test opencl --test cases
#   mkdir -p .device-bin/cases && for t in cuda opencl cases; do
#     cp "$(ls -t target/release/deps/$t-* | grep -v '\.d$' | head -1)" .device-bin/cases/${t}_test
#   done
#   cp target/release/examples/{copy,saxpy,conv,gemm,xgemm_direct,cuda_bench} .device-bin/cases/
#   B=.device-bin/cases bash benches/gpu/run_cases.sh tests
#   B=.device-bin/cases bash benches/gpu/run_cases.sh cuda
#   B=.device-bin/cases bash benches/gpu/run_cases.sh opencl
B=${B:-.device-bin/cases}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libnvrtc and libcublas on LD_LIBRARY_PATH
OUT=${OUT:-/tmp/cases-out}
mkdir -p "$OUT"
quiet() { grep -vE '^(setup|device):|^\s*$'; }

case "${1:-tests}" in
tests)
  echo "### cases (no device)"
  timeout 60 "$B/cases_test" 2>&1 | grep -E "^test |test result|panicked"
  echo "### cuda (TUNE_REQUIRE_CUDA=1: a missing GPU fails)"
  TUNE_REQUIRE_CUDA=1 timeout 240 bash $R "$B/cuda_test" --test-threads=1 2>&1 |
    grep -E "^test |test result|panicked|note:"
  echo "### opencl on NVIDIA"
  TUNE_OPENCL_DEVICE=nvidia CI=1 timeout 280 "$B/opencl_test" 2>&1 |
    grep -E "^test |test result|panicked|note:"
  ;;
cuda | opencl)
  # Each case on one backend, from the same descriptions as the other: the RESULT lines of
  # the two parts compare the backends.
  backend=$1
  export TUNE_OPENCL_DEVICE=nvidia
  echo "### saxpy --backend $backend"
  TUNE_EVALS=60 TUNE_SECONDS=15 timeout 60 bash $R "$B/saxpy" --backend $backend 2>&1 | quiet
  echo "### conv --backend $backend (3x3, 7x7)"
  TUNE_EVALS=60 TUNE_SECONDS=15 timeout 150 bash $R "$B/conv" --backend $backend 8192 4096 3 7 2>&1 | quiet
  echo "### gemm --backend $backend (2048^3)"
  TUNE_EVALS=60 TUNE_SECONDS=20 timeout 100 bash $R "$B/gemm" --backend $backend 2048 2>&1 | quiet
  echo "### xgemm_direct --backend $backend (IS1, IS4; on CUDA against cuBLAS)"
  TUNE_EVALS=200 TUNE_SECONDS=15 timeout 120 bash $R "$B/xgemm_direct" --backend $backend \
    '20x1*1x576' '10x64*64x500' 2>&1 | quiet
  if [ "$backend" = opencl ]; then
    echo "### copy"
    TUNE_EVALS=20 timeout 40 "$B/copy" 2>&1 | quiet
  else
    echo "### cuda_bench, Kernel Tuner's throughput case only"
    TUNE_BENCH_QUICK=1 TUNE_BENCH_ONLY=5 timeout 60 bash $R "$B/cuda_bench" 2>&1 | tail -8
  fi
  tar czf "$OUT/records-cases-$backend.tgz" target/tune tuning 2>/dev/null
  ;;
*)
  echo "usage: run_cases.sh tests|cuda|opencl" >&2
  exit 2
  ;;
esac
