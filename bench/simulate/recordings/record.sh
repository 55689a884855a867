#!/usr/bin/env bash
# Brute-forces held-out spaces on a CUDA GPU: each T1 file with `tune run --technique
# exhaustive`, every configuration compiled afresh, each run with its own time limit. Run
# from the repository root:
#
#   TUNE=.device-bin/NAME/tune bash benches/gpu-logs/cuda/run.sh \
#     bash bench/simulate/recordings/record.sh
#
# SPACES lists the runs as `name|T1 file|seconds of tuning|hard limit` (name: the T1 file's
# benchmark name, which names its log), separated by spaces; the default is round 8's two
# spaces (reduction, frame_filter). Round 9 (the convolution on an H100):
#
#   SPACES='convolution_milo|t1/convolution_milo.json|525|560'
#
# Writes $OUT/recordings.tar.gz (tune's logs, gzipped, the clocks sampled every 5 s and the
# host's CPUs) and prints each run's summary. A run cut by its limit continues in a second
# call with RESUME_FROM=the first call's recordings.tar.gz (its logs' measurements are kept;
# the limits count the logs' time too, see `tune run --help`).
set -uo pipefail
tune="${TUNE:-.device-bin/search8/tune}"
backend="${BACKEND:-cuda}"  # opencl: a check of the script on PoCL
out="${OUT:-out}"
here="bench/simulate/recordings"
spaces="${SPACES:-reduction|$here/reduction/reduction.json|170|200 frame_filter|$here/frame_filter/frame_filter.json|130|160}"
work="$out/rec"
mkdir -p "$work"
resume=()
if [ -n "${RESUME_FROM:-}" ]; then
  tar -xzf "$RESUME_FROM" -C "$work" && gunzip -f "$work"/*.jsonl.gz
  resume=(--resume)
  # Keep the first call's clocks beside this call's.
  [ -f "$work/clocks.csv" ] && mv "$work/clocks.csv" "$work/clocks-before-resume.csv"
fi

nvidia-smi --query-gpu=timestamp,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv -l 5 > "$work/clocks.csv" 2>&1 &
smi=$!
{ nproc; grep -m1 'model name' /proc/cpuinfo; } > "$work/host.txt" 2>&1

# name, T1 file, seconds of tuning (tune stops itself), hard limit (a hung run)
record() {
  local name="$1" file="$2" secs="$3" hard="$4"
  echo "=== $name: $(date -u +%H:%M:%S) UTC"
  timeout "$hard" "$tune" run "$file" --backend "$backend" --device 0 --technique exhaustive \
    --no-compile-cache --time "$secs" --out "$work" "${resume[@]}" 2>&1 | tail -n 25
  echo "=== $name: exit ${PIPESTATUS[0]}, $(wc -l < "$work/$name.jsonl" 2>/dev/null || echo 0) log lines, $(date -u +%H:%M:%S) UTC"
}
for entry in $spaces; do
  IFS='|' read -r name file secs hard <<< "$entry"
  record "$name" "$file" "$secs" "$hard"
done

kill "$smi" 2>/dev/null
echo "=== clocks under load (SM MHz, memory MHz): $(awk -F', ' 'NR>1 {print $4 "/" $5}' "$work/clocks.csv" | sort | uniq -c | sort -rn | head -4 | tr '\n' ' ')"
for f in "$work"/*.jsonl; do gzip -9 -n -f "$f"; done
tar -czf "$out/recordings.tar.gz" -C "$work" .
ls -la "$work"
