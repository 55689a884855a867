#!/usr/bin/env bash
# Runs tune's techniques and Kernel Tuner 1.5.0's strategies in simulation mode on the same
# recorded spaces, budgets and seeds, and writes the combined table to RESULTS.md.
#
#   bench/simulate/run.sh                  # everything (about 20 minutes on 2 cores)
#   KT_SEEDS=1 TUNE_SIM_SEEDS=10 bench/simulate/run.sh   # a quick look
#
# Environment: TUNE_SIM_DATA (default ../shared/data/tuning-caches/benchmark_hub beside the
# repository), TUNE_SIM_SEEDS / TUNE_SIM_SLOW_SEEDS (tune), KT_SEEDS / KT_SLOW_SEEDS /
# KT_SLOW_MAX_BUDGET / KT_JOBS (Kernel Tuner), SKIP_KT=1 to reuse the last Kernel Tuner CSV.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${TUNE_SIM_DATA:-$root/../shared/data/tuning-caches/benchmark_hub}"
out="$here/out"
mkdir -p "$out"
if [ ! -d "$data" ]; then
  echo "no recorded spaces at $data; set TUNE_SIM_DATA" >&2
  exit 1
fi

if [ "${SKIP_KT:-0}" != 1 ]; then
  if [ ! -x "$here/.venv/bin/python" ]; then
    python3 -m venv "$here/.venv"
    "$here/.venv/bin/pip" install -q -r "$here/requirements.txt"
  fi
  "$here/.venv/bin/python" "$here/run_kernel_tuner.py" "$data" "$out/kernel_tuner.csv" \
    --seeds "${KT_SEEDS:-3}" --slow-seeds "${KT_SLOW_SEEDS:-3}" \
    --slow-max-budget "${KT_SLOW_MAX_BUDGET:-100}" --jobs "${KT_JOBS:-2}"
fi

(cd "$root" && TUNE_SIM_DATA="$data" TUNE_SIM_SEEDS="${TUNE_SIM_SEEDS:-50}" \
  TUNE_SIM_SLOW_SEEDS="${TUNE_SIM_SLOW_SEEDS:-5}" \
  cargo bench -p tune-runtime --bench simulate -- "$out/tune.md" --csv "$out/tune.csv")

python3 "$here/combine.py" "$out/tune.csv" "$out/kernel_tuner.csv" > "$here/RESULTS.md"
echo "wrote $here/RESULTS.md" >&2
