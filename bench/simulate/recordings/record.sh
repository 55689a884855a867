#!/usr/bin/env bash
# Brute-forces the held-out spaces of round 8 on a CUDA GPU (one call of about 6 minutes):
# the T1 files reduction/reduction.json and frame_filter/frame_filter.json (kernels of this
# repository: kernels/reduction.cu, kernels/frame_filter.cu), each with its own time limit,
# every configuration compiled afresh. Run from the repository root:
#
#   TUNE=.device-bin/search8/tune bash benches/gpu-logs/cuda/run.sh \
#     bash bench/simulate/recordings/record.sh
#
# Writes $OUT/recordings.tar.gz (tune's logs, gzipped, and the clocks sampled every 5 s) and
# prints each run's summary. A run cut by its limit continues in a second call with
# RESUME_FROM=the first call's recordings.tar.gz (its logs' measurements are kept; the
# limits count the logs' time too, see `tune run --help`).
set -uo pipefail
tune="${TUNE:-.device-bin/search8/tune}"
out="${OUT:-out}"
here="bench/simulate/recordings"
work="$out/rec"
mkdir -p "$work"
resume=()
if [ -n "${RESUME_FROM:-}" ]; then
  tar -xzf "$RESUME_FROM" -C "$work" && gunzip -f "$work"/*.jsonl.gz
  resume=(--resume)
  rm -f "$work/clocks.csv"
fi

nvidia-smi --query-gpu=timestamp,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv -l 5 > "$work/clocks.csv" 2>&1 &
smi=$!

# name, T1 file, seconds of tuning (tune stops itself), hard limit (a hung run)
record() {
  local name="$1" file="$2" secs="$3" hard="$4"
  echo "=== $name: $(date -u +%H:%M:%S) UTC"
  timeout "$hard" "$tune" run "$file" --backend cuda --device 0 --technique exhaustive \
    --no-compile-cache --time "$secs" --out "$work" "${resume[@]}" 2>&1 | tail -n 25
  echo "=== $name: exit ${PIPESTATUS[0]}, $(wc -l < "$work/$name.jsonl" 2>/dev/null || echo 0) log lines, $(date -u +%H:%M:%S) UTC"
}
record reduction "$here/reduction/reduction.json" "${REDUCTION_SECONDS:-170}" 200
record frame_filter "$here/frame_filter/frame_filter.json" "${FILTER_SECONDS:-130}" 160

kill "$smi" 2>/dev/null
echo "=== clocks under load (SM MHz, memory MHz): $(awk -F', ' 'NR>1 {print $4 "/" $5}' "$work/clocks.csv" | sort | uniq -c | sort -rn | head -4 | tr '\n' ' ')"
for f in "$work"/*.jsonl; do gzip -9 -n "$f"; done
tar -czf "$out/recordings.tar.gz" -C "$work" .
ls -la "$work"
