#!/bin/bash
# Builder processes for NVIDIA's OpenCL (tune-runtime/src/backend/isolated/farm.rs): the same
# tuning run (same example, size, budget and seed) with programs built in the tuning process
# (TUNE_OPENCL_BUILD_PROCESSES=0) and in builder processes (the default on NVIDIA's platform),
# side by side, each with a cold JIT cache of its own; prints evaluations per second and the
# ratio. Build here:
#   cargo build --release --features opencl,cuda --example xgemm_direct --example conv --example opencl_builds
#   mkdir -p .device-bin/lead && cp target/release/examples/{xgemm_direct,conv,opencl_builds} .device-bin/lead/
# Run on the GPU machine from the repository root:
#   B=.device-bin/lead bash benches/gpu/run_build_processes.sh
set -u
B=${B:-.device-bin/lead}
OUT=${OUT:-/tmp/build-processes}
mkdir -p "$OUT"
export TUNE_OPENCL_DEVICE=nvidia TUNE_SEED=1 TUNE_EVALS=60
echo "commit $(git rev-parse HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
nproc
echo "### builds alone: 48 distinct XgemmDirect programs on 16 threads"
CUDA_CACHE_PATH=$(mktemp -d) "$B/opencl_builds" 48 16 8
rate() { grep -o '[0-9.]*/s by' "$1" | head -1 | cut -d/ -f1; }
echo "### the same tuning run, in-process builds against builder processes"
for run in "xgemm_direct 1024x1024*1024x1024" "conv 4096 4096 3"; do
  set -- $run
  ex=$1; shift
  for n in 0 default; do
    log="$OUT/$ex-$n.log"
    cache=$(mktemp -d)
    if [ "$n" = default ]; then unset TUNE_OPENCL_BUILD_PROCESSES; else export TUNE_OPENCL_BUILD_PROCESSES=$n; fi
    start=$(date +%s)
    CUDA_CACHE_PATH=$cache TUNE_SECONDS=240 timeout 260 "$B/$ex" --backend opencl "$@" >"$log" 2>&1
    echo "$ex builders=$n: exit $?, $(( $(date +%s) - start )) s wall"
    grep -E "^tuned|^best|^re-measured" "$log" | sed 's/^/  /'
    rm -rf "$cache"
  done
  unset TUNE_OPENCL_BUILD_PROCESSES
  a=$(rate "$OUT/$ex-0.log"); b=$(rate "$OUT/$ex-default.log")
  echo "RATIO $ex evaluations/s: builders $b, in-process $a, $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')x"
done
