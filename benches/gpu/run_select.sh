#!/bin/bash
# One GEMM library for every shape (issue 14): GEMM kernels over the 431 GEMM shapes of
# VGG16, ResNet-50 and MobileNet on the GPU, with CUDA (XgemmDirect and the tiled SGEMM,
# padded where a shape is not a multiple of its tiles, copies timed) and with NVIDIA's
# OpenCL (XgemmDirect), and cuBLAS SGEMM (TF32 off) on every shape. Each part writes
# run.json (the performance matrix, the cuBLAS times), REPORT.md (the tables) and log.txt
# under $OUT/<backend>; analyse them here with
#   cargo run --release --features select --example select_gemm -- analyse DIR
# Every configuration is compiled once and launched with the sizes as arguments: a pool of
# sampled configurations, EVALS of them per shape as its search, then the cross-evaluation
# (searches and cross-evaluation within 15% of the grid). Each part keeps to
# TUNE_SELECT_SECONDS of compiling and measuring, then analyses (see gpu.rs).
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features select,cuda,opencl --example select_gemm
#   mkdir -p .device-bin/select && cp target/release/examples/select_gemm .device-bin/select/
#   B=.device-bin/select bash benches/gpu/run_select.sh cuda     # about 5 minutes
#   B=.device-bin/select bash benches/gpu/run_select.sh opencl   # about 4 minutes
B=${B:-.device-bin/select}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libnvrtc and libcublas on LD_LIBRARY_PATH
OUT=${OUT:-/tmp/select-out}
# NVIDIA's OpenCL compiler took 486 s for 192 configurations on an H100 (2.5 s each, one at
# a time): OpenCL samples 32 (no configuration is compiled past a third of the budget) and
# has no tiled SGEMM (kernels/sgemm.cu is CUDA).
if [ "${1:-cuda}" = opencl ]; then
  POOL=${POOL:-32} TILED=0 SECONDS_=${TUNE_SELECT_SECONDS:-190}
else
  POOL=${POOL:-128} TILED=${TILED:-24} SECONDS_=${TUNE_SELECT_SECONDS:-270}
fi
EVALS=${EVALS:-12}
export TUNE_SELECT_SECONDS=$SECONDS_
case "${1:-cuda}" in
cuda | opencl)
  mkdir -p "$OUT/$1"
  git log -1 --format='commit %H' 2>/dev/null | tee "$OUT/$1/log.txt"
  # The SM clock under load, every 30 s (the run.sh line logs it idle, before).
  (while sleep 30; do
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  done) >"$OUT/$1/clocks.txt" 2>&1 &
  CLOCKS=$!
  TUNE_OPENCL_DEVICE=nvidia OUT=$OUT/$1 timeout 570 bash $R "$B/select_gemm" gpu --backend "$1" \
    "$POOL" "$EVALS" "$TILED" 2>&1 | tee -a "$OUT/$1/log.txt" | tail -80
  kill $CLOCKS 2>/dev/null
  echo "SM clock, temperature, power every 30 s:" | tee -a "$OUT/$1/log.txt"
  tee -a "$OUT/$1/log.txt" <"$OUT/$1/clocks.txt"
  rm -f "$OUT/$1/clocks.txt"
  ;;
*)
  echo "usage: run_select.sh cuda|opencl" >&2
  exit 2
  ;;
esac
