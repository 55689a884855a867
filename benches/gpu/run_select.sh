#!/bin/bash
# One GEMM library for every shape (issue 14): GEMM kernels over the 431 GEMM shapes of
# VGG16, ResNet-50 and MobileNet on the GPU, with CUDA (XgemmDirect and the tiled SGEMM,
# padded where a shape is not a multiple of its tiles, copies timed) and with NVIDIA's
# OpenCL (XgemmDirect, work-groups of at least 32 items), and cuBLAS SGEMM (TF32 off) on
# every shape. Each part writes run.json.gz (the matrix the selectors learn from, the scoring
# cells kept apart, the cuBLAS times) and log.txt under $OUT/<backend>, packed into
# $OUT/<backend>.tar.gz; analyse them where cargo is with
#   cargo run --release --features select --example select_gemm -- analyse DIR
# Every configuration is compiled once (on every core, as many at once as the compiler
# allows) and launched with the sizes as arguments: a pool of sampled configurations,
# EVALS of them per shape as its search, then the cross-evaluation (searches and
# cross-evaluation within 10% of the grid), then the label step (at most 5% of the grid
# for each training set: a split's tuning run is at most 15% of the grid), then the
# scoring cells, then (with the time left) the rest of the grid, which only the tables'
# per-shape optimum reads. Each part keeps to TUNE_SELECT_SECONDS of compiling and
# measuring (see gpu.rs) and is killed at LIMIT s.
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features select,cuda,opencl --example select_gemm
#   mkdir -p .device-bin/select5 && cp target/release/examples/select_gemm .device-bin/select5/
#   B=.device-bin/select5 bash benches/gpu/run_select.sh cuda     # about 4 minutes
#   B=.device-bin/select5 bash benches/gpu/run_select.sh opencl   # about 5 minutes
# Seed robustness (select6): SEEDS=1,2 runs the plan once per seed of the searches'
# shuffle on one compiled pool, each seed within PLAN seconds, into <backend>/seed-N/;
# cuBLAS and the filling of the grid once, after the last seed:
#   SEEDS=1,2 PLAN=110 TUNE_SELECT_SECONDS=270 LIMIT=300 B=.device-bin/select6 \
#     bash benches/gpu/run_select.sh cuda                         # about 5 minutes
# Since select7 each training shape's 2 best cells are re-measured twice, interleaved,
# inside the 15% (pipeline/remeasure.rs), select6's label cells are measured beside them
# for the comparison, and each shape's 3 best cells are re-measured for the tables last:
#   SEEDS=1,2 PLAN=130 TUNE_SELECT_SECONDS=290 LIMIT=320 B=.device-bin/select7 \
#     bash benches/gpu/run_select.sh cuda                         # about 5.5 minutes
#   SEEDS=1,2 PLAN=200 POOL=128 EVALS=7 TUNE_SELECT_SECONDS=290 LIMIT=320 \
#     B=.device-bin/select7 bash benches/gpu/run_select.sh opencl # about 5.5 minutes
# Since select8 the tuning side re-measures nothing (round 7 scored it: it cost more label
# cells than it gave back; RELABEL=1 brings it back); the scoring side still re-measures
# each shape's 3 best cells for the tables:
#   SEEDS=1,2 PLAN=130 TUNE_SELECT_SECONDS=290 LIMIT=320 B=.device-bin/select8 \
#     bash benches/gpu/run_select.sh cuda                         # about 4 minutes
# select9 (the fit guard, a selection-side change): the same call, binary built at 461b97c:
#   SEEDS=1,2 PLAN=130 TUNE_SELECT_SECONDS=290 LIMIT=320 B=.device-bin/select9 \
#     bash benches/gpu/run_select.sh cuda                         # about 4 minutes
B=${B:-.device-bin/select5}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libnvrtc and libcublas on LD_LIBRARY_PATH
OUT=${OUT:-/tmp/select-out}
# OpenCL: NVIDIA's OpenCL compiler took 3.4 s a configuration (select3, one at a time);
# no compile starts that would end past a third of the budget. EVALS is about 5% of the
# pool (a third of the 15%, fixed a priori in select5: 152 configurations on CUDA, the
# 50-60 of 64 that NVIDIA's OpenCL compiles by its deadline), so that the searches, the
# cross-evaluation and the label step get about a third each.
if [ "${1:-cuda}" = opencl ]; then
  POOL=${POOL:-64} TILED=0 EVALS=${EVALS:-3} SECONDS_=${TUNE_SELECT_SECONDS:-250}
else
  POOL=${POOL:-128} TILED=${TILED:-24} EVALS=${EVALS:-7} SECONDS_=${TUNE_SELECT_SECONDS:-200}
fi
LIMIT=${LIMIT:-320}
export TUNE_SELECT_SECONDS=$SECONDS_
export TUNE_SELECT_SEEDS=${SEEDS:-1}
export TUNE_SELECT_RELABEL=${RELABEL:-0}
[ -n "${PLAN:-}" ] && export TUNE_SELECT_PLAN_SECONDS=$PLAN
# The tables are computed where cargo is (`analyse`), not on the GPU machine's time.
export TUNE_SELECT_ANALYSE=${TUNE_SELECT_ANALYSE:-0}
case "${1:-cuda}" in
cuda | opencl)
  mkdir -p "$OUT/$1"
  git log -1 --format='commit %H' 2>/dev/null | tee "$OUT/$1/log.txt"
  echo "POOL=$POOL TILED=$TILED EVALS=$EVALS TUNE_SELECT_SECONDS=$SECONDS_ LIMIT=$LIMIT SEEDS=$TUNE_SELECT_SEEDS PLAN=${PLAN:-} RELABEL=$TUNE_SELECT_RELABEL" |
    tee -a "$OUT/$1/log.txt"
  # The SM clock under load, every 20 s (the run.sh line logs it idle, before).
  (while sleep 20; do
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  done) >"$OUT/$1/clocks.txt" 2>&1 &
  CLOCKS=$!
  TUNE_OPENCL_DEVICE=nvidia OUT=$OUT/$1 timeout "$LIMIT" bash $R "$B/select_gemm" gpu \
    --backend "$1" "$POOL" "$EVALS" "$TILED" 2>&1 | tee -a "$OUT/$1/log.txt" | tail -60
  echo "exit status ${PIPESTATUS[0]}" | tee -a "$OUT/$1/log.txt"
  kill $CLOCKS 2>/dev/null
  echo "SM clock, temperature, power every 20 s:" | tee -a "$OUT/$1/log.txt"
  tee -a "$OUT/$1/log.txt" <"$OUT/$1/clocks.txt"
  rm -f "$OUT/$1/clocks.txt"
  tar czf "$OUT/$1.tar.gz" -C "$OUT" "$1" && rm -rf "${OUT:?}/$1"
  ls -l "$OUT"
  ;;
*)
  echo "usage: run_select.sh cuda|opencl" >&2
  exit 2
  ;;
esac
