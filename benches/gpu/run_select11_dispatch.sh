#!/bin/bash
# select11's second call (issue 14, round 11): the dispatch bench alone, round 10's
# generated selector (bench_r10, main at 0a8a2ec) and this round's (bench_r11, c295290)
# in three interleaved passes on the GPU machine's idle CPU cores, so that each figure
# has a spread (the first call ran one pass each, right after other calls).
# Run from the repository root: B=.device-bin/select11 bash benches/gpu/run_select11_dispatch.sh
B=${B:-.device-bin/select11}
OUT=${OUT:-/tmp/select11-out}
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz|NUMA node\(s\)'
  uptime
  for pass in 1 2 3; do
    # The call has 150 s: no pass starts past 100 s (a pass takes about 40 s).
    [ "$SECONDS" -gt 100 ] && echo "pass $pass not started: ${SECONDS} s" && break
    for b in bench_r10 bench_r11; do
      echo "== $b (pass $pass)"
      CRITERION_HOME=/tmp/select11-criterion timeout 30 "$B/$b" --bench 'select/' \
        --warm-up-time 1 --measurement-time 2 --noplot 2>&1 | grep -E '^select|time:'
    done
  done
  uptime
} >"$OUT/dispatch2.txt" 2>&1
cat "$OUT/dispatch2.txt"
