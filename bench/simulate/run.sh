#!/usr/bin/env bash
# Runs tune's techniques and Kernel Tuner 1.5.0's strategies in simulation mode on the same
# recorded spaces and seeds, and writes the tables of RESULTS.md (out/report.md), the
# meta-tuning and transfer tables, and the score check against the Python package.
#
#   bench/simulate/run.sh                    # everything (hours on 2 cores: Kernel Tuner)
#   SEEDS=5 bench/simulate/run.sh            # fewer seeds
#   SKIP_KT=1 bench/simulate/run.sh          # reuse out/kernel_tuner.jsonl
#   REPORT_ONLY=1 bench/simulate/run.sh      # the tables from the committed trajectories
#                                            # (data/*.csv.{gz,xz}), nothing re-run
#
# Environment: TUNE_SIM_DATA (default shared/data/tuning-caches/benchmark_hub beside the
# repository or, in a git worktree, beside its main checkout: see data_dir.sh), SEEDS (both tools, default 20), KT_JOBS (default 2), TUNE_META_SECONDS
# (CPU seconds of hyper-parameter search per training fold, default 600; RESULTS.md used 300).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
TUNE_SIM_DATA="$("$here/data_dir.sh")"
export TUNE_SIM_DATA
seeds="${SEEDS:-20}"
out="$here/out"
mkdir -p "$out"
bench() { (cd "$root" && cargo bench -p tune-runtime --bench simulate -- "$@"); }
if [ "${REPORT_ONLY:-0}" = 1 ]; then
  python3 "$here/pack.py" unpack "$here/data/tune" "$out/tune.jsonl"
  python3 "$here/pack.py" unpack "$here/data/kernel_tuner" "$out/kernel_tuner.jsonl"
  TUNE_SIM_REPORT_SEEDS="$seeds" bench report "$out/tune.jsonl" "$out/kernel_tuner.jsonl" "$out/report.md"
  exit 0
fi
if [ ! -x "$here/.venv/bin/python" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/pip" install -q -r "$here/requirements.txt"
fi
if [ "${SKIP_KT:-0}" != 1 ]; then
  rm -f "$out/kernel_tuner.jsonl"
  # In the background: it takes far longer than tune's runs.
  "$here/.venv/bin/python" "$here/run_kernel_tuner.py" "$TUNE_SIM_DATA" "$out/kernel_tuner.jsonl" \
    --seeds "$seeds" --jobs "${KT_JOBS:-2}" &
  kt=$!
fi
rm -f "$out/tune.jsonl"  # `run` appends
TUNE_SIM_SEEDS="$seeds" bench run "$out/tune.jsonl"
TUNE_SIM_SEEDS="$seeds" bench transfer "$out/transfer.md"
TUNE_SIM_SEEDS="$seeds" bench meta "$out/meta.md"
if [ -n "${kt:-}" ]; then wait "$kt"; fi
# The raw trajectories of both tools, compact, to be committed (REPORT_ONLY=1 reads them).
mkdir -p "$here/data"
python3 "$here/pack.py" pack "$out/tune.jsonl" "$here/data/tune"
python3 "$here/pack.py" pack "$out/kernel_tuner.jsonl" "$here/data/kernel_tuner"
TUNE_SIM_REPORT_SEEDS="$seeds" bench report "$out/tune.jsonl" "$out/kernel_tuner.jsonl" "$out/report.md"
bench report "$out/tune.jsonl" "$out/tune-only.md"
"$here/.venv/bin/python" "$here/score_check.py" traces "$TUNE_SIM_DATA" "$out/tune.jsonl" \
  "$out/kernel_tuner.jsonl" --csv "$out/score_python.csv" --bagging-seeds 3 \
  --compare "$out/report.md.scores.csv"
echo "tables in $out; RESULTS.md quotes them" >&2
