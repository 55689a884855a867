#!/usr/bin/env bash
# tune run vs Kernel Tuner's T1 runner on the same T1 file, GPU, strategy and budget:
# evaluations per second, where the time went, and the best kernel time found. Prints a
# Markdown table and keeps the raw outputs (tune's log and T4, Kernel Tuner's results) in OUT.
#
#   TUNE=path/to/tune bash benches/gpu/t1/run.sh OUT [T1.json]
#
# Needs: a `tune` built with the `cuda` feature (cargo build --release -p tune-cli), CUDA's
# libnvrtc on LD_LIBRARY_PATH, and (unless KT=0) Python with kernel_tuner (1.5), numpy and the
# backend in KT_LANG (default cupy). Defaults: the convolution_milo T1 file of shared/data
# (the only one of the three whose kernel and arguments run as given), budgets BUDGETS
# (default 100), seeds SEEDS (default "0 1 2"), strategies random_sample (both tools: the
# same work) and each tool's default (tune: no --technique, its default; Kernel Tuner: its
# T1 default is the file's Search, here genetic_algorithm as in bench/gpu).
# KT=0 runs only tune. Every tune run starts with an empty compile cache of its own (as a
# first run on a machine), so runs do not reuse each other's compilations; WARM=1 also
# repeats tune's default at the first seed with the compile cache its first run filled, and
# INORDER=1 runs it at the first seed in batches (`--in-order`, as before asynchronous runs).
set -uo pipefail
out=${1:?usage: TUNE=... bash benches/gpu/t1/run.sh OUT [T1.json]}
here=$(cd "$(dirname "$0")" && pwd)
t1=${2:-$here/../../../../shared/data/t1/convolution_milo.json}
tune=${TUNE:-target/release/tune}
budgets=${BUDGETS:-100}
seeds=${SEEDS:-0 1 2}
kt=${KT:-1}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | tee "$out/gpu.txt"
"$tune" devices | tee "$out/devices.txt"
"$tune" space "$t1" | tee "$out/space.txt"
rows=()

# One tune run: name, budget, seed, compile cache, then tune's extra arguments.
tune_run() {
  local name=$1 budget=$2 seed=$3 cache=$4
  shift 4
  local d="$out/tune_${name}_b${budget}_s${seed}"
  local t0 t1w rc log
  t0=$(date +%s.%N)
  "$tune" run "$t1" --budget "$budget" --seed "$seed" --out "$d" --compile-cache "$cache" "$@" > "$d.txt" 2>&1
  rc=$?
  t1w=$(date +%s.%N)
  log=$(ls "$d"/*.jsonl 2>/dev/null | head -1)
  python3 "$here/tune_summary.py" "$log" "$t0" "$t1w" "$rc" "$name" "$budget" "$seed" > "$d.json"
  cat "$d.json"
  rows+=("$d.json")
}

for budget in $budgets; do
  for seed in $seeds; do
    for pair in "random random_sample" "default genetic_algorithm"; do
      set -- $pair
      ours=$1 theirs=$2
      cache="$out/cache_${ours}_b${budget}_s${seed}"
      rm -rf "$cache"
      if [ "$ours" = default ]; then
        tune_run "$ours" "$budget" "$seed" "$cache"
      else
        tune_run "$ours" "$budget" "$seed" "$cache" --technique "$ours"
      fi
      if [ "$kt" != 0 ]; then
        k="$out/kt_${theirs}_b${budget}_s${seed}"
        python3 "$here/kt_t1.py" "$t1" "$theirs" "$budget" "$seed" "$k.results.json" > "$k.txt" 2>&1
        tail -1 "$k.txt" > "$k.json"
        rows+=("$k.json")
      fi
    done
  done
  set -- $seeds
  if [ "${WARM:-0}" = 1 ]; then
    tune_run default-warm "$budget" "$1" "$out/cache_default_b${budget}_s$1"
  fi
  if [ "${INORDER:-0}" = 1 ]; then
    rm -rf "$out/cache_inorder_b${budget}_s$1"
    tune_run default-in-order "$budget" "$1" "$out/cache_inorder_b${budget}_s$1" --in-order
  fi
done
python3 "$here/table.py" "${rows[@]}" | tee "$out/summary.md"
