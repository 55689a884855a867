#!/bin/bash
# One GEMM library for every shape (issue 14): XgemmDirect over the 431 GEMM shapes of VGG16,
# ResNet-50 and MobileNet on the GPU, with CUDA and with NVIDIA's OpenCL, and cuBLAS SGEMM
# (TF32 off) on every shape. Each part writes run.json (the performance matrix, the cuBLAS
# times), REPORT.md (the tables) and log.txt under $OUT/<backend>; analyse them here with
#   cargo run --release --features select --example select_gemm -- analyse DIR
# Every configuration is compiled once and launched with the sizes as arguments: a pool of
# 192 sampled configurations, 24 of them per shape as its search, then the cross-evaluation.
# Each part keeps to TUNE_SELECT_SECONDS (380) of compiling and measuring, then analyses
# (see gpu.rs).
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features select,cuda,opencl --example select_gemm
#   mkdir -p .device-bin/select && cp target/release/examples/select_gemm .device-bin/select/
#   B=.device-bin/select bash benches/gpu/run_select.sh cuda     # at most about 7 minutes
#   B=.device-bin/select bash benches/gpu/run_select.sh opencl   # at most about 7 minutes
B=${B:-.device-bin/select}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libnvrtc and libcublas on LD_LIBRARY_PATH
OUT=${OUT:-/tmp/select-out}
# NVIDIA's OpenCL compiler took 486 s for 192 configurations on an H100 (2.5 s each):
# OpenCL samples 64, and no configuration is compiled past a third of the budget.
if [ "${1:-cuda}" = opencl ]; then POOL=${POOL:-64}; else POOL=${POOL:-192}; fi
EVALS=${EVALS:-24}
export TUNE_SELECT_SECONDS=${TUNE_SELECT_SECONDS:-380}
case "${1:-cuda}" in
cuda | opencl)
  mkdir -p "$OUT/$1"
  git log -1 --format='commit %H' 2>/dev/null | tee "$OUT/$1/log.txt"
  TUNE_OPENCL_DEVICE=nvidia OUT=$OUT/$1 timeout 570 bash $R "$B/select_gemm" gpu --backend "$1" \
    "$POOL" "$EVALS" 2>&1 | tee -a "$OUT/$1/log.txt" | tail -60
  ;;
*)
  echo "usage: run_select.sh cuda|opencl" >&2
  exit 2
  ;;
esac
