#!/bin/bash
# select11's GPU call (issue 14, round 11), one call of at most 9 minutes:
#  1. the dispatch bench on the GPU machine's idle CPU cores: round 10's generated
#     selector (bench_r10, main at 0a8a2ec) and this round's (bench_r11), one after the
#     other (criterion's median, and the batches' median / p99 / 16 threads);
#  2. the GEMM matrices with CUDA (XgemmDirect and the tiled SGEMM, 24 random tiles and
#     select11's 8 shaped ones) and with NVIDIA's OpenCL, two seeds each, as rounds 8-10,
#     with a little less time per part (the call's 9 minutes hold the bench too).
# Build where cargo is:
#   cargo build --release --all-features --example select_gemm --bench bench_main
#   cp target/release/examples/select_gemm target/release/deps/bench_main-HASH .device-bin/select11/
# and run from the repository root: B=.device-bin/select11 bash benches/gpu/run_select11.sh
B=${B:-.device-bin/select11}
OUT=${OUT:-/tmp/select11-out}
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|MHz|NUMA node\(s\)'
  uptime
  for round in 1; do
    for b in bench_r10 bench_r11; do
      echo "== $b (pass $round)"
      CRITERION_HOME=/tmp/select11-criterion timeout 60 "$B/$b" --bench 'select/' \
        --warm-up-time 1 --measurement-time 3 --noplot 2>&1 | grep -E '^select|time:'
    done
  done
  uptime
} >"$OUT/dispatch.txt" 2>&1
cat "$OUT/dispatch.txt"
SEEDS=1,2 PLAN=120 TUNE_SELECT_SECONDS=240 LIMIT=250 OUT=$OUT B=$B \
  bash benches/gpu/run_select.sh cuda
SEEDS=1,2 PLAN=180 POOL=128 EVALS=7 TUNE_SELECT_SECONDS=215 LIMIT=225 OUT=$OUT B=$B \
  bash benches/gpu/run_select.sh opencl
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee -a "$OUT/dispatch.txt"
